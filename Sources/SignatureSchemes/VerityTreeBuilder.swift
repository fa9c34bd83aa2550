import APKCore
import DigestLanes
import OpenSSLWrapper

/// The fs-verity Merkle tree of a file (apksig `VerityTreeBuilder`, Linux `fsverity digest --out-merkle-tree`):
/// SHA-256 over 4096-byte blocks, each level's digests concatenated and zero-padded to whole blocks, hashed
/// again until one block remains.
///
///     tree   = top level, …, leaf level  (the root's level first, as fs-verity stores it)
///     leaf   = SHA-256(salt ‖ block) for every 4096-byte block of the file, the last one zero-padded
///     root   = SHA-256(salt ‖ top level's single block)
///
/// v4 signing (`.idsig`) uses it without salt; the VERITY_CHUNKED_SHA256 content digest of v2/v3 uses an
/// 8-byte zero salt.
public enum VerityTreeBuilder {
    public static let blockSize = 4096
    public static let digestSize = 32

    public struct Tree: Sendable {
        /// All levels, the top one first, each a whole number of blocks.
        public var bytes: [UInt8]
        /// SHA-256 of the salt and the top level's block.
        public var rootHash: [UInt8]
    }

    /// Builds the tree over `bytes` (the whole file, in memory or mapped). The leaf level, the only large one,
    /// is hashed on up to `concurrency` threads (0: one per core), 1 MiB at a time in the SHA-256 lanes.
    public static func build(over bytes: UnsafeRawBufferPointer, salt: [UInt8] = [], concurrency: Int = 0) -> Tree {
        let sendableBytes = UnsafeSendable(bytes)
        return assemble(count: Int64(bytes.count), salt: salt, known: nil) { leaves, first in
            hashLeaves(count: Int64(bytes.count), fromBlock: first, salt: salt, into: leaves, concurrency: concurrency) { range, buffer in
                let bytes = sendableBytes.value
                let whole = (range.count / blockSize) * blockSize
                guard whole < range.count else { return UnsafeRawBufferPointer(rebasing: bytes[range]) }
                // The partial last block, zero-padded in a copy.
                let copy = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<roundUp(range.count)])
                copy.initializeMemory(as: UInt8.self, repeating: 0)
                copy.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[range]))
                return UnsafeRawBufferPointer(copy)
            }
        }
    }

    /// Builds the tree over the first `count` bytes of `source` (the whole file), read with `read(_:into:)`
    /// (pread for a file) 1 MiB at a time into pooled buffers on up to `concurrency` threads (0: one per core):
    /// nothing is mapped, so memory stays at the tree (1/128 of the file) and a buffer per core whatever the
    /// file size.
    ///
    /// - Parameter known: the leaf digests of the file's first blocks, already computed (the signer hashes
    ///   the blocks of the entries section while it writes them): only the blocks after them are read.
    public static func build(reading source: any DataSource, count: Int64? = nil, salt: [UInt8] = [], concurrency: Int = 0,
                             leaves known: LeafDigests? = nil) throws -> Tree {
        let count = count ?? source.count
        let failure = Parallel.FirstFailure()
        let tree = assemble(count: count, salt: salt, known: known) { leaves, first in
            hashLeaves(count: count, fromBlock: first, salt: salt, into: leaves, concurrency: concurrency) { range, buffer in
                do {
                    try source.read(Int64(range.lowerBound)..<Int64(range.upperBound), into: buffer)
                } catch {
                    failure.record(error)
                    return nil
                }
                // The partial last block, zero-padded in place.
                let padded = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<roundUp(range.count)])
                UnsafeMutableRawBufferPointer(rebasing: padded[range.count...]).initializeMemory(as: UInt8.self, repeating: 0)
                return UnsafeRawBufferPointer(padded)
            }
        }
        try failure.rethrow()
        return tree
    }

    /// The tree of `count` bytes: lays out the levels, takes the `known` leaves, has `hashLeaves` hash the
    /// others (from the given block on, into the leaf level), then hashes the levels above.
    private static func assemble(count: Int64, salt: [UInt8], known: LeafDigests?,
                                 hashLeaves: (_ leaves: UnsafeMutableRawPointer, _ fromBlock: Int) -> Void) -> Tree {
        let blocks = max(1, Int((count + Int64(blockSize) - 1) / Int64(blockSize)))
        let levelSizes = levelSizes(blocks: blocks)
        // Offsets in the tree: the top level first.
        var offsets = [Int](repeating: 0, count: levelSizes.count)
        var offset = 0
        for level in levelSizes.indices.reversed() {
            offsets[level] = offset
            offset += levelSizes[level]
        }
        var tree = [UInt8](repeating: 0, count: offset)
        // Known leaves are unsalted digests.
        let knownBlocks = salt.isEmpty ? known.map { min($0.blockCount, blocks) } ?? 0 : 0
        tree.withUnsafeMutableBytes { out in
            let leaves = out.baseAddress! + offsets[0]
            if let known, knownBlocks > 0 {
                known.digests.withUnsafeBytes { leaves.copyMemory(from: $0.baseAddress!, byteCount: knownBlocks * digestSize) }
            }
            hashLeaves(leaves, knownBlocks)
            for level in levelSizes.indices.dropFirst() {
                let below = UnsafeRawBufferPointer(start: out.baseAddress! + offsets[level - 1], count: levelSizes[level - 1])
                hashWholeBlocks(below, salt: salt, into: out.baseAddress! + offsets[level])
            }
        }
        let top = tree[0..<blockSize]
        let root = Digest.hash(salt + Array(top), with: .sha256)
        return Tree(bytes: tree, rootHash: root)
    }

    /// The size in bytes of the tree over `count` bytes (all levels), what a v4 signature file carries.
    public static func treeSize(count: Int64) -> Int64 {
        let blocks = max(1, (max(0, count) + Int64(blockSize) - 1) / Int64(blockSize))
        return Int64(levelSizes(blocks: Int(blocks)).reduce(0, +))
    }

    /// Level sizes, leaves first: each level holds one digest per block of the level below.
    private static func levelSizes(blocks: Int) -> [Int] {
        var levelSizes: [Int] = []
        var levelBlocks = blocks
        while true {
            let size = roundUp(levelBlocks * digestSize)
            levelSizes.append(size)
            if size <= blockSize { break }
            levelBlocks = size / blockSize
        }
        return levelSizes
    }

    private static func roundUp(_ count: Int) -> Int { (count + blockSize - 1) / blockSize * blockSize }

    /// The leaf digests of blocks `first...` of `count` bytes, at `output` (leaf i at `output + 32 i`), 1 MiB
    /// pieces shared between the threads. `piece` gives a piece's bytes, its last block zero-padded to a whole
    /// one (in the pooled buffer it is handed, or where they lie), or nil after a failure. (An empty file's
    /// single leaf is left zero.)
    private static func hashLeaves(count: Int64, fromBlock first: Int, salt: [UInt8], into output: UnsafeMutableRawPointer,
                                   concurrency: Int,
                                   piece: @Sendable (Range<Int>, UnsafeMutableRawBufferPointer) -> UnsafeRawBufferPointer?) {
        let start = first * blockSize
        guard Int64(start) < count else { return }
        let pieceSize = BufferPool.bufferSize
        let pieceCount = (Int(count) - start + pieceSize - 1) / pieceSize
        let sendableOutput = UnsafeSendable(output)
        // Nothing in here throws: a failed read is `piece`'s to record.
        try? Parallel.forEach(pieceCount, concurrency: concurrency) { index in
            let from = start + index * pieceSize, to = min(Int(count), from + pieceSize)
            let buffer = BufferPool.shared.take()
            defer { BufferPool.shared.recycle(buffer) }
            guard let bytes = piece(from..<to, buffer) else { return }
            hashWholeBlocks(bytes, salt: salt, into: sendableOutput.value + from / blockSize * digestSize)
        }
    }

    /// The unsalted leaf digests of `bytes`, a whole number of blocks, one after another at `output` (a
    /// v4 tree's leaves, for a writer that has the file's blocks in hand).
    public static func leafDigests(of bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) {
        precondition(bytes.count % blockSize == 0, "leaves are whole blocks")
        hashWholeBlocks(bytes, salt: [], into: output)
    }

    /// SHA-256(salt ‖ block) of each 4096-byte block of `bytes` (a whole number of them), one after another
    /// at `output`.
    static func hashWholeBlocks(_ bytes: UnsafeRawBufferPointer, salt: [UInt8], into output: UnsafeMutableRawPointer) {
        guard !bytes.isEmpty else { return }
        if salt.isEmpty {
            SHA256Lanes.hashBlocks(of: bytes, blockSize: blockSize, into: output)
            return
        }
        let lanes = SHA256Lanes()
        let count = bytes.count / blockSize
        let batch = SHA256Lanes.width * 8
        salt.withUnsafeBytes { saltBytes in
            var index = 0
            while index < count {
                let end = min(count, index + batch)
                for block in index..<end {
                    let lane = block % SHA256Lanes.width
                    lanes.update(lane, saltBytes)
                    lanes.update(lane, UnsafeRawBufferPointer(rebasing: bytes[(block * blockSize)..<((block + 1) * blockSize)]))
                    lanes.finish(lane, tag: block)
                }
                lanes.run { tag, digest in
                    digest.withUnsafeBytes { (output + tag * digestSize).copyMemory(from: $0.baseAddress!, byteCount: digestSize) }
                }
                index = end
            }
        }
    }
}

/// The leaf digests (SHA-256 of each 4096-byte block, unsalted) of the first `blockCount` blocks of a file,
/// leaf i at bytes 32 i: what a writer that had the blocks in hand computed, so that the tree need not read
/// them again.
public struct LeafDigests: Sendable, Equatable {
    public var blockCount: Int
    public var digests: [UInt8]

    public init(blockCount: Int, digests: [UInt8]) {
        precondition(digests.count >= blockCount * VerityTreeBuilder.digestSize)
        self.blockCount = blockCount
        self.digests = digests
    }
}

/// A pointer handed to worker threads that write disjoint parts of it.
private struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
