import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Checks an APK Signature Scheme v4 file (`.idsig`) against its APK, as apksig's `V4SchemeVerifier` does:
/// the signature over the hashing and signing info verifies with the public key, which is the
/// certificate's; the certificate and APK digest are those of the APK's v3 (else v2) signer; and the
/// fs-verity root hash and Merkle tree are those of the APK's bytes.
enum V4SchemeVerifier {
    static let context = "APK Signature Scheme v4"

    /// The findings for `signatureBytes` (the `.idsig` file) over the APK in `apk`; empty when it verifies.
    static func verify(signatureBytes: [UInt8], apk: any DataSource, centralDirectoryOffset: Int64) -> [Issue] {
        let signature: V4Signature
        do { signature = try V4Signature(encoded: signatureBytes) } catch {
            return [.error(.v4SigMalformedSigners, context, "Malformed v4 signature file: \(error)")]
        }
        guard let algorithm = SignatureAlgorithm(id: UInt32(bitPattern: signature.signatureAlgorithmID)) else {
            return [.error(.v4SigUnknownSigAlgorithm, context, "Unknown signature algorithm: 0x\(String(UInt32(bitPattern: signature.signatureAlgorithmID), radix: 16))")]
        }
        guard signature.hashAlgorithm == V4Signature.hashAlgorithmSHA256, signature.log2BlockSize == V4Signature.log2BlockSize4096 else {
            return [.error(.v4SigMalformedSigners, context, "Unsupported hashing: algorithm \(signature.hashAlgorithm), block size 2^\(signature.log2BlockSize) (only SHA-256 over 4096-byte blocks exists)")]
        }
        let certificate: VerificationCertificate
        do { certificate = try VerificationCertificate(derEncoded: signature.certificate) } catch {
            return [.error(.v4SigMalformedCertificate, context, "Malformed certificate: \(error)")]
        }
        guard certificate.subjectPublicKeyInfoDER == signature.publicKey else {
            return [.error(.v4SigPublicKeyMismatch, context, "Public key mismatch between certificate and signature record")]
        }
        let signedData = signature.signedData(apkSize: apk.count)
        let verification = SigningBlockSchemeVerifier.verificationAlgorithm(algorithm)
        let verified = (try? certificate.verify(signature: signature.signature, data: signedData, algorithm: verification)) ?? false
        guard verified else { return [.error(.v4SigDidNotVerify, context, "\(algorithm.jcaSignatureAlgorithm) signature over signed-data did not verify")] }

        // The APK's own signer and digest, as the v4 signer took them.
        var issues: [Issue] = []
        let block = try? SigningBlock.locate(in: apk, centralDirectoryOffset: centralDirectoryOffset)
        let signerCertificate = block.flatMap(Self.signerCertificate(in:))
        if signerCertificate != signature.certificate {
            issues.append(.error(.v4SigV2V3SignersMismatch, context, "V4 signature and V2/V3 signature have mismatched certificates"))
        }
        if block.flatMap(V4Signature.apkDigest(in:)) != signature.apkDigest {
            issues.append(.error(.v4SigV2V3DigestsMismatch, context, "V4 signature and V2/V3 signature have mismatched digests"))
        }
        guard let tree = try? VerityTreeBuilder.build(reading: apk, salt: signature.salt) else {
            issues.append(.error(.v4SigAPKTreeDidNotVerify, context, "The APK could not be read to check the Merkle tree"))
            return issues
        }
        if tree.rootHash != signature.rootHash {
            issues.append(.error(.v4SigAPKRootDidNotVerify, context, "The v4 signature's root hash does not match the APK's fs-verity root hash"))
        } else if tree.bytes != signature.tree {
            issues.append(.error(.v4SigAPKTreeDidNotVerify, context, "The v4 signature's Merkle tree does not match the APK's"))
        }
        return issues
    }

    /// The first certificate of the v3 block's single signer, else the v2 block's (apksig compares the v4
    /// certificate with the one whose digest it signs).
    private static func signerCertificate(in block: SigningBlock) -> [UInt8]? {
        for (id, version) in [(SigningBlock.ID.v3, SignatureSchemeVersion.v3), (SigningBlock.ID.v2, .v2)] {
            guard let value = block.value(for: id), let parsed = try? SignatureSchemeBlock(decoding: value, version: version),
                  parsed.signers.count == 1 else { continue }
            return parsed.signers[0].signedData.certificates.first
        }
        return nil
    }
}
