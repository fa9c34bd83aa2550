import ZlibWrapper

/// An input APK: memory-mapped once, parsed, and checked against hostile-archive rules.
///
/// Every stage reads the input through this value: raw bytes of an entry are a zero-copy slice of the
/// mapping, uncompressed bytes are inflated on demand with a hard bound. The file is never written.
public struct APKArchive: Sendable {
    /// The whole file.
    public let source: any DataSource
    /// The parsed ZIP structure.
    public let zip: ZipArchive
    /// A name for messages (the path).
    public let label: String
    public let limits: UnpackLimits

    /// Maps and parses the APK at `path`. `readsAll`: the caller will read every byte (signing, aligning,
    /// repacking), so the file is read ahead into the page cache in the background (`MappedFile.readAhead`).
    public init(path: String, limits: UnpackLimits = UnpackLimits(), readsAll: Bool = false) throws {
        let file: MappedFile
        do { file = try MappedFile(path: path) } catch let error as FileError {
            throw UnpackError.cannotRead(path: path, reason: error.reason)
        }
        if readsAll { file.readAhead() }
        try self.init(source: file, label: path, limits: limits)
    }

    /// Parses an APK held in `source`.
    public init(source: any DataSource, label: String, limits: UnpackLimits = UnpackLimits()) throws {
        self.source = source
        self.label = label
        self.limits = limits
        do {
            var zipLimits = ZipArchive.Limits()
            zipLimits.maxEntries = limits.maxEntries
            zipLimits.readsLikeAndroid = limits.readsLikeAndroid
            zipLimits.readsZip64 = limits.readsZip64
            zipLimits.refusesUnaccountedBytes = limits.refusesUnaccountedBytes
            zip = try ZipArchive(source: source, limits: zipLimits)
        } catch let error as ZipFormatError {
            throw UnpackError.malformedArchive(path: label, reason: error.description)
        } catch let error as DataSourceRangeError {
            throw UnpackError.malformedArchive(path: label, reason: "truncated: \(error)")
        }
        try validate()
    }

    /// Entries in central-directory order.
    public var entries: [ZipEntry] { zip.entries }

    public func entry(named name: String) -> ZipEntry? { zip.entry(named: name) }

    /// The entry's compressed bytes exactly as stored, sharing the mapping.
    public func rawData(of entry: ZipEntry) throws -> any DataSource { try zip.rawData(of: entry) }

    /// Streams the entry's uncompressed bytes to `body`, checking the CRC and the declared size. Returns how
    /// many of a deflated entry's compressed bytes follow the end of its deflate stream (0 when none do, and
    /// for a stored entry): no reader inflates them and no CRC-32 covers them, though apksig and Android
    /// accept the entry (libziparchive's `inflateImpl` checks only that no byte is left unread).
    @discardableResult
    public func withUncompressedChunks(of entry: ZipEntry, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        var crc = CRC32()
        var streamEnd = entry.compressedSize
        do {
            try source.withBytes(in: entry.dataRange) { raw in
                switch entry.method {
                case .stored:
                    var offset = 0
                    while offset < raw.count {
                        let end = min(raw.count, offset + (1 << 20))
                        let chunk = UnsafeRawBufferPointer(rebasing: raw[offset..<end])
                        crc.update(chunk)
                        try body(chunk)
                        offset = end
                    }
                case .deflated:
                    try Inflate.inflate(raw, expectedSize: entry.uncompressedSize, consumed: { streamEnd = Int64($0) }) { chunk in
                        crc.update(chunk)
                        try body(chunk)
                    }
                }
            }
        } catch let error as Inflate.Failure {
            throw UnpackError.corruptEntry(path: label, entry: entry.name, reason: error.description)
        }
        guard crc.value == entry.crc32 else {
            throw UnpackError.corruptEntry(path: label, entry: entry.name,
                                           reason: "CRC-32 is \(Self.hex(crc.value)), the archive says \(Self.hex(entry.crc32))")
        }
        return entry.compressedSize - streamEnd
    }

    /// Reads every entry's data as `withUncompressedChunks` does, for a command that reads only some of them and
    /// still must not accept an archive with a damaged entry (a CRC-32, a deflate stream or a size that is not
    /// what the header says): throws `UnpackError.corruptEntry` for the first.
    public func checkEntries() throws {
        for entry in entries where !entry.isDirectory || entry.compressedSize > 0 {
            try withUncompressedChunks(of: entry) { _ in }
        }
    }

    /// The entry's uncompressed bytes. For large entries prefer `withUncompressedChunks`.
    public func uncompressedData(of entry: ZipEntry) throws -> [UInt8] {
        guard entry.uncompressedSize <= limits.maxInMemoryEntrySize else {
            throw UnpackError.limitExceeded(path: label, reason: "entry \(entry.name.debugQuoted) is \(entry.uncompressedSize) bytes uncompressed, over the \(limits.maxInMemoryEntrySize >> 20) MiB limit for an entry read into memory (no real APK has one this large: a zip bomb or a corrupt header)")
        }
        var out: [UInt8] = []
        out.reserveCapacity(Int(min(entry.uncompressedSize, 1 << 28)))
        try withUncompressedChunks(of: entry) { out.append(contentsOf: $0) }
        return out
    }

    /// A CRC-32 as messages print it: 0x and eight hex digits.
    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// Hostile-archive checks beyond ZIP structure: names that could escape an output directory,
    /// declared sizes and compression ratios beyond sane limits.
    private func validate() throws {
        var total: Int64 = 0
        // The fields are read in place: `for entry in zip.entries` copies every entry (its arrays and name retained
        // and released), which the sizes checked here do not need.
        let entries = zip.entries
        for index in entries.indices {
            if limits.checksEntryNames, let problem = EntryName.problem(with: entries[index].nameBytes) {
                throw UnpackError.unsafeEntryName(path: label, name: entries[index].name, reason: problem)
            }
            let uncompressedSize = entries[index].uncompressedSize, compressedSize = entries[index].compressedSize
            guard uncompressedSize <= limits.maxEntrySize else {
                throw UnpackError.limitExceeded(path: label, reason: "entry \(entries[index].name.debugQuoted) declares \(uncompressedSize) bytes uncompressed, over the limit of \(limits.maxEntrySize)")
            }
            // DEFLATE cannot do better than about 1032:1; a larger declared ratio is a bomb or a lie.
            if entries[index].method == .deflated && uncompressedSize > (1 << 20)
                && uncompressedSize / max(compressedSize, 1) > Int64(limits.maxCompressionRatio) {
                throw UnpackError.limitExceeded(path: label, reason: "entry \(entries[index].name.debugQuoted) claims a compression ratio of \(uncompressedSize / max(compressedSize, 1)):1 (\(compressedSize) → \(uncompressedSize) bytes), beyond what DEFLATE can produce: a zip bomb or a corrupt header")
            }
            total += uncompressedSize
        }
        guard total <= limits.maxTotalSize else {
            throw UnpackError.limitExceeded(path: label, reason: "entries declare \(total) bytes uncompressed in all, over the limit of \(limits.maxTotalSize)")
        }
    }
}

/// Limits that keep a hostile archive from costing unbounded time, memory or disk.
public struct UnpackLimits: Sendable {
    public var maxEntries = 65_535
    public var maxEntrySize: Int64 = 2 << 30
    public var maxTotalSize: Int64 = 8 << 30
    public var maxCompressionRatio = 1100
    /// Largest entry `uncompressedData(of:)` will hold in memory (manifests, signature files, resources.arsc:
    /// framework-res.apk's is 31 MB). Without it a 1 MB APK whose AndroidManifest.xml inflates to 1 GB made
    /// verify, sign and run allocate 1 GB. Streaming readers (`withUncompressedChunks`) are not limited by it.
    public var maxInMemoryEntrySize: Int64 = 128 << 20
    /// Refuse names that are unsafe as paths (`..`, absolute, backslashes, NUL). Off for verification and for
    /// the commands that write an APK (`rewriting`): libziparchive opens such an APK (it refuses only a NUL or
    /// invalid UTF-8, which every reader here refuses too), Android installs it and apksig signs it, so none of
    /// them may refuse it for names that never become paths there. On where names become files (unpack, decode).
    public var checksEntryNames = true
    /// The verifier's reading of compression methods and ZIP64 entry fields (`ZipArchive.Limits.readsLikeAndroid`);
    /// verification only.
    public var readsLikeAndroid = false
    /// ZIP64 fields whose values fit standard ones, read (`ZipArchive.Limits.readsZip64`); whatever writes
    /// them out writes standard records.
    public var readsZip64 = true
    /// Refuse bytes no record accounts for (`ZipArchive.Limits.refusesUnaccountedBytes`); off for verification only.
    public var refusesUnaccountedBytes = true
    public init() {}

    /// For the commands that read an APK to write one (`sign`, `run`, `watch`, `align`, `merge`): one rule set,
    /// Android's. Names are not paths there, so only what Android refuses in a name is refused.
    public static var rewriting: UnpackLimits {
        var limits = UnpackLimits()
        limits.checksEntryNames = false
        return limits
    }
}

/// Entry-name rules for anything that becomes a path: no traversal, no absolute paths, no backslashes,
/// no NUL or other control characters, valid UTF-8.
public enum EntryName {
    /// Why `name` is unsafe, or nil when it is fine.
    ///
    /// One pass over the bytes without allocating (every entry of every input goes through here), then the
    /// problems in a fixed order: the first one that applies is the one reported.
    public static func problem(with name: [UInt8]) -> String? {
        if name.isEmpty { return "the name is empty" }
        var hasNUL = false, hasControl = false, hasBackslash = false, isASCII = true
        var hasDotDotComponent = false, hasEmptyInnerComponent = false, hasDotComponent = false
        name.withUnsafeBufferPointer { name in
            var componentStart = 0
            func isDotDot(_ start: Int, _ end: Int) -> Bool {
                end - start == 2 && name[start] == UInt8(ascii: ".") && name[start + 1] == UInt8(ascii: ".")
            }
            func isDot(_ start: Int, _ end: Int) -> Bool { end - start == 1 && name[start] == UInt8(ascii: ".") }
            var index = 0
            while index < name.count {
                // Eight bytes at a time while none is interesting (the usual case between separators).
                if index + 8 <= name.count {
                    let word = UInt64(littleEndian: UnsafeRawPointer(name.baseAddress! + index).loadUnaligned(as: UInt64.self))
                    if !Self.mayNeedAttention(word) { index += 8; continue }
                }
                let byte = name[index]
                defer { index += 1 }
                // Printable ASCII other than '/' and '\\' is the common case: nothing to note.
                if byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: "/") && byte != UInt8(ascii: "\\") { continue }
                if byte == 0 { hasNUL = true } else if byte < 0x20 || byte == 0x7f { hasControl = true }
                if byte == UInt8(ascii: "\\") { hasBackslash = true }
                if byte >= 0x80 { isASCII = false }
                if byte == UInt8(ascii: "/") {
                    // A component that ends in a '/' is never the last one, so empty means '//' (or a leading '/').
                    if index == componentStart { hasEmptyInnerComponent = true }
                    if isDotDot(componentStart, index) { hasDotDotComponent = true }
                    if isDot(componentStart, index) { hasDotComponent = true }
                    componentStart = index + 1
                }
            }
            if isDotDot(componentStart, name.count) { hasDotDotComponent = true }
            if isDot(componentStart, name.count) { hasDotComponent = true }
        }
        if hasNUL { return "the name contains a NUL byte" }
        if hasControl { return "the name contains control characters" }
        if hasBackslash { return "the name contains a backslash, which some tools treat as a path separator" }
        if name.first == UInt8(ascii: "/") { return "the name is an absolute path" }
        // ASCII without NUL is valid UTF-8; only other names need the validating decoder.
        if !isASCII && String(validatingUTF8: name.map { CChar(bitPattern: $0) } + [0]) == nil { return "the name is not valid UTF-8" }
        if hasDotDotComponent { return "the name contains a '..' component that would escape the output directory" }
        if hasEmptyInnerComponent { return "the name contains an empty path component ('//')" }
        // "a/./b" is another spelling of "a/b" (a second entry would overwrite the first), "a/." the folder a.
        if hasDotComponent { return "the name contains a '.' component, so it is not the file's own path" }
        if name.count >= 2 && name[1] == UInt8(ascii: ":") { return "the name looks like a drive-letter path" }
        return nil
    }

    /// Why `name`, safe as a path, still cannot be a file's path on Linux: a part longer than a file name can be
    /// (NAME_MAX). Android reads such a name; only the commands that write entries as files refuse it.
    public static func fileNameProblem(with name: [UInt8]) -> String? {
        guard let long = name.split(separator: UInt8(ascii: "/")).first(where: { $0.count > fileNameLimit }) else { return nil }
        return "a part of its name is \(long.count) bytes long, longer than a file name can be (\(fileNameLimit) bytes)"
    }

    /// NAME_MAX on Linux and Darwin alike.
    static let fileNameLimit = 255

    /// False only when all eight bytes of `word` are printable ASCII (0x21...0x7E) other than '/' and '\\',
    /// bytes `problem(with:)` has nothing to note about. Bit tricks from "Bit Twiddling Hacks" (hasless,
    /// hasmore, haszero): they may report a byte that is fine (the caller then looks at each byte), never
    /// miss one that is not.
    @inline(__always) static func mayNeedAttention(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        let below = (word &- ones &* 0x21) & ~word & highs            // some byte < 0x21
        let above = ((word &+ ones &* (127 - 0x7E)) | word) & highs   // some byte > 0x7E
        return below != 0 || above != 0 || hasZeroByte(word ^ (ones &* 0x2F)) || hasZeroByte(word ^ (ones &* 0x5C))
    }
}

/// Why an input APK could not be read.
public enum UnpackError: Error, CustomStringConvertible {
    case cannotRead(path: String, reason: String)
    case malformedArchive(path: String, reason: String)
    case unsafeEntryName(path: String, name: String, reason: String)
    case limitExceeded(path: String, reason: String)
    case corruptEntry(path: String, entry: String, reason: String)
    case outputExists(path: String)
    case extractionFailed(path: String, reason: String)
    /// Two entries a case-insensitive file system would write to one path (`CaseInsensitiveNames`); `components`
    /// are the parts that differ only in case.
    case namesDifferOnlyInCase(path: String, first: String, second: String, components: (String, String), directory: String)

    public var description: String {
        switch self {
        case .cannotRead(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .malformedArchive(let path, let reason):
            return "\(path) is not a valid APK: \(reason). Re-download or rebuild it; apkpatch does not repair damaged archives."
        case .unsafeEntryName(let path, let name, let reason):
            return "\(path) was refused: entry \(name.debugQuoted) is unsafe to extract (\(reason)), so nothing was extracted: such a name can be crafted to write outside the output directory or over another entry."
        case .limitExceeded(let path, let reason):
            return "\(path) was refused: \(reason)."
        case .corruptEntry(let path, let entry, let reason):
            return "\(path): entry \(entry.debugQuoted) is corrupt: \(reason). Its bytes are not what the archive says they are (a damaged download or copy, or an archive edited by hand): download or build the APK again, as apkpatch does not repair damaged entries."
        case .outputExists(let path):
            return "\(path) already exists and is not empty; choose another output directory or remove it first."
        case .extractionFailed(let path, let reason):
            return "cannot extract to \(path): \(reason)"
        case .namesDifferOnlyInCase(let path, let first, let second, let components, let directory):
            let parts = components.0 == first.lastPathComponent && components.1 == second.lastPathComponent ? "" : " (\(components.0.debugQuoted) and \(components.1.debugQuoted))"
            return "\(path) cannot be written out as files in \(directory): entries \(first.debugQuoted) and \(second.debugQuoted) differ only in case\(parts), and the folder is on a case-insensitive file system (as macOS, Windows and exFAT volumes are), where both would be one file (or one folder), so a build from the folder would not give back this APK. Nothing was written. Extract onto a case-sensitive file system (on macOS a case-sensitive APFS volume; on Windows a folder after `fsutil file setCaseSensitiveInfo FOLDER enable`), or patch the APK without extracting it: `apkpatch run` replaces entries by name."
        }
    }
}
