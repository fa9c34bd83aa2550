import APKCore
import OpenSSLWrapper

/// The VERITY_CHUNKED_SHA256 content digest (apksig `ApkSigningBlockUtils.computeApkVerityDigest` with
/// `VerityTreeBuilder`): an fs-verity style SHA-256 Merkle tree over 4096-byte blocks with an 8-byte zero
/// salt, each level zero-padded to whole blocks; the digest is the root hash followed by the uint64-LE
/// length of the digested data.
enum VerityTree {
    static let blockSize = 4096
    static let salt = [UInt8](repeating: 0, count: 8)

    static func contentDigest(of sections: [any DataSource]) throws -> [UInt8] {
        let total = sections.reduce(Int64(0)) { $0 + $1.count }
        var level = try hashLevel(ChainedDataSource(sections))
        // Reduce until one block of digests remains (apksig's `calculateLevelOffset` stop rule: a level whose
        // digests fit in one block is the top).
        while level.count > blockSize {
            level = try hashLevel(ByteArrayDataSource(level))
        }
        var top = level
        top.append(contentsOf: repeatElement(0, count: blockSize - top.count))
        let root = VerificationDigest.sha256.hash(salt + top)
        return root + UInt64(total).littleEndianBytes
    }

    /// The salted SHA-256 of every 4096-byte block of `source` (the last one zero-padded), concatenated and
    /// zero-padded to a whole number of blocks.
    private static func hashLevel(_ source: any DataSource) throws -> [UInt8] {
        var out: [UInt8] = []
        var offset: Int64 = 0
        var block = [UInt8](repeating: 0, count: blockSize)
        while offset < source.count {
            let end = min(source.count, offset + Int64(blockSize))
            try source.withBytes(in: offset..<end) { bytes in
                block.withUnsafeMutableBytes { destination in
                    destination.copyMemory(from: bytes)
                    if bytes.count < blockSize {
                        for i in bytes.count..<blockSize { destination[i] = 0 }
                    }
                }
            }
            let hasher = VerificationDigest.sha256.makeHasher()
            hasher.update(salt)
            hasher.update(block)
            out.append(contentsOf: hasher.finish())
            offset = end
        }
        if out.isEmpty {
            // An empty input still yields one (all-zero) digest block.
            return [UInt8](repeating: 0, count: blockSize)
        }
        let remainder = out.count % blockSize
        if remainder != 0 { out.append(contentsOf: repeatElement(0, count: blockSize - remainder)) }
        return out
    }
}
