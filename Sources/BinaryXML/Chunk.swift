import APKCore

/// Chunk types of Android's resource formats (`ResourceTypes.h`, `RES_*_TYPE`).
public enum ChunkType {
    public static let null: UInt16 = 0x0000
    public static let stringPool: UInt16 = 0x0001
    public static let table: UInt16 = 0x0002
    public static let xml: UInt16 = 0x0003
    public static let xmlStartNamespace: UInt16 = 0x0100
    public static let xmlEndNamespace: UInt16 = 0x0101
    public static let xmlStartElement: UInt16 = 0x0102
    public static let xmlEndElement: UInt16 = 0x0103
    public static let xmlCDATA: UInt16 = 0x0104
    public static let xmlResourceMap: UInt16 = 0x0180
    public static let tablePackage: UInt16 = 0x0200
    public static let tableType: UInt16 = 0x0201
    public static let tableTypeSpec: UInt16 = 0x0202
    public static let tableLibrary: UInt16 = 0x0203
    public static let tableOverlayable: UInt16 = 0x0204
    public static let tableOverlayablePolicy: UInt16 = 0x0205
}

/// One chunk located inside a byte buffer: the common `ResChunk_header` (type u16, headerSize u16, size u32)
/// plus where its header and body are. All ranges are validated against the enclosing range.
package struct Chunk {
    package let type: UInt16
    package let headerSize: Int
    package let size: Int
    /// Offset of the chunk's first byte in the buffer.
    package let offset: Int
    package var end: Int { offset + size }
    package var headerEnd: Int { offset + headerSize }

    /// Reads the chunk header at `offset`, which must lie in `offset..<limit`; `what` names it in errors.
    package static func read(in bytes: UnsafeRawBufferPointer, at offset: Int, limit: Int, what: String) throws -> Chunk {
        guard offset >= 0, limit <= bytes.count, offset <= limit, limit - offset >= 8 else {
            throw BinaryXMLError(.truncated, "\(what) at offset \(offset): need an 8-byte chunk header, only \(max(0, limit - offset)) bytes left")
        }
        var reader = LittleEndianReader(bytes, offset: offset)
        let type = try reader.u16()
        let headerSize = Int(try reader.u16())
        let size = Int(try reader.u32())
        guard headerSize >= 8, size >= headerSize else {
            throw BinaryXMLError(.malformedChunk, "\(what) at offset \(offset) (type 0x\(String(type, radix: 16))): header size \(headerSize) / chunk size \(size) are inconsistent")
        }
        guard size <= limit - offset else {
            throw BinaryXMLError(.truncated, "\(what) at offset \(offset) (type 0x\(String(type, radix: 16))): chunk claims \(size) bytes but only \(limit - offset) remain")
        }
        return Chunk(type: type, headerSize: headerSize, size: size, offset: offset)
    }
}

extension LittleEndianWriter {
    /// Writes a `ResChunk_header`; returns the offset of the size field so it can be patched later.
    package mutating func writeChunkHeader(type: UInt16, headerSize: UInt16) -> Int {
        write(type); write(headerSize)
        let sizeOffset = count
        write(UInt32(0))
        return sizeOffset
    }

    /// Patches the chunk that starts at `sizeOffset - 4` with its final size (everything written since).
    package mutating func finishChunk(sizeOffset: Int) throws {
        let size = count - (sizeOffset - 4)
        guard let value = UInt32(exactly: size) else { throw BinaryXMLError(.tooLarge, "chunk of \(size) bytes exceeds the 4 GiB format limit") }
        patch(value, at: sizeOffset)
    }

    package mutating func patch(_ value: UInt32, at offset: Int) {
        let le = value.littleEndian
        withUnsafeBytes(of: le) { raw in for i in 0..<4 { bytes[offset + i] = raw[i] } }
    }

    package mutating func patch(byte value: UInt8, at offset: Int) { bytes[offset] = value }

    package mutating func padToFour() { while count % 4 != 0 { write(UInt8(0)) } }
}

extension LittleEndianReader {
    // Concrete reads for this module. `read<T>()` is generic and not inlinable, so every call from outside
    // APKCore went through runtime generic metadata: most of the time spent reading a large manifest.
    // `readBytes` is not generic and throws the same `ShortReadError` (size needed, bytes left, offset).

    @inline(__always) mutating func u8() throws -> UInt8 { try readBytes(1)[0] }

    @inline(__always) mutating func u16() throws -> UInt16 {
        UInt16(littleEndian: try readBytes(2).loadUnaligned(as: UInt16.self))
    }

    @inline(__always) mutating func u32() throws -> UInt32 {
        UInt32(littleEndian: try readBytes(4).loadUnaligned(as: UInt32.self))
    }
}
