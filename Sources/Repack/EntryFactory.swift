import APKCore
import ZlibWrapper

extension OutputEntry {
    /// Largest entry `uncompressedBytes()` inflates into memory (framework-res.apk's resources.arsc is 31 MB).
    public static let maxInMemorySize: Int64 = 128 << 20

    /// The entry's uncompressed content: the plaintext it carries, or its data inflated (bounded by the
    /// declared size, CRC-checked). For small entries such as the manifest.
    public func uncompressedBytes() throws -> [UInt8] {
        if let uncompressed { return try uncompressed.allBytes() }
        // Same bound as Unpack's UnpackLimits.maxInMemoryEntrySize: a 1 MB input whose manifest inflates to 1 GB
        // must not cost 1 GB here (apkpatch run read it through this path).
        guard entry.uncompressedSize <= Self.maxInMemorySize else {
            throw RepackError.inconsistentEntry(entry.name, "\(entry.uncompressedSize) bytes uncompressed, over the \(Self.maxInMemorySize >> 20) MiB limit for an entry read into memory (a zip bomb or a corrupt header)")
        }
        let content: [UInt8] = try data.withBytes(in: 0..<data.count) { raw in
            entry.method == .stored ? Array(raw) : try Inflate.inflate(raw, expectedSize: entry.uncompressedSize)
        }
        guard CRC32.checksum(content) == entry.crc32 else {
            throw RepackError.inconsistentEntry(entry.name, "CRC-32 does not match its data")
        }
        return content
    }

    /// An unchanged input entry, copied raw: its compressed bytes and CRC stay byte-identical.
    public static func copying(_ entry: ZipEntry, from source: any DataSource) throws -> OutputEntry {
        OutputEntry(entry: entry, data: try source.slice(entry.dataRange))
    }

    /// A new or replaced entry with `content`, compressed with `method`. `template` supplies the metadata to
    /// keep (timestamps, attributes, extra fields) when the entry replaces one.
    public static func making(name: String, content: [UInt8], method: CompressionMethod, template: ZipEntry? = nil,
                              timestamp: DOSTimestamp, compressionLevel: Int32 = 6) throws -> OutputEntry {
        let crc = CRC32.checksum(content)
        let data: [UInt8] = method == .deflated ? try Deflate.compress(content, level: compressionLevel) : content
        var entry = ZipEntry(nameBytes: Array(name.utf8), method: method, crc32: crc, compressedSize: Int64(data.count),
                             uncompressedSize: Int64(content.count), lastModifiedTime: timestamp.time, lastModifiedDate: timestamp.date)
        if let template {
            entry.versionMadeBy = template.versionMadeBy
            entry.flags = template.flags & ZipFlags.utf8Names
            entry.lastModifiedTime = template.lastModifiedTime
            entry.lastModifiedDate = template.lastModifiedDate
            entry.internalAttributes = template.internalAttributes
            entry.externalAttributes = template.externalAttributes
            entry.centralExtra = ExtraField.removing(AlignmentExtraLayout.headerID, from: template.centralExtra)
            entry.localExtra = ExtraField.removing(AlignmentExtraLayout.headerID, from: template.localExtra)
            entry.comment = template.comment
        }
        return OutputEntry(entry: entry, data: ByteArrayDataSource(data), uncompressed: ByteArrayDataSource(content))
    }
}

/// An MS-DOS date and time as ZIP stores them.
public struct DOSTimestamp: Sendable, Hashable, Comparable {
    public var date: UInt16
    public var time: UInt16
    public init(date: UInt16, time: UInt16) { self.date = date; self.time = time }

    /// 2009-01-01 00:00, apksig's timestamp for new entries when nothing else is known.
    public static let apksigDefault = DOSTimestamp(date: 0x3a21, time: 0)

    /// apksig's rule for entries it adds: the newest timestamp among the kept entries, so output is
    /// reproducible (no wall clock) and new entries do not look older than the rest.
    public static func newest(in entries: [ZipEntry]) -> DOSTimestamp {
        entries.map { DOSTimestamp(date: $0.lastModifiedDate, time: $0.lastModifiedTime) }.max() ?? apksigDefault
    }

    public static func < (a: DOSTimestamp, b: DOSTimestamp) -> Bool { (a.date, a.time) < (b.date, b.time) }
}
