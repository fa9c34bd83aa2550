import APKCore
import BinaryXML
import OpenSSLWrapper
import SignatureSchemes
import ZlibWrapper

/// Signs APKs with schemes v1, v2 and v3 the way apksig's `ApkSigner.sign` and `DefaultApkSignerEngine` do.
///
/// `Signer` moves bytes; `SigningEngine` decides (see Sources/Sign/README.md). For an input:
/// 1. minSdkVersion from the binary manifest (or `SignerConfig.minSdkVersion`) picks the algorithms;
/// 2. a section writer writes the kept entries (never recompressed; stored entries re-aligned with Android's
///    0xd935 extra field unless `alignmentPreserved`), digesting them for v1 and in 1 MiB chunks for v2/v3
///    as it goes: `InputAPKWriter` copies an input APK's records on all cores, `RepackedEntriesWriter`
///    streams the Repack stage's entries, `RecyclingWriter` rewrites only what changed of watch mode's
///    last output;
/// 3. v1: `<NAME>.SF`, `<NAME>.<ALG>` and `META-INF/MANIFEST.MF` are made from the entries' digests in the
///    background and appended after the entries, stamped with the newest kept entry's time;
/// 4. v2/v3: zeros pad the section to 4096 bytes, and the APK Signing Block goes before the central directory.
///
/// The output is never re-read and the input never mapped for the copy, so memory stays flat whatever the
/// APK size. Output goes to a temporary file renamed over the destination only when complete; the input is
/// never modified. The same input and RSA key give byte-identical output, and with `alignmentPreserved`
/// (and `libraryPageAlignment` 4096) the same bytes as apksigner from build-tools ≤ 34.
public struct Signer: Sendable {
    public let config: SignerConfig

    public init(config: SignerConfig) { self.config = config }

    /// How to open an APK for signing: as every command that writes an APK reads one (`UnpackLimits.rewriting`),
    /// by Android's rules. The central directory's compression method rules
    /// (testZipCompressionMethodMismatchBetweenLfhAndCd); ZIP64 fields that fit standard ones are read
    /// (testSignApk_apkWithZip64Records_signsAndVerifiesSuccessfully, testSignApk_apkWithZip64Eocd_...) and
    /// written as standard records, which Android 10 and older read too; any entry name Android opens: names
    /// are never paths here, and apksig refuses only the CR, LF and NUL a v1 manifest cannot hold
    /// (testV1SigningRejectsInvalidZipEntryNames; `V1SchemeSigner.makeManifest`), so `a\b` or `../x` are signed.
    /// Unlike apksig, a method other than stored or deflated is refused (but on a JAR signature file, which the
    /// signer drops): apksig reads it as deflate, but libziparchive cannot extract it, so the APK would not install.
    public static var inputLimits: UnpackLimits { .rewriting }

    /// Signs the APK `archive` into `destination`.
    public func sign(_ archive: APKArchive, to destination: String, cache: SigningCache? = nil) throws -> SigningReport {
        // What the signing held (`run`) is freed on another thread once its frames are gone.
        defer { BackgroundRelease.releaseHeld() }
        return try signArchive(archive, to: destination, cache: cache)
    }

    private func signArchive(_ archive: APKArchive, to destination: String, cache: SigningCache?) throws -> SigningReport {
        let zip = archive.zip
        let manifest = {
            guard let manifest = archive.entry(named: "AndroidManifest.xml") else { return nil as [UInt8]? }
            return try archive.uncompressedData(of: manifest)
        }
        let minSdk = try resolveMinSdkVersion(manifest)
        try checkDebuggable(manifest)
        try checkPackaging(zip.entries, manifest: manifest)
        // The resource table's check is offered to the worker threads: one that is free takes it while the entries
        // are copied and digested, or this thread runs it when `run` asks for the finding, once the entries are
        // written and before anything is published. A deflated table's v1 digest is taken there, on the check's
        // inflation, with the digest the signing will use as far as it can be told before the key has loaded.
        let tableDigest = predictedV1Digest(minSdkVersion: minSdk.level)
        let resourceTable = BackgroundValue<ResourceTableCheck>(offered: { try ResourceTableCheck.run(on: archive, digest: tableDigest ?? nil) })
        defer { resourceTable.wait() }
        return try Self.refusingBrokenTable(resourceTable) {
            try writeSigned(archive: archive, to: destination, cache: cache, minSdk: minSdk, resourceTable: resourceTable,
                            tableDigest: tableDigest, manifest: manifest)
        }
    }

    /// The v1 digest `SigningEngine.digestPlan` will choose, when it can be told without waiting for the key (the
    /// key's own when it has loaded, else what most keys call for): `.some(nil)` without v1, nil when only the
    /// key can tell.
    private func predictedV1Digest(minSdkVersion: Int) -> DigestAlgorithm?? {
        if let key = config.keySupply.ready {
            return (try? DigestPlan(keys: [key] + config.additionalSigners, schemes: config.schemes, minSdkVersion: minSdkVersion)).map(\.v1)
        }
        return DigestPlan.likely(schemes: config.schemes, minSdkVersion: minSdkVersion).map(\.v1)
    }

    private func writeSigned(archive: APKArchive, to destination: String, cache: SigningCache?, minSdk: (level: Int, overridden: Bool),
                             resourceTable: BackgroundValue<ResourceTableCheck>, tableDigest: DigestAlgorithm??,
                             manifest: () throws -> [UInt8]?) throws -> SigningReport {
        let zip = archive.zip
        // The input's signing block (if any) ends the local-file section apksig copies from.
        let inputBlock = try? SigningBlock.locate(in: archive.source, centralDirectoryOffset: zip.centralDirectoryOffset)
        let kept = try InputAPKWriter.keptEntries(of: archive, readsManifest: config.schemes.contains(.v1))
        let eocd = try archive.source.bytes(in: zip.endOfCentralDirectory.offset..<archive.source.count)
        // The pages mapped while the archive was opened and its headers read go back: the copy and the digests
        // read the input with pread (`SectionCopy`), not through the mapping.
        archive.source.discard(0..<archive.source.count)
        let table = kept.entries.firstIndex { $0.entry.isCompressed && $0.entry.name == ResourceTableLoadCheck.entryName }
        let tableInflation = table.flatMap { item in tableDigest.map { ResourceTableCheck.Inflation(item: item, algorithm: $0) } }
        let writer = InputAPKWriter(archive: archive, sectionEnd: inputBlock?.offset ?? zip.centralDirectoryOffset,
                                    droppedRecords: kept.dropped, destination: destination, concurrency: concurrency,
                                    keySupply: config.keySupply,
                                    alignmentRequirements: preservedAlignmentRequirements(zip.entries, manifest: manifest),
                                    tableInflation: tableInflation)
        // apksig regenerates pinlist.meta from the pin hints (`Hints`), and drops an old one (`isKept`).
        let pins = try archive.entry(named: PinList.hintsEntryName).map { try PinList.patterns(in: try archive.uncompressedData(of: $0)) }
        let stamp = config.sourceStamp == nil ? nil : try archive.entry(named: SourceStamp.certificateDigestEntryName).map { try archive.uncompressedData(of: $0) }
        return try run(Job(entries: kept.entries, inputManifest: kept.manifest, minSdk: minSdk, destination: destination,
                           writer: writer, input: archive.source, endOfCentralDirectory: eocd, comment: [], cache: cache, pins: pins,
                           existingSourceStamp: stamp, resourceTable: resourceTable, tableInflation: tableInflation))
    }

    /// Signs an APK given as entries to write (the Repack stage's output) into `destination`, with `comment`
    /// as the ZIP comment. Entries are written in the given order; their `data` is copied verbatim.
    ///
    /// `cache` (watch mode) makes it incremental: the v1 digests of unchanged entries, and the records and
    /// chunk digests of the last output, are kept between runs and not computed or written again.
    public func sign(entries: [OutputEntry], comment: [UInt8] = [], to destination: String, cache: SigningCache? = nil) throws -> SigningReport {
        defer { BackgroundRelease.releaseHeld() }
        return try signEntries(entries, comment: comment, to: destination, cache: cache)
    }

    private func signEntries(_ entries: [OutputEntry], comment: [UInt8], to destination: String, cache: SigningCache?) throws -> SigningReport {
        let manifest = {
            guard let manifest = entries.first(where: { $0.entry.name == "AndroidManifest.xml" }) else { return nil as [UInt8]? }
            return try RepackedEntriesWriter.uncompressed(manifest)
        }
        let minSdk = try resolveMinSdkVersion(manifest)
        try checkDebuggable(manifest)
        try checkPackaging(entries.map(\.entry), manifest: manifest)
        if let table = entries.first(where: { $0.entry.name == ResourceTableLoadCheck.entryName }) {
            let declaredMinSdkVersion = {
                (try? manifest()).flatMap { $0 }.flatMap { try? ManifestSummary(binaryXML: $0) }
                    .flatMap { ResourceTableLoadCheck.declaredMinSdkVersion($0.usesSDKMinSdkVersionAttributes) }
            }
            // Watch mode checks a table once while its bytes (and the minSdkVersion, if the check asked) stay the
            // same: the check reads the whole table.
            if cache?.isKnownLoadable(table, minSdkVersion: declaredMinSdkVersion) != true {
                var asked: Int?? = nil
                let problem = try Self.resourceTableProblem(in: table, minSdkVersion: {
                    let level = declaredMinSdkVersion()
                    asked = .some(level)
                    return level
                })
                if let problem { throw SignError.resourceTableRefused(problem) }
                cache?.noteLoadable(table, minSdkVersion: asked)
            }
        }
        var inputManifest: [UInt8]?
        var kept: [KeptEntry] = []
        // By their bytes, as Android tells entries apart: a Set<String> would take "cafe\u{301}" for "caf\u{E9}".
        var names = EntryNameTable(minimumCapacity: entries.count)
        let zipEntries = entries.map(\.entry)
        for (index, item) in entries.enumerated() {
            if config.schemes.contains(.v1) && item.entry.name == V1SchemeSigner.manifestEntryName {
                inputManifest = try RepackedEntriesWriter.uncompressed(item)
            }
            guard SigningEngine.isKept(item.entry.name) else { continue }
            guard names.insert(item.entry.nameBytes) else { throw SignError.duplicateEntry(item.entry.name) }
            kept.append(KeptEntry(zipEntries, index: index, origin: .output(item)))
        }
        let writer: any SectionWriter = cache.map {
            RecyclingWriter(cache: $0, destination: destination, concurrency: concurrency, keySupply: config.keySupply)
        } ?? RepackedEntriesWriter(destination: destination, concurrency: concurrency, keySupply: config.keySupply)
        // The pin list is regenerated from the hints, as for an input APK (an old pinlist.meta is not kept).
        let pins = try kept.first(where: { $0.entry.name == PinList.hintsEntryName }).map { hints -> [PinList.Pattern] in
            guard case .output(let entry) = hints.origin else { throw SignError.internalInconsistency("entries to write are the Repack stage's") }
            return try PinList.patterns(in: try RepackedEntriesWriter.uncompressed(entry))
        }
        let stamp = config.sourceStamp == nil ? nil : try entries.first { $0.entry.name == SourceStamp.certificateDigestEntryName }
            .map { try RepackedEntriesWriter.uncompressed($0) }
        return try run(Job(entries: kept, inputManifest: inputManifest, minSdk: minSdk, destination: destination,
                           writer: writer, input: nil, endOfCentralDirectory: nil, comment: comment, cache: cache, pins: pins,
                           existingSourceStamp: stamp))
    }

    /// Throws `SignError.resourceTableRefused` when the check found a rule the table breaks (or what the check threw).
    static func refuseBrokenTable(_ check: BackgroundValue<ResourceTableCheck>?) throws {
        if let problem = try check?.get().problem { throw SignError.resourceTableRefused(problem) }
    }

    /// `body`'s result; when it throws, a table Android refuses is the error instead: it is the first thing to fix,
    /// whatever else the signing ran into while the table was being checked.
    static func refusingBrokenTable<R>(_ check: BackgroundValue<ResourceTableCheck>, _ body: () throws -> R) throws -> R {
        do { return try body() } catch {
            try refuseBrokenTable(check)
            throw error
        }
    }

    /// `ResourceTableLoadCheck` on the table to write: read in place when it is stored or its plaintext is at hand.
    /// `minSdkVersion` is the one the manifest to write declares (called only for a table in a newer encoding).
    static func resourceTableProblem(in table: OutputEntry, minSdkVersion: () -> Int?) throws -> ResourceTableProblem? {
        if let plain = table.uncompressed ?? (table.entry.isCompressed ? nil : table.data) {
            return try ResourceTableLoadCheck.problem(in: plain, range: 0..<plain.count, minSdkVersion: minSdkVersion)
        }
        return ResourceTableLoadCheck.problem(in: try RepackedEntriesWriter.uncompressed(table), minSdkVersion: minSdkVersion)
    }

    /// How many entries/chunks are digested at once.
    var concurrency: Int { config.concurrency > 0 ? config.concurrency : ContentDigester.defaultConcurrency }

    /// One signing: the kept entries, where they come from and go.
    struct Job {
        var entries: [KeptEntry]
        var inputManifest: [UInt8]?
        var minSdk: (level: Int, overridden: Bool)
        var destination: String
        var writer: any SectionWriter
        /// The input APK, whose central directory records the writer's records refer to.
        var input: (any DataSource)?
        /// The input's EOCD (its comment stays), or nil for a new one with `comment`.
        var endOfCentralDirectory: [UInt8]?
        var comment: [UInt8]
        var cache: SigningCache?
        /// The pin hints' patterns, when the APK has them: `pinlist.meta` is written before the JAR signature.
        var pins: [PinList.Pattern]? = nil
        /// The input's `stamp-cert-sha256` contents, when it has one and the output gets a source stamp.
        var existingSourceStamp: [UInt8]? = nil
        /// The resource table's check, running beside the writer: its finding is asked for before the output is
        /// published.
        var resourceTable: BackgroundValue<ResourceTableCheck>? = nil
        /// The deflated table the check inflates, whose v1 digest it gives (`InputAPKWriter.tableInflation`).
        var tableInflation: ResourceTableCheck.Inflation? = nil
    }

    /// The engine decides, the writer writes the entries, then the JAR signature files, the signing block,
    /// the central directory and its end record follow. With a key still loading, the entries are digested
    /// with the likely digests; when the key calls for others, the run starts again with those.
    private func run(_ job: Job, plannedDigests: DigestPlan? = nil) throws -> SigningReport {
        let engine = try SigningEngine(config: config, minSdk: job.minSdk)
        let plan = try engine.digestPlan(planned: plannedDigests, incremental: job.cache != nil)
        // Files after the entries that the manifest lists too: the source stamp entry, then the pin list.
        let stampFile = try engine.sourceStampFile(existing: job.existingSourceStamp)
        let stampDigests = stampFile.map { file in plan.v1.map { [Digest.hash(file.data, with: $0)] } ?? [] } ?? []
        try engine.checkEntryCount(job.entries.count + (job.pins == nil ? 0 : 1) + (stampFile == nil ? 0 : 1), plan: plan)
        let jarSignature = JARSignatureJob(engine: engine, plan: plan, entries: job.entries, inputManifest: job.inputManifest,
                                           added: (stampFile == nil ? [] : [SourceStamp.certificateDigestEntryName])
                                               + (job.pins == nil ? [] : [PinList.entryName]))
        // The entries' v1 digests taken beside the copy: the signature starts from them at once, or, with a pin
        // list (whose digest the manifest lists after theirs, known once the entries are written), after the copy.
        var digestsBesideCopy: BackgroundValue<[[UInt8]]>?
        // Whatever happens below, the workers must finish before the entries and the mapping go away.
        defer { jarSignature.wait(); digestsBesideCopy?.wait() }
        if let digests = job.writer.entryDigestsBesideCopy(job.entries, plan: plan) {
            if job.pins == nil { jarSignature.start { try digests() + stampDigests } } else { digestsBesideCopy = BackgroundValue(digests) }
        }
        var section = try job.writer.write(job.entries, engine: engine, plan: plan)
        defer { section.output.abandon() }
        try Self.refuseBrokenTable(job.resourceTable)
        if let inflation = job.tableInflation, inflation.algorithm == plan.v1, plan.v1 != nil {
            // The copy left this entry to the check, which inflated it once for both.
            guard let digest = try job.resourceTable?.get().digest, section.entryDigests?.indices.contains(inflation.item) == true else {
                throw SignError.internalInconsistency("no v1 digest of resources.arsc from its check")
            }
            section.entryDigests?[inflation.item] = digest
        }
        var pinList: [UInt8]?
        if let pins = job.pins {
            guard let starts = section.entryStarts else { throw SignError.internalInconsistency("no entry offsets for the pin list") }
            // The list covers itself and what follows; the stamp entry comes before it.
            let stampRecordSize = stampFile.map { Int64(LocalFileHeaderLayout.fixedSize + $0.name.utf8.count + $0.compressed.count) } ?? 0
            pinList = PinList.encoded(patterns: pins, entries: job.entries, recordStarts: starts.records, dataStarts: starts.data,
                                      listOffset: section.output.position + stampRecordSize)
        }
        let added = stampDigests + (pinList.map { list in plan.v1.map { [Digest.hash(list, with: $0)] } ?? [] } ?? [])
        // The copied entries' central directory records, made by a core the JAR signature leaves free (it fills
        // the manifest on this thread before it deflates on two).
        let records = section.centralRecords, input = job.input
        // Room for the records of the files written after the entries (the JAR signature's, a stamp, a pin list),
        // so that appending them does not move the whole directory.
        let copiedRecords = BackgroundValue(offered: {
            HandedOver(try Records.centralDirectory(records, then: [], input: input, reserving: 4096))
        })
        defer { copiedRecords.wait() }
        if let digests = section.entryDigests {
            jarSignature.start(inline: true) { digests + added }
        } else if let digestsBesideCopy {
            jarSignature.start { try digestsBesideCopy.get() + added }
        }
        // From here on the key is needed.
        let key = try config.key
        let keyPlan = try engine.digestPlan(for: key)
        guard keyPlan == plan else {
            jarSignature.wait()
            section.output.abandon()
            return try run(job, plannedDigests: keyPlan)
        }
        // What of an explicit v4 signature only the keys can tell, before the output is published.
        try config.checkV4Keys(apkMinSdkVersion: job.minSdk.level)
        if config.v4Request == .on(reportsFailure: true) { try V4SchemeSigner.checkSignaturePath(forAPKAt: job.destination) }
        let report = try finish(section, of: job, engine: engine, plan: plan, key: key, jarSignature: jarSignature, pinList: pinList,
                                stampFile: stampFile, copiedRecords: copiedRecords)
        // Thousands of entries, their records and digests, and the JAR signature's buffers: freed after `sign`
        // returns (a failed run frees them here, its uncommitted output removed at once; watch mode's recycled
        // output, which its next build reuses, is closed here too).
        if job.cache == nil {
            BackgroundRelease.hold(job)
            BackgroundRelease.hold(section)
            BackgroundRelease.hold(jarSignature)
        }
        return report
    }

    /// Writes what follows the entries section and publishes the output.
    private func finish(_ section: WrittenSection, of job: Job, engine: SigningEngine, plan: DigestPlan, key: SignerKey,
                        jarSignature: JARSignatureJob, pinList: [UInt8]?, stampFile: JARSignature.File?,
                        copiedRecords: BackgroundValue<HandedOver<[UInt8]>>) throws -> SigningReport {
        let output = section.output
        // What the report says of the certificate (its subject as Java prints it, its fingerprint) is made on a
        // free core meanwhile; the sizes are filled in at the end.
        let realigned = section.realigned, destination = job.destination
        let reportDraft = BackgroundValue(offered: {
            try engine.report(destination: destination, plan: plan, key: key, entryCount: 0, realigned: realigned,
                              outputSize: 0, signingBlockSize: 0)
        })
        defer { reportDraft.wait() }
        // The copied entries' central directory records. An input APK's JAR signature was made on this thread
        // before `finish`; repacked entries' may still be in the making on a worker, which `files()` waits for.
        var centralDirectory = try copiedRecords.get().take()
        var count = section.centralRecords.count
        let stamp = SigningEngine.jarFileTimestamp(of: job.entries)
        // The pin list first (apksig writes it before the JAR signature, which lists it), deflated as they are.
        let pinFile = try pinList.map { data in
            JARSignature.File(name: PinList.entryName, data: data,
                              compressed: try JARSignature.deflateJARFile(data, level: config.jarSignatureCompressionLevel), crc: CRC32.checksum(data))
        }
        let jarFiles = try jarSignature.files()
        for file in [stampFile, pinFile].compactMap({ $0 }) + jarFiles {
            let headerOffset = output.position
            try Records.checkOffset(headerOffset)
            let (localHeader, central) = try Records.deflatedRecords(name: file.name, data: file.data, compressed: file.compressed,
                                                                     crc: file.crc, timestamp: stamp, headerOffset: headerOffset)
            try output.write(localHeader)
            try output.write(file.compressed)
            centralDirectory += central
            count += 1
        }
        guard count <= 0xFFFF else { throw SignError.tooLarge("\(count) entries need ZIP64, which APKs cannot use") }
        let cd = centralDirectory
        var commentPadding = 0
        let endOfCentralDirectory = { (offset: Int64, commentPadding: Int) in
            try Records.endOfCentralDirectory(input: job.endOfCentralDirectory, comment: job.comment, count: count,
                                              centralDirectorySize: cd.count, offset: offset, commentPadding: commentPadding)
        }
        var signingBlockSize = 0
        // The leaves of the section's blocks, those the section writer copied and then those written after them.
        var verityLeaves = section.verityLeaves
        var v4Signature: BackgroundValue<V4Signature?>?
        defer { v4Signature?.wait() }
        if engine.writesSigningBlock {
            // The central directory's chunks are hashed on a free core while this thread hashes the section's last.
            let centralDirectoryChunks = engine.signsBlock
                ? BackgroundValue(offered: { SectionChunkDigests(hashing: cd, algorithms: plan.block) }) : nil
            defer { centralDirectoryChunks?.wait() }
            try output.writeZeros(SigningEngine.signingBlockPadding(at: output.position))
            // A v1-only APK's stamp signs no content digest: its writers computed none.
            let section = engine.signsBlock ? try output.finishDigests() : nil
            verityLeaves = output.verityLeaves(after: verityLeaves)
            let blockOffset = output.position
            let blocks = try engine.schemeBlocks(for: key)
            let verity = try engine.needsVerityDigest(for: key) ? try output.writtenSection() : nil
            let manifest = jarFiles.first { $0.name == V1SchemeSigner.manifestEntryName }?.data
            let stampTime = SourceStampSigner.now()
            func signingBlock(commentPadding: Int) throws -> [UInt8] {
                let end = try endOfCentralDirectory(blockOffset, commentPadding)
                var digests = try section.map {
                    try engine.contentDigests(section: $0, centralDirectory: try centralDirectoryChunks?.get() ?? .init(hashing: cd, algorithms: plan.block),
                                              endOfCentralDirectory: end, plan: plan)
                } ?? [:]
                if let verity {
                    digests[.verityChunkedSHA256] = try VerityContentDigest.compute(section: verity, tail: cd + end, concurrency: concurrency)
                }
                // The v2 and v3 blocks are signed at the same time (a private-key operation each).
                let signed = digests
                let pairs = try Parallel.map(blocks.count, concurrency: concurrency) {
                    try engine.schemeBlockPair(blocks[$0], digests: signed)
                }
                // The source stamp last, as apksig adds it, over the digests just signed.
                let stamp = try engine.sourceStampPair(blocks: blocks, digests: signed, manifest: manifest, timestamp: stampTime)
                return engine.signingBlock(pairs + (stamp.map { [$0] } ?? []))
            }
            var block = try signingBlock(commentPadding: 0)
            if config.alignsFileSize {
                // As apksig: the comment grows to round the file up to 4096 bytes, and the signatures, which
                // cover the end record, are made again.
                let size = blockOffset + Int64(block.count + cd.count) + Int64(try endOfCentralDirectory(0, 0).count)
                if size % 4096 != 0 {
                    commentPadding = Int(4096 - size % 4096)
                    block = try signingBlock(commentPadding: commentPadding)
                }
            }
            // The v4 signature of the APK as it will be, made on a free core while this thread writes and publishes it.
            if config.makesV4Signature, config.v4Request != .off,
               let v4 = try? config.v4Signing(config.v4Request, schemes: engine.schemes.sorted(), apkMinSdkVersion: job.minSdk.level),
               v4.request != .off, let written = try? output.writtenSection() {
                let end = try endOfCentralDirectory(blockOffset + Int64(block.count), commentPadding)
                let apk = ChainedDataSource([written, ByteArrayDataSource(block), ByteArrayDataSource(cd), ByteArrayDataSource(end)])
                let leaves = verityLeaves, concurrency = self.concurrency
                // One that cannot be made here is nil: the caller makes it again, and says why.
                v4Signature = BackgroundValue(offered: {
                    try? V4SchemeSigner.makeSignature(for: apk, key: v4.key, v31Key: v4.v31Key, concurrency: concurrency, leaves: leaves)
                })
            }
            try output.writeUndigested(block)
            signingBlockSize = block.count
        }
        let centralDirectoryOffset = output.position
        try Records.checkOffset(centralDirectoryOffset)
        try output.writeUndigested(cd)
        try output.writeUndigested(try endOfCentralDirectory(centralDirectoryOffset, commentPadding))
        let size = output.position
        // A v4 signature beside the destination was made for the APK about to be replaced. It goes first: a
        // process killed before its caller writes the new one (`V4SchemeSigner.updateSignature`, which also
        // removes it when v4 is off) leaves the new APK without a v4 signature, never beside another APK's.
        V4SchemeSigner.removeSignature(besideAPKAt: job.destination)
        try output.commit(into: job.cache)
        var report = try reportDraft.get()
        report.entryCount = count
        report.outputSize = size
        report.signingBlockSize = signingBlockSize
        report.verityLeaves = verityLeaves
        report.v4Signature = try v4Signature?.get() ?? nil
        report.sourceStampCertificateSHA256 = stampFile?.data
        return report
    }
}

/// A value made on another thread and taken once by the thread that goes on with it: the `BackgroundValue`
/// that made it keeps only the box, so the taker holds the only reference and appends in place.
final class HandedOver<Value>: @unchecked Sendable {
    // @unchecked Sendable: set before the BackgroundValue is done, taken once after it.
    private var value: Value?
    init(_ value: Value) { self.value = value }

    func take() throws -> Value {
        guard let taken = value else { throw SignError.internalInconsistency("a value handed over was taken twice") }
        value = nil
        return taken
    }
}

/// The JAR signature made on another thread from the entries' v1 digests while the rest is written:
/// MANIFEST.MF's text but the digests (`ManifestTemplate`) while the entries are copied, then the files.
private final class JARSignatureJob: @unchecked Sendable {
    // @unchecked Sendable: `signature` is set on the signing thread only (`start`) and read there.
    /// The template, handed over once: the signature fills its buffers (hundreds of kilobytes each) in place,
    /// which they allow only when nothing else holds them (a `BackgroundValue` keeps its value).
    private let template: BackgroundValue<HandedOver<V1SchemeSigner.ManifestTemplate>>?
    private var signature: BackgroundValue<[JARSignature.File]>?
    private let engine: SigningEngine
    private let plan: DigestPlan

    /// `added`: files written after the entries that the manifest lists too (their digests follow the entries').
    init(engine: SigningEngine, plan: DigestPlan, entries: [KeptEntry], inputManifest: [UInt8]?, added: [String] = []) {
        self.engine = engine
        self.plan = plan
        template = plan.v1.map { digest in
            let names = entries.map(\.entry.name) + added
            let header = engine.signatureFileHeader
            return BackgroundValue {
                HandedOver(try V1SchemeSigner.ManifestTemplate(digestAlgorithm: digest, names: names, inputManifest: inputManifest,
                                                                 signatureFileHeader: header))
            }
        }
    }

    /// Starts the signature from `entryDigests` (nothing without v1). `inline`: made on this thread now (the
    /// digests are there and it has nothing else to do), so that the two deflates and the PKCS #7 signature
    /// it hands out find the worker threads free.
    func start(inline: Bool = false, _ entryDigests: @escaping @Sendable () throws -> [[UInt8]]) {
        guard let template else { return }
        let engine = self.engine, plan = self.plan
        let make: @Sendable () throws -> [JARSignature.File] = {
            let digests = try entryDigests()
            // A key that calls for other digests gets none here: `Signer.run` sees it too and starts again.
            var filled = try template.get().take()
            return try engine.jarSignature(template: &filled, digests: digests, key: try engine.config.key, plan: plan)
        }
        signature = inline ? BackgroundValue(result: Result { try make() }) : BackgroundValue(make)
    }

    /// The files (none without v1).
    func files() throws -> [JARSignature.File] {
        guard template != nil else { return [] }
        guard let signature else { throw SignError.internalInconsistency("the JAR signature was not started") }
        return try signature.get()
    }

    func wait() {
        template?.wait()
        signature?.wait()
    }
}
