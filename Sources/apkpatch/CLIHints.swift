import Sign

/// The options that answer a signing error or warning. The library says what to change in its own terms
/// (a minSdkVersion, a certificate, the v1 scheme); the command line adds which of its options changes it.
enum CLIHint {
    /// `error` with the options that answer it, or nil when it is not one of the signer's.
    static func hint(for error: any Error) -> String? {
        switch error as? SignError {
        case .missingAndroidManifest?, .unreadableMinSdkVersion?: return "give it with --min-sdk-version"
        case .ecdsaJARSignatureNeedsAPI18?: return "--min-sdk-version 18 or higher, or --v1-signing-enabled false"
        case .noCertificate?: return "with --key, pass the certificate with --cert"
        case .debuggableAPKNotPermitted?: return "--debuggable-apk-permitted false refuses it"
        case .tooManyEntriesForJARSignature?: return "--v1-signing-enabled false signs without v1"
        default: return nil
        }
    }

    static func hint(for warning: SigningWarning) -> String {
        switch warning {
        case .noJARSignatureBelowAPI24: return "--v1-signing-enabled true, or --min-sdk-version 24"
        case .v3OnlyBelowAPI28: return "--v2-signing-enabled true, or --min-sdk-version 28"
        case .certificateExpired, .certificateExpiresBeforePlayMinimum: return "a new key: apkpatch keystore create, then --ks"
        }
    }

    /// What the command line prints for `error`.
    static func describe(_ error: any Error) -> String {
        guard let hint = hint(for: error) else { return "\(error)" }
        return "\(error) (\(hint))"
    }

    static func describe(_ warning: SigningWarning) -> String { "\(warning) (\(hint(for: warning)))" }
}

/// A signing error as the command line reports it: the library's message and the options that answer it.
struct HintedError: Error, CustomStringConvertible {
    let underlying: any Error
    var description: String { CLIHint.describe(underlying) }

    /// `error`, hinted when the signer threw it (anything else, ArgumentParser's own errors included, as it is).
    static func wrapping(_ error: any Error) -> any Error { CLIHint.hint(for: error) == nil ? error : HintedError(underlying: error) }
}
