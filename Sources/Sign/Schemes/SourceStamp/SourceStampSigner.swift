#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// A source stamp to add to the signed APK (apksigner `--stamp-signer`, `--stamp-lineage`,
/// `--stamp-timestamp-enabled`, `--force-stamp-overwrite`): a second signature, by a distributor's stamp key,
/// over the digests the APK's own signatures cover (see `SourceStamp` in SignatureSchemes).
public struct SourceStampConfig: Sendable {
    /// The stamp key. apksig signs stamps with RSA PKCS#1 v1.5 SHA-256 only, so it must be an RSA key.
    public var key: SignerKey
    /// The stamp key's rotation history; the stamp carries it up to the stamp certificate.
    public var lineage: SigningCertificateLineage?
    /// Whether the stamp records when it was signed (apksig's default).
    public var includesTimestamp: Bool
    /// Whether an input's `stamp-cert-sha256` naming another stamp certificate is replaced (else refused).
    public var replacesOtherStamp: Bool

    public init(key: SignerKey, lineage: SigningCertificateLineage? = nil, includesTimestamp: Bool = true, replacesOtherStamp: Bool = false) {
        self.key = key
        self.lineage = lineage
        self.includesTimestamp = includesTimestamp
        self.replacesOtherStamp = replacesOtherStamp
    }

    /// The contents of the `stamp-cert-sha256` entry: the SHA-256 digest of the stamp certificate.
    public func certificateDigest() throws -> [UInt8] {
        guard let certificate = key.certificates.first else { throw SignError.noCertificate }
        return certificate.fingerprint(.sha256)
    }
}

/// Makes the source stamp pair of the APK Signing Block as apksig's `V2SourceStampSigner` does, from digests the
/// signer already has: the v2 and v3.0 blocks' content digests and the SHA-256 of the MANIFEST.MF it wrote. The
/// APK is not read again.
enum SourceStampSigner {
    /// What apksig refuses or cannot sign, checked before anything is written.
    static func check(_ stamp: SourceStampConfig) throws {
        guard let certificate = stamp.key.certificates.first else { throw SignError.noCertificate }
        let algorithm = try certificate.publicKey().algorithm
        // DefaultApkSignerEngine gives the stamp signer RSA_PKCS1_V1_5_WITH_SHA256 whatever its key.
        guard algorithm == .rsa else { throw SignError.sourceStampKeyNotRSA(algorithm: algorithm.rawValue) }
        guard stamp.key.privateKey.matches(certificate) else { throw SignError.keyDoesNotMatchCertificate(certificate.subjectDN) }
        if let lineage = stamp.lineage { _ = try lineage.subLineage(through: certificate) }
    }

    /// One scheme's stamped digests: the scheme ID (`SourceStamp.Scheme`) and its content digests by ID.
    struct SchemeDigests {
        var scheme: UInt32
        var digests: [UInt32: [UInt8]]
    }

    /// The stamp pair over `schemes`, with `timestamp` (seconds since 1970) when the stamp records one.
    static func pair(_ stamp: SourceStampConfig, schemes: [SchemeDigests], timestamp: Int64) throws -> SigningBlock.Pair {
        guard let certificate = stamp.key.certificates.first else { throw SignError.noCertificate }
        func signatures(over data: [UInt8]) throws -> [AlgorithmTaggedValue] {
            [AlgorithmTaggedValue(algorithm: .rsaPKCS1v15WithSHA256, value: try stamp.key.privateKey.sign(data, digest: .sha256))]
        }
        let signed = try schemes.sorted { $0.scheme < $1.scheme }.map { scheme in
            SourceStampBlock.SchemeSignatures(scheme: scheme.scheme, signatures: try signatures(over: SourceStamp.signedDigestBytes(scheme.digests)))
        }
        // apksig keeps the attributes in a HashMap<Integer, byte[]>, whose 16 buckets put the lineage's ID
        // (bucket 4) before the timestamp's (bucket 10): the order they are encoded and signed in.
        var attributes: [(id: UInt32, value: [UInt8])] = []
        if let lineage = stamp.lineage {
            attributes.append((SourceStamp.AttributeID.proofOfRotation, try lineage.subLineage(through: certificate).attributeValue))
        }
        if stamp.includesTimestamp {
            // apksig refuses a clock at or before 1970 rather than stamp a time verifiers reject.
            guard timestamp > 0 else { throw SignError.invalidOption("the system clock reads \(timestamp) seconds since 1970, which a source stamp cannot record: set the clock, or stamp without a timestamp") }
            attributes.append((SourceStamp.AttributeID.timestamp, withUnsafeBytes(of: timestamp.littleEndian) { Array($0) }))
        }
        let encoded = SourceStampBlock.SignedAttributes.encode(attributes)
        let block = SourceStampBlock(certificate: certificate.derBytes, schemeSignatures: signed,
                                     attributes: SourceStampBlock.SignedAttributes(encoded: encoded, signatures: try signatures(over: encoded)))
        return block.pair
    }

    /// Seconds since 1970 now, what apksig records (`Instant.now().getEpochSecond()`).
    static func now() -> Int64 { Int64(time(nil)) }
}
