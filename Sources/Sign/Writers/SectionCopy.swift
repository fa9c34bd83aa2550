import APKCore
import OpenSSLWrapper
import SignatureSchemes
import ZlibWrapper
import DigestLanes

/// Where the bytes of the output's entries section come from, in output order: runs of input bytes, and
/// the few literal bytes that differ from the input (local headers given a new alignment field). The input
/// is one source (an input APK), or several (the Repack stage's entries: the input APK's mapping, and the
/// new entries' bytes), each run naming its own.
struct SectionLayout {
    struct Segment {
        var outputOffset: Int64
        var count: Int64
        /// Where the run starts in its source, or for a literal in `literals`.
        var inputOffset: Int64
        var isLiteral: Bool
        /// The run's source: an index into the sources `read` is given.
        var source = 0
    }
    private(set) var segments: [Segment] = []
    private(set) var count: Int64 = 0
    /// Every literal's bytes, back to back (one array, not one per re-aligned header: there are thousands).
    private var literals: [UInt8] = []

    /// Appends input bytes (merged with the previous run when they follow it in the input, so an APK copied
    /// unchanged is one segment).
    mutating func append(input range: Range<Int64>, source: Int = 0) {
        guard !range.isEmpty else { return }
        if let last = segments.last, !last.isLiteral, last.source == source, last.inputOffset + last.count == range.lowerBound {
            segments[segments.count - 1].count += range.count64
        } else {
            segments.append(Segment(outputOffset: count, count: range.count64, inputOffset: range.lowerBound, isLiteral: false, source: source))
        }
        count += range.count64
    }

    mutating func reserveCapacity(_ segmentCount: Int) { segments.reserveCapacity(segmentCount) }

    mutating func append(literal bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        segments.append(Segment(outputOffset: count, count: Int64(bytes.count), inputOffset: Int64(literals.count), isLiteral: true))
        literals.append(contentsOf: bytes)
        count += Int64(bytes.count)
    }

    /// A two-byte little-endian literal (a header's extra field length).
    mutating func append(literal value: UInt16) {
        segments.append(Segment(outputOffset: count, count: 2, inputOffset: Int64(literals.count), isLiteral: true))
        literals.append(UInt8(truncatingIfNeeded: value))
        literals.append(UInt8(truncatingIfNeeded: value >> 8))
        count += 2
    }

    /// Copies the output bytes `range` into the start of `buffer`, reading input runs from `source`.
    ///
    /// By default (apksig since build-tools 35) every stored entry gets a new local header, so a 1 MiB chunk
    /// of a resource-heavy APK holds hundreds of short input runs between literal headers. Runs of at least
    /// `directReadMinimum` bytes are read straight into place; shorter ones are served from `window`, one
    /// read of the input that spans many of them (the few header bytes in between are read and skipped), so
    /// a chunk costs a handful of reads, not one per entry.
    func read(_ range: Range<Int64>, from source: any DataSource, into buffer: UnsafeMutableRawBufferPointer,
              window: UnsafeMutableRawBufferPointer) throws {
        try read(range, from: [source], into: buffer, window: window)
    }

    /// The same, each run read from `sources[segment.source]` (a window spans runs of one source).
    func read(_ range: Range<Int64>, from sources: [any DataSource], into buffer: UnsafeMutableRawBufferPointer,
              window: UnsafeMutableRawBufferPointer) throws {
        guard !range.isEmpty else { return }
        let first = segmentIndex(containing: range.lowerBound)
        var last = first
        while last + 1 < segments.count && segments[last + 1].outputOffset < range.upperBound { last += 1 }
        // The end of what the chunk needs of each source.
        var inputEnd: Int64 = 0
        var inputEnds: [Int: Int64] = [:]
        for index in first...last where !segments[index].isLiteral {
            let end = segments[index].inputOffset + min(segments[index].count, range.upperBound - segments[index].outputOffset)
            if segments[index].source == 0 { inputEnd = end } else { inputEnds[segments[index].source] = end }
        }
        var windowRange: Range<Int64> = 0..<0
        var windowSource = 0
        var position = range.lowerBound
        for index in first...last {
            let segment = segments[index]
            let start = position - segment.outputOffset
            let take = min(segment.count - start, range.upperBound - position)
            let at = Int(position - range.lowerBound)
            let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + Int(take))])
            if segment.isLiteral {
                let from = Int(segment.inputOffset + start)
                literals.withUnsafeBytes { destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[from..<(from + Int(take))])) }
            } else {
                let source = sources[segment.source]
                let input = (segment.inputOffset + start)..<(segment.inputOffset + start + take)
                if take >= Self.directReadMinimum || take > Int64(window.count) {
                    try source.read(input, into: destination)
                } else {
                    if !(windowSource == segment.source && windowRange.lowerBound <= input.lowerBound && input.upperBound <= windowRange.upperBound) {
                        let end = segment.source == 0 ? inputEnd : inputEnds[segment.source] ?? 0
                        windowRange = input.lowerBound..<max(input.upperBound, min(end, input.lowerBound + Int64(window.count)))
                        windowSource = segment.source
                        try source.read(windowRange, into: window)
                    }
                    let offset = Int(input.lowerBound - windowRange.lowerBound)
                    destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: window[offset..<(offset + Int(take))]))
                }
            }
            position += take
        }
    }

    static let directReadMinimum: Int64 = 64 << 10

    /// The last segment starting at or before `offset`.
    private func segmentIndex(containing offset: Int64) -> Int {
        var low = 0, high = segments.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if segments[middle].outputOffset <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }
}

/// Copies and digests the entries section of an APK signed from an input archive, on all cores at once.
///
/// Each worker takes a run of whole 1 MiB chunks of the output, and for each chunk reads the input bytes
/// into its own buffer with `pread`, hashes the chunk for v2/v3, hashes for v1 the entries whose records
/// start in its run (stored data where it lies in the buffer; deflated entries inflated from it), and
/// writes the chunk with `pwrite`. Every input byte leaves the page cache once, into a buffer still in the
/// core's cache when both digests and the write read it; nothing is mapped, so there are no page faults,
/// no TLB shootdowns between the cores and no resident input pages, whatever the APK size.
///
/// (An entry running past the end of its run is read on to its end by the run that holds its record.) The
/// section's last partial chunk is only read (and its entries hashed): the caller writes and digests it with
/// what follows it (the JAR signature files and the padding).
struct SectionCopy {
    let layout: SectionLayout
    /// The input: the layout's runs of source 0, and the entries' data.
    let source: any DataSource
    /// The entries, in output order, with where each one's record and data start in the output.
    let items: [KeptEntry]
    let recordStarts: [Int64]
    let dataStarts: [Int64]
    /// v1's digest, or nil without v1.
    let entryDigest: DigestAlgorithm?
    let chunkAlgorithms: [ContentDigestAlgorithm]
    /// Whether the fs-verity leaf digests of the written chunks are computed too, for a v4 signature: the
    /// bytes are in hand here, and the tree then reads only what follows the chunks.
    var hashesVerityLeaves = false
    /// A deflated item that is inflated elsewhere (resources.arsc, by the table's check: `ResourceTableCheck`),
    /// where its v1 digest is taken and its data checked (EntryIntegrity): copied here, never inflated, its digest
    /// slot left empty for the caller.
    var inflatedElsewhere: Int? = nil
    /// The layout's other sources (its runs of source k ≥ 1 are read from `otherSources[k - 1]`): the Repack
    /// stage's new entries, whose v1 digests are not taken here (`items` empty).
    var otherSources: [any DataSource] = []
    private var layoutSources: [any DataSource] { [source] + otherSources }

    struct Result {
        /// Digests of the section's whole chunks.
        var chunks: SectionChunkDigests
        /// The bytes after the last whole chunk, not yet written, in a pool buffer (`TailBytes.handOver`).
        var tail: TailBytes
        /// v1 digest of each item's uncompressed data (empty without v1).
        var entryDigests: [[UInt8]]
        /// The fs-verity leaf digests of the whole chunks, when `hashesVerityLeaves`.
        var verityLeaves: LeafDigests?
    }

    /// Copies and digests the section into `file`.
    func run(into file: OutputFile, concurrency: Int, key: BackgroundValue<SignerKey>?) throws -> Result {
        let chunkSize = ContentDigester.chunkSize
        let wholeChunks = Int(layout.count / chunkSize)
        let wholeEnd = Int64(wholeChunks) * chunkSize
        // Runs of two chunks: small enough that the cores finish together (one that drew entries to inflate
        // does not hold up the end), large enough that an entry rarely straddles two runs. (Digesting the
        // last chunks for v1 first, so that the JAR signature could be made while they were copied, is not
        // done: the re-read and the second pass cost more than the overlap gains.)
        var planned = stride(from: Int64(0), to: wholeEnd, by: Int(2 * chunkSize)).map {
            Run(range: $0..<min(wholeEnd, $0 + 2 * chunkSize), writesChunks: true)
        }
        if wholeEnd < layout.count { planned.append(Run(range: wholeEnd..<layout.count, writesChunks: false)) }
        let runs = planned

        let state = SharedState(chunkCount: wholeChunks, itemCount: entryDigest == nil ? 0 : items.count,
                                leafChunkCount: hashesVerityLeaves ? wholeChunks : 0,
                                checksums: StoredEntryChecksums(items: items, dataStarts: dataStarts, sectionSize: layout.count, chunkSize: chunkSize))
        nonisolated(unsafe) let output = file
        var work: @Sendable (Int) throws -> Void = { index in
            try copy(runs[index], into: output, state: state, key: key)
        }
        var workCount = runs.count
        if ChunkLanes.applies(to: chunkAlgorithms) {
            // Sixteen chunks at a time on each core (see ChunkLanes); the partial last chunk as before.
            // A large stored entry's v1 digest is one long serial hash (framework-res.apk's resources.arsc,
            // tens of megabytes). Each is hashed on its own from the start, and the other cores take the
            // chunk groups meanwhile; left to the group holding its record, it would end the copy alone.
            // Deflated entries' v1 digests cost more per byte copied (the web app's JavaScript inflates to 17
            // times its size): they are inflated and hashed in batches of their own, taken by whichever core is
            // free at the end.
            // (Entries whose records start in the partial last chunk are that run's, as without lanes.)
            // With SHA-NI, a large entry's stream is paired with the v2/v3 digests of the whole chunks inside its
            // data, which its work item copies too: two streams over the same bytes, in step, hash at twice one
            // stream's speed, and the other cores take fewer chunks. (AVX-512 without SHA-NI would run the pair
            // in two of sixteen lanes: there the entry is one OpenSSL stream, as before.) Copying, writing and
            // the v4 leaves cost more than the pair: a core done with its chunk groups takes the back half of
            // the chunks the entry's item has not reached (`LargeEntryChunks`), as often as some are left, one
            // work item per core for each large entry; the entry's item then only reads those for its stream.
            // The deflated entries' batches come after those takes: small and many, they are what the cores
            // share at the end, one of them while the entry's item hashes the chunks others took. (Were the
            // takes last, a core would reach them too late to take more than a few chunks, and the entry's
            // stream would end the copy alone.)
            let lanesHashV1 = entryDigest == .sha256
            let inGroups = items.indices.filter { lanesHashV1 && recordStarts[$0] < wholeEnd }
            let large = inGroups.filter { Self.isLarge(items[$0].entry.method, items[$0].entry.dataRange) }
            let pairsLarge = SHA256Lanes.Kernel.shaNIPairs.isAvailable
            let owned = large.map { item -> Range<Int> in
                let dataStart = dataStarts[item], dataEnd = dataStart + items[item].entry.dataRange.count64
                let first = Int((dataStart + chunkSize - 1) / chunkSize), end = min(Int(dataEnd / chunkSize), wholeChunks)
                return pairsLarge && first < end ? first..<end : 0..<0
            }
            let deflated = Self.batches(inGroups.filter { items[$0].entry.method == .deflated && $0 != inflatedElsewhere }, items: items)
            let groups = Self.chunkRanges(wholeChunks, without: owned).flatMap { range in
                ChunkLanes.groups(chunkCount: range.count).map { ($0.lowerBound + range.lowerBound)..<($0.upperBound + range.lowerBound) }
            }
            let partial = runs.last.flatMap { $0.writesChunks ? nil : $0 }
            let shared = owned.map { LargeEntryChunks($0) }
            let sharing = owned.contains { !$0.isEmpty } ? max(1, concurrency > 0 ? concurrency : ProcessorCount.active) : 0
            // In order: the large entries, the chunk groups, the takes, the deflated batches, the partial chunk.
            let takes = shared.count * sharing
            workCount = large.count + groups.count + takes + deflated.count + (partial == nil ? 0 : 1)
            let source = self.source
            work = { index in
                if index < large.count && !pairsLarge {
                    let hasher = Digest(.sha256)
                    try source.stream(items[large[index]].entry.dataRange, chunkSize: ContentDigester.chunkSize) { hasher.update($0) }
                    state.entryDigests[large[index]] = hasher.finish()
                    return
                } else if index < large.count {
                    return try copyLarge(large[index], chunks: shared[index], into: output, state: state, key: key)
                }
                var rest = index - large.count
                if rest < groups.count { return try copyLanes(chunks: groups[rest], into: output, state: state, key: key) }
                rest -= groups.count
                if rest < takes { return try copyTaken(from: shared[rest / sharing], into: output, state: state, key: key) }
                rest -= takes
                if rest < deflated.count { return try digestDeflated(deflated[rest], state: state) }
                try copy(partial!, into: output, state: state, key: key)
            }
        }
        if entryDigest == nil && EntryIntegrity.isEnabled {
            // Without v1 nothing inflates deflated entries: they are inflated for their check alone, in batches
            // taken by whichever core is free.
            let checks = Self.batches(items.indices.filter { items[$0].entry.method == .deflated && $0 != inflatedElsewhere }, items: items)
            let copying = work, copies = workCount
            work = { index in
                if index < copies { try copying(index) } else { try digestDeflated(checks[index - copies], state: state, hashes: false) }
            }
            workCount += checks.count
        }
        // One core when asked (`signBatch` signs several APKs at once, one per core).
        do {
            try Parallel.forEach(workCount, concurrency: concurrency, failure: state.failure, work)
            try state.checksums.verify()
        } catch {
            state.tail[0].handOver { _ in }
            throw error
        }
        var perAlgorithm: [ContentDigestAlgorithm: [UInt8]] = [:]
        for (slot, algorithm) in chunkAlgorithms.enumerated() {
            var all: [UInt8] = []
            all.reserveCapacity(wholeChunks * algorithm.chunkDigestOutputSize)
            for chunk in 0..<wholeChunks { all += state.chunkDigests[chunk][slot] }
            perAlgorithm[algorithm] = all
        }
        var leaves: LeafDigests?
        if hashesVerityLeaves {
            var all: [UInt8] = []
            all.reserveCapacity(wholeChunks * Self.leafBytesPerChunk)
            for chunk in 0..<wholeChunks { all += state.verityLeaves[chunk] }
            leaves = LeafDigests(blockCount: Int(wholeEnd) / VerityTreeBuilder.blockSize, digests: all)
        }
        return Result(chunks: SectionChunkDigests(chunkCount: wholeChunks, byteCount: wholeEnd, digests: perAlgorithm),
                      tail: state.tail[0], entryDigests: state.entryDigests.values, verityLeaves: leaves)
    }

    /// Part of the section for one worker: its chunks (digested for v2/v3 and written, unless it is the
    /// partial last chunk, kept for the caller) and the v1 digests of the entries whose records start in it.
    private struct Run {
        var range: Range<Int64>
        var writesChunks: Bool
    }

    private func copy(_ run: Run, into file: OutputFile, state: SharedState, key: BackgroundValue<SignerKey>?) throws {
        let buffer = BufferPool.shared.take(), window = BufferPool.shared.take()
        var handsOverBuffer = false
        defer {
            if !handsOverBuffer { BufferPool.shared.recycle(buffer) }
            BufferPool.shared.recycle(window)
        }
        let sources = layoutSources
        let entries = entryDigest.map { EntryDigester(copy: self, run: run.range, algorithm: $0, state: state) }
        var chunkStart = run.range.lowerBound
        while chunkStart < run.range.upperBound {
            // A key that failed to load (a wrong password) ends the copy now, not after the last chunk.
            try key?.throwIfFailed()
            if state.failed { return }
            CoreBalance.checkpoint()
            let chunkEnd = min(chunkStart + ContentDigester.chunkSize, run.range.upperBound)
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<Int(chunkEnd - chunkStart)])
            try layout.read(chunkStart..<chunkEnd, from: sources, into: buffer, window: window)
            try state.checksums.feed(chunk, at: chunkStart)
            try entries?.consume(chunk, at: chunkStart)
            if run.writesChunks {
                state.chunkDigests[Int(chunkStart / ContentDigester.chunkSize)] = ContentDigester.chunkDigests(chunk, algorithms: chunkAlgorithms)
                if hashesVerityLeaves { state.verityLeaves[Int(chunkStart / ContentDigester.chunkSize)] = Self.verityLeaves(of: chunk) }
                try file.write(chunk, at: chunkStart)
            } else {
                // The partial last chunk, the run's only one, stays where it was read and goes to the caller with its
                // buffer: a buffer taken for a copy of it would be one more than the cores use at once otherwise,
                // which the pool meets with fresh memory.
                state.tail[0] = TailBytes(buffer: buffer, count: chunk.count)
                handsOverBuffer = true
                break
            }
            chunkStart = chunkEnd
        }
        // What is left to read for v1 goes through the window, whose bytes are spent, if the buffer was handed over.
        try entries?.finish(buffer: handsOverBuffer ? window : buffer)
    }

    /// `copy` for whole chunks `chunks`, their v2/v3 digests taken sixteen at a time: each chunk is read,
    /// hashed, v1-digested and written in 64 KiB slices side by side (see ChunkLanes).
    private func copyLanes(chunks: Range<Int>, into file: OutputFile, state: SharedState, key: BackgroundValue<SignerKey>?) throws {
        let window = BufferPool.shared.take()
        defer { BufferPool.shared.recycle(window) }
        let sources = layoutSources
        let chunkSize = ContentDigester.chunkSize
        let starts = chunks.map { Int64($0) * chunkSize }
        // v1 SHA-256 digests of stored entries on lanes too: chunk j's entries on lane j, in order.
        let entryLanes = entryDigest == .sha256 ? SHA256Lanes() : nil
        let entries = starts.enumerated().map { lane, start in
            entryDigest.map { EntryDigester(copy: self, run: start..<(start + chunkSize), algorithm: $0, state: state,
                                            lane: entryLanes.map { ($0, lane) }) }
        }
        let deliver: (Int, [UInt8]) -> Void = { item, digest in state.entryDigests[item] = digest }
        var leaves = [[UInt8]](repeating: [UInt8](repeating: 0, count: hashesVerityLeaves ? Self.leafBytesPerChunk : 0), count: chunks.count)
        let digests = try ChunkLanes.digests(lengths: Array(repeating: Int(chunkSize), count: chunks.count)) { lane, range, into in
            // A key that failed to load (a wrong password) ends the copy now, not after the last chunk.
            try key?.throwIfFailed()
            if state.failed { throw CancellationError() }
            try layout.read((starts[lane] + range.lowerBound)..<(starts[lane] + range.upperBound), from: sources, into: into, window: window)
        } consume: { lane, range, bytes in
            try state.checksums.feed(bytes, at: starts[lane] + range.lowerBound)
            try entries[lane]?.consume(bytes, at: starts[lane] + range.lowerBound)
            if hashesVerityLeaves {
                // Slices are whole blocks (64 KiB), so each one's leaves are its own.
                leaves[lane].withUnsafeMutableBytes {
                    VerityTreeBuilder.leafDigests(of: bytes, into: $0.baseAddress! + Int(range.lowerBound) / VerityTreeBuilder.blockSize * VerityTreeBuilder.digestSize)
                }
            }
            try file.write(bytes, at: starts[lane] + range.lowerBound)
        } sliceDone: {
            entryLanes?.run(deliver)  // before the next slice overwrites the bytes queued on it
            CoreBalance.checkpoint()
        }
        for (lane, chunk) in chunks.enumerated() {
            state.chunkDigests[chunk] = [digests[lane]]
            if hashesVerityLeaves { state.verityLeaves[chunk] = leaves[lane] }
        }
        for lane in entries.indices { try entries[lane]?.finish(buffer: window) }
        if let entryLanes {
            // Entries past the chunks' ends, read on from the input on their lanes.
            try ChunkLanes.digests(continuing: entries.map { $0?.pendingInput ?? [] }, from: source, lanes: entryLanes, deliver: deliver)
        }
    }

    /// Copies and digests chunks of a large entry that its own work item has not reached, a group at a time
    /// while any are left (see `LargeEntryChunks`).
    private func copyTaken(from shared: LargeEntryChunks, into file: OutputFile, state: SharedState,
                           key: BackgroundValue<SignerKey>?) throws {
        while !state.failed, let chunks = shared.take() {
            try copyLanes(chunks: chunks, into: file, state: state, key: key)
        }
    }

    /// Chunks `0..<count` less the `owned` ranges (disjoint), as ascending ranges.
    static func chunkRanges(_ count: Int, without owned: [Range<Int>]) -> [Range<Int>] {
        var ranges: [Range<Int>] = [], start = 0
        for range in owned.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound > start { ranges.append(start..<range.lowerBound) }
            start = max(start, range.upperBound)
        }
        if start < count { ranges.append(start..<count) }
        return ranges
    }

    /// A large stored entry's v1 digest on one lane, paired with the v2/v3 digests of `shared` (the whole
    /// chunks inside its data, which this copies, in order, unless another core has taken them) on another;
    /// its bytes outside them, and in chunks taken by others, are read from the input and hashed alone. Only
    /// with SHA-NI (SHA256Lanes runs one or two active lanes with it).
    private func copyLarge(_ item: Int, chunks shared: LargeEntryChunks, into file: OutputFile, state: SharedState,
                           key: BackgroundValue<SignerKey>?) throws {
        let chunks = shared.chunks
        let buffer = BufferPool.shared.take()
        defer { BufferPool.shared.recycle(buffer) }
        let chunkSize = ContentDigester.chunkSize
        let lanes = SHA256Lanes()
        let entryLane = 0, chunkLane = 1
        let dataRange = items[item].entry.dataRange
        // From an output offset inside the entry's data to the input's (its data is one input run, so the
        // chunks are read straight from it, not through the layout).
        let toInput = dataRange.lowerBound - dataStarts[item]
        let ownedStart = chunks.isEmpty ? dataRange.upperBound : Int64(chunks.lowerBound) * chunkSize + toInput
        let ownedEnd = chunks.isEmpty ? dataRange.upperBound : Int64(chunks.upperBound) * chunkSize + toInput
        let deliverChunk: (Int, [UInt8]) -> Void = { chunk, digest in state.chunkDigests[chunk] = [digest] }
        func hashInput(_ range: Range<Int64>) throws {
            var start = range.lowerBound
            while start < range.upperBound {
                let end = min(range.upperBound, start + Int64(buffer.count))
                let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(end - start)])
                try source.read(start..<end, into: piece)
                lanes.update(entryLane, UnsafeRawBufferPointer(piece))
                lanes.run { _, _ in }
                start = end
            }
        }
        try hashInput(dataRange.lowerBound..<ownedStart)
        let prefix = ContentDigester.chunkPrefix(length: Int(chunkSize))
        for chunk in chunks {
            // A key that failed to load (a wrong password) ends the copy now, not after the last chunk.
            try key?.throwIfFailed()
            if state.failed { return }
            CoreBalance.checkpoint()
            let start = Int64(chunk) * chunkSize
            guard shared.claim(chunk) else {
                // This chunk and the rest are another core's to copy: only the entry's stream reads on.
                try hashInput((start + toInput)..<ownedEnd)
                break
            }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<Int(chunkSize)])
            try source.read((start + toInput)..<(start + toInput + chunkSize), into: buffer)
            try state.checksums.feed(bytes, at: start)
            prefix.withUnsafeBytes { prefix in
                lanes.update(entryLane, bytes)
                lanes.update(chunkLane, prefix)
                lanes.update(chunkLane, bytes)
                lanes.finish(chunkLane, tag: chunk)
                lanes.run(deliverChunk)
            }
            if hashesVerityLeaves { state.verityLeaves[chunk] = Self.verityLeaves(of: bytes) }
            try file.write(bytes, at: start)
        }
        try hashInput(ownedEnd..<dataRange.upperBound)
        lanes.finish(entryLane, tag: item)
        lanes.run { item, digest in state.entryDigests[item] = digest }
    }

    /// Deflated `entries` in batches of about 512 KiB inflated or 256 entries, in order: small enough for the
    /// cores to share the last of them.
    static func batches(_ entries: [Int], items: [KeptEntry]) -> [[Int]] {
        var batches: [[Int]] = [], current: [Int] = [], size: Int64 = 0
        for item in entries {
            current.append(item)
            size += max(0, items[item].entry.uncompressedSize)
            if size >= 512 << 10 || current.count >= 256 { batches.append(current); current = []; size = 0 }
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    /// v1 digests of deflated entries: each read and inflated into one arena (its CRC-32 checked), then hashed
    /// sixteen at a time. Without `hashes` (no v1) only inflated and checked.
    private func digestDeflated(_ batch: [Int], state: SharedState, hashes: Bool = true) throws {
        let compressed = BufferPool.shared.take(), arena = BufferPool.shared.take()
        defer { BufferPool.shared.recycle(compressed); BufferPool.shared.recycle(arena) }
        let lanes = SHA256Lanes()
        let inflater = try Inflate.Inflater()
        let deliver: (Int, [UInt8]) -> Void = { item, digest in state.entryDigests[item] = digest }
        // The batch's compressed bytes are read a window at a time (entries are in file order), not one
        // pread per entry: framework-res.apk has 1,444 deflated entries of 400 bytes (1.2 KB inflated).
        let batchEnd = batch.map { items[$0].entry.dataRange.upperBound }.max() ?? 0
        var window: Range<Int64> = 0..<0
        var used = 0, lane = 0
        for item in batch {
            if state.failed { return }
            let dataRange = items[item].entry.dataRange, declared = items[item].entry.uncompressedSize
            guard dataRange.count64 <= Int64(compressed.count), declared <= Int64(arena.count) else {
                // Larger than the buffers: streamed.
                let hasher = hashes ? Digest(.sha256) : nil
                try SectionCopy.inflate(items[item].entry, from: source, buffer: compressed) { hasher?.update($0) }
                if let hasher { state.entryDigests[item] = hasher.finish() }
                window = 0..<0  // the buffer was used
                continue
            }
            let size = Int(max(0, declared))
            if used + size > arena.count { lanes.run(deliver); used = 0 }
            if !(window.lowerBound <= dataRange.lowerBound && dataRange.upperBound <= window.upperBound) {
                window = dataRange.lowerBound..<max(dataRange.upperBound, min(batchEnd, dataRange.lowerBound + Int64(compressed.count)))
                try source.read(window, into: compressed)
            }
            let at = Int(dataRange.lowerBound - window.lowerBound)
            let input = UnsafeRawBufferPointer(rebasing: compressed[at..<(at + Int(dataRange.count64))])
            let output = UnsafeMutableRawBufferPointer(rebasing: arena[used..<(used + size)])
            let streamEnd = try EntryIntegrity.inflating(items[item].entry) { try inflater.inflate(input, into: output) }
            if EntryIntegrity.isEnabled {
                try EntryIntegrity.checkStreamEnd(streamEnd, of: items[item].entry)
                try EntryIntegrity.check(CRC32.checksum(UnsafeRawBufferPointer(output)), of: items[item].entry)
            }
            if !hashes { continue }
            lanes.update(lane, UnsafeRawBufferPointer(output))
            lanes.finish(lane, tag: item)
            lane = (lane + 1) % SHA256Lanes.width
            used += size
        }
        lanes.run(deliver)
    }

    /// The fs-verity leaf digests of one whole chunk (256 blocks).
    static func verityLeaves(of chunk: UnsafeRawBufferPointer) -> [UInt8] {
        var leaves = [UInt8](repeating: 0, count: leafBytesPerChunk)
        leaves.withUnsafeMutableBytes { VerityTreeBuilder.leafDigests(of: chunk, into: $0.baseAddress!) }
        return leaves
    }

    static let leafBytesPerChunk = Int(ContentDigester.chunkSize) / VerityTreeBuilder.blockSize * VerityTreeBuilder.digestSize

    /// Stored entries hashed for v1 on their own, not on the lanes of their chunk (see `run`).
    static func isLarge(_ method: CompressionMethod, _ dataRange: Range<Int64>) -> Bool {
        method == .stored && dataRange.count64 >= 4 << 20
    }

    /// v1 digests of the entries whose records start in one run, fed the run's chunks in order.
    /// A class: workers mutate it once per piece, and a struct holding `SectionCopy` would be copied (its
    /// arrays retained and released) each time.
    private final class EntryDigester {
        let copy: SectionCopy
        let hasher: Digest
        let state: SharedState
        var next: Int
        let end: Int
        /// The stored entry being hashed, and how far (output offset).
        var open: (item: Int, hashedTo: Int64)?
        /// Deflated entries whose data is not inside one chunk: inflated at the end.
        var spanning: [Int] = []
        /// Where stored entries are hashed when not by `hasher` (deflated ones always are: inflating yields
        /// transient bytes), and in lane form what `finish` left to read on from the input.
        let lane: (lanes: SHA256Lanes, index: Int)?
        private(set) var pendingInput: [(range: Range<Int64>, tag: Int)] = []

        init(copy: SectionCopy, run: Range<Int64>, algorithm: DigestAlgorithm, state: SharedState,
             lane: (lanes: SHA256Lanes, index: Int)? = nil) {
            self.copy = copy
            hasher = Digest(algorithm)
            self.state = state
            self.lane = lane
            next = Self.firstIndex(in: copy.recordStarts, atLeast: run.lowerBound)
            end = Self.firstIndex(in: copy.recordStarts, atLeast: run.upperBound)
        }

        static func firstIndex(in starts: [Int64], atLeast value: Int64) -> Int {
            var low = 0, high = starts.count
            while low < high {
                let middle = (low + high) / 2
                if starts[middle] < value { low = middle + 1 } else { high = middle }
            }
            return low
        }

        /// The output bytes at `offset` are `chunk`.
        func consume(_ chunk: UnsafeRawBufferPointer, at offset: Int64) throws {
            let chunkEnd = offset + Int64(chunk.count)
            while true {
                if let current = open {
                    let dataEnd = copy.dataStarts[current.item] + copy.items[current.item].entry.dataRange.count64
                    let from = max(current.hashedTo, offset), to = min(dataEnd, chunkEnd)
                    if to > from { updateStored(UnsafeRawBufferPointer(rebasing: chunk[Int(from - offset)..<Int(to - offset)])) }
                    if to < dataEnd { open = (current.item, to); return }
                    finishStored(current.item)
                    open = nil
                }
                guard next < end, copy.dataStarts[next] < chunkEnd else { return }
                let item = next
                next += 1
                // Fields, not the whole ZipEntry: copying one retains and releases its five arrays.
                let method = copy.items[item].entry.method, dataRange = copy.items[item].entry.dataRange
                let dataStart = copy.dataStarts[item]
                switch method {
                case .stored:
                    if lane != nil && SectionCopy.isLarge(method, dataRange) { continue }  // hashed on its own
                    if lane == nil { hasher.reset() }
                    open = (item, dataStart)
                case .deflated:
                    if lane != nil || item == copy.inflatedElsewhere { continue }  // in a batch of its own (digestDeflated)
                    let dataEnd = dataStart + dataRange.count64
                    guard dataStart >= offset, dataEnd <= chunkEnd else { spanning.append(item); continue }
                    // What the entry inflates to, its CRC-32 checked (EntryIntegrity).
                    hasher.reset()
                    try EntryIntegrity.inflateChecked(copy.items[item].entry,
                                                      UnsafeRawBufferPointer(rebasing: chunk[Int(dataStart - offset)..<Int(dataEnd - offset)])) { hasher.update($0) }
                    state.entryDigests[item] = hasher.finish()
                }
            }
        }

        /// Entries the run's chunks did not complete: read from the input past the run's end.
        func finish(buffer: UnsafeMutableRawBufferPointer) throws {
            if let current = open {
                let dataRange = copy.items[current.item].entry.dataRange
                let done = current.hashedTo - copy.dataStarts[current.item]
                try hashStoredInput((dataRange.lowerBound + done)..<dataRange.upperBound, item: current.item)
                open = nil
            }
            for item in next..<end {
                let method = copy.items[item].entry.method, dataRange = copy.items[item].entry.dataRange
                switch method {
                case .stored:
                    if lane != nil && SectionCopy.isLarge(method, dataRange) { continue }
                    if lane == nil { hasher.reset() }
                    try hashStoredInput(dataRange, item: item)
                case .deflated:
                    if lane == nil && item != copy.inflatedElsewhere { spanning.append(item) }
                }
            }
            for item in spanning {
                hasher.reset()
                try SectionCopy.inflate(copy.items[item].entry, from: copy.source, buffer: buffer) { hasher.update($0) }
                state.entryDigests[item] = hasher.finish()
            }
        }

        private func updateStored(_ bytes: UnsafeRawBufferPointer) {
            if let lane { lane.lanes.update(lane.index, bytes) } else { hasher.update(bytes) }
        }

        private func finishStored(_ item: Int) {
            if let lane { lane.lanes.finish(lane.index, tag: item) } else { state.entryDigests[item] = hasher.finish() }
        }

        /// Hashes the rest of a stored entry, input bytes past the run's chunks (`stream` reads a mapped file
        /// with pread, as the chunks are), or leaves them in `pendingInput` for its lane.
        private func hashStoredInput(_ range: Range<Int64>, item: Int) throws {
            if lane != nil { pendingInput.append((range, item)); return }
            try copy.source.stream(range, chunkSize: ContentDigester.chunkSize) { hasher.update($0) }
            state.entryDigests[item] = hasher.finish()
        }
    }

    /// What the workers produce; each slot is written by exactly one worker.
    private struct SharedState: Sendable {
        let chunkDigests: Parallel.Slots<[[UInt8]]>
        let entryDigests: Parallel.Slots<[UInt8]>
        /// Each whole chunk's fs-verity leaf digests (when asked for).
        let verityLeaves: Parallel.Slots<[UInt8]>
        /// Stored entries' CRC-32s, fed every chunk as it is copied (EntryIntegrity).
        let checksums: StoredEntryChecksums
        /// The partial last chunk's bytes (written by the one run that holds it).
        let tail = Parallel.Slots<TailBytes>(count: 1, repeating: TailBytes(buffer: nil, count: 0))
        let failure = Parallel.FirstFailure()

        init(chunkCount: Int, itemCount: Int, leafChunkCount: Int, checksums: StoredEntryChecksums) {
            chunkDigests = Parallel.Slots(count: chunkCount, repeating: [])
            entryDigests = Parallel.Slots(count: itemCount, repeating: [])
            verityLeaves = Parallel.Slots(count: leafChunkCount, repeating: [])
            self.checksums = checksums
        }

        /// Another worker has failed: the others stop at their next chunk.
        var failed: Bool { failure.hasFailed }
    }
}

/// The section's partial last chunk, held in a pool buffer until it is written (or dropped) once.
struct TailBytes: @unchecked Sendable {
    // @unchecked Sendable: the buffer is owned by one thread at a time (the run that fills it, then the writer).
    let buffer: UnsafeMutableRawBufferPointer?
    let count: Int

    /// Passes the bytes to `body` (nothing when there are none) and gives the buffer back to the pool.
    func handOver(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard let buffer else { return }
        defer { BufferPool.shared.recycle(buffer) }
        if count > 0 { try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) }
    }
}

extension SectionCopy {
    /// A section writer's copy of `layout` for `engine`: the v2/v3 chunk digests `plan` asks for and the v4
    /// tree's leaves when the engine signs the block, the v1 digests (`entryDigest`) of `items`.
    init(layout: SectionLayout, source: any DataSource, items: [KeptEntry] = [], recordStarts: [Int64] = [], dataStarts: [Int64] = [],
         entryDigest: DigestAlgorithm?, engine: SigningEngine, plan: DigestPlan) {
        self.init(layout: layout, source: source, items: items, recordStarts: recordStarts, dataStarts: dataStarts, entryDigest: entryDigest,
                  chunkAlgorithms: engine.signsBlock ? ContentDigestAlgorithm.allCases.filter { plan.block.contains($0) } : [])
        hashesVerityLeaves = engine.config.preparesV4Signature && engine.signsBlock
    }

    /// Copies the section into `file` (`run`), then opens the output that goes on after its whole chunks, their
    /// v2/v3 digests resumed: the partial last chunk is written to it, to be digested with what follows it (the
    /// JAR signature files and the padding).
    func write(into file: OutputFile, engine: SigningEngine, plan: DigestPlan, concurrency: Int,
               key: BackgroundValue<SignerKey>?) throws -> (copied: Result, output: SigningOutput) {
        let copied = try run(into: file, concurrency: concurrency, key: key)
        try file.skip(to: copied.chunks.byteCount)
        let output = try SigningOutput(file: file, algorithms: engine.signsBlock ? plan.block : [],
                                       resuming: engine.signsBlock ? copied.chunks : nil, hashesVerityLeaves: hashesVerityLeaves)
        do {
            try copied.tail.handOver { try output.consume($0) }
        } catch {
            output.abandon()
            throw error
        }
        return (copied, output)
    }
}

extension SectionCopy {
    /// Inflates a deflated entry (its CRC-32 checked): read into `buffer` when it fits, else through the input's
    /// mapping, whose pages go back behind zlib as it reads.
    static func inflate(_ entry: ZipEntry, from source: any DataSource, buffer: UnsafeMutableRawBufferPointer,
                        _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let range = entry.dataRange
        if range.count64 <= Int64(buffer.count) {
            try source.read(range, into: buffer)
            try EntryIntegrity.inflateChecked(entry, UnsafeRawBufferPointer(rebasing: buffer[0..<Int(range.count64)]), body)
            return
        }
        var released = range.lowerBound
        try source.withBytes(in: range) { raw in
            try EntryIntegrity.inflateChecked(entry, raw, consumed: { read in
                // Whole 2 MiB granules behind what zlib has read (MappedFile.discard rounds outward).
                let granule: Int64 = 2 << 20
                let behind = (range.lowerBound + Int64(read)) / granule * granule - granule
                if behind > released { source.discard(released..<behind); released = behind }
            }, body)
        }
        source.discard(range)
    }
}

/// The whole chunks inside a large stored entry's data, shared between the entry's work item, which claims
/// them one by one from the front (its v1 stream must read the entry in order), and cores that have run out
/// of other work, which take the back half of what is left (`take`). Neither waits for the other: a lock
/// guards the two ends only while one moves.
final class LargeEntryChunks: @unchecked Sendable {
    // @unchecked Sendable: `front` and `back` are read and written under `lock`.
    let chunks: Range<Int>
    private let lock = Lock()
    private var front: Int
    private var back: Int

    init(_ chunks: Range<Int>) {
        self.chunks = chunks
        front = chunks.lowerBound
        back = chunks.upperBound
    }

    /// Claims `chunk`, the next one in order, for the entry's work item; false when another core has taken it
    /// (and with it every chunk after it).
    func claim(_ chunk: Int) -> Bool {
        lock.withLock {
            guard chunk == front, front < back else { return false }
            front += 1
            return true
        }
    }

    /// The last half of the chunks nobody has claimed or taken (at most one group of lanes), or nil when fewer
    /// than two are left: the entry's work item is about to reach the last one.
    func take() -> Range<Int>? {
        lock.withLock {
            let left = back - front
            guard left >= 2 else { return nil }
            let count = min(SHA256Lanes.width, left / 2)
            back -= count
            return back..<(back + count)
        }
    }
}
