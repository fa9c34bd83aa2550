import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Builds the v2 and v3 signer blocks as apksig's `V2SchemeSigner.generateSignerBlock` and
/// `V3SchemeSigner.generateSignerBlock` do, from content digests computed once for both.
enum SchemeBlockSigner {
    /// apksig's v3 signer SDK range for a single signer without a lineage: from the algorithms' minimum
    /// (API 24 for every non-verity algorithm, `getMinSdkFromV3SignerConfig`) to `Integer.MAX_VALUE`.
    static func v3SdkRange(algorithms: [SignatureAlgorithm]) -> (min: Int32, max: Int32) {
        let minimum = algorithms.map(\.minSdkVersion).min() ?? AndroidSDK.nougat
        return (Int32(minimum), Int32.max)
    }

    /// The ID-value pair for `version`'s block with one signer.
    static func makePair(version: SignatureSchemeVersion, key: SignerKey, algorithms: [SignatureAlgorithm],
                         contentDigests: [ContentDigestAlgorithm: [UInt8]], v3Enabled: Bool,
                         v3Attributes: [AdditionalAttribute] = []) throws -> SigningBlock.Pair {
        guard let certificate = key.certificates.first else { throw SignError.noCertificate }
        let publicKey = try certificate.publicKey()
        let digests = try algorithms.map { algorithm -> AlgorithmTaggedValue in
            guard let digest = contentDigests[algorithm.contentDigestAlgorithm] else {
                throw SignError.internalInconsistency("\(algorithm.contentDigestAlgorithm) content digest for \(algorithm) not computed")
            }
            return AlgorithmTaggedValue(algorithm: algorithm, value: digest)
        }
        var signedData = SignatureSchemeSignedData(digests: digests, certificates: key.certificates.map(\.derBytes))
        switch version {
        case .v2:
            // Stripping protection: tells Android P+ that a v3 signature must be present too.
            if v3Enabled { signedData.additionalAttributes = [.strippingProtection(scheme: 3)] }
        case .v3:
            let range = v3SdkRange(algorithms: algorithms)
            signedData.minSdkVersion = range.min
            signedData.maxSdkVersion = range.max
            signedData.additionalAttributes = v3Attributes
        }
        let bytes = signedData.encoded(for: version)
        var signatures: [AlgorithmTaggedValue] = []
        for algorithm in algorithms {
            let signature = try key.privateKey.sign(bytes, digest: algorithm.signatureDigestAlgorithm)
            // As apksig: check the new signature against the certificate's key before shipping it.
            guard publicKey.verify(signature: signature, data: bytes, digest: algorithm.signatureDigestAlgorithm) else {
                throw SignError.keyDoesNotMatchCertificate(certificate.subjectDN)
            }
            signatures.append(AlgorithmTaggedValue(algorithm: algorithm, value: signature))
        }
        let signer = SignatureSchemeSigner(signedData: signedData, version: version, signatures: signatures,
                                           publicKey: publicKey.subjectPublicKeyInfoDER)
        return SignatureSchemeBlock(version: version, signers: [signer]).pair
    }
}

extension SignatureKeyAlgorithm {
    init(_ algorithm: KeyAlgorithm) {
        switch algorithm {
        case .rsa: self = .rsa
        case .ec: self = .ec
        case .dsa: self = .dsa
        }
    }
}
