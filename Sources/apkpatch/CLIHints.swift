import APKCore
import ArgumentParser
import Install
import Pipeline
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
        if let error = error as? RotationError { return hint(for: error) }
        if let error = error as? InstallError { return hint(for: error.code) }
        if case .outputIsInput? = error as? PipelineError { return "choose another --out" }
        if case .fileExists? = error as? ScaffoldError { return "pass --force" }
        if case .launchNeedsPackageName? = error as? InstallCommandError { return "drop --launch" }
        switch error as? SignError {
        case .missingAndroidManifest?, .unreadableMinSdkVersion?, .codenameMinSdkVersion?: return "give it with --min-sdk-version"
        case .ecdsaJARSignatureNeedsAPI18?: return "--min-sdk-version 18 or higher, or --v1-signing-enabled false"
        case .noCertificate?: return "with --key, pass the certificate with --cert"
        case .debuggableAPKNotPermitted?: return "--debuggable-apk-permitted false refuses it"
        case .tooManyEntriesForJARSignature?: return "--v1-signing-enabled false signs without v1"
        case .sourceStampKeyNotRSA?: return "check the key options after --stamp-signer"
        case .otherSourceStamp?: return "--force-stamp-overwrite true replaces it"
        case .storedEntriesRequired?: return "apkpatch run APP.apk --out FIXED.apk, with these signing options and no --patch, stores, aligns and signs in one step"
        case .alignedEntriesRequired?: return "sign without --alignment-preserved true, which re-aligns stored entries: apkpatch sign --out FIXED.apk with these signing options; --misaligned-apk-permitted true writes it unaligned anyway"
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
        case (_, .storeType?): return "--ks-type PKCS12, JKS or JCEKS, or leave it out to detect the type"
        case (_, .debugKeyStoreLocation?): return "choose it with --debug-keystore PATH"
        default: return nil
        }
    }

    /// The rotation options (`--lineage`, `--next-signer`, `--rotation-min-sdk-version`,
    /// `--signer-for-min-sdk-version`, `--signer-lineage`) that answer a rotation error.
    static func hint(for error: RotationError) -> String? {
        switch error {
        case .targetBelowV3: return "--signer-for-min-sdk-version takes \(AndroidSDK.pie) or later"
        case .targetedSignerNotInItsLineage, .lineageOutsideHistory: return "check its --signer-lineage"
        case .signerOutsideHistory: return "give it with --signer-lineage FILE (apkpatch rotate writes one)"
        case .rotationNotBelowTargeted: return "lower --rotation-min-sdk-version, or raise --signer-for-min-sdk-version"
        case .signerNotInLineage: return "apkpatch lineage --in FILE --print-certs lists them"
        case .developmentReleaseBelowV31: return "--rotation-min-sdk-version \(AndroidSDK.tiramisu) or later"
        case .developmentReleaseWithoutLineage, .untargetedSignersWithoutLineage: return "give it with --lineage FILE"
        case .noNewerSigner: return "each after --next-signer"
        case .signersAtSameLevel: return "one --signer-for-min-sdk-version per level"
        case .levelsNotCovered, .apkLevelsNotCovered: return "the original key first, the newer ones after --next-signer"
        case .signerGivenTwice: return nil
        }
    }

    /// The install options that answer a failed install, as a sentence after its advice: `run`, `merge` and
    /// `watch` take them alike, so the sentence names no command.
    static func hint(for code: InstallError.Code) -> String? {
        switch code {
        case .deviceNotFound, .multipleDevices: return "Give its serial with -s/--serial."
        case .versionDowngrade: return "Or add --allow-downgrade, which passes -d."
        case .testOnly: return "Or add --allow-test, which passes -t."
        case .notSigned: return "apkpatch sign takes your key with --ks … (or --debug for the debug key)."
        default: return nil
        }
    }

    /// `error` with the options that answer it in its advice (where `describe` and `--json` show them).
    static func hinted(_ error: InstallError) -> InstallError {
        guard let hint = hint(for: error.code) else { return error }
        var hinted = error
        hinted.advice += " " + hint
        return hinted
    }

    /// A verification finding with the options that answer it, in apksigner's words where apksigner has them.
    static func hint(for issue: Issue) -> String? {
        switch issue.code {
        case .manifestUnreadable: return "Use --min-sdk-version to override"
        case .v32Unsupported: return "Pass --max-sdk-version \(AndroidSDK.c - 1) to verify everything else"
        default: return nil
        }
    }

    /// `report` with the hints of its signature findings appended to their messages (text and `--json`).
    static func hinted(_ report: VerificationReport) -> VerificationReport {
        var report = report
        report.signatureErrors = report.signatureErrors.map { issue in
            guard let hint = hint(for: issue) else { return issue }
            return Issue(code: issue.code, severity: issue.severity, context: issue.context, message: "\(issue.message). \(hint)")
        }
        return report
    }

    /// After "DOES NOT INSTALL" in a verification's text.
    static let installVerdict = "use --signature-only for apksigner's verdict"

    static func hint(for warning: SigningWarning) -> String {
        switch warning {
        case .noJARSignatureBelowAPI24: return "--v1-signing-enabled true, or --min-sdk-version 24"
        case .v3OnlyBelowAPI28: return "--v2-signing-enabled true, or --min-sdk-version 28"
        case .certificateExpired, .certificateExpiresBeforePlayMinimum: return "apkpatch keystore create makes a key valid for 27 years; sign with it through --ks"
        }
    }

    /// What the command line prints for `error`.
    static func describe(_ error: any Error) -> String {
        if let error = error as? InstallError { return "\(hinted(error))".cappingLongRuns }
        guard let hint = hint(for: error) else { return "\(error)".cappingLongRuns }
        return "\(error) (\(hint))".cappingLongRuns
    }

    static func describe(_ warning: SigningWarning) -> String { "\(warning) (\(hint(for: warning)))" }
}

/// A library error as the command line reports it: the library's message and the options that answer it.
struct HintedError: Error, CustomStringConvertible {
    let underlying: any Error
    var description: String { CLIHint.describe(underlying) }

    /// `error`, hinted when an option answers it, and with a user's text quoted in full cut (`cappingLongRuns`);
    /// anything else, ArgumentParser's own errors included, as it is.
    static func wrapping(_ error: any Error) -> any Error {
        if error is ValidationError || error is ExitCode || error is CleanExit { return error }
        if CLIHint.hint(for: error) != nil { return HintedError(underlying: error) }
        let message = "\(error)"
        return message.cappingLongRuns == message ? error : HintedError(underlying: error)
    }
}

/// An Android App Bundle (.aab) given where an APK belongs. It has no AndroidManifest.xml at its top (bundletool
/// keeps each module's under base/manifest/, as protobuf), which the signer reports with advice that does not
/// apply: `--min-sdk-version` would "sign" the bundle as an APK, signing block, .idsig and all.
struct AppBundleGiven: Error, CustomStringConvertible {
    let path: String

    var description: String {
        "\(path) is an Android App Bundle (.aab), not an APK: its manifest is under base/manifest/ (protobuf), and no device installs a bundle. Google Play takes a bundle signed with jarsigner (jarsigner -keystore release.p12 \(path) ALIAS); for APKs, build them from it with bundletool build-apks and sign or patch the .apks"
    }

    /// `body`, with a missing manifest reported as this when `path` is a bundle (bundletool's BundleConfig.pb at its
    /// top). The archive is read again only on that error's path.
    static func checking<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            guard case .missingAndroidManifest? = error as? SignError,
                  let zip = try? ZipArchive(source: try MappedFile(path: path)),
                  zip.entries.contains(where: { $0.name == "BundleConfig.pb" }) else { throw error }
            throw AppBundleGiven(path: path)
        }
    }
}
