import Align
import APKCore
import SignatureSchemes

/// The input-APK section writer: the kept entries' records copied raw in local-header order (never
/// recompressed; zero padding between records copied too, as apksig copies "unprocessed data"), stored entries
/// re-aligned where the engine says, and the central directory records re-emitted with their new offsets.
///
/// Where each record goes is known before a byte is copied (only stored entries whose alignment changes get a
/// new local header: `SectionLayout`), so the cores copy and digest the section together (`SectionCopy`), v1
/// digests included. The input is read with pread, not through its mapping.
struct InputAPKWriter: SectionWriter {
    let archive: APKArchive
    /// Where the entries end in the input: its signing block, or its central directory.
    let sectionEnd: Int64
    /// Records not copied, in file order: dropped entries' and stale ones (`keptEntries`).
    let droppedRecords: [Range<Int64>]
    let destination: String
    let concurrency: Int
    let keySupply: BackgroundValue<SignerKey>
    /// With the input's alignment preserved, the rules its entries must still meet where they land
    /// (`Signer.preservedAlignmentRequirements`); nil when there is nothing to check.
    var alignmentRequirements: PackagingRequirements? = nil
    /// A deflated resources.arsc the table's check inflates (`ResourceTableCheck`): left to it by the copy when the
    /// signing's v1 digest is the one it takes.
    var tableInflation: ResourceTableCheck.Inflation? = nil

    /// The input's kept entries in local-header order (apksig copies records in that order and keeps the
    /// central directory's), the input's v1 manifest when v1 is on, and the records dropped.
    static func keptEntries(of archive: APKArchive, readsManifest: Bool) throws
        -> (entries: [KeptEntry], manifest: [UInt8]?, dropped: [Range<Int64>]) {
        let zip = archive.zip
        // Each entry's central directory record, as stored (apksig re-emits it with only the offset changed).
        var centralRecords: [Range<Int64>] = []
        centralRecords.reserveCapacity(zip.entries.count)
        var cdPosition = zip.centralDirectoryOffset
        for index in zip.entries.indices {
            // Fields, not a copy of the entry (that retains and releases its arrays, 7,600 times over).
            var size = Int64(CentralDirectoryRecordLayout.fixedSize + zip.entries[index].nameBytes.count
                             + zip.entries[index].centralExtra.count + zip.entries[index].comment.count)
            if zip.entries[index].hasNonstandardRecords {
                // Its entry no longer holds the ZIP64 extra records the input's record has: the record's own lengths.
                let lengths = try archive.source.bytes(in: (cdPosition + 28)..<(cdPosition + 34))
                size = Int64(CentralDirectoryRecordLayout.fixedSize) + (0..<3).reduce(Int64(0)) { $0 + Int64(lengths[2 * $1]) + Int64(lengths[2 * $1 + 1]) << 8 }
            }
            centralRecords.append(cdPosition..<(cdPosition + size))
            cdPosition += size
        }
        var manifest: [UInt8]?
        var entries: [KeptEntry] = []
        entries.reserveCapacity(zip.entries.count)
        var dropped: [Range<Int64>] = []
        let manifestNameLength = V1SchemeSigner.manifestEntryName.utf8.count
        // Fields are read from the array in place: a whole entry taken out of it, or passed on, is a copy.
        let all = zip.entries
        for index in zip.indicesInFileOrder {
            // The name's length first: an ASCII name is equal only to the same bytes.
            if readsManifest && all[index].nameBytes.count == manifestNameLength && all[index].name == V1SchemeSigner.manifestEntryName {
                manifest = try archive.uncompressedData(of: all[index])
            }
            guard SigningEngine.isKept(nameBytes: all[index].nameBytes, name: all[index].name) else {
                dropped.append(all[index].recordRange)
                continue
            }
            entries.append(KeptEntry(all, index: index, origin: .archive(centralRecord: centralRecords[index], centralIndex: index)))
        }
        // A deviation from apksig's bytes, on purpose: apksig skips the source stamp and the pin list *before*
        // it steps past their records, so it copies their bytes on as data between records, a local record no
        // central directory entry names (a streaming reader sees it; a strict reader refuses it as an extra
        // local entry). Their records are dropped like any other dropped record, and so are the ones an earlier
        // apksig signing left behind (`ZipArchive.staleSignerRecords`). zipflinger's virtual entries, which hold
        // nothing, are copied on with the bytes between records, as apksig copies them (`virtualEntryRecords`).
        let stale = zip.staleSignerRecords.filter { !zip.virtualEntryRecords.contains($0) }
        if !stale.isEmpty {
            dropped = (dropped + stale).sorted { $0.lowerBound < $1.lowerBound }
        }
        return (entries, manifest, dropped)
    }

    func entryDigestsBesideCopy(_ entries: [KeptEntry], plan: DigestPlan) -> (@Sendable () throws -> [[UInt8]])? { nil }

    func write(_ entries: [KeptEntry], engine: SigningEngine, plan: DigestPlan) throws -> WrittenSection {
        let planned = try layOut(entries, engine: engine)
        try checkAlignment(of: entries, dataStarts: planned.dataStarts)
        let file = try OutputFile(destination: destination)
        // The entries section, whose size is known: what follows it (the JAR signature files, the signing block,
        // the central directory) is appended, so the file is never cut back (OutputFile.reserve).
        try file.reserve(planned.layout.count)
        var copy = SectionCopy(layout: planned.layout, source: archive.source, items: entries, recordStarts: planned.recordStarts,
                               dataStarts: planned.dataStarts, entryDigest: plan.v1, engine: engine, plan: plan)
        if let tableInflation, tableInflation.algorithm == plan.v1 { copy.inflatedElsewhere = tableInflation.item }
        let (copied, output) = try copy.write(into: file, engine: engine, plan: plan, concurrency: concurrency, key: keySupply)
        return WrittenSection(output: output, centralRecords: planned.centralRecords,
                              entryDigests: copied.entryDigests, realigned: planned.realigned, verityLeaves: copied.verityLeaves,
                              entryStarts: (planned.recordStarts, planned.dataStarts))
    }

    /// Refuses, before the output exists, a layout that leaves an entry Android requires aligned off its
    /// boundary (only with `alignmentRequirements`: the preserved alignment of an entry that was unaligned in
    /// the input, and kept its position modulo the boundary, or did not move).
    private func checkAlignment(of entries: [KeptEntry], dataStarts: [Int64]) throws {
        guard let requirements = alignmentRequirements else { return }
        var misaligned: [(entry: SignError.MisalignedEntry, rule: PackagingRequirements.Rule)] = []
        for index in entries.indices where !entries[index].entry.isCompressed {
            guard let rule = requirements.rule(for: entries[index].entry.name) else { continue }
            let alignment = PackagingRequirements.alignment(for: rule)
            guard dataStarts[index] % Int64(alignment) != 0 else { continue }
            misaligned.append((SignError.MisalignedEntry(name: entries[index].entry.name, dataOffset: dataStarts[index], alignment: alignment), rule))
        }
        if !misaligned.isEmpty { throw SignError.alignedEntriesRequired(requirements.grouped(misaligned)) }
    }

    /// Where every byte of the section comes from, and where each record and its data start in the output.
    private struct Plan {
        var layout = SectionLayout()
        var recordStarts: [Int64] = []
        var dataStarts: [Int64] = []
        var centralRecords: [(order: Int, record: Records.CentralRecord)] = []
        var realigned = 0
    }

    private func layOut(_ entries: [KeptEntry], engine: SigningEngine) throws -> Plan {
        var plan = Plan()
        // At most five segments per entry (a re-aligned header is four around its data), and the gaps.
        plan.layout.reserveCapacity(entries.count * 5 + droppedRecords.count + 1)
        plan.recordStarts.reserveCapacity(entries.count)
        plan.dataStarts.reserveCapacity(entries.count)
        plan.centralRecords.reserveCapacity(entries.count)
        // The input bytes before `offset` that lie outside records are copied, dropped records skipped.
        var inputPosition: Int64 = 0
        var nextDropped = 0
        func appendInputGaps(upTo offset: Int64) {
            while nextDropped < droppedRecords.count && droppedRecords[nextDropped].lowerBound < offset {
                let dropped = droppedRecords[nextDropped]
                if dropped.lowerBound > inputPosition { plan.layout.append(input: inputPosition..<dropped.lowerBound) }
                inputPosition = max(inputPosition, dropped.upperBound)
                nextDropped += 1
            }
            if offset > inputPosition {
                plan.layout.append(input: inputPosition..<offset)
                inputPosition = offset
            }
        }
        // Each re-aligned header's new extra field is written here, then into the layout's literals: one buffer,
        // not an array per entry.
        var extra: [UInt8] = []
        for item in entries {
            guard case .archive(let centralRecord, let centralIndex) = item.origin else {
                throw SignError.internalInconsistency("an input APK's items are its entries")
            }
            appendInputGaps(upTo: item.entry.localHeaderOffset)
            inputPosition = item.entry.recordRange.upperBound
            let headerOffset = plan.layout.count
            try Records.checkOffset(headerOffset)
            plan.recordStarts.append(headerOffset)
            if item.entry.hasNonstandardRecords {
                try layOutNonstandard(item.entry, headerOffset: headerOffset, centralIndex: centralIndex, engine: engine, into: &plan)
                continue
            }
            extra.removeAll(keepingCapacity: true)
            if engine.appendAlignedExtra(method: item.entry.method, localExtra: item.entry.localExtra, name: item.entry.name,
                                         nameLength: item.entry.nameBytes.count, inputHeaderOffset: item.entry.localHeaderOffset,
                                         outputHeaderOffset: headerOffset, inputDataOffset: item.entry.dataOffset, to: &extra) {
                guard extra.count <= Int(UInt16.max) else { throw SignError.tooLarge("extra field of \(item.entry.name.debugDescription)") }
                // The input's header with the new extra field's length (bytes 28-29), then the new field
                // (the header's bytes are read when copied, not now).
                let start = item.entry.localHeaderOffset
                plan.layout.append(input: start..<(start + 28))
                plan.layout.append(literal: UInt16(extra.count))
                plan.layout.append(input: (start + 30)..<(start + Int64(LocalFileHeaderLayout.fixedSize + item.entry.nameBytes.count)))
                plan.layout.append(literal: extra)
                plan.dataStarts.append(plan.layout.count)
                plan.layout.append(input: item.entry.dataOffset..<item.entry.recordRange.upperBound)
                plan.realigned += 1
            } else {
                plan.dataStarts.append(headerOffset + (item.entry.dataOffset - item.entry.localHeaderOffset))
                plan.layout.append(input: item.entry.recordRange)
            }
            plan.centralRecords.append((centralIndex, .input(centralRecord, headerOffset: UInt32(headerOffset))))
        }
        appendInputGaps(upTo: sectionEnd)
        return plan
    }

    /// An entry whose records an APK must not carry (ZIP64 fields, a local method that is not the central one):
    /// both written anew from the entry, its data aligned as any re-aligned entry's, and the data copied (a data
    /// descriptor is not: the new local header holds the sizes and CRC-32).
    private func layOutNonstandard(_ entry: ZipEntry, headerOffset: Int64, centralIndex: Int, engine: SigningEngine, into plan: inout Plan) throws {
        var written = entry
        written.flags &= ~ZipFlags.dataDescriptor
        written.localExtra = engine.alignment.localExtra(for: entry, headerOffset: headerOffset, alignment: engine.alignment.alignment(for: entry))
        guard written.localExtra.count <= Int(UInt16.max) else { throw SignError.tooLarge("extra field of \(entry.name.debugDescription)") }
        guard entry.compressedSize < 0xFFFF_FFFF, entry.uncompressedSize < 0xFFFF_FFFF else {
            throw SignError.tooLarge("entry \(entry.name.debugDescription) is 4 GiB or more, which needs ZIP64, which APKs cannot use")
        }
        plan.layout.append(literal: written.encodedLocalHeader(extra: written.localExtra))
        plan.dataStarts.append(plan.layout.count)
        plan.layout.append(input: entry.dataRange)
        plan.centralRecords.append((centralIndex, .encoded(written.encodedCentralDirectoryRecord(localHeaderOffset: headerOffset))))
    }
}
