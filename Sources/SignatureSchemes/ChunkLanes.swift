import APKCore
import DigestLanes

/// v2/v3 chunk digests (SHA-256 only) of up to sixteen chunks at once, one chunk per lane of `SHA256Lanes`.
///
/// The chunks are taken in slices: slice s is bytes [s·S, (s+1)·S) of every chunk, read side by side into
/// one pool buffer (S = buffer size / 16 = 64 KiB), hashed, and handed to `consume` before the next slice
/// overwrites them. So sixteen 1 MiB chunks are hashed together in 1 MiB of memory that stays in the
/// core's cache, and each byte is read once.
public enum ChunkLanes {
    /// Whether chunk digests for `algorithms` go through the lanes (SHA-256 alone, on a CPU with AVX-512 or
    /// SHA-NI).
    public static func applies(to algorithms: [ContentDigestAlgorithm]) -> Bool {
        algorithms == [.chunkedSHA256] && SHA256Lanes.isAccelerated
    }

    /// Whether chunks already in memory are hashed two at a time (`digests(ofChunks:)`): SHA-256 alone, on
    /// a CPU with SHA-NI, where two interleaved streams run at about twice one stream's speed. (Sixteen
    /// AVX-512 lanes would need sixteen chunks in hand; two in two of them run slower than one SHA-NI stream.)
    public static func pairsChunks(_ algorithms: [ContentDigestAlgorithm]) -> Bool {
        algorithms == [.chunkedSHA256] && SHA256Lanes.Kernel.shaNIPairs.isAvailable && SHA256Lanes.kernel != .openSSL
    }

    /// The SHA-256 chunk digests H(0xa5 || uint32-LE length || chunk) of `chunks` (at most 16, each at most
    /// 1 MiB) in memory, in order, hashed side by side.
    public static func digests(ofChunks chunks: [UnsafeRawBufferPointer]) -> [[UInt8]] {
        precondition(chunks.count <= SHA256Lanes.width && chunks.allSatisfy { $0.count <= Int(ContentDigester.chunkSize) })
        let lanes = SHA256Lanes()
        let prefixes = chunks.flatMap { ContentDigester.chunkPrefix(length: $0.count) }
        var digests = [[UInt8]](repeating: [], count: chunks.count)
        prefixes.withUnsafeBytes { prefixBytes in
            for (lane, chunk) in chunks.enumerated() {
                lanes.update(lane, UnsafeRawBufferPointer(rebasing: prefixBytes[(5 * lane)..<(5 * lane + 5)]))
                lanes.update(lane, chunk)
                lanes.finish(lane, tag: lane)
            }
            lanes.run { lane, digest in digests[lane] = digest }
        }
        return digests
    }

    /// How to split `count` chunks into groups of at most sixteen: as few groups as possible, sizes differing
    /// by at most one. Not one group per core: a lane left empty costs as much as a full one, and the cores
    /// have other work beside the groups (the verifier parses the archive, the signer hashes large entries
    /// and deflated ones), so 47 chunks go as 16+16+15, not 4 x 12.
    public static func groups(chunkCount count: Int) -> [Range<Int>] {
        guard count > 0 else { return [] }
        let groupCount = (count + SHA256Lanes.width - 1) / SHA256Lanes.width
        var ranges: [Range<Int>] = []
        var start = 0
        for index in 0..<groupCount {
            let size = count / groupCount + (index < count % groupCount ? 1 : 0)
            ranges.append(start..<(start + size))
            start += size
        }
        return ranges
    }

    /// The digests H(0xa5 || uint32-LE length || chunk) of chunks of the given `lengths` (at most 16, each at
    /// most 1 MiB), in order.
    ///
    /// - Parameters:
    ///   - fill: reads bytes `range` of chunk `lane` into the buffer given.
    ///   - consume: sees each piece after it was read, in order within a chunk (to write or hash it too).
    ///   - sliceDone: called after `consume` has seen a slice's pieces, before the buffer is reused.
    public static func digests(lengths: [Int],
                               fill: (_ lane: Int, _ range: Range<Int64>, _ into: UnsafeMutableRawBufferPointer) throws -> Void,
                               consume: ((_ lane: Int, _ range: Range<Int64>, _ bytes: UnsafeRawBufferPointer) throws -> Void)? = nil,
                               sliceDone: (() throws -> Void)? = nil) throws -> [[UInt8]] {
        precondition(lengths.count <= SHA256Lanes.width && lengths.allSatisfy { $0 <= Int(ContentDigester.chunkSize) })
        let lanes = SHA256Lanes()
        let buffer = BufferPool.shared.take()
        defer { BufferPool.shared.recycle(buffer) }
        let slice = BufferPool.bufferSize / SHA256Lanes.width
        let prefixes = lengths.flatMap { ContentDigester.chunkPrefix(length: $0) }
        var digests = [[UInt8]](repeating: [], count: lengths.count)
        try prefixes.withUnsafeBytes { prefixBytes in
            for (lane, _) in lengths.enumerated() { lanes.update(lane, UnsafeRawBufferPointer(rebasing: prefixBytes[(5 * lane)..<(5 * lane + 5)])) }
            let longest = lengths.max() ?? 0
            var start = 0
            repeat {
                var pieces: [(lane: Int, range: Range<Int64>, bytes: UnsafeRawBufferPointer)] = []
                for (lane, length) in lengths.enumerated() where start < length {
                    let range = Int64(start)..<Int64(min(length, start + slice))
                    let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[(lane * slice)..<(lane * slice + range.count)])
                    try fill(lane, range, destination)
                    lanes.update(lane, UnsafeRawBufferPointer(destination))
                    pieces.append((lane, range, UnsafeRawBufferPointer(destination)))
                }
                if start + slice >= longest {
                    for lane in lengths.indices { lanes.finish(lane, tag: lane) }
                }
                lanes.run { lane, digest in digests[lane] = digest }
                if let consume { for piece in pieces { try consume(piece.lane, piece.range, piece.bytes) } }
                try sliceDone?()
                start += slice
            } while start < longest
        }
        return digests
    }

    /// Reads input `ranges` on to the messages open on `lanes`: lane j is given `jobs[j]` in order, each
    /// range's bytes followed by the end of its message with its tag; finished digests go to `deliver`.
    /// Lanes are filled side by side, up to 64 KiB a lane per pass, so short jobs share one run.
    public static func digests(continuing jobs: [[(range: Range<Int64>, tag: Int)]], from source: any DataSource,
                               lanes: SHA256Lanes, deliver: (Int, [UInt8]) -> Void) throws {
        try digests(continuing: jobs, lanes: lanes, read: { _, range, buffer in try source.read(range, into: buffer) }, deliver: deliver)
    }

    /// The same, each job's bytes read by `read` (its tag, a range of it, where to put them): jobs from
    /// several sources (the Repack stage's entries).
    public static func digests(continuing jobs: [[(range: Range<Int64>, tag: Int)]], lanes: SHA256Lanes,
                               read: (_ tag: Int, _ range: Range<Int64>, _ into: UnsafeMutableRawBufferPointer) throws -> Void,
                               deliver: (Int, [UInt8]) throws -> Void) throws {
        precondition(jobs.count <= SHA256Lanes.width)
        guard jobs.contains(where: { !$0.isEmpty }) else { return }
        let buffer = BufferPool.shared.take()
        defer { BufferPool.shared.recycle(buffer) }
        let slice = BufferPool.bufferSize / SHA256Lanes.width
        var cursors = [(job: Int, done: Int64)](repeating: (0, 0), count: jobs.count)
        while true {
            var queued = false
            for lane in jobs.indices {
                var at = lane * slice
                let limit = at + slice
                while at < limit, cursors[lane].job < jobs[lane].count {
                    let job = jobs[lane][cursors[lane].job]
                    let take = Int(min(Int64(limit - at), job.range.count64 - cursors[lane].done))
                    if take > 0 {
                        let start = job.range.lowerBound + cursors[lane].done
                        let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + take)])
                        try read(job.tag, start..<(start + Int64(take)), destination)
                        lanes.update(lane, UnsafeRawBufferPointer(destination))
                        at += take
                        cursors[lane].done += Int64(take)
                    }
                    if cursors[lane].done == job.range.count64 {
                        lanes.finish(lane, tag: job.tag)
                        cursors[lane] = (cursors[lane].job + 1, 0)
                    }
                    queued = true
                }
            }
            guard queued else { return }
            try lanes.run(deliver)
        }
    }
}
