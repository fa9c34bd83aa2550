/// PKCS #7 / CMS (RFC 5652) SignedData for JAR (v1) signatures.
public enum PKCS7 {
    /// Object identifiers used in the v1 signature block, as apksig's `OidConstants` names them.
    package enum OID {
        package static let data = "1.2.840.113549.1.7.1"
        package static let signedData = "1.2.840.113549.1.7.2"
        package static let sha1 = "1.3.14.3.2.26"
        package static let sha256 = "2.16.840.1.101.3.4.2.1"
        package static let sha512 = "2.16.840.1.101.3.4.2.3"
        package static let rsaEncryption = "1.2.840.113549.1.1.1"
        package static let ecPublicKey = "1.2.840.10045.2.1"
        package static let dsa = "1.2.840.10040.4.1"
        package static let dsaWithSHA256 = "2.16.840.1.101.3.4.3.2"
    }

    /// SignedData as apksig's V1SchemeSigner writes it (`generateSignatureBlock` →
    /// `ApkSigningBlockUtils.generatePkcs7DerEncodedMessage`): version 1, one digest algorithm, detached
    /// `data` content, the certificates in a DER SET (sorted by encoding), one SignerInfo (version 1,
    /// issuer and serial of `certificates[0]`, no signed or unsigned attributes) whose signature is over
    /// `content` itself. Algorithm identifiers as apksig's `AlgorithmIdentifier`, all with NULL parameters:
    /// digest SHA-1/SHA-256; signature rsaEncryption for RSA, ecPublicKey for EC, dsa (SHA-1) or
    /// dsaWithSHA256 for DSA. The same input and RSA key give the same bytes.
    /// - Parameters:
    ///   - content: the signed bytes (the `.SF` file).
    ///   - certificates: the signer's chain, signer's certificate first. Encoded verbatim.
    ///   - digest: `.sha1` or `.sha256` (apksig's v1 choices); `.sha512` is accepted for RSA and EC.
    ///   - dsaNonce: for a DSA key, random k or RFC 6979's (apksig's `SHA1withDetDSA`/`SHA256withDetDSA`).
    public static func makeSignedData(signing content: [UInt8], key: PrivateKey, certificates: [Certificate],
                                      digest: DigestAlgorithm, dsaNonce: DSANonce = .random) throws -> [UInt8] {
        guard let signer = certificates.first else {
            throw OpenSSLError(function: "PKCS7.makeSignedData", reasons: ["no signer certificate given"])
        }
        let digestOID: String
        switch digest {
        case .sha1: digestOID = OID.sha1
        case .sha256: digestOID = OID.sha256
        case .sha512: digestOID = OID.sha512
        case .md5:
            throw OpenSSLError(function: "PKCS7.makeSignedData", reasons: ["MD5 is not a JAR signature digest; use SHA-1 or SHA-256"])
        }
        let signatureOID: String
        switch (key.algorithm, digest) {
        case (.rsa, _): signatureOID = OID.rsaEncryption
        case (.ec, _): signatureOID = OID.ecPublicKey
        case (.dsa, .sha1): signatureOID = OID.dsa
        case (.dsa, .sha256): signatureOID = OID.dsaWithSHA256
        case (.dsa, _):
            throw OpenSSLError(function: "PKCS7.makeSignedData", reasons: ["DSA JAR signatures use SHA-1 or SHA-256"])
        }
        guard key.matches(signer) else {
            throw OpenSSLError(function: "PKCS7.makeSignedData",
                               reasons: ["the private key does not match the first certificate's public key (\(signer.subjectDN))"])
        }
        let signature = try key.sign(content, digest: digest, dsaNonce: dsaNonce)
        let fields = try TBSFields(certificateDER: signer.derBytes)

        let digestAlgorithm = DER.sequence([DER.objectIdentifier(digestOID), DER.null])
        let signatureAlgorithm = DER.sequence([DER.objectIdentifier(signatureOID), DER.null])
        let issuerAndSerialNumber = DER.sequence([Array(fields.issuer),
                                                  DER.tlv(DER.integerTag, Array(DER.minimalInteger(fields.serialContents)))])
        let signerInfo = DER.sequence([
            DER.integer(1), issuerAndSerialNumber, digestAlgorithm, signatureAlgorithm, DER.octetString(signature),
        ])
        let signedData = DER.sequence([
            DER.integer(1),
            DER.setOf([digestAlgorithm]),
            DER.sequence([DER.objectIdentifier(OID.data)]),      // EncapsulatedContentInfo, content detached
            DER.setOf(certificates.map(\.derBytes), tag: 0xa0),  // certificates [0] IMPLICIT SET OF
            DER.setOf([signerInfo]),
        ])
        // ContentInfo ::= SEQUENCE { contentType, content [0] EXPLICIT ANY }
        return DER.sequence([DER.objectIdentifier(OID.signedData), DER.tlv(0xa0, signedData)])
    }
}
