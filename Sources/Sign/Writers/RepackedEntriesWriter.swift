import APKCore
import DigestLanes
import OpenSSLWrapper
import SignatureSchemes
import ZlibWrapper

/// The section writer for entries from the Repack stage, written in the given order into a new file: each
/// local header encoded (re-aligned where the engine says), its data copied verbatim. Where every byte comes
/// from is known before one is copied (`SectionLayout`: the headers, and runs of the input APK's mapping or of
/// the new entries' bytes), so the cores copy and digest the section together as for an input APK
/// (`SectionCopy`: v2/v3 chunks and the v4 tree's leaves); the v1 digests are taken on all cores meanwhile
/// (`digestEntries`). Nothing of the output is re-read or mapped.
struct RepackedEntriesWriter: SectionWriter {
    let destination: String
    let concurrency: Int
    let keySupply: BackgroundValue<SignerKey>

    func entryDigestsBesideCopy(_ entries: [KeptEntry], plan: DigestPlan) -> (@Sendable () throws -> [[UInt8]])? {
        Self.entryDigests(entries, plan: plan, concurrency: concurrency, cache: nil, key: keySupply)
    }

    func write(_ entries: [KeptEntry], engine: SigningEngine, plan: DigestPlan) throws -> WrittenSection {
        if plan.v1 == nil && EntryIntegrity.isEnabled { try Self.checkEntries(entries, concurrency: concurrency, cache: nil, key: keySupply) }
        let file = try OutputFile(destination: destination)
        let planned = try Self.layOut(entries, engine: engine)
        // The entries section; what follows it is appended (see InputAPKWriter.write).
        try file.reserve(planned.layout.count)
        // No entries for SectionCopy: their v1 digests and checks are `digestEntries`' (beside the copy).
        var copy = SectionCopy(layout: planned.layout, source: planned.sources.first ?? ByteArrayDataSource([]), entryDigest: nil,
                               engine: engine, plan: plan)
        copy.otherSources = Array(planned.sources.dropFirst())
        let (copied, output) = try copy.write(into: file, engine: engine, plan: plan, concurrency: concurrency, key: keySupply)
        return WrittenSection(output: output, centralRecords: planned.centralRecords, entryDigests: nil, realigned: planned.realigned,
                              verityLeaves: copied.verityLeaves, entryStarts: (planned.recordStarts, planned.dataStarts))
    }

    /// Where every byte of the section comes from: each entry's local header (encoded, with a new alignment
    /// field where the engine says) as a literal, then its data as a run of its source. Data in a mapped
    /// file (the input APK, a split of a set) is a run of that file, so neighbouring entries' data is read
    /// in one go; other data (new entries' bytes) is a source of its own.
    private static func layOut(_ entries: [KeptEntry], engine: SigningEngine) throws -> Plan {
        var plan = Plan()
        plan.layout.reserveCapacity(entries.count * 2)
        plan.recordStarts.reserveCapacity(entries.count)
        plan.dataStarts.reserveCapacity(entries.count)
        plan.centralRecords.reserveCapacity(entries.count)
        var mappings: [ObjectIdentifier: Int] = [:]
        for item in entries {
            guard case .output(let outputEntry) = item.origin else {
                throw SignError.internalInconsistency("entries to write are the Repack stage's")
            }
            let headerOffset = plan.layout.count
            try Records.checkOffset(headerOffset)
            let (written, isRealigned) = try encoded(item.entry, data: outputEntry.data, at: headerOffset, engine: engine)
            if isRealigned { plan.realigned += 1 }
            plan.recordStarts.append(headerOffset)
            plan.layout.append(literal: written.encodedLocalHeader(extra: written.localExtra))
            plan.dataStarts.append(plan.layout.count)
            let data = outputEntry.data
            if data.count > 0 {
                if case .mapping(let object, let range)? = data.identity, let mapped = object as? any DataSource, range.count64 == data.count {
                    let index = mappings[ObjectIdentifier(object)] ?? {
                        plan.sources.append(mapped)
                        mappings[ObjectIdentifier(object)] = plan.sources.count - 1
                        return plan.sources.count - 1
                    }()
                    plan.layout.append(input: range, source: index)
                } else {
                    plan.sources.append(data)
                    plan.layout.append(input: 0..<data.count, source: plan.sources.count - 1)
                }
            }
            plan.centralRecords.append((plan.centralRecords.count, .encoded(written.encodedCentralDirectoryRecord(localHeaderOffset: headerOffset))))
        }
        return plan
    }

    /// Where the section's bytes come from (`layOut`), and where each entry's record and data start in it.
    private struct Plan {
        var layout = SectionLayout()
        /// The layout's sources, by index.
        var sources: [any DataSource] = []
        var recordStarts: [Int64] = []
        var dataStarts: [Int64] = []
        var centralRecords: [(order: Int, record: Records.CentralRecord)] = []
        var realigned = 0
    }

    /// The entry as written at `headerOffset`: with the alignment field the engine gives it (and whether it got
    /// one), its data checked against its declared size.
    private static func encoded(_ entry: ZipEntry, data: any DataSource, at headerOffset: Int64, engine: SigningEngine) throws -> (ZipEntry, Bool) {
        let dataOffsetWithCurrentExtra = headerOffset + Int64(LocalFileHeaderLayout.fixedSize + entry.nameBytes.count + entry.localExtra.count)
        var written = entry
        var realigned = false
        if let extra = engine.alignedExtra(for: entry, inputHeaderOffset: entry.localHeaderOffset,
                                           outputHeaderOffset: headerOffset, inputDataOffset: dataOffsetWithCurrentExtra,
                                           keepsAlignedData: true) {
            written.localExtra = extra
            realigned = true
        }
        guard written.localExtra.count <= Int(UInt16.max) else { throw SignError.tooLarge("extra field of \(entry.name.debugDescription)") }
        guard data.count == entry.compressedSize else {
            throw SignError.internalInconsistency("entry \(entry.name.debugDescription) has \(data.count) bytes of data but declares \(entry.compressedSize)")
        }
        return (written, realigned)
    }

    /// Without v1, what `digestEntries` checks on the way: the entries copied raw (EntryIntegrity).
    static func checkEntries(_ entries: [KeptEntry], concurrency: Int, cache: SigningCache?, key: BackgroundValue<SignerKey>) throws {
        _ = try digestEntries(entries, algorithm: nil, concurrency: concurrency, cache: cache, key: key)
    }

    /// The v1 digests of `entries` (nil without v1), `cache` holding those of earlier runs.
    static func entryDigests(_ entries: [KeptEntry], plan: DigestPlan, concurrency: Int, cache: SigningCache?,
                             key: BackgroundValue<SignerKey>) -> (@Sendable () throws -> [[UInt8]])? {
        guard let algorithm = plan.v1 else { return nil }
        return { try digestEntries(entries, algorithm: algorithm, concurrency: concurrency, cache: cache, key: key) }
    }

    /// Writes `entries` into `output` (a new or a recycled file; in a recycled one, records identical to what
    /// it already holds at the same offset are skipped, not written).
    static func write(_ entries: [KeptEntry], into output: SigningOutput, engine: SigningEngine,
                      key: BackgroundValue<SignerKey>) throws -> WrittenSection {
        var section = WrittenSection(output: output, centralRecords: [], entryDigests: nil, realigned: 0)
        section.centralRecords.reserveCapacity(entries.count)
        var recordStarts: [Int64] = [], dataStarts: [Int64] = []
        recordStarts.reserveCapacity(entries.count)
        dataStarts.reserveCapacity(entries.count)
        do {
            for item in entries {
                // A key that failed to load (a wrong password) ends the copy now, not after the last entry.
                try key.throwIfFailed()
                recordStarts.append(output.position)
                let (record, dataStart, realigned) = try write(item, into: output, engine: engine)
                dataStarts.append(dataStart)
                section.centralRecords.append((section.centralRecords.count, .encoded(record)))
                if realigned { section.realigned += 1 }
            }
            try output.endOfReusableRecords()
        } catch {
            output.abandon()
            throw error
        }
        section.entryStarts = (recordStarts, dataStarts)
        return section
    }

    /// Writes one entry's local record; returns its central directory record, where its data starts, and
    /// whether it was re-aligned.
    private static func write(_ item: KeptEntry, into output: SigningOutput, engine: SigningEngine) throws -> ([UInt8], Int64, Bool) {
        guard case .output(let outputEntry) = item.origin else {
            throw SignError.internalInconsistency("entries to write are the Repack stage's")
        }
        let headerOffset = output.position
        let (written, realigned) = try encoded(item.entry, data: outputEntry.data, at: headerOffset, engine: engine)
        let header = written.encodedLocalHeader(extra: written.localExtra)
        if try !output.skipIfUnchanged(header: header, data: outputEntry.data) {
            try output.write(header)
            var sink = output
            try outputEntry.data.feed(0..<outputEntry.data.count, into: &sink)
        }
        try Records.checkOffset(headerOffset)
        return (written.encodedCentralDirectoryRecord(localHeaderOffset: headerOffset), headerOffset + Int64(header.count), realigned)
    }

    // MARK: - v1 entry digests

    /// Digests of the uncompressed data of every entry, computed `concurrency` entries at a time; the entries
    /// copied raw are checked on the way (`withUncompressedChunks`). Without `algorithm` only checked.
    static func digestEntries(_ items: [KeptEntry], algorithm: DigestAlgorithm?, concurrency: Int,
                              cache: SigningCache? = nil, key: BackgroundValue<SignerKey>? = nil) throws -> [[UInt8]] {
        // One digest context per worker, reset for each entry.
        let digest: @Sendable (Int, Digest?) throws -> [UInt8] = { index, hasher in
            // A key that failed to load ends the digests too: its error is what the run reports.
            try key?.throwIfFailed()
            let cacheKey = cache.map { _ in SigningCache.Key(items[index].entry, algorithm: algorithm) }
            if let cacheKey, let cached = cache?.digest(for: cacheKey) { return cached }
            guard case .output(let outputEntry) = items[index].origin else {
                throw SignError.internalInconsistency("an input APK's entries are digested as they are copied")
            }
            if hasher == nil && outputEntry.uncompressed != nil { return [] }  // made here: nothing to check
            hasher?.reset()
            try withUncompressedChunks(of: outputEntry) { hasher?.update($0) }
            let digest = hasher?.finish() ?? []
            if let cacheKey { cache?.store(digest, for: cacheKey) }
            return digest
        }
        // SHA-256 on a CPU with lanes: sixteen entries hashed side by side (`digestInLanes`).
        let inLanes = algorithm == .sha256 && SHA256Lanes.isAccelerated
        if concurrency <= 1 || items.count < 2 {
            if inLanes {
                let results = Parallel.Slots<[UInt8]>(count: items.count, repeating: [])
                try digestInLanes(items, items.indices, into: results, cache: cache, key: key)
                return results.values
            }
            let hasher = algorithm.map { Digest($0) }
            return try items.indices.map { try digest($0, hasher) }
        }
        // Runs of neighbouring entries, each read front to back: the kernel maps pages around every fault,
        // and a worker that jumped around the file would leave those neighbours resident until their
        // turn. Biggest runs first so the cores finish together.
        let batches = contiguousBatches(items.map(\.entry.uncompressedSize), count: concurrency * 8)
        let results = Parallel.Slots<[UInt8]>(count: items.count, repeating: [])
        try Parallel.forEach(batches.count, concurrency: concurrency) { batch in
            let run = batches[batch]
            // Deflated entries of the pipeline's plan were inflated through their mapping: give the run's
            // pages back once, rather than per entry, which would fault big folios back in.
            defer { discardMappedPages(of: items[run]) }
            if inLanes { return try digestInLanes(items, run, into: results, cache: cache, key: key) }
            let hasher = algorithm.map { Digest($0) }
            for index in run { results[index] = try digest(index, hasher) }
        }
        return results.values
    }

    /// SHA-256 v1 digests of `items[run]` into `results`, sixteen entries at a time on the lanes of one
    /// `SHA256Lanes`, the entries copied raw checked on the way as `withUncompressedChunks` checks them.
    /// Deflated entries are inflated whole into a 1 MiB arena (hashed when it is full); the others (stored,
    /// or with their plaintext at hand) and larger deflated ones' plaintext stream through their lane 64 KiB
    /// a pass, shared out so that the lanes' bytes come out about equal.
    static func digestInLanes(_ items: [KeptEntry], _ run: Range<Int>, into results: Parallel.Slots<[UInt8]>,
                              cache: SigningCache?, key: BackgroundValue<SignerKey>?) throws {
        try key?.throwIfFailed()
        let lanes = SHA256Lanes()
        let arena = BufferPool.shared.take()
        defer { BufferPool.shared.recycle(arena) }
        let inflater = try Inflate.Inflater()
        var cacheKeys: [Int: SigningCache.Key] = [:]
        let deliver: (Int, [UInt8]) -> Void = { index, digest in
            results[index] = digest
            if let cacheKey = cacheKeys[index] { cache?.store(digest, for: cacheKey) }
        }
        var streamed: [(index: Int, size: Int64)] = []
        var used = 0, lane = 0
        for index in run {
            if let cache {
                let cacheKey = SigningCache.Key(items[index].entry, algorithm: .sha256)
                if let cached = cache.digest(for: cacheKey) { results[index] = cached; continue }
                cacheKeys[index] = cacheKey
            }
            guard case .output(let item) = items[index].origin else {
                throw SignError.internalInconsistency("an input APK's entries are digested as they are copied")
            }
            if let plain = item.uncompressed {
                streamed.append((index, plain.count))
                continue
            }
            if item.entry.method == .stored {
                streamed.append((index, item.data.count))
                continue
            }
            let size = item.entry.uncompressedSize
            guard size >= 0, size <= Int64(arena.count) else {
                // Larger than the arena: one stream of its own, inflated as it goes.
                let hasher = Digest(.sha256)
                try withUncompressedChunks(of: item) { hasher.update($0) }
                deliver(index, hasher.finish())
                continue
            }
            if used + Int(size) > arena.count {
                lanes.run(deliver)
                used = 0
            }
            let output = UnsafeMutableRawBufferPointer(rebasing: arena[used..<(used + Int(size))])
            let streamEnd = try item.data.withBytes(in: 0..<item.data.count) { raw in
                try EntryIntegrity.inflating(item.entry) { try inflater.inflate(raw, into: output) }
            }
            if EntryIntegrity.isEnabled {
                try EntryIntegrity.checkStreamEnd(streamEnd, of: item.entry)
                try EntryIntegrity.check(CRC32.checksum(UnsafeRawBufferPointer(output)), of: item.entry)
            }
            lanes.update(lane, UnsafeRawBufferPointer(output))
            lanes.finish(lane, tag: index)
            lane = (lane + 1) % SHA256Lanes.width
            used += Int(size)
        }
        lanes.run(deliver)
        guard !streamed.isEmpty else { return }
        try key?.throwIfFailed()
        // Largest first, each to the lane with the fewest bytes so far.
        var jobs = [[(range: Range<Int64>, tag: Int)]](repeating: [], count: SHA256Lanes.width)
        var loads = [Int64](repeating: 0, count: SHA256Lanes.width)
        for job in streamed.sorted(by: { $0.size > $1.size }) {
            let target = loads.indices.min { loads[$0] < loads[$1] }!
            jobs[target].append((0..<job.size, job.index))
            loads[target] += job.size
        }
        // Stored data copied raw is checked against its CRC-32 as it passes (EntryIntegrity).
        var checksums: [Int: CRC32] = [:]
        try ChunkLanes.digests(continuing: jobs, lanes: lanes, read: { index, range, buffer in
            guard case .output(let item) = items[index].origin else { return }
            if let plain = item.uncompressed {
                try plain.read(range, into: buffer)
            } else {
                try item.data.read(range, into: buffer)
                checksums[index, default: CRC32()].update(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(range.count64)]))
            }
        }, deliver: { index, digest in
            if case .output(let item) = items[index].origin, item.uncompressed == nil {
                try EntryIntegrity.check(checksums.removeValue(forKey: index)?.value ?? CRC32().value, of: item.entry)
            }
            deliver(index, digest)
        })
    }

    /// Gives back the mapped input pages under the data of `items` (entries of the pipeline's plan).
    static func discardMappedPages(of items: ArraySlice<KeptEntry>) {
        for item in items {
            if case .output(let entry) = item.origin, entry.entry.method == .deflated { entry.data.discard(0..<entry.data.count) }
        }
    }

    /// `count` runs of consecutive indices with about equal total `sizes`, largest total first.
    static func contiguousBatches(_ sizes: [Int64], count: Int) -> [Range<Int>] {
        let total = sizes.reduce(0, +)
        let target = max(1, total / Int64(max(1, count)))
        var batches: [(range: Range<Int>, bytes: Int64)] = []
        var start = 0
        var bytes: Int64 = 0
        for (index, size) in sizes.enumerated() {
            bytes += size
            if bytes >= target || index == sizes.count - 1 {
                batches.append((start..<(index + 1), bytes))
                start = index + 1
                bytes = 0
            }
        }
        return batches.sorted { $0.bytes > $1.bytes }.map(\.range)
    }

    /// Streams an output entry's plaintext: `uncompressed` when known, else its stored data, else inflated;
    /// data copied as it is (an input's entry) is checked against its header (EntryIntegrity).
    static func withUncompressedChunks(of item: OutputEntry, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let plain = item.uncompressed {
            try plain.stream(0..<plain.count, chunkSize: 1 << 20, body)
            return
        }
        switch item.entry.method {
        case .stored:
            // Streamed (pread from a mapped input): a 400 MB stored asset must not become 400 MB resident.
            var crc = CRC32()
            let checks = EntryIntegrity.isEnabled
            try item.data.stream(0..<item.data.count, chunkSize: 1 << 20) { bytes in
                if checks { crc.update(bytes) }
                try body(bytes)
            }
            if checks { try EntryIntegrity.check(crc.value, of: item.entry) }
        case .deflated:
            try item.data.withBytes(in: 0..<item.data.count) { raw in
                try EntryIntegrity.inflateChecked(item.entry, raw, body)
            }
        }
    }

    static func uncompressed(_ item: OutputEntry) throws -> [UInt8] {
        // Only manifests and pin hints come through here; a 1 MB APK whose AndroidManifest.xml inflates to 1 GB
        // must not cost 1 GB (the bound Repack and Unpack apply to in-memory reads).
        guard item.entry.uncompressedSize <= OutputEntry.maxInMemorySize else {
            throw SignError.entryTooLargeToRead(item.entry.name, size: item.entry.uncompressedSize, limit: OutputEntry.maxInMemorySize)
        }
        var out: [UInt8] = []
        try withUncompressedChunks(of: item) { out.append(contentsOf: $0) }
        return out
    }
}

/// The watch-mode section writer, for the incremental mode: the Repack stage's entries written into one of
/// `SigningCache`'s two recycled output files. Records identical to what that file already holds at the same
/// offset are skipped, not written, and the digests of the whole 1 MiB chunks before the first change are
/// those of the file's last build; the v1 digests of unchanged entries come from the cache.
struct RecyclingWriter: SectionWriter {
    let cache: SigningCache
    let destination: String
    let concurrency: Int
    let keySupply: BackgroundValue<SignerKey>

    func entryDigestsBesideCopy(_ entries: [KeptEntry], plan: DigestPlan) -> (@Sendable () throws -> [[UInt8]])? {
        RepackedEntriesWriter.entryDigests(entries, plan: plan, concurrency: concurrency, cache: cache, key: keySupply)
    }

    func write(_ entries: [KeptEntry], engine: SigningEngine, plan: DigestPlan) throws -> WrittenSection {
        if plan.v1 == nil && EntryIntegrity.isEnabled { try RepackedEntriesWriter.checkEntries(entries, concurrency: concurrency, cache: cache, key: keySupply) }
        let recycled = try cache.recycler(for: destination).open()
        let previous = recycled.reused ? cache.takeLayout(slot: recycled.slot) : nil
        let output = try SigningOutput(recycled: recycled, previous: previous?.algorithms == plan.block ? previous : nil,
                                       algorithms: engine.signsBlock ? plan.block : [])
        return try RepackedEntriesWriter.write(entries, into: output, engine: engine, key: keySupply)
    }
}
