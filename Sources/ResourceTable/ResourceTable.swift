import APKCore
import BinaryXML

/// The parts of a compiled resource table (`resources.arsc`) apkpatch needs: resource names ↔ IDs, attribute
/// formats (for compiling XML), string values per configuration, and changing existing string values.
///
/// Layout (`ResourceTypes.h`): a `RES_TABLE_TYPE` chunk (header 12: chunk header + packageCount u32) holding the
/// global value string pool and one `ResTable_package` per package (header: id u32, name char16[128], typeStrings
/// u32, lastPublicType u32, keyStrings u32, lastPublicKey u32, typeIdOffset u32), which holds the type-name pool,
/// the key-name pool, then `ResTable_typeSpec` chunks (id u8, res0 u8, typesCount u16, entryCount u32, flags u32[])
/// and `ResTable_type` chunks (id u8, flags u8, reserved u16, entryCount u32, entriesStart u32, config, then entry
/// offsets: u32[], u16[] ×4 with `FLAG_OFFSET16`, or (index u16, offset/4 u16) pairs with `FLAG_SPARSE`).
/// An entry is `ResTable_entry` (size u16, flags u16, key u32) then a `Res_value`, or for `FLAG_COMPLEX` a map
/// (parent u32, count u32, then `ResTable_map`s: name u32 + `Res_value`); `FLAG_COMPACT` entries pack key, type and
/// data into 8 bytes.
///
/// Writing keeps every byte after the global string pool as it was, except the `data` fields of changed string
/// values: new strings are appended to the pool (old ones stay, unreferenced), so styled strings keep their spans.
public struct ResourceTable: Sendable {
    /// One value of one resource in one configuration.
    public struct Entry: Sendable {
        public let id: UInt32
        public let type: String
        public let name: String
        public let configuration: ResourceConfiguration
        /// The simple value; nil for bags (styles, attrs, arrays, plurals).
        public let value: ResourceValue?
        /// The style spans (HTML-like markup) of the value's global-pool string; empty for plain values.
        public let spans: [StyledString.Span]
        /// Style spans of bag items' strings, by item key (items without spans are absent).
        public let bagSpans: [UInt32: [StyledString.Span]]
        /// Whether the global-pool string of this value has style spans.
        public var isStyled: Bool { !spans.isEmpty }
        /// Absolute offset in the original bytes of the value's `data` u32 (simple values only).
        var dataOffset: Int?
        /// Bag items (name ID → value) of complex entries.
        public let bag: [(UInt32, ResourceValue)]
        /// The parent of a bag (a style's parent style), 0 for none.
        public let parent: UInt32
        /// `ResTable_entry.flags` as read (`FLAG_PUBLIC`, `FLAG_WEAK` are kept when the entry is rewritten).
        let flags: UInt16

        init(id: UInt32, type: String, name: String, configuration: ResourceConfiguration, value: ResourceValue?, spans: [StyledString.Span] = [],
             dataOffset: Int? = nil, bag: [(UInt32, ResourceValue)] = [], bagSpans: [UInt32: [StyledString.Span]] = [:], parent: UInt32 = 0,
             flags: UInt16 = 0) {
            self.id = id; self.type = type; self.name = name; self.configuration = configuration; self.value = value
            self.spans = spans; self.dataOffset = dataOffset; self.bag = bag; self.bagSpans = bagSpans; self.parent = parent; self.flags = flags
        }

        /// The value as a styled string, when it is a string with spans.
        public var styledValue: StyledString? {
            guard !spans.isEmpty, let text = value?.stringValue else { return nil }
            return StyledString(text: text, spans: spans)
        }
    }

    public private(set) var packageName: String
    public let packageID: UInt8
    /// Every entry of the (first) package in every configuration, in table order.
    public internal(set) var entries: [Entry]
    /// The global value string pool as it will be written.
    public private(set) var valuePool: StringPool

    /// The bytes the package layout's offsets refer to: the input, or the input with an empty package added when
    /// it had none.
    private let original: [UInt8]
    /// The bytes as given, which an unchanged table writes back.
    private let input: [UInt8]
    private let poolRange: Range<Int>
    /// Where the first package's parts are, for adding resources.
    let layout: PackageLayout
    var additions = Additions()
    private var patches: [Int: UInt32] = [:]
    private var typePatches: [Int: UInt8] = [:]
    private var isPackageRenamed = false
    /// Compiles values whose text is what `decode` wrote too, instead of leaving them alone: what the tests use to
    /// check that decoded text compiles back to the very value (an edit of one item recompiles its whole bag).
    var recompilesUnchangedText = false
    /// The bodies of the `<macro>`s of the values files applied (macros are not stored in the table).
    var macros: [String: (text: String, isStyled: Bool)] = [:]
    var names: [UInt32: ResourceName] = [:]
    var ids: [String: UInt32] = [:]
    /// IDs a new resource must not take (`avoidIDs(_:)`): read from `avoidedIDSource` when the first new ID is given.
    var avoidedIDs: Set<UInt32>?
    var avoidedIDSource: (@Sendable () throws -> Set<UInt32>)?
    private var appendedStrings: [String: UInt32] = [:]
    /// Spans of the styled strings appended to the value pool, by their index there. `encoded()` moves these
    /// strings among the pool's styled ones, which must come first.
    private var appendedStyles: [UInt32: [StringPool.Span]] = [:]
    /// Indices into `entries`: by resource ID, and string entries by name (lookups stay O(1) on framework-sized tables).
    var entriesByID: [UInt32: [Int]] = [:]
    /// A small number for each configuration the entries use, and each entry's (parallel to `entries`): a
    /// resource's entry in one configuration is found by comparing these, not each entry's configuration, which
    /// on a framework-sized table is a cache miss apiece (`entryIndex(of:in:)`).
    var configurationNumbers: [ResourceConfiguration: Int32] = [:]
    var entryConfigurationNumbers: [Int32] = []
    var stringEntriesByName: [String: [Int]] = [:]
    var stringEntriesByConfiguration: [(ResourceConfiguration, [Int])] = []

    /// Parses `resources.arsc` bytes. Throws `ResourceTableError` (`.malformed`) with the offset on bad input.
    ///
    /// A table without a package (what aapt2 writes for an app that has no resources) reads as an empty package
    /// with the app's ID, 0x7f, named `packageNameIfAbsent` (the manifest's package, which aapt2 would have named it):
    /// resources added to it are written in that package, and the table is written back as it was when none are.
    public init(bytes: [UInt8], packageNameIfAbsent: String = "") throws {
        input = bytes
        do {
            var source = bytes
            var parsed = try bytes.withUnsafeBytes { try Parser.parse($0) }
            if parsed == nil {
                source = try Self.addingEmptyPackage(to: bytes, named: packageNameIfAbsent)
                parsed = try source.withUnsafeBytes { try Parser.parse($0) }
            }
            guard let parsed else { throw Parser.fail("no package chunk") }
            original = source
            (packageName, packageID, entries, valuePool, poolRange) = (parsed.packageName, parsed.packageID, parsed.entries, parsed.pool, parsed.poolRange)
            layout = parsed.layout
        } catch let error as BinaryXMLError {
            throw ResourceTableError(.malformed, "resources.arsc: \(error.message)")
        } catch let error as ShortReadError {
            throw ResourceTableError(.malformed, "resources.arsc is truncated: \(error)")
        }
        var configurationSlots: [ResourceConfiguration: Int] = [:]
        for (index, entry) in entries.enumerated() {
            if names[entry.id] == nil {
                names[entry.id] = ResourceName(type: entry.type, name: entry.name)
                ids[entry.type + "/" + entry.name] = entry.id
            }
            entriesByID[entry.id, default: []].append(index)
            entryConfigurationNumbers.append(configurationNumber(entry.configuration))
            guard entry.type == "string" else { continue }
            stringEntriesByName[entry.name, default: []].append(index)
            if let slot = configurationSlots[entry.configuration] { stringEntriesByConfiguration[slot].1.append(index) }
            else { configurationSlots[entry.configuration] = stringEntriesByConfiguration.count; stringEntriesByConfiguration.append((entry.configuration, [index])) }
        }
    }

    private func stringEntryIndex(named name: String, qualifiers: String) -> Int? {
        stringEntriesByName[name]?.first { entries[$0].configuration.qualifiers == qualifiers }
    }

    /// All configurations that have at least one `string` resource.
    public var stringConfigurations: [ResourceConfiguration] { stringEntriesByConfiguration.map(\.0) }

    /// `string` resources of `configuration` whose value is text, as (name, value) pairs, in ID order; styled strings
    /// are included as plain text (their spans are not rendered).
    public func strings(in configuration: ResourceConfiguration) -> [(name: String, value: String)] {
        stringValues(in: configuration).compactMap { item in item.value.stringValue.map { (item.name, $0) } }
    }

    /// `string` resources of `configuration` with their values (text, or a reference such as `@string/app_name`),
    /// in ID order.
    public func stringValues(in configuration: ResourceConfiguration) -> [(name: String, value: ResourceValue)] {
        (stringEntriesByConfiguration.first { $0.0 == configuration }?.1 ?? []).map { entries[$0] }
            .sorted { $0.id < $1.id }
            .compactMap { entry in entry.value.map { (entry.name, $0) } }
    }

    /// `@type/name`, `@android:type/name` or `?attr/name` for a reference value (`@0x…` when the ID has no name
    /// here), nil for other values.
    public func referenceText(_ value: ResourceValue) -> String? {
        guard case .typed(let type, let id) = value else { return nil }
        let sigil: String
        switch type {
        case .reference, .dynamicReference: sigil = "@"
        case .attribute, .dynamicAttribute: sigil = "?"
        default: return nil
        }
        if id == 0 { return sigil == "@" ? "@null" : nil }
        if UInt8(id >> 24) == packageID, let name = names[id] { return sigil + name.type + "/" + name.name }
        if id >> 24 == 0x01, let name = FrameworkResources.name(for: id) { return sigil + "android:" + name.type + "/" + name.name }
        let hex = String(id, radix: 16)
        return sigil + "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }

    /// Names of the `string` resources of `configuration` whose text has style spans.
    public func styledStringNames(in configuration: ResourceConfiguration) -> [String] {
        (stringEntriesByConfiguration.first { $0.0 == configuration }?.1 ?? []).map { entries[$0] }.filter(\.isStyled).map(\.name)
    }

    private func value(for value: ResourceValue) -> String? {
        if case .string(let s) = value { return s }
        return nil
    }

    /// The current simple value of `type/name` in the configuration with these qualifiers ("" = default).
    public func currentValue(type: String, named name: String, qualifiers: String = "") -> ResourceValue? {
        guard let id = ids[type + "/" + name],
              let index = entriesByID[id]?.first(where: { entries[$0].configuration.qualifiers == qualifiers }) else { return nil }
        return entries[index].value
    }

    /// The current string value of `string/name` in the configuration with these qualifiers ("" = default).
    public func string(named name: String, qualifiers: String = "") -> String? {
        guard let index = stringEntryIndex(named: name, qualifiers: qualifiers) else { return nil }
        return entries[index].value?.stringValue
    }

    /// Changes the value of the existing `string/name` in the configuration with these qualifiers ("" = default).
    /// Throws `.addingNotSupported` when the resource or the configuration does not exist yet, `.notAString` when the
    /// entry is not a plain string.
    public mutating func setString(named name: String, qualifiers: String = "", to newValue: String) throws {
        try setValue(.string(newValue), type: "string", named: name, qualifiers: qualifiers)
    }

    /// Changes the simple value of the existing `type/name` in the configuration with these qualifiers ("" =
    /// default) to `newValue` (a string, a reference, or a typed value such as a boolean or color). Throws
    /// `.addingNotSupported` when the resource or configuration does not exist yet, `.notAString` when the entry is
    /// a bag (style, array, plurals). A string value with `spans` is stored as a styled string.
    public mutating func setValue(_ newValue: ResourceValue, spans: [StyledString.Span] = [], type: String, named name: String, qualifiers: String = "") throws {
        guard let id = ids[type + "/" + name] else {
            throw ResourceTableError(.addingNotSupported, "\(type)/\(name) does not exist in resources.arsc (add it with addValue)")
        }
        guard let index = entriesByID[id]?.first(where: { entries[$0].configuration.qualifiers == qualifiers }) else {
            let configuration = qualifiers.isEmpty ? "the default configuration (res/values)" : "configuration '\(qualifiers)' (res/values-\(qualifiers))"
            throw ResourceTableError(.addingNotSupported, "\(type)/\(name) has no value for \(configuration); adding values for new configurations is not supported yet")
        }
        let entry = entries[index]
        guard entry.value != nil, let dataOffset = entry.dataOffset else {
            throw ResourceTableError(.notAString, "\(type)/\(name) (\(entry.configuration)) is not a simple value and cannot be overridden")
        }
        let data: UInt32, dataType: ResourceValue.DataType
        switch newValue {
        case .string(let text):
            dataType = .string; data = try appendString(text, spans: spans)
        case .typed(let type, let value):
            dataType = type; data = value
        }
        patches[dataOffset] = data
        // The data type byte sits just before the data, in a Res_value and in a compact entry's flags alike.
        typePatches[dataOffset - 1] = dataType.rawValue
        entries[index] = Entry(id: entry.id, type: entry.type, name: entry.name, configuration: entry.configuration,
                               value: newValue, spans: newValue.stringValue == nil ? [] : spans, dataOffset: dataOffset, flags: entry.flags)
    }

    /// Renames the package (`ResTable_package.name`, which Android and aapt read as the app's package). IDs and
    /// values stay as they are. Throws `.badValuesFile` for a name longer than the 127 UTF-16 units the header holds.
    public mutating func renamePackage(to name: String) throws {
        guard !name.isEmpty, name.utf16.count < 128 else {
            throw ResourceTableError(.badValuesFile, "package name '\(name)' does not fit resources.arsc (1 to 127 characters)")
        }
        guard name != packageName else { return }
        packageName = name
        isPackageRenamed = true
    }

    /// The index of `text` among the strings appended to the value pool (appended once; a styled string each
    /// time, as aapt2 does, with its span names appended as strings).
    mutating func appendString(_ text: String, spans: [StyledString.Span] = []) throws -> UInt32 {
        if !spans.isEmpty {
            var poolSpans: [StringPool.Span] = []
            for span in spans { poolSpans.append(StringPool.Span(name: try appendString(span.tag), firstChar: span.firstChar, lastChar: span.lastChar)) }
            guard valuePool.strings.count < Int(UInt32.max) else { throw ResourceTableError(.malformed, "string pool is full") }
            let index = UInt32(valuePool.strings.count)
            valuePool.strings.append(text)
            appendedStyles[index] = poolSpans
            return index
        }
        if let existing = appendedStrings[text] { return existing }
        guard valuePool.strings.count < Int(UInt32.max) else { throw ResourceTableError(.malformed, "string pool is full") }
        let index = UInt32(valuePool.strings.count)
        valuePool.strings.append(text)
        appendedStrings[text] = index
        return index
    }

    /// The table bytes with the changes applied: new global pool, the rest copied with changed value indices.
    public func encoded() throws -> [UInt8] {
        if patches.isEmpty && typePatches.isEmpty && additions.isEmpty && !isPackageRenamed { return input }
        let (valuePool, newIndex) = poolForWriting()
        let pool: [UInt8]
        do { pool = try valuePool.encoded() } catch let error as BinaryXMLError where error.code == .tooLarge && valuePool.isUTF8 {
            // A new value longer than UTF-8 pools allow (32,767 bytes): UTF-16 pools take it, Android reads both.
            var wide = valuePool
            wide.isUTF8 = false
            do { pool = try wide.encoded() } catch let error as BinaryXMLError {
                throw ResourceTableError(.malformed, "cannot write the string pool: \(error.message)")
            }
        } catch let error as BinaryXMLError {
            throw ResourceTableError(.malformed, "cannot write the string pool: \(error.message)")
        }
        // Changed values are patched where they sit in the input; the package is then copied, or rebuilt around
        // its unchanged chunks when resources were added.
        var source = original
        for (offset, value) in patches { withUnsafeBytes(of: value.littleEndian) { for i in 0..<4 { source[offset + i] = $0[i] } } }
        for (offset, type) in typePatches { source[offset] = type }
        var package = additions.isEmpty ? Array(source[layout.range]) : try encodedPackage(from: source)
        if isPackageRenamed {
            // ResTable_package.name: char16[128] after the chunk header and the package ID.
            let units = Array(packageName.utf16)
            for i in 0..<128 {
                let unit = i < units.count ? units[i] : 0
                package[12 + 2 * i] = UInt8(unit & 0xFF); package[13 + 2 * i] = UInt8(unit >> 8)
            }
        }
        var out = LittleEndianWriter(capacity: original.count + pool.count - poolRange.count + package.count - layout.range.count)
        out.write(bytes: source[0..<poolRange.lowerBound])
        out.write(bytes: pool)
        out.write(bytes: source[poolRange.upperBound..<layout.range.lowerBound])
        out.write(bytes: package)
        out.write(bytes: source[layout.range.upperBound...])
        guard let total = UInt32(exactly: out.count) else { throw ResourceTableError(.malformed, "table exceeds 4 GiB") }
        out.patch(total, at: 4)  // RES_TABLE_TYPE chunk size
        guard let newIndex else { return out.bytes }
        var bytes = out.bytes
        try Self.renumberStrings(in: &bytes, newIndex)
        return bytes
    }

    /// The value pool as written, and how its indices moved (nil when none did). A string's styles are found by
    /// its index, so styled strings must come first: appended styled strings move to just after the input's
    /// styled ones, and the plain strings after them shift down.
    private func poolForWriting() -> (StringPool, [UInt32]?) {
        guard !appendedStyles.isEmpty else { return (valuePool, nil) }
        let styledCount = valuePool.styles.count
        let moved = appendedStyles.keys.sorted()
        let order = Array(0..<styledCount) + moved.map { Int($0) } + (styledCount..<valuePool.strings.count).filter { appendedStyles[UInt32($0)] == nil }
        var newIndex = [UInt32](repeating: 0, count: order.count)
        for (new, old) in order.enumerated() { newIndex[old] = UInt32(new) }
        var pool = valuePool
        pool.strings = order.map { valuePool.strings[$0] }
        pool.styles = (valuePool.styles + moved.map { appendedStyles[$0]! }).map { spans in
            spans.map { StringPool.Span(name: newIndex[Int($0.name)], firstChar: $0.firstChar, lastChar: $0.lastChar) }
        }
        return (pool, newIndex)
    }

    /// Rewrites every string value (`Res_value` of type string, in simple, compact and map entries of every
    /// package) of a written table to the pool's new indices. An entry that several slots share is rewritten once.
    static func renumberStrings(in bytes: inout [UInt8], _ newIndex: [UInt32]) throws {
        let string = ResourceValue.DataType.string.rawValue
        var dataOffsets: [Int] = []
        try bytes.withUnsafeBytes { raw in
            let table = try Chunk.read(in: raw, at: 0, limit: raw.count, what: "resource table")
            var seen = Set<Int>()
            var offset = table.headerEnd
            while offset < table.end {
                let package = try Chunk.read(in: raw, at: offset, limit: table.end, what: "table chunk")
                offset = package.end
                guard package.type == ChunkType.tablePackage else { continue }
                var inner = package.headerEnd
                while inner < package.end {
                    let chunk = try Chunk.read(in: raw, at: inner, limit: package.end, what: "package chunk")
                    inner = chunk.end
                    guard chunk.type == ChunkType.tableType, chunk.headerSize >= 20 else { continue }
                    var r = LittleEndianReader(raw, offset: chunk.offset + 9)
                    let flags: UInt8 = try r.read()
                    _ = try r.read(UInt16.self)
                    let entryCount = Int(try r.read(UInt32.self)), entriesStart = Int(try r.read(UInt32.self))
                    var slots = LittleEndianReader(raw, offset: chunk.headerEnd)
                    for slot in 0..<entryCount {
                        guard let (_, entryOffset) = try nextEntryOffset(&slots, slot: slot, isSparse: flags & 0x01 != 0, isOffset16: flags & 0x02 != 0) else { continue }
                        let start = chunk.offset + entriesStart + entryOffset
                        guard start + 8 <= chunk.end, seen.insert(start).inserted else { continue }
                        let size = Int(raw[start]) | Int(raw[start + 1]) << 8
                        let entryFlags = UInt16(raw[start + 2]) | UInt16(raw[start + 3]) << 8
                        if entryFlags & 0x0008 != 0 {  // compact: the type is the flags' high byte
                            if raw[start + 3] == string { dataOffsets.append(start + 4) }
                        } else if entryFlags & 0x0001 != 0 {
                            guard start + 16 <= chunk.end else { continue }
                            let count = Int(raw.loadUnaligned(fromByteOffset: start + 12, as: UInt32.self).littleEndian)
                            var item = start + size
                            for _ in 0..<count where item + 12 <= chunk.end {
                                if raw[item + 7] == string { dataOffsets.append(item + 8) }
                                item += 12
                            }
                        } else if start + size + 8 <= chunk.end, raw[start + size + 3] == string {
                            dataOffsets.append(start + size + 4)
                        }
                    }
                }
            }
        }
        for offset in dataOffsets {
            let old = Int(UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24)
            guard old < newIndex.count else { throw ResourceTableError(.malformed, "resources.arsc: string index \(old) at offset \(offset) is outside the value pool") }
            withUnsafeBytes(of: newIndex[old].littleEndian) { for i in 0..<4 { bytes[offset + i] = $0[i] } }
        }
    }
}

extension ResourceTable {
    /// Reads slot `slot` of a `ResTable_type` offset table: (entry index, offset from entriesStart), or nil for
    /// `NO_ENTRY`. Sparse tables hold (index u16, offset/4 u16) pairs, 16-bit ones offset/4, the rest u32 offsets.
    static func nextEntryOffset(_ table: inout LittleEndianReader, slot: Int, isSparse: Bool, isOffset16: Bool) throws -> (Int, Int)? {
        if isSparse { return (Int(try table.read(UInt16.self)), Int(try table.read(UInt16.self)) * 4) }
        if isOffset16 {
            let raw: UInt16 = try table.read()
            return raw == 0xFFFF ? nil : (slot, Int(raw) * 4)
        }
        let raw: UInt32 = try table.read()
        return raw == 0xFFFF_FFFF ? nil : (slot, Int(raw))
    }
}

extension ResourceTable: ResourceResolver {
    public func resourceName(for id: UInt32) -> ResourceName? { names[id] }
    public func resourceID(type: String, name: String) -> UInt32? { ids[type + "/" + name] }
    public func macro(named name: String) -> (text: String, isStyled: Bool)? { macros[name] }
    public var libraryPackageIDs: Set<UInt8> { layout.libraryPackageIDs }

    public func attribute(id: UInt32) -> AttributeInfo? {
        guard let index = entriesByID[id]?.first(where: { entries[$0].type == "attr" }) else { return nil }
        return attributeInfo(of: entries[index])
    }

    /// Format and symbols from an attr entry's bag.
    func attributeInfo(of entry: Entry) -> AttributeInfo {
        var format = AttributeFormat.any
        var symbols: [AttributeInfo.Symbol] = []
        for (key, value) in entry.bag {
            guard case .typed(_, let data) = value else { continue }
            if key == 0x0100_0000 { format = AttributeFormat(rawValue: data) }
            else if key >> 16 != 0x0100, let name = names[key] ?? FrameworkResources.name(for: key) {
                symbols.append(AttributeInfo.Symbol(name: name.name, value: data))
            }
        }
        return AttributeInfo(id: entry.id, name: entry.name, format: format, symbols: symbols)
    }
}

extension ResourceTable {
    /// A table for an APK that has no resources.arsc: package 0x7f named `packageName` (the manifest's, as aapt2
    /// names an app's package), with nothing in it yet: built from the package-less table aapt2 writes for an app
    /// without resources.
    public static func empty(packageName: String) throws -> ResourceTable {
        let pool = try StringPool(isUTF8: true).encoded()
        var table = LittleEndianWriter(capacity: 12 + pool.count)
        table.write(ChunkType.table)
        table.write(UInt16(12))
        table.write(UInt32(12 + pool.count))
        table.write(UInt32(0))  // packageCount
        table.write(bytes: pool)
        return try ResourceTable(bytes: table.bytes, packageNameIfAbsent: packageName)
    }

    /// `bytes`, a table without a package, with an empty one after its other chunks (`ResTable_package`: ID 0x7f,
    /// `name`, empty type and key name pools, no types) and its package count 1.
    static func addingEmptyPackage(to bytes: [UInt8], named name: String) throws -> [UInt8] {
        guard name.utf16.count < 128 else {
            throw ResourceTableError(.badValuesFile, "package name '\(name)' does not fit resources.arsc (1 to 127 characters)")
        }
        let tableEnd = try bytes.withUnsafeBytes { try Chunk.read(in: $0, at: 0, limit: $0.count, what: "resource table").end }
        let emptyPool = try StringPool(isUTF8: false).encoded()
        let headerSize = 288
        var package = LittleEndianWriter(capacity: headerSize + 2 * emptyPool.count)
        package.write(ChunkType.tablePackage)
        package.write(UInt16(headerSize))
        package.write(UInt32(headerSize + 2 * emptyPool.count))
        package.write(UInt32(0x7F))
        let units = Array(name.utf16)
        for i in 0..<128 { package.write(i < units.count ? units[i] : UInt16(0)) }
        package.write(UInt32(headerSize))  // typeStrings
        package.write(UInt32(0))  // lastPublicType
        package.write(UInt32(headerSize + emptyPool.count))  // keyStrings
        package.write(UInt32(0))  // lastPublicKey
        package.write(UInt32(0))  // typeIdOffset
        package.write(bytes: emptyPool)
        package.write(bytes: emptyPool)
        var out = LittleEndianWriter(capacity: bytes.count + package.count)
        out.write(bytes: bytes[0..<tableEnd])
        out.write(bytes: package.bytes)
        out.write(bytes: bytes[tableEnd...])
        guard let total = UInt32(exactly: tableEnd + package.count) else { throw ResourceTableError(.malformed, "table exceeds 4 GiB") }
        out.patch(total, at: 4)
        out.patch(UInt32(1), at: 8)
        return out.bytes
    }
}

private enum Parser {
    struct Result {
        var packageName = "", packageID: UInt8 = 0, entries: [ResourceTable.Entry] = [], pool: StringPool, poolRange: Range<Int>
        var layout = ResourceTable.PackageLayout()
    }

    static func fail(_ message: String) -> ResourceTableError { ResourceTableError(.malformed, "resources.arsc: " + message) }

    /// The table's first package, nil when it has none.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws -> Result? {
        let table = try Chunk.read(in: bytes, at: 0, limit: bytes.count, what: "resource table")
        guard table.type == ChunkType.table, table.headerSize >= 12 else {
            throw fail("not a resource table: first chunk has type 0x\(String(table.type, radix: 16)), expected 0x0002")
        }
        var pool: StringPool?
        var poolRange = 0..<0
        var result: Result?
        var offset = table.headerEnd
        while offset < table.end {
            let chunk = try Chunk.read(in: bytes, at: offset, limit: table.end, what: "table chunk")
            defer { offset = chunk.end }
            switch chunk.type {
            case ChunkType.stringPool where pool == nil:
                pool = try StringPool(bytes: bytes, chunk: chunk)
                poolRange = chunk.offset..<chunk.end
            case ChunkType.tablePackage:
                guard let pool else { throw fail("package chunk at offset \(chunk.offset) before the value string pool") }
                if result == nil {  // the first package is the app's; shared-library packages after it are not edited
                    var r = Result(pool: pool, poolRange: poolRange)
                    try parsePackage(bytes, chunk, pool: pool, into: &r)
                    result = r
                }
            default: continue
            }
        }
        return result
    }

    static func parsePackage(_ bytes: UnsafeRawBufferPointer, _ package: Chunk, pool: StringPool, into result: inout Result) throws {
        guard package.headerSize >= 284 else { throw fail("package header at offset \(package.offset) is only \(package.headerSize) bytes") }
        var reader = LittleEndianReader(bytes, offset: package.offset + 8)
        let id: UInt32 = try reader.read()
        guard id <= 0xFF else { throw fail("package ID \(id) does not fit in a byte") }
        var nameUnits: [UInt16] = []
        for _ in 0..<128 { let u: UInt16 = try reader.read(); if u == 0 { break }; nameUnits.append(u) }
        try reader.seek(to: package.offset + 8 + 4 + 256)
        let typeStringsOffset = Int(try reader.read(UInt32.self))
        _ = try reader.read(UInt32.self)
        let keyStringsOffset = Int(try reader.read(UInt32.self))
        result.packageID = UInt8(id)
        result.packageName = String(decoding: nameUnits, as: UTF16.self)

        func readPool(at relative: Int, _ what: String) throws -> StringPool {
            guard relative >= package.headerSize, relative < package.size else { throw fail("\(what) pool offset \(relative) is outside the package") }
            return try StringPool(bytes: bytes, chunk: try Chunk.read(in: bytes, at: package.offset + relative, limit: package.end, what: what + " pool"))
        }
        let typeNames = try readPool(at: typeStringsOffset, "type name")
        let keyNames = try readPool(at: keyStringsOffset, "key name")
        var typeIDOffset: UInt32 = 0
        if package.headerSize >= 288 { var r = LittleEndianReader(bytes, offset: package.offset + 284); typeIDOffset = try r.read() }
        result.layout = ResourceTable.PackageLayout(range: package.offset..<package.end, headerSize: package.headerSize,
                                                    typeNames: typeNames, keyNames: keyNames, typeIDOffset: typeIDOffset)

        var offset = package.headerEnd
        while offset < package.end {
            let chunk = try Chunk.read(in: bytes, at: offset, limit: package.end, what: "package chunk")
            defer { offset = chunk.end }
            if chunk.type == ChunkType.tableTypeSpec, chunk.headerSize >= 16 {
                var spec = LittleEndianReader(bytes, offset: chunk.offset + 8)
                let typeID: UInt8 = try spec.read()
                _ = try spec.read(UInt8.self); _ = try spec.read(UInt16.self)
                let count = Int(try spec.read(UInt32.self))
                result.layout.entryCounts[typeID] = count
                try spec.seek(to: chunk.headerEnd)
                for index in 0..<min(count, (chunk.end - chunk.headerEnd) / 4) {
                    let flags: UInt32 = try spec.read()
                    if flags & 0x4000_0000 != 0 { result.layout.specPublic.insert(id << 24 | UInt32(typeID) << 16 | UInt32(index)) }  // SPEC_PUBLIC
                }
            }
            if chunk.type == ChunkType.tableOverlayable {
                result.layout.overlayables.append(try parseOverlayable(bytes, chunk))
                continue
            }
            if chunk.type == ChunkType.tableLibrary, chunk.headerSize >= 12 {
                // ResTable_lib_header (count u32), then `count` ResTable_lib_entry (packageId u32, packageName
                // char16[128]): 260 bytes each.
                var header = LittleEndianReader(bytes, offset: chunk.offset + 8)
                let count = Int(try header.read(UInt32.self))
                for index in 0..<min(count, (chunk.end - chunk.headerEnd) / 260) {
                    var entry = LittleEndianReader(bytes, offset: chunk.headerEnd + 260 * index)
                    let libraryID: UInt32 = try entry.read()
                    if libraryID <= 0xFF { result.layout.libraryPackageIDs.insert(UInt8(libraryID)) }
                }
                continue
            }
            guard chunk.type == ChunkType.tableType else { continue }
            try parseType(bytes, chunk, packageID: UInt32(id), typeNames: typeNames, keyNames: keyNames, values: pool, into: &result)
        }
    }

    /// `ResTable_overlayable_header` (name char16[256], actor char16[256]) and its
    /// `ResTable_overlayable_policy_header` chunks (policy_flags u32, entry_count u32, then the IDs).
    static func parseOverlayable(_ bytes: UnsafeRawBufferPointer, _ chunk: Chunk) throws -> ResourceTable.Overlayable {
        guard chunk.headerSize >= 8 + 1024 else { throw fail("overlayable chunk at offset \(chunk.offset) has a \(chunk.headerSize)-byte header") }
        func text(at offset: Int) throws -> String {
            var reader = LittleEndianReader(bytes, offset: offset)
            var units: [UInt16] = []
            for _ in 0..<256 { let unit: UInt16 = try reader.read(); if unit == 0 { break }; units.append(unit) }
            return String(decoding: units, as: UTF16.self)
        }
        var overlayable = ResourceTable.Overlayable(name: try text(at: chunk.offset + 8), actor: try text(at: chunk.offset + 8 + 512), policies: [])
        var offset = chunk.headerEnd
        while offset < chunk.end {
            let policy = try Chunk.read(in: bytes, at: offset, limit: chunk.end, what: "overlayable policy")
            offset = policy.end
            guard policy.type == ChunkType.tableOverlayablePolicy, policy.headerSize >= 16 else { continue }
            var reader = LittleEndianReader(bytes, offset: policy.offset + 8)
            let flags: UInt32 = try reader.read()
            let count = Int(try reader.read(UInt32.self))
            guard count <= (policy.end - policy.headerEnd) / 4 else { throw fail("overlayable policy at offset \(policy.offset) claims \(count) entries") }
            try reader.seek(to: policy.headerEnd)
            overlayable.policies.append((flags, try (0..<count).map { _ in try reader.read(UInt32.self) }))
        }
        return overlayable
    }

    static func parseType(_ bytes: UnsafeRawBufferPointer, _ chunk: Chunk, packageID: UInt32, typeNames: StringPool, keyNames: StringPool,
                          values: StringPool, into result: inout Result) throws {
        let place = "type chunk at offset \(chunk.offset)"
        guard chunk.headerSize >= 20 + 4 else { throw fail("\(place): header of \(chunk.headerSize) bytes is too short") }
        let within = UnsafeRawBufferPointer(rebasing: bytes[0..<chunk.end])
        var reader = LittleEndianReader(within, offset: chunk.offset + 8)
        let typeID: UInt8 = try reader.read()
        let flags: UInt8 = try reader.read()
        _ = try reader.read(UInt16.self)
        let entryCount = Int(try reader.read(UInt32.self))
        let entriesStart = Int(try reader.read(UInt32.self))
        let configStart = reader.offset
        let configSize = Int(try reader.read(UInt32.self))
        guard configSize >= 4, configStart + configSize <= chunk.headerEnd else { throw fail("\(place): configuration of \(configSize) bytes does not fit its header") }
        let configuration = ResourceConfiguration(bytes: Array(within[configStart..<(configStart + configSize)]))
        guard typeID >= 1, Int(typeID) <= typeNames.strings.count else { throw fail("\(place): type ID \(typeID) has no name") }
        let typeName = typeNames.strings[Int(typeID) - 1]
        result.layout.configurations[typeID, default: []].insert(configuration)
        let isSparse = flags & 0x01 != 0, isOffset16 = flags & 0x02 != 0
        let slotSize = isOffset16 || isSparse ? (isSparse ? 4 : 2) : 4
        let slots = entryCount.multipliedReportingOverflow(by: slotSize)
        guard entryCount <= 0x10000 || isSparse, !slots.overflow, chunk.headerEnd + slots.partialValue <= chunk.end,
              entriesStart <= chunk.size else {
            throw fail("\(place): \(entryCount) entries do not fit in the \(chunk.size)-byte chunk")
        }
        var table = LittleEndianReader(within, offset: chunk.headerEnd)
        for slot in 0..<entryCount {
            guard let (index, entryOffset) = try ResourceTable.nextEntryOffset(&table, slot: slot, isSparse: isSparse, isOffset16: isOffset16) else { continue }
            let start = chunk.offset + entriesStart + entryOffset
            guard entryOffset >= 0, start + 8 <= chunk.end else { throw fail("\(place): entry #\(index) offset \(entryOffset) is outside the chunk") }
            var entry = LittleEndianReader(within, offset: start)
            let size = Int(try entry.read(UInt16.self))
            let entryFlags: UInt16 = try entry.read()
            let id = packageID << 24 | UInt32(typeID) << 16 | UInt32(index)
            let key: UInt32, value: ResourceValue?, dataOffset: Int?
            var bag: [(UInt32, ResourceValue)] = []
            var parent: UInt32 = 0
            var spans: [StyledString.Span] = []
            var bagSpans: [UInt32: [StyledString.Span]] = [:]
            func decode(_ type: UInt8, _ data: UInt32, _ what: String) throws -> ResourceValue {
                let dataType = ResourceValue.DataType(rawValue: type)
                guard dataType == .string else { return .typed(dataType, data) }
                return .string(try values.string(at: data, context: "\(place) \(what)"))
            }
            /// The spans of string `data` when a value of `type` is a styled string.
            func styles(_ type: UInt8, _ data: UInt32, _ what: String) throws -> [StyledString.Span] {
                guard type == ResourceValue.DataType.string.rawValue, Int(data) < values.styles.count else { return [] }
                return try values.styles[Int(data)].map { span in
                    StyledString.Span(tag: try values.string(at: span.name, context: "\(place) \(what) style span"), firstChar: span.firstChar, lastChar: span.lastChar)
                }
            }
            if entryFlags & 0x0008 != 0 {  // FLAG_COMPACT: key u16 in `size`, type in the high flag byte, data u32
                key = UInt32(size)
                let data: UInt32 = try entry.read()
                dataOffset = start + 4
                value = try decode(UInt8(entryFlags >> 8), data, "entry #\(index)")
                spans = try styles(UInt8(entryFlags >> 8), data, "entry #\(index)")
            } else {
                key = try entry.read()
                if entryFlags & 0x0001 != 0 {  // FLAG_COMPLEX: a map
                    guard size >= 16 else { throw fail("\(place): map entry #\(index) header is \(size) bytes") }
                    parent = try entry.read()
                    let count = Int(try entry.read(UInt32.self))
                    guard count <= (chunk.end - start) / 12 else { throw fail("\(place): map entry #\(index) claims \(count) items") }
                    var items = LittleEndianReader(within, offset: start + size)
                    for item in 0..<count {
                        let name: UInt32 = try items.read()
                        _ = try items.read(UInt16.self); _ = try items.read(UInt8.self)
                        let type: UInt8 = try items.read()
                        let data: UInt32 = try items.read()
                        bag.append((name, try decode(type, data, "map entry #\(index) item #\(item)")))
                        let itemSpans = try styles(type, data, "map entry #\(index) item #\(item)")
                        if !itemSpans.isEmpty { bagSpans[name] = itemSpans }
                    }
                    value = nil; dataOffset = nil
                } else {
                    guard size >= 8 else { throw fail("\(place): entry #\(index) header is \(size) bytes") }
                    var v = LittleEndianReader(within, offset: start + size)
                    _ = try v.read(UInt16.self); _ = try v.read(UInt8.self)
                    let type: UInt8 = try v.read()
                    dataOffset = v.offset
                    let data: UInt32 = try v.read()
                    value = try decode(type, data, "entry #\(index)")
                    spans = try styles(type, data, "entry #\(index)")
                }
            }
            let name = try keyNames.string(at: key, context: "\(place) entry #\(index) key")
            result.entries.append(ResourceTable.Entry(id: id, type: typeName, name: name, configuration: configuration, value: value,
                                                      spans: spans, dataOffset: dataOffset, bag: bag, bagSpans: bagSpans, parent: parent, flags: entryFlags))
        }
    }
}
