import APKCore

/// The APK Signature Scheme v4 file, `<apk>.idsig` (apksig `V4Signature`, version 2), which
/// `adb install --incremental` streams to the device before the APK itself:
///
///     int32 version (2)
///     length-prefixed hashing info:
///         int32 hash algorithm (1 = SHA-256), int8 log2 block size (12), length-prefixed salt,
///         length-prefixed root hash of the fs-verity Merkle tree
///     length-prefixed signing info:
///         length-prefixed APK digest (the best v3 content digest, else v2's), length-prefixed certificate,
///         length-prefixed additional data, length-prefixed public key, int32 signature algorithm ID,
///         length-prefixed signature over `signedData`
///     length-prefixed Merkle tree (all levels, the top one first)
///
/// Every integer is little-endian.
public struct V4Signature: Sendable, Equatable {
    public static let version: Int32 = 2
    public static let hashAlgorithmSHA256: Int32 = 1
    public static let log2BlockSize4096: UInt8 = 12

    public var version: Int32 = V4Signature.version
    public var hashAlgorithm: Int32 = V4Signature.hashAlgorithmSHA256
    public var log2BlockSize: UInt8 = V4Signature.log2BlockSize4096
    public var salt: [UInt8] = []
    public var rootHash: [UInt8]
    public var apkDigest: [UInt8]
    public var certificate: [UInt8]
    public var additionalData: [UInt8] = []
    public var publicKey: [UInt8]
    public var signatureAlgorithmID: Int32
    public var signature: [UInt8]
    public var tree: [UInt8]

    public init(rootHash: [UInt8], apkDigest: [UInt8], certificate: [UInt8], publicKey: [UInt8],
                signatureAlgorithmID: Int32, signature: [UInt8], tree: [UInt8]) {
        self.rootHash = rootHash
        self.apkDigest = apkDigest
        self.certificate = certificate
        self.publicKey = publicKey
        self.signatureAlgorithmID = signatureAlgorithmID
        self.signature = signature
        self.tree = tree
    }

    var hashingInfo: [UInt8] {
        hashAlgorithm.littleEndianBytes + [log2BlockSize] + LengthPrefixed.encode(salt) + LengthPrefixed.encode(rootHash)
    }

    var signingInfo: [UInt8] {
        LengthPrefixed.encode(apkDigest) + LengthPrefixed.encode(certificate) + LengthPrefixed.encode(additionalData)
            + LengthPrefixed.encode(publicKey) + signatureAlgorithmID.littleEndianBytes + LengthPrefixed.encode(signature)
    }

    /// What the signature covers (apksig `V4Signature.getSigningData`): its own int32 size, the APK's size
    /// as int64, the hashing info's fields, then the APK digest, certificate and additional data.
    public func signedData(apkSize: Int64) -> [UInt8] {
        var body = apkSize.littleEndianBytes + hashAlgorithm.littleEndianBytes + [log2BlockSize]
        body += LengthPrefixed.encode(salt) + LengthPrefixed.encode(rootHash)
        body += LengthPrefixed.encode(apkDigest) + LengthPrefixed.encode(certificate) + LengthPrefixed.encode(additionalData)
        return Int32(4 + body.count).littleEndianBytes + body
    }

    /// The `.idsig` file.
    public func encoded() -> [UInt8] {
        version.littleEndianBytes + LengthPrefixed.encode(hashingInfo) + LengthPrefixed.encode(signingInfo) + LengthPrefixed.encode(tree)
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
            apkDigest = Array(try LengthPrefixed.take(&signing, what: "APK digest"))
            certificate = Array(try LengthPrefixed.take(&signing, what: "certificate"))
            additionalData = Array(try LengthPrefixed.take(&signing, what: "additional data"))
            publicKey = Array(try LengthPrefixed.take(&signing, what: "public key"))
            signatureAlgorithmID = Int32(bitPattern: try LengthPrefixed.takeUInt32(&signing, what: "signature algorithm"))
            signature = Array(try LengthPrefixed.take(&signing, what: "signature"))
        } catch let error as SigningBlockError {
            throw SchemeBlockFormatError("v4 signature: \(error.message)")
        }
    }

    /// The APK digest v4 signs (apksig `V4SchemeSigner.getApkDigest`): the v3 block's single signer's best
    /// content digest, else the v2 block's; "best" orders CHUNKED_SHA256 < VERITY_CHUNKED_SHA256 <
    /// CHUNKED_SHA512 (`digestAlgorithmSortingOrder`). Nil when neither block has exactly one signer.
    public static func apkDigest(in block: SigningBlock) -> [UInt8]? {
        for (id, version) in [(SigningBlock.ID.v3, SignatureSchemeVersion.v3), (SigningBlock.ID.v2, .v2)] {
            guard let value = block.value(for: id), let parsed = try? SignatureSchemeBlock(decoding: value, version: version),
                  parsed.signers.count == 1 else { continue }
            var best: (order: Int, digest: [UInt8])?
            for digest in parsed.signers[0].signedData.digests {
                guard let algorithm = SignatureAlgorithm(id: digest.algorithmID) else { continue }
                let order: Int
                switch algorithm.contentDigestAlgorithm {
                case .chunkedSHA256: order = 0
                case .verityChunkedSHA256: order = 1
                case .chunkedSHA512: order = 2
                }
                if order > (best?.order ?? -1) { best = (order, digest.value) }
            }
            if let best { return best.digest }
        }
        return nil
    }
}
