import APKCore

/// A `ResStringPool` chunk: the strings of a binary XML document or a resource table, with optional style spans.
///
/// Layout (`ResourceTypes.h`, `ResStringPool_header`): chunk header (type 0x0001, headerSize 28), stringCount u32,
/// styleCount u32, flags u32 (`SORTED` 0x1, `UTF8` 0x100), stringsStart u32, stylesStart u32 (both from the chunk
/// start), then `stringCount` u32 string offsets and `styleCount` u32 style offsets. A UTF-16 string is its length
/// in code units (u16, or two u16 with the high bit set when ≥ 0x8000), the units and a 0 unit; a UTF-8 string is
/// its UTF-16 length, its byte length (each one byte, or two with the high bit set when ≥ 0x80), the bytes and a 0.
/// Style `i` (for string `i`) is a list of spans (name string index, first char, last char) ended by 0xFFFFFFFF.
public struct StringPool: Sendable, Equatable {
    /// A style span: `<b>` from `firstChar` through `lastChar` (UTF-16 indices, inclusive).
    public struct Span: Sendable, Equatable {
        public var name: UInt32, firstChar: UInt32, lastChar: UInt32
        public init(name: UInt32, firstChar: UInt32, lastChar: UInt32) { self.name = name; self.firstChar = firstChar; self.lastChar = lastChar }
    }

    public var strings: [String]
    /// `styles[i]` are the spans of `strings[i]`; shorter than `strings` (styled strings come first).
    public var styles: [[Span]]
    public var isUTF8: Bool
    /// Whether the original pool said it was sorted (kept only for information; we never write `SORTED`).
    public var wasSorted: Bool

    public init(strings: [String] = [], styles: [[Span]] = [], isUTF8: Bool) {
        self.strings = strings; self.styles = styles; self.isUTF8 = isUTF8; self.wasSorted = false
    }

    static let headerSize = 28
    static let utf8Flag: UInt32 = 0x100
    static let sortedFlag: UInt32 = 0x1
    static let spanEnd: UInt32 = 0xFFFF_FFFF
    /// Sanity limit: no real pool comes near it, and it keeps a hostile count from allocating gigabytes.
    static let maximumStrings = 4_000_000

    /// The string at `index`, or an error naming `context` when the index is outside the pool.
    public func string(at index: UInt32, context: @autoclosure () -> String) throws -> String {
        guard let i = Int(exactly: index), i < strings.count else {
            throw BinaryXMLError(.badStringIndex, "\(context()): string index \(index) is outside the string pool (\(strings.count) strings)")
        }
        return strings[i]
    }

    /// Parses the string pool chunk `chunk` in `bytes`, decoding every string.
    package init(bytes: UnsafeRawBufferPointer, chunk: Chunk) throws {
        let view = try StringPoolView(bytes: bytes, chunk: chunk)
        self.init(view)
    }

    /// Decodes every string of a checked pool and collects its styles.
    init(_ view: StringPoolView) {
        isUTF8 = view.isUTF8
        wasSorted = view.wasSorted
        var strings = [String](); strings.reserveCapacity(view.count)
        for index in 0..<view.count { strings.append(view.string(at: index)) }
        self.strings = strings
        var styles = [[Span]]()
        // The view's construction walked every style already, so this walk cannot throw.
        try? view.forEachStyle { _, spans in styles.append(spans) }
        self.styles = styles
    }

    /// The encoded chunk. Strings keep their order; nothing is deduplicated or sorted here.
    public func encoded() throws -> [UInt8] {
        guard strings.count <= Self.maximumStrings, styles.count <= strings.count else {
            throw BinaryXMLError(.tooLarge, "string pool with \(strings.count) strings and \(styles.count) styles cannot be encoded")
        }
        var data = LittleEndianWriter()
        var offsets = [UInt32](); offsets.reserveCapacity(strings.count)
        // Identical strings share their bytes, as aapt does; offsets stay one per index.
        var seen = [String: UInt32]()
        for string in strings {
            if let existing = seen[string] { offsets.append(existing); continue }
            guard let offset = UInt32(exactly: data.count) else { throw BinaryXMLError(.tooLarge, "string pool data exceeds 4 GiB") }
            offsets.append(offset); seen[string] = offset
            if isUTF8 {
                let units = string.utf16.count, bytes = Array(string.utf8)
                guard units <= 0x7FFF, bytes.count <= 0x7FFF else {
                    throw BinaryXMLError(.tooLarge, "string of \(bytes.count) bytes is too long for a UTF-8 string pool (32,767 max)")
                }
                for length in [units, bytes.count] {
                    if length < 0x80 { data.write(UInt8(length)) } else { data.write(UInt8(0x80 | length >> 8)); data.write(UInt8(length & 0xFF)) }
                }
                data.write(bytes: bytes); data.write(UInt8(0))
            } else {
                let units = Array(string.utf16)
                guard units.count <= 0x7FFF_FFFF else { throw BinaryXMLError(.tooLarge, "string too long for a UTF-16 string pool") }
                if units.count < 0x8000 { data.write(UInt16(units.count)) } else {
                    data.write(UInt16(0x8000 | units.count >> 16)); data.write(UInt16(units.count & 0xFFFF))
                }
                for unit in units { data.write(unit) }
                data.write(UInt16(0))
            }
        }
        data.padToFour()
        var styleData = LittleEndianWriter()
        var styleOffsets = [UInt32]()
        if !styles.isEmpty {
            for spans in styles {
                styleOffsets.append(UInt32(styleData.count))
                for span in spans { styleData.write(span.name); styleData.write(span.firstChar); styleData.write(span.lastChar) }
                styleData.write(Self.spanEnd)
            }
            // The style array ends with two more END markers (aapt's StringPool::writeStringBlock).
            styleData.write(Self.spanEnd); styleData.write(Self.spanEnd)
        }
        var out = LittleEndianWriter(capacity: 28 + 4 * (offsets.count + styleOffsets.count) + data.count + styleData.count)
        let sizeOffset = out.writeChunkHeader(type: ChunkType.stringPool, headerSize: UInt16(Self.headerSize))
        let stringsStart = Self.headerSize + 4 * (offsets.count + styleOffsets.count)
        out.write(UInt32(strings.count)); out.write(UInt32(styles.count))
        out.write(isUTF8 ? Self.utf8Flag : 0)
        out.write(UInt32(strings.isEmpty ? 0 : stringsStart))
        out.write(UInt32(styles.isEmpty ? 0 : stringsStart + data.count))
        for offset in offsets { out.write(offset) }
        for offset in styleOffsets { out.write(offset) }
        out.write(bytes: data.bytes)
        out.write(bytes: styleData.bytes)
        try out.finishChunk(sizeOffset: sizeOffset)
        return out.bytes
    }
}
