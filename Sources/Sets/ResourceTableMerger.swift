import APKCore
import BinaryXML

/// Merges configuration splits' `resources.arsc` into the base's, as APKEditor's merge does: each split's
/// `ResTable_type` chunks (one per configuration: a density, a language) join the base package's, with their
/// key and value strings moved into the base's pools.
///
/// Layout (AOSP `ResourceTypes.h`): `ResTable_header` (chunk header + packageCount), the global value
/// `ResStringPool`, then `ResTable_package` chunks: a 288-byte header (id, name, typeStrings and keyStrings
/// offsets from the package start), the type-name and key-name pools, then per type one `ResTable_typeSpec`
/// (a flags word per entry) and its `ResTable_type` chunks. A type chunk's entries are found through an offset
/// array; an entry is `ResTable_entry` (size u16, flags u16, key u32) followed by one `Res_value` (size u16,
/// res0 u8, dataType u8, data u32) or, with FLAG_COMPLEX, a map (parent u32, count u32, count × (name u32 +
/// Res_value)). Compact entries (FLAG_COMPACT) keep the key in `size` and the value in `flags`/`key`.
///
/// The package manager's rules the output keeps: a type chunk follows its type spec and has the spec's entry
/// count (shorter split chunks get NO_ENTRY slots); the same resource IDs in base and splits (aapt and
/// bundletool give them one ID space), checked by the package ID and by type names at the same type IDs.
public enum ResourceTableMerger {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let message: String
        public var description: String { message }
    }

    static let tableHeaderSize = 12
    static let typeEntryFlagComplex: UInt16 = 0x0001
    static let typeEntryFlagCompact: UInt16 = 0x0008
    static let typeFlagSparse: UInt8 = 0x01
    static let typeFlagOffset16: UInt8 = 0x02
    static let noEntry: UInt32 = 0xFFFF_FFFF
    static let stringType: UInt8 = 0x03

    /// One package chunk, parsed just enough.
    struct Package {
        var bytes: [UInt8]              // the whole chunk
        var id: UInt32
        var typeNames: StringPool
        var keyNames: StringPool
        var typeNamesRange: Range<Int>  // inside `bytes`
        var keyNamesRange: Range<Int>
        var children: [Range<Int>]      // chunks after the pools, inside `bytes`
    }

    /// The base table with every split table's configurations added. `splits` are (label, bytes).
    public static func merge(base: [UInt8], splits: [(label: String, bytes: [UInt8])]) throws -> [UInt8] {
        var (pool, package) = try parse(base, label: "the base")
        var keyIndex = [String: UInt32](package.keyNames.strings.enumerated().map { ($1, UInt32($0)) }, uniquingKeysWith: { a, _ in a })
        var extraChunks: [[UInt8]] = []
        pool.wasSorted = false
        for split in splits {
            let (splitPool, splitPackage) = try parse(split.bytes, label: split.label)
            guard splitPackage.id == package.id else {
                throw Failure(message: "\(split.label): resources.arsc is package 0x\(String(splitPackage.id, radix: 16)), the base's is 0x\(String(package.id, radix: 16)): not one app's resources")
            }
            var stringMap: [UInt32: UInt32] = [:]
            func mapString(_ index: UInt32) throws -> UInt32 {
                if let mapped = stringMap[index] { return mapped }
                guard Int(index) < splitPool.strings.count else { throw Failure(message: "\(split.label): value string #\(index) does not exist") }
                let mapped = UInt32(pool.strings.count)
                stringMap[index] = mapped
                pool.strings.append(splitPool.strings[Int(index)])
                if Int(index) < splitPool.styles.count, !splitPool.styles[Int(index)].isEmpty {
                    var spans = splitPool.styles[Int(index)]
                    for i in spans.indices { spans[i].name = try mapString(spans[i].name) }
                    while pool.styles.count < Int(mapped) { pool.styles.append([]) }
                    pool.styles.append(spans)
                }
                return mapped
            }
            func mapKey(_ index: UInt32) throws -> UInt32 {
                guard Int(index) < splitPackage.keyNames.strings.count else { throw Failure(message: "\(split.label): key string #\(index) does not exist") }
                let name = splitPackage.keyNames.strings[Int(index)]
                if let existing = keyIndex[name] { return existing }
                let added = UInt32(package.keyNames.strings.count)
                package.keyNames.strings.append(name)
                keyIndex[name] = added
                return added
            }
            for range in splitPackage.children {
                let chunk = Array(splitPackage.bytes[range])
                switch u16(chunk, 0) {
                case ChunkType.tableTypeSpec:
                    try orTypeSpecFlags(chunk, into: &package, splitTypeNames: splitPackage.typeNames, label: split.label)
                case ChunkType.tableType:
                    let typeID = Int(chunk[8])
                    guard typeID >= 1, typeID <= splitPackage.typeNames.strings.count else { throw Failure(message: "\(split.label): type chunk with type ID \(typeID) has no name") }
                    let name = splitPackage.typeNames.strings[typeID - 1]
                    guard typeID <= package.typeNames.strings.count, package.typeNames.strings[typeID - 1] == name else {
                        throw Failure(message: "\(split.label): resource type \(name.debugQuoted) (type ID \(typeID)) is not the base's type \(typeID); merging resources whose IDs differ from the base's is not supported")
                    }
                    let specCount = try typeSpecEntryCount(package, typeID: UInt8(typeID), label: split.label, name: name)
                    var rewritten = try rewriteEntries(chunk, label: split.label, mapKey: mapKey, mapString: mapString)
                    rewritten = try padded(rewritten, to: specCount, label: split.label, name: name)
                    if try hasConfiguration(of: rewritten, in: package, plus: extraChunks) {
                        throw Failure(message: "\(split.label): a \(name) configuration it carries is in the base (or another split) already; the split does not merge without one of them replacing the other")
                    }
                    extraChunks.append(rewritten)
                default:
                    continue  // library chunks and the like stay the base's
                }
            }
        }
        addConfigurationFlags(for: extraChunks, to: &package)
        return try encode(pool: pool, package: package, extraChunks: extraChunks, original: base)
    }

    /// Sets each merged entry's type-spec flags to what aapt writes for a table built in one piece: for every
    /// pair of configurations that both define the entry, the `ResTable_config::diff` bits between them (a
    /// string in default and `fr` varies by locale; a drawable in mdpi and xhdpi by density). Android reads
    /// them to know which configuration changes invalidate a cached resource. Split tables alone cannot say
    /// so: each holds one configuration.
    static func addConfigurationFlags(for added: [[UInt8]], to package: inout Package) {
        let baseTypes = package.children.filter { u16(package.bytes, $0.lowerBound) == ChunkType.tableType }.map { Array(package.bytes[$0]) }
        for (index, chunk) in added.enumerated() {
            let typeID = chunk[8]
            guard let spec = package.children.first(where: { u16(package.bytes, $0.lowerBound) == ChunkType.tableTypeSpec && package.bytes[$0.lowerBound + 8] == typeID }) else { continue }
            let specCount = Int(u32(package.bytes, spec.lowerBound + 12)), specHeader = Int(u16(package.bytes, spec.lowerBound + 2))
            let mine = presentEntries(chunk)
            let others = (baseTypes + added.enumerated().filter { $0.offset != index }.map(\.element)).filter { $0[8] == typeID }
            for other in others {
                let bits = configurationDifference(configuration(of: chunk), configuration(of: other))
                guard bits != 0 else { continue }
                for entry in mine.intersection(presentEntries(other)) where entry < specCount {
                    let at = spec.lowerBound + specHeader + entry * 4
                    guard at + 4 <= spec.upperBound else { continue }
                    put32(&package.bytes, at, u32(package.bytes, at) | bits)
                }
            }
        }
    }

    /// The indices of the entries a type chunk defines (validated as `rewriteEntries` validates them).
    static func presentEntries(_ chunk: [UInt8]) -> Set<Int> {
        let headerSize = Int(u16(chunk, 2)), flags = chunk[9], count = Int(u32(chunk, 12))
        let isSparse = flags & typeFlagSparse != 0, isOffset16 = flags & typeFlagOffset16 != 0
        let slotSize = isOffset16 ? 2 : 4
        guard headerSize + count * slotSize <= chunk.count else { return [] }
        var present = Set<Int>()
        for slot in 0..<count {
            let at = headerSize + slot * slotSize
            if isSparse { present.insert(Int(u16(chunk, at))) } else if isOffset16 { if u16(chunk, at) != 0xFFFF { present.insert(slot) } } else if u32(chunk, at) != noEntry { present.insert(slot) }
        }
        return present
    }

    /// A type chunk's `ResTable_config` bytes (its first field is its size).
    static func configuration(of chunk: [UInt8]) -> ArraySlice<UInt8> {
        let size = Int(u32(chunk, 20))
        return chunk[20..<min(chunk.count, 20 + max(4, size))]
    }

    /// `ResTable_config::diff` (AOSP `ResourceTypes.cpp`): the `CONFIG_*` bits of the fields in which `a` and
    /// `b` differ. Fields past a configuration's size read as zero, as Android reads a shorter config.
    static func configurationDifference(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> UInt32 {
        func field(_ c: ArraySlice<UInt8>, _ range: Range<Int>) -> [UInt8] {
            range.map { $0 < c.count ? c[c.startIndex + $0] : 0 }
        }
        func differs(_ range: Range<Int>, mask: UInt8 = 0xFF) -> Bool {
            zip(field(a, range), field(b, range)).contains { ($0 & mask) != ($1 & mask) }
        }
        var bits: UInt32 = 0
        if differs(4..<6) { bits |= 0x0001 }                 // mcc
        if differs(6..<8) { bits |= 0x0002 }                 // mnc
        if differs(8..<12) || differs(36..<48) || differs(53..<61) { bits |= 0x0004 }  // language, country, script, variant, numbering
        if differs(12..<13) { bits |= 0x0080 }               // orientation
        if differs(13..<14) { bits |= 0x0008 }               // touchscreen
        if differs(14..<16) { bits |= 0x0100 }               // density
        if differs(16..<17) { bits |= 0x0010 }               // keyboard
        if differs(17..<18) { bits |= 0x0040 }               // navigation
        if differs(18..<19, mask: 0x0F) { bits |= 0x0020 }   // keysHidden, navHidden
        if differs(20..<24) || differs(32..<36) { bits |= 0x0200 }  // screen size, screen size in dp
        if differs(24..<28) { bits |= 0x0400 }               // sdkVersion, minorVersion
        if differs(28..<29, mask: 0xC0) { bits |= 0x4000 }   // layout direction
        if differs(28..<29, mask: 0x3F) { bits |= 0x0800 }   // screen layout
        if differs(48..<49, mask: 0x03) { bits |= 0x8000 }   // round screen
        if differs(49..<50, mask: 0x0F) { bits |= 0x10000 }  // wide colour gamut, HDR
        if differs(29..<30) { bits |= 0x1000 }               // uiMode
        if differs(30..<32) { bits |= 0x2000 }               // smallest screen width
        return bits
    }

    // MARK: - Parsing

    static func parse(_ bytes: [UInt8], label: String) throws -> (StringPool, Package) {
        try bytes.withUnsafeBytes { raw -> (StringPool, Package) in
            do {
                let table = try Chunk.read(in: raw, at: 0, limit: raw.count, what: "resource table")
                guard table.type == ChunkType.table, table.headerSize >= tableHeaderSize else { throw Failure(message: "\(label): resources.arsc is not a resource table") }
                var pool: StringPool?
                var package: Package?
                var offset = table.headerEnd
                while offset < table.end {
                    let chunk = try Chunk.read(in: raw, at: offset, limit: table.end, what: "table chunk")
                    defer { offset = chunk.end }
                    if chunk.type == ChunkType.stringPool && pool == nil {
                        pool = try StringPool(bytes: raw, chunk: chunk)
                    } else if chunk.type == ChunkType.tablePackage {
                        guard package == nil else { throw Failure(message: "\(label): resources.arsc holds several packages (shared libraries); merging it is not supported") }
                        package = try parsePackage(raw, chunk, label: label)
                    }
                }
                guard let pool, let package else { throw Failure(message: "\(label): resources.arsc has no value string pool or no package") }
                return (pool, package)
            } catch let error as BinaryXMLError {
                throw Failure(message: "\(label): resources.arsc is malformed: \(error)")
            }
        }
    }

    static func parsePackage(_ raw: UnsafeRawBufferPointer, _ chunk: Chunk, label: String) throws -> Package {
        guard chunk.headerSize >= 284 else { throw Failure(message: "\(label): package header is only \(chunk.headerSize) bytes") }
        let bytes = Array(raw[chunk.offset..<chunk.end])
        let typeStrings = Int(u32(bytes, 268)), keyStrings = Int(u32(bytes, 276))
        var typeNames: StringPool?, keyNames: StringPool?
        var typeRange = 0..<0, keyRange = 0..<0
        var children: [Range<Int>] = []
        try bytes.withUnsafeBytes { package in
            var offset = chunk.headerSize
            while offset < bytes.count {
                let child = try Chunk.read(in: package, at: offset, limit: bytes.count, what: "package chunk")
                defer { offset = child.end }
                if child.offset == typeStrings && child.type == ChunkType.stringPool {
                    typeNames = try StringPool(bytes: package, chunk: child); typeRange = child.offset..<child.end
                } else if child.offset == keyStrings && child.type == ChunkType.stringPool {
                    keyNames = try StringPool(bytes: package, chunk: child); keyRange = child.offset..<child.end
                } else {
                    // What the merge reads of a type spec (id, entry count) and a type chunk (id, flags, count,
                    // entries start, configuration size) must be there.
                    if child.type == ChunkType.tableTypeSpec && child.headerSize < 16 || child.type == ChunkType.tableType && child.headerSize < 24 {
                        throw Failure(message: "\(label): resources.arsc has a type chunk with a \(child.headerSize)-byte header")
                    }
                    children.append(child.offset..<child.end)
                }
            }
        }
        guard let typeNames, let keyNames else { throw Failure(message: "\(label): package has no type or key name pool where its header says") }
        return Package(bytes: bytes, id: u32(bytes, 8), typeNames: typeNames, keyNames: keyNames,
                       typeNamesRange: typeRange, keyNamesRange: keyRange, children: children)
    }

    // MARK: - Rewriting a split's chunks

    /// The base type spec of `typeID`: its entry count.
    static func typeSpecEntryCount(_ package: Package, typeID: UInt8, label: String, name: String) throws -> Int {
        for range in package.children where u16(package.bytes, range.lowerBound) == ChunkType.tableTypeSpec && package.bytes[range.lowerBound + 8] == typeID {
            return Int(u32(package.bytes, range.lowerBound + 12))
        }
        throw Failure(message: "\(label): resource type \(name.debugQuoted) exists only in the split; merging a type the base lacks is not supported")
    }

    /// ORs a split type spec's configuration-change flags into the base's (a density split makes its entries
    /// vary by density).
    static func orTypeSpecFlags(_ chunk: [UInt8], into package: inout Package, splitTypeNames: StringPool, label: String) throws {
        let typeID = chunk[8]
        let count = Int(u32(chunk, 12)), headerSize = Int(u16(chunk, 2))
        guard headerSize + count * 4 <= chunk.count else { throw Failure(message: "\(label): type spec of type \(typeID) is truncated") }
        for range in package.children where u16(package.bytes, range.lowerBound) == ChunkType.tableTypeSpec && package.bytes[range.lowerBound + 8] == typeID {
            let baseCount = Int(u32(package.bytes, range.lowerBound + 12)), baseHeader = Int(u16(package.bytes, range.lowerBound + 2))
            for entry in 0..<min(count, baseCount) {
                let at = range.lowerBound + baseHeader + entry * 4
                guard at + 4 <= range.upperBound else { break }
                put32(&package.bytes, at, u32(package.bytes, at) | u32(chunk, headerSize + entry * 4))
            }
            return
        }
    }

    /// The type chunk with keys and string values moved to the base's pools (same size: indices change in place).
    static func rewriteEntries(_ input: [UInt8], label: String, mapKey: (UInt32) throws -> UInt32,
                               mapString: (UInt32) throws -> UInt32) throws -> [UInt8] {
        var chunk = input
        let headerSize = Int(u16(chunk, 2)), flags = chunk[9]
        let count = Int(u32(chunk, 12)), entriesStart = Int(u32(chunk, 16))
        let isSparse = flags & typeFlagSparse != 0, isOffset16 = flags & typeFlagOffset16 != 0
        let slotSize = isOffset16 ? 2 : 4
        guard headerSize + count * slotSize <= chunk.count, entriesStart <= chunk.count else { throw Failure(message: "\(label): a type chunk's entries do not fit in it") }
        func fail(_ what: String) -> Failure { Failure(message: "\(label): type chunk entry \(what) is outside the chunk") }
        func mapValue(at offset: Int) throws {  // a Res_value: size u16, res0 u8, dataType u8, data u32
            guard offset + 8 <= chunk.count else { throw fail("value") }
            if chunk[offset + 3] == stringType { put32(&chunk, offset + 4, try mapString(u32(chunk, offset + 4))) }
        }
        for slot in 0..<count {
            let at = headerSize + slot * slotSize
            var entryOffset: Int
            if isSparse {
                entryOffset = Int(u16(chunk, at + 2)) * 4
            } else if isOffset16 {
                let raw = u16(chunk, at); if raw == 0xFFFF { continue }; entryOffset = Int(raw) * 4
            } else {
                let raw = u32(chunk, at); if raw == noEntry { continue }; entryOffset = Int(raw)
            }
            let start = entriesStart + entryOffset
            guard start + 8 <= chunk.count else { throw fail("#\(slot)") }
            let size = Int(u16(chunk, start)), entryFlags = u16(chunk, start + 2)
            if entryFlags & typeEntryFlagCompact != 0 {
                let key = try mapKey(UInt32(size))
                guard key <= 0xFFFF else { throw Failure(message: "\(label): a compact entry's key index \(key) does not fit in 16 bits") }
                put16(&chunk, start, UInt16(key))
                if UInt8(entryFlags >> 8) == stringType { put32(&chunk, start + 4, try mapString(u32(chunk, start + 4))) }
                continue
            }
            put32(&chunk, start + 4, try mapKey(u32(chunk, start + 4)))
            if entryFlags & typeEntryFlagComplex != 0 {
                guard size >= 16, start + 16 <= chunk.count else { throw fail("#\(slot) map") }
                let items = Int(u32(chunk, start + 12))
                guard items <= (chunk.count - start) / 12 else { throw fail("#\(slot) map items") }
                for item in 0..<items { try mapValue(at: start + size + item * 12 + 4) }
            } else {
                try mapValue(at: start + size)
            }
        }
        return chunk
    }

    /// A type chunk with 32-bit offsets and fewer slots than the base's type spec, given NO_ENTRY slots up to
    /// `count` (Android refuses a type chunk whose entry count differs from its spec's).
    static func padded(_ chunk: [UInt8], to count: Int, label: String, name: String) throws -> [UInt8] {
        let have = Int(u32(chunk, 12)), flags = chunk[9], headerSize = Int(u16(chunk, 2)), entriesStart = Int(u32(chunk, 16))
        if have == count || flags & typeFlagSparse != 0 { return chunk }
        guard have < count, flags & typeFlagOffset16 == 0 else {
            throw Failure(message: "\(label): its \(name) type has \(have) entries, the base's \(count): the split's resource IDs are not the base's")
        }
        let extra = (count - have) * 4
        var out = Array(chunk[0..<(headerSize + have * 4)])
        for _ in 0..<(count - have) { out += [0xFF, 0xFF, 0xFF, 0xFF] }
        out += chunk[(headerSize + have * 4)...]
        put32(&out, 4, UInt32(out.count))
        put32(&out, 12, UInt32(count))
        put32(&out, 16, UInt32(entriesStart + extra))
        return out
    }

    /// Whether a type chunk of the same type and configuration as `chunk` is in the base package or among
    /// those already added.
    static func hasConfiguration(of chunk: [UInt8], in package: Package, plus added: [[UInt8]]) throws -> Bool {
        let typeID = chunk[8]
        let mine = configuration(of: chunk)
        for range in package.children where u16(package.bytes, range.lowerBound) == ChunkType.tableType && package.bytes[range.lowerBound + 8] == typeID {
            if configuration(of: Array(package.bytes[range])).elementsEqual(mine) { return true }
        }
        return added.contains { $0[8] == typeID && configuration(of: $0).elementsEqual(mine) }
    }

    // MARK: - Writing

    static func encode(pool: StringPool, package: Package, extraChunks: [[UInt8]], original: [UInt8]) throws -> [UInt8] {
        func encoded(_ pool: StringPool) throws -> [UInt8] {
            do { return try pool.encoded() } catch let error as BinaryXMLError where error.code == .tooLarge && pool.isUTF8 {
                var wide = pool  // a string longer than UTF-8 pools allow: UTF-16 pools take it, Android reads both
                wide.isUTF8 = false
                return try wide.encoded()
            }
        }
        let poolBytes = try encoded(pool)
        let keyBytes = try encoded(package.keyNames)
        // The package: its header, the type name pool, the key pool, the base's chunks, then the splits'.
        let headerSize = Int(u16(package.bytes, 2))
        var body: [UInt8] = Array(package.bytes[0..<headerSize])
        let typeNamesOffset = body.count
        body += package.bytes[package.typeNamesRange]
        let keyNamesOffset = body.count
        body += keyBytes
        for range in package.children { body += package.bytes[range] }
        for chunk in extraChunks { body += chunk }
        put32(&body, 4, UInt32(body.count))
        put32(&body, 268, UInt32(typeNamesOffset))
        put32(&body, 276, UInt32(keyNamesOffset))
        var out: [UInt8] = Array(original[0..<tableHeaderSize])
        out += poolBytes
        out += body
        guard let total = UInt32(exactly: out.count) else { throw Failure(message: "the merged resources.arsc exceeds 4 GiB") }
        put32(&out, 4, total)
        return out
    }

    // MARK: - Little-endian helpers (every caller checked the bounds)

    static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func u32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24 }
    static func put16(_ b: inout [UInt8], _ i: Int, _ v: UInt16) { b[i] = UInt8(v & 0xFF); b[i + 1] = UInt8(v >> 8) }
    static func put32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) { for k in 0..<4 { b[i + k] = UInt8((v >> (8 * k)) & 0xFF) } }
}
