/// One entry of a ZIP archive as its central directory and local header describe it.
///
/// Keeps the byte ranges it was parsed from, so an unchanged entry can be copied raw (its compressed bytes
/// and CRC exactly as in the input) and its records re-emitted with only the offsets changed.
public struct ZipEntry: Sendable, Hashable {
    /// The name as stored (ZIP names are bytes; APKs use UTF-8).
    public var nameBytes: [UInt8]
    public var name: String
    public var versionMadeBy: UInt16
    public var versionNeeded: UInt16
    public var flags: UInt16
    public var method: CompressionMethod
    public var lastModifiedTime: UInt16
    public var lastModifiedDate: UInt16
    public var crc32: UInt32
    public var compressedSize: Int64
    public var uncompressedSize: Int64
    /// Central directory extra field.
    public var centralExtra: [UInt8]
    /// Local header extra field.
    public var localExtra: [UInt8]
    public var comment: [UInt8]
    public var internalAttributes: UInt16
    public var externalAttributes: UInt32
    /// Offset of the local file header in the archive.
    public var localHeaderOffset: Int64
    /// Offset of the first byte of compressed data.
    public var dataOffset: Int64
    /// Size of the data descriptor after the data (0 when flag bit 3 is clear).
    public var dataDescriptorSize: Int64
    /// The input's records hold what an APK must not (`ZipArchive.Limits.readsZip64`): ZIP64 fields (Android
    /// 10 and older read none), a local header whose compression method is not the central directory's (Android
    /// reads the central one, a streaming reader the local one), or a method other than stored or deflated on
    /// a JAR signature file (read as deflated). The other fields hold the values as read; a writer that copies
    /// records writes new ones from them instead.
    public var hasNonstandardRecords = false

    public init(nameBytes: [UInt8], method: CompressionMethod, crc32: UInt32, compressedSize: Int64,
                uncompressedSize: Int64, lastModifiedTime: UInt16, lastModifiedDate: UInt16) {
        self.init(nameBytes: nameBytes, versionMadeBy: 0, versionNeeded: method == .deflated ? 20 : 10, flags: 0, method: method,
                  lastModifiedTime: lastModifiedTime, lastModifiedDate: lastModifiedDate, crc32: crc32, compressedSize: compressedSize,
                  uncompressedSize: uncompressedSize, centralExtra: [], comment: [], internalAttributes: 0, externalAttributes: 0,
                  localHeaderOffset: 0, hasNonstandardRecords: false)
    }

    /// An entry as its central directory record gives it; the local header's extra field and the data's offset
    /// are read after.
    init(nameBytes: [UInt8], versionMadeBy: UInt16, versionNeeded: UInt16, flags: UInt16, method: CompressionMethod,
         lastModifiedTime: UInt16, lastModifiedDate: UInt16, crc32: UInt32, compressedSize: Int64, uncompressedSize: Int64,
         centralExtra: [UInt8], comment: [UInt8], internalAttributes: UInt16, externalAttributes: UInt32,
         localHeaderOffset: Int64, hasNonstandardRecords: Bool) {
        self.nameBytes = nameBytes
        self.name = String(decoding: nameBytes, as: UTF8.self)
        self.versionMadeBy = versionMadeBy
        self.versionNeeded = versionNeeded
        self.flags = flags
        self.method = method
        self.lastModifiedTime = lastModifiedTime
        self.lastModifiedDate = lastModifiedDate
        self.crc32 = crc32
        self.compressedSize = compressedSize
        self.uncompressedSize = uncompressedSize
        self.centralExtra = centralExtra
        self.localExtra = []
        self.comment = comment
        self.internalAttributes = internalAttributes
        self.externalAttributes = externalAttributes
        self.localHeaderOffset = localHeaderOffset
        self.dataOffset = 0
        self.dataDescriptorSize = 0
        self.hasNonstandardRecords = hasNonstandardRecords
    }

    public var isDirectory: Bool { nameBytes.last == UInt8(ascii: "/") }
    public var isCompressed: Bool { method == .deflated }
    public var hasDataDescriptor: Bool { flags & ZipFlags.dataDescriptor != 0 }
    /// Where this entry's compressed bytes lie in the archive.
    public var dataRange: Range<Int64> { dataOffset..<(dataOffset + compressedSize) }
    /// From the local header to the end of the data descriptor.
    public var recordRange: Range<Int64> { localHeaderOffset..<(dataOffset + compressedSize + dataDescriptorSize) }

    /// True when the data starts on a multiple of `alignment` (compressed entries never need alignment).
    public func isAligned(to alignment: Int64) -> Bool { alignment <= 1 || dataOffset % alignment == 0 }
}

extension ZipEntry {
    /// The local header for writing this entry at some offset, with `extra` as its extra field. The data
    /// descriptor flag is cleared: sizes and CRC are always written in the header.
    public func encodedLocalHeader(extra: [UInt8]) -> [UInt8] {
        var w = LittleEndianWriter(capacity: LocalFileHeaderLayout.fixedSize + nameBytes.count + extra.count)
        w.write(LocalFileHeaderLayout.signature)
        writeSharedHeaderFields(into: &w, extraCount: extra.count)
        w.write(bytes: nameBytes)
        w.write(bytes: extra)
        return w.bytes
    }

    /// The central directory record for this entry with its local header at `localHeaderOffset`.
    public func encodedCentralDirectoryRecord(localHeaderOffset: Int64) -> [UInt8] {
        var w = LittleEndianWriter(capacity: CentralDirectoryRecordLayout.fixedSize + nameBytes.count + centralExtra.count)
        w.write(CentralDirectoryRecordLayout.signature)
        w.write(versionMadeBy)
        writeSharedHeaderFields(into: &w, extraCount: centralExtra.count)
        w.write(UInt16(comment.count))
        w.write(UInt16(0))
        w.write(internalAttributes)
        w.write(externalAttributes)
        w.write(UInt32(truncatingIfNeeded: localHeaderOffset))
        w.write(bytes: nameBytes)
        w.write(bytes: centralExtra)
        w.write(bytes: comment)
        return w.bytes
    }

    /// The fields the local header and the central directory record share, in the same order in both (APPNOTE
    /// 4.3.7 and 4.3.12): version needed, flags (without the data descriptor bit), method, time, date, CRC-32,
    /// sizes, name length and extra field length.
    private func writeSharedHeaderFields(into w: inout LittleEndianWriter, extraCount: Int) {
        w.write(versionNeeded)
        w.write(flags & ~ZipFlags.dataDescriptor)
        w.write(method.rawValue)
        w.write(lastModifiedTime)
        w.write(lastModifiedDate)
        w.write(crc32)
        w.write(UInt32(truncatingIfNeeded: compressedSize))
        w.write(UInt32(truncatingIfNeeded: uncompressedSize))
        w.write(UInt16(nameBytes.count))
        w.write(UInt16(extraCount))
    }
}

/// The end of central directory record.
public struct EndOfCentralDirectory: Sendable, Hashable {
    public var entryCount: Int
    public var centralDirectorySize: Int64
    public var centralDirectoryOffset: Int64
    public var comment: [UInt8]
    /// Where the record starts in the archive.
    public var offset: Int64
    /// Where the ZIP64 end of central directory record read in its place lies (`ZipArchive.Limits
    /// .readsZip64`): it and its locator, which ends at `offset`, are end records too. Nil without one.
    public var zip64EndRecord: Range<Int64>?
    /// Where the end records start: the ZIP64 end record's offset, or `offset`. The central directory ends here.
    public var endRecordsOffset: Int64 { zip64EndRecord?.lowerBound ?? offset }

    public init(entryCount: Int, centralDirectorySize: Int64, centralDirectoryOffset: Int64, comment: [UInt8] = [], offset: Int64 = 0) {
        self.entryCount = entryCount
        self.centralDirectorySize = centralDirectorySize
        self.centralDirectoryOffset = centralDirectoryOffset
        self.comment = comment
        self.offset = offset
    }

    public func encoded() -> [UInt8] {
        var w = LittleEndianWriter(capacity: EndOfCentralDirectoryLayout.fixedSize + comment.count)
        w.write(EndOfCentralDirectoryLayout.signature)
        w.write(UInt16(0))
        w.write(UInt16(0))
        w.write(UInt16(truncatingIfNeeded: entryCount))
        w.write(UInt16(truncatingIfNeeded: entryCount))
        w.write(UInt32(truncatingIfNeeded: centralDirectorySize))
        w.write(UInt32(truncatingIfNeeded: centralDirectoryOffset))
        w.write(UInt16(comment.count))
        w.write(bytes: comment)
        return w.bytes
    }
}

/// Extra-field helpers: a ZIP extra field is a list of (uint16 id, uint16 size, data) records.
public enum ExtraField {
    /// The one walk over the records of `extra`: `visit` gets each record's ID, where the record starts and
    /// its data's range, in order, until it returns false or a record runs past the end (a header cut off, or
    /// a size larger than what is left: apksig and the ZIP readers stop there). Returns where the walk stopped.
    @discardableResult
    public static func forEachRecord(in extra: [UInt8], _ visit: (_ id: UInt16, _ start: Int, _ data: Range<Int>) throws -> Bool) rethrows -> Int {
        var i = 0
        while extra.count - i >= 4 {
            let id = UInt16(extra[i]) | UInt16(extra[i + 1]) << 8
            let size = Int(UInt16(extra[i + 2]) | UInt16(extra[i + 3]) << 8)
            guard size <= extra.count - i - 4 else { break }
            guard try visit(id, i, (i + 4)..<(i + 4 + size)) else { break }
            i += 4 + size
        }
        return i
    }

    /// Removes every record with `headerID` (and any trailing garbage too short to be a record, as apksig does).
    public static func removing(_ headerID: UInt16, from extra: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        forEachRecord(in: extra) { id, start, data in
            if id != headerID { out.append(contentsOf: extra[start..<data.upperBound]) }
            return true
        }
        return out
    }

    /// The alignment multiple stored in an Android 0xd935 record, as apksig's
    /// `getInputJarEntryDataAlignmentMultiple` reads it: the first such record decides, and one too short to
    /// hold the multiple means none.
    public static func alignmentMultiple(in extra: [UInt8]) -> Int? {
        var multiple: Int?
        forEachRecord(in: extra) { id, _, data in
            guard id == AlignmentExtraLayout.headerID else { return true }
            if data.count >= 2 { multiple = Int(UInt16(extra[data.lowerBound]) | UInt16(extra[data.lowerBound + 1]) << 8) }
            return false
        }
        return multiple
    }
}
