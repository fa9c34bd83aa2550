import APKCore
import OpenSSLWrapper
import SignatureSchemes
#if canImport(Glibc)
import Glibc
#endif

/// Why no v4 signature could be made for an APK.
public enum V4SigningError: Error, CustomStringConvertible, Equatable {
    /// v4 signs the v3 (or v2) content digest, so the APK needs one of those schemes.
    case noV2V3Signature
    /// apksig's v4 signer takes exactly one certificate.
    case certificateChain(count: Int)
    case unreadableAPK(String)
    /// A v4 signature carries one signing info per signature block (apksig: "Only accepting one signer config").
    case severalSigners(block: String, count: Int)
    /// The APK has a v3.1 block, whose signer's key was not given.
    case v31KeyMissing
    /// The key given for a block is not the key of that block's signer.
    case notTheBlockSigner(block: String, subject: String)
    /// apksig `V4Signature.MAX_SIGNING_INFOS_SIZE`.
    case signingInfosTooLarge(Int)
    /// A directory stands where the signature goes (`<apk>.idsig`).
    case signaturePathIsDirectory(String)

    public var description: String {
        switch self {
        case .noV2V3Signature:
            return "a v4 signature needs the APK's v3 or v2 content digest, and the APK has no single-signer v3 or v2 signature: enable v2 or v3 signing, or turn v4 off"
        case .certificateChain(let count):
            return "a v4 signature carries exactly one certificate, and the signing key has a chain of \(count): sign with a key whose certificate stands alone, or turn v4 off"
        case .unreadableAPK(let reason):
            return "cannot read the signed APK for its v4 signature: \(reason)"
        case .severalSigners(let block, let count):
            let fix = block == "v2" ? "sign with one signer (several need v3 and a lineage)" : "give that block's SDK levels one signer"
            return "a v4 signature carries one signer per signature block, and the \(block) block has \(count): turn v4 off, or \(fix)"
        case .v31KeyMissing:
            return "the APK has a v3.1 block: its v4 signature needs that block's signer's key too"
        case .notTheBlockSigner(let block, let subject):
            return "the key given for the v4 signature's \(block) signer (\(subject)) is not the one that signed the APK's \(block) block"
        case .signingInfosTooLarge(let size):
            return "the v4 signature's signing infos take at least \(size) bytes, more than the \(V4Signature.maximumSigningInfosSize) Android keeps: sign with smaller certificates, or turn v4 off"
        case .signaturePathIsDirectory(let path):
            return "\(path), where the v4 signature goes, is a directory: move it away, or turn v4 off"
        }
    }
}

/// APK Signature Scheme v4 (apksig `V4SchemeSigner`): the `.idsig` file `adb install --incremental` sends
/// first, so the device can check each block of the APK as it streams in. Made from the finished, signed APK:
/// its fs-verity Merkle tree and its v3 (else v2) content digest, signed with the v3 signer's key (and, for a
/// key rotation in a v3.1 block, the v3.1 digest signed with that block's signer's key beside it). The tree's
/// leaves are SHA-256 lanes over every 4096-byte block, on every core: those of the blocks the signer copied
/// come from `SigningReport.verityLeaves` (hashed while it had them in hand), the rest (the signature files,
/// signing block and central directory) are read back with pread, never mapped.
public enum V4SchemeSigner {
    /// Where apksigner writes the v4 signature of `apkPath`.
    public static func signaturePath(for apkPath: String) -> String { apkPath + ".idsig" }

    /// The v4 signature of the signed APK in `apk` (all of it), by `key` (its v3.0, else v2, signer) and, when the
    /// APK has a v3.1 block, `v31Key` (that block's signer, in a signing info block: apksig `V4SchemeSigner`
    /// `generateSignature` with a v4.1 config); `leaves`: the leaf digests of its first blocks, when known.
    public static func makeSignature(for apk: any DataSource, key: SignerKey, v31Key: SignerKey? = nil, concurrency: Int = 0,
                                     leaves: LeafDigests? = nil) throws -> V4Signature {
        let block: SigningBlock?
        do {
            // The end record is all it takes to find the block (not the thousands of central records).
            let end = try ZipArchive.findEndOfCentralDirectory(in: apk)
            block = try SigningBlock.locate(in: apk, centralDirectoryOffset: end.centralDirectoryOffset)
        } catch {
            throw V4SigningError.unreadableAPK("\(error)")
        }
        guard let block, let signer = V4Signature.signedSigner(in: block) else { throw V4SigningError.noV2V3Signature }
        var v31: (key: SignerKey, signer: SignatureSchemeSigner)?
        if let value = block.value(for: SigningBlock.ID.v31) {
            guard let v31Key else { throw V4SigningError.v31KeyMissing }
            guard let v31Signer = V4Signature.signedSigner(in: block, blockID: SigningBlock.ID.v31) else {
                throw V4SigningError.severalSigners(block: "v3.1", count: (try? SignatureSchemeBlock(decoding: value, version: .v3).signers.count) ?? 0)
            }
            v31 = (v31Key, v31Signer)
        }
        let tree = try VerityTreeBuilder.build(reading: apk, concurrency: concurrency, leaves: leaves)
        var signature = V4Signature(rootHash: tree.rootHash, apkDigest: [], certificate: [], publicKey: [], signatureAlgorithmID: 0,
                                    signature: [], tree: tree.bytes)
        signature.signingInfo = try signingInfo(of: signature, apkSize: apk.count, key: key, signer: signer,
                                                block: block.value(for: SigningBlock.ID.v3) != nil ? "v3" : "v2")
        if let v31 {
            let info = try signingInfo(of: signature, apkSize: apk.count, key: v31.key, signer: v31.signer, block: "v3.1")
            signature.signingInfoBlocks = [V4Signature.SigningInfoBlock(blockID: SigningBlock.ID.v31, signingInfo: info)]
        }
        let size = signature.signingInfos.count
        guard size <= V4Signature.maximumSigningInfosSize else { throw V4SigningError.signingInfosTooLarge(size) }
        return signature
    }

    /// `key`'s signing info over `signer`'s best digest, in `signature` (apksig `generateSigningInfo`).
    private static func signingInfo(of signature: V4Signature, apkSize: Int64, key: SignerKey, signer: SignatureSchemeSigner,
                                    block: String) throws -> V4Signature.SigningInfo {
        let certificate = try onlyCertificate(of: key)
        guard signer.signedData.certificates.first == certificate.derBytes, let apkDigest = V4Signature.bestDigest(of: signer) else {
            throw V4SigningError.notTheBlockSigner(block: block, subject: certificate.subjectDN)
        }
        let publicKey = try certificate.publicKey()
        // apksig `V4SchemeSigner.getSuggestedSignatureAlgorithms`: v3's choice without the verity variants.
        let algorithms = SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(publicKey.algorithm), keySize: publicKey.bitSize)
        guard let algorithm = algorithms.first(where: { $0.contentDigestAlgorithm != .verityChunkedSHA256 }) else {
            throw V4SigningError.noV2V3Signature
        }
        var info = V4Signature.SigningInfo(apkDigest: apkDigest, certificate: certificate.derBytes, publicKey: publicKey.subjectPublicKeyInfoDER,
                                           signatureAlgorithmID: Int32(bitPattern: algorithm.id), signature: [])
        let signedData = signature.signedData(apkSize: apkSize, for: info)
        info.signature = try key.sign(signedData, digest: algorithm.signatureDigestAlgorithm)
        guard publicKey.verify(signature: info.signature, data: signedData, digest: algorithm.signatureDigestAlgorithm) else {
            throw SignError.keyDoesNotMatchCertificate(certificate.subjectDN)
        }
        return info
    }

    /// `key`'s certificate: apksig's v4 signer takes exactly one.
    private static func onlyCertificate(of key: SignerKey) throws -> Certificate {
        guard key.certificates.count == 1, let certificate = key.certificates.first else {
            if key.certificates.isEmpty { throw SignError.noCertificate }
            throw V4SigningError.certificateChain(count: key.certificates.count)
        }
        return certificate
    }

    /// Throws, before any APK is read, what `makeSignature` would throw for `keys` (the v3.0/v2 signer's,
    /// then the v3.1 signer's, if any) whatever the APK: a key with a certificate chain, or signing infos
    /// larger than Android keeps even with the shortest digest (32 bytes) and signature (an RSA key's modulus
    /// size; 8 bytes, the shortest DER encoding, for DSA and EC keys) they can hold.
    public static func checkKeys(_ keys: [SignerKey]) throws {
        var size = 0
        for (index, key) in keys.enumerated() {
            let certificate = try onlyCertificate(of: key)
            let publicKey = try certificate.publicKey()
            let signature = publicKey.algorithm == .rsa ? (publicKey.bitSize + 7) / 8 : 8
            // Length-prefixed digest, certificate, additional data, public key; algorithm ID; signature.
            let info = 4 + 32 + 4 + certificate.derBytes.count + 4 + 4 + publicKey.subjectPublicKeyInfoDER.count + 4 + 4 + signature
            size += index == 0 ? info : 4 + 4 + info  // later ones: block ID and length prefix first
        }
        guard size <= V4Signature.maximumSigningInfosSize else { throw V4SigningError.signingInfosTooLarge(size) }
    }

    /// Writes the v4 signature of the signed APK at `apkPath` to `signaturePath` (temporary file renamed into
    /// place, as the APK).
    public static func writeSignature(forAPKAt apkPath: String, key: SignerKey, v31Key: SignerKey? = nil, to signaturePath: String,
                                      concurrency: Int = 0, leaves: LeafDigests? = nil) throws {
        let apk = try PReadFile(path: apkPath)
        try write(try makeSignature(for: apk, key: key, v31Key: v31Key, concurrency: concurrency, leaves: leaves), to: signaturePath)
    }

    /// Writes `signature` to `path` (temporary file renamed into place).
    private static func write(_ signature: V4Signature, to path: String) throws {
        let output = try OutputFile(destination: path)
        try output.write(signature.encodedHead)
        try output.write(signature.tree)
        try output.commit()
    }
}

/// Whether to write a v4 signature beside a signed APK, and whether a failure to make one is an error
/// (apksigner: on by default, a failure reported only when `--v4-signing-enabled` was given).
public enum V4SigningRequest: Sendable, Equatable {
    case off
    case on(reportsFailure: Bool)

    /// apksigner's reading of `--v4-signing-enabled`: absent means on, failures silent.
    public init(option: Bool?) {
        switch option {
        case .none: self = .on(reportsFailure: false)
        case .some(true): self = .on(reportsFailure: true)
        case .some(false): self = .off
        }
    }
}

extension V4SchemeSigner {
    /// Brings `<apk>.idsig` in line with the APK just written at `apkPath`: writes its v4 signature, or
    /// removes the file a previous signing left (it would not match the new APK) when v4 is off or could not
    /// be made silently. Returns the path of the signature written, nil when none was. `v31Key`: the v3.1
    /// block's signer, for an APK with one. `leaves`: the APK's `SigningReport.verityLeaves`, when the signer
    /// prepared them.
    @discardableResult
    ///
    /// `made`: the signature the signer made already of this APK (`SigningReport.v4Signature`), written as it is.
    public static func updateSignature(forAPKAt apkPath: String, key: @autoclosure () throws -> SignerKey, v31Key: SignerKey? = nil,
                                       request: V4SigningRequest, concurrency: Int = 0, leaves: LeafDigests? = nil,
                                       made: V4Signature? = nil) throws -> String? {
        TestStopPoint.beforeV4Signature.reach()
        let path = signaturePath(for: apkPath)
        switch request {
        case .off:
            removeStale(path)
            return nil
        case .on(let reportsFailure):
            do {
                if let made {
                    try write(made, to: path)
                } else {
                    try writeSignature(forAPKAt: apkPath, key: try key(), v31Key: v31Key, to: path, concurrency: concurrency, leaves: leaves)
                }
                return path
            } catch {
                removeStale(path)
                if reportsFailure { throw error }
                return nil
            }
        }
    }

    private static func removeStale(_ path: String) {
        _ = path.withCString { unlink($0) }
    }

    /// Refuses a directory at `<apk>.idsig` beside `apkPath`: the signature could not take its place, and an
    /// explicit v4 signature is refused before the APK is written rather than after.
    public static func checkSignaturePath(forAPKAt apkPath: String) throws {
        let path = signaturePath(for: apkPath)
        var status = stat()
        if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR { throw V4SigningError.signaturePathIsDirectory(path) }
    }

    /// Removes `<apk>.idsig` beside `apkPath`, if there is one: done just before a new APK replaces the one it
    /// was made for (by the `Signer`, and by whatever writes an unsigned APK there).
    public static func removeSignature(besideAPKAt apkPath: String) { removeStale(signaturePath(for: apkPath)) }
}
