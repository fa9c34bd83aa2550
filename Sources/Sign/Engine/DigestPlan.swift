import OpenSSLWrapper
import SignatureSchemes

/// The digests a key calls for at a minSdkVersion: v1's (DefaultApkSignerEngine.createV1SignerConfigs) and
/// the v2/v3 content digests of its suggested signature algorithms (verity off, as the apksigner default).
/// The writers compute exactly these while they write the entries.
struct DigestPlan: Equatable, Sendable {
    var v1: DigestAlgorithm?
    var block: Set<ContentDigestAlgorithm>

    init(v1: DigestAlgorithm?, block: Set<ContentDigestAlgorithm>) { self.v1 = v1; self.block = block }

    init(key: SignerKey, schemes: Set<SignatureScheme>, minSdkVersion: Int) throws {
        guard let certificate = key.certificates.first else { throw SignError.noCertificate }
        let publicKey = try certificate.publicKey()
        v1 = schemes.contains(.v1) ? try V1SchemeSigner.digestAlgorithm(for: publicKey.algorithm, minSdkVersion: minSdkVersion) : nil
        block = Set(SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(publicKey.algorithm), keySize: publicKey.bitSize)
            .map(\.contentDigestAlgorithm))
    }

    /// The digests several signers call for together (apksig `createV1SignerConfigs`: the strongest v1
    /// digest of theirs; every content digest any of their algorithms covers).
    init(keys: [SignerKey], schemes: Set<SignatureScheme>, minSdkVersion: Int) throws {
        var v1: DigestAlgorithm?
        var block: Set<ContentDigestAlgorithm> = []
        for key in keys {
            let plan = try DigestPlan(key: key, schemes: schemes, minSdkVersion: minSdkVersion)
            if let digest = plan.v1, v1.map({ digest.outputSize > $0.outputSize }) ?? true { v1 = digest }
            block.formUnion(plan.block)
        }
        self.init(v1: v1, block: block)
    }

    /// What RSA keys up to 3072 bits, EC P-256 and DSA call for; nil where the key type decides (v1 below
    /// API 21: SHA-1 for RSA below 18 and DSA below 21).
    static func likely(schemes: Set<SignatureScheme>, minSdkVersion: Int) -> DigestPlan? {
        if schemes.contains(.v1) && minSdkVersion < 21 { return nil }
        return DigestPlan(v1: schemes.contains(.v1) ? .sha256 : nil, block: [.chunkedSHA256])
    }
}
