import APKCore
import ZlibWrapper
#if canImport(Glibc)
import Glibc
#endif

extension OutputEntry {
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
        if let template { entry.keepMetadata(of: template) }
        return OutputEntry(entry: entry, data: ByteArrayDataSource(data), uncompressed: ByteArrayDataSource(content))
    }
}

extension OutputEntry {
    /// Files at least this large are streamed (`making(name:contentsOf:…)`) rather than read into memory.
    public static let streamingThreshold: Int64 = 16 << 20

    /// A new or replaced entry with the content of the file at `path`, streamed: the file is copied once
    /// (a snapshot: an editor rewriting it mid-build cannot make the CRC disagree with the data) and, when
    /// `method` is deflated, compressed in pieces, each into an unlinked temporary file that is then mapped.
    /// Memory stays flat whatever the file's size. Metadata as `making(name:content:…)`.
    public static func making(name: String, contentsOf path: String, method: CompressionMethod, template: ZipEntry? = nil,
                              timestamp: DOSTimestamp, compressionLevel: Int32 = 6) throws -> OutputEntry {
        let input = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard input >= 0 else { throw RepackError.unreadablePatchFile(path, String(cString: strerror(errno))) }
        defer { close(input) }
        let plain = try TemporaryFile()
        let compressed = method == .deflated ? try TemporaryFile() : nil
        let deflater = method == .deflated ? try Deflater(level: compressionLevel) : nil
        var crc = CRC32()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RepackError.unreadablePatchFile(path, String(cString: strerror(errno)))
            }
            if n == 0 { break }
            try buffer.withUnsafeBytes { all in
                let piece = UnsafeRawBufferPointer(rebasing: all[0..<n])
                crc.update(piece)
                try plain.write(piece)
                try deflater?.update(piece) { try compressed!.write($0) }
            }
        }
        try deflater?.finish { try compressed!.write($0) }
        let content = try plain.map()
        let data = try compressed?.map() ?? content
        var entry = ZipEntry(nameBytes: Array(name.utf8), method: method, crc32: crc.value, compressedSize: data.count,
                             uncompressedSize: content.count, lastModifiedTime: timestamp.time, lastModifiedDate: timestamp.date)
        if let template { entry.keepMetadata(of: template) }
        return OutputEntry(entry: entry, data: data, uncompressed: content)
    }
}

extension OutputEntry {
    /// This entry stored uncompressed (itself when it already is), with its name and metadata: what Android
    /// needs of `resources.arsc` and of the native libraries it maps from the APK. The data is inflated once and
    /// CRC-checked, into memory when small, else through an unlinked temporary file (memory stays flat).
    public func storedUncompressed() throws -> OutputEntry {
        guard entry.method != .stored else { return self }
        let timestamp = DOSTimestamp(date: entry.lastModifiedDate, time: entry.lastModifiedTime)
        if entry.uncompressedSize < Self.streamingThreshold {
            return try .making(name: entry.name, content: try uncompressedBytes(), method: .stored, template: entry, timestamp: timestamp)
        }
        let content: any DataSource
        if let uncompressed {
            content = uncompressed
        } else {
            let plain = try TemporaryFile()
            var crc = CRC32()
            try data.withBytes(in: 0..<data.count) { raw in
                try Inflate.inflate(raw, expectedSize: entry.uncompressedSize) { chunk in
                    crc.update(chunk)
                    try plain.write(chunk)
                }
            }
            guard crc.value == entry.crc32 else { throw RepackError.inconsistentEntry(entry.name, "CRC-32 does not match its data") }
            content = try plain.map()
        }
        var stored = ZipEntry(nameBytes: entry.nameBytes, method: .stored, crc32: entry.crc32, compressedSize: content.count,
                              uncompressedSize: content.count, lastModifiedTime: timestamp.time, lastModifiedDate: timestamp.date)
        stored.keepMetadata(of: entry)
        return OutputEntry(entry: stored, data: content, uncompressed: content)
    }
}

extension ZipEntry {
    /// What a replacement keeps of the entry it replaces: version, UTF-8 flag, time, attributes, extra fields
    /// (without an old alignment field), comment.
    mutating func keepMetadata(of template: ZipEntry) {
        versionMadeBy = template.versionMadeBy
        flags = template.flags & ZipFlags.utf8Names
        lastModifiedTime = template.lastModifiedTime
        lastModifiedDate = template.lastModifiedDate
        internalAttributes = template.internalAttributes
        externalAttributes = template.externalAttributes
        centralExtra = ExtraField.removing(AlignmentExtraLayout.headerID, from: template.centralExtra)
        localExtra = ExtraField.removing(AlignmentExtraLayout.headerID, from: template.localExtra)
        comment = template.comment
    }
}

/// A file in `$TMPDIR` written once, then mapped and closed; also what a split APK set inflates a compressed
/// member APK into (it is read, never extracted beside the input). Unnamed (`O_TMPFILE`) where the file system
/// allows it, so nothing is left even if the process is killed while writing it; else a named file unlinked
/// once mapped (the mapping keeps its blocks until it goes).
package final class TemporaryFile {
    private var fd: Int32
    /// The hidden file's path, or nil for an unnamed file.
    private let path: String?
    private let directory: String

    package init() throws {
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        self.directory = directory
        fd = OutputFile.openUnnamed(in: directory)
        if fd >= 0 {
            path = nil
            return
        }
        var template = Array("\(directory)/.apkpatch-stream-XXXXXX".utf8CString)
        fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw RepackError.temporaryFile(directory, String(cString: strerror(errno))) }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        guard fd >= 0 else { return }  // mapped: already closed and unlinked
        close(fd)
        if let path { unlink(path) }
    }

    /// What errors name: the file, or the directory of an unnamed one.
    private var displayPath: String { path ?? directory }

    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw RepackError.temporaryFile(displayPath, String(cString: strerror(errno))) }
            done += n
        }
    }

    package func map() throws -> MappedFile {
        defer {
            close(fd)
            fd = -1
            if let path { unlink(path) }
        }
        return try MappedFile(path: path ?? "/proc/self/fd/\(fd)")
    }
}
