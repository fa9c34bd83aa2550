import APKCore
import BinaryXML
import OpenSSLWrapper
import Repack
import SignatureSchemes
import Unpack
import ZlibWrapper

/// Signs APKs with schemes v1, v2 and v3 the way apksig's `ApkSigner.sign` and `DefaultApkSignerEngine` do.
///
/// The steps, for an input `APKArchive`:
/// 1. minSdkVersion from the binary manifest (or `SignerConfig.minSdkVersion`) picks the algorithms;
/// 2. entries are copied raw in local-header order (never recompressed; bytes between records copied too),
///    dropping directories and old JAR signature files; stored entries are re-aligned with Android's 0xd935
///    extra field unless `alignmentPreserved`; the central directory keeps the input's order;
/// 3. v1: the entries' uncompressed data are digested during step 2, then `<NAME>.SF`, `<NAME>.<ALG>` and
///    `META-INF/MANIFEST.MF` are made and deflated (`deflateJARFile`) in the background, and appended after the
///    entries, stamped with the newest kept entry's time;
/// 4. v2/v3: the entries section is digested in 1 MiB chunks as it is written, zeros pad it to a 4096-byte
///    boundary, and the APK Signing Block goes before the central directory.
///
/// An input APK's records are laid out before a byte is copied (`SectionLayout`), and then copied and
/// digested for v1 and v2/v3 on all cores at once (`SectionCopy`: `pread` into each core's buffer, `pwrite`
/// out). Entries from the Repack stage are written in order and digested as they are written
/// (`StreamingChunkDigester`). The output is never re-read and the input never mapped for the copy, so
/// memory stays flat whatever the APK size. Output goes to a temporary file renamed over the destination
/// only when complete; the input is never modified. The same input and RSA key give byte-identical output,
/// and with `alignmentPreserved` (and `libraryPageAlignment` 4096) the same bytes as apksigner from
/// build-tools ≤ 34.
public struct Signer: Sendable {
    public let config: SignerConfig

    public init(config: SignerConfig) { self.config = config }

    /// How to open an APK for signing: as apksig reads its input. Compression methods as Android reads them
    /// (the central directory's rules; any method but stored is deflate: ApkSignerTest
    /// testWeirdZipCompressionMethod, testZipCompressionMethodMismatchBetweenLfhAndCd), ZIP64 size and offset
    /// fields of entries (testSignApk_apkWithZip64Records_signsAndVerifiesSuccessfully), and any entry name:
    /// names are never paths here, and apksig refuses only the CR, LF and NUL a v1 manifest cannot hold
    /// (testV1SigningRejectsInvalidZipEntryNames; `V1SchemeSigner.makeManifest`), so `a\b` or `../x` are signed.
    public static var inputLimits: UnpackLimits {
        var limits = UnpackLimits()
        limits.checksEntryNames = false
        limits.readsLikeAndroid = true
        // A ZIP64 end record holding standard values is read and a standard one written
        // (testSignApk_apkWithZip64Eocd_signsAndVerifiesSuccessfully): the output is an ordinary APK.
        limits.readsZip64EndRecord = true
        return limits
    }

    /// Signs the APK `archive` into `destination`.
    public func sign(_ archive: APKArchive, to destination: String, cache: SigningCache? = nil) throws -> SigningReport {
        let zip = archive.zip
        let manifest = {
            guard let manifest = archive.entry(named: "AndroidManifest.xml") else { return nil as [UInt8]? }
            return try archive.uncompressedData(of: manifest)
        }
        let minSdk = try resolveMinSdkVersion(manifest)
        try checkDebuggable(manifest)
        // The input's signing block (if any) ends the local-file section apksig copies from.
        let inputBlock = try? SigningBlock.locate(in: archive.source, centralDirectoryOffset: zip.centralDirectoryOffset)
        let sectionEnd = inputBlock?.offset ?? zip.centralDirectoryOffset

        // Each entry's central directory record, as stored (apksig re-emits it with only the offset changed).
        var centralRecords: [Range<Int64>] = []
        centralRecords.reserveCapacity(zip.entries.count)
        var cdPosition = zip.centralDirectoryOffset
        for index in zip.entries.indices {
            // Fields, not a copy of the entry (that retains and releases its arrays, 7,600 times over).
            let size = Int64(CentralDirectoryRecordLayout.fixedSize + zip.entries[index].nameBytes.count
                             + zip.entries[index].centralExtra.count + zip.entries[index].comment.count)
            centralRecords.append(cdPosition..<(cdPosition + size))
            cdPosition += size
        }

        // apksig copies records in local-header order and keeps the central directory's order.
        var inputManifest: [UInt8]?
        var items: [Item] = []
        items.reserveCapacity(zip.entries.count)
        // Records not copied: apksig skips their bytes but copies the bytes between records.
        var droppedRecords: [Range<Int64>] = []
        for index in zip.indicesInFileOrder {
            let entry = zip.entries[index]
            if config.schemes.contains(.v1) && entry.name == V1SchemeSigner.manifestEntryName {
                inputManifest = try archive.uncompressedData(of: entry)
            }
            guard Self.isKept(entry.name) else {
                // apksig skips the source stamp and pin list *before* advancing past their records, so their
                // bytes are copied as if they were data between records; other dropped records are skipped.
                if entry.name != "stamp-cert-sha256" && entry.name != "pinlist.meta" { droppedRecords.append(entry.recordRange) }
                continue
            }
            items.append(Item(entry: entry, origin: .archive(centralRecord: centralRecords[index], centralIndex: index)))
        }
        let eocd = try archive.source.bytes(in: zip.endOfCentralDirectory.offset..<archive.source.count)
        // The pages mapped while the archive was opened and its headers read go back: the copy and the digests
        // below read the input with pread (`SectionCopy`), not through the mapping.
        archive.source.discard(0..<archive.source.count)
        return try run(items: items, inputManifest: inputManifest, minSdk: minSdk, destination: destination,
                       archive: archive, sectionEnd: sectionEnd, droppedRecords: droppedRecords,
                       inputEndOfCentralDirectory: eocd, comment: [], cache: cache)
    }

    /// Signs an APK given as entries to write (the Repack stage's output) into `destination`, with `comment`
    /// as the ZIP comment. Entries are written in the given order; their `data` is copied verbatim.
    ///
    /// `cache` (watch mode) keeps the v1 digests of entries between runs, so an unchanged entry is not
    /// inflated and digested again.
    public func sign(entries: [OutputEntry], comment: [UInt8] = [], to destination: String, cache: SigningCache? = nil) throws -> SigningReport {
        let manifest = {
            guard let manifest = entries.first(where: { $0.entry.name == "AndroidManifest.xml" }) else { return nil as [UInt8]? }
            return try Self.uncompressed(manifest)
        }
        let minSdk = try resolveMinSdkVersion(manifest)
        try checkDebuggable(manifest)
        var inputManifest: [UInt8]?
        var items: [Item] = []
        var names = Set<String>(minimumCapacity: entries.count)  // String hashes its bytes in bulk; [UInt8] byte by byte
        for item in entries {
            if config.schemes.contains(.v1) && item.entry.name == V1SchemeSigner.manifestEntryName {
                inputManifest = try Self.uncompressed(item)
            }
            guard Self.isKept(item.entry.name) else { continue }
            guard names.insert(item.entry.name).inserted else { throw SignError.duplicateEntry(item.entry.name) }
            items.append(Item(entry: item.entry, origin: .output(item)))
        }
        return try run(items: items, inputManifest: inputManifest, minSdk: minSdk, destination: destination,
                       archive: nil, sectionEnd: 0, droppedRecords: [], inputEndOfCentralDirectory: nil, comment: comment, cache: cache)
    }

    // MARK: - Engine

    /// One entry to copy into the output.
    /// A class, not a struct: items are passed to workers and looked at several times each, and copying a
    /// ZipEntry (five arrays and a string) every time cost more than the rest of a watch-mode rebuild.
    final class Item: Sendable {
        let entry: ZipEntry
        enum Origin {
            /// An input APK entry: its local record and central directory record are copied from the input.
            case archive(centralRecord: Range<Int64>, centralIndex: Int)
            /// An entry from the Repack stage: headers are encoded from `entry`, data copied from `data`.
            case output(OutputEntry)
        }
        let origin: Origin
        init(entry: ZipEntry, origin: Origin) { self.entry = entry; self.origin = origin }
    }

    /// apksig's `getInputJarEntryOutputPolicy` without preserved signers: only entries the v1 manifest would
    /// list are copied (no directories, no JAR signature files); the source stamp and pin list are
    /// regenerated by apksig, so they are dropped here too.
    static func isKept(_ name: String) -> Bool {
        guard V1SchemeSigner.isDigestNeeded(name) else { return false }
        return name != "stamp-cert-sha256" && name != "pinlist.meta"
    }

    /// apksigner `--debuggable-apk-permitted false` (apksig's `ApkUtils.getDebuggableFromBinaryAndroidManifest`):
    /// the first `<application>` decides; a boolean, string or integer value is debuggable when it reads
    /// "true", "TRUE" or "1" (so `android:debuggable="true"` stored as a string counts, and the integer 5 does
    /// not); a reference is refused, since its value depends on the device's configuration and the same APK
    /// could be debuggable on one device and not on another (ApkSignerTest testDebuggableApk).
    private func checkDebuggable(_ manifest: () throws -> [UInt8]?) throws {
        guard !config.debuggableAPKPermitted else { return }
        guard let bytes = try manifest() else { throw SignError.missingAndroidManifest }
        let summary: ManifestSummary
        do { summary = try ManifestSummary(binaryXML: bytes) } catch {
            throw SignError.debuggableUndetermined("AndroidManifest.xml: \(error)")
        }
        if try Self.apksigDebuggable(summary.debuggableAttribute) { throw SignError.debuggableAPKNotPermitted }
    }

    /// `getDebuggableFromBinaryAndroidManifest` for the attribute's stored value.
    static func apksigDebuggable(_ attribute: XMLTree.Attribute?) throws -> Bool {
        guard let attribute else { return false }
        let text: String
        switch attribute.value {
        case .string(let string): text = string
        case .typed(.intBoolean, let data): text = data != 0 ? "true" : "false"
        case .typed(.intDecimal, let data), .typed(.intHex, let data): text = String(Int32(bitPattern: data))
        case .typed(.reference, let id), .typed(.dynamicReference, let id):
            throw SignError.debuggableUndetermined("android:debuggable refers to the resource 0x\(String(id, radix: 16)); only a literal true or false can be checked")
        case .typed(let type, _):
            throw SignError.debuggableUndetermined("android:debuggable has a value of type \(type); only boolean, string and integer values can be checked")
        }
        return text == "true" || text == "TRUE" || text == "1"
    }

    /// apksig's `getMinSdkVersionFromBinaryAndroidManifest` (`SDKVersion.minSdkVersion(of:)`), unless
    /// `--min-sdk-version` overrides it.
    private func resolveMinSdkVersion(_ manifest: () throws -> [UInt8]?) throws -> (level: Int, overridden: Bool) {
        if let level = config.minSdkVersion { return (level, true) }
        guard let bytes = try manifest() else { throw SignError.missingAndroidManifest }
        let summary: ManifestSummary
        do { summary = try ManifestSummary(binaryXML: bytes) } catch {
            throw SignError.unreadableMinSdkVersion("AndroidManifest.xml: \(error)")
        }
        switch SDKVersion.minSdkVersion(of: summary.usesSDKMinSdkVersionAttributes) {
        case .success(let level): return (level, false)
        case .failure(.unsupportedCodename(let codename)): throw SignError.codenameMinSdkVersion(codename)
        case .failure(.unsupportedValueType(let type)):
            throw SignError.unreadableMinSdkVersion("android:minSdkVersion has a value of type \(type), not an integer")
        }
    }

    private func run(items: [Item], inputManifest: [UInt8]?, minSdk: (level: Int, overridden: Bool), destination: String,
                     archive: APKArchive?, sectionEnd: Int64, droppedRecords: [Range<Int64>], inputEndOfCentralDirectory: [UInt8]?,
                     comment: [UInt8], cache: SigningCache?, plannedDigests: DigestPlan? = nil) throws -> SigningReport {
        let schemes = config.schemes
        guard !schemes.isEmpty else { throw SignError.noSchemes }
        // Android before 7.0 (API 24) reads only JAR signatures, and Android 7 and 8 (API 24-27) no v3 block: an
        // APK without v1 below 24, or with v3 alone below 28, does not install everywhere its manifest says.
        // apksigner signs it as told, and so does apkpatch (a drop-in must not refuse what a CI script asks of
        // apksigner), but the report says so and how out.
        var warnings: [SigningWarning] = []
        if !schemes.contains(.v1) && minSdk.level < 24 { warnings.append(.noJARSignatureBelowAPI24(minSdkVersion: minSdk.level)) }
        if schemes == [.v3] && minSdk.level < 28 { warnings.append(.v3OnlyBelowAPI28(minSdkVersion: minSdk.level)) }
        // The 0xd935 alignment field stores the multiple as a uint16 (apksig refuses larger values too).
        guard (1...0xFFFF).contains(config.libraryPageAlignment) else {
            throw SignError.invalidOption("library page alignment \(config.libraryPageAlignment) does not fit Android's alignment extra field (at most 65535 bytes): use 4096 or 16384")
        }
        let concurrency = config.concurrency > 0 ? config.concurrency : ContentDigester.defaultConcurrency

        // The digests depend on the key. A key still being decrypted (PBKDF2) is not waited for: the entries
        // are copied and digested with the digests most keys call for, and in the rare case the key calls
        // for others (RSA over 3072 bits, EC over 256) the whole run starts again with those.
        let digestPlan: DigestPlan
        if let key = config.keySupply.ready {
            digestPlan = try DigestPlan(key: key, schemes: schemes, minSdkVersion: minSdk.level)
        } else if let planned = plannedDigests ?? (cache == nil ? DigestPlan.likely(schemes: schemes, minSdkVersion: minSdk.level) : nil) {
            digestPlan = planned
        } else {
            digestPlan = try DigestPlan(key: try config.key, schemes: schemes, minSdkVersion: minSdk.level)
        }
        let v1Digest = digestPlan.v1
        // A ZIP without ZIP64 holds 65,535 entries. apksig (since its ZIP64 support, ApkSignerTest
        // testSignApk_apkWithExactly64kFiles_signsAndVerifiesSuccessfully) writes a ZIP64 end record when its
        // three JAR signature files pass that, but Android's package manager reads ZIP64 only in recent
        // releases, so such an APK would not install where its minSdkVersion says it does: refused up front,
        // before any copying, with the way out.
        let jarFileCount = v1Digest == nil ? 0 : 3
        if items.count <= 0xFFFF && items.count + jarFileCount > 0xFFFF {
            throw SignError.tooLarge("its \(items.count) entries and the \(jarFileCount) JAR signature files pass the 65,535 entries a ZIP holds without ZIP64, which older Android versions cannot read: sign without v1 (--v1-signing-enabled false, for minSdkVersion 24 and up) or remove \(items.count + jarFileCount - 0xFFFF) entries")
        }

        // The JAR signature is made in the background from the entries' digests: MANIFEST.MF, the .SF file
        // and its PKCS #7 block, each deflated.
        var apkSchemeIDs: [Int] = []
        if schemes.contains(.v2) { apkSchemeIDs.append(2) }
        if schemes.contains(.v3) { apkSchemeIDs.append(3) }
        // All of MANIFEST.MF and of the .SF sections but the digests, written while the entries are copied.
        let manifestTemplate: BackgroundValue<V1SchemeSigner.ManifestTemplate>? = v1Digest.map { digest in
            let names = items.map(\.entry.name)
            return BackgroundValue { try V1SchemeSigner.ManifestTemplate(digestAlgorithm: digest, names: names, inputManifest: inputManifest) }
        }
        defer { manifestTemplate?.wait() }
        var jarSignature: BackgroundValue<[JARFile]>?
        /// `inline`: made on this thread now (the digests are there and it has nothing else to do), so that the
        /// two deflates and the PKCS #7 signature it hands out find the worker threads free.
        func startJARSignature(inline: Bool = false, _ entryDigests: @escaping @Sendable () throws -> [[UInt8]]) {
            guard let v1Digest else { return }
            let createdBy = config.createdBy
            let schemeIDs = apkSchemeIDs
            let jarLevel = config.jarSignatureCompressionLevel
            let keySupply = config.keySupply
            let v1SignerName = config.v1SignerName
            let make: @Sendable () throws -> [JARFile] = {
                let digests = try entryDigests()
                let key = try keySupply.get()
                // A key that needs other digests: the main thread sees it too and starts again.
                guard try DigestPlan(key: key, schemes: schemes, minSdkVersion: minSdk.level).v1 == v1Digest else { return [] }
                return try Self.makeJARSignature(template: try manifestTemplate!.get(), digests: digests,
                                                 signerName: try V1SchemeSigner.safeSignerName(v1SignerName ?? key.name),
                                                 key: key, apkSchemeIDs: schemeIDs, createdBy: createdBy,
                                                 level: jarLevel)
            }
            jarSignature = inline ? BackgroundValue(result: Result { try make() }) : BackgroundValue(make)
        }
        // Whatever happens below, the workers must finish before `items` and the mapping go away.
        defer { jarSignature?.wait() }

        let blockDigestAlgorithms = digestPlan.block
        let digestsBlock = schemes.contains(.v2) || schemes.contains(.v3)
        let output: SigningOutput
        // (position in the central directory, record) for the copied entries.
        var centralRecords: [(order: Int, record: CentralRecord)] = []
        centralRecords.reserveCapacity(items.count)
        var centralDirectoryCount = 0
        var newest: DOSTimestamp?
        var realigned = 0
        var sectionTail: [UInt8] = []
        func noteCopied(_ entry: ZipEntry) {
            centralDirectoryCount += 1
            let stamp = DOSTimestamp(date: entry.lastModifiedDate, time: entry.lastModifiedTime)
            if newest == nil || newest! < stamp { newest = stamp }
        }

        var copiedEntryDigests: [[UInt8]]?
        if let archive {
            // An input APK: where each record goes is known before a byte is copied (only stored entries
            // whose alignment changes get a new local header), so the cores copy and digest the entries
            // section together (`SectionCopy`), v1 digests included.
            let file = try OutputFile(destination: destination)
            // The input's size, plus the v1 files (two lines of about 70 bytes per entry in MANIFEST.MF and
            // in the .SF file, before deflate) and the signing block.
            try file.reserve(archive.source.count + Int64(items.count) * 160 + (1 << 16))
            var layout = SectionLayout()
            // At most five segments per entry (a re-aligned header is four around its data), and the gaps.
            layout.reserveCapacity(items.count * 5 + droppedRecords.count + 1)
            var recordStarts: [Int64] = [], dataStarts: [Int64] = []
            recordStarts.reserveCapacity(items.count)
            dataStarts.reserveCapacity(items.count)
            // The input bytes before `offset` that lie outside records are copied, dropped records skipped
            // (as apksig: "unprocessed data" between records is output verbatim).
            var inputPosition: Int64 = 0
            var nextDropped = 0
            func appendInputGaps(upTo offset: Int64) {
                while nextDropped < droppedRecords.count && droppedRecords[nextDropped].lowerBound < offset {
                    let dropped = droppedRecords[nextDropped]
                    if dropped.lowerBound > inputPosition { layout.append(input: inputPosition..<dropped.lowerBound) }
                    inputPosition = max(inputPosition, dropped.upperBound)
                    nextDropped += 1
                }
                if offset > inputPosition {
                    layout.append(input: inputPosition..<offset)
                    inputPosition = offset
                }
            }
            for item in items {
                guard case .archive(let centralRecord, let centralIndex) = item.origin else {
                    throw SignError.internalInconsistency("an input APK's items are its entries")
                }
                let entry = item.entry
                appendInputGaps(upTo: entry.localHeaderOffset)
                inputPosition = entry.recordRange.upperBound
                let headerOffset = layout.count
                try Self.checkOffset(headerOffset)
                recordStarts.append(headerOffset)
                if let extra = alignedExtra(for: entry, inputHeaderOffset: entry.localHeaderOffset,
                                            outputHeaderOffset: headerOffset, inputDataOffset: entry.dataOffset) {
                    guard extra.count <= Int(UInt16.max) else { throw SignError.tooLarge("extra field of \(entry.name.debugDescription)") }
                    // The input's header with the new extra field's length (bytes 28-29), then the new field
                    // (the header's bytes are read when copied, not now).
                    let start = entry.localHeaderOffset
                    layout.append(input: start..<(start + 28))
                    layout.append(literal: UInt16(extra.count))
                    layout.append(input: (start + 30)..<(start + Int64(LocalFileHeaderLayout.fixedSize + entry.nameBytes.count)))
                    layout.append(literal: extra)
                    dataStarts.append(layout.count)
                    layout.append(input: entry.dataOffset..<entry.recordRange.upperBound)
                    realigned += 1
                } else {
                    dataStarts.append(headerOffset + (entry.dataOffset - entry.localHeaderOffset))
                    layout.append(input: entry.recordRange)
                }
                centralRecords.append((centralIndex, .input(centralRecord, headerOffset: UInt32(headerOffset))))
                noteCopied(entry)
            }
            appendInputGaps(upTo: sectionEnd)
            let copy = SectionCopy(layout: layout, source: archive.source, items: items, recordStarts: recordStarts,
                                   dataStarts: dataStarts, entryDigest: v1Digest,
                                   chunkAlgorithms: digestsBlock ? ContentDigestAlgorithm.allCases.filter { blockDigestAlgorithms.contains($0) } : [])
            let copied = try copy.run(into: file, concurrency: concurrency, key: config.keySupply)
            copiedEntryDigests = copied.entryDigests
            // The section's partial last chunk is written and digested with the JAR signature files after it.
            try file.skip(to: copied.chunks.byteCount)
            output = try SigningOutput(file: file, algorithms: digestsBlock ? blockDigestAlgorithms : [],
                                       resuming: digestsBlock ? copied.chunks : nil)
            sectionTail = copied.tail
        } else {
            // Entries from the Repack stage: the v1 digests on all cores in the background, while this thread
            // writes the entries and streams them to the v2/v3 digester (no re-read, no mapping of the
            // output). In watch mode the output is one of the cache's two recycled files: records identical to
            // what that file already holds at the same offset are skipped, not written, and the digests of the
            // whole 1 MiB chunks before the first change are those of the file's last build.
            if let v1Digest {
                let keySupply = config.keySupply
                startJARSignature {
                    try Self.digestEntries(items, algorithm: v1Digest, concurrency: concurrency, cache: cache, key: keySupply)
                }
            }
            if let cache {
                let recycled = try cache.recycler(for: destination).open()
                let previous = recycled.reused ? cache.takeLayout(slot: recycled.slot) : nil
                output = try SigningOutput(recycled: recycled, previous: previous?.algorithms == blockDigestAlgorithms ? previous : nil,
                                           algorithms: digestsBlock ? blockDigestAlgorithms : [])
            } else {
                let file = try OutputFile(destination: destination)
                let base = Repacker.estimatedSize(of: items.compactMap { if case .output(let entry) = $0.origin { return entry } else { return nil } })
                try file.reserve(base + Int64(items.count) * 160 + (1 << 16))
                output = try SigningOutput(file: file, algorithms: digestsBlock ? blockDigestAlgorithms : [])
            }
        }
        defer { output.abandon() }
        if !sectionTail.isEmpty { try output.write(sectionTail) }
        if archive == nil {
            for item in items {
                // A key that failed to load (a wrong password) ends the copy now, not after the last entry.
                try config.keySupply.throwIfFailed()
                guard case .output(let outputEntry) = item.origin else { throw SignError.internalInconsistency("entries to write are the Repack stage's") }
                let entry = item.entry
                let headerOffset = output.position
                let dataOffsetWithCurrentExtra = headerOffset + Int64(LocalFileHeaderLayout.fixedSize + entry.nameBytes.count + entry.localExtra.count)
                var written = entry
                if let extra = alignedExtra(for: entry, inputHeaderOffset: entry.localHeaderOffset,
                                            outputHeaderOffset: headerOffset, inputDataOffset: dataOffsetWithCurrentExtra,
                                            keepsAlignedData: true) {
                    written.localExtra = extra
                    realigned += 1
                }
                guard written.localExtra.count <= Int(UInt16.max) else { throw SignError.tooLarge("extra field of \(entry.name.debugDescription)") }
                guard outputEntry.data.count == entry.compressedSize else {
                    throw SignError.internalInconsistency("entry \(entry.name.debugDescription) has \(outputEntry.data.count) bytes of data but declares \(entry.compressedSize)")
                }
                let header = written.encodedLocalHeader(extra: written.localExtra)
                if try !output.skipIfUnchanged(header: header, data: outputEntry.data) {
                    try output.write(header)
                    var sink = output
                    try outputEntry.data.feed(0..<outputEntry.data.count, into: &sink)
                }
                try Self.checkOffset(headerOffset)
                centralRecords.append((centralRecords.count, .encoded(written.encodedCentralDirectoryRecord(localHeaderOffset: headerOffset))))
                noteCopied(entry)
            }
        }
        try output.endOfReusableRecords()
        if let digests = copiedEntryDigests { startJARSignature(inline: true) { digests } }

        // From here on the key is needed.
        let key = try config.key
        let actualDigests = try DigestPlan(key: key, schemes: schemes, minSdkVersion: minSdk.level)
        if actualDigests != digestPlan {
            jarSignature?.wait()
            output.abandon()
            return try run(items: items, inputManifest: inputManifest, minSdk: minSdk, destination: destination, archive: archive,
                           sectionEnd: sectionEnd, droppedRecords: droppedRecords, inputEndOfCentralDirectory: inputEndOfCentralDirectory,
                           comment: comment, cache: cache, plannedDigests: actualDigests)
        }
        guard let certificate = key.certificates.first else { throw SignError.noCertificate }
        let certificatePublicKey = try certificate.publicKey()
        // v2/v3 algorithms (getSuggestedSignatureAlgorithms; verity off, as the apksigner default).
        let blockAlgorithms = SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(certificatePublicKey.algorithm),
                                                           keySize: certificatePublicKey.bitSize)
        let v1Name = v1Digest == nil ? nil : try V1SchemeSigner.safeSignerName(config.v1SignerName ?? key.name)

        // The copied entries' central directory records, while the JAR signature is still being made.
        var centralDirectoryBytes = try Self.centralDirectory(centralRecords, then: [], input: archive?.source)

        // v1 signature entries.
        var newCentralRecords: [[UInt8]] = []
        if v1Digest != nil {
            guard let jarSignature else { throw SignError.internalInconsistency("the JAR signature was not started") }
            let files = try jarSignature.get()
            let stamp = newest ?? DOSTimestamp.apksigDefault
            for file in files {
                let headerOffset = output.position
                try Self.checkOffset(headerOffset)
                let (local, central) = try Self.deflatedRecords(name: file.name, data: file.data, compressed: file.compressed,
                                                                crc: file.crc, timestamp: stamp, headerOffset: headerOffset)
                try output.write(local)
                newCentralRecords.append(central)
                centralDirectoryCount += 1
            }
        }

        // Central directory and EOCD (the input's EOCD with new counts, size and offset, as apksig does): the
        // copied entries in their input central directory order, then the new v1 files.
        for record in newCentralRecords { centralDirectoryBytes += record }
        guard centralDirectoryCount <= 0xFFFF else { throw SignError.tooLarge("\(centralDirectoryCount) entries need ZIP64, which APKs cannot use") }
        func endOfCentralDirectory(offset: Int64) throws -> [UInt8] {
            var eocd: [UInt8]
            if let input = inputEndOfCentralDirectory {
                eocd = input
            } else {
                eocd = EndOfCentralDirectory(entryCount: 0, centralDirectorySize: 0, centralDirectoryOffset: 0, comment: comment).encoded()
            }
            eocd[8] = UInt8(centralDirectoryCount & 0xff); eocd[9] = UInt8(centralDirectoryCount >> 8)
            eocd[10] = eocd[8]; eocd[11] = eocd[9]
            try Self.patchUInt32(&eocd, at: 12, to: Int64(centralDirectoryBytes.count), what: "central directory size")
            try Self.patchUInt32(&eocd, at: 16, to: offset, what: "central directory offset")
            return eocd
        }

        var signingBlockSize = 0
        if schemes.contains(.v2) || schemes.contains(.v3) {
            let padding = Int((4096 - output.position % 4096) % 4096)
            try output.writeZeros(padding)
            let entriesEnd = output.position
            let finished = try output.finishDigests()
            let digests = try ContentDigester.digests(entries: finished, centralDirectory: centralDirectoryBytes,
                                                      endOfCentralDirectory: try endOfCentralDirectory(offset: entriesEnd),
                                                      algorithms: blockDigestAlgorithms)
            // The v2 and v3 blocks are signed at the same time (a private-key operation each, ~1 ms for RSA 2048).
            let versions = [(SignatureScheme.v2, SignatureSchemeVersion.v2), (.v3, .v3)].filter { schemes.contains($0.0) }.map(\.1)
            let v3Enabled = schemes.contains(.v3)
            let rotation = try config.rotation.map { try RotationSigner(rotation: $0, algorithms: blockAlgorithms) }
            let pairs = try Parallel.map(versions.count, concurrency: concurrency) { index in
                if versions[index] == .v3, let rotation {
                    return try SchemeBlockSigner.makePair(version: .v3, key: rotation.key, algorithms: rotation.algorithms,
                                                          contentDigests: digests, v3Enabled: true, v3Attributes: rotation.attributes)
                }
                return try SchemeBlockSigner.makePair(version: versions[index], key: key, algorithms: blockAlgorithms,
                                                      contentDigests: digests, v3Enabled: v3Enabled)
            }
            let block = SigningBlock(pairs: pairs).encoded()
            try output.writeUndigested(block)
            signingBlockSize = block.count
        }
        let centralDirectoryOffset = output.position
        try Self.checkOffset(centralDirectoryOffset)
        try output.writeUndigested(centralDirectoryBytes)
        try output.writeUndigested(try endOfCentralDirectory(offset: centralDirectoryOffset))
        let size = output.position
        try output.commit(into: cache)

        let schemesUsed = schemes.sorted()
        return SigningReport(
            outputPath: destination, schemes: schemesUsed, minSdkVersion: minSdk.level, minSdkVersionOverridden: minSdk.overridden,
            v1DigestAlgorithm: v1Digest, v1SignerName: v1Name,
            signatureAlgorithms: (schemes.contains(.v2) || schemes.contains(.v3)) ? blockAlgorithms : [],
            certificateSHA256: certificate.fingerprint(.sha256), certificateSubject: certificate.subjectDN,
            entryCount: centralDirectoryCount, realignedEntryCount: realigned, outputSize: size,
            signingBlockSize: signingBlockSize, warnings: warnings)
    }

    /// The digests a key calls for at a minSdkVersion: v1's (DefaultApkSignerEngine.createV1SignerConfigs) and
    /// the v2/v3 content digests of its suggested signature algorithms (verity off, as the apksigner default).
    struct DigestPlan: Equatable {
        var v1: DigestAlgorithm?
        var block: Set<ContentDigestAlgorithm>

        init(v1: DigestAlgorithm?, block: Set<ContentDigestAlgorithm>) { self.v1 = v1; self.block = block }

        init(key: SignerKey, schemes: Set<SignatureScheme>, minSdkVersion: Int) throws {
            guard let certificate = key.certificates.first else { throw SignError.noCertificate }
            let publicKey = try certificate.publicKey()
            v1 = schemes.contains(.v1) ? try V1SchemeSigner.digestAlgorithm(for: publicKey.algorithm, minSdkVersion: minSdkVersion) : nil
            block = Set(SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(publicKey.algorithm), keySize: publicKey.bitSize)
                .map(\.contentDigestAlgorithm))
        }

        /// What RSA keys up to 3072 bits, EC P-256 and DSA call for; nil where the key type decides (v1 below
        /// API 21: SHA-1 for RSA below 18 and DSA below 21).
        static func likely(schemes: Set<SignatureScheme>, minSdkVersion: Int) -> DigestPlan? {
            if schemes.contains(.v1) && minSdkVersion < 21 { return nil }
            return DigestPlan(v1: schemes.contains(.v1) ? .sha256 : nil, block: [.chunkedSHA256])
        }
    }

    // MARK: - Alignment (apksig ApkSigner.outputInputJarEntryLfhRecord)

    /// The new local extra field for `entry`, or nil to keep its record as it is.
    ///
    /// apksig: compressed entries are never aligned; the multiple is the one in an existing 0xd935 field,
    /// else the library page size for `.so`, else 4. With `alignmentPreserved` an entry stays as it is when
    /// it keeps its position modulo the multiple, or when its data was not aligned in the input either;
    /// otherwise (and always by default since build-tools 35) stored entries get a fresh 0xd935 field.
    private func alignedExtra(for entry: ZipEntry, inputHeaderOffset: Int64, outputHeaderOffset: Int64,
                              inputDataOffset: Int64, keepsAlignedData: Bool = false) -> [UInt8]? {
        let preserved = config.alignmentPreserved
        if inputHeaderOffset == outputHeaderOffset && preserved && !keepsAlignedData { return nil }
        let multiple = Int64(alignmentMultiple(for: entry))
        if multiple <= 1 { return nil }
        if preserved {
            if keepsAlignedData {
                if inputDataOffset % multiple == 0 { return nil }
            } else {
                if inputHeaderOffset % multiple == outputHeaderOffset % multiple { return nil }
                if inputDataOffset % multiple != 0 { return nil }
            }
        }
        let extraStart = outputHeaderOffset + Int64(LocalFileHeaderLayout.fixedSize + entry.nameBytes.count)
        return Self.apksigAlignmentExtra(original: entry.localExtra, extraStart: extraStart, multiple: Int(multiple))
    }

    /// `getInputJarEntryDataAlignmentMultiple`.
    private func alignmentMultiple(for entry: ZipEntry) -> Int {
        if entry.method != .stored { return 1 }
        if let multiple = ExtraField.alignmentMultiple(in: entry.localExtra) { return multiple }
        return entry.name.hasSuffix(".so") ? config.libraryPageAlignment : 4
    }

    /// `createExtraFieldToAlignData`: the original fields minus old padding ((0,0) records and 0xd935), then a
    /// 0xd935 field whose zero padding makes the data start on `multiple`.
    static func apksigAlignmentExtra(original: [UInt8], extraStart: Int64, multiple: Int) -> [UInt8] {
        var result: [UInt8] = []
        ExtraField.forEachRecord(in: original) { id, start, data in
            if !((id == 0 && data.isEmpty) || id == AlignmentExtraLayout.headerID) {
                result += original[start..<data.upperBound]
            }
            return true
        }
        let dataMinStart = extraStart + Int64(result.count) + Int64(AlignmentExtraLayout.minimumSize)
        let padding = Int((Int64(multiple) - dataMinStart % Int64(multiple)) % Int64(multiple))
        // Appended byte by byte into one allocation: this runs for every stored entry.
        result.reserveCapacity(result.count + 6 + padding)
        let id = AlignmentExtraLayout.headerID
        let size = UInt16(2 + padding)
        let value = UInt16(truncatingIfNeeded: multiple)
        for half in [id, size, value] {
            result.append(UInt8(half & 0xff))
            result.append(UInt8(half >> 8))
        }
        result.append(contentsOf: repeatElement(0, count: padding))
        return result
    }

    // MARK: - Records for new entries (apksig LocalFileRecord/CentralDirectoryRecord.*WithDeflateCompressedData)

    /// Local record (header + deflated data) and central directory record of a v1 file: raw deflate,
    /// version 20, UTF-8 flag, no extra fields, no attributes.
    static func deflatedRecords(name: String, data: [UInt8], compressed: [UInt8], crc: UInt32, timestamp: DOSTimestamp,
                                headerOffset: Int64) throws -> ([UInt8], [UInt8]) {
        let nameBytes = Array(name.utf8)
        var local = LittleEndianWriter(capacity: 30 + nameBytes.count + compressed.count)
        local.write(LocalFileHeaderLayout.signature)
        local.write(UInt16(20))
        local.write(ZipFlags.utf8Names)
        local.write(CompressionMethod.deflated.rawValue)
        local.write(timestamp.time)
        local.write(timestamp.date)
        local.write(crc)
        local.write(UInt32(compressed.count))
        local.write(UInt32(data.count))
        local.write(UInt16(nameBytes.count))
        local.write(UInt16(0))
        local.write(bytes: nameBytes)
        local.write(bytes: compressed)
        var central = LittleEndianWriter(capacity: 46 + nameBytes.count)
        central.write(CentralDirectoryRecordLayout.signature)
        central.write(UInt16(20))
        central.write(UInt16(20))
        central.write(ZipFlags.utf8Names)
        central.write(CompressionMethod.deflated.rawValue)
        central.write(timestamp.time)
        central.write(timestamp.date)
        central.write(crc)
        central.write(UInt32(compressed.count))
        central.write(UInt32(data.count))
        central.write(UInt16(nameBytes.count))
        central.write(UInt16(0))  // extra
        central.write(UInt16(0))  // comment
        central.write(UInt16(0))  // disk
        central.write(UInt16(0))  // internal attributes
        central.write(UInt32(0))  // external attributes
        central.write(UInt32(headerOffset))
        central.write(bytes: nameBytes)
        return (local.bytes, central.bytes)
    }

    /// The JAR signature files in apksig's order (`<NAME>.SF`, `<NAME>.<ALG>`, `META-INF/MANIFEST.MF`), each
    /// with its deflated form (`deflateJARFile` at `level`). MANIFEST.MF is deflated while the .SF file is
    /// made, and the .SF file while it is signed.
    static func makeJARSignature(template: V1SchemeSigner.ManifestTemplate, digests: [[UInt8]], signerName: String,
                                 key: SignerKey, apkSchemeIDs: [Int], createdBy: String, level: Int32 = 9) throws -> [JARFile] {
        var template = template
        let digestAlgorithm = template.digestAlgorithm
        let manifest = template.filled(with: digests)
        let manifestContents = manifest.contents
        let deflatedManifest = BackgroundValue<[UInt8]> { try Self.deflateJARFile(manifestContents, level: level) }
        defer { deflatedManifest.wait() }
        // The .SF file is deflated here while its PKCS #7 signature is made.
        var deflatedSignatureFile: [UInt8] = []
        let files = try V1SchemeSigner.signatureEntries(signerName: signerName, key: key.privateKey, certificates: key.certificates,
                                                        digestAlgorithm: digestAlgorithm, manifest: manifest, template: template,
                                                        apkSchemeIDs: apkSchemeIDs, createdBy: createdBy) { signatureFile in
            deflatedSignatureFile = try Self.deflateJARFile(signatureFile, level: level)
        }
        let deflatedBlock = try Self.deflateJARFile(files[1].data, level: level)
        let compressed = [deflatedSignatureFile, deflatedBlock, try deflatedManifest.get()]
        return zip(files, compressed).map { JARFile(name: $0.name, data: $0.data, compressed: $1, crc: CRC32.checksum($0.data)) }
    }

    /// A JAR signature file, deflated, with the CRC-32 of its uncompressed bytes.
    struct JARFile {
        var name: String
        var data: [UInt8]
        var compressed: [UInt8]
        var crc: UInt32
    }

    /// zlib at level 9, as apksig (so the bytes are apksigner's); libdeflate, faster, at any other level.
    static func deflateJARFile(_ data: [UInt8], level: Int32) throws -> [UInt8] {
        level == 9 ? try Deflate.compress(data, level: 9) : try Deflate.compressFast(data, level: level)
    }

    /// A copied entry's central directory record: the input's bytes with a new local header offset, or
    /// (entries from the Repack stage) encoded.
    enum CentralRecord {
        case input(Range<Int64>, headerOffset: UInt32)
        case encoded([UInt8])
    }

    /// The central directory: `records` by `order`, then `appended`, written into one buffer (the input's
    /// records are copied from its mapping with the offset patched in place, not one array per entry).
    static func centralDirectory(_ records: [(order: Int, record: CentralRecord)], then appended: [[UInt8]],
                                 input: (any DataSource)?) throws -> [UInt8] {
        var size = appended.reduce(0) { $0 + $1.count }
        var inOrder = true
        for (index, item) in records.enumerated() {
            switch item.record {
            case .input(let range, _): size += Int(range.count64)
            case .encoded(let bytes): size += bytes.count
            }
            if index > 0 && records[index - 1].order > item.order { inOrder = false }
        }
        let order = inOrder ? nil : records.indices.sorted { records[$0].order < records[$1].order }
        var result = [UInt8]()
        result.reserveCapacity(size)
        for position in records.indices {
            switch records[order?[position] ?? position].record {
            case .input(let range, let headerOffset):
                guard let input else { throw SignError.internalInconsistency("a copied central directory record without its input") }
                let start = result.count
                try input.withBytes(in: range) { result.append(contentsOf: $0) }
                try patchLocalHeaderOffset(&result, record: start, to: headerOffset)
            case .encoded(let bytes):
                result.append(contentsOf: bytes)
            }
        }
        for bytes in appended { result.append(contentsOf: bytes) }
        return result
    }

    /// Writes the local header offset of the central directory record at `start`. A record whose offset field
    /// is 0xFFFFFFFF keeps the marker and gets the offset in its ZIP64 extra field instead (after the values of
    /// the sizes that are 0xFFFFFFFF), so ZIP64 records stay consistent as apksig keeps them
    /// (ApkSignerTest testSignApk_apkWithZip64Records_signsAndVerifiesSuccessfully).
    static func patchLocalHeaderOffset(_ cd: inout [UInt8], record start: Int, to offset: UInt32) throws {
        func uint16(_ at: Int) -> Int { Int(cd[at]) | Int(cd[at + 1]) << 8 }
        func isMarker(_ at: Int) -> Bool { cd[at] == 0xff && cd[at + 1] == 0xff && cd[at + 2] == 0xff && cd[at + 3] == 0xff }
        guard isMarker(start + 42) else {
            withUnsafeBytes(of: offset.littleEndian) { for i in 0..<4 { cd[start + 42 + i] = $0[i] } }
            return
        }
        // ZipArchive has checked that the field exists and holds the values the markers call for.
        var i = start + 46 + uint16(start + 28)
        let extraEnd = i + uint16(start + 30)
        while i + 4 <= extraEnd {
            let size = uint16(i + 2)
            if uint16(i) == 0x0001 {
                let position = i + 4 + 8 * ((isMarker(start + 24) ? 1 : 0) + (isMarker(start + 20) ? 1 : 0))
                guard position + 8 <= i + 4 + size else { break }
                withUnsafeBytes(of: UInt64(offset).littleEndian) { for k in 0..<8 { cd[position + k] = $0[k] } }
                return
            }
            i += 4 + size
        }
        throw SignError.internalInconsistency("a ZIP64 central directory record without the offset in its ZIP64 field")
    }

    static func checkOffset(_ offset: Int64) throws {
        guard offset <= Int64(UInt32.max) else { throw SignError.tooLarge("it passes 4 GiB, which needs ZIP64, which APKs cannot use") }
    }

    static func patchUInt32(_ bytes: inout [UInt8], at offset: Int, to value: Int64, what: @autoclosure () -> String) throws {
        guard let value = UInt32(exactly: value) else { throw SignError.tooLarge("\(what()) \(value) does not fit 32 bits (ZIP64 is not allowed in APKs)") }
        let le = value.littleEndianBytes
        for i in 0..<4 { bytes[offset + i] = le[i] }
    }

    // MARK: - v1 entry digests

    /// Digests of the uncompressed data of every item (entries of the Repack stage), computed `concurrency`
    /// entries at a time.
    static func digestEntries(_ items: [Item], algorithm: DigestAlgorithm, concurrency: Int,
                              cache: SigningCache? = nil, key: BackgroundValue<SignerKey>? = nil) throws -> [[UInt8]] {
        // One digest context per worker, reset for each entry.
        let digest: @Sendable (Int, Digest) throws -> [UInt8] = { index, hasher in
            // A key that failed to load ends the digests too: its error is what the run reports.
            try key?.throwIfFailed()
            let cacheKey = cache.map { _ in SigningCache.Key(items[index].entry, algorithm: algorithm) }
            if let cacheKey, let cached = cache?.digest(for: cacheKey) { return cached }
            guard case .output(let outputEntry) = items[index].origin else {
                throw SignError.internalInconsistency("an input APK's entries are digested as they are copied")
            }
            hasher.reset()
            try Self.withUncompressedChunks(of: outputEntry) { hasher.update($0) }
            let digest = hasher.finish()
            if let cacheKey { cache?.store(digest, for: cacheKey) }
            return digest
        }
        if concurrency <= 1 || items.count < 2 {
            let hasher = Digest(algorithm)
            return try items.indices.map { try digest($0, hasher) }
        }
        // Runs of neighbouring entries, each read front to back: the kernel maps pages around every fault,
        // and a worker that jumped around the file would leave those neighbours resident until their
        // turn. Biggest runs first so the cores finish together.
        let batches = Self.contiguousBatches(items.map(\.entry.uncompressedSize), count: concurrency * 8)
        let results = Parallel.Slots<[UInt8]>(count: items.count, repeating: [])
        try Parallel.forEach(batches.count, concurrency: concurrency) { batch in
            let run = batches[batch]
            let hasher = Digest(algorithm)
            // Deflated entries of the pipeline's plan were inflated through their mapping: give the run's
            // pages back once, rather than per entry, which would fault big folios back in.
            defer { Self.discardMappedPages(of: items[run]) }
            for index in run { results[index] = try digest(index, hasher) }
        }
        return results.values
    }

    /// Gives back the mapped input pages under the data of `items` (entries of the pipeline's plan).
    static func discardMappedPages(of items: ArraySlice<Item>) {
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

    /// Streams an output entry's plaintext: `uncompressed` when known, else its stored data, else inflated.
    static func withUncompressedChunks(of item: OutputEntry, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let plain = item.uncompressed {
            try plain.stream(0..<plain.count, chunkSize: 1 << 20, body)
            return
        }
        switch item.entry.method {
        case .stored:
            // Streamed (pread from a mapped input): a 400 MB stored asset must not become 400 MB resident.
            try item.data.stream(0..<item.data.count, chunkSize: 1 << 20, body)
        case .deflated:
            try item.data.withBytes(in: 0..<item.data.count) { raw in
                try Inflate.inflate(raw, expectedSize: item.entry.uncompressedSize, body)
            }
        }
    }

    static func uncompressed(_ item: OutputEntry) throws -> [UInt8] {
        // Only manifests come through here; a 1 MB APK whose AndroidManifest.xml inflates to 1 GB must not cost
        // 1 GB (the bound Repack and Unpack apply to in-memory reads).
        guard item.entry.uncompressedSize <= OutputEntry.maxInMemorySize else {
            throw RepackError.inconsistentEntry(item.entry.name, "\(item.entry.uncompressedSize) bytes uncompressed, over the \(OutputEntry.maxInMemorySize >> 20) MiB limit for an entry read into memory (a zip bomb or a corrupt header)")
        }
        var out: [UInt8] = []
        try withUncompressedChunks(of: item) { out.append(contentsOf: $0) }
        return out
    }
}

/// What is kept between signing runs of the same APK (watch mode): the v1 digest of each entry's
/// uncompressed data, keyed by its name, CRC-32, sizes and method, so an unchanged entry is not inflated and
/// hashed again; and the two recycled output files with the record layout and chunk digests of each, so an
/// unchanged record is neither written nor digested again. Thread-safe.
public final class SigningCache: @unchecked Sendable {
    struct Key: Hashable {
        var name: String
        var crc32: UInt32
        var compressedSize: Int64
        var uncompressedSize: Int64
        var method: UInt16
        var algorithm: DigestAlgorithm
        init(_ entry: ZipEntry, algorithm: DigestAlgorithm) {
            name = entry.name; crc32 = entry.crc32; compressedSize = entry.compressedSize
            uncompressedSize = entry.uncompressedSize; method = entry.method.rawValue; self.algorithm = algorithm
        }
    }
    private let lock = Lock()
    private var digests: [Key: [UInt8]] = [:]
    private var recycler: OutputRecycler?
    private var layouts: [Int: RecordLayout] = [:]
    /// How many bytes of the entries section the last run skipped (already in the recycled file) and wrote.
    public private(set) var lastSkippedBytes: Int64 = 0
    public private(set) var lastWrittenBytes: Int64 = 0

    public init() {}

    /// Number of digests held.
    public var count: Int { lock.withLock { digests.count } }

    func digest(for key: Key) -> [UInt8]? { lock.withLock { digests[key] } }
    func store(_ digest: [UInt8], for key: Key) { lock.withLock { digests[key] = digest } }

    func recycler(for destination: String) -> OutputRecycler {
        lock.withLock {
        if let recycler, recycler.destination == destination { return recycler }
        let new = OutputRecycler(destination: destination)
        recycler = new
        layouts = [:]
        return new
        }
    }

    /// The layout a slot held, removed: from now on the slot is being rewritten.
    func takeLayout(slot: Int) -> RecordLayout? {
        lock.withLock { layouts.removeValue(forKey: slot) }
    }

    /// Records what `slot` now holds. When the other slot holds nothing known (the first build, or after a
    /// failed one), the published file is copied there in the background with the same layout, so the next
    /// build rewrites only what changed rather than all of it.
    func setLayout(_ layout: RecordLayout, slot: Int, skipped: Int64, written: Int64) {
        lock.withLock {
        layouts[slot] = layout
        lastSkippedBytes = skipped
        lastWrittenBytes = written
        if layouts[1 - slot] == nil, let recycler {
            layouts[1 - slot] = layout
            recycler.prepareSpareCopy()
        }
        }
    }
}

/// One local record (header and data) as written at an offset, identified without its bytes.
struct RecordKey: Equatable {
    var offset: Int64
    var header: [UInt8]
    var data: DataIdentity
    var dataCount: Int64
}

/// What a recycled output file holds: its first records (up to the first one whose bytes could not be
/// identified) and the chunk digests of its entries section.
struct RecordLayout {
    var records: [RecordKey]
    var algorithms: Set<ContentDigestAlgorithm>
    var section: SectionChunkDigests?
}

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

    /// - Parameter resuming: the digests of the section's first whole chunks, already written (`SectionCopy`).
    init(file: OutputFile, algorithms: Set<ContentDigestAlgorithm>, resuming: SectionChunkDigests? = nil) throws {
        target = .file(file)
        self.algorithms = algorithms
        previous = nil
        matching = false
        recordsComplete = false
        digester = algorithms.isEmpty ? nil : try StreamingChunkDigester(algorithms: algorithms, resuming: resuming)
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

    /// The entries section's chunk digests; call once, after the section's last byte.
    func finishDigests() throws -> SectionChunkDigests {
        try endOfReusableRecords()
        guard let digester else { throw SignError.internalInconsistency("no content digester for the entries section") }
        let result = digester.finish()
        section = result
        return result
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
