import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// One signer of a v2/v3/v3.1 block: apksig's `ApkSigningBlockUtils.SignerConfig` once
/// `DefaultApkSignerEngine` has settled its SDK range and lineage.
struct SchemeSignerSpec: Sendable {
    var key: SignerKey
    var algorithms: [SignatureAlgorithm]
    /// v3/v3.1: the API range the signer covers (ignored for v2).
    var minSdkVersion: Int32 = Int32(AndroidSDK.nougat)
    var maxSdkVersion: Int32 = Int32.max
    /// v3/v3.1: the signed data's additional attributes, in apksig's order (`generateAdditionalAttributes`).
    var attributes: [AdditionalAttribute] = []
}

/// One block of the APK Signing Block: its pair ID (v3.1 is the v3 format under its own ID), wire format and signers.
struct SchemeBlockSpec: Sendable {
    var id: UInt32
    var version: SignatureSchemeVersion
    var signers: [SchemeSignerSpec]
}

/// Builds the v2 and v3 signer blocks as apksig's `V2SchemeSigner.generateSignerBlock` and
/// `V3SchemeSigner.generateSignerBlock` do, from content digests computed once for both.
enum SchemeBlockSigner {
    /// apksig's v3 signer SDK range for a single signer without a lineage: from the algorithms' minimum
    /// (API 24 for every non-verity algorithm, `getMinSdkFromV3SignerConfig`) to `Integer.MAX_VALUE`.
    static func v3SdkRange(algorithms: [SignatureAlgorithm]) -> (min: Int32, max: Int32) {
        (Int32(v3MinSdkVersion(algorithms: algorithms)), Int32.max)
    }

    /// apksig `getMinSdkFromV3SignerConfig` without a lineage: the first algorithm that serves API 28 decides.
    static func v3MinSdkVersion(algorithms: [SignatureAlgorithm]) -> Int {
        var minimum = Int.max
        for algorithm in algorithms where algorithm.minSdkVersion < minimum {
            minimum = algorithm.minSdkVersion
            if minimum <= AndroidSDK.pie { break }
        }
        return minimum == Int.max ? AndroidSDK.nougat : minimum
    }

    /// The ID-value pair for `block`. `v3Enabled`: v2 signers carry the stripping protection naming v3.
    static func makePair(_ block: SchemeBlockSpec, contentDigests: [ContentDigestAlgorithm: [UInt8]],
                         v3Enabled: Bool) throws -> SigningBlock.Pair {
        let signers = try block.signers.map {
            try makeSigner($0, version: block.version, contentDigests: contentDigests, v3Enabled: v3Enabled)
        }
        return SigningBlock.Pair(id: block.id, value: SignatureSchemeBlock(version: block.version, signers: signers).encoded())
    }

    private static func makeSigner(_ spec: SchemeSignerSpec, version: SignatureSchemeVersion,
                                   contentDigests: [ContentDigestAlgorithm: [UInt8]], v3Enabled: Bool) throws -> SignatureSchemeSigner {
        let key = spec.key
        guard let certificate = key.certificates.first else { throw SignError.noCertificate }
        let publicKey = try certificate.publicKey()
        let digests = try spec.algorithms.map { algorithm -> AlgorithmTaggedValue in
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
            signedData.minSdkVersion = spec.minSdkVersion
            signedData.maxSdkVersion = spec.maxSdkVersion
            signedData.additionalAttributes = spec.attributes
        }
        let bytes = signedData.encoded(for: version)
        var signatures: [AlgorithmTaggedValue] = []
        for algorithm in spec.algorithms {
            let signature = try key.sign(bytes, digest: algorithm.signatureDigestAlgorithm)
            // As apksig: check the new signature against the certificate's key before shipping it.
            guard publicKey.verify(signature: signature, data: bytes, digest: algorithm.signatureDigestAlgorithm) else {
                throw SignError.keyDoesNotMatchCertificate(certificate.subjectDN)
            }
            signatures.append(AlgorithmTaggedValue(algorithm: algorithm, value: signature))
        }
        return SignatureSchemeSigner(signedData: signedData, version: version, signatures: signatures,
                                     publicKey: publicKey.subjectPublicKeyInfoDER)
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
