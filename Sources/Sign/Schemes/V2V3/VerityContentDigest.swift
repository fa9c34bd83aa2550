import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// The VERITY_CHUNKED_SHA256 content digest of v2/v3 signatures with `--verity-enabled` (apksig
/// `ApkSigningBlockUtils.computeApkVerityDigest`): the fs-verity Merkle tree root, with an 8-byte zero salt, of
/// the entries section (a whole number of 4096-byte blocks), the central directory and the end record (its
/// central directory offset pointing at the signing block), followed by their total size as a uint64.
enum VerityContentDigest {
    static let salt = [UInt8](repeating: 0, count: 8)

    /// `section` is the written entries section, padded to 4096 bytes; `tail` the central directory and end record.
    static func compute(section: any DataSource, tail: [UInt8], concurrency: Int = 0) throws -> [UInt8] {
        guard section.count % Int64(VerityTreeBuilder.blockSize) == 0 else {
            throw SignError.internalInconsistency("the entries section is not a whole number of 4096-byte blocks")
        }
        // The section's leaf hashes come from a tree over the mapped section (a whole number of blocks, so its
        // leaves are the file's), the tail's from a tree over the tail; the levels above are those of their
        // concatenation.
        var leaves = section.count == 0 ? [] : try section.withBytes(in: 0..<section.count) {
            leafLevel(VerityTreeBuilder.build(over: $0, salt: salt, concurrency: concurrency), dataCount: $0.count)
        }
        leaves += tail.withUnsafeBytes { leafLevel(VerityTreeBuilder.build(over: $0, salt: salt, concurrency: 1), dataCount: $0.count) }
        let root: [UInt8]
        if leaves.count <= VerityTreeBuilder.blockSize {
            root = Digest.hash(salt + leaves + [UInt8](repeating: 0, count: VerityTreeBuilder.blockSize - leaves.count), with: .sha256)
        } else {
            root = leaves.withUnsafeBytes { VerityTreeBuilder.build(over: $0, salt: salt, concurrency: 1).rootHash }
        }
        return root + UInt64(section.count + Int64(tail.count)).littleEndianBytes
    }

    /// The leaf digests of `tree` (its last level, top level first), without the level's zero padding.
    private static func leafLevel(_ tree: VerityTreeBuilder.Tree, dataCount: Int) -> [UInt8] {
        let blocks = max(1, (dataCount + VerityTreeBuilder.blockSize - 1) / VerityTreeBuilder.blockSize)
        let levelSize = (blocks * 32 + VerityTreeBuilder.blockSize - 1) / VerityTreeBuilder.blockSize * VerityTreeBuilder.blockSize
        let start = tree.bytes.count - levelSize
        return Array(tree.bytes[start..<(start + blocks * 32)])
    }
}
