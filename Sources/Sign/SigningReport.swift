#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OpenSSLWrapper
import SignatureSchemes

/// What `Signer` produced: for `-v` output, `--json`, and tests.
public struct SigningReport: Sendable, Equatable {
    /// Where the signed APK was written.
    public var outputPath: String
    /// The schemes the APK is signed with, in order.
    public var schemes: [SignatureScheme]
    /// The minSdkVersion that decided the algorithms (from the manifest or `--min-sdk-version`).
    public var minSdkVersion: Int
    /// True when `minSdkVersion` came from `--min-sdk-version` rather than the manifest.
    public var minSdkVersionOverridden: Bool
    /// The v1 entry/signature digest (SHA-1 or SHA-256), when v1 is on.
    public var v1DigestAlgorithm: DigestAlgorithm?
    /// The v1 signature files' base name (`META-INF/<name>.SF`), when v1 is on.
    public var v1SignerName: String?
    /// The v2/v3 signature algorithms, when v2 or v3 is on.
    public var signatureAlgorithms: [SignatureAlgorithm]
    /// The signer certificate's SHA-256 fingerprint.
    public var certificateSHA256: [UInt8]
    /// The signer certificate's subject, as apksigner prints it.
    public var certificateSubject: String
    /// Entries in the signed APK (including the v1 files).
    public var entryCount: Int
    /// Entries whose data had to be re-aligned.
    public var realignedEntryCount: Int
    /// Size of the signed APK in bytes.
    public var outputSize: Int64
    /// Size of the APK Signing Block (0 without v2/v3).
    public var signingBlockSize: Int
    /// What the signed APK will not do that its manifest promises (the CLI prints these as warnings).
    public var warnings: [SigningWarning] = []
    /// The fs-verity leaf digests of the output's first blocks, hashed as they were written when
    /// `SignerConfig.preparesV4Signature` is set (for `V4SchemeSigner`); nil otherwise.
    public var verityLeaves: LeafDigests?
    /// The output's v4 signature, made by the signer beside its last writes when `SignerConfig.makesV4Signature`
    /// is set (nil otherwise, or when it could not be made: `V4SchemeSigner.updateSignature` then makes it and
    /// reports why).
    public var v4Signature: V4Signature?
    /// With a source stamp: the SHA-256 digest of the stamp certificate (the `stamp-cert-sha256` entry's bytes).
    public var sourceStampCertificateSHA256: [UInt8]?
}

/// A signed APK that will not install everywhere its manifest says it does. apksigner writes such APKs
/// without a word (its verifier then rejects the first kind); apkpatch writes the same bytes, as the
/// options asked, and says what is wrong and how out.
public enum SigningWarning: Sendable, Equatable, CustomStringConvertible {
    /// No v1 (JAR) signature while minSdkVersion is below 24: Android before 7.0 reads only JAR signatures, and
    /// apksig's verifier rejects such an APK ("Missing META-INF/MANIFEST.MF").
    case noJARSignatureBelowAPI24(minSdkVersion: Int)
    /// v3 as the only signature while minSdkVersion is below 28: Android 7 and 8 (API 24-27) read v2 or v1 only.
    case v3OnlyBelowAPI28(minSdkVersion: Int)
    /// The signer certificate's validity ended (ISO 8601 `notAfter`): Android installs the APK anyway (it does
    /// not check validity dates), but Google Play and other stores refuse it.
    case certificateExpired(notAfter: String)
    /// The signer certificate expires before Google Play's minimum for new apps (valid past 2033-10-22).
    case certificateExpiresBeforePlayMinimum(notAfter: String)

    /// Google Play's rule for new apps: the signing certificate stays valid past 2033-10-22 (00:00 UTC here).
    public static let playMinimumValidity: Int64 = 2_013_552_000

    /// What the signer certificate's validity warrants saying at `now` (seconds since 1970, UTC).
    public static func certificateValidity(notAfter seconds: Int64, notAfter text: String,
                                           now: Int64 = Int64(time(nil))) -> [SigningWarning] {
        if seconds < now { return [.certificateExpired(notAfter: text)] }
        if seconds < playMinimumValidity { return [.certificateExpiresBeforePlayMinimum(notAfter: text)] }
        return []
    }

    public var description: String {
        switch self {
        case .noJARSignatureBelowAPI24(let level):
            return "without v1 (JAR) signing the APK installs only on Android 7.0 (API 24) and later, but its minSdkVersion is \(level) (apksigner verify rejects it): keep v1, or raise the minSdkVersion to 24 if the app really needs Android 7.0"
        case .v3OnlyBelowAPI28(let level):
            return "with v3 as the only signature the APK installs only on Android 9 (API 28) and later (Android 7 and 8 read v2 or v1), but its minSdkVersion is \(level): keep v2, or raise the minSdkVersion to 28 if the app really needs Android 9"
        case .certificateExpired(let date):
            return "the signer certificate expired on \(date): devices install the APK, but app stores refuse it; sign releases with a key whose certificate is valid"
        case .certificateExpiresBeforePlayMinimum(let date):
            return "the signer certificate expires on \(date), before 2033-10-22, the minimum Google Play requires of a new app's signing certificate; a new app needs a key valid past then"
        }
    }
}
