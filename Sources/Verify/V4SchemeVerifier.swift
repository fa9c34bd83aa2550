import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Checks an APK Signature Scheme v4 file (`.idsig`) against its APK, as apksig's `V4SchemeVerifier` and
/// `ApkVerifier` do: each signing info's signature over the hashing and signing info verifies with its public
/// key, which is its certificate's; the first signing info's certificate and APK digest are those of the APK's
/// v3 (else v2) signer, and an APK with a v3.1 block needs a second one (a signing info block of that block's
/// ID) with the v3.1 signer's; and the fs-verity root hash and Merkle tree are those of the APK's bytes.
///
/// `package` so that the fuzz targets reach it with any bytes, not only with a file beside an APK.
package enum V4SchemeVerifier {
    static let context = "APK Signature Scheme v4"

    /// What `verify` found: the findings (empty when the file verifies) and one signer per signing info, in
    /// the file's order (the v3.0/v2 signer's first, then the v3.1 block's), each with its certificate and the
    /// findings about it, as apksig's `Result.V4SchemeSignerInfo`. No signers when the file cannot be parsed.
    package struct Outcome {
        var issues: [Issue] = []
        var signers: [SignerReport] = []
    }

    /// Checks the `.idsig` file in `signatureFile` against the APK in `apk`; a file bigger than any v4 signature
    /// of that APK is reported without being read.
    static func verify(signatureFile: any DataSource, apk: any DataSource, centralDirectoryOffset: Int64) throws -> Outcome {
        let limit = V4Signature.maximumFileSize(apkSize: apk.count)
        guard signatureFile.count <= limit else {
            return Outcome(issues: [.error(.v4SigMalformedSigners, context, "V4 signature has malformed signer block: the file is \(signatureFile.count) bytes, more than a v4 signature of this \(apk.count)-byte APK can be (at most \(limit)): it is not this APK's .idsig")])
        }
        return verify(signatureBytes: try signatureFile.bytes(in: 0..<signatureFile.count), apk: apk, centralDirectoryOffset: centralDirectoryOffset)
    }

    /// Checks `signatureBytes` (the `.idsig` file) against the APK in `apk`.
    package static func verify(signatureBytes: [UInt8], apk: any DataSource, centralDirectoryOffset: Int64) -> Outcome {
        let signature: V4Signature
        do { signature = try V4Signature(encoded: signatureBytes) } catch {
            return Outcome(issues: [.error(.v4SigMalformedSigners, context, "V4 signature has malformed signer block: \(error)")])
        }
        guard signature.hashAlgorithm == V4Signature.hashAlgorithmSHA256, signature.log2BlockSize == V4Signature.log2BlockSize4096 else {
            return Outcome(issues: [.error(.v4SigMalformedSigners, context, "V4 signature has malformed signer block: unsupported hashing: algorithm \(signature.hashAlgorithm), block size 2^\(signature.log2BlockSize) (only SHA-256 over 4096-byte blocks exists)")])
        }
        guard signature.salt.count <= V4Signature.maximumSaltSize else {
            return Outcome(issues: [.error(.v4SigMalformedSigners, context, "V4 signature has malformed signer block: its salt is \(signature.salt.count) bytes, and fs-verity takes at most \(V4Signature.maximumSaltSize) (apksigner and apkpatch write none): the .idsig is damaged; sign the APK again to make a new one")])
        }
        let infos = [(context, signature.signingInfo)]
            + signature.signingInfoBlocks.map { ("\(context) signing info block 0x\(String($0.blockID, radix: 16))", $0.signingInfo) }
        var outcome = Outcome(signers: infos.enumerated().map { index, entry in
            SignerReport(name: "#\(index + 1)", certificates: (try? VerificationCertificate(derEncoded: entry.1.certificate)).map { [CertificateInfo($0)] } ?? [],
                         minSdkVersion: nil, maxSdkVersion: nil, errors: [], warnings: [])
        })
        func add(_ issue: Issue, signer index: Int?) {
            outcome.issues.append(issue)
            if let index { outcome.signers[index].errors.append(issue) }
        }
        for (index, (place, info)) in infos.enumerated() {
            if let issue = verifySignature(of: info, in: signature, apkSize: apk.count, context: place) {
                add(issue, signer: index)
                return outcome
            }
        }

        // The APK's own signers and digests, as the v4 signer took them.
        let block = try? SigningBlock.locate(in: apk, centralDirectoryOffset: centralDirectoryOffset)
        let hasV31Block = block?.value(for: SigningBlock.ID.v31) != nil
        if signature.signingInfoBlocks.count != (hasV31Block ? 1 : 0) {
            // apksig ApkVerifier: one v4 signer per v3 block, two with a v3.1 block.
            if hasV31Block {
                add(.error(.v41SigNeedsTwoSigners, context, "V4.1 signature requires two signers: the APK has a v3.1 block, and the v4 signature has \(signature.signingInfoBlocks.count + 1) signing infos"), signer: nil)
            } else {
                add(.error(.v4SigMultipleSigners, context, "V4 signature only supports one signer without a v3.1 block, and it has \(signature.signingInfoBlocks.count + 1) signing infos"), signer: nil)
            }
        } else {
            // The v3.0 block's signer when there is one (its SDK range is then the signing info's), else v2's.
            let v30 = block.flatMap { V4Signature.signedSigner(in: $0, blockID: SigningBlock.ID.v3) }
            for issue in matchSigner(signature.signingInfo, v30 ?? block.flatMap { V4Signature.signedSigner(in: $0) }, scheme: v30 == nil ? 2 : 3, context: context) {
                add(issue, signer: 0)
            }
            outcome.takeRange(of: v30, forSigner: 0, info: signature.signingInfo)
            if let v31 = signature.signingInfoBlocks.first {
                let place = "\(context) v3.1 signing info"
                if v31.blockID != SigningBlock.ID.v31 {
                    add(.error(.v4SigMalformedSigners, place, "V4 signature has malformed signer block: the signing info block's ID is 0x\(String(v31.blockID, radix: 16)), not the v3.1 block's (0x\(String(SigningBlock.ID.v31, radix: 16))): Android looks it up by that ID"), signer: 1)
                } else {
                    let signer = block.flatMap { V4Signature.signedSigner(in: $0, blockID: SigningBlock.ID.v31) }
                    for issue in matchSigner(v31.signingInfo, signer, scheme: 3, context: place) { add(issue, signer: 1) }
                    outcome.takeRange(of: signer, forSigner: 1, info: v31.signingInfo)
                }
            }
        }
        // The tree covers the whole APK: apksig reports its mismatch on the first signer.
        guard let tree = try? VerityTreeBuilder.build(reading: apk, salt: signature.salt) else {
            add(.error(.v4SigAPKTreeDidNotVerify, context, "V4 signature's hash tree did not verity: the APK could not be read to check it"), signer: 0)
            return outcome
        }
        if tree.rootHash != signature.rootHash {
            add(.error(.v4SigAPKRootDidNotVerify, context, "V4 signature's hash tree root (content digest) did not verity: it is not the APK's fs-verity root hash"), signer: 0)
        } else if tree.bytes != signature.tree {
            add(.error(.v4SigAPKTreeDidNotVerify, context, "V4 signature's hash tree did not verity: its Merkle tree is not the APK's"), signer: 0)
        }
        return outcome
    }

    /// Whether `info`'s signature verifies with its certificate's key; nil when it does.
    private static func verifySignature(of info: V4Signature.SigningInfo, in signature: V4Signature, apkSize: Int64, context: String) -> Issue? {
        guard let algorithm = SignatureAlgorithm(id: UInt32(bitPattern: info.signatureAlgorithmID)) else {
            return .error(.v4SigUnknownSigAlgorithm, context, "V4 signature has unknown signing algorithm: 0x\(String(UInt32(bitPattern: info.signatureAlgorithmID), radix: 16))")
        }
        let certificate: VerificationCertificate
        do { certificate = try VerificationCertificate(derEncoded: info.certificate) } catch {
            return .error(.v4SigMalformedCertificate, context, "V4 signature has malformed certificate: \(error)")
        }
        guard certificate.subjectPublicKeyInfoDER == info.publicKey else {
            return .error(.v4SigPublicKeyMismatch, context, "V4 signature has mismatched certificate and signature: <\(certificate.subjectPublicKeyInfoDER.hexString)> vs <\(info.publicKey.hexString)>")
        }
        let verification = SigningBlockSchemeVerifier.verificationAlgorithm(algorithm)
        let verified = (try? certificate.verify(signature: info.signature, data: signature.signedData(apkSize: apkSize, for: info),
                                                algorithm: verification)) ?? false
        return verified ? nil : .error(.v4SigDidNotVerify, context, "\(algorithm) signature over signed-data did not verify")
    }

    /// The findings for a signing info standing for `signer` (apksig `checkV4Signer`): its certificate and digest.
    /// `scheme` is 3 for a v3.0 or v3.1 signer, 2 for a v2 one (apksig's message names it).
    private static func matchSigner(_ info: V4Signature.SigningInfo, _ signer: SignatureSchemeSigner?, scheme: Int, context: String) -> [Issue] {
        var issues: [Issue] = []
        if signer?.signedData.certificates.first != info.certificate {
            issues.append(.error(.v4SigV2V3SignersMismatch, context, "V4 signature and V2/V3 signature have mismatched certificates"))
        }
        let digest = signer.flatMap(V4Signature.bestDigest(of:))
        if digest != info.apkDigest {
            issues.append(.error(.v4SigV2V3DigestsMismatch, context,
                                 "V4 signature and V\(scheme) signature have mismatched digests, V\(scheme) digest: \((digest ?? []).hexString), V4 digest: \(info.apkDigest.hexString)"))
        }
        return issues
    }
}

extension V4SchemeVerifier.Outcome {
    /// Gives signer `index` the SDK range of the v3.0/v3.1 signer it stands for, when it carries that signer's
    /// certificate: the API levels on which Android reads this signing info.
    mutating func takeRange(of signer: SignatureSchemeSigner?, forSigner index: Int, info: V4Signature.SigningInfo) {
        guard let signer, signer.signedData.certificates.first == info.certificate else { return }
        signers[index].minSdkVersion = Int(signer.minSdkVersion)
        signers[index].maxSdkVersion = Int(signer.maxSdkVersion)
    }
}
