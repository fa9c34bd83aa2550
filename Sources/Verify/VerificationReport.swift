import OpenSSLWrapper

/// What to verify and for which Android versions.
public struct VerificationOptions: Sendable, Hashable {
    /// Lowest API level the APK must verify on; nil reads `minSdkVersion` from AndroidManifest.xml (absent → 1),
    /// as `apksigner verify` does without `--min-sdk-version`.
    public var minSdkVersion: Int?
    /// Highest API level the APK must verify on (apksigner's default: Integer.MAX_VALUE).
    public var maxSdkVersion: Int
    /// Also check what Android's installer enforces beyond signatures (resources.arsc and native library
    /// storage and alignment), and the archive rules the other commands read an APK by (`ArchiveChecks`).
    /// False gives apksigner's exact verdict (`--signature-only`).
    public var checksInstallability: Bool
    /// An APK Signature Scheme v4 file (`.idsig`) to check against the APK (apksigner `--v4-signature-file`).
    public var v4SignatureFile: String?
    /// Also read every entry's data that the JAR signature check does not read (CRC-32, deflate streams, sizes),
    /// which neither apksigner nor Android's installer does (`EntryDataScan`); it inflates every deflated entry.
    public var checksEntries: Bool

    public init(minSdkVersion: Int? = nil, maxSdkVersion: Int = Int(Int32.max), checksInstallability: Bool = true,
                v4SignatureFile: String? = nil, checksEntries: Bool = false) {
        self.minSdkVersion = minSdkVersion
        self.maxSdkVersion = maxSdkVersion
        self.checksInstallability = checksInstallability
        self.v4SignatureFile = v4SignatureFile
        self.checksEntries = checksEntries
    }
}

/// The signature schemes a report speaks about, in apksigner's order.
public enum SignatureScheme: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    case v1, v2, v3, v31 = "v3.1", v4, sourceStamp = "source-stamp"

    /// apksigner's wording: "v1 scheme (JAR signing)", …
    public var displayName: String {
        switch self {
        case .v1: return "v1 scheme (JAR signing)"
        case .v2: return "v2 scheme (APK Signature Scheme v2)"
        case .v3: return "v3 scheme (APK Signature Scheme v3)"
        case .v31: return "v3.1 scheme (APK Signature Scheme v3.1)"
        case .v4: return "v4 scheme (APK Signature Scheme v4)"
        case .sourceStamp: return "SourceStamp"
        }
    }

    public static func < (lhs: SignatureScheme, rhs: SignatureScheme) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A signer's certificate, with the facts `apksigner verify -v --print-certs` prints.
public struct CertificateInfo: Sendable, Hashable, Codable {
    /// The certificate exactly as stored in the APK.
    public let derBytes: [UInt8]
    /// Subject as apksigner prints it, e.g. "CN=Android Debug, O=Android, C=US".
    public let subjectDN: String
    public let issuerDN: String
    /// Lower-case hex digests of `derBytes`.
    public let sha256: String
    public let sha1: String
    public let md5: String
    /// "RSA", "EC" or "DSA".
    public let keyAlgorithm: String
    /// RSA modulus bits, EC group order bits, DSA prime bits.
    public let keySize: Int
    /// Lower-case hex digests of the SubjectPublicKeyInfo.
    public let publicKeySHA256: String
    public let publicKeySHA1: String
    public let publicKeyMD5: String

    package init(_ certificate: VerificationCertificate) {
        derBytes = certificate.derBytes
        subjectDN = certificate.subjectDN
        issuerDN = certificate.issuerDN
        sha256 = VerificationDigest.sha256.hash(certificate.derBytes).hexString
        sha1 = VerificationDigest.sha1.hash(certificate.derBytes).hexString
        md5 = VerificationDigest.md5.hash(certificate.derBytes).hexString
        keyAlgorithm = certificate.keyAlgorithm
        keySize = certificate.keyBitSize
        let spki = certificate.subjectPublicKeyInfoDER
        publicKeySHA256 = VerificationDigest.sha256.hash(spki).hexString
        publicKeySHA1 = VerificationDigest.sha1.hash(spki).hexString
        publicKeyMD5 = VerificationDigest.md5.hash(spki).hexString
    }

    enum CodingKeys: String, CodingKey {
        case subjectDN, issuerDN, sha256, sha1, md5, keyAlgorithm, keySize, publicKeySHA256, publicKeySHA1, publicKeyMD5, derBytes
    }
}

/// One signer of one scheme.
public struct SignerReport: Sendable {
    /// JAR signers: the signature block name without "META-INF/" (e.g. "CERT.RSA"); others: "#1", "#2", ….
    public var name: String
    /// The signing certificate first, then the rest of its chain as found.
    public var certificates: [CertificateInfo]
    /// v3/v3.1 signers: the API range this signer is for.
    public var minSdkVersion: Int?
    public var maxSdkVersion: Int?
    public var errors: [Issue]
    public var warnings: [Issue]
    /// v3.1 signers: the signer also covers the development release that still reports `minSdkVersion` - 1
    /// (attribute 0xc2a6b3ba, `--rotation-targets-dev-release`).
    public var targetsDevRelease = false

    public var certificate: CertificateInfo? { certificates.first }
}

/// A source stamp's verification (apksig `ApkVerifier.Result.SourceStampInfo`): present when the APK has a
/// `stamp-cert-sha256` entry and a stamp block in its APK Signing Block, and its signatures verified up to the
/// stamp check. Its findings never fail the APK (apksigner prints them as `WARNING: SourceStamp: …`).
public struct SourceStampReport: Sendable {
    /// apksigner's "Verified for SourceStamp": no error and no warning.
    public var isVerified: Bool
    /// The stamp certificate (apksigner's "Source Stamp Signer"), nil when it could not be parsed.
    public var certificate: CertificateInfo?
    /// The stamp key's rotation history (proof-of-rotation attribute), original first; empty without one.
    public var lineage: [CertificateInfo]
    /// When the stamp was signed, in seconds since 1970 (timestamp attribute); nil without a valid one.
    public var timestamp: Int64?
    public var errors: [Issue]
    public var warnings: [Issue]
    /// What the verifier skipped without failing the stamp (`INFO: SourceStamp: …`): signatures by unknown
    /// algorithms, unknown attributes.
    public var infos: [Issue]
}

/// The outcome of one scheme's verification.
public struct SchemeReport: Sendable {
    public var scheme: SignatureScheme
    public var isVerified: Bool
    public var signers: [SignerReport]
}

/// The result of verifying an APK.
public struct VerificationReport: Sendable {
    /// The APK that was verified.
    public var path: String
    /// The API range verified for.
    public var minSdkVersion: Int
    public var maxSdkVersion: Int
    /// apksigner's verdict: the signatures verify on every API level in the range.
    public var isSignatureVerified: Bool
    /// The schemes that verified (apksigner's "Verified using … : true" lines).
    public var verifiedSchemes: Set<SignatureScheme>
    /// Per-scheme details, for the schemes that were checked.
    public var schemes: [SchemeReport]
    /// The APK's signer certificates (apksigner's "Signer #n"), set when the signatures verified.
    public var signers: [CertificateInfo]
    /// The v3/v3.1 signing certificate lineage, original certificate first, when the signatures verified and
    /// the APK carries one (a rotated key); empty otherwise.
    public var lineage: [CertificateInfo] = []
    /// The capabilities each `lineage` certificate grants its descendants, same order: apksig's
    /// `SignerCapabilities` flags (``LineageCapabilities``).
    public var lineageCapabilities: [LineageCapabilities] = []
    /// The source stamp's verification, when the APK carries a stamp (see `SourceStampReport`); a
    /// `stamp-cert-sha256` entry without a stamp block is a `SOURCE_STAMP_SIG_MISSING` warning instead.
    public var sourceStamp: SourceStampReport?
    /// The source stamp alone was checked (`Verifier.verifySourceStampOnly`): `isSignatureVerified` is the
    /// stamp's verdict, and no signer or scheme was verified.
    public var isSourceStampOnly = false
    /// Every error and warning from signature verification (including those of individual signers).
    public var signatureErrors: [Issue]
    public var signatureWarnings: [Issue]
    /// Packaging problems Android's installer rejects (errors) or will reject on 16 KiB-page devices
    /// (warnings); empty when `checksInstallability` was off.
    public var installErrors: [Issue]
    public var installWarnings: [Issue]
    /// Whether install checks ran.
    public var checkedInstallability: Bool
    /// Every native library (`lib/…/*.so`) and its readiness for 16 KiB pages, when install checks ran.
    public var nativeLibraries: [NativeLibraryReport] = []
    /// Whether the entries' data was read (`VerificationOptions.checksEntries`), and what that found: corrupt
    /// data (errors) and bytes after a deflate stream's end (warnings).
    public var checkedEntries = false
    public var entryErrors: [Issue] = []
    public var entryWarnings: [Issue] = []
    /// Layouts every other command refuses to read (bytes no record accounts for, a central directory the end
    /// record miscounts), which Android and apksigner read past; checked with the install checks.
    public var archiveErrors: [Issue] = []

    /// True when Android would install the APK and every ZIP reader reads it alike: signatures verify and (unless
    /// disabled) no install or archive error, and, when the entries were read, none is corrupt.
    public var isVerified: Bool { isSignatureVerified && installErrors.isEmpty && archiveErrors.isEmpty && entryErrors.isEmpty }
    /// All errors, signature ones first.
    public var errors: [Issue] { signatureErrors + archiveErrors + installErrors + entryErrors }
    /// All warnings.
    public var warnings: [Issue] { signatureWarnings + installWarnings + entryWarnings }

    /// Whether the APK is signed by each certificate in `sha256Digests` (hex, any case, `:` or spaces
    /// between bytes allowed): each must be one of `signers` or, with `allowingLineageAncestors`, an older
    /// certificate of the lineage. False when the signatures do not verify, or when the list is empty.
    public func isSigned(byCertificatesWithSHA256 sha256Digests: [String], allowingLineageAncestors: Bool) -> Bool {
        guard isSignatureVerified, !sha256Digests.isEmpty else { return false }
        let accepted = Set((signers + (allowingLineageAncestors ? lineage : [])).map(\.sha256))
        return sha256Digests.allSatisfy { accepted.contains(Self.normalizedHex($0)) }
    }

    /// Lower-case hex without separators (`AB:CD` → `abcd`), as `CertificateInfo.sha256` is written.
    public static func normalizedHex(_ text: String) -> String {
        String(text.lowercased().filter { $0 != ":" && $0 != " " })
    }
}

/// What a lineage certificate lets the newer certificates do (apksig `SigningCertificateLineage.SignerCapabilities`,
/// flag bits 1, 2, 4, 8, 16): keep the app's installed data, share its user ID, keep its signature
/// permissions, be rolled back to, and authenticate as it.
public struct LineageCapabilities: Sendable, Hashable, Encodable {
    public var installedData: Bool, sharedUid: Bool, permission: Bool, rollback: Bool, auth: Bool

    public init(flags: UInt32) {
        installedData = flags & 1 != 0; sharedUid = flags & 2 != 0; permission = flags & 4 != 0
        rollback = flags & 8 != 0; auth = flags & 16 != 0
    }
}
