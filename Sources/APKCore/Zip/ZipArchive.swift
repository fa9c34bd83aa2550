import ZlibWrapper
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ZIP archive parsed from a `DataSource`: its entries in central-directory order, the EOCD, and where the
/// sections lie. Parsing checks structure only (bounds, record signatures, local header against central
/// directory, duplicates, overlaps, unsupported features); name policy for extraction lives in `Unpack`.
public struct ZipArchive: Sendable {
    public let source: any DataSource
    /// Entries in central directory order.
    public let entries: [ZipEntry]
    public let endOfCentralDirectory: EndOfCentralDirectory
    /// Where the central directory starts (and the entries section, plus any signing block, ends).
    public var centralDirectoryOffset: Int64 { endOfCentralDirectory.centralDirectoryOffset }
    public var centralDirectoryRange: Range<Int64> {
        centralDirectoryOffset..<(centralDirectoryOffset + endOfCentralDirectory.centralDirectorySize)
    }
    /// End of the last entry's record: the start of the APK Signing Block if there is one, else of the CD.
    public let entriesEnd: Int64

    /// Limits that keep hostile archives from costing unbounded time or memory.
    public struct Limits: Sendable {
        public var maxEntries = 65_535
        public var maxCentralDirectorySize: Int64 = 64 << 20
        /// Read every entry as a verifier must (verification only): any compression method but stored (0) is
        /// deflate, as Android's JAR verifier (StrictJarFile) and apksig read it (apksig
        /// testWeirdZipCompressionMethod), and ZIP64 entry fields as `readsZip64` reads them (apksig
        /// verify_apkWithZip64Records_verifiesSuccessfully). Off, a method other than stored or deflated is
        /// refused but on a JAR signature file (which only the JAR verifier reads): libziparchive, which reads
        /// the manifest, code, resources and libraries, extracts no other method, so the APK would not install
        /// or run. Whatever this says, the central directory's method rules and the local header's is not
        /// consulted, as in libziparchive (`FindEntry`) and apksig (testZipCompressionMethodMismatchBetweenLfhAndCd).
        public var readsLikeAndroid = false
        /// Read ZIP64 fields whose values fit the standard ones: sizes and offsets of 0xFFFFFFFF taken from an
        /// entry's ZIP64 extended-information extra field (central or local, as libziparchive since Android 11
        /// and apksig read them), and a ZIP64 end of central directory record whose values fit the standard one
        /// (which then holds 0xFFFF/0xFFFFFFFF markers or the same values: ApkSignerTest
        /// testSignApk_apkWithZip64Eocd_signsAndVerifiesSuccessfully). Entries read so are marked
        /// `ZipEntry.hasNonstandardRecords`, their ZIP64 extra records dropped, so a writer writes standard
        /// records that Android 10 and older read too. Archives that really need ZIP64 (over 65,535 entries or
        /// 4 GiB) are refused either way.
        public var readsZip64 = false
        /// Refuse bytes no record accounts for: any byte before the first local header (Android 8.1+ opens no
        /// archive whose first bytes are not a local header: libziparchive's ParseZipArchive, the Janus fix,
        /// A-64211847), non-zero bytes between entries or between the last entry and the APK Signing Block (or
        /// the central directory), bytes between the central directory and the end records (a ZIP64 end record
        /// and its locator, where read, are end records), and central directory bytes after the records the end
        /// record counts. A streaming reader (`unzip -`, `java.util.jar.JarInputStream`, Android 5-8.0 for a DEX
        /// prefix: Janus, CVE-2017-13156) sees what such bytes hold, a central-directory reader does not, so a
        /// tool that rewrites the APK must not carry them into a signed output. Zero bytes after the first entry
        /// are padding (apksig pads the entries to the signing block's 4096-byte boundary with them) and cannot
        /// form a record. Off for verification, which judges these bytes as apksig and Android do
        /// (`unaccountedRanges`, `firstLocalHeaderOffset`).
        public var refusesUnaccountedBytes = true
        public init() {}
    }

    /// Parses the archive in `source`. Throws `ZipFormatError` describing the first problem found.
    public init(source: any DataSource, limits: Limits = Limits()) throws {
        self.source = source
        let eocd = try Self.findEndOfCentralDirectory(in: source, readsZip64EndRecord: limits.readsZip64)
        self.endOfCentralDirectory = eocd
        guard eocd.centralDirectorySize <= limits.maxCentralDirectorySize else {
            throw ZipFormatError.limitExceeded("central directory of \(eocd.centralDirectorySize) bytes exceeds the limit of \(limits.maxCentralDirectorySize)")
        }
        guard eocd.centralDirectoryOffset + eocd.centralDirectorySize <= eocd.offset else {
            throw ZipFormatError.malformed("central directory (offset \(eocd.centralDirectoryOffset), \(eocd.centralDirectorySize) bytes) runs past the end of central directory record at \(eocd.offset)")
        }
        let centralDirectoryEnd = eocd.centralDirectoryOffset + eocd.centralDirectorySize
        let endRecords = eocd.endRecordsOffset
        self.endRecordGap = centralDirectoryEnd < endRecords ? centralDirectoryEnd..<endRecords : nil
        if limits.refusesUnaccountedBytes {
            if let gap = endRecordGap {
                throw ZipFormatError.unaccountedBytes(Self.endRecordGapProblem(gap, records: eocd.zip64EndRecord == nil ? 1 : 2))
            }
            let locator = eocd.offset - Int64(Zip64LocatorLayout.fixedSize)
            if let zip64 = eocd.zip64EndRecord, zip64.upperBound != locator {
                throw ZipFormatError.unaccountedBytes("\(locator - zip64.upperBound) bytes lie between the ZIP64 end of central directory record (which ends at \(zip64.upperBound)) and its locator at \(locator)")
            }
        }
        guard eocd.entryCount <= limits.maxEntries else {
            throw ZipFormatError.limitExceeded("\(eocd.entryCount) entries exceed the limit of \(limits.maxEntries)")
        }
        let readsZip64Fields = limits.readsLikeAndroid || limits.readsZip64
        var uncounted: (bytes: Range<Int64>, records: Int)?
        var entries = try Self.readCentralDirectory(source: source, eocd: eocd, readsUnknownMethods: limits.readsLikeAndroid,
                                                    readsZip64Fields: readsZip64Fields,
                                                    refusesUnaccountedBytes: limits.refusesUnaccountedBytes, uncounted: &uncounted)
        self.uncountedCentralDirectoryBytes = uncounted
        // Android opens no archive whose end record counts no entries (libziparchive's MapCentralDirectory:
        // kEmptyArchive), so no APK, container or output is ever one. Where the lenient reader has found
        // uncounted records after the zero count instead, those are the finding.
        if entries.isEmpty && uncounted == nil {
            throw ZipFormatError.noEntries("the end of central directory record counts no entries, and Android opens no archive without entries")
        }
        // The names' table both finds a name given twice and, kept, answers `entry(named:)`.
        var names = EntryNameTable(minimumCapacity: entries.count)
        if let duplicate = entries.indices.first(where: { !names.insert(entries[$0].nameBytes) }) {
            throw ZipFormatError.duplicateEntry(entries[duplicate].name)
        }
        self.names = names
        try source.withBytes(in: 0..<source.count) { all in
            // In windows of entries, each window's pages given back once read: every header touched maps the
            // 64 KiB around it (the kernel's fault-around), or the whole large folio (up to 2 MiB) holding it,
            // so reading all 5,500 headers of a 400 MB APK of 1 MiB assets would otherwise leave up to the
            // whole file resident. A window ends after 256 headers or 8 MiB of file, whichever comes first.
            let window = 256
            let span: Int64 = 8 << 20
            // Pages read are given back 8 MiB at a time, not once per window: each MADV_DONTNEED interrupts
            // the other cores to flush their TLBs (framework-res.apk's 7,600 headers are 30 windows).
            var low = Int64.max
            var high: Int64 = 0
            var start = 0
            while start < entries.count {
                // Headers are touched ahead (their cache misses overlap) only as far as the window reaches.
                var end = start + 1
                let first = entries[start].localHeaderOffset
                while end < min(entries.count, start + window) {
                    let offset = entries[end].localHeaderOffset
                    if offset < first || offset - first > span { break }
                    end += 1
                }
                Self.touchLocalHeaders(of: entries[start..<end], in: all)
                for index in start..<end {
                    try Self.readLocalHeader(of: &entries[index], in: all, limit: eocd.centralDirectoryOffset,
                                             readsZip64Fields: readsZip64Fields)
                    low = min(low, entries[index].localHeaderOffset)
                    high = max(high, entries[index].dataOffset)
                    if high - low > span {
                        source.discard(low..<high)
                        low = Int64.max
                        high = 0
                    }
                }
                start = end
            }
            if low < high { source.discard(low..<high) }
        }
        // Entries must not overlap each other (a classic way to smuggle different content past a verifier).
        // Writers put the central directory in file order, so sort only when it is not.
        var isInFileOrder = true
        for index in entries.indices.dropFirst() where entries[index - 1].localHeaderOffset >= entries[index].localHeaderOffset {
            isInFileOrder = false
            break
        }
        let byOffset = isInFileOrder ? nil : entries.indices.sorted { entries[$0].localHeaderOffset < entries[$1].localHeaderOffset }
        var end: Int64 = 0
        var gaps: [Range<Int64>] = []
        for position in entries.indices {
            let index = byOffset?[position] ?? position
            if position > 0 && entries[index].localHeaderOffset < end {
                throw ZipFormatError.malformed("entry \(entries[index].name.debugQuoted) overlaps the entry before it (local header at \(entries[index].localHeaderOffset), previous entry ends at \(end))")
            }
            if entries[index].localHeaderOffset > end { gaps.append(end..<entries[index].localHeaderOffset) }
            end = entries[index].recordRange.upperBound
        }
        // After the last entry: zero padding and an APK Signing Block framed as Android finds one, or nothing.
        let blockStart = try SigningBlock.frameOffset(in: source, centralDirectoryOffset: eocd.centralDirectoryOffset)
        let tailEnd = blockStart.map { max($0, end) } ?? eocd.centralDirectoryOffset
        if tailEnd > end { gaps.append(end..<tailEnd) }
        let firstLocalHeaderOffset = entries.isEmpty ? 0 : (byOffset.map { entries[$0[0]] } ?? entries[0]).localHeaderOffset
        // What a gap holds beyond the records an earlier signing left in it (`staleSignerRecords`).
        var staleRecords: [Range<Int64>] = []
        var virtualRecords: [Range<Int64>] = []
        var rest: [Range<Int64>] = []
        // The same gaps as the JAR signature sees them: a stale signer record is no entry of its either, so
        // verify counts its bytes as unsigned (a zipflinger virtual entry holds nothing, for any reader).
        var unsignedRest: [Range<Int64>] = []
        for gap in gaps {
            var position = gap.lowerBound
            var firstStale: Int64?
            while true {
                // Zero padding may come before a leftover record: apksig copies the bytes between records as they
                // are, so an input whose stamp entry followed zero padding (apksig's own stamp test APKs) gives an
                // output with the record after the zeros. Not before the first local header, where any byte is a
                // prefix Android refuses.
                let recordStart = gap.lowerBound > 0 ? try Self.zeroRunEnd(from: position, before: gap.upperBound, in: source) : position
                if recordStart > position,
                   try Self.staleSignerRecord(at: recordStart, before: gap.upperBound, in: source) == nil,
                   try Self.virtualEntryRecord(at: recordStart, before: gap.upperBound, in: source) == nil {
                    break
                }
                position = recordStart
                if let record = try Self.staleSignerRecord(at: position, before: gap.upperBound, in: source) {
                    firstStale = firstStale ?? record.lowerBound
                    staleRecords.append(record)
                    position = record.upperBound
                } else if let record = try Self.virtualEntryRecord(at: position, before: gap.upperBound, in: source) {
                    staleRecords.append(record)
                    virtualRecords.append(record)
                    position = record.upperBound
                } else {
                    break
                }
            }
            if position < gap.upperBound { rest.append(position..<gap.upperBound) }
            let unsignedStart = firstStale ?? position
            if unsignedStart < gap.upperBound { unsignedRest.append(unsignedStart..<gap.upperBound) }
        }
        // Strays: any byte before the first local header (zeros too), non-zero bytes elsewhere.
        let strays = try rest.filter { range in
            if firstLocalHeaderOffset > 0 && range.lowerBound < firstLocalHeaderOffset { return true }
            return try !Self.isZeroFilled(range, in: source)
        }
        if limits.refusesUnaccountedBytes, let first = strays.first {
            if first.lowerBound < firstLocalHeaderOffset {
                throw ZipFormatError.unaccountedBytes("\(firstLocalHeaderOffset - first.lowerBound) bytes before the first local header belong to no entry of the central directory (Android 8.1 and later open no APK that does not start with a local header; older releases could run such a prefix as the app's code)")
            }
            throw ZipFormatError.unaccountedBytes("\(first.count64) bytes at offset \(first.lowerBound) belong to no entry of the central directory")
        }
        self.firstLocalHeaderOffset = firstLocalHeaderOffset
        self.staleSignerRecords = staleRecords
        self.virtualEntryRecords = virtualRecords
        self.strayRanges = strays
        self.unaccountedRanges = limits.refusesUnaccountedBytes ? [] : try unsignedRest.filter { try !Self.isZeroFilled($0, in: source) }
        self.entries = entries
        self.entriesEnd = end
        // No two entries share a local header offset (that is an overlap), so this order is unambiguous.
        self.fileOrder = byOffset
    }

    /// Positions in `entries` in the order of their local headers; nil when that is central-directory order.
    private let fileOrder: [Int]?
    /// Every entry's name, at its position in `entries` (no name is there twice).
    private let names: EntryNameTable

    /// Ranges of the entries section holding non-zero bytes that no entry accounts for (before the first local
    /// header, between records, after the last one up to the APK Signing Block or central directory), in file
    /// order, a stale signer record's bytes included (no JAR signature covers them). Empty unless
    /// `Limits.refusesUnaccountedBytes` is off: only a verifier sees them, and judges them by whether a
    /// signature covers them.
    public let unaccountedRanges: [Range<Int64>]

    /// The ranges of the entries section that `Limits.refusesUnaccountedBytes` refuses, in file order: any byte
    /// before the first local header, and non-zero bytes elsewhere that neither an entry nor one of the
    /// `staleSignerRecords` accounts for. Empty unless that limit is off: a verifier holds an APK to the rules
    /// the other commands read it by, and reports them.
    public let strayRanges: [Range<Int64>]

    /// Where bytes lie between the central directory and the end records (`EndOfCentralDirectory
    /// .endRecordsOffset`), which `Limits.refusesUnaccountedBytes` refuses; nil when there are none. Android's
    /// libziparchive reads past them; apksig then finds no APK Signing Block.
    public let endRecordGap: Range<Int64>?

    /// Central directory bytes after the records the end record counts, and how many whole records they hold,
    /// which `Limits.refusesUnaccountedBytes` refuses; nil when there are none. Readers that walk the central
    /// directory by its size see those records, readers that go by the count (libziparchive, apksig) do not.
    public let uncountedCentralDirectoryBytes: (bytes: Range<Int64>, records: Int)?

    /// Where the first local header (in file order) starts: the size of the prefix before it, which Android
    /// 8.1+ refuses whatever it holds. 0 without entries; with `Limits.refusesUnaccountedBytes`, 0 unless
    /// `staleSignerRecords` fill the prefix.
    public let firstLocalHeaderOffset: Int64

    /// True when the file's first four bytes are a local file header signature: all Android 8.1 and later ask
    /// of an APK's start (libziparchive's ParseZipArchive reads that signature at offset 0, whatever record
    /// follows it), so a record no entry names there (`staleSignerRecords`) still opens, a prefix does not.
    public var startsWithLocalHeader: Bool {
        guard source.count >= 4, let head = try? source.bytes(in: 0..<4) else { return false }
        return head.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) } == LocalFileHeaderLayout.signature
    }

    /// Records that an earlier signing left between the entries' records: complete, intact local records of
    /// entries a signer drops and writes anew (`signerRegeneratedNames`), which the central directory no longer
    /// names. apksig's `ApkSigner.sign` skips those entries before it steps past their records, so it copies
    /// their bytes on as "unprocessed data" between records: every APK apksigner re-signs from a stamped
    /// (Play) or pinned one has them. `Limits.refusesUnaccountedBytes` accepts exactly
    /// this shape (back to back from the start of a gap, each CRC-32 checked, nothing but zero padding after
    /// them) and refuses any other record or byte. Whatever writes the archive anew leaves them out (`sign`
    /// drops them; the others write only the central directory's entries), so they never reach our outputs.
    /// The virtual entries of AGP's zipflinger (`virtualEntryRecord`) are accepted the same way, and `sign`
    /// alone keeps them (`virtualEntryRecords`).
    public let staleSignerRecords: [Range<Int64>]

    /// Of `staleSignerRecords`, the zipflinger virtual entries (`virtualEntryRecord`), in file order. They hide
    /// nothing, so `sign` copies them on as apksig does (bytes between records are copied verbatim): an
    /// apksigner-signed Gradle build keeps its leading one, and `apksigcopier compare` rebuilds the signed APK
    /// from the unsigned one with it.
    public let virtualEntryRecords: [Range<Int64>]

    /// The entries signers drop from their input and write anew: the source stamp's certificate digest
    /// (apksig `SOURCE_STAMP_CERTIFICATE_HASH_ZIP_ENTRY_NAME`) and the pin list (`Hints.PIN_BYTE_RANGE_ZIP_ENTRY_NAME`).
    public static let signerRegeneratedNames: Set<String> = ["stamp-cert-sha256", "pinlist.meta"]

    /// The largest stale record's data taken for one: a stamp digest is 32 bytes, a pin list 8 per range.
    static let maxStaleRecordSize: Int64 = 1 << 20

    /// The complete local record at `offset`, ending by `limit`, of an entry named in `signerRegeneratedNames`
    /// whose data is intact (stored, or deflated in one stream that takes all of its bytes, with the declared
    /// size and CRC-32), without a data descriptor or encryption; nil when the bytes there are anything else.
    static func staleSignerRecord(at offset: Int64, before limit: Int64, in source: any DataSource) throws -> Range<Int64>? {
        let fixed = Int64(LocalFileHeaderLayout.fixedSize)
        guard offset + fixed <= limit else { return nil }
        let header = try source.bytes(in: offset..<(offset + fixed))
        func field<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            header.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: T.self)) }
        }
        guard field(0, UInt32.self) == LocalFileHeaderLayout.signature,
              field(6, UInt16.self) & (ZipFlags.dataDescriptor | ZipFlags.encrypted | ZipFlags.strongEncryption) == 0,
              let method = CompressionMethod(rawValue: field(8, UInt16.self)) else { return nil }
        let crc = field(14, UInt32.self)
        let compressed = Int64(field(18, UInt32.self)), uncompressed = Int64(field(22, UInt32.self))
        let nameLength = Int64(field(26, UInt16.self)), extraLength = Int64(field(28, UInt16.self))
        let dataStart = offset + fixed + nameLength + extraLength, dataEnd = dataStart + compressed
        guard dataEnd <= limit, compressed <= maxStaleRecordSize, uncompressed <= maxStaleRecordSize,
              method == .deflated || compressed == uncompressed,
              let name = String(validating: try source.bytes(in: (offset + fixed)..<(offset + fixed + nameLength)), as: UTF8.self),
              signerRegeneratedNames.contains(name) else { return nil }
        let isIntact: Bool = try source.withBytes(in: dataStart..<dataEnd) { data in
            guard method == .deflated else { return CRC32.checksum(data) == crc }
            var inflated = CRC32()
            var streamEnd = 0
            do {
                try Inflate.inflate(data, expectedSize: uncompressed, consumed: { streamEnd = $0 }) { inflated.update($0) }
            } catch is Inflate.Failure {
                return false
            }
            return streamEnd == data.count && inflated.value == crc
        }
        return isIntact ? offset..<dataEnd : nil
    }

    /// The zipflinger "virtual entry" at `offset`, ending by `limit`: a local header with no name, no data, zero
    /// sizes and CRC-32, method stored, no flags, and an extra field of zero bytes only, which the Android Gradle
    /// plugin's zipflinger writes where it leaves room (at the start of most Gradle-built APKs, 132 bytes) and no
    /// central directory entry names. Android opens such an APK (libziparchive asks only for a local header
    /// signature at offset 0), apksigner signs and verifies it, and a streaming reader sees an empty entry with
    /// no name: nothing to hide there. The shape is apksigcopier's `zipflinger_virtual_entry`.
    ///
    /// zipflinger's first form (`LocalFileHeader.fillVirtualEntry` in its early `zipflinger` and
    /// `com.android.zipflinger` sources) declared the padding instead: the extra field is one Android alignment
    /// record (header 0xd935) whose size takes the rest of it, its data all zeros (and version 2.0, time and date
    /// zero in the header, which no check here reads). It hides no more, so it is taken too. Nil for anything else.
    static func virtualEntryRecord(at offset: Int64, before limit: Int64, in source: any DataSource) throws -> Range<Int64>? {
        let fixed = Int64(LocalFileHeaderLayout.fixedSize)
        guard offset + fixed <= limit else { return nil }
        let header = try source.bytes(in: offset..<(offset + fixed))
        let isEmptyRecord: Bool = header.withUnsafeBytes { bytes in
            func field<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T { T(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: T.self)) }
            // Flags, method, then (after the time and date) CRC-32, both sizes and the name length: all zero.
            return field(0, UInt32.self) == LocalFileHeaderLayout.signature && field(6, UInt32.self) == 0
                && bytes[14..<28].allSatisfy { $0 == 0 }
        }
        guard isEmptyRecord else { return nil }
        let extraLength = header.withUnsafeBytes { Int64(UInt16(littleEndian: $0.loadUnaligned(fromByteOffset: 28, as: UInt16.self))) }
        let end = offset + fixed + extraLength
        guard end <= limit else { return nil }
        if try isZeroFilled((offset + fixed)..<end, in: source) { return offset..<end }
        // The first form: [0x35 0xd9][size = extra length - 4][size zero bytes].
        let recordHeader = Int64(4)
        guard extraLength >= recordHeader else { return nil }
        let declared = try source.bytes(in: (offset + fixed)..<(offset + fixed + recordHeader))
        let (id, size) = declared.withUnsafeBytes {
            (UInt16(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt16.self)),
             Int64(UInt16(littleEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self))))
        }
        guard id == AlignmentExtraLayout.headerID, size == extraLength - recordHeader,
              try isZeroFilled((offset + fixed + recordHeader)..<end, in: source) else { return nil }
        return offset..<end
    }

    /// True when every byte of `range` in `source` is zero.
    static func isZeroFilled(_ range: Range<Int64>, in source: any DataSource) throws -> Bool {
        try source.withBytes(in: range) { bytes in bytes.allSatisfy { $0 == 0 } }
    }

    /// Where the run of zero bytes at `offset` ends, by `limit` (`offset` itself when the byte there is not zero).
    static func zeroRunEnd(from offset: Int64, before limit: Int64, in source: any DataSource) throws -> Int64 {
        let window: Int64 = 64 << 10
        var position = offset
        while position < limit {
            let end = min(limit, position + window)
            let zeros = try source.withBytes(in: position..<end) { bytes in bytes.firstIndex { $0 != 0 } ?? bytes.count }
            position += Int64(zeros)
            if position < end { break }
        }
        return position
    }

    /// The entry called `name`, byte for byte, if present: Android's ZIP reader finds entries by comparing
    /// their names' bytes (libziparchive's `FindEntry`), so "caf\u{E9}.txt" does not find "cafe\u{301}.txt", which
    /// String's `==` would. A lookup in the table of names the reader built to refuse repeated ones: callers look
    /// up every entry of a large APK (an overlay of a decoded app), which a scan would make quadratic.
    public func entry(named name: String) -> ZipEntry? {
        var name = name
        return name.withUTF8 { names.index(of: UnsafeRawBufferPointer($0)) }.map { entries[$0] }
    }

    /// The raw (compressed) bytes of `entry`, sharing the source's storage.
    public func rawData(of entry: ZipEntry) throws -> any DataSource { try source.slice(entry.dataRange) }

    /// Entries in the order their records appear in the file.
    public var entriesInFileOrder: [ZipEntry] { fileOrder.map { $0.map { entries[$0] } } ?? entries }

    /// Positions in `entries` in the order their records appear in the file.
    public var indicesInFileOrder: [Int] { fileOrder ?? Array(entries.indices) }

    // MARK: - Parsing

    package static func findEndOfCentralDirectory(in source: any DataSource, readsZip64EndRecord: Bool = false) throws -> EndOfCentralDirectory {
        let size = source.count
        let fixed = Int64(EndOfCentralDirectoryLayout.fixedSize)
        guard size >= fixed else { throw ZipFormatError.notAZip("file is \(size) bytes, too short for a ZIP archive: empty or truncated") }
        let searchStart = max(0, size - fixed - Int64(EndOfCentralDirectoryLayout.maxCommentSize))
        return try source.withBytes(in: searchStart..<size) { tail in
            // Prefer the record with an empty comment at the very end, then scan backwards for one whose
            // comment length reaches exactly to the end of the file (apksig's ZipUtils does the same).
            var position = tail.count - Int(fixed)
            while position >= 0 {
                var r = LittleEndianReader(tail, offset: position)
                if try r.read(UInt32.self) == EndOfCentralDirectoryLayout.signature {
                    var disk = try r.read(UInt16.self)
                    var cdDisk = try r.read(UInt16.self)
                    var entriesOnDisk = try r.read(UInt16.self)
                    var entries = try r.read(UInt16.self)
                    var cdSize = try r.read(UInt32.self)
                    var cdOffset = try r.read(UInt32.self)
                    let commentLength = Int(try r.read(UInt16.self))
                    if position + Int(fixed) + commentLength == tail.count {
                        let absolute = searchStart + Int64(position)
                        var zip64EndRecord: Range<Int64>?
                        // Android's libziparchive (FindCentralDirectoryInfo) takes the last end-record signature
                        // in the file and refuses the archive when that record's comment does not end the file;
                        // apksig takes the first record from the end whose comment does. A second signature in
                        // the comment makes the two read different archives, so it is refused.
                        if let second = Self.firstSignature(in: tail, from: position + 4) {
                            throw ZipFormatError.malformed("a second end of central directory record signature lies in the archive comment, at offset \(searchStart + Int64(second)); Android reads the archive from that one and refuses it")
                        }
                        // An earlier record whose comment also ends the file holds this one in its comment: a reader
                        // that meets it first (a streaming reader, one that checks the comment) reads another archive.
                        if let earlier = Self.earlierEndRecord(in: tail, before: position) {
                            throw ZipFormatError.secondEndRecord("two end of central directory records end the file: the one at offset \(searchStart + Int64(earlier)) holds the one at offset \(absolute) in its comment, and ZIP readers disagree on which of them describes the archive")
                        }
                        if absolute >= Int64(Zip64LocatorLayout.fixedSize) {
                            let locator = try source.withBytes(in: (absolute - Int64(Zip64LocatorLayout.fixedSize))..<(absolute - Int64(Zip64LocatorLayout.fixedSize) + 4)) {
                                $0.loadUnaligned(as: UInt32.self)
                            }
                            if UInt32(littleEndian: locator) == Zip64LocatorLayout.signature {
                                guard readsZip64EndRecord,
                                      let values = try Self.zip64EndValues(in: source, locatorOffset: absolute - Int64(Zip64LocatorLayout.fixedSize),
                                                                           standard: (entries, cdSize, cdOffset)) else {
                                    throw ZipFormatError.unsupported("ZIP64 archives are not supported: older Android releases cannot read one, so an APK must stay under 65,535 entries and 4 GB, with a standard end of central directory record")
                                }
                                (disk, cdDisk, entriesOnDisk, entries, cdSize, cdOffset) = (0, 0, values.entries, values.entries, values.size, values.offset)
                                zip64EndRecord = values.record
                            }
                        }
                        // Without a ZIP64 locator, 0xFFFF is a real entry count (apksig and libziparchive read it
                        // so: apksig's original-with-64k-files.apk); offsets and sizes of 0xFFFFFFFF cannot be.
                        if cdSize == 0xFFFF_FFFF || cdOffset == 0xFFFF_FFFF {
                            throw ZipFormatError.unsupported("ZIP64 archives are not supported: older Android releases cannot read one, so an APK must stay under 65,535 entries and 4 GB, with a standard end of central directory record")
                        }
                        guard disk == 0, cdDisk == 0, entriesOnDisk == entries else {
                            throw ZipFormatError.unsupported("multi-disk (spanned) ZIP archives are not supported")
                        }
                        let comment = Array(tail[(position + Int(fixed))..<tail.count])
                        var record = EndOfCentralDirectory(entryCount: Int(entries), centralDirectorySize: Int64(cdSize),
                                                           centralDirectoryOffset: Int64(cdOffset), comment: comment, offset: absolute)
                        record.zip64EndRecord = zip64EndRecord
                        return record
                    }
                }
                position -= 1
            }
            throw ZipFormatError.notAZip("no end of central directory record found; the file is not a ZIP archive or is truncated")
        }
    }

    /// The position of the first end of central directory signature in `bytes` at or after `start` that a
    /// whole fixed-size record could follow (libziparchive's backward scan starts 22 bytes before the end).
    static func firstSignature(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var position = start
        while position + EndOfCentralDirectoryLayout.fixedSize <= bytes.count {
            if bytes[position] == 0x50 && UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)) == EndOfCentralDirectoryLayout.signature {
                return position
            }
            position += 1
        }
        return nil
    }

    /// The position of an end of central directory signature before `end` in `bytes` whose record's comment
    /// length reaches exactly to the end of `bytes`: a second record that ends the file. `memchr` finds each
    /// candidate 'P', so a normal tail (the central directory's last records) costs a few microseconds.
    static func earlierEndRecord(in bytes: UnsafeRawBufferPointer, before end: Int) -> Int? {
        guard let base = bytes.baseAddress, end > 0 else { return nil }
        let fixed = EndOfCentralDirectoryLayout.fixedSize
        var position = 0
        while position < end, let hit = memchr(base + position, 0x50, end - position) {
            let at = base.distance(to: UnsafeRawPointer(hit))
            position = at + 1
            guard at + fixed <= bytes.count,
                  UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)) == EndOfCentralDirectoryLayout.signature else { continue }
            let comment = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: at + fixed - 2, as: UInt16.self)))
            if at + fixed + comment == bytes.count { return at }
        }
        return nil
    }

    /// The values of the ZIP64 end record the locator at `locatorOffset` points to, when they fit the standard
    /// record and agree with it (each standard field is its 0xFF… marker or the same value), and where the
    /// record (with its extensible data) lies; nil otherwise.
    static func zip64EndValues(in source: any DataSource, locatorOffset: Int64,
                               standard: (entries: UInt16, size: UInt32, offset: UInt32)) throws -> (entries: UInt16, size: UInt32, offset: UInt32, record: Range<Int64>)? {
        func uint(_ bytes: [UInt8], _ at: Int, _ count: Int) -> UInt64 {
            (0..<count).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
        }
        let locator = try source.bytes(in: locatorOffset..<(locatorOffset + Int64(Zip64LocatorLayout.fixedSize)))
        let (recordDisk, recordOffset, disks) = (uint(locator, 4, 4), uint(locator, 8, 8), uint(locator, 16, 4))
        let recordSize: Int64 = 56
        guard recordDisk == 0, disks <= 1, locatorOffset >= recordSize, recordOffset <= UInt64(locatorOffset - recordSize) else { return nil }
        let record = try source.bytes(in: Int64(recordOffset)..<(Int64(recordOffset) + recordSize))
        guard uint(record, 0, 4) == 0x0606_4b50 else { return nil }
        // The size field counts the record after itself: 44 bytes of fields, then any extensible data.
        let remaining = uint(record, 4, 8)
        guard remaining >= 44, remaining <= UInt64(locatorOffset) - recordOffset - 12 else { return nil }
        // After the signature: record size (8), versions (2 + 2), then these.
        let (disk, cdDisk) = (uint(record, 16, 4), uint(record, 20, 4))
        let (entriesOnDisk, entries) = (uint(record, 24, 8), uint(record, 32, 8))
        let (size, offset) = (uint(record, 40, 8), uint(record, 48, 8))
        guard disk == 0, cdDisk == 0, entriesOnDisk == entries, entries <= 0xFFFF, size < 0xFFFF_FFFF, offset < 0xFFFF_FFFF,
              standard.entries == 0xFFFF || UInt64(standard.entries) == entries,
              standard.size == 0xFFFF_FFFF || UInt64(standard.size) == size,
              standard.offset == 0xFFFF_FFFF || UInt64(standard.offset) == offset,
              offset + size <= recordOffset else { return nil }
        return (UInt16(entries), UInt32(size), UInt32(offset), Int64(recordOffset)..<(Int64(recordOffset) + 12 + Int64(remaining)))
    }

    /// The central directory's records, as many as the end record counts. `uncounted`: the bytes after them and
    /// the whole records those hold, which `refusesUnaccountedBytes` refuses instead.
    static func readCentralDirectory(source: any DataSource, eocd: EndOfCentralDirectory, readsUnknownMethods: Bool = false,
                                     readsZip64Fields: Bool = false, refusesUnaccountedBytes: Bool = true,
                                     uncounted: inout (bytes: Range<Int64>, records: Int)?) throws -> [ZipEntry] {
        try source.withBytes(in: eocd.centralDirectoryOffset..<(eocd.centralDirectoryOffset + eocd.centralDirectorySize)) { cd in
            var r = LittleEndianReader(cd)
            var entries: [ZipEntry] = []
            entries.reserveCapacity(eocd.entryCount)
            for index in 0..<eocd.entryCount {
                let recordStart = r.offset
                // Every record read and none left: the end record counts more entries than there are (libziparchive
                // refuses it, "ran off the end"); readers that walk the central directory see fewer.
                if r.remaining == 0 {
                    throw ZipFormatError.entryCountMismatch("the end of central directory record counts \(eocd.entryCount) entries, but the central directory (\(eocd.centralDirectorySize) bytes at offset \(eocd.centralDirectoryOffset)) holds \(index) records")
                }
                do {
                    guard try r.read(UInt32.self) == CentralDirectoryRecordLayout.signature else {
                        throw ZipFormatError.malformed("central directory record #\(index + 1) at offset \(eocd.centralDirectoryOffset + Int64(recordStart)) has a bad signature")
                    }
                    // The 42 bytes after the signature, read with one bounds check; a record cut short throws
                    // what reading it field by field throws (the field's offset and size).
                    let fields = try r.readBytes(try Self.fixedFields(in: r, total: CentralDirectoryRecordLayout.fixedSize - 4, sizes: Self.centralDirectoryFieldSizes))
                    func field<T: FixedWidthInteger>(_ at: Int, _: T.Type = T.self) -> T {
                        T(littleEndian: fields.loadUnaligned(fromByteOffset: at - 4, as: T.self))
                    }
                    let versionMadeBy = field(4, UInt16.self)
                    let versionNeeded = field(6, UInt16.self)
                    let flags = field(8, UInt16.self)
                    let methodRaw = field(10, UInt16.self)
                    let time = field(12, UInt16.self)
                    let date = field(14, UInt16.self)
                    let crc = field(16, UInt32.self)
                    let compressedSize = field(20, UInt32.self)
                    let uncompressedSize = field(24, UInt32.self)
                    let nameLength = Int(field(28, UInt16.self))
                    let extraLength = Int(field(30, UInt16.self))
                    let commentLength = Int(field(32, UInt16.self))
                    // 34: disk number start
                    let internalAttributes = field(36, UInt16.self)
                    let externalAttributes = field(38, UInt32.self)
                    let localHeaderOffset = field(42, UInt32.self)
                    let nameBytes = try r.readBytes(nameLength)
                    // "", "." and ".." name no file: extracted they are the output directory or its parent, and
                    // readers disagree on what they hold (apksig signs them, unzip skips them).
                    if nameBytes.count <= 2 && nameBytes.allSatisfy({ $0 == 0x2e }) {
                        throw ZipFormatError.meaninglessName("central directory record #\(index + 1) has the name \(String(decoding: nameBytes, as: UTF8.self).debugQuoted), which names no file; rebuild the APK without it")
                    }
                    if !Self.isValidEntryName(nameBytes) {
                        throw ZipFormatError.malformed("central directory record #\(index + 1) has the name \(String(decoding: nameBytes, as: UTF8.self).debugQuoted), which holds a NUL byte or is not UTF-8: an unsafe name Android refuses (it does not open such an archive)")
                    }
                    let name = Array(nameBytes)
                    let extra = Self.array(try r.readBytes(extraLength))
                    let comment = Self.array(try r.readBytes(commentLength))
                    var displayName: String { String(decoding: name, as: UTF8.self) }  // for messages only
                    if flags & (ZipFlags.encrypted | ZipFlags.strongEncryption) != 0 {
                        throw ZipFormatError.unsupported("entry \(displayName.debugQuoted) is encrypted; APKs cannot contain encrypted entries")
                    }
                    // Android's JAR verifier reads any method but stored as deflate; libziparchive, which reads
                    // everything else, extracts only stored and deflated (`ExtractToWriter`).
                    guard let method = CompressionMethod(rawValue: methodRaw)
                            ?? (readsUnknownMethods || JarSignatureFiles.isSignatureFile(displayName) ? .deflated : nil) else {
                        throw ZipFormatError.unsupported("entry \(displayName.debugQuoted) uses compression method \(methodRaw), which Android cannot extract (its ZIP reader, libziparchive, reads only stored (0) and deflated (8) entries), so the app would not install or run; rebuild the APK with the entry stored or deflated")
                    }
                    var nonstandard = method.rawValue != methodRaw
                    var (uncompressed, compressed, offset) = (Int64(uncompressedSize), Int64(compressedSize), Int64(localHeaderOffset))
                    let hasZip64Values = compressedSize == 0xFFFF_FFFF || uncompressedSize == 0xFFFF_FFFF || localHeaderOffset == 0xFFFF_FFFF
                    if hasZip64Values {
                        guard readsZip64Fields else {
                            throw ZipFormatError.unsupported("entry \(displayName.debugQuoted) uses ZIP64 sizes; ZIP64 archives are not valid APKs")
                        }
                        let values = try Self.zip64Values(in: extra, [uncompressedSize, compressedSize, localHeaderOffset],
                                                          what: "entry \(displayName.debugQuoted)")
                        (uncompressed, compressed, offset) = (values[0], values[1], values[2])
                        nonstandard = true
                    }
                    if method == .stored && compressed != uncompressed {
                        // The sizes as read (a ZIP64 record's, not the 0xFFFFFFFF that sends there).
                        throw ZipFormatError.malformed("stored entry \(displayName.debugQuoted) has compressed size \(compressed) but uncompressed size \(uncompressed)\(hasZip64Values ? " (its ZIP64 extra field says so)" : "")")
                    }
                    // Made in place in the array (a ZipEntry set field by field and then appended is copied).
                    entries.append(ZipEntry(nameBytes: name, versionMadeBy: versionMadeBy, versionNeeded: versionNeeded, flags: flags,
                                            method: method, lastModifiedTime: time, lastModifiedDate: date, crc32: crc,
                                            compressedSize: compressed, uncompressedSize: uncompressed,
                                            centralExtra: nonstandard ? Self.withoutZip64(extra) : extra, comment: comment,
                                            internalAttributes: internalAttributes, externalAttributes: externalAttributes,
                                            localHeaderOffset: offset, hasNonstandardRecords: nonstandard))
                } catch let error as ShortReadError {
                    throw ZipFormatError.truncated("central directory record #\(index + 1): \(error)")
                }
            }
            // More records than the end record counts: readers that walk the central directory by its size see
            // entries that readers going by the count (Android's libziparchive, apksig) do not.
            if r.remaining > 0 {
                let start = eocd.centralDirectoryOffset + Int64(r.offset)
                let found = (bytes: start..<(eocd.centralDirectoryOffset + eocd.centralDirectorySize),
                             records: Self.wholeRecords(in: UnsafeRawBufferPointer(rebasing: cd[r.offset...])))
                if refusesUnaccountedBytes { throw ZipFormatError.unaccountedBytes(Self.uncountedProblem(found, counted: eocd.entryCount)) }
                uncounted = found
            }
            return entries
        }
    }

    /// How many whole central directory records (signature, fixed fields, name, extra field and comment) follow
    /// one another from the start of `bytes`.
    static func wholeRecords(in bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0
        var position = 0
        let fixed = CentralDirectoryRecordLayout.fixedSize
        while position + fixed <= bytes.count,
              UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)) == CentralDirectoryRecordLayout.signature {
            func length(_ at: Int) -> Int { Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: position + at, as: UInt16.self))) }
            let size = fixed + length(28) + length(30) + length(32)
            guard position + size <= bytes.count else { break }
            count += 1
            position += size
        }
        return count
    }

    /// What is wrong with central directory bytes after the counted records (`uncountedCentralDirectoryBytes`).
    public static func uncountedProblem(_ uncounted: (bytes: Range<Int64>, records: Int), counted: Int) -> String {
        let records = uncounted.records == 0 ? "" : uncounted.records == 1 ? " (1 more record)" : " (\(uncounted.records) more records)"
        return "the end of central directory record counts \(counted) entries, but the central directory holds \(uncounted.bytes.count64) more bytes after them\(records)"
    }

    /// What is wrong with bytes between the central directory and the end records (`endRecordGap`).
    public static func endRecordGapProblem(_ gap: Range<Int64>, records: Int = 1) -> String {
        "\(gap.count64) bytes lie between the central directory (which ends at \(gap.lowerBound)) and the end of central directory record\(records == 1 ? "" : "s") at \(gap.upperBound)"
    }

    /// Android's test of an entry name (libziparchive's IsValidEntryName): no NUL byte, and each byte of 0x80 or
    /// more starts a 2- to 4-byte UTF-8 sequence whose continuation bytes follow (overlong forms are not checked
    /// there, so they are accepted here too).
    static func isValidEntryName(_ name: UnsafeRawBufferPointer) -> Bool {
        // Most names are ASCII without a NUL byte, told apart eight bytes at a time.
        if !ByteRangeScan.containsByte(in: name, outside: 0x01..<0x80) { return true }
        var index = 0
        while index < name.count {
            let byte = name[index]
            index += 1
            if byte == 0 { return false }
            if byte < 0x80 { continue }
            let continuation: Int
            if byte & 0xe0 == 0xc0 { continuation = 1 } else if byte & 0xf0 == 0xe0 { continuation = 2 } else if byte & 0xf8 == 0xf0 { continuation = 3 } else { return false }
            guard index + continuation <= name.count else { return false }
            for _ in 0..<continuation {
                guard name[index] & 0xc0 == 0x80 else { return false }
                index += 1
            }
        }
        return true
    }

    /// The values of `fields` (in APPNOTE 4.5.3 order: uncompressed size, compressed size, local header offset),
    /// each 0xFFFFFFFF one read as a uint64 from the ZIP64 extended-information extra field (ID 0x0001), as
    /// apksig's `ZipUtils.parseExtraField`/`checkAndReturnZip64Value` do. Throws when the extra fields are
    /// malformed, the ZIP64 field is missing or too short, or a value is beyond any real file.
    static func zip64Values(in extra: [UInt8], _ fields: [UInt32], what: String) throws -> [Int64] {
        var values: [Int64]?
        let stop = try ExtraField.forEachRecord(in: extra) { id, _, data in
            guard id == 0x0001 else { return true }
            var found = fields.map { Int64($0) }
            var position = data.lowerBound
            for index in fields.indices where fields[index] == 0xFFFF_FFFF {
                guard data.upperBound - position >= 8 else { throw ZipFormatError.malformed("\(what): ZIP64 extra field too short") }
                var value: UInt64 = 0
                for byte in 0..<8 { value |= UInt64(extra[position + byte]) << (8 * byte) }
                guard value < 1 << 48 else { throw ZipFormatError.malformed("\(what): ZIP64 value \(value) out of range") }
                found[index] = Int64(value)
                position += 8
            }
            values = found
            return false
        }
        if let values { return values }
        // The walk stops early only at a record that claims more bytes than are left.
        if extra.count - stop >= 4 { throw ZipFormatError.malformed("\(what): extra field runs past its end") }
        throw ZipFormatError.malformed("\(what): 0xFFFFFFFF size or offset without a ZIP64 extra field")
    }

    /// `bytes` in an array of their own (none allocated for no bytes: most extra fields and comments are empty).
    static func array(_ bytes: UnsafeRawBufferPointer) -> [UInt8] { bytes.isEmpty ? [] : Array(bytes) }

    /// Sizes of the central directory record's fields after the signature, in order (APPNOTE 4.3.12).
    static let centralDirectoryFieldSizes = [2, 2, 2, 2, 2, 2, 4, 4, 4, 2, 2, 2, 2, 2, 4, 4]

    /// `total` (the sum of `sizes`) when `reader` has that many bytes left; otherwise throws the `ShortReadError`
    /// that reading the fields one by one would have thrown, so messages name the field that is cut short.
    static func fixedFields(in reader: LittleEndianReader, total: Int, sizes: [Int]) throws -> Int {
        if reader.remaining >= total { return total }
        var probe = reader
        for size in sizes { _ = try probe.readBytes(size) }
        return total
    }

    /// Reads the first and the last byte of every local header (its fixed part and the name, as long as the central
    /// directory's) in a tight loop before they are parsed. The headers are spread over the whole file (one per
    /// entry, a page or more apart in a large APK), so each first read is a cache and TLB miss, and most names
    /// end in the next cache line; here the misses are independent and overlap, while inside the parsing loop
    /// each one stalls it.
    static func touchLocalHeaders(of entries: ArraySlice<ZipEntry>, in all: UnsafeRawBufferPointer) {
        var sum: UInt8 = 0
        let count = Int64(all.count)
        for index in entries.indices {
            let offset = entries[index].localHeaderOffset
            let last = offset + Int64(LocalFileHeaderLayout.fixedSize + entries[index].nameBytes.count) - 1
            if offset >= 0 && last < count {
                sum &+= all[Int(offset)] &+ all[Int(last)]
            } else if offset >= 0 && offset < count {
                sum &+= all[Int(offset)]
            }
        }
        keep(sum)
    }

    /// Uses `value` in a way the optimiser cannot see through, so the reads that produced it stay.
    @_optimize(none) @inline(never) private static func keep(_ value: UInt8) {}

    /// Byte-for-byte equality (`memcmp`; `elementsEqual` walks the bytes one at a time).
    static func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }  // both empty
        return memcmp(x, y, a.count) == 0
    }

    /// `extra` without its ZIP64 extended-information records (ID 0x0001), for an entry whose records are
    /// written anew with standard sizes and offsets.
    static func withoutZip64(_ extra: [UInt8]) -> [UInt8] { ExtraField.removing(0x0001, from: extra) }

    /// Reads the local header of `entry` and checks it against the central directory record
    /// (`readsZip64Fields`: see `Limits.readsZip64`). The local header's compression method is not consulted
    /// (the central directory's rules, as in libziparchive and apksig); one that differs marks the entry
    /// `hasNonstandardRecords`, so that writers that copy records write a local header that agrees.
    static func readLocalHeader(of entry: inout ZipEntry, in all: UnsafeRawBufferPointer, limit: Int64, readsZip64Fields: Bool = false) throws {
        var name: String { entry.name.debugQuoted }  // only for messages: quoting every name costs time
        var usesZip64 = false
        guard entry.localHeaderOffset + Int64(LocalFileHeaderLayout.fixedSize) <= limit else {
            throw ZipFormatError.malformed("local header of entry \(name) at offset \(entry.localHeaderOffset) lies outside the entries section (which ends at \(limit))")
        }
        var r = LittleEndianReader(all, offset: Int(entry.localHeaderOffset))
        do {
            guard try r.read(UInt32.self) == LocalFileHeaderLayout.signature else {
                throw ZipFormatError.malformed("entry \(name): no local file header at offset \(entry.localHeaderOffset)")
            }
            // The guard above leaves the 26 bytes after the signature inside the file: no per-field checks.
            let fields = try r.readBytes(LocalFileHeaderLayout.fixedSize - 4)
            func field<T: FixedWidthInteger>(_ at: Int, _: T.Type = T.self) -> T {
                T(littleEndian: fields.loadUnaligned(fromByteOffset: at - 4, as: T.self))
            }
            // 4: version needed
            let flags = field(6, UInt16.self)
            let method = field(8, UInt16.self)
            // 10: time and date
            let crc = field(14, UInt32.self)
            let compressedSize = field(18, UInt32.self)
            let uncompressedSize = field(22, UInt32.self)
            let nameLength = Int(field(26, UInt16.self))
            let extraLength = Int(field(28, UInt16.self))
            let localName = try r.readBytes(nameLength)
            guard entry.nameBytes.withUnsafeBytes({ Self.bytesEqual($0, localName) }) else {
                throw ZipFormatError.headerMismatch("entry \(name): local header names it \(String(decoding: localName, as: UTF8.self).debugQuoted)")
            }
            if method != entry.method.rawValue { entry.hasNonstandardRecords = true }
            guard (flags & ZipFlags.dataDescriptor) == (entry.flags & ZipFlags.dataDescriptor),
                  (flags & ZipFlags.encrypted) == 0 else {
                throw ZipFormatError.headerMismatch("entry \(name): local header flags 0x\(String(flags, radix: 16)) disagree with the central directory's 0x\(String(entry.flags, radix: 16))")
            }
            entry.localExtra = Self.array(try r.readBytes(extraLength))
            var (localUncompressed, localCompressed) = (Int64(uncompressedSize), Int64(compressedSize))
            if readsZip64Fields && (uncompressedSize == 0xFFFF_FFFF || compressedSize == 0xFFFF_FFFF) {
                // ZIP64 in the local header: its extra field holds the sizes that are 0xFFFFFFFF (no offset here).
                let values = try Self.zip64Values(in: entry.localExtra, [uncompressedSize, compressedSize], what: "local header of entry \(name)")
                (localUncompressed, localCompressed) = (values[0], values[1])
                usesZip64 = true
                entry.localExtra = Self.withoutZip64(entry.localExtra)
                entry.hasNonstandardRecords = true
            } else if flags & ZipFlags.dataDescriptor == 0 && (uncompressedSize == 0xFFFF_FFFF || compressedSize == 0xFFFF_FFFF) {
                // Not damage: a writer that streams (Python's zipfile with force_zip64) puts ZIP64 sizes in the local
                // header while the central directory holds the small ones. libziparchive before Android 11 and
                // apksig's LocalFileRecord compare the two without reading the ZIP64 field, and refuse the entry.
                throw ZipFormatError.unsupported("entry \(name): its local header gives its sizes in a ZIP64 field, which Android 10 and older and apksigner cannot read; ZIP64 archives are not valid APKs, so write it without ZIP64 (Python's zipfile: without force_zip64)")
            }
            if flags & ZipFlags.dataDescriptor == 0 {
                guard crc == entry.crc32, localCompressed == entry.compressedSize, localUncompressed == entry.uncompressedSize else {
                    throw ZipFormatError.headerMismatch("entry \(name): local header CRC/sizes (\(crc), \(compressedSize), \(uncompressedSize)) disagree with the central directory (\(entry.crc32), \(entry.compressedSize), \(entry.uncompressedSize))")
                }
            }
            entry.dataOffset = Int64(r.offset)
        } catch let error as ShortReadError {
            throw ZipFormatError.truncated("local header of entry \(name): \(error)")
        }
        let dataEnd = entry.dataOffset + entry.compressedSize
        guard dataEnd <= limit else {
            throw ZipFormatError.truncated("entry \(name): its \(entry.compressedSize) bytes of data at offset \(entry.dataOffset) run past the entries section (which ends at \(limit))")
        }
        if entry.hasDataDescriptor {
            // CRC and sizes (8-byte sizes with ZIP64), optionally after a signature.
            var size: Int64 = usesZip64 ? 20 : 12
            if dataEnd + 4 <= limit {
                let signature = UInt32(littleEndian: all.loadUnaligned(fromByteOffset: Int(dataEnd), as: UInt32.self))
                if signature == DataDescriptorLayout.signature { size += 4 }
            }
            guard dataEnd + size <= limit else {
                throw ZipFormatError.truncated("entry \(name): data descriptor runs past the entries section")
            }
            // The descriptor must say what the central directory says: Android refuses the entry otherwise
            // (libziparchive's ValidateDataDescriptor), and a streaming reader would take the descriptor's word.
            var at = Int(dataEnd) + (size == 16 || size == 24 ? 4 : 0)
            func value(_ width: Int) -> UInt64 {
                defer { at += width }
                return (0..<width).reduce(UInt64(0)) { $0 | UInt64(all[at + $1]) << (8 * $1) }
            }
            let (crc, compressed, uncompressed) = (value(4), value(usesZip64 ? 8 : 4), value(usesZip64 ? 8 : 4))
            guard UInt32(crc) == entry.crc32, compressed == UInt64(entry.compressedSize), uncompressed == UInt64(entry.uncompressedSize) else {
                throw ZipFormatError.headerMismatch("entry \(name): data descriptor CRC/sizes (\(crc), \(compressed), \(uncompressed)) disagree with the central directory (\(entry.crc32), \(entry.compressedSize), \(entry.uncompressedSize))")
            }
            entry.dataDescriptorSize = size
        }
    }
}

/// A structural problem in a ZIP archive.
public enum ZipFormatError: Error, CustomStringConvertible, Equatable {
    case notAZip(String)
    case truncated(String)
    case malformed(String)
    case headerMismatch(String)
    case duplicateEntry(String)
    case unsupported(String)
    case limitExceeded(String)
    /// Bytes no record accounts for (`ZipArchive.Limits.refusesUnaccountedBytes`).
    case unaccountedBytes(String)
    /// An entry name no reader can give a meaning: empty, "." or "..".
    case meaninglessName(String)
    /// More than one end of central directory record that ends the file: readers disagree on which is the archive's.
    case secondEndRecord(String)
    /// The end record counts more entries than the central directory holds.
    case entryCountMismatch(String)
    /// An archive without entries, which Android does not open.
    case noEntries(String)

    public var description: String {
        switch self {
        case .notAZip(let m): return "not a ZIP archive: \(m)"
        case .truncated(let m): return "truncated archive: \(m)"
        case .malformed(let m): return "malformed archive: \(m)"
        case .headerMismatch(let m): return "local header disagrees with the central directory: \(m)"
        case .duplicateEntry(let name): return "duplicate entry \(name.debugQuoted): the archive names it twice, which Android refuses (and which can hide content from a verifier)"
        case .unsupported(let m): return "unsupported archive: \(m)"
        case .limitExceeded(let m): return "archive exceeds a safety limit: \(m)"
        case .unaccountedBytes(let m): return "malformed archive: \(m); a streaming reader would see what these bytes hold while a central-directory reader (Android) does not, so they are refused rather than carried into a signed output"
        case .meaninglessName(let m): return "malformed archive: \(m)"
        case .secondEndRecord(let m): return "malformed archive: \(m)"
        case .entryCountMismatch(let m): return "malformed archive: \(m)"
        case .noEntries(let m): return "empty archive: \(m)"
        }
    }
}

extension String {
    /// The string in double quotes with control characters escaped, for error messages about hostile names;
    /// a long one is cut (`cappedForMessage`).
    public var debugQuoted: String { cappedForMessage.debugDescription }
}
