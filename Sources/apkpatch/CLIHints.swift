import Sign
import SignatureSchemes
import Verify

/// The options that answer a library error or warning. The libraries say what to change in their own terms
/// (a minSdkVersion, a certificate, the v1 scheme, the key password); the command line adds which of its
/// options changes it.
enum CLIHint {
    /// `error` with the options that answer it, or nil when none does.
    static func hint(for error: any Error) -> String? {
        if let error = error as? KeyStoreError { return hint(for: error) }
        if case .invalidOptions? = error as? VerificationError {
            return "check --min-sdk-version and --max-sdk-version"
        }
        if case .unsupportedAlgorithm(.verityChunkedSHA256)? = error as? ContentDigestError { return "sign without --verity-enabled" }
        switch error as? SignError {
        case .missingAndroidManifest?, .unreadableMinSdkVersion?, .codenameMinSdkVersion?: return "give it with --min-sdk-version"
        case .ecdsaJARSignatureNeedsAPI18?: return "--min-sdk-version 18 or higher, or --v1-signing-enabled false"
        case .noCertificate?: return "with --key, pass the certificate with --cert"
        case .debuggableAPKNotPermitted?: return "--debuggable-apk-permitted false refuses it"
        case .tooManyEntriesForJARSignature?: return "--v1-signing-enabled false signs without v1"
        case .storedEntriesRequired?: return "apkpatch run APP.apk --out FIXED.apk, with these signing options and no --patch, stores, aligns and signs in one step"
        default: return nil
        }
    }

    /// The key options (`SignerOptions`, `keystore`) that answer a keystore error.
    static func hint(for error: KeyStoreError) -> String? {
        switch (error.code, error.subject) {
        case (.wrongStorePassword, _): return "check --ks-pass; env:NAME or file:PATH keep it out of shell history"
        case (.wrongKeyPassword, _): return "--key-pass gives the key's own password"
        case (.aliasNotFound, _), (.aliasRequired, _): return "choose one with --ks-key-alias"
        case (.alreadyExists, _): return "choose another --ks"
        case (_, .storePassword?): return "--ks-pass: env:NAME, file:PATH, stdin or pass:…"
        case (_, .keyPassword?): return "--key-pass: env:NAME, file:PATH, stdin or pass:…"
        case (_, .storeType?): return "--ks-type PKCS12 or JKS, or leave it out to detect the type"
        case (_, .debugKeyStoreLocation?): return "choose it with --debug-keystore PATH"
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

/// A library error as the command line reports it: the library's message and the options that answer it.
struct HintedError: Error, CustomStringConvertible {
    let underlying: any Error
    var description: String { CLIHint.describe(underlying) }

    /// `error`, hinted when an option answers it (anything else, ArgumentParser's own errors included, as it is).
    static func wrapping(_ error: any Error) -> any Error { CLIHint.hint(for: error) == nil ? error : HintedError(underlying: error) }
}
