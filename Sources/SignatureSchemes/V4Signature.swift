import APKCore

/// The APK Signature Scheme v4 file, `<apk>.idsig` (apksig `V4Signature`, version 2), which
/// `adb install --incremental` streams to the device before the APK itself:
///
///     int32 version (2)
///     length-prefixed hashing info:
///         int32 hash algorithm (1 = SHA-256), int8 log2 block size (12), length-prefixed salt,
///         length-prefixed root hash of the fs-verity Merkle tree
///     length-prefixed signing infos:
///         signing info: length-prefixed APK digest (the best v3 content digest, else v2's), length-prefixed
///             certificate, length-prefixed additional data, length-prefixed public key, int32 signature
///             algorithm ID, length-prefixed signature over `signedData`
///         then, for an APK with a v3.1 block, signing info blocks: int32 block ID (0x1b93ad61), length-prefixed
///             signing info of that block's signer over its digest (apksig `V4Signature.SigningInfoBlock`)
///     length-prefixed Merkle tree (all levels, the top one first)
///
/// Every integer is little-endian. The first signing info is the one Android reads for a v3.0 (or v2) signer;
/// from API 33 a device that verifies the v3.1 block looks up the signing info block of that block's ID.
public struct V4Signature: Sendable, Equatable {
    public static let version: Int32 = 2
    public static let hashAlgorithmSHA256: Int32 = 1
    public static let log2BlockSize4096: UInt8 = 12
    /// apksig `V4Signature.MAX_SIGNING_INFOS_SIZE`: the kernel keeps the signing infos in 7 KiB.
    public static let maximumSigningInfosSize = 7168
    /// The longest salt fs-verity takes (`FS_VERITY_MAX_SALT_SIZE`). The salt is hashed again with every 4096-byte
    /// block of the tree, so an unbounded one turns checking a large APK into hours of hashing.
    public static let maximumSaltSize = 32

    /// The largest `.idsig` a v4 signature of an APK of `apkSize` bytes can be: its Merkle tree plus the other
    /// fields, given room well beyond what apksig writes (signing infos up to `maximumSigningInfosSize`, two
    /// of them with a v3.1 block). A bigger file is not that APK's, and reading it whole could exhaust memory.
    public static func maximumFileSize(apkSize: Int64) -> Int64 {
        VerityTreeBuilder.treeSize(count: apkSize) + 64 * 1024
    }

    /// One signer's part (apksig `V4Signature.SigningInfo`).
    public struct SigningInfo: Sendable, Equatable {
        public var apkDigest: [UInt8]
        public var certificate: [UInt8]
        public var additionalData: [UInt8] = []
        public var publicKey: [UInt8]
        public var signatureAlgorithmID: Int32
        public var signature: [UInt8]

        public init(apkDigest: [UInt8], certificate: [UInt8], publicKey: [UInt8], signatureAlgorithmID: Int32, signature: [UInt8]) {
            self.apkDigest = apkDigest
            self.certificate = certificate
            self.publicKey = publicKey
            self.signatureAlgorithmID = signatureAlgorithmID
            self.signature = signature
        }

        var encoded: [UInt8] {
            LengthPrefixed.encode(apkDigest) + LengthPrefixed.encode(certificate) + LengthPrefixed.encode(additionalData)
                + LengthPrefixed.encode(publicKey) + signatureAlgorithmID.littleEndianBytes + LengthPrefixed.encode(signature)
        }

        init(parsing bytes: inout ArraySlice<UInt8>) throws {
            apkDigest = Array(try LengthPrefixed.take(&bytes, what: "APK digest"))
            certificate = Array(try LengthPrefixed.take(&bytes, what: "certificate"))
            additionalData = Array(try LengthPrefixed.take(&bytes, what: "additional data"))
            publicKey = Array(try LengthPrefixed.take(&bytes, what: "public key"))
            signatureAlgorithmID = Int32(bitPattern: try LengthPrefixed.takeUInt32(&bytes, what: "signature algorithm"))
            signature = Array(try LengthPrefixed.take(&bytes, what: "signature"))
        }
    }

    /// A signing info for another signature block than the v3.0/v2 one (apksig `V4Signature.SigningInfoBlock`).
    public struct SigningInfoBlock: Sendable, Equatable {
        /// The signing block pair ID of the block whose signer this is (`SigningBlock.ID.v31`).
        public var blockID: UInt32
        public var signingInfo: SigningInfo

        public init(blockID: UInt32, signingInfo: SigningInfo) {
            self.blockID = blockID
            self.signingInfo = signingInfo
        }
    }

    public var version: Int32 = V4Signature.version
    public var hashAlgorithm: Int32 = V4Signature.hashAlgorithmSHA256
    public var log2BlockSize: UInt8 = V4Signature.log2BlockSize4096
    public var salt: [UInt8] = []
    public var rootHash: [UInt8]
    /// The v3.0 (else v2) signer's signing info.
    public var signingInfo: SigningInfo
    /// The other blocks' signing infos: the v3.1 block's signer, when the APK has one.
    public var signingInfoBlocks: [SigningInfoBlock] = []
    public var tree: [UInt8]

    public init(rootHash: [UInt8], apkDigest: [UInt8], certificate: [UInt8], publicKey: [UInt8],
                signatureAlgorithmID: Int32, signature: [UInt8], tree: [UInt8]) {
        self.rootHash = rootHash
        self.signingInfo = SigningInfo(apkDigest: apkDigest, certificate: certificate, publicKey: publicKey,
                                       signatureAlgorithmID: signatureAlgorithmID, signature: signature)
        self.tree = tree
    }

    // The first signing info's fields.
    public var apkDigest: [UInt8] { get { signingInfo.apkDigest } set { signingInfo.apkDigest = newValue } }
    public var certificate: [UInt8] { get { signingInfo.certificate } set { signingInfo.certificate = newValue } }
    public var additionalData: [UInt8] { get { signingInfo.additionalData } set { signingInfo.additionalData = newValue } }
    public var publicKey: [UInt8] { get { signingInfo.publicKey } set { signingInfo.publicKey = newValue } }
    public var signatureAlgorithmID: Int32 { get { signingInfo.signatureAlgorithmID } set { signingInfo.signatureAlgorithmID = newValue } }
    public var signature: [UInt8] { get { signingInfo.signature } set { signingInfo.signature = newValue } }

    var hashingInfo: [UInt8] {
        hashAlgorithm.littleEndianBytes + [log2BlockSize] + LengthPrefixed.encode(salt) + LengthPrefixed.encode(rootHash)
    }

    /// apksig `V4Signature.SigningInfos.toByteArray`: the first signing info, then each block's ID and signing info.
    public var signingInfos: [UInt8] {
        signingInfo.encoded + signingInfoBlocks.flatMap { UInt32($0.blockID).littleEndianBytes + LengthPrefixed.encode($0.signingInfo.encoded) }
    }

    /// What the first signing info's signature covers.
    public func signedData(apkSize: Int64) -> [UInt8] { signedData(apkSize: apkSize, for: signingInfo) }

    /// What `info`'s signature covers (apksig `V4Signature.getSignedData`): its own int32 size, the APK's size
    /// as int64, the hashing info's fields, then the info's APK digest, certificate and additional data.
    public func signedData(apkSize: Int64, for info: SigningInfo) -> [UInt8] {
        var body = apkSize.littleEndianBytes + hashAlgorithm.littleEndianBytes + [log2BlockSize]
        body += LengthPrefixed.encode(salt) + LengthPrefixed.encode(rootHash)
        body += LengthPrefixed.encode(info.apkDigest) + LengthPrefixed.encode(info.certificate) + LengthPrefixed.encode(info.additionalData)
        return Int32(4 + body.count).littleEndianBytes + body
    }

    /// The `.idsig` file.
    public func encoded() -> [UInt8] {
        let head = encodedHead
        var bytes = [UInt8]()
        bytes.reserveCapacity(head.count + tree.count)
        bytes += head
        bytes += tree
        return bytes
    }

    /// What `encoded()` holds before the tree's bytes (the tree's length prefix last): a writer sends the tree
    /// after it as it is, without a copy of hundreds of kilobytes.
    public var encodedHead: [UInt8] {
        version.littleEndianBytes + LengthPrefixed.encode(hashingInfo) + LengthPrefixed.encode(signingInfos)
            + UInt32(tree.count).littleEndianBytes
    }

    /// Parses an `.idsig` file. Throws `SchemeBlockFormatError` saying what is short or wrong.
    public init(encoded bytes: [UInt8]) throws {
        var rest = bytes[...]
        do {
            version = Int32(bitPattern: try LengthPrefixed.takeUInt32(&rest, what: "version"))
            guard version == Self.version else { throw SchemeBlockFormatError("v4 signature version \(version) is not supported (only version 2)") }
            var hashing = try LengthPrefixed.take(&rest, what: "hashing info")
            var signing = try LengthPrefixed.take(&rest, what: "signing info")
            tree = Array(try LengthPrefixed.take(&rest, what: "Merkle tree"))
            hashAlgorithm = Int32(bitPattern: try LengthPrefixed.takeUInt32(&hashing, what: "hash algorithm"))
            guard let log2 = hashing.first else { throw SchemeBlockFormatError("hashing info: truncated block size") }
            log2BlockSize = log2
            hashing = hashing.dropFirst()
            salt = Array(try LengthPrefixed.take(&hashing, what: "salt"))
            rootHash = Array(try LengthPrefixed.take(&hashing, what: "root hash"))
            signingInfo = try SigningInfo(parsing: &signing)
            while !signing.isEmpty {
                let id = try LengthPrefixed.takeUInt32(&signing, what: "signing info block ID")
                var info = try LengthPrefixed.take(&signing, what: "signing info block")
                signingInfoBlocks.append(SigningInfoBlock(blockID: id, signingInfo: try SigningInfo(parsing: &info)))
            }
        } catch let error as SigningBlockError {
            throw SchemeBlockFormatError("v4 signature: \(error.message)")
        }
    }

    /// The signer whose digest and certificate a v4 signing info carries (apksig `V4SchemeSigner.getApkDigests`):
    /// for the first signing info (`blockID` nil) the v3 block's single signer, else the v2 block's; for a
    /// signing info block, that block's single signer. Nil when there is none with a content digest v4 takes.
    public static func signedSigner(in block: SigningBlock, blockID: UInt32? = nil) -> SignatureSchemeSigner? {
        let candidates: [(UInt32, SignatureSchemeVersion)] = blockID.map { [($0, .v3)] } ?? [(SigningBlock.ID.v3, .v3), (SigningBlock.ID.v2, .v2)]
        for (id, version) in candidates {
            guard let value = block.value(for: id), let parsed = try? SignatureSchemeBlock(decoding: value, version: version),
                  parsed.signers.count == 1, bestDigest(of: parsed.signers[0]) != nil else { continue }
            return parsed.signers[0]
        }
        return nil
    }

    /// The digest v4 signs of `signer` (apksig `V4SchemeSigner.pickBestDigest`): its best content digest,
    /// "best" ordering CHUNKED_SHA256 < VERITY_CHUNKED_SHA256 < CHUNKED_SHA512 (`digestAlgorithmSortingOrder`).
    public static func bestDigest(of signer: SignatureSchemeSigner) -> [UInt8]? {
        var best: (order: Int, digest: [UInt8])?
        for digest in signer.signedData.digests {
            guard let algorithm = SignatureAlgorithm(id: digest.algorithmID) else { continue }
            let order: Int
            switch algorithm.contentDigestAlgorithm {
            case .chunkedSHA256: order = 0
            case .verityChunkedSHA256: order = 1
            case .chunkedSHA512: order = 2
            }
            if order > (best?.order ?? -1) { best = (order, digest.value) }
        }
        return best?.digest
    }

    /// The APK digest of the first signing info: the v3 block's single signer's best content digest, else the
    /// v2 block's. Nil when neither block has exactly one signer.
    public static func apkDigest(in block: SigningBlock) -> [UInt8]? {
        signedSigner(in: block).flatMap(bestDigest(of:))
    }
}
