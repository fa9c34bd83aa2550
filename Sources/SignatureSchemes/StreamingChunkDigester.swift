import APKCore
import DigestLanes
import OpenSSLWrapper

/// Digests the first section of the v2/v3 contents (the ZIP entries, up to the signing block) *while it is
/// being written*, in 1 MiB chunks on background threads, so the signer neither re-reads nor maps its output.
///
/// Feed it every byte of the entries section in order (it is a `DataSink`), then call `finish()`: the
/// result holds each chunk's digest for every algorithm, exactly as `ContentDigester` would compute them, and
/// `ContentDigester.digests(entries:centralDirectory:endOfCentralDirectory:algorithms:)` completes the
/// content digests from it. At most `maxInFlight` chunks (1 MiB each) are buffered at once.
///
/// SHA-256 alone, on a CPU with SHA-NI, hashes two chunks at a time (`ChunkLanes.digests(ofChunks:)`: two
/// interleaved streams at about twice one stream's speed). With `hashesVerityLeaves`, the fs-verity leaves
/// (SHA-256 of each 4096-byte block) of the bytes fed are hashed too while the chunks are in hand, for a v4
/// signature whose tree then reads back only what follows them (`verityLeaves`).
public final class StreamingChunkDigester: DataSink, @unchecked Sendable {
    // @unchecked Sendable: everything but the batches' `BackgroundValue`s is touched only by the feeding thread.
    private let algorithms: [ContentDigestAlgorithm]
    private let maxInFlight: Int
    /// Chunks hashed together (two SHA-NI streams), or one at a time.
    private let batchSize: Int
    private let hashesVerityLeaves: Bool
    /// Each dispatched batch's digests, in chunk order, computed on the global queue, and its chunk count.
    private var batches: [(digests: BackgroundValue<BatchDigests>, chunks: Int)] = []
    /// The batches before this one are known to be done (waited for, to bound the chunks in flight).
    private var doneBefore = 0
    /// Whole chunks not dispatched yet (waiting for a batch partner).
    private var pending: [SendableChunk] = []
    /// The chunk being filled: a copy in `staging` (a pool buffer: fresh megabytes fragment the heap; see
    /// BufferPool).
    private var staging: UnsafeMutableRawBufferPointer?
    private var chunkFill = 0
    /// Bytes consumed so far.
    public private(set) var count: Int64 = 0
    private var finished = false
    /// Digests of the chunks before the first one fed (`resuming`).
    private let prefix: SectionChunkDigests?
    /// After `finish()` with `hashesVerityLeaves`: the leaf digests of the whole blocks fed, from the block
    /// where feeding started (`firstBlock`: 0, or where `resuming` ends).
    public private(set) var verityLeaves: (firstBlock: Int, digests: [UInt8])?

    /// Starts a digester for `algorithms` (chunked algorithms only).
    ///
    /// - Parameters:
    ///   - resuming: the digests of the section's first whole chunks, known from an earlier build whose bytes
    ///     there are the same (watch mode, or a writer that hashed them itself); feeding then starts at byte
    ///     `resuming.byteCount`.
    ///   - hashesVerityLeaves: hash the fs-verity leaves of the bytes fed too (`verityLeaves`).
    public init(algorithms: Set<ContentDigestAlgorithm>, maxInFlight: Int = 4, resuming: SectionChunkDigests? = nil,
                hashesVerityLeaves: Bool = false) throws {
        if algorithms.contains(.verityChunkedSHA256) { throw ContentDigestError.unsupportedAlgorithm(.verityChunkedSHA256) }
        self.algorithms = ContentDigestAlgorithm.allCases.filter { algorithms.contains($0) }
        if let resuming {
            guard resuming.byteCount == Int64(resuming.chunkCount) * ContentDigester.chunkSize,
                  self.algorithms.allSatisfy({ resuming.digests[$0]?.count == resuming.chunkCount * $0.chunkDigestOutputSize }) else {
                throw ContentDigestError.unsupportedAlgorithm(self.algorithms.first ?? .chunkedSHA256)
            }
            count = resuming.byteCount
        }
        prefix = resuming
        self.maxInFlight = max(1, maxInFlight)
        batchSize = ChunkLanes.pairsChunks(self.algorithms) && self.maxInFlight >= 2 ? 2 : 1
        self.hashesVerityLeaves = hashesVerityLeaves
    }

    /// Feeds a copy of `bytes`.
    public func consume(_ bytes: UnsafeRawBufferPointer) throws {
        precondition(!finished, "StreamingChunkDigester fed after finish()")
        count += Int64(bytes.count)
        var offset = 0
        let chunkSize = Int(ContentDigester.chunkSize)
        while offset < bytes.count {
            let take = min(bytes.count - offset, chunkSize - chunkFill)
            if staging == nil { staging = BufferPool.shared.take(); chunkFill = 0 }
            UnsafeMutableRawBufferPointer(rebasing: staging![chunkFill..<(chunkFill + take)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
            chunkFill += take
            offset += take
            if chunkFill == chunkSize { closeChunk() }
        }
    }

    /// The chunk being filled is complete (or the last one): queued for its batch.
    private func closeChunk() {
        guard chunkFill > 0, let staging else { return }
        pending.append(SendableChunk(staging: staging, count: chunkFill))
        self.staging = nil
        chunkFill = 0
        if pending.count >= batchSize { dispatch() }
    }

    private func dispatch() {
        guard !pending.isEmpty else { return }
        let chunks = pending
        pending = []
        // At most `maxInFlight` chunks are buffered: past that, the oldest batches are waited for (each holds
        // its pool buffers until it is hashed).
        var inFlight = batches[doneBefore...].reduce(0) { $0 + $1.chunks }
        while inFlight + chunks.count > maxInFlight && doneBefore < batches.count {
            batches[doneBefore].digests.wait()
            inFlight -= batches[doneBefore].chunks
            doneBefore += 1
        }
        let algorithms = self.algorithms, leaves = hashesVerityLeaves
        batches.append((BackgroundValue {
            defer { for chunk in chunks { BufferPool.shared.recycle(chunk.staging) } }
            return BatchDigests(chunks: chunks.map(\.bytes), algorithms: algorithms, leaves: leaves)
        }, chunks.count))
    }

    /// Hashes the last (partial) chunk, waits for every chunk, and returns the section's chunk digests.
    public func finish() -> SectionChunkDigests {
        if !finished {
            finished = true
            if chunkFill > 0 { closeChunk() } else if let buffer = staging { BufferPool.shared.recycle(buffer); staging = nil }
            dispatch()
        }
        // The work only hashes: it cannot throw.
        let results = batches.map { try! $0.digests.get() }
        var perAlgorithm: [ContentDigestAlgorithm: [UInt8]] = [:]
        let first = prefix?.chunkCount ?? 0
        let chunkCount = results.reduce(0) { $0 + $1.chunks.count }
        for (slot, algorithm) in algorithms.enumerated() {
            var all: [UInt8] = prefix?.digests[algorithm] ?? []
            all.reserveCapacity((first + chunkCount) * algorithm.chunkDigestOutputSize)
            for batch in results { for chunk in batch.chunks { all += chunk[slot] } }
            perAlgorithm[algorithm] = all
        }
        if hashesVerityLeaves {
            var leaves: [UInt8] = []
            leaves.reserveCapacity(results.reduce(0) { $0 + $1.leaves.count })
            for batch in results { leaves += batch.leaves }
            let start = prefix?.byteCount ?? 0
            verityLeaves = (Int(start) / VerityTreeBuilder.blockSize, leaves)
        }
        return SectionChunkDigests(chunkCount: first + chunkCount, byteCount: count, digests: perAlgorithm)
    }
}

/// What a batch of chunks hashes to: each chunk's digest per algorithm, and the leaf digests of their whole
/// 4096-byte blocks (empty unless asked).
private struct BatchDigests: Sendable {
    var chunks: [[[UInt8]]]
    var leaves: [UInt8]

    init(chunks: [UnsafeRawBufferPointer], algorithms: [ContentDigestAlgorithm], leaves hashesLeaves: Bool) {
        // The leaves on a free core beside the chunk digests: the section's last batch is waited for by a signer
        // with nothing else to do. (The chunks outlive both: this returns only when the leaves are done.)
        let unowned = UnownedChunks(chunks)
        let leafWork = hashesLeaves ? BackgroundValue(offered: { Self.leafDigests(of: unowned.chunks) }) : nil
        if chunks.count > 1 {
            self.chunks = ChunkLanes.digests(ofChunks: chunks).map { [$0] }
        } else {
            self.chunks = chunks.map { ContentDigester.chunkDigests($0, algorithms: algorithms) }
        }
        // The work only hashes: it cannot throw.
        leaves = (try? leafWork?.get()) ?? []
    }

    /// The leaf digests of the chunks' whole 4096-byte blocks.
    private static func leafDigests(of chunks: [UnsafeRawBufferPointer]) -> [UInt8] {
        let blockSize = VerityTreeBuilder.blockSize
        let blocks = chunks.reduce(0) { $0 + $1.count / blockSize }
        var leaves = [UInt8](repeating: 0, count: blocks * VerityTreeBuilder.digestSize)
        leaves.withUnsafeMutableBytes { out in
            var at = 0
            for chunk in chunks {
                // Only a last chunk can be short; its partial block, if any, is left to the tree's reader.
                let whole = chunk.count / blockSize * blockSize
                VerityTreeBuilder.leafDigests(of: UnsafeRawBufferPointer(rebasing: chunk[0..<whole]), into: out.baseAddress! + at)
                at += whole / blockSize * VerityTreeBuilder.digestSize
            }
        }
        return leaves
    }

    /// Chunks read by another thread while their owner waits for it.
    private struct UnownedChunks: @unchecked Sendable {
        let chunks: [UnsafeRawBufferPointer]
        init(_ chunks: [UnsafeRawBufferPointer]) { self.chunks = chunks }
    }
}

/// The chunk digests of one section of the digested contents: for each algorithm, the concatenation of
/// H(0xa5 || uint32 length || chunk) over the section's 1 MiB chunks.
public struct SectionChunkDigests: Sendable, Equatable {
    public var chunkCount: Int
    /// The section's length in bytes (where the signing block starts).
    public var byteCount: Int64
    public var digests: [ContentDigestAlgorithm: [UInt8]]

    public init(chunkCount: Int, byteCount: Int64, digests: [ContentDigestAlgorithm: [UInt8]]) {
        self.chunkCount = chunkCount; self.byteCount = byteCount; self.digests = digests
    }

    /// The chunk digests of `bytes` (a section after the entries: the central directory, the EOCD), hashed here,
    /// for each of `algorithms` but verity (which is not chunked so).
    public init(hashing bytes: [UInt8], algorithms: Set<ContentDigestAlgorithm>) {
        let ordered = ContentDigestAlgorithm.allCases.filter { algorithms.contains($0) && $0 != .verityChunkedSHA256 }
        var digests = Dictionary(uniqueKeysWithValues: ordered.map { ($0, [UInt8]()) })
        var chunkCount = 0
        bytes.withUnsafeBytes { section in
            var offset = 0
            while offset < section.count {
                let end = min(section.count, offset + Int(ContentDigester.chunkSize))
                let chunk = ContentDigester.chunkDigests(UnsafeRawBufferPointer(rebasing: section[offset..<end]), algorithms: ordered)
                for (slot, algorithm) in ordered.enumerated() { digests[algorithm]! += chunk[slot] }
                chunkCount += 1
                offset = end
            }
        }
        self.init(chunkCount: chunkCount, byteCount: Int64(bytes.count), digests: digests)
    }

    /// The digests of the first `chunks` whole chunks only.
    public func prefix(chunks: Int) -> SectionChunkDigests? {
        guard chunks <= chunkCount, Int64(chunks) * ContentDigester.chunkSize <= byteCount else { return nil }
        var cut: [ContentDigestAlgorithm: [UInt8]] = [:]
        for (algorithm, all) in digests { cut[algorithm] = Array(all.prefix(chunks * algorithm.chunkDigestOutputSize)) }
        return SectionChunkDigests(chunkCount: chunks, byteCount: Int64(chunks) * ContentDigester.chunkSize, digests: cut)
    }
}

extension ContentDigester {
    /// What a chunk's digest covers before its bytes: 0xa5 and the chunk's length as uint32-LE.
    public static func chunkPrefix(length: Int) -> [UInt8] { [0xa5] + UInt32(length).littleEndianBytes }

    /// H(0xa5 || uint32-LE length || chunk) for each algorithm, in `algorithms` order.
    static func chunkDigests(_ chunk: [UInt8], algorithms: [ContentDigestAlgorithm]) -> [[UInt8]] {
        chunk.withUnsafeBytes { chunkDigests($0, algorithms: algorithms) }
    }

    public static func chunkDigests(_ chunk: UnsafeRawBufferPointer, algorithms: [ContentDigestAlgorithm]) -> [[UInt8]] {
        let prefix = chunkPrefix(length: chunk.count)
        return algorithms.map { algorithm in
            let hasher = Digest(algorithm.digestAlgorithm)
            hasher.update(prefix)
            hasher.update(chunk)
            return hasher.finish()
        }
    }

    /// Completes the content digests when the entries section was digested while written
    /// (`StreamingChunkDigester`): the central directory and the EOCD (its CD offset patched to
    /// `entries.byteCount`) are chunked here, then H(0x5a || uint32 chunk count || all chunk digests).
    public static func digests(entries: SectionChunkDigests, centralDirectory: [UInt8], endOfCentralDirectory: [UInt8],
                               algorithms: Set<ContentDigestAlgorithm>) throws -> [ContentDigestAlgorithm: [UInt8]] {
        try digests(entries: entries, centralDirectory: SectionChunkDigests(hashing: centralDirectory, algorithms: algorithms),
                    endOfCentralDirectory: endOfCentralDirectory, algorithms: algorithms)
    }

    /// `digests(entries:centralDirectory:endOfCentralDirectory:algorithms:)` with the central directory's chunks
    /// hashed already (for at least `algorithms`).
    public static func digests(entries: SectionChunkDigests, centralDirectory: SectionChunkDigests, endOfCentralDirectory: [UInt8],
                               algorithms: Set<ContentDigestAlgorithm>) throws -> [ContentDigestAlgorithm: [UInt8]] {
        let ordered = ContentDigestAlgorithm.allCases.filter { algorithms.contains($0) }
        for algorithm in ordered where entries.digests[algorithm] == nil || centralDirectory.digests[algorithm] == nil
            || algorithm == .verityChunkedSHA256 {
            throw ContentDigestError.unsupportedAlgorithm(algorithm)
        }
        let eocd = SectionChunkDigests(hashing: try endOfCentralDirectoryForDigesting(endOfCentralDirectory, centralDirectoryOffset: entries.byteCount),
                                  algorithms: algorithms)
        let total = entries.chunkCount + centralDirectory.chunkCount + eocd.chunkCount
        guard total <= Int(Int32.max) else { throw ContentDigestError.tooManyChunks(total) }
        var result: [ContentDigestAlgorithm: [UInt8]] = [:]
        for algorithm in ordered {
            let hasher = Digest(algorithm.digestAlgorithm)
            hasher.update([0x5a] + UInt32(total).littleEndianBytes)
            hasher.update(entries.digests[algorithm]!)
            hasher.update(centralDirectory.digests[algorithm]!)
            hasher.update(eocd.digests[algorithm]!)
            result[algorithm] = hasher.finish()
        }
        return result
    }
}

/// A chunk handed to a digest worker: the pool buffer holding it (owned by exactly one thread at a time).
private struct SendableChunk: @unchecked Sendable {
    let staging: UnsafeMutableRawBufferPointer
    let count: Int
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: staging[0..<count]) }
}
