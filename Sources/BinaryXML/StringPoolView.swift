import APKCore

/// A checked, zero-copy view of a `ResStringPool` chunk that decodes a string only when asked for it.
///
/// `StringPool(bytes:chunk:)` needs every string (editing re-encodes them all); a reader that wants a few
/// facts from a large document does not: framework-res's manifest holds thousands of strings and the manifest
/// summary uses a few dozen. So construction runs every check the full parse runs (header, counts, offset
/// arrays, each string's length prefix against the string data, the style spans), in the same order and with
/// the same errors, and leaves decoding for later, where it can no longer fail.
///
/// The view borrows `bytes`: it must not outlive the buffer it was made from.
struct StringPoolView {
    let bytes: UnsafeRawBufferPointer
    let chunk: Chunk
    /// Number of strings.
    let count: Int
    let isUTF8: Bool
    let wasSorted: Bool
    private let styleCount: Int
    /// Absolute offset of the u32 string offsets (the style offsets follow them).
    private let offsetsStart: Int
    /// Absolute range of the string data.
    private let dataStart: Int, dataEnd: Int
    /// `stylesStart` as the header gives it (relative to the chunk).
    private let stylesStart: Int

    var place: String { "string pool at offset \(chunk.offset)" }

    /// Checks the string pool chunk `chunk` in `bytes`; see `StringPool` for the layout.
    init(bytes: UnsafeRawBufferPointer, chunk: Chunk) throws {
        guard chunk.type == ChunkType.stringPool else {
            throw BinaryXMLError(.malformedChunk, "expected a string pool chunk at offset \(chunk.offset), found type 0x\(String(chunk.type, radix: 16))")
        }
        guard chunk.headerSize >= StringPool.headerSize else {
            throw BinaryXMLError(.malformedStringPool, "string pool at offset \(chunk.offset): header of \(chunk.headerSize) bytes is shorter than 28")
        }
        var reader = LittleEndianReader(bytes, offset: chunk.offset + 8)
        let stringCount = Int(try reader.u32())
        let styleCount = Int(try reader.u32())
        let flags = try reader.u32()
        let stringsStart = Int(try reader.u32())
        let stylesStart = Int(try reader.u32())
        // The offset arrays must fit between the header and the chunk end: this bounds both counts.
        let arrays = (stringCount + styleCount).multipliedReportingOverflow(by: 4)
        guard stringCount <= StringPool.maximumStrings, styleCount <= stringCount || stringCount == 0 && styleCount == 0,
              !arrays.overflow, arrays.partialValue <= chunk.size - chunk.headerSize else {
            throw BinaryXMLError(.malformedStringPool, "string pool at offset \(chunk.offset): \(stringCount) strings and \(styleCount) styles cannot fit in a \(chunk.size)-byte chunk")
        }
        let stringsEnd = stylesStart != 0 && styleCount > 0 ? stylesStart : chunk.size
        if stringCount > 0 {
            guard stringsStart >= chunk.headerSize + arrays.partialValue, stringsStart <= stringsEnd, stringsEnd <= chunk.size else {
                throw BinaryXMLError(.malformedStringPool, "string pool at offset \(chunk.offset): strings start \(stringsStart) / styles start \(stylesStart) lie outside the \(chunk.size)-byte chunk")
            }
        }
        self.bytes = bytes
        self.chunk = chunk
        self.count = stringCount
        self.styleCount = styleCount
        self.isUTF8 = flags & StringPool.utf8Flag != 0
        self.wasSorted = flags & StringPool.sortedFlag != 0
        self.offsetsStart = chunk.headerEnd
        self.dataStart = chunk.offset + stringsStart
        self.dataEnd = chunk.offset + stringsEnd
        self.stylesStart = stylesStart

        for index in 0..<stringCount { _ = try body(of: index) }
        try forEachStyle { _, _ in }
    }

    /// Where string `index` lies: the first byte of its UTF-8 bytes or UTF-16 units, and how many there are.
    /// Throws what the full parse throws for a string that does not fit.
    private func body(of index: Int) throws -> (start: Int, count: Int) {
        let offset = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offsetsStart + 4 * index, as: UInt32.self)))
        guard offset < dataEnd - dataStart else {
            throw BinaryXMLError(.malformedStringPool, "\(place): string #\(index) offset \(offset) is beyond the string data (\(dataEnd - dataStart) bytes)")
        }
        let regionStart = dataStart + offset
        var reader = LittleEndianReader(UnsafeRawBufferPointer(rebasing: bytes[regionStart..<dataEnd]))
        func bad(_ what: String) -> BinaryXMLError {
            BinaryXMLError(.malformedStringPool, "\(place): string #\(index) \(what)")
        }
        do {
            if isUTF8 {
                func length() throws -> Int {
                    let first = Int(try reader.u8())
                    if first & 0x80 == 0 { return first }
                    return (first & 0x7F) << 8 | Int(try reader.u8())
                }
                _ = try length()  // UTF-16 length, implied by the bytes
                let byteCount = try length()
                guard reader.remaining >= byteCount else { throw bad("claims \(byteCount) bytes but only \(reader.remaining) remain") }
                return (regionStart + reader.offset, byteCount)
            } else {
                let first = Int(try reader.u16())
                var count = first
                if first & 0x8000 != 0 { count = (first & 0x7FFF) << 16 | Int(try reader.u16()) }
                guard reader.remaining / 2 >= count else { throw bad("claims \(count) UTF-16 units but only \(reader.remaining) bytes remain") }
                return (regionStart + reader.offset, count)
            }
        } catch let error as ShortReadError {
            throw bad("is truncated (\(error))")
        }
    }

    /// String `index`, which must be below `count`. Invalid UTF-8 or unpaired surrogates decode to U+FFFD,
    /// exactly as `String(decoding:as:)` does for the full parse.
    func string(at index: Int) -> String {
        // Construction checked every string, so this cannot fail; an empty string keeps it trap-free regardless.
        guard index >= 0, index < self.count, let location = try? body(of: index) else { return "" }
        let count = location.count
        let region = UnsafeRawBufferPointer(rebasing: bytes[location.start..<(location.start + (isUTF8 ? count : 2 * count))])
        if isUTF8 { return String(decoding: region.bindMemory(to: UInt8.self), as: UTF8.self) }
        // Most strings are ASCII: copy the low bytes without going through the generic UTF-16 transcoder.
        var ascii = true
        for unit in 0..<count where region[2 * unit + 1] != 0 || region[2 * unit] >= 0x80 { ascii = false; break }
        if ascii {
            return String(unsafeUninitializedCapacity: count) { utf8 in
                for unit in 0..<count { utf8[unit] = region[2 * unit] }
                return count
            }
        }
        var units = [UInt16](); units.reserveCapacity(count)
        for unit in 0..<count { units.append(UInt16(littleEndian: region.loadUnaligned(fromByteOffset: 2 * unit, as: UInt16.self))) }
        return String(decoding: units, as: UTF16.self)
    }

    /// Calls `body` with each style's index and spans, in order; throws where a style does not fit the chunk.
    func forEachStyle(_ body: (Int, [StringPool.Span]) throws -> Void) throws {
        guard styleCount > 0 else { return }
        guard stylesStart >= dataStart - chunk.offset, stylesStart < chunk.size else {
            throw BinaryXMLError(.malformedStringPool, "\(place): styles start \(stylesStart) lies outside the chunk")
        }
        let stylesBase = chunk.offset + stylesStart
        let chunkBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<chunk.end])
        for index in 0..<styleCount {
            let offset = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offsetsStart + 4 * (count + index), as: UInt32.self)))
            guard offset >= 0, offset < chunk.end - stylesBase else {
                throw BinaryXMLError(.malformedStringPool, "\(place): style #\(index) offset \(offset) is outside the chunk")
            }
            var r = LittleEndianReader(chunkBytes, offset: stylesBase + offset)
            var spans = [StringPool.Span]()
            while true {
                let name = try r.u32()
                if name == StringPool.spanEnd { break }
                spans.append(StringPool.Span(name: name, firstChar: try r.u32(), lastChar: try r.u32()))
            }
            try body(index, spans)
        }
    }
}
