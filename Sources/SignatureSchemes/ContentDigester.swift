import APKCore
import OpenSSLWrapper

/// Computes the APK content digests that APK Signature Scheme v2 and v3 sign and verify
/// (apksig `ApkSigningBlockUtils.computeContentDigests` / `computeOneMbChunkContentDigests`).
///
/// The digested contents are three sections, in order: the ZIP entries (everything before the APK Signing
/// Block, including the zero padding apksig inserts so the block starts on a 4096-byte boundary), the
/// central directory, and the end of central directory record *with its central directory offset field
/// patched to point at the start of the signing block* (`endOfCentralDirectoryForDigesting`). For each
/// algorithm:
///
///     1. each section is split into 1 MiB chunks (the last one of a section may be shorter; an empty
///        section has none; a chunk never spans two sections);
///     2. chunk digest = H(0xa5 || uint32-LE chunk length || chunk bytes);
///     3. content digest = H(0x5a || uint32-LE chunk count || chunk digests in order).
///
/// All requested algorithms are computed in one pass over the data, and the chunks are spread over the
/// available cores with `Parallel.forEach`. Each chunk is read with `DataSource.read` (`pread`
/// for a file) into a worker's buffer, where every algorithm hashes it while it is in the core's cache.
public enum ContentDigester {
    /// apksig's `CONTENT_DIGESTED_CHUNK_MAX_SIZE_BYTES`.
    public static let chunkSize: Int64 = 1 << 20

    /// Digests `sections` (entries, central directory, patched EOCD) with every algorithm in `algorithms`.
    ///
    /// - Parameter concurrency: how many chunks may be digested at once (1 forces a sequential pass).
    /// - Throws: `ContentDigestError` for the verity algorithm (not computed here) or an input with more
    ///   chunks than apksig allows; any read error from the sources.
    public static func digests(of sections: [any DataSource], algorithms: Set<ContentDigestAlgorithm>,
                               concurrency: Int = defaultConcurrency) throws -> [ContentDigestAlgorithm: [UInt8]] {
        if algorithms.contains(.verityChunkedSHA256) {
            throw ContentDigestError.unsupportedAlgorithm(.verityChunkedSHA256)
        }
        let ordered = ContentDigestAlgorithm.allCases.filter { algorithms.contains($0) }
        guard !ordered.isEmpty else { return [:] }

        // Chunk table: (section index, offset, length) for every chunk, in digest order.
        var chunks: [(section: Int, range: Range<Int64>)] = []
        for (index, section) in sections.enumerated() {
            var offset: Int64 = 0
            while offset < section.count {
                let end = min(section.count, offset + chunkSize)
                chunks.append((index, offset..<end))
                offset = end
            }
        }
        guard chunks.count <= Int(Int32.max) else { throw ContentDigestError.tooManyChunks(chunks.count) }

        // One buffer per algorithm: 0x5a, uint32 chunk count, then each chunk's digest at its own slot, so
        // workers write without coordination.
        let outputs = ordered.map { algorithm -> Parallel.Slots<UInt8> in
            let buffer = Parallel.Slots<UInt8>(count: 5 + chunks.count * algorithm.chunkDigestOutputSize, repeating: 0)
            buffer[0] = 0x5a
            withUnsafeBytes(of: UInt32(chunks.count).littleEndian) { count in
                for i in 0..<4 { buffer[1 + i] = count[i] }
            }
            return buffer
        }
        let chunkTable = chunks
        if ChunkLanes.applies(to: ordered) {
            // Sixteen chunks at a time on each core (see ChunkLanes).
            let groups = ChunkLanes.groups(chunkCount: chunks.count)
            try Parallel.forEach(groups.count, concurrency: concurrency) { index in
                let members = Array(chunkTable[groups[index]])
                let digests = try ChunkLanes.digests(lengths: members.map { Int($0.range.count64) }) { lane, range, into in
                    let chunk = members[lane]
                    try sections[chunk.section].read((chunk.range.lowerBound + range.lowerBound)..<(chunk.range.lowerBound + range.upperBound), into: into)
                }
                for (offset, digest) in digests.enumerated() {
                    let base = 5 + (groups[index].lowerBound + offset) * 32
                    digest.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: outputs[0].unsafeMutableBytes[base..<(base + 32)]).copyMemory(from: $0) }
                }
            }
            return [.chunkedSHA256: outputs[0].withUnsafeBytes { Digest.hash($0, with: .sha256) }]
        }
        // Each chunk is read (pread from a mapped file) into a worker's buffer and hashed there: no page of the
        // input is mapped, so workers do not fault pages in, give them back and shoot down each other's TLB
        // entries, and the resident set stays flat whatever the APK size.
        try Parallel.forEach(chunkTable.count, concurrency: concurrency) { chunkIndex in
            let chunk = chunkTable[chunkIndex]
            let hashers = ordered.map { Digest($0.digestAlgorithm) }
            try BufferPool.shared.withBuffer(minimumSize: Int(chunk.range.count64)) { buffer in
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<Int(chunk.range.count64)])
                try sections[chunk.section].read(chunk.range, into: buffer)
                let prefix = chunkPrefix(length: Int(chunk.range.count64))
                for hasher in hashers {
                    hasher.update(prefix)
                    hasher.update(bytes)
                }
            }
            for (slot, hasher) in hashers.enumerated() {
                let digest = hasher.finish()
                let size = ordered[slot].chunkDigestOutputSize
                let base = 5 + chunkIndex * size
                digest.withUnsafeBytes { source in
                    UnsafeMutableRawBufferPointer(rebasing: outputs[slot].unsafeMutableBytes[base..<(base + size)]).copyMemory(from: source)
                }
            }
        }
        var result: [ContentDigestAlgorithm: [UInt8]] = [:]
        for (slot, algorithm) in ordered.enumerated() {
            result[algorithm] = outputs[slot].withUnsafeBytes { Digest.hash($0, with: algorithm.digestAlgorithm) }
        }
        return result
    }

    /// Digests an APK laid out as [entries][central directory][EOCD]: `entries` must end exactly where
    /// the APK Signing Block starts (or would start), and `endOfCentralDirectory` is the record as stored;
    /// its central directory offset is replaced by `entries.count` before digesting.
    public static func digests(entries: any DataSource, centralDirectory: any DataSource, endOfCentralDirectory: [UInt8],
                               algorithms: Set<ContentDigestAlgorithm>,
                               concurrency: Int = defaultConcurrency) throws -> [ContentDigestAlgorithm: [UInt8]] {
        let eocd = try endOfCentralDirectoryForDigesting(endOfCentralDirectory, centralDirectoryOffset: entries.count)
        return try digests(of: [entries, centralDirectory, ByteArrayDataSource(eocd)], algorithms: algorithms, concurrency: concurrency)
    }

    /// A copy of the EOCD record with its central directory offset field set to `centralDirectoryOffset`
    /// (apksig `copyWithModifiedCDOffset`): for digesting, the EOCD must point at the signing block.
    public static func endOfCentralDirectoryForDigesting(_ record: [UInt8], centralDirectoryOffset: Int64) throws -> [UInt8] {
        let field = EndOfCentralDirectoryLayout.centralDirectoryOffsetOffset
        guard record.count >= EndOfCentralDirectoryLayout.fixedSize else {
            throw ContentDigestError.malformedEndOfCentralDirectory(record.count)
        }
        guard let offset = UInt32(exactly: centralDirectoryOffset) else {
            throw ContentDigestError.offsetOutOfRange(centralDirectoryOffset)
        }
        var copy = record
        let bytes = offset.littleEndianBytes
        for i in 0..<4 { copy[field + i] = bytes[i] }
        return copy
    }

    /// The number of cores to digest on.
    public static var defaultConcurrency: Int { ProcessorCount.active }
}

/// Why content digests could not be computed.
public enum ContentDigestError: Error, CustomStringConvertible, Equatable {
    case unsupportedAlgorithm(ContentDigestAlgorithm)
    case tooManyChunks(Int)
    case malformedEndOfCentralDirectory(Int)
    case offsetOutOfRange(Int64)

    public var description: String {
        switch self {
        case .unsupportedAlgorithm(let algorithm):
            return "content digest \(algorithm) is not supported here"
        case .tooManyChunks(let count):
            return "input too long: \(count) chunks of 1 MiB (APK Signature Scheme v2 allows at most \(Int32.max))"
        case .malformedEndOfCentralDirectory(let size):
            return "end of central directory record is \(size) bytes, shorter than the \(EndOfCentralDirectoryLayout.fixedSize) its format needs"
        case .offsetOutOfRange(let offset):
            return "central directory offset \(offset) does not fit a ZIP (non-ZIP64) archive"
        }
    }
}
