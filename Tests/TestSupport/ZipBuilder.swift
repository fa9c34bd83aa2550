import APKCore

/// Builds small ZIP archives byte by byte, so tests can make exactly the malformed structures a hostile
/// archive would have (the real tools refuse to write them).
public struct ZipBuilder {
    public struct Item {
        public var name: [UInt8]
        public var data: [UInt8]
        public var crc: UInt32
        public init(name: String, data: [UInt8], crc: UInt32) { self.name = Array(name.utf8); self.data = data; self.crc = crc }
        public init(rawName: [UInt8], data: [UInt8], crc: UInt32) { self.name = rawName; self.data = data; self.crc = crc }
    }
    public var items: [Item] = []
    public init() {}

    /// A stored-entries archive. `mutateLocal`/`mutateCentral` may edit each entry's records before writing.
    public func build(mutateLocal: (Int, inout ZipEntry) -> Void = { _, _ in },
                      mutateCentral: (Int, inout ZipEntry) -> Void = { _, _ in }) -> [UInt8] {
        var out: [UInt8] = []
        var central: [UInt8] = []
        for (index, item) in items.enumerated() {
            var entry = ZipEntry(nameBytes: item.name, method: .stored, crc32: item.crc, compressedSize: Int64(item.data.count),
                                 uncompressedSize: Int64(item.data.count), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
            let offset = Int64(out.count)
            var local = entry
            mutateLocal(index, &local)
            out += local.encodedLocalHeader(extra: local.localExtra)
            out += item.data
            entry.localHeaderOffset = offset
            mutateCentral(index, &entry)
            central += entry.encodedCentralDirectoryRecord(localHeaderOffset: entry.localHeaderOffset)
        }
        let eocd = EndOfCentralDirectory(entryCount: items.count, centralDirectorySize: Int64(central.count), centralDirectoryOffset: Int64(out.count))
        return out + central + eocd.encoded()
    }
}

/// Rewrites an existing archive's layout around its unchanged records, so tests can give a real (aapt-built or
/// signed) APK exactly the hostile structure a crafted one has: bytes before or between the local records, an
/// uncounted central directory record, bytes before the end record, a comment. Local records (header, data,
/// descriptor) are copied byte for byte; central records are re-encoded with their new offsets.
public struct ZipRelayout {
    public var archive: ZipArchive
    /// Bytes written before the local record of the entry at this file-order position (0: a prefix).
    public var inserted: [Int: [UInt8]] = [:]
    /// Bytes after the last local record (before the central directory).
    public var afterEntries: [UInt8] = []
    /// Extra central directory bytes after the counted records (an uncounted record, say).
    public var uncountedCentralRecords: [UInt8] = []
    /// Bytes between the central directory and the end record.
    public var beforeEndRecord: [UInt8] = []
    public var comment: [UInt8] = []
    /// Records written before the first one and after the last one (header and data, re-encoded).
    public var leading: [(entry: ZipEntry, data: [UInt8])] = []
    public var trailing: [(entry: ZipEntry, data: [UInt8])] = []

    /// Reads `bytes` leniently (unaccounted bytes are what these tests make).
    public init(bytes: [UInt8]) throws {
        var limits = ZipArchive.Limits()
        limits.refusesUnaccountedBytes = false
        archive = try ZipArchive(source: ByteArrayDataSource(bytes), limits: limits)
    }

    public func build() throws -> [UInt8] {
        var out: [UInt8] = []
        var central: [UInt8] = []
        func append(_ records: [(entry: ZipEntry, data: [UInt8])]) {
            for record in records {
                central += record.entry.encodedCentralDirectoryRecord(localHeaderOffset: Int64(out.count))
                out += record.entry.encodedLocalHeader(extra: record.entry.localExtra) + record.data
            }
        }
        append(leading)
        var offsets: [Int64] = Array(repeating: 0, count: archive.entries.count)
        for (position, index) in archive.indicesInFileOrder.enumerated() {
            out += inserted[position] ?? []
            offsets[index] = Int64(out.count)
            out += try archive.source.bytes(in: archive.entries[index].recordRange)
        }
        for (index, entry) in archive.entries.enumerated() { central += entry.encodedCentralDirectoryRecord(localHeaderOffset: offsets[index]) }
        append(trailing)
        out += afterEntries
        let centralDirectoryOffset = Int64(out.count)
        central += uncountedCentralRecords
        out += central + beforeEndRecord
        out += EndOfCentralDirectory(entryCount: leading.count + archive.entries.count + trailing.count, centralDirectorySize: Int64(central.count),
                                     centralDirectoryOffset: centralDirectoryOffset, comment: comment).encoded()
        return out
    }
}
