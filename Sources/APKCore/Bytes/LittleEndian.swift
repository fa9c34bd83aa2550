/// A bounds-checked little-endian cursor over bytes. ZIP, the APK Signing Block, binary XML and the resource
/// table are all little-endian; every read says what was short instead of trapping.
///
/// Inlinable: the reads are generic, and without their bodies other modules call them through runtime
/// generic metadata, which cost more than the parsing itself (binary XML, central directories).
public struct LittleEndianReader {
    public let bytes: UnsafeRawBufferPointer
    @usableFromInline var position: Int
    public var offset: Int { position }

    @inlinable public init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes; self.position = offset
    }

    @inlinable public var remaining: Int { bytes.count - position }

    @inlinable public mutating func read<T: FixedWidthInteger>(_: T.Type = T.self) throws -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw ShortReadError(needed: size, available: max(remaining, 0), offset: offset) }
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: T.self))
        position += size
        return value
    }

    /// Reads `count` bytes as a buffer that shares the underlying storage.
    @inlinable public mutating func readBytes(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw ShortReadError(needed: count, available: max(remaining, 0), offset: position) }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[position..<(position + count)])
        position += count
        return slice
    }

    @inlinable public mutating func skip(_ count: Int) throws { _ = try readBytes(count) }

    @inlinable public mutating func seek(to newOffset: Int) throws {
        guard newOffset >= 0, newOffset <= bytes.count else {
            throw ShortReadError(needed: newOffset, available: bytes.count, offset: 0)
        }
        position = newOffset
    }
}

/// Fewer bytes than a record needs.
public struct ShortReadError: Error, CustomStringConvertible {
    public let needed: Int
    public let available: Int
    public let offset: Int
    @inlinable public init(needed: Int, available: Int, offset: Int) {
        self.needed = needed; self.available = available; self.offset = offset
    }
    public var description: String { "truncated data at offset \(offset): need \(needed) bytes, only \(available) available" }
}

/// Appends little-endian integers and bytes to a growing array.
public struct LittleEndianWriter {
    public var bytes: [UInt8]
    public init(capacity: Int = 0) { bytes = []; bytes.reserveCapacity(capacity) }

    @inlinable public mutating func write<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    @inlinable public mutating func write<C: Collection>(bytes other: C) where C.Element == UInt8 { bytes.append(contentsOf: other) }
    @inlinable public mutating func write(bytes other: UnsafeRawBufferPointer) { bytes.append(contentsOf: other) }
    public mutating func writeZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
    public var count: Int { bytes.count }
}

extension FixedWidthInteger {
    /// The little-endian bytes of this value.
    public var littleEndianBytes: [UInt8] { withUnsafeBytes(of: self.littleEndian) { Array($0) } }
}
