import OpenSSLWrapper

/// How the APK's contents are digested for an APK Signature Scheme v2/v3 signature (apksig's
/// `ContentDigestAlgorithm`).
///
/// The chunked algorithms split the three digested sections into 1 MiB chunks (see `ContentDigester`);
/// the verity one builds an fs-verity Merkle tree over 4 KiB blocks and is only used with `--verity-enabled`.
public enum ContentDigestAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case chunkedSHA256 = "CHUNKED_SHA256"
    case chunkedSHA512 = "CHUNKED_SHA512"
    case verityChunkedSHA256 = "VERITY_CHUNKED_SHA256"

    /// The message digest applied to each chunk and to the concatenation of chunk digests.
    public var digestAlgorithm: DigestAlgorithm {
        switch self {
        case .chunkedSHA256, .verityChunkedSHA256: return .sha256
        case .chunkedSHA512: return .sha512
        }
    }

    /// Size of one chunk's digest (apksig `getChunkDigestOutputSizeBytes`).
    public var chunkDigestOutputSize: Int { digestAlgorithm.outputSize }

    /// True for the 1 MiB chunked algorithms (which `ContentDigester` computes).
    public var isChunked: Bool { self != .verityChunkedSHA256 }

    /// apksig's constant name, as it appears in apksigner's messages.
    public var description: String { rawValue }
}

/// A key algorithm as the JCA names it ("RSA", "EC", "DSA").
public enum SignatureKeyAlgorithm: String, Sendable, Hashable {
    case rsa = "RSA"
    case ec = "EC"
    case dsa = "DSA"
}

/// An APK Signing Block signature algorithm (apksig's `internal/apk/SignatureAlgorithm`): the 32-bit ID
/// written in v2/v3 signer blocks, the content digest it covers, its key type and the SDK levels that
/// accept it.
public enum SignatureAlgorithm: UInt32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// RSASSA-PSS with SHA2-256, MGF1 SHA2-256, 32 bytes of salt; content digested with CHUNKED_SHA256.
    case rsaPSSWithSHA256 = 0x0101
    /// RSASSA-PSS with SHA2-512, MGF1 SHA2-512, 64 bytes of salt; content digested with CHUNKED_SHA512.
    case rsaPSSWithSHA512 = 0x0102
    /// RSASSA-PKCS1-v1_5 with SHA2-256; CHUNKED_SHA256. What apksig uses for RSA keys up to 3072 bits.
    case rsaPKCS1v15WithSHA256 = 0x0103
    /// RSASSA-PKCS1-v1_5 with SHA2-512; CHUNKED_SHA512. What apksig uses for RSA keys over 3072 bits.
    case rsaPKCS1v15WithSHA512 = 0x0104
    /// ECDSA with SHA2-256; CHUNKED_SHA256 (EC keys up to 256 bits).
    case ecdsaWithSHA256 = 0x0201
    /// ECDSA with SHA2-512; CHUNKED_SHA512 (EC keys over 256 bits).
    case ecdsaWithSHA512 = 0x0202
    /// DSA with SHA2-256; CHUNKED_SHA256.
    case dsaWithSHA256 = 0x0301
    /// RSASSA-PKCS1-v1_5 with SHA2-256 over the fs-verity root hash (VERITY_CHUNKED_SHA256).
    case verityRSAPKCS1v15WithSHA256 = 0x0421
    /// ECDSA with SHA2-256 over the fs-verity root hash.
    case verityECDSAWithSHA256 = 0x0423
    /// DSA with SHA2-256 over the fs-verity root hash.
    case verityDSAWithSHA256 = 0x0425

    /// The ID used in the APK Signature Scheme v2/v3 wire format.
    public var id: UInt32 { rawValue }

    /// The algorithm with wire ID `id`, or nil for an ID apksig does not know (verifiers skip those).
    public init?(id: UInt32) { self.init(rawValue: id) }

    /// How the APK's contents are digested for this algorithm.
    public var contentDigestAlgorithm: ContentDigestAlgorithm {
        switch self {
        case .rsaPSSWithSHA256, .rsaPKCS1v15WithSHA256, .ecdsaWithSHA256, .dsaWithSHA256: return .chunkedSHA256
        case .rsaPSSWithSHA512, .rsaPKCS1v15WithSHA512, .ecdsaWithSHA512: return .chunkedSHA512
        case .verityRSAPKCS1v15WithSHA256, .verityECDSAWithSHA256, .verityDSAWithSHA256: return .verityChunkedSHA256
        }
    }

    /// The digest inside the signature itself (what the signature algorithm hashes the signed data with).
    public var signatureDigestAlgorithm: DigestAlgorithm {
        switch self {
        case .rsaPSSWithSHA512, .rsaPKCS1v15WithSHA512, .ecdsaWithSHA512: return .sha512
        default: return .sha256
        }
    }

    /// The key algorithm this signature needs.
    public var keyAlgorithm: SignatureKeyAlgorithm {
        switch self {
        case .rsaPSSWithSHA256, .rsaPSSWithSHA512, .rsaPKCS1v15WithSHA256, .rsaPKCS1v15WithSHA512,
             .verityRSAPKCS1v15WithSHA256: return .rsa
        case .ecdsaWithSHA256, .ecdsaWithSHA512, .verityECDSAWithSHA256: return .ec
        case .dsaWithSHA256, .verityDSAWithSHA256: return .dsa
        }
    }

    /// True for RSASSA-PSS (needs PSS padding with salt length = digest length, MGF1 with the same digest).
    public var isRSAPSS: Bool { self == .rsaPSSWithSHA256 || self == .rsaPSSWithSHA512 }

    /// The JCA `Signature` algorithm name (apksig `getJcaSignatureAlgorithmAndParams().getFirst()`).
    public var jcaSignatureAlgorithm: String {
        switch self {
        case .rsaPSSWithSHA256: return "SHA256withRSA/PSS"
        case .rsaPSSWithSHA512: return "SHA512withRSA/PSS"
        case .rsaPKCS1v15WithSHA256, .verityRSAPKCS1v15WithSHA256: return "SHA256withRSA"
        case .rsaPKCS1v15WithSHA512: return "SHA512withRSA"
        case .ecdsaWithSHA256, .verityECDSAWithSHA256: return "SHA256withECDSA"
        case .ecdsaWithSHA512: return "SHA512withECDSA"
        case .dsaWithSHA256, .verityDSAWithSHA256: return "SHA256withDSA"
        }
    }

    /// The first Android API level that verifies this algorithm in an APK Signing Block (N = 24; P = 28 for
    /// the verity variants).
    public var minSdkVersion: Int {
        switch self {
        case .verityRSAPKCS1v15WithSHA256, .verityECDSAWithSHA256, .verityDSAWithSHA256: return 28
        default: return 24
        }
    }

    /// The first API level whose JCA provider supports the signature algorithm (apksig
    /// `getJcaSigAlgMinSdkVersion`): PSS from M (23), ECDSA from Honeycomb (11), the rest from 1.
    public var jcaSignatureAlgorithmMinSdkVersion: Int {
        switch self {
        case .rsaPSSWithSHA256, .rsaPSSWithSHA512: return 23
        case .ecdsaWithSHA256, .ecdsaWithSHA512, .verityECDSAWithSHA256: return 11
        default: return 1
        }
    }

    /// apksig's enum constant name (for messages, e.g. "RSA_PKCS1_V1_5_WITH_SHA256").
    public var description: String {
        switch self {
        case .rsaPSSWithSHA256: return "RSA_PSS_WITH_SHA256"
        case .rsaPSSWithSHA512: return "RSA_PSS_WITH_SHA512"
        case .rsaPKCS1v15WithSHA256: return "RSA_PKCS1_V1_5_WITH_SHA256"
        case .rsaPKCS1v15WithSHA512: return "RSA_PKCS1_V1_5_WITH_SHA512"
        case .ecdsaWithSHA256: return "ECDSA_WITH_SHA256"
        case .ecdsaWithSHA512: return "ECDSA_WITH_SHA512"
        case .dsaWithSHA256: return "DSA_WITH_SHA256"
        case .verityRSAPKCS1v15WithSHA256: return "VERITY_RSA_PKCS1_V1_5_WITH_SHA256"
        case .verityECDSAWithSHA256: return "VERITY_ECDSA_WITH_SHA256"
        case .verityDSAWithSHA256: return "VERITY_DSA_WITH_SHA256"
        }
    }

    /// The algorithms apksig signs v2 and v3 blocks with for a key (`V2SchemeSigner` /
    /// `V3SchemeSigner.getSuggestedSignatureAlgorithms`): RSA ≤ 3072 bits → PKCS#1 v1.5 SHA-256, larger →
    /// SHA-512; EC ≤ 256 bits → ECDSA SHA-256, larger → SHA-512; DSA → SHA-256. The verity variant is added
    /// (for the SHA-256 cases only) when `verityEnabled`. The choice does not depend on minSdkVersion.
    ///
    /// - Parameter keySize: RSA modulus bits, or the EC group order's bit length (256, 384, 521).
    public static func suggested(for keyAlgorithm: SignatureKeyAlgorithm, keySize: Int, verityEnabled: Bool = false) -> [SignatureAlgorithm] {
        switch keyAlgorithm {
        case .rsa:
            if keySize <= 3072 { return verityEnabled ? [.rsaPKCS1v15WithSHA256, .verityRSAPKCS1v15WithSHA256] : [.rsaPKCS1v15WithSHA256] }
            return [.rsaPKCS1v15WithSHA512]
        case .dsa:
            return verityEnabled ? [.dsaWithSHA256, .verityDSAWithSHA256] : [.dsaWithSHA256]
        case .ec:
            if keySize <= 256 { return verityEnabled ? [.ecdsaWithSHA256, .verityECDSAWithSHA256] : [.ecdsaWithSHA256] }
            return [.ecdsaWithSHA512]
        }
    }

    /// Orders algorithms as apksig's `ApkSigningBlockUtilsLite.compareSignatureAlgorithm` does: by content
    /// digest strength only (CHUNKED_SHA256 < VERITY_CHUNKED_SHA256 < CHUNKED_SHA512). Returns > 0 when `a`
    /// is preferred, < 0 when `b` is, 0 when there is no preference.
    public static func compare(_ a: SignatureAlgorithm, _ b: SignatureAlgorithm) -> Int {
        func strength(_ d: ContentDigestAlgorithm) -> Int {
            switch d {
            case .chunkedSHA256: return 0
            case .verityChunkedSHA256: return 1
            case .chunkedSHA512: return 2
            }
        }
        let da = strength(a.contentDigestAlgorithm), db = strength(b.contentDigestAlgorithm)
        return da == db ? 0 : (da < db ? -1 : 1)
    }
}

/// Android API levels that the signature schemes refer to (apksig `AndroidSdkVersion`).
public enum AndroidSDK {
    /// Android 4.3: first with SHA-256 in JAR signatures for RSA and ECDSA.
    public static let jellyBeanMR2 = 18
    /// Android 5.0: first with SHA-256 in JAR signatures for DSA.
    public static let lollipop = 21
    /// Android 7.0: APK Signature Scheme v2.
    public static let nougat = 24
    /// Android 9: APK Signature Scheme v3.
    public static let pie = 28
    /// Android 11: targetSdk ≥ 30 requires v2 or newer.
    public static let r = 30
    /// Android 13: APK Signature Scheme v3.1.
    public static let tiramisu = 33
    /// Android 17 (apksig's `AndroidSdkVersion.C`): APK Signature Scheme v3.2, hybrid signatures with ML-DSA.
    public static let c = 37
    /// The release in development as apksig names it (`V3SchemeConstants.DEV_RELEASE`, `AndroidSdkVersion.D`):
    /// until its SDK is final, such a build reports the last released level, so a v3 signer targeting it is
    /// written with `productionRelease` and the development-release attribute.
    public static let developmentRelease = 38
    /// The newest released level as apksig names it (`V3SchemeConstants.PROD_RELEASE`, `AndroidSdkVersion.C`).
    public static let productionRelease = c
}
