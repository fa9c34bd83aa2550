import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Checks an APK Signature Scheme v4 file (`.idsig`) against its APK, as apksig's `V4SchemeVerifier` and
/// `ApkVerifier` do: each signing info's signature over the hashing and signing info verifies with its public
/// key, which is its certificate's; the first signing info's certificate and APK digest are those of the APK's
/// v3 (else v2) signer, and an APK with a v3.1 block needs a second one (a signing info block of that block's
/// ID) with the v3.1 signer's; and the fs-verity root hash and Merkle tree are those of the APK's bytes.
enum V4SchemeVerifier {
    static let context = "APK Signature Scheme v4"

    /// The findings for `signatureBytes` (the `.idsig` file) over the APK in `apk`; empty when it verifies.
    static func verify(signatureBytes: [UInt8], apk: any DataSource, centralDirectoryOffset: Int64) -> [Issue] {
        let signature: V4Signature
        do { signature = try V4Signature(encoded: signatureBytes) } catch {
            return [.error(.v4SigMalformedSigners, context, "Malformed v4 signature file: \(error)")]
        }
        guard signature.hashAlgorithm == V4Signature.hashAlgorithmSHA256, signature.log2BlockSize == V4Signature.log2BlockSize4096 else {
            return [.error(.v4SigMalformedSigners, context, "Unsupported hashing: algorithm \(signature.hashAlgorithm), block size 2^\(signature.log2BlockSize) (only SHA-256 over 4096-byte blocks exists)")]
        }
        let infos = [(context, signature.signingInfo)]
            + signature.signingInfoBlocks.map { ("\(context) signing info block 0x\(String($0.blockID, radix: 16))", $0.signingInfo) }
        for (place, info) in infos {
            if let issue = verifySignature(of: info, in: signature, apkSize: apk.count, context: place) { return [issue] }
        }

        // The APK's own signers and digests, as the v4 signer took them.
        var issues: [Issue] = []
        let block = try? SigningBlock.locate(in: apk, centralDirectoryOffset: centralDirectoryOffset)
        let hasV31Block = block?.value(for: SigningBlock.ID.v31) != nil
        if signature.signingInfoBlocks.count != (hasV31Block ? 1 : 0) {
            // apksig ApkVerifier: one v4 signer per v3 block, two with a v3.1 block.
            if hasV31Block {
                issues.append(.error(.v41SigNeedsTwoSigners, context, "V4.1 signature requires two signers: the APK has a v3.1 block, and the v4 signature has \(signature.signingInfoBlocks.count + 1) signing infos"))
            } else {
                issues.append(.error(.v4SigMultipleSigners, context, "V4 signature only supports one signer without a v3.1 block, and it has \(signature.signingInfoBlocks.count + 1) signing infos"))
            }
        } else {
            issues += matchSigner(signature.signingInfo, block.flatMap { V4Signature.signedSigner(in: $0) }, context: context)
            if let v31 = signature.signingInfoBlocks.first {
                let place = "\(context) v3.1 signing info"
                if v31.blockID != SigningBlock.ID.v31 {
                    issues.append(.error(.v4SigMalformedSigners, place, "The signing info block's ID is 0x\(String(v31.blockID, radix: 16)), not the v3.1 block's (0x\(String(SigningBlock.ID.v31, radix: 16))): Android looks it up by that ID"))
                } else {
                    issues += matchSigner(v31.signingInfo, block.flatMap { V4Signature.signedSigner(in: $0, blockID: SigningBlock.ID.v31) }, context: place)
                }
            }
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

    /// Whether `info`'s signature verifies with its certificate's key; nil when it does.
    private static func verifySignature(of info: V4Signature.SigningInfo, in signature: V4Signature, apkSize: Int64, context: String) -> Issue? {
        guard let algorithm = SignatureAlgorithm(id: UInt32(bitPattern: info.signatureAlgorithmID)) else {
            return .error(.v4SigUnknownSigAlgorithm, context, "Unknown signature algorithm: 0x\(String(UInt32(bitPattern: info.signatureAlgorithmID), radix: 16))")
        }
        let certificate: VerificationCertificate
        do { certificate = try VerificationCertificate(derEncoded: info.certificate) } catch {
            return .error(.v4SigMalformedCertificate, context, "Malformed certificate: \(error)")
        }
        guard certificate.subjectPublicKeyInfoDER == info.publicKey else {
            return .error(.v4SigPublicKeyMismatch, context, "Public key mismatch between certificate and signature record")
        }
        let verification = SigningBlockSchemeVerifier.verificationAlgorithm(algorithm)
        let verified = (try? certificate.verify(signature: info.signature, data: signature.signedData(apkSize: apkSize, for: info),
                                                algorithm: verification)) ?? false
        return verified ? nil : .error(.v4SigDidNotVerify, context, "\(algorithm.jcaSignatureAlgorithm) signature over signed-data did not verify")
    }

    /// The findings for a signing info standing for `signer` (apksig `checkV4Signer`): its certificate and digest.
    private static func matchSigner(_ info: V4Signature.SigningInfo, _ signer: SignatureSchemeSigner?, context: String) -> [Issue] {
        var issues: [Issue] = []
        if signer?.signedData.certificates.first != info.certificate {
            issues.append(.error(.v4SigV2V3SignersMismatch, context, "V4 signature and V2/V3 signature have mismatched certificates"))
        }
        if signer.flatMap(V4Signature.bestDigest(of:)) != info.apkDigest {
            issues.append(.error(.v4SigV2V3DigestsMismatch, context, "V4 signature and V2/V3 signature have mismatched digests"))
        }
        return issues
    }
}
