import APKCore
import DigestLanes
import Dispatch
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
    private static let digestSize = 32

    public struct Tree: Sendable {
        /// All levels, the top one first, each a whole number of blocks.
        public var bytes: [UInt8]
        /// SHA-256 of the salt and the top level's block.
        public var rootHash: [UInt8]
    }

    /// Builds the tree over `bytes` (the whole file). The leaf level, the only large one, is hashed on up to
    /// `concurrency` threads (0: one per core), sixteen blocks at a time in the SHA-256 lanes.
    public static func build(over bytes: UnsafeRawBufferPointer, salt: [UInt8] = [], concurrency: Int = 0) -> Tree {
        // Level sizes, leaves first: each level holds one digest per block of the level below.
        var levelSizes: [Int] = []
        var blocks = max(1, (bytes.count + blockSize - 1) / blockSize)
        while true {
            let size = roundUp(blocks * digestSize)
            levelSizes.append(size)
            if size <= blockSize { break }
            blocks = size / blockSize
        }
        // Offsets in the tree: the top level first.
        var offsets = [Int](repeating: 0, count: levelSizes.count)
        var offset = 0
        for level in levelSizes.indices.reversed() {
            offsets[level] = offset
            offset += levelSizes[level]
        }
        var tree = [UInt8](repeating: 0, count: offset)
        tree.withUnsafeMutableBytes { out in
            hashBlocks(of: bytes, salt: salt, into: out.baseAddress! + offsets[0], concurrency: concurrency)
            for level in 1..<max(1, levelSizes.count) where levelSizes.count > 1 {
                let below = UnsafeRawBufferPointer(start: out.baseAddress! + offsets[level - 1], count: levelSizes[level - 1])
                hashBlocks(of: below, salt: salt, into: out.baseAddress! + offsets[level], concurrency: 1)
            }
        }
        let top = tree[0..<blockSize]
        let root = Digest.hash(salt + Array(top), with: .sha256)
        return Tree(bytes: tree, rootHash: root)
    }

    private static func roundUp(_ count: Int) -> Int { (count + blockSize - 1) / blockSize * blockSize }

    /// SHA-256(salt ‖ block) of every block of `bytes` (the last one zero-padded), written one after another
    /// at `output`.
    private static func hashBlocks(of bytes: UnsafeRawBufferPointer, salt: [UInt8], into output: UnsafeMutableRawPointer, concurrency: Int) {
        let count = (bytes.count + blockSize - 1) / blockSize
        guard count > 0 else { return }
        let whole = bytes.count / blockSize
        let workers = max(1, min(concurrency > 0 ? concurrency : ProcessorCount.active, (count + 255) / 256))
        let perWorker = (count + workers - 1) / workers
        let sendableOutput = UnsafeSendable(output), sendableBytes = UnsafeSendable(bytes)
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let start = worker * perWorker, end = min(count, start + perWorker)
            guard start < end else { return }
            let bytes = sendableBytes.value, output = sendableOutput.value
            let lanes = SHA256Lanes()
            // The partial last block, zero-padded (the lanes read whole blocks only).
            var tail = [UInt8](repeating: 0, count: blockSize)
            if end > whole, whole < count {
                tail.withUnsafeMutableBytes { padded in
                    padded.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[(whole * blockSize)...]))
                }
            }
            let batch = SHA256Lanes.width * 8
            var index = start
            tail.withUnsafeBytes { tailBytes in
                salt.withUnsafeBytes { saltBytes in
                    while index < end {
                        let batchEnd = min(end, index + batch)
                        for block in index..<batchEnd {
                            let lane = block % SHA256Lanes.width
                            if !salt.isEmpty { lanes.update(lane, saltBytes) }
                            if block < whole {
                                lanes.update(lane, UnsafeRawBufferPointer(rebasing: bytes[(block * blockSize)..<((block + 1) * blockSize)]))
                            } else {
                                lanes.update(lane, tailBytes)
                            }
                            lanes.finish(lane, tag: block)
                        }
                        lanes.run { tag, digest in
                            digest.withUnsafeBytes { (output + tag * digestSize).copyMemory(from: $0.baseAddress!, byteCount: digestSize) }
                        }
                        index = batchEnd
                    }
                }
            }
        }
    }
}

/// A pointer handed to worker threads that write disjoint parts of it.
private struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
