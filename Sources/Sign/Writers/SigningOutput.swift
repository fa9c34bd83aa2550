import APKCore
import SignatureSchemes

/// The signer's output: a new file, or (watch mode) a recycled one. Every byte of the entries section is
/// fed to the streaming v2/v3 digester as it is written; in a recycled file, the leading records identical
/// to the file's last build are skipped until the first change, where digesting resumes from the last whole
/// chunk before it (its bytes read back from the file).
final class SigningOutput: DataSink {
    private enum Target { case file(OutputFile), recycled(RecycledOutput) }
    private let target: Target
    private let algorithms: Set<ContentDigestAlgorithm>
    private var digester: StreamingChunkDigester?
    private let previous: RecordLayout?
    private var nextPrevious = 0
    /// Still inside the prefix identical to the recycled file's last build.
    private var matching: Bool
    /// This build's records, while each could be identified.
    private var records: [RecordKey] = []
    private var recordsComplete = true
    private var skipped: Int64 = 0
    private var section: SectionChunkDigests?

    /// - Parameters:
    ///   - resuming: the digests of the section's first whole chunks, already written (`SectionCopy`).
    ///   - hashesVerityLeaves: the fs-verity leaves of the section's blocks are hashed as they are written
    ///     (`verityLeaves(after:)`), for a v4 signature.
    init(file: OutputFile, algorithms: Set<ContentDigestAlgorithm>, resuming: SectionChunkDigests? = nil,
         hashesVerityLeaves: Bool = false) throws {
        target = .file(file)
        self.algorithms = algorithms
        previous = nil
        matching = false
        recordsComplete = false
        digester = algorithms.isEmpty ? nil : try StreamingChunkDigester(algorithms: algorithms, resuming: resuming,
                                                                         hashesVerityLeaves: hashesVerityLeaves)
    }

    init(recycled: RecycledOutput, previous: RecordLayout?, algorithms: Set<ContentDigestAlgorithm>) throws {
        target = .recycled(recycled)
        self.algorithms = algorithms
        self.previous = previous
        matching = previous != nil
        if previous == nil { try startDigesting() }
    }

    var position: Int64 {
        switch target {
        case .file(let file): return file.position
        case .recycled(let recycled): return recycled.position
        }
    }

    /// Skips a record identical to the one the recycled file holds at this offset; false (and nothing
    /// skipped) otherwise, or for a new file.
    func skipIfUnchanged(header: [UInt8], data: any DataSource) throws -> Bool {
        guard case .recycled(let recycled) = target else { return false }
        guard let identity = data.identity else {
            recordsComplete = false
            try endOfReusableRecords()
            return false
        }
        let key = RecordKey(offset: recycled.position, header: header, data: identity, dataCount: data.count)
        if recordsComplete { records.append(key) }
        if matching, let previous, nextPrevious < previous.records.count, previous.records[nextPrevious] == key {
            nextPrevious += 1
            let size = Int64(header.count) + data.count
            try recycled.skip(size)
            skipped += size
            return true
        }
        try endOfReusableRecords()
        return false
    }

    /// From here on every byte is written: starts the digester where the unchanged prefix ends.
    func endOfReusableRecords() throws {
        guard matching else { return }
        matching = false
        try startDigesting()
    }

    private func startDigesting() throws {
        guard !algorithms.isEmpty, digester == nil, case .recycled(let recycled) = target else { return }
        let wholeChunks = Int(recycled.position / ContentDigester.chunkSize)
        let resuming = previous?.section?.prefix(chunks: wholeChunks)
        let digester = try StreamingChunkDigester(algorithms: algorithms, resuming: resuming)
        let start = resuming?.byteCount ?? 0
        var offset = start
        while offset < recycled.position {
            let end = min(recycled.position, offset + ContentDigester.chunkSize)
            try recycled.read(offset..<end).withUnsafeBytes { try digester.consume($0) }
            offset = end
        }
        self.digester = digester
    }

    func consume(_ bytes: UnsafeRawBufferPointer) throws {
        precondition(!matching, "write inside the reused prefix")
        try writeUndigested(bytes)
        try digester?.consume(bytes)
    }

    func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try consume($0) } }

    func writeZeros(_ count: Int) throws {
        guard count > 0 else { return }
        try write([UInt8](repeating: 0, count: count))
    }

    /// Bytes after the entries section (signing block, central directory), not part of its digest.
    func writeUndigested(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try writeUndigested($0) } }

    private func writeUndigested(_ bytes: UnsafeRawBufferPointer) throws {
        switch target {
        case .file(let file): try file.write(bytes)
        case .recycled(let recycled): try recycled.write(bytes)
        }
    }

    /// Everything written so far (the entries section, before the signing block), to read it back.
    func writtenSection() throws -> any DataSource {
        switch target {
        case .file(let file): return try file.mapWritten()
        case .recycled(let recycled): return ByteArrayDataSource(try recycled.read(0..<recycled.position))
        }
    }

    /// The entries section's chunk digests; call once, after the section's last byte.
    func finishDigests() throws -> SectionChunkDigests {
        try endOfReusableRecords()
        guard let digester else { throw SignError.internalInconsistency("no content digester for the entries section") }
        let result = digester.finish()
        section = result
        return result
    }

    /// After `finishDigests`: the fs-verity leaves of the section's whole blocks, those before where this
    /// output started digesting given by `known` (the blocks a section writer copied and hashed itself); nil
    /// when they were not hashed or `known` does not reach that far.
    func verityLeaves(after known: LeafDigests?) -> LeafDigests? {
        guard let hashed = digester?.verityLeaves else { return nil }
        let size = VerityTreeBuilder.digestSize
        guard hashed.firstBlock == 0 || (known?.blockCount ?? 0) >= hashed.firstBlock else { return nil }
        let before = known.map { Array($0.digests.prefix(hashed.firstBlock * size)) } ?? []
        return LeafDigests(blockCount: hashed.firstBlock + hashed.digests.count / size, digests: before + hashed.digests)
    }

    /// Renames or publishes the finished file; a recycled file's layout goes into `cache` for the next build.
    func commit(into cache: SigningCache?) throws {
        switch target {
        case .file(let file):
            try file.commit()
        case .recycled(let recycled):
            let written = recycled.position - skipped
            try recycled.commit()
            cache?.setLayout(RecordLayout(records: records, algorithms: algorithms, section: section),
                             slot: recycled.slot, skipped: skipped, written: written)
        }
    }

    /// Lets digest workers finish (after a failure the output is dropped unpublished).
    func abandon() { _ = digester?.finish() }
}
