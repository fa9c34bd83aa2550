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
