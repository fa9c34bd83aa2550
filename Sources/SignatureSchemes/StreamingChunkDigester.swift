import APKCore
import OpenSSLWrapper

/// Digests the first section of the v2/v3 contents (the ZIP entries, up to the signing block) *while it is
/// being written*, in 1 MiB chunks on background threads, so the signer neither re-reads nor maps its output.
///
/// Feed it every byte of the entries section in order (it is a `DataSink`), then call `finish()`: the
/// result holds each chunk's digest for every algorithm, exactly as `ContentDigester` would compute them, and
/// `ContentDigester.digests(entries:centralDirectory:endOfCentralDirectory:algorithms:)` completes the
/// content digests from it. At most `maxInFlight` chunks (1 MiB each) are buffered at once.
public final class StreamingChunkDigester: DataSink, @unchecked Sendable {
    // @unchecked Sendable: everything but the chunks' `BackgroundValue`s is touched only by the feeding thread.
    private let algorithms: [ContentDigestAlgorithm]
    private let maxInFlight: Int
    /// Each dispatched chunk's digests (one per algorithm), in chunk order, computed on the global queue.
    private var chunkDigests: [BackgroundValue<[[UInt8]]>] = []
    /// The chunks before this one are known to be done (waited for, to bound the chunks in flight).
    private var doneBefore = 0
    /// The chunk being filled, as pieces in order: copies in `staging` (a pool buffer: fresh megabytes
    /// fragment the heap; see BufferPool).
    private var pieces: [UnsafeRawBufferPointer] = []
    private var chunkFill = 0
    private var staging: UnsafeMutableRawBufferPointer?
    private var stagingCount = 0
    /// Bytes consumed so far.
    public private(set) var count: Int64 = 0
    private var finished = false
    /// Digests of the chunks before the first one fed (`resuming`).
    private let prefix: SectionChunkDigests?

    /// Starts a digester for `algorithms` (chunked algorithms only).
    ///
    /// - Parameter resuming: the digests of the section's first whole chunks, known from an earlier build
    ///   whose bytes there are the same (watch mode); feeding then starts at byte `resuming.byteCount`.
    public init(algorithms: Set<ContentDigestAlgorithm>, maxInFlight: Int = 4, resuming: SectionChunkDigests? = nil) throws {
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
    }

    /// Feeds a copy of `bytes`.
    public func consume(_ bytes: UnsafeRawBufferPointer) throws {
        feed(bytes)
    }

    private func feed(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "StreamingChunkDigester fed after finish()")
        count += Int64(bytes.count)
        var offset = 0
        let chunkSize = Int(ContentDigester.chunkSize)
        while offset < bytes.count {
            let take = min(bytes.count - offset, chunkSize - chunkFill)
            let piece = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)])
            if staging == nil { staging = BufferPool.shared.take(); stagingCount = 0 }
            let copy = UnsafeMutableRawBufferPointer(rebasing: staging![stagingCount..<(stagingCount + take)])
            copy.copyMemory(from: piece)
            stagingCount += take
            // Contiguous with the previous copy: one piece.
            if let last = pieces.last, last.baseAddress.map({ $0 + last.count }) == UnsafeRawPointer(copy.baseAddress) {
                pieces[pieces.count - 1] = UnsafeRawBufferPointer(start: last.baseAddress, count: last.count + take)
            } else {
                pieces.append(UnsafeRawBufferPointer(copy))
            }
            chunkFill += take
            offset += take
            if chunkFill == chunkSize { dispatchChunk() }
        }
    }

    private func dispatchChunk() {
        guard chunkFill > 0 else { return }
        let chunk = SendableChunk(pieces: pieces, count: chunkFill, staging: staging)
        pieces = []
        chunkFill = 0
        staging = nil
        stagingCount = 0
        // At most `maxInFlight` chunks are buffered: past that, the oldest is waited for (it holds its pool
        // buffer until it is hashed).
        if chunkDigests.count - doneBefore >= maxInFlight {
            chunkDigests[doneBefore].wait()
            doneBefore += 1
        }
        let algorithms = self.algorithms
        chunkDigests.append(BackgroundValue {
            defer { if let staging = chunk.staging { BufferPool.shared.recycle(staging) } }
            return ContentDigester.chunkDigests(chunk.pieces, count: chunk.count, algorithms: algorithms)
        })
    }

    /// Hashes the last (partial) chunk, waits for every chunk, and returns the section's chunk digests.
    public func finish() -> SectionChunkDigests {
        if !finished {
            finished = true
            if chunkFill > 0 { dispatchChunk() } else if let buffer = staging { BufferPool.shared.recycle(buffer); staging = nil }
        }
        // The work only hashes: it cannot throw.
        let results = chunkDigests.map { try! $0.get() }
        var perAlgorithm: [ContentDigestAlgorithm: [UInt8]] = [:]
        let first = prefix?.chunkCount ?? 0
        for (slot, algorithm) in algorithms.enumerated() {
            var all: [UInt8] = prefix?.digests[algorithm] ?? []
            all.reserveCapacity((first + results.count) * algorithm.chunkDigestOutputSize)
            for digests in results { all += digests[slot] }
            perAlgorithm[algorithm] = all
        }
        return SectionChunkDigests(chunkCount: first + results.count, byteCount: count, digests: perAlgorithm)
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
        chunkDigests([chunk], count: chunk.count, algorithms: algorithms)
    }

    /// The same, for a chunk given as consecutive pieces totalling `count` bytes.
    static func chunkDigests(_ pieces: [UnsafeRawBufferPointer], count: Int, algorithms: [ContentDigestAlgorithm]) -> [[UInt8]] {
        let prefix = chunkPrefix(length: count)
        return algorithms.map { algorithm in
            let hasher = Digest(algorithm.digestAlgorithm)
            hasher.update(prefix)
            for piece in pieces { hasher.update(piece) }
            return hasher.finish()
        }
    }

    /// Completes the content digests when the entries section was digested while written
    /// (`StreamingChunkDigester`): the central directory and the EOCD (its CD offset patched to
    /// `entries.byteCount`) are chunked here, then H(0x5a || uint32 chunk count || all chunk digests).
    public static func digests(entries: SectionChunkDigests, centralDirectory: [UInt8], endOfCentralDirectory: [UInt8],
                               algorithms: Set<ContentDigestAlgorithm>) throws -> [ContentDigestAlgorithm: [UInt8]] {
        let ordered = ContentDigestAlgorithm.allCases.filter { algorithms.contains($0) }
        for algorithm in ordered where entries.digests[algorithm] == nil || algorithm == .verityChunkedSHA256 {
            throw ContentDigestError.unsupportedAlgorithm(algorithm)
        }
        let eocd = try endOfCentralDirectoryForDigesting(endOfCentralDirectory, centralDirectoryOffset: entries.byteCount)
        var tails: [[UInt8]] = Array(repeating: [], count: ordered.count)
        var tailChunks = 0
        for section in [centralDirectory, eocd] {
            var offset = 0
            while offset < section.count {
                let end = min(section.count, offset + Int(chunkSize))
                let digests = chunkDigests(Array(section[offset..<end]), algorithms: ordered)
                for slot in ordered.indices { tails[slot] += digests[slot] }
                tailChunks += 1
                offset = end
            }
        }
        let total = entries.chunkCount + tailChunks
        guard total <= Int(Int32.max) else { throw ContentDigestError.tooManyChunks(total) }
        var result: [ContentDigestAlgorithm: [UInt8]] = [:]
        for (slot, algorithm) in ordered.enumerated() {
            let hasher = Digest(algorithm.digestAlgorithm)
            hasher.update([0x5a] + UInt32(total).littleEndianBytes)
            hasher.update(entries.digests[algorithm]!)
            hasher.update(tails[slot])
            result[algorithm] = hasher.finish()
        }
        return result
    }
}

/// A chunk handed to a digest worker: its pieces, and the pool buffer holding the copied ones (owned by
/// exactly one thread at a time).
private struct SendableChunk: @unchecked Sendable {
    let pieces: [UnsafeRawBufferPointer]
    let count: Int
    let staging: UnsafeMutableRawBufferPointer?
}
