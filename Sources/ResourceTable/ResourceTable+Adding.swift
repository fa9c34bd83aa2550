import APKCore
import BinaryXML

extension ResourceTable {
    /// Where the parts of the (first) package are in the input bytes, and what adding needs to know about them.
    struct PackageLayout: Sendable {
        var range: Range<Int> = 0..<0
        var headerSize = 0
        var typeNames = StringPool(isUTF8: false)
        var keyNames = StringPool(isUTF8: false)
        var typeIDOffset: UInt32 = 0
        /// `ResTable_typeSpec.entryCount` per type ID.
        var entryCounts: [UInt8: Int] = [:]
        /// The configurations each type has a `ResTable_type` chunk for.
        var configurations: [UInt8: Set<ResourceConfiguration>] = [:]
        /// The resources whose `ResTable_typeSpec` flags have `SPEC_PUBLIC`.
        var specPublic: Set<UInt32> = []
        /// The package's `RES_TABLE_OVERLAYABLE_TYPE` chunks.
        var overlayables: [Overlayable] = []
        /// The build-time package IDs its `RES_TABLE_LIBRARY_TYPE` chunks give shared libraries.
        var libraryPackageIDs: Set<UInt8> = []
    }

    /// An overlayable declaration: its name and actor, and per policy (`PolicyFlags`) the resource IDs overlays may
    /// change.
    struct Overlayable: Sendable {
        var name: String
        var actor: String
        var policies: [(flags: UInt32, ids: [UInt32])]
    }

    /// Resources added to the table: rebuilt into the package at `encoded()`.
    struct Additions: Sendable {
        /// The entry bytes (`ResTable_entry` and its `Res_value`, or a map entry and its items) for slot `index`
        /// of the type chunk of `configuration`: a new value, or one replacing the input's entry there.
        struct NewEntry: Sendable {
            var index: Int
            var configuration: ResourceConfiguration
            var bytes: [UInt8]
        }
        /// Type names beyond the input's type pool (their IDs follow the last one).
        var types: [String] = []
        /// Key names beyond the input's key pool, and the index of every key name (input ones on first use).
        var keys: [String] = []
        var keyIndex: [String: UInt32] = [:]
        /// New values per type ID, in the order added.
        var entries: [UInt8: [NewEntry]] = [:]
        /// Entry counts of the types that grew, are new, or are rewritten for another reason (public flags).
        var entryCounts: [UInt8: Int] = [:]
        /// Resources a `<public>` declaration made public that were not: their typeSpec flags get `SPEC_PUBLIC` and
        /// each of their entries `FLAG_PUBLIC`, as aapt2 writes public resources.
        var publicIDs: Set<UInt32> = []
        /// The package's overlayable declarations when the patch changed them (written anew in place of the
        /// input's `RES_TABLE_OVERLAYABLE_TYPE` chunks), nil when they are as the input has them.
        var overlayables: [Overlayable]?
        var isEmpty: Bool { entries.isEmpty && publicIDs.isEmpty && overlayables == nil }
    }

    /// The types of this package by name, in ID order (added ones included).
    public var typeNames: [String] { layout.typeNames.strings + additions.types }

    /// Whether `type/name` has a value in `configuration`.
    public func hasValue(type: String, named name: String, in configuration: ResourceConfiguration) -> Bool {
        guard let id = ids[type + "/" + name] else { return false }
        return entryIndex(of: id, in: configuration) != nil
    }

    /// The index in `entries` of resource `id`'s entry in `configuration`.
    func entryIndex(of id: UInt32, in configuration: ResourceConfiguration) -> Int? {
        guard let indices = entriesByID[id] else { return nil }
        guard entryConfigurationNumbers.count == entries.count else {
            return indices.first { entries[$0].configuration == configuration }  // the numbers are not kept up (never expected)
        }
        guard let number = configurationNumbers[configuration] else { return nil }
        return indices.first { entryConfigurationNumbers[$0] == number }
    }

    /// The number of `configuration` in `configurationNumbers`, given it if it has none yet.
    mutating func configurationNumber(_ configuration: ResourceConfiguration) -> Int32 {
        if let number = configurationNumbers[configuration] { return number }
        let number = Int32(configurationNumbers.count)
        configurationNumbers[configuration] = number
        return number
    }

    /// Adds a simple value (a string, a reference, a typed value; for a file resource, its path in the APK as a
    /// string) for `type/name` in `configuration`. An existing resource keeps its ID and gains the configuration;
    /// a new one takes the next free entry ID of its type, and a type the package lacks takes the next type ID.
    /// Returns the resource ID. Throws `.duplicate` when the resource already has a value in that configuration
    /// (change it with `setValue`), `.addingNotSupported` for tables this cannot extend. A string value with `spans`
    /// is stored as a styled string.
    @discardableResult
    public mutating func addValue(_ value: ResourceValue, spans: [StyledString.Span] = [], type: String, named name: String,
                                  configuration: ResourceConfiguration) throws -> UInt32 {
        if hasValue(type: type, named: name, in: configuration) {
            throw ResourceTableError(.duplicate, "\(type)/\(name) already has a value in \(configuration); a configuration holds each name once")
        }
        let id = try reserveID(type: type, named: name)
        let dataType: UInt8, data: UInt32
        switch value {
        case .string(let text): dataType = ResourceValue.DataType.string.rawValue; data = try appendString(text, spans: spans)
        case .typed(let type, let value): dataType = type.rawValue; data = value
        }
        var w = LittleEndianWriter(capacity: 16)
        w.write(UInt16(8)); w.write(UInt16(0)); w.write(keyIndex(for: name))
        w.write(UInt16(8)); w.write(UInt8(0)); w.write(dataType); w.write(data)
        record(Entry(id: id, type: type, name: name, configuration: configuration, value: value, spans: value.stringValue == nil ? [] : spans), bytes: w.bytes)
        return id
    }

    /// Gives `type/name` a bag (a style, attr, array or plurals: items keyed by attribute, index or quantity) in
    /// `configuration`, added or replacing the value there; the entry keeps the input's public/weak flags. String
    /// items with spans (`spans`, by item key) are stored as styled strings. Returns the resource ID.
    @discardableResult
    public mutating func putBag(_ items: [(UInt32, ResourceValue)], spans: [UInt32: [StyledString.Span]] = [:], parent: UInt32 = 0,
                                type: String, named name: String, configuration: ResourceConfiguration) throws -> UInt32 {
        let id = try reserveID(type: type, named: name)
        let existing = entryIndex(of: id, in: configuration)
        if let existing, entries[existing].value != nil, entries[existing].dataOffset == nil {
            throw ResourceTableError(.duplicate, "\(type)/\(name) already has a value in \(configuration); a configuration holds each name once")
        }
        let sorted = items.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element)
        guard sorted.count < 0x1000_0000 else { throw ResourceTableError(.malformed, "\(type)/\(name) has too many items") }
        let keptFlags = existing.map { entries[$0].flags & 0x0006 } ?? 0  // FLAG_PUBLIC | FLAG_WEAK
        var w = LittleEndianWriter(capacity: 16 + 12 * sorted.count)
        w.write(UInt16(16)); w.write(UInt16(0x0001) | keptFlags); w.write(keyIndex(for: name))
        w.write(parent); w.write(UInt32(sorted.count))
        for (key, value) in sorted {
            w.write(key); w.write(UInt16(8)); w.write(UInt8(0))
            switch value {
            case .string(let text): w.write(ResourceValue.DataType.string.rawValue); w.write(try appendString(text, spans: spans[key] ?? []))
            case .typed(let type, let data): w.write(type.rawValue); w.write(data)
            }
        }
        let entry = Entry(id: id, type: type, name: name, configuration: configuration, value: nil, bag: sorted,
                          bagSpans: spans.filter { key, spans in !spans.isEmpty && sorted.contains { $0.0 == key && $0.1.stringValue != nil } },
                          parent: parent, flags: 0x0001 | keptFlags)
        if let existing {
            entries[existing] = entry
            let typeID = UInt8((id >> 16) & 0xFF)
            if additions.entryCounts[typeID] == nil { additions.entryCounts[typeID] = layout.entryCounts[typeID] ?? 0 }
            additions.entries[typeID, default: []].removeAll { $0.index == Int(id & 0xFFFF) && $0.configuration == configuration }
            additions.entries[typeID, default: []].append(Additions.NewEntry(index: Int(id & 0xFFFF), configuration: configuration, bytes: w.bytes))
        } else {
            record(entry, bytes: w.bytes)
        }
        return id
    }

    /// Adds `entry` (new in its configuration) to the additions and the indexes.
    private mutating func record(_ entry: Entry, bytes: [UInt8]) {
        let typeID = UInt8((entry.id >> 16) & 0xFF)
        additions.entries[typeID, default: []].append(Additions.NewEntry(index: Int(entry.id & 0xFFFF), configuration: entry.configuration, bytes: bytes))
        if additions.entryCounts[typeID] == nil { additions.entryCounts[typeID] = layout.entryCounts[typeID] ?? 0 }
        entries.append(entry)
        entriesByID[entry.id, default: []].append(entries.count - 1)
        entryConfigurationNumbers.append(configurationNumber(entry.configuration))
        if entry.type == "string" {
            stringEntriesByName[entry.name, default: []].append(entries.count - 1)
            if let slot = stringEntriesByConfiguration.firstIndex(where: { $0.0 == entry.configuration }) {
                stringEntriesByConfiguration[slot].1.append(entries.count - 1)
            } else {
                stringEntriesByConfiguration.append((entry.configuration, [entries.count - 1]))
            }
        }
    }

    /// Keeps the IDs `source` gives (what the APK's compiled XML refers to) from new resources: a new resource
    /// takes the next free entry ID of its type that none of them is, leaving the slots between empty. `source` is
    /// read once, when the first new ID is given, so a patch that adds nothing does not pay for it.
    public mutating func avoidIDs(_ source: @escaping @Sendable () throws -> Set<UInt32>) {
        avoidedIDs = nil
        avoidedIDSource = source
    }

    /// The ID of `type/name`, given one when it has none yet: the next free entry ID of its type (past the IDs kept
    /// by `avoidIDs(_:)`), and a type the package lacks takes the next type ID. A reserved name can be referred to
    /// before it gets its values.
    @discardableResult
    public mutating func reserveID(type: String, named name: String) throws -> UInt32 {
        guard !type.isEmpty, !name.isEmpty else { throw ResourceTableError(.badValuesFile, "a resource needs a type and a name (\(type)/\(name))") }
        if let existing = ids[type + "/" + name] { return existing }
        guard layout.typeIDOffset == 0 else {
            throw ResourceTableError(.addingNotSupported, "adding resources to a package with a type ID offset (a shared library or split) is not supported yet")
        }
        let typeID: UInt8
        if let index = typeNames.firstIndex(of: type) {
            typeID = UInt8(index + 1)
        } else {
            guard typeNames.count < 255 else { throw ResourceTableError(.addingNotSupported, "the package already has 255 resource types") }
            additions.types.append(type)
            typeID = UInt8(typeNames.count)
            additions.entryCounts[typeID] = 0
        }
        var count = additions.entryCounts[typeID] ?? layout.entryCounts[typeID] ?? 0
        guard count < 0x10000 else { throw ResourceTableError(.addingNotSupported, "type \(type) already has 65,536 entries") }
        let base = UInt32(packageID) << 24 | UInt32(typeID) << 16
        if avoidedIDs == nil, let source = avoidedIDSource { avoidedIDs = try source() }
        if let avoided = avoidedIDs, !avoided.isEmpty {
            let first = count
            while count < 0x10000 && avoided.contains(base | UInt32(count)) { count += 1 }
            guard count < 0x10000 else {
                throw ResourceTableError(.addingNotSupported, "type \(type) has no free resource ID left: the APK's compiled XML refers to every ID from \(Self.hex(base | UInt32(first))) to \(Self.hex(base | 0xFFFF)) though the table does not define them, and a new resource there would be what those references find. Give the resource an ID with <public> in the patch's values")
            }
        }
        additions.entryCounts[typeID] = count + 1
        let id = base | UInt32(count)
        names[id] = ResourceName(type: type, name: name)
        ids[type + "/" + name] = id
        return id
    }

    /// Gives the new `type/name` exactly `id` (a `<public>` declaration's): it must be in this package and in the
    /// type's ID range (a type the package lacks takes the next type ID), and no resource may have it. Entries
    /// between the type's last one and `id` stay empty. Throws `.ambiguousEdit` saying which rule `id` breaks.
    public mutating func reserveID(type: String, named name: String, id: UInt32) throws {
        guard ids[type + "/" + name] == nil else {
            throw ResourceTableError(.duplicate, "\(type)/\(name) already has an ID")
        }
        guard layout.typeIDOffset == 0 else {
            throw ResourceTableError(.addingNotSupported, "adding resources to a package with a type ID offset (a shared library or split) is not supported yet")
        }
        let typeID = UInt8((id >> 16) & 0xFF), index = Int(id & 0xFFFF)
        let package = UInt32(packageID) << 24
        let range = { (t: Int) in "\(Self.hex(package | UInt32(t) << 16)) to \(Self.hex(package | UInt32(t) << 16 | 0xFFFF))" }
        guard UInt8(id >> 24) == packageID else {
            throw ResourceTableError(.ambiguousEdit, "ID \(Self.hex(id)) is not in this package (its IDs start with \(Self.hex(package).prefix(4)))")
        }
        if let existing = typeNames.firstIndex(of: type) {
            guard Int(typeID) == existing + 1 else {
                throw ResourceTableError(.ambiguousEdit, "ID \(Self.hex(id)) is outside type \(type)'s IDs (\(range(existing + 1)))")
            }
        } else {
            guard Int(typeID) == typeNames.count + 1 else {
                throw ResourceTableError(.ambiguousEdit, "the package has no \(type) resources yet, so \(type) becomes type \(typeNames.count + 1): its IDs are \(range(typeNames.count + 1)), not \(Self.hex(id))")
            }
            additions.types.append(type)
            additions.entryCounts[typeID] = 0
        }
        if let other = names[id] {
            throw ResourceTableError(.ambiguousEdit, "ID \(Self.hex(id)) is already \(other.type)/\(other.name)'s")
        }
        let count = additions.entryCounts[typeID] ?? layout.entryCounts[typeID] ?? 0
        additions.entryCounts[typeID] = max(count, index + 1)
        names[id] = ResourceName(type: type, name: name)
        ids[type + "/" + name] = id
    }

    private mutating func keyIndex(for name: String) -> UInt32 {
        if additions.keyIndex.isEmpty {
            for (index, key) in layout.keyNames.strings.enumerated().reversed() { additions.keyIndex[key] = UInt32(index) }
        }
        if let index = additions.keyIndex[name] { return index }
        let index = UInt32(layout.keyNames.strings.count + additions.keys.count)
        additions.keys.append(name)
        additions.keyIndex[name] = index
        return index
    }

    /// Layout (`ResTable_package`, `ResTable_typeSpec`, `ResTable_type`: see `ResourceTable`): the package header
    /// with new pool offsets and size; the type-name and key pools, re-encoded when they grew; every chunk of a type
    /// that did not change as it was; a changed type's spec with its flags extended and each of its type chunks
    /// rewritten densely (32-bit offsets, the entries' bytes copied as they were) with the new slots; new
    /// configurations and new types after them.
    func encodedPackage(from source: [UInt8]) throws -> [UInt8] {
        let base = layout.range.lowerBound
        var out = LittleEndianWriter(capacity: layout.range.count + 4096)
        out.write(bytes: source[base..<(base + layout.headerSize)])
        let header = try source.withUnsafeBytes { bytes -> (typeStrings: Int, keyStrings: Int, lastPublicType: UInt32, lastPublicKey: UInt32) in
            var r = LittleEndianReader(bytes, offset: base + 268)
            let typeStrings = Int(try r.read(UInt32.self)), lastPublicType: UInt32 = try r.read()
            let keyStrings = Int(try r.read(UInt32.self)), lastPublicKey: UInt32 = try r.read()
            return (typeStrings, keyStrings, lastPublicType, lastPublicKey)
        }
        var newPoolOffsets = (types: header.typeStrings, keys: header.keyStrings)
        var emittedConfigurations: [UInt8: Set<ResourceConfiguration>] = [:]
        let lastChunkOfType = try lastChunkOffsets(in: source)

        try source.withUnsafeBytes { bytes in
            var offset = base + layout.headerSize
            while offset < layout.range.upperBound {
                let chunk = try Chunk.read(in: bytes, at: offset, limit: layout.range.upperBound, what: "package chunk")
                defer { offset = chunk.end }
                let relative = chunk.offset - base
                if relative == header.typeStrings {
                    newPoolOffsets.types = out.count
                    if additions.types.isEmpty { out.write(bytes: source[chunk.offset..<chunk.end]) }
                    else { var pool = layout.typeNames; pool.strings += additions.types; out.write(bytes: try encode(pool)) }
                    continue
                }
                if relative == header.keyStrings {
                    newPoolOffsets.keys = out.count
                    if additions.keys.isEmpty { out.write(bytes: source[chunk.offset..<chunk.end]) }
                    else { var pool = layout.keyNames; pool.strings += additions.keys; out.write(bytes: try encode(pool)) }
                    continue
                }
                if chunk.type == ChunkType.tableOverlayable, additions.overlayables != nil { continue }  // written anew below
                let typeID = chunk.size > 8 ? bytes[chunk.offset + 8] : 0
                guard chunk.type == ChunkType.tableTypeSpec || chunk.type == ChunkType.tableType, let count = additions.entryCounts[typeID] else {
                    out.write(bytes: source[chunk.offset..<chunk.end])
                    continue
                }
                let added = additions.entries[typeID] ?? []
                if chunk.type == ChunkType.tableTypeSpec {
                    writeTypeSpec(typeID: typeID, count: count, added: added, original: (bytes, chunk), into: &out)
                } else {
                    let configuration = try writeType(typeID: typeID, count: count, added: added, original: (bytes, chunk), into: &out)
                    emittedConfigurations[typeID, default: []].insert(configuration)
                }
                if lastChunkOfType[typeID] == chunk.offset {
                    try writeNewConfigurations(typeID: typeID, count: count, added: added, except: emittedConfigurations[typeID] ?? [], into: &out)
                }
            }
        }
        // Types the package did not have.
        for (index, _) in additions.types.enumerated() {
            let typeID = UInt8(layout.typeNames.strings.count + index + 1)
            let added = additions.entries[typeID] ?? []
            let count = additions.entryCounts[typeID] ?? 0
            writeTypeSpec(typeID: typeID, count: count, added: added, original: nil, into: &out)
            try writeNewConfigurations(typeID: typeID, count: count, added: added, except: [], into: &out)
        }
        if let overlayables = additions.overlayables { try writeOverlayables(overlayables, into: &out) }
        guard let size = UInt32(exactly: out.count) else { throw ResourceTableError(.malformed, "package exceeds 4 GiB") }
        out.patch(size, at: 4)
        out.patch(UInt32(newPoolOffsets.types), at: 268)
        let typeCount = UInt32(typeNames.count), keyCount = UInt32(layout.keyNames.strings.count + additions.keys.count)
        if header.lastPublicType == UInt32(layout.typeNames.strings.count) { out.patch(typeCount, at: 272) }
        out.patch(UInt32(newPoolOffsets.keys), at: 276)
        if header.lastPublicKey == UInt32(layout.keyNames.strings.count) { out.patch(keyCount, at: 280) }
        return out.bytes
    }

    private func encode(_ pool: StringPool) throws -> [UInt8] {
        do { return try pool.encoded() } catch let error as BinaryXMLError {
            throw ResourceTableError(.malformed, "cannot write a name pool: \(error.message)")
        }
    }

    /// The offset of the last typeSpec or type chunk of each changed type: new configurations go after it.
    private func lastChunkOffsets(in source: [UInt8]) throws -> [UInt8: Int] {
        var last: [UInt8: Int] = [:]
        try source.withUnsafeBytes { bytes in
            var offset = layout.range.lowerBound + layout.headerSize
            while offset < layout.range.upperBound {
                let chunk = try Chunk.read(in: bytes, at: offset, limit: layout.range.upperBound, what: "package chunk")
                defer { offset = chunk.end }
                if chunk.type == ChunkType.tableTypeSpec || chunk.type == ChunkType.tableType, chunk.size > 8 { last[bytes[chunk.offset + 8]] = chunk.offset }
            }
        }
        return last
    }

    /// `ResTable_typeSpec`: header (id u8, res0 u8, typesCount u16, entryCount u32), then one u32 of configuration
    /// change flags per entry. An added value outside the default configuration sets the flags of the axes its
    /// configuration varies, so Android reloads the resource when that part of the configuration changes.
    private func writeTypeSpec(typeID: UInt8, count: Int, added: [Additions.NewEntry],
                               original: (UnsafeRawBufferPointer, Chunk)?, into out: inout LittleEndianWriter) {
        var flags = [UInt32](repeating: 0, count: count)
        var typesCount: UInt16 = 0
        var headerSize: UInt16 = 16
        if let (bytes, chunk) = original {
            headerSize = UInt16(chunk.headerSize)
            typesCount = UInt16(bytes[chunk.offset + 10]) | UInt16(bytes[chunk.offset + 11]) << 8
            let oldCount = Int(bytes.loadUnaligned(fromByteOffset: chunk.offset + 12, as: UInt32.self).littleEndian)
            for i in 0..<min(oldCount, count) where chunk.headerEnd + 4 * i + 4 <= chunk.end {
                flags[i] = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: chunk.headerEnd + 4 * i, as: UInt32.self))
            }
        }
        for entry in added where entry.index < count { flags[entry.index] |= entry.configuration.changeFlags }
        let package = UInt32(packageID) << 24 | UInt32(typeID) << 16
        for index in flags.indices where additions.publicIDs.contains(package | UInt32(index)) { flags[index] |= 0x4000_0000 }  // SPEC_PUBLIC
        if typesCount != 0 {
            typesCount += UInt16(clamping: Set(added.map(\.configuration)).subtracting(layout.configurations[typeID] ?? []).count)
        }
        let sizeOffset = out.writeChunkHeader(type: ChunkType.tableTypeSpec, headerSize: headerSize)
        out.write(typeID); out.write(UInt8(0)); out.write(typesCount); out.write(UInt32(count))
        if let (bytes, chunk) = original, chunk.headerSize > 16 { out.write(bytes: Array(bytes[(chunk.offset + 16)..<chunk.headerEnd])) }
        for flag in flags { out.write(flag) }
        try? out.finishChunk(sizeOffset: sizeOffset)
    }

    /// Rewrites one `ResTable_type` chunk densely with `count` slots, adding the values added for its configuration.
    /// Returns the configuration.
    private func writeType(typeID: UInt8, count: Int, added: [Additions.NewEntry], original: (UnsafeRawBufferPointer, Chunk),
                           into out: inout LittleEndianWriter) throws -> ResourceConfiguration {
        let (bytes, chunk) = original
        let place = "type chunk at offset \(chunk.offset)"
        var r = LittleEndianReader(bytes, offset: chunk.offset + 9)
        let flags: UInt8 = try r.read()
        _ = try r.read(UInt16.self)
        let entryCount = Int(try r.read(UInt32.self))
        let entriesStart = Int(try r.read(UInt32.self))
        let configSize = Int(try r.read(UInt32.self))
        guard chunk.offset + 20 + configSize <= chunk.headerEnd else { throw ResourceTableError(.malformed, "resources.arsc: \(place): configuration does not fit") }
        let configuration = ResourceConfiguration(bytes: Array(bytes[(chunk.offset + 20)..<(chunk.offset + 20 + configSize)]))
        let isSparse = flags & 0x01 != 0, isOffset16 = flags & 0x02 != 0
        var slots = [[UInt8]?](repeating: nil, count: count)
        var table = LittleEndianReader(bytes, offset: chunk.headerEnd)
        for slot in 0..<entryCount {
            guard let (index, entryOffset) = try ResourceTable.nextEntryOffset(&table, slot: slot, isSparse: isSparse, isOffset16: isOffset16) else { continue }
            let start = chunk.offset + entriesStart + entryOffset
            guard index < count, start + 8 <= chunk.end else { throw ResourceTableError(.malformed, "resources.arsc: \(place): entry #\(index) is outside the chunk") }
            let size = Int(bytes[start]) | Int(bytes[start + 1]) << 8
            let entryFlags = UInt16(bytes[start + 2]) | UInt16(bytes[start + 3]) << 8
            var length = 8
            if entryFlags & 0x0008 == 0 {
                if entryFlags & 0x0001 != 0 {
                    guard start + 16 <= chunk.end else { throw ResourceTableError(.malformed, "resources.arsc: \(place): map entry #\(index) is truncated") }
                    let items = Int(bytes.loadUnaligned(fromByteOffset: start + 12, as: UInt32.self).littleEndian)
                    length = size + items * 12
                } else {
                    length = size + 8
                }
            }
            guard length >= 8, start + length <= chunk.end else { throw ResourceTableError(.malformed, "resources.arsc: \(place): entry #\(index) is outside the chunk") }
            slots[index] = Array(bytes[start..<(start + length)])
        }
        for entry in added where entry.configuration == configuration && entry.index < count { slots[entry.index] = entry.bytes }
        let headerBytes = Array(bytes[chunk.offset..<chunk.headerEnd])
        writeDenseType(typeID: typeID, headerBytes: headerBytes, slots: slots, into: &out)
        return configuration
    }

    private func writeNewConfigurations(typeID: UInt8, count: Int, added: [Additions.NewEntry], except existing: Set<ResourceConfiguration>,
                                        into out: inout LittleEndianWriter) throws {
        var seen = existing
        for entry in added where !seen.contains(entry.configuration) {
            let configuration = entry.configuration
            seen.insert(configuration)
            var slots = [[UInt8]?](repeating: nil, count: count)
            for item in added where item.configuration == configuration && item.index < count { slots[item.index] = item.bytes }
            var header = LittleEndianWriter()
            let configBytes = configuration.bytes
            header.write(ChunkType.tableType); header.write(UInt16(20 + configBytes.count)); header.write(UInt32(0))
            header.write(typeID); header.write(UInt8(0)); header.write(UInt16(0)); header.write(UInt32(0)); header.write(UInt32(0))
            header.write(bytes: configBytes)
            writeDenseType(typeID: typeID, headerBytes: header.bytes, slots: slots, into: &out)
        }
    }

    /// Writes a `ResTable_type` from its header bytes (patched: flags cleared, counts, sizes) and per-slot entries;
    /// the entries of resources made public get `FLAG_PUBLIC`.
    private func writeDenseType(typeID: UInt8, headerBytes: [UInt8], slots: [[UInt8]?], into out: inout LittleEndianWriter) {
        var slots = slots
        let package = UInt32(packageID) << 24 | UInt32(typeID) << 16
        for index in slots.indices where slots[index] != nil && additions.publicIDs.contains(package | UInt32(index)) {
            slots[index]![2] |= 0x02  // ResTable_entry.flags low byte (compact entries too)
        }
        let start = out.count
        var header = headerBytes
        header[9] = 0  // dense 32-bit offsets: neither sparse nor 16-bit
        let entriesStart = header.count + 4 * slots.count
        out.write(bytes: header)
        out.patch(UInt32(slots.count), at: start + 12)
        out.patch(UInt32(entriesStart), at: start + 16)
        var offset = 0
        for slot in slots {
            if let slot { out.write(UInt32(offset)); offset += slot.count } else { out.write(UInt32(0xFFFF_FFFF)) }
        }
        for case let slot? in slots { out.write(bytes: slot) }
        out.patch(UInt32(out.count - start), at: start + 4)
    }

    /// `RES_TABLE_OVERLAYABLE_TYPE` chunks as aapt2's TableFlattener writes them: one per overlayable, by name
    /// (header: chunk header, name char16[256], actor char16[256]), each holding one
    /// `RES_TABLE_OVERLAYABLE_POLICY_TYPE` chunk per policy, by flags (header: chunk header, policy_flags u32,
    /// entry_count u32), then its resource IDs in ascending order.
    private func writeOverlayables(_ overlayables: [Overlayable], into out: inout LittleEndianWriter) throws {
        func writeName(_ text: String) {
            let units = Array(text.utf16)
            for i in 0..<256 { out.write(i < units.count ? units[i] : UInt16(0)) }
        }
        for overlayable in overlayables.sorted(by: { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }) {
            let sizeOffset = out.writeChunkHeader(type: ChunkType.tableOverlayable, headerSize: 8 + 1024)
            writeName(overlayable.name)
            writeName(overlayable.actor)
            for policy in overlayable.policies.sorted(by: { $0.flags < $1.flags }) {
                let ids = Set(policy.ids).sorted()
                let policyStart = out.writeChunkHeader(type: ChunkType.tableOverlayablePolicy, headerSize: 16)
                out.write(policy.flags); out.write(UInt32(ids.count))
                for id in ids { out.write(id) }
                try out.finishChunk(sizeOffset: policyStart)
            }
            try out.finishChunk(sizeOffset: sizeOffset)
        }
    }
}
