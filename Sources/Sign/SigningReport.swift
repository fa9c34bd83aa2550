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
}
