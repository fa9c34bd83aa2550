import OpenSSLWrapper
import SignatureSchemes

/// Signing with a rotated key (apksig `DefaultApkSignerEngine` with a `SigningCertificateLineage`), in the
/// form apkpatch supports so far: the rotation targets API 28 (`--rotation-min-sdk-version 28`), so the v3.0
/// block carries the newest signer with its proof of rotation, and v1 and v2 the oldest signer given
/// (`SignerConfig.key`), which is what devices before API 28 know.
public struct SignerRotation: Sendable {
    /// The newest signer: it signs the v3 block.
    public var newestKey: SignerKey
    /// The lineage, up to the newest signer's certificate, carried in the v3 signer's proof-of-rotation attribute.
    public var lineage: SigningCertificateLineage

    /// Orders `keys` by `lineage` (apksig `sortSignerConfigs`) and checks what apksig checks: every key's
    /// certificate is in the lineage. `oldest` is then the v1/v2 signer, this rotation the v3 one. Throws
    /// for what apksig refuses and for the forms apkpatch does not produce yet (a v3.1 block: a rotation
    /// targeting API 33 and later; more than two signers).
    public static func plan(keys: [SignerKey], lineage: SigningCertificateLineage,
                            rotationMinSdkVersion: Int) throws -> (oldest: SignerKey, rotation: SignerRotation) {
        guard rotationMinSdkVersion <= AndroidSDK.pie else {
            throw SignError.invalidOption("signing a key rotation for API \(rotationMinSdkVersion) and later (a v3.1 block) is not supported yet: pass --rotation-min-sdk-version 28 to rotate from API 28, as apksigner before build-tools 33 did")
        }
        var ordered: [(index: Int, key: SignerKey)] = []
        for key in keys {
            guard let certificate = key.certificates.first else { throw SignError.noCertificate }
            guard let index = lineage.certificates.firstIndex(of: certificate) else {
                throw SignError.invalidOption("the signer \(certificate.subjectDN) is not in the lineage: sign with the lineage's keys (apkpatch lineage --in FILE --print-certs lists them)")
            }
            ordered.append((index, key))
        }
        ordered.sort { $0.index < $1.index }
        guard let first = ordered.first, let last = ordered.last else { throw SignError.noCertificate }
        guard ordered.count <= 2 else {
            throw SignError.invalidOption("more than two signers with a lineage are not supported yet: give the oldest signer and the newest (--next-signer)")
        }
        let sub = try lineage.subLineage(through: last.key.certificates[0])
        return (first.key, SignerRotation(newestKey: last.key, lineage: sub))
    }

    /// The v3 signer's proof-of-rotation attribute (apksig `V3SchemeSigner.generateAdditionalAttributes`).
    var attribute: AdditionalAttribute { AdditionalAttribute(id: AdditionalAttribute.ID.proofOfRotation, value: lineage.attributeValue) }
}

/// The v3 signer of a rotation, checked against the content digests the signer computes for `key`'s
/// algorithms: the newest key must need no other (another key type or size would).
struct RotationSigner: Sendable {
    let key: SignerKey
    let algorithms: [SignatureAlgorithm]
    let attributes: [AdditionalAttribute]

    init(rotation: SignerRotation, algorithms computed: [SignatureAlgorithm]) throws {
        guard let certificate = rotation.newestKey.certificates.first else { throw SignError.noCertificate }
        let publicKey = try certificate.publicKey()
        let algorithms = SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(publicKey.algorithm), keySize: publicKey.bitSize)
        guard Set(algorithms.map(\.contentDigestAlgorithm)).isSubset(of: Set(computed.map(\.contentDigestAlgorithm))) else {
            throw SignError.invalidOption("rotating to a key that needs other content digests than the old one (\(algorithms.map(\.description).joined(separator: ", ")) after \(computed.map(\.description).joined(separator: ", "))) is not supported yet: rotate to a key of the same type and size class")
        }
        key = rotation.newestKey
        self.algorithms = algorithms
        attributes = [rotation.attribute]
    }
}
