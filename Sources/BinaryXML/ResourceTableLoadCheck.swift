import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ZlibWrapper

/// A rule of Android's resource loader that a `resources.arsc` breaks, found by `ResourceTableLoadCheck`.
/// Compare by `code` (`CodedError`); `description` says where, what, and what Android does with such a table.
public struct ResourceTableProblem: CodedError {
    /// The rules, each one a check of libandroidfw (AOSP `frameworks/base/libs/androidfw`): `ChunkIterator`
    /// (`ChunkIterator.cpp`), `LoadedArsc::Load`, `LoadedArsc::LoadTable`, `LoadedPackage::Load`,
    /// `VerifyResTableType` and `VerifyResTableEntry` (`LoadedArsc.cpp`, the loader since Android 9), and
    /// `ResTable::addInternal`, `ResTable::parsePackage` and `ResStringPool::setTo` (`ResourceTypes.cpp`, the
    /// loader before it, still what aapt reads tables with). Raw values are stable: tests match on them.
    public enum Code: String, Sendable, CaseIterable {
        // Chunks (ChunkIterator::VerifyNextChunk; ResTable's validate_chunk).
        case chunkHeaderTruncated
        case chunkHeaderTooSmall
        case chunkHeaderLargerThanChunk
        case chunkPastEnd
        case chunkSizeNotAligned
        // The file (ApkAssets::Load) and its RES_TABLE chunk (LoadedArsc::Load, LoadTable; ResTable::addInternal).
        case emptyTable
        case noTable
        case tableHeaderTooSmall
        case morePackagesThanDeclared
        case fewerPackagesThanDeclared
        case noGlobalStringPool
        // RES_TABLE_FLAG_LIST (LoadedArsc::LoadTable, where the read/write resource flags are on): the names of the
        // feature flags the table's resources depend on, each a string of the global pool.
        case flagListWithoutStrings
        case flagListNameOutOfRange
        case flagListNameNotUTF8
        // String pools (ResStringPool::setTo).
        case stringPoolHeaderTooSmall
        case stringOffsetsPastEnd
        case stringsStartPastEnd
        case stylesStartPastEnd
        case stylesBeforeStrings
        case emptyStringData
        case stringDataNotTerminated
        case styleDataNotTerminated
        // RES_TABLE_PACKAGE (LoadedPackage::Load; ResTable::parsePackage).
        case packageHeaderTooSmall
        case packageIDOutOfRange
        case typeIDOffsetOutOfRange
        case typeStringsInvalid
        case keyStringsInvalid
        // RES_TABLE_TYPE_SPEC.
        case typeSpecHeaderTooSmall
        case typeSpecIDZero
        case typeSpecIDOutOfRange
        case typeSpecTooManyEntries
        case typeSpecEntriesPastEnd
        // RES_TABLE_TYPE (VerifyResTableType).
        case typeHeaderTooSmall
        case typeIDZero
        case typeTooManyEntries
        case typeOffsetsOverlapEntries
        case typeEntriesPastEnd
        case typeEntriesNotAligned
        case typeWithoutTypeSpec
        // Entries of a type (VerifyResTableEntry).
        case entryNotAligned
        case entryPastEnd
        case entryTooSmall
        case entrySizePastEnd
        case valueTooSmall
        case valuePastEnd
        case mapNotAligned
        case mapPastEnd
        // RES_TABLE_LIBRARY, RES_TABLE_OVERLAYABLE and its policies.
        case libraryHeaderTooSmall
        case libraryEntriesPastEnd
        case libraryPackageIDOutOfRange
        case overlayableHeaderTooSmall
        case overlayableDuplicateName
        case overlayablePolicyHeaderTooSmall
        case overlayablePolicyEntriesPastEnd
        // RES_TABLE_STAGED_ALIAS (LoadedPackage::Load, Android 12+; read in the framework's package only).
        case stagedAliasHeaderTooSmall
        case stagedAliasEntriesPastEnd
        case stagedAliasDuplicateFinalizedID
        case stagedAliasDuplicateStagedID
        // Encodings newer than the APK's minSdkVersion: devices it installs on cannot read them.
        /// `FLAG_SPARSE` types, read from Android 8.0 (API 26) on (`ResourceTypes.h`: "Only available on platforms
        /// >= O"); aapt2 writes them only when minSdkVersion or the type's configuration is 26 or more.
        case sparseTypeBeforeAndroid8
        /// `FLAG_OFFSET16` types, read from Android 14 (API 34) on; `VerifyResTableType` before it takes the
        /// offsets for 32-bit ones and refuses the table. aapt2 writes them only with compact entries.
        case offset16TypeBeforeAndroid14
        /// `FLAG_COMPACT` entries, read from Android 14 (API 34) on; aapt2 writes them only when minSdkVersion is
        /// above 33 (`TableFlattener`'s `UseCompactEntries`).
        case compactEntryBeforeAndroid14
    }

    /// What Android does with a table that breaks the rule.
    public enum Consequence: Sendable {
        /// The loader refuses the whole table: the APK does not install (the package manager cannot read its
        /// manifest's resources) or the app does not start.
        case refused
        /// Only the loader before Android 9 (`ResTable`) refuses the table.
        case refusedBeforeAndroid9
        /// The loader stops at the chunk and loses the rest of the table (Android 9+), or refuses it.
        case truncated
        /// The table loads without the chunk's resources.
        case resourcesLost
        /// The table loads, and every lookup of the entry fails (`VerifyResTableEntry` runs on each lookup).
        case entryUnreadable
        /// Devices below API `level` cannot read it, and the APK's minSdkVersion lets it install on some.
        case unreadableBefore(level: Int)
        /// The loader refuses the table where it reads resource feature-flag lists (the aconfig flag
        /// `android.content.res.resource_readwrite_flags` on); others skip the chunk.
        case refusedWhereFlagListsAreRead
    }

    public let code: Code
    /// Offset in the table of the chunk or field at fault.
    public let offset: Int
    /// What is wrong there, in the loader's terms.
    public let detail: String

    public init(_ code: Code, at offset: Int, _ detail: String) {
        self.code = code; self.offset = offset; self.detail = detail
    }

    public var consequence: Consequence {
        switch code {
        case .chunkPastEnd: return .truncated
        case .noTable: return .resourcesLost
        case .fewerPackagesThanDeclared, .noGlobalStringPool, .typeStringsInvalid, .keyStringsInvalid, .packageIDOutOfRange:
            return .refusedBeforeAndroid9
        case .entryNotAligned, .entryPastEnd, .entryTooSmall, .entrySizePastEnd, .valueTooSmall, .valuePastEnd, .mapNotAligned, .mapPastEnd:
            return .entryUnreadable
        case .flagListWithoutStrings, .flagListNameOutOfRange, .flagListNameNotUTF8: return .refusedWhereFlagListsAreRead
        default: return newerEncoding.map { .unreadableBefore(level: $0.requiredMinSdkVersion) } ?? .refused
        }
    }

    /// The encoding newer than the APK's minSdkVersion that the rule is about, nil for the other rules.
    public var newerEncoding: ResourceTableEncoding? {
        switch code {
        case .sparseTypeBeforeAndroid8: return .sparse
        case .offset16TypeBeforeAndroid14: return .offset16
        case .compactEntryBeforeAndroid14: return .compact
        default: return nil
        }
    }

    /// Whether the table is well formed but uses an encoding newer than the APK's minSdkVersion: raising
    /// minSdkVersion is a fix, besides building the table again without it.
    public var isAboveMinSdkVersion: Bool { newerEncoding != nil }

    /// What makes the table one Android reads, in words for the end of a message.
    public var remedy: String {
        guard let encoding = newerEncoding else { return "Rebuild resources.arsc from the app's sources (its Gradle build, or aapt2 link)" }
        let what = encoding == .sparse ? "sparse encoding" : "compact entries"
        return "Raise the manifest's minSdkVersion to \(encoding.requiredMinSdkVersion) if the app no longer supports older devices, or rebuild resources.arsc without \(what) (aapt2 link without \(encoding.aapt2Option))"
    }

    public var description: String {
        let outcome: String
        switch consequence {
        case .refused: outcome = "Android's resource loader refuses the table"
        case .refusedBeforeAndroid9: outcome = "Android's resource loader before Android 9 (ResTable) refuses the table"
        case .truncated: outcome = "Android's resource loader stops reading there and loses the rest of the table, or refuses it"
        case .resourcesLost: outcome = "Android loads no resources from it"
        case .entryUnreadable: outcome = "Android cannot read the resource: every lookup of it fails"
        case .refusedWhereFlagListsAreRead:
            outcome = "Android's resource loader refuses the table where it reads resource flag lists (read/write resource flags on, Android 16 builds and later)"
        case .unreadableBefore(let level):
            switch code {
            case .offset16TypeBeforeAndroid14:
                outcome = "Android before 14 takes the offsets for 32-bit ones: Android 9 to 13 refuse the whole table (when the type has two entries or more) or misread it, as earlier versions do"
            case .sparseTypeBeforeAndroid8:
                outcome = "Android before \(Self.release(level)) (API \(level)) reads the type as a dense one: its resources come back wrong or not at all"
            default:
                outcome = "Android before \(Self.release(level)) (API \(level)) cannot read these entries: every lookup of them fails"
            }
        }
        return "\(detail) (offset \(offset)): \(outcome)"
    }

    private static func release(_ level: Int) -> String { level == 26 ? "8.0" : level == 34 ? "14" : "API \(level)" }
}

/// An encoding of `resources.arsc` that only newer Android releases read, named by its `ResourceTypes.h` flag (the
/// raw value, stable: `verify --json` reports it).
public enum ResourceTableEncoding: String, Sendable, Hashable, CaseIterable, Codable {
    /// Sparse types (`ResTable_type::FLAG_SPARSE`): (index, offset) pairs for the entries a configuration has.
    case sparse = "FLAG_SPARSE"
    /// 16-bit entry offsets (`ResTable_type::FLAG_OFFSET16`), which aapt2 writes with compact entries.
    case offset16 = "FLAG_OFFSET16"
    /// Compact entries (`ResTable_entry::FLAG_COMPACT`): eight bytes, the value inline.
    case compact = "FLAG_COMPACT"

    /// The lowest minSdkVersion whose devices all read it: Android 8.0 (API 26) for sparse types, Android 14 (API 34)
    /// for the other two.
    public var requiredMinSdkVersion: Int { self == .sparse ? 26 : 34 }

    /// The option of `aapt2 link` that writes it (another tool's option, quoted for advice).
    public var aapt2Option: String { self == .sparse ? "--enable-sparse-encoding" : "--enable-compact-entries" }
}

/// The checks Android's resource loaders make when they load a `resources.arsc`, in one pass over the bytes: what
/// `apkpatch verify` reports and what every command that writes an APK refuses to write.
///
/// The rules are the union of the current loader's (`LoadedArsc`, Android 9+) and the one before it (`ResTable`):
/// a table one of them refuses breaks the app on some devices, and no tool writes such a table on purpose. Each
/// `ResourceTableProblem.Code` names its source. Every entry of every type is checked as `VerifyResTableEntry`
/// checks it on lookup (the loader defers that check; a table with a bad entry loads, and the resource fails on
/// every device), so the pass reads the chunk headers, the offset arrays and each entry's first bytes, not the
/// values or strings: the cost grows with the number of entries, not with the size of the table.
///
/// What the loaders accept is accepted here too: fewer than 8 bytes after the last chunk of the file or of a
/// chunk (Android 9+ stops there, `ResTable` does not look), unknown chunk types (skipped with a warning; so are
/// flagged-resource chunks, RES_TABLE_FLAGGED, by the newest loader read here), a second global string pool or
/// typeSpec for the same type (ignored), sparse types whose indices are not sorted (lookups miss, nothing fails), and staged-alias chunks
/// outside the framework's package (ignored with a warning).
///
/// Three encodings are read only by newer devices: sparse types (`FLAG_SPARSE`, Android 8.0), 16-bit entry offsets
/// (`FLAG_OFFSET16`) and compact entries (`FLAG_COMPACT`: eight bytes, no value to check), both Android 14. A table
/// that uses one breaks on the devices below it that the APK's minSdkVersion admits; when the minSdkVersion is not
/// known (the manifest declares none, as in bundletool's split APKs, which install beside a base), they are let be,
/// as aapt2 encodes them when it has no minSdkVersion either.
///
/// Layout (`ResourceTypes.h`): every chunk starts with `ResChunk_header` (type u16, headerSize u16, size u32).
/// The file is a `RES_TABLE` (header 12: packageCount u32) holding the global string pool and the packages; a
/// package (header 288, 284 before typeIdOffset: id u32 at 8, name char16[128], typeStrings u32 at 268, keyStrings
/// u32 at 276, typeIdOffset u32 at 284) holds its two string pools, then per type a `RES_TABLE_TYPE_SPEC` (header
/// 16: id u8 at 8, entryCount u32 at 12, then u32 flags per entry) and its `RES_TABLE_TYPE`s (header ≥ 24: id u8 at
/// 8, flags u8 at 9, entryCount u32 at 12, entriesStart u32 at 16, then the config; after the header the entry
/// offsets, u32 each, u16 each with `FLAG_OFFSET16`, (index u16, offset/4 u16) pairs with `FLAG_SPARSE`).
/// An entry: size u16, flags u16, key u32; then a `Res_value` (size u16, res0 u8, dataType u8, data u32), or for
/// a map entry (size ≥ 16) parent u32 and count u32, then count `ResTable_map`s of 12 bytes.
public enum ResourceTableLoadCheck {
    /// The first rule `bytes` breaks, in the order the loader reads the table, or nil when Android loads it whole.
    /// Encodings newer than some devices read are judged at the end against `minSdkVersion` (the APK's declared
    /// one, nil when it declares none), which is called only for a table that uses one.
    public static func problem(in bytes: UnsafeRawBufferPointer, minSdkVersion: () -> Int?) -> ResourceTableProblem? {
        problem(walking: Walk(bytes: bytes), minSdkVersion: minSdkVersion)
    }

    /// The same for bytes in an array.
    public static func problem(in bytes: [UInt8], minSdkVersion: () -> Int?) -> ResourceTableProblem? {
        bytes.withUnsafeBytes { problem(in: $0, minSdkVersion: minSdkVersion) }
    }

    /// The same for the table in `range` of `source`, read in place. The walk goes front to back, so the pages of
    /// a mapping it has passed are given back as it goes (`DataSource.discard`: they stay in the page cache), and
    /// the rest when it ends: a table of tens of megabytes costs the resident set a few MiB, not its size. An
    /// in-memory source ignores the discards.
    public static func problem(in source: any DataSource, range: Range<Int64>, minSdkVersion: () -> Int?) throws -> ResourceTableProblem? {
        try source.withBytes(in: range) { (bytes) -> ResourceTableProblem? in
            defer { source.discard(range) }
            var released = 0
            var walk = Walk(bytes: bytes)
            walk.passed = { end in
                // In steps of several MiB: each MADV_DONTNEED interrupts the other cores to flush their TLBs.
                guard end - released >= releaseStep else { return }
                source.discard((range.lowerBound + Int64(released))..<(range.lowerBound + Int64(end)))
                released = end
            }
            return problem(walking: walk, minSdkVersion: minSdkVersion)
        }
    }

    /// How far the walk goes between two discards of the pages behind it.
    private static let releaseStep = 4 << 20

    /// The same for a deflated table, `raw` (`entry`'s compressed bytes), inflated only as far as the walk has
    /// reached, into pages given back behind it: the one inflation a command needs, in bounded memory (the largest
    /// chunk the walk reads at once, a type or a string pool, plus a few MiB). `inflated` sees every byte of the
    /// table once, in order, whatever the walk finds (a signer takes the entry's v1 digest and CRC-32 there): the
    /// stream is inflated to its end. Throws `Inflate.Failure` when it does not inflate to `entry`'s declared size;
    /// `streamEnd` is how many bytes of `raw` the stream took.
    public static func problem(inflating raw: UnsafeRawBufferPointer, of entry: ZipEntry, minSdkVersion: () -> Int?,
                               inflated: (UnsafeRawBufferPointer) throws -> Void) throws -> (problem: ResourceTableProblem?, streamEnd: Int) {
        // The walk holds the closures it calls; none outlives this call.
        try withoutActuallyEscaping(inflated) { inflated in try problem(inflating: raw, of: entry, minSdkVersion: minSdkVersion, into: inflated) }
    }

    private static func problem(inflating raw: UnsafeRawBufferPointer, of entry: ZipEntry, minSdkVersion: () -> Int?,
                                into inflated: @escaping (UnsafeRawBufferPointer) throws -> Void) throws -> (problem: ResourceTableProblem?, streamEnd: Int) {
        let stream = try Inflate.Stream(raw, expectedSize: entry.uncompressedSize)
        let count = Int(max(0, entry.uncompressedSize))
        let table = try AnonymousPages(count: count)
        var filled = 0, released = 0
        var failure: (any Error)?
        var walk = Walk(bytes: UnsafeRawBufferPointer(table.bytes))
        walk.reach = { end in
            guard failure == nil else { return false }
            do {
                while filled < end {
                    // A few hundred KiB at a time: each piece is hashed while still in the core's cache.
                    let piece = UnsafeMutableRawBufferPointer(rebasing: table.bytes[filled..<min(count, max(end, filled + inflateStep))])
                    let read = try stream.read(into: piece)
                    guard read > 0 else { throw Inflate.Failure.shorterThanDeclared(expected: Int64(count), actual: Int64(filled)) }
                    try inflated(UnsafeRawBufferPointer(rebasing: piece[0..<read]))
                    filled += read
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        walk.passed = { end in
            guard end - released >= releaseStep else { return }
            table.discard(released..<end)
            released = end
        }
        let found = problem(walking: walk, minSdkVersion: minSdkVersion)
        if let failure { throw failure }
        table.discard(0..<filled)
        // The rest of the stream, past where the walk stopped, through a small buffer (one byte at least: a stream
        // longer than declared fails there).
        let rest = try AnonymousPages(count: max(1, min(count - filled, inflateStep)))
        while true {
            let read = try stream.read(into: rest.bytes)
            if read == 0 { break }
            try inflated(UnsafeRawBufferPointer(rebasing: rest.bytes[0..<read]))
        }
        return (found, stream.consumed)
    }

    /// How much of a deflated table is inflated at once while it is walked.
    private static let inflateStep = 256 << 10

    private static func problem(walking walk: Walk, minSdkVersion: () -> Int?) -> ResourceTableProblem? {
        var encodings = NewerEncodings()
        do { try walk.file(&encodings) } catch { return error }
        return encodings.problem(minSdkVersion: minSdkVersion)
    }

    /// The minSdkVersion the newer-encoding rules judge by, from the `android:minSdkVersion` attribute of each
    /// `<uses-sdk>` (nil where one has none): nil when none has one, or when it is not a level (a codename of a
    /// release not known here, a value of another type), as for a manifest that declares none.
    public static func declaredMinSdkVersion(_ attributes: [XMLTree.Attribute?]) -> Int? {
        guard attributes.contains(where: { $0 != nil }), case .success(let level) = SDKVersion.minSdkVersion(of: attributes) else { return nil }
        return level
    }
}

/// The first type chunk of the table that uses each encoding newer devices introduced, noted during the walk.
private struct NewerEncodings {
    typealias Problem = ResourceTableProblem
    /// Offset and type ID of the first `FLAG_SPARSE` type whose configuration is below API 26.
    var sparse: (offset: Int, typeID: Int)?
    /// Offset and type ID of the first `FLAG_OFFSET16` type.
    var offset16: (offset: Int, typeID: Int)?
    /// Offset and type ID of the first type with a `FLAG_COMPACT` entry.
    var compact: (offset: Int, typeID: Int)?

    /// The rule the first of them breaks for `minSdkVersion`, the one that refuses the table first.
    func problem(minSdkVersion: () -> Int?) -> Problem? {
        guard sparse != nil || offset16 != nil || compact != nil, let level = minSdkVersion() else { return nil }
        let name = { (typeID: Int) in "type 0x" + String(typeID, radix: 16) }
        if let offset16, level < 34 {
            return Problem(.offset16TypeBeforeAndroid14, at: offset16.offset,
                           "\(name(offset16.typeID)) has 16-bit entry offsets (FLAG_OFFSET16), which Android reads from API 34 on, but the APK's minSdkVersion is \(level)")
        }
        if let compact, level < 34 {
            return Problem(.compactEntryBeforeAndroid14, at: compact.offset,
                           "\(name(compact.typeID)) has compact entries (FLAG_COMPACT), which Android reads from API 34 on, but the APK's minSdkVersion is \(level)")
        }
        if let sparse, level < 26 {
            return Problem(.sparseTypeBeforeAndroid8, at: sparse.offset,
                           "\(name(sparse.typeID)) is sparse (FLAG_SPARSE) in a configuration below API 26, which Android reads from API 26 on, but the APK's minSdkVersion is \(level)")
        }
        return nil
    }
}

/// Struct sizes and flags of `ResourceTypes.h` the checks use.
private enum Layout {
    static let chunkHeader = 8
    static let tableHeader = 12
    static let stringPoolHeader = 28
    static let packageHeaderWithoutTypeIDOffset = 284
    static let packageHeader = 288
    static let typeSpecHeader = 16
    /// `kResTableTypeMinSize`: the type header up to and with the config's size field.
    static let typeMinimumHeader = 24
    static let libraryHeader = 12
    static let libraryEntry = 4 + 256
    static let overlayableHeader = 8 + 512 + 512
    static let overlayablePolicyHeader = 16
    static let entry = 8
    static let mapEntry = 16
    static let value = 8
    static let map = 12
    static let noEntry: UInt32 = 0xFFFF_FFFF
    /// Entry offsets skimmed at once for NO_ENTRY (64 bytes).
    static let offsetBlock = 16
    static let typeFlagSparse: UInt8 = 0x01
    static let typeFlagOffset16: UInt8 = 0x02
    static let entryFlagCompact: UInt16 = 0x0008
    static let utf8Flag: UInt32 = 1 << 8
    /// `ResTable_type.config` starts at 20; its `sdkVersion` (u16) at 24 in it, read when the config's size covers it.
    static let typeConfig = 20
    static let configSDKVersion = 24
    static let stagedAliasHeader = 12
    static let stagedAliasEntry = 8
    static let frameworkPackageID: UInt32 = 0x01
}

private struct Walk {
    typealias Problem = ResourceTableProblem
    let bytes: UnsafeRawBufferPointer
    /// Told the end of each chunk once the chunk is checked: the walk reads nothing before that offset again,
    /// so the caller may give those bytes' pages back.
    var passed: ((Int) -> Void)?
    /// Asked, before the walk reads bytes up to an offset, to make them readable (a table inflated as it is
    /// walked); false when they cannot be, which ends the walk. nil: `bytes` is all there.
    var reach: ((Int) -> Bool)?

    /// Makes `bytes[..<end]` readable (`reach`).
    func need(_ end: Int) throws(Problem) {
        if let reach, !reach(end) { throw Problem(.chunkPastEnd, at: end, "the table's data cannot be read past offset \(end)") }
    }

    func u8(_ offset: Int) -> UInt8 { bytes[offset] }
    func u16(_ offset: Int) -> UInt16 { UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)) }
    func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }

    struct Chunk {
        let offset: Int, type: UInt16, headerSize: Int, size: Int
        var end: Int { offset + size }
        var headerEnd: Int { offset + headerSize }
        var name: String { Walk.name(of: type) }
    }

    /// How messages name the type chunks of type ID `id`.
    static func typeName(_ id: Int) -> String { "type 0x\(String(id, radix: 16))" }

    static func name(of type: UInt16) -> String {
        switch type {
        case 0x0001: return "string pool"
        case 0x0002: return "RES_TABLE chunk"
        case 0x0200: return "package chunk"
        case 0x0201: return "type chunk"
        case 0x0202: return "typeSpec chunk"
        case 0x0203: return "library chunk"
        case 0x0204: return "overlayable chunk"
        case 0x0205: return "overlayable policy chunk"
        case 0x0206: return "staged alias chunk"
        case 0x0207: return "flagged chunk"
        case 0x0208: return "flag list chunk"
        default: return "chunk of type 0x" + String(type, radix: 16)
        }
    }

    /// The chunks in `start..<end`, as `ChunkIterator` walks them: each one checked before `body` sees it.
    /// Fewer than 8 bytes after a chunk are let be, as the loaders do; where the first chunk should start, they are
    /// an error (the iterator's constructor checks its first chunk with the fatal checks only).
    func chunks(from start: Int, to end: Int, _ body: (Chunk) throws(Problem) -> Void) throws(Problem) {
        if end > start && end - start < Layout.chunkHeader {
            throw Problem(.chunkHeaderTruncated, at: start, "\(end - start) bytes are left where a chunk should start, fewer than its 8-byte header")
        }
        var offset = start
        while end - offset >= Layout.chunkHeader {
            try need(offset + Layout.chunkHeader)
            let chunk = try self.chunk(at: offset, end: end)
            // A table or package holds the rest: only its header is read before its children.
            try need(chunk.type == 0x0002 || chunk.type == 0x0200 ? chunk.headerEnd : chunk.end)
            try body(chunk)
            passed?(chunk.end)
            offset = chunk.end
        }
    }

    /// `ChunkIterator::VerifyNextChunk`, and `validate_chunk` (ResTable), for the chunk at `offset` in data that
    /// ends at `end`. Chunk starts stay 4-byte aligned because every size and header size is checked to be.
    func chunk(at offset: Int, end: Int) throws(Problem) -> Chunk {
        let type = u16(offset), headerSize = Int(u16(offset + 2)), size = Int(u32(offset + 4))
        let name = Self.name(of: type)
        guard headerSize >= Layout.chunkHeader else {
            throw Problem(.chunkHeaderTooSmall, at: offset, "\(name) has a \(headerSize)-byte header, shorter than the 8-byte chunk header")
        }
        guard headerSize <= size else {
            throw Problem(.chunkHeaderLargerThanChunk, at: offset, "\(name) has a \(headerSize)-byte header but is \(size) bytes long")
        }
        guard size <= end - offset else {
            throw Problem(.chunkPastEnd, at: offset, "\(name) is \(size) bytes long but only \(end - offset) bytes of its enclosing data are left")
        }
        guard (size | headerSize) & 3 == 0 else {
            throw Problem(.chunkSizeNotAligned, at: offset, "\(name) has size \(size) and header size \(headerSize), not both multiples of 4")
        }
        return Chunk(offset: offset, type: type, headerSize: headerSize, size: size)
    }

    // MARK: - The file and its table

    func file(_ encodings: inout NewerEncodings) throws(Problem) {
        // ApkAssets::Load (Android 11+) refuses an APK whose resources.arsc holds no data, as ResTable::add does.
        guard bytes.count > 0 else { throw Problem(.emptyTable, at: 0, "the table is empty (0 bytes)") }
        // Read before the walk gives the first chunk's pages back.
        try need(min(bytes.count, Layout.chunkHeader))
        let startsWithTable = bytes.count >= Layout.chunkHeader && u16(0) == 0x0002
        var tables = 0
        // ResTable reads the first chunk as the table whatever its type; LoadedArsc loads every RES_TABLE chunk.
        try chunks(from: 0, to: bytes.count) { (chunk) throws(Problem) in
            guard chunk.type == 0x0002 else { return }
            tables += 1
            try table(chunk, &encodings)
        }
        guard tables > 0, startsWithTable else {
            throw Problem(.noTable, at: 0, "the table does not start with a RES_TABLE chunk")
        }
    }

    func table(_ chunk: Chunk, _ encodings: inout NewerEncodings) throws(Problem) {
        guard chunk.headerSize >= Layout.tableHeader else {
            throw Problem(.tableHeaderTooSmall, at: chunk.offset, "the RES_TABLE chunk has a \(chunk.headerSize)-byte header, shorter than 12")
        }
        let declared = Int(u32(chunk.offset + 8))
        var packages = 0
        var hasPool = false
        /// The global pool's string count and whether it is UTF-8, for the flag list's names.
        var pool: (count: Int, isUTF8: Bool) = (0, false)
        try chunks(from: chunk.headerEnd, to: chunk.end) { (child) throws(Problem) in
            switch child.type {
            case 0x0001 where !hasPool:
                hasPool = true
                try stringPool(child, named: "the global string pool")
                pool = (Int(u32(child.offset + 8)), u32(child.offset + 16) & Layout.utf8Flag != 0)
            case 0x0208: try flagList(child, pool: pool)
            case 0x0200:
                packages += 1
                guard packages <= declared else {
                    throw Problem(.morePackagesThanDeclared, at: child.offset, "the table holds more package chunks than the \(declared) its header declares")
                }
                try package(child, &encodings)
            default: break
            }
        }
        guard packages >= declared else {
            throw Problem(.fewerPackagesThanDeclared, at: chunk.offset, "the table header declares \(declared) packages but holds \(packages)")
        }
        guard hasPool else {
            throw Problem(.noGlobalStringPool, at: chunk.offset, "the table has no global string pool")
        }
    }

    /// `LoadedArsc::LoadTable`'s RES_TABLE_FLAG_LIST case (LoadedArsc.cpp where the aconfig flag
    /// `resource_readwrite_flags` is read; LoadedPackage::Load there skips RES_TABLE_FLAGGED chunks as unknown): after
    /// the chunk header, one u32 string index per flag name, as many as fit; with any, the global string pool must
    /// already hold strings, and each name must be one of its strings that `ResStringPool::string8At` gives, which it
    /// does only in a UTF-8 pool. (Whether the named string's own length fields are sound is not checked here.)
    func flagList(_ chunk: Chunk, pool: (count: Int, isUTF8: Bool)) throws(Problem) {
        let count = (chunk.size - chunk.headerSize) / 4
        guard count > 0 else { return }
        guard pool.count > 0 else {
            throw Problem(.flagListWithoutStrings, at: chunk.offset, "a flag list chunk names \(count) flags, but no global string pool with strings comes before it")
        }
        for index in 0..<count {
            let name = Int(u32(chunk.headerEnd + 4 * index))
            guard name < pool.count else {
                throw Problem(.flagListNameOutOfRange, at: chunk.offset, "flag \(index) of a flag list chunk is string \(name) of the global string pool, which holds \(pool.count)")
            }
            guard pool.isUTF8 else {
                throw Problem(.flagListNameNotUTF8, at: chunk.offset, "a flag list chunk names flags in a UTF-16 global string pool, which the loader reads flag names from only in UTF-8")
            }
        }
    }

    /// `ResStringPool::setTo` on the pool chunk `chunk` (its size is what the loader passes as the data size).
    func stringPool(_ chunk: Chunk, named name: String) throws(Problem) {
        let o = chunk.offset, size = chunk.size
        guard chunk.headerSize >= Layout.stringPoolHeader else {
            throw Problem(.stringPoolHeaderTooSmall, at: o, "\(name) has a \(chunk.headerSize)-byte header, shorter than 28")
        }
        let stringCount = Int(u32(o + 8)), styleCount = Int(u32(o + 12)), flags = u32(o + 16)
        let stringsStart = Int(u32(o + 20)), stylesStart = Int(u32(o + 24))
        if stringCount > 0 {
            guard chunk.headerSize + 4 * stringCount <= size else {
                throw Problem(.stringOffsetsPastEnd, at: o, "\(name) declares \(stringCount) strings, whose offsets do not fit in its \(size) bytes")
            }
            let charSize = flags & Layout.utf8Flag != 0 ? 1 : 2
            guard stringsStart < size - 2 else {
                throw Problem(.stringsStartPastEnd, at: o, "\(name)'s strings start at \(stringsStart), past its \(size) bytes")
            }
            let poolSize: Int
            if styleCount == 0 {
                poolSize = (size - stringsStart) / charSize
            } else {
                guard stylesStart < size - 2 else {
                    throw Problem(.stylesStartPastEnd, at: o, "\(name)'s styles start at \(stylesStart), past its \(size) bytes")
                }
                guard stylesStart > stringsStart else {
                    throw Problem(.stylesBeforeStrings, at: o, "\(name)'s styles start at \(stylesStart), not after its strings at \(stringsStart)")
                }
                poolSize = (stylesStart - stringsStart) / charSize
            }
            guard poolSize > 0 else {
                throw Problem(.emptyStringData, at: o, "\(name) declares \(stringCount) strings but has no string data")
            }
            let last = o + stringsStart + (poolSize - 1) * charSize
            guard (charSize == 1 ? UInt16(u8(last)) : u16(last)) == 0 else {
                throw Problem(.stringDataNotTerminated, at: o, "\(name)'s string data does not end with a NUL")
            }
        }
        if styleCount > 0 {
            guard chunk.headerSize + 4 * stringCount <= size else {
                throw Problem(.stringOffsetsPastEnd, at: o, "\(name) declares \(stringCount) strings, whose offsets do not fit in its \(size) bytes")
            }
            guard stylesStart < size else {
                throw Problem(.stylesStartPastEnd, at: o, "\(name)'s styles start at \(stylesStart), past its \(size) bytes")
            }
            // The style data ends with an END span: three 0xFFFFFFFF words.
            let words = (size - stylesStart) / 4
            guard words >= 3, (1...3).allSatisfy({ u32(o + stylesStart + (words - $0) * 4) == 0xFFFF_FFFF }) else {
                throw Problem(.styleDataNotTerminated, at: o, "\(name)'s style data does not end with the 0xFFFFFFFF end marker")
            }
        }
    }

    // MARK: - Packages

    func package(_ chunk: Chunk, _ encodings: inout NewerEncodings) throws(Problem) {
        let o = chunk.offset
        guard chunk.headerSize >= Layout.packageHeaderWithoutTypeIDOffset else {
            throw Problem(.packageHeaderTooSmall, at: o, "the package chunk has a \(chunk.headerSize)-byte header, shorter than 284")
        }
        let id = u32(o + 8)
        // ResTable aborts the process on it (LOG_ALWAYS_FATAL "Package id out of range").
        guard id <= 0xFF else {
            throw Problem(.packageIDOutOfRange, at: o, "the package ID is 0x\(String(id, radix: 16)), over 0xff")
        }
        var typeIDOffset = 0
        if chunk.headerSize >= Layout.packageHeader {
            typeIDOffset = Int(u32(o + 284))
            guard typeIDOffset <= 0xFF else {
                throw Problem(.typeIDOffsetOutOfRange, at: o, "the package's type ID offset is \(typeIDOffset), over 255")
            }
        }
        let typeStrings = Int(u32(o + 268)), keyStrings = Int(u32(o + 276))
        try poolReference(typeStrings, in: chunk, code: .typeStringsInvalid, what: "type")
        try poolReference(keyStrings, in: chunk, code: .keyStringsInvalid, what: "key")
        var foundTypeStrings = false, foundKeyStrings = false
        /// Entry counts of the typeSpecs seen so far, by type ID (-1: none yet).
        var specEntryCounts = [Int](repeating: -1, count: 256)
        var overlayableNames = Set<[UInt16]>()
        try chunks(from: chunk.headerEnd, to: chunk.end) { (child) throws(Problem) in
            switch child.type {
            case 0x0001:
                if child.offset - o == typeStrings {
                    foundTypeStrings = true
                    try stringPool(child, named: "the package's type string pool")
                } else if child.offset - o == keyStrings {
                    foundKeyStrings = true
                    try stringPool(child, named: "the package's key string pool")
                }
            case 0x0202: try typeSpec(child, typeIDOffset: typeIDOffset, entryCounts: &specEntryCounts)
            case 0x0201: try type(child, specEntryCounts: specEntryCounts, &encodings)
            case 0x0203: try library(child)
            case 0x0204: try overlayable(child, names: &overlayableNames)
            // Android ignores (with a warning) a staged-alias chunk in any other package.
            case 0x0206 where id == Layout.frameworkPackageID: try stagedAlias(child)
            default: break
            }
        }
        guard foundTypeStrings else {
            throw Problem(.typeStringsInvalid, at: o, "the package's type strings offset \(typeStrings) is not where one of its string pools starts")
        }
        guard foundKeyStrings else {
            throw Problem(.keyStringsInvalid, at: o, "the package's key strings offset \(keyStrings) is not where one of its string pools starts")
        }
    }

    /// `ResTable::parsePackage`: the typeStrings and keyStrings offsets lie in the package, 4-byte aligned.
    func poolReference(_ offset: Int, in chunk: Chunk, code: Problem.Code, what: String) throws(Problem) {
        guard offset < chunk.size else {
            throw Problem(code, at: chunk.offset, "the package's \(what) strings offset \(offset) is past its \(chunk.size) bytes")
        }
        guard offset & 3 == 0 else {
            throw Problem(code, at: chunk.offset, "the package's \(what) strings offset \(offset) is not a multiple of 4")
        }
    }

    /// `LoadedPackage::Load`'s RES_TABLE_TYPE_SPEC case, and ResTable's.
    func typeSpec(_ chunk: Chunk, typeIDOffset: Int, entryCounts: inout [Int]) throws(Problem) {
        let o = chunk.offset
        guard chunk.headerSize >= Layout.typeSpecHeader else {
            throw Problem(.typeSpecHeaderTooSmall, at: o, "a typeSpec chunk has a \(chunk.headerSize)-byte header, shorter than 16")
        }
        let id = Int(u8(o + 8))
        guard id != 0 else { throw Problem(.typeSpecIDZero, at: o, "a typeSpec chunk has type ID 0") }
        guard typeIDOffset + id <= 0xFF else {
            throw Problem(.typeSpecIDOutOfRange, at: o, "typeSpec 0x\(String(id, radix: 16)) plus the package's type ID offset \(typeIDOffset) is over 255")
        }
        let count = Int(u32(o + 12))
        guard count <= 0xFFFF else {
            throw Problem(.typeSpecTooManyEntries, at: o, "typeSpec 0x\(String(id, radix: 16)) declares \(count) entries; a type holds at most 65,535")
        }
        guard chunk.headerSize + 4 * count <= chunk.size else {
            throw Problem(.typeSpecEntriesPastEnd, at: o, "typeSpec 0x\(String(id, radix: 16)) declares \(count) entries, whose flags do not fit in its \(chunk.size) bytes")
        }
        if entryCounts[id] < 0 { entryCounts[id] = count }
    }

    /// `VerifyResTableType` and the typeSpec lookup after it (LoadedPackage::Load), ResTable's checks, then every
    /// entry as `VerifyResTableEntry` checks it.
    func type(_ chunk: Chunk, specEntryCounts: [Int], _ encodings: inout NewerEncodings) throws(Problem) {
        let o = chunk.offset, size = chunk.size
        guard chunk.headerSize >= Layout.typeMinimumHeader else {
            throw Problem(.typeHeaderTooSmall, at: o, "a type chunk has a \(chunk.headerSize)-byte header, shorter than 24")
        }
        let id = Int(u8(o + 8)), flags = u8(o + 9)
        let count = Int(u32(o + 12)), entriesStart = Int(u32(o + 16))
        var name: String { Walk.typeName(id) }  // built only for a message
        guard id != 0 else { throw Problem(.typeIDZero, at: o, "a type chunk has type ID 0") }
        guard count <= 0xFFFF else {
            throw Problem(.typeTooManyEntries, at: o, "\(name) declares \(count) entries; a type holds at most 65,535")
        }
        let offsetSize = flags & Layout.typeFlagOffset16 != 0 && flags & Layout.typeFlagSparse == 0 ? 2 : 4
        guard chunk.headerSize <= entriesStart, entriesStart - chunk.headerSize >= offsetSize * count else {
            throw Problem(.typeOffsetsOverlapEntries, at: o, "\(name)'s \(count) entry offsets after its \(chunk.headerSize)-byte header overlap its entries at \(entriesStart)")
        }
        // ResTable also wants room for one entry after entriesStart.
        guard entriesStart <= size, count == 0 || entriesStart <= size - Layout.entry else {
            throw Problem(.typeEntriesPastEnd, at: o, "\(name)'s entries start at \(entriesStart), past its \(size) bytes")
        }
        guard entriesStart & 3 == 0 else {
            throw Problem(.typeEntriesNotAligned, at: o, "\(name)'s entries start at \(entriesStart), not a multiple of 4")
        }
        // ResTable skips a typeSpec without entries, then finds no typeSpec for its types that have some.
        guard specEntryCounts[id] >= 0, specEntryCounts[id] > 0 || count == 0 else {
            throw Problem(.typeWithoutTypeSpec, at: o, specEntryCounts[id] < 0 ? "\(name) comes before any typeSpec chunk of its type"
                                                                              : "\(name) has entries but its typeSpec declares none")
        }
        let offsets = o + chunk.headerSize
        var hasCompactEntries = false
        if flags & Layout.typeFlagSparse != 0 {
            if encodings.sparse == nil && configSDKVersion(of: chunk) < 26 { encodings.sparse = (o, id) }
            for index in 0..<count {
                hasCompactEntries = try entry(at: Int(u16(offsets + 4 * index + 2)) * 4, index: Int(u16(offsets + 4 * index)), of: chunk, typeID: id,
                                              entriesStart: entriesStart) || hasCompactEntries
            }
        } else if offsetSize == 2 {
            if encodings.offset16 == nil { encodings.offset16 = (o, id) }
            for index in 0..<count {
                let value = u16(offsets + 2 * index)
                if value != 0xFFFF {
                    hasCompactEntries = try entry(at: Int(value) * 4, index: index, of: chunk, typeID: id, entriesStart: entriesStart) || hasCompactEntries
                }
            }
        } else {
            // Most offsets of a localized type's configurations are NO_ENTRY (few strings are translated into every
            // language; framework-res.apk's are almost all such): they are skimmed sixteen at a time, and only a
            // block that holds an entry is read offset by offset.
            var index = 0
            while index < count {
                let block = min(Layout.offsetBlock, count - index)
                if block == Layout.offsetBlock && isAbsentBlock(at: offsets + 4 * index) {
                    index += block
                    continue
                }
                for slot in index..<(index + block) {
                    let value = u32(offsets + 4 * slot)
                    if value != Layout.noEntry {
                        hasCompactEntries = try entry(at: Int(value), index: slot, of: chunk, typeID: id, entriesStart: entriesStart) || hasCompactEntries
                    }
                }
                index += block
            }
        }
        if hasCompactEntries && encodings.compact == nil { encodings.compact = (o, id) }
    }

    /// Whether the `Layout.offsetBlock` 32-bit entry offsets at `offset` are all NO_ENTRY (every bit set, in
    /// either byte order): eight 64-bit reads.
    func isAbsentBlock(at offset: Int) -> Bool {
        var all = UInt64.max
        for word in 0..<(Layout.offsetBlock / 2) { all &= bytes.loadUnaligned(fromByteOffset: offset + 8 * word, as: UInt64.self) }
        return all == .max
    }

    /// The type's `config.sdkVersion` (the `-vNN` qualifier), 0 when its config is too short to hold it (the
    /// loader zero-fills a shorter one).
    func configSDKVersion(of chunk: Chunk) -> Int {
        let config = chunk.offset + Layout.typeConfig
        guard chunk.headerSize >= Layout.typeConfig + Layout.configSDKVersion + 2,
              Int(u32(config)) >= Layout.configSDKVersion + 2 else { return 0 }
        return Int(u16(config + Layout.configSDKVersion))
    }

    /// `VerifyResTableEntry` for the entry at `offset` (from entriesStart) of the type chunk `chunk`. Returns whether
    /// the entry is a compact one.
    func entry(at offset: Int, index: Int, of chunk: Chunk, typeID: Int, entriesStart: Int) throws(Problem) -> Bool {
        let size = chunk.size
        var what: String { "\(Walk.typeName(typeID))'s entry \(index)" }  // built only for a message
        guard offset & 3 == 0 else {
            throw Problem(.entryNotAligned, at: chunk.offset, "\(what) is at offset \(offset), not a multiple of 4")
        }
        let start = entriesStart + offset  // both at most 2^32: no overflow in Int
        guard start <= UInt32.max, start <= size - Layout.entry else {
            throw Problem(.entryPastEnd, at: chunk.offset, "\(what) is at \(start), with no room for an entry in the chunk's \(size) bytes")
        }
        let at = chunk.offset + start
        let entrySize = Int(u16(at))
        if u16(at + 2) & Layout.entryFlagCompact != 0 { return true }
        guard entrySize >= Layout.entry else {
            throw Problem(.entryTooSmall, at: at, "\(what) declares a size of \(entrySize) bytes, less than 8")
        }
        guard entrySize <= size - start else {
            throw Problem(.entrySizePastEnd, at: at, "\(what) declares a size of \(entrySize) bytes, past the end of its type chunk")
        }
        if entrySize < Layout.mapEntry {
            guard start + entrySize <= size - Layout.value else {
                throw Problem(.valuePastEnd, at: at, "\(what) has no room for its value before the end of its type chunk")
            }
            let valueSize = Int(u16(at + entrySize))
            guard valueSize >= Layout.value else {
                throw Problem(.valueTooSmall, at: at, "\(what)'s value declares a size of \(valueSize) bytes, less than 8")
            }
            guard start + entrySize <= size - valueSize else {
                throw Problem(.valuePastEnd, at: at, "\(what)'s value declares a size of \(valueSize) bytes, past the end of its type chunk")
            }
        } else {
            let mapStart = start + entrySize
            guard mapStart & 3 == 0 else {
                throw Problem(.mapNotAligned, at: at, "\(what) is a map whose items start at \(mapStart), not a multiple of 4")
            }
            let mapCount = Int(u32(at + 12))
            guard mapCount <= (size - mapStart) / Layout.map else {
                throw Problem(.mapPastEnd, at: at, "\(what) is a map of \(mapCount) items, more than fit before the end of its type chunk")
            }
        }
        return false
    }

    // MARK: - Libraries and overlayables

    func library(_ chunk: Chunk) throws(Problem) {
        let o = chunk.offset
        guard chunk.headerSize >= Layout.libraryHeader else {
            throw Problem(.libraryHeaderTooSmall, at: o, "a library chunk has a \(chunk.headerSize)-byte header, shorter than 12")
        }
        let count = Int(u32(o + 8))
        guard count <= (chunk.size - chunk.headerSize) / Layout.libraryEntry else {
            throw Problem(.libraryEntriesPastEnd, at: o, "a library chunk declares \(count) libraries, more than fit in its \(chunk.size) bytes")
        }
        for index in 0..<count {
            let packageID = u32(chunk.headerEnd + index * Layout.libraryEntry)
            guard packageID < 0xFF else {
                throw Problem(.libraryPackageIDOutOfRange, at: o, "library \(index) of a library chunk has package ID 0x\(String(packageID, radix: 16)), 0xff or more")
            }
        }
    }

    /// `LoadedPackage::Load`'s RES_TABLE_STAGED_ALIAS_TYPE case (Android 12+), which the framework's table holds:
    /// header 12 (count u32 at 8), then `count` (stagedResId u32, finalizedResId u32) pairs; neither ID may repeat.
    func stagedAlias(_ chunk: Chunk) throws(Problem) {
        let o = chunk.offset
        guard chunk.headerSize >= Layout.stagedAliasHeader else {
            throw Problem(.stagedAliasHeaderTooSmall, at: o, "a staged alias chunk has a \(chunk.headerSize)-byte header, shorter than 12")
        }
        let count = Int(u32(o + 8))
        guard count <= (chunk.size - chunk.headerSize) / Layout.stagedAliasEntry else {
            throw Problem(.stagedAliasEntriesPastEnd, at: o, "a staged alias chunk declares \(count) aliases, more than fit in its \(chunk.size) bytes")
        }
        // Sorted copies find repeats without a set; the framework's table holds one such chunk of a few hundred.
        for (field, code, what) in [(4, Problem.Code.stagedAliasDuplicateFinalizedID, "finalized"), (0, .stagedAliasDuplicateStagedID, "staged")] {
            let ids = (0..<count).map { u32(chunk.headerEnd + $0 * Layout.stagedAliasEntry + field) }.sorted()
            for index in ids.indices.dropFirst() where ids[index] == ids[index - 1] {
                throw Problem(code, at: o, "a staged alias chunk gives the \(what) resource ID 0x\(String(ids[index], radix: 16)) twice")
            }
        }
    }

    func overlayable(_ chunk: Chunk, names: inout Set<[UInt16]>) throws(Problem) {
        let o = chunk.offset
        guard chunk.headerSize >= Layout.overlayableHeader else {
            throw Problem(.overlayableHeaderTooSmall, at: o, "an overlayable chunk has a \(chunk.headerSize)-byte header, shorter than 1032")
        }
        // The name as util::ReadUtf16StringFromDevice reads it: up to the first NUL of 256 UTF-16 units.
        var name: [UInt16] = []
        for index in 0..<256 {
            let unit = u16(o + 8 + 2 * index)
            if unit == 0 { break }
            name.append(unit)
        }
        guard names.insert(name).inserted else {
            throw Problem(.overlayableDuplicateName, at: o, "a second overlayable chunk is named \(String(decoding: name, as: UTF16.self).debugDescription)")
        }
        try chunks(from: chunk.headerEnd, to: chunk.end) { (policy) throws(Problem) in
            guard policy.type == 0x0205 else { return }
            guard policy.headerSize >= Layout.overlayablePolicyHeader else {
                throw Problem(.overlayablePolicyHeaderTooSmall, at: policy.offset, "an overlayable policy chunk has a \(policy.headerSize)-byte header, shorter than 16")
            }
            let count = Int(u32(policy.offset + 12))
            guard count <= (policy.size - policy.headerSize) / 4 else {
                throw Problem(.overlayablePolicyEntriesPastEnd, at: policy.offset, "an overlayable policy chunk declares \(count) resources, more than fit in its \(policy.size) bytes")
            }
        }
    }
}

extension ResourceTableLoadCheck {
    /// The name of the table in an APK.
    public static let entryName = "resources.arsc"

    /// The first loader rule the APK's `resources.arsc` breaks, or nil when it has none or Android loads it. A
    /// stored table is read in place (a slice of the mapping: nothing is copied, and the pages read are given
    /// back behind the walk); a compressed one is inflated first, which throws `UnpackError` when its data is
    /// damaged.
    public static func problem(in archive: APKArchive, minSdkVersion: () -> Int?) throws -> ResourceTableProblem? {
        guard let entry = archive.entry(named: entryName) else { return nil }
        if entry.isCompressed { return problem(in: try archive.uncompressedData(of: entry), minSdkVersion: minSdkVersion) }
        return try problem(in: archive.source, range: entry.dataRange, minSdkVersion: minSdkVersion)
    }

    /// The same, judging newer encodings by the minSdkVersion the APK's AndroidManifest.xml declares (read only
    /// when the table uses one; an unreadable manifest counts as declaring none).
    public static func problem(in archive: APKArchive) throws -> ResourceTableProblem? {
        try problem(in: archive) { declaredMinSdkVersion(of: archive) }
    }

    /// The minSdkVersion `archive`'s AndroidManifest.xml declares (`declaredMinSdkVersion(_:)`); nil for an
    /// unreadable manifest, as for one that declares none.
    public static func declaredMinSdkVersion(of archive: APKArchive) -> Int? {
        guard let manifest = archive.entry(named: "AndroidManifest.xml"),
              let summary = try? ManifestSummary(binaryXML: archive.uncompressedData(of: manifest)) else { return nil }
        return declaredMinSdkVersion(summary.usesSDKMinSdkVersionAttributes)
    }
}

/// Zero-filled memory of `count` bytes from its own mapping, whose pages `discard` gives back to the system (they
/// read as zeros again), for a table inflated as it is walked.
private final class AnonymousPages {
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int) throws {
        guard let base = mmap(nil, max(count, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), base != MAP_FAILED else {
            throw FileError(path: ResourceTableLoadCheck.entryName, operation: "mmap", errno: errno, detail: "no memory to inflate it into")
        }
        bytes = UnsafeMutableRawBufferPointer(start: base, count: count)
    }

    deinit { munmap(bytes.baseAddress, max(bytes.count, 1)) }

    /// Gives back the whole pages inside `range`.
    func discard(_ range: Range<Int>) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (range.lowerBound + page - 1) / page * page, end = range.upperBound / page * page
        guard end > start, let base = bytes.baseAddress else { return }
        madvise(base + start, end - start, MADV_DONTNEED)
    }
}
