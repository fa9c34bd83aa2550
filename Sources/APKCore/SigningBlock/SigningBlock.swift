/// The APK Signing Block, which sits between the last ZIP entry and the central directory
/// (https://source.android.com/docs/security/features/apksigning/v2#apk-signing-block):
///
///     uint64  size of block in bytes (excluding this field)
///     repeated ID-value pairs:
///         uint64  pair length (excluding this field) = 4 + value length
///         uint32  ID
///         bytes   value
///     uint64  size of block in bytes (same as the first field)
///     16 bytes magic "APK Sig Block 42"
public struct SigningBlock: Sendable, Equatable {
    /// Known block IDs (apksig's `V2SchemeConstants`, `V3SchemeConstants`, `ApkSigningBlockUtils`).
    public enum ID {
        public static let v2: UInt32 = 0x7109_871a
        public static let v3: UInt32 = 0xf053_68c0
        public static let v31: UInt32 = 0x1b93_ad61
        /// APK Signature Scheme v3.2: hybrid signers (a classical and an ML-DSA signature), Android 17+.
        public static let v32: UInt32 = 0x70e1_c89f
        public static let verityPadding: UInt32 = 0x4272_6577
        public static let sourceStamp: UInt32 = 0x6dff_800d
        public static let sourceStampV2: UInt32 = 0x2b09_189e
        public static let dependencyInfo: UInt32 = 0x504b_4453
        public static let playFrosting: UInt32 = 0x2146_444e
    }

    public static let magic: [UInt8] = Array("APK Sig Block 42".utf8)
    /// The smallest block: two size fields and the magic.
    public static let minimumSize: Int64 = 8 + 8 + 16
    /// apksig aligns the block's start and size to 4096 bytes (for fs-verity).
    public static let alignment: Int64 = 4096

    public struct Pair: Sendable, Equatable {
        public var id: UInt32
        public var value: [UInt8]
        public init(id: UInt32, value: [UInt8]) { self.id = id; self.value = value }
    }

    public var pairs: [Pair]
    /// Where the block starts in the APK (the first size field).
    public var offset: Int64

    public init(pairs: [Pair], offset: Int64 = 0) { self.pairs = pairs; self.offset = offset }

    /// The value of the first pair with `id`.
    public func value(for id: UInt32) -> [UInt8]? { pairs.first { $0.id == id }?.value }

    /// Where the APK Signing Block ending at `centralDirectoryOffset` starts, judged only by its framing, as
    /// apksig's `ApkSigningBlockUtilsLite.findApkSigningBlock` and Android's `ApkSigningBlockUtils` do: nil when
    /// the magic is missing, the footer size is out of range, the block would start before the file, or the
    /// header and footer sizes differ. Both treat all of these as "no APK Signing Block" (the APK then stands
    /// or falls by its JAR signature and that signature's stripping protection), not as a malformed APK. The
    /// pairs are not looked at: a malformed pair only hides the pairs after it. Throws only when reading fails.
    public static func frameOffset(in source: any DataSource, centralDirectoryOffset: Int64) throws -> Int64? {
        if case .found(let start) = try framing(in: source, centralDirectoryOffset: centralDirectoryOffset) { return start }
        return nil
    }

    /// What the 24-byte footer and the 8-byte header before `centralDirectoryOffset` say; the checks both
    /// `frameOffset` (apksig's "not found") and `locate` (an error for a broken block) are made of.
    private enum Framing {
        case absent
        case malformed(String)
        case found(start: Int64)
    }

    private static func framing(in source: any DataSource, centralDirectoryOffset: Int64) throws -> Framing {
        guard centralDirectoryOffset >= minimumSize, centralDirectoryOffset <= source.count else { return .absent }
        let footer = try source.bytes(in: (centralDirectoryOffset - 24)..<centralDirectoryOffset)
        guard Array(footer[8...]) == magic else { return .absent }
        let sizeInFooter = footer.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        // apksig: `apkSigBlockSizeInFooter < 24 || > Integer.MAX_VALUE - 8`.
        guard sizeInFooter >= 24, sizeInFooter <= UInt64(Int32.max) - 8 else {
            return .malformed("APK Signing Block size \(sizeInFooter) out of range")
        }
        let start = centralDirectoryOffset - Int64(sizeInFooter) - 8
        guard start >= 0 else {
            return .malformed("APK Signing Block size \(sizeInFooter) is larger than the space before the central directory")
        }
        let header = try source.bytes(in: start..<(start + 8))
        let sizeInHeader = header.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        guard sizeInHeader == sizeInFooter else {
            return .malformed("APK Signing Block sizes in header (\(sizeInHeader)) and footer (\(sizeInFooter)) differ")
        }
        return .found(start: start)
    }

    /// Finds and parses the signing block that ends where the central directory starts.
    /// Returns nil when there is none (an unsigned or v1-only APK); throws when one is there but malformed.
    public static func locate(in source: any DataSource, centralDirectoryOffset: Int64) throws -> SigningBlock? {
        let start: Int64
        switch try framing(in: source, centralDirectoryOffset: centralDirectoryOffset) {
        case .absent: return nil
        case .malformed(let reason): throw SigningBlockError(reason)
        case .found(let offset): start = offset
        }
        return try source.withBytes(in: start..<centralDirectoryOffset) { block in
            var r = LittleEndianReader(block)
            _ = try r.read(UInt64.self)  // the header's size, equal to the footer's (framing)
            var pairs: [Pair] = []
            let pairsEnd = block.count - 24
            var index = 0
            while r.offset < pairsEnd {
                index += 1
                guard pairsEnd - r.offset >= 8 else {
                    throw SigningBlockError("insufficient data to read size of APK Signing Block entry #\(index)")
                }
                let length = try r.read(UInt64.self)
                guard length >= 4, length <= UInt64(pairsEnd - r.offset) else {
                    throw SigningBlockError("APK Signing Block entry #\(index) size out of range: \(length), available: \(pairsEnd - r.offset)")
                }
                let id = try r.read(UInt32.self)
                let value = Array(try r.readBytes(Int(length) - 4))
                pairs.append(Pair(id: id, value: value))
            }
            return SigningBlock(pairs: pairs, offset: start)
        }
    }

    /// Encodes the block as apksig's `generateApkSigningBlock` does: the pairs, then a verity-padding pair
    /// when needed so the whole block is a multiple of 4096 bytes.
    public func encoded(padToAlignment: Bool = true) -> [UInt8] {
        var body = LittleEndianWriter()
        for pair in pairs {
            body.write(UInt64(pair.value.count + 4))
            body.write(pair.id)
            body.write(bytes: pair.value)
        }
        // size field + pairs + size field + magic
        var total = 8 + body.count + 8 + 16
        if padToAlignment && total % Int(Self.alignment) != 0 {
            var padding = Int(Self.alignment) - total % Int(Self.alignment)
            if padding < 12 { padding += Int(Self.alignment) }  // a pair needs 8 (length) + 4 (ID)
            let valueLength = padding - 12
            body.write(UInt64(valueLength + 4))
            body.write(Self.ID.verityPadding)
            body.writeZeros(valueLength)
            total += padding
        }
        var w = LittleEndianWriter(capacity: total)
        w.write(UInt64(total - 8))
        w.write(bytes: body.bytes)
        w.write(UInt64(total - 8))
        w.write(bytes: Self.magic)
        return w.bytes
    }
}

/// A malformed APK Signing Block.
public struct SigningBlockError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "malformed APK Signing Block: \(message)" }
}

/// Length-prefixed values as the v2/v3 schemes encode them: uint32 little-endian length, then the bytes.
public enum LengthPrefixed {
    /// Splits a sequence of length-prefixed values.
    public static func split(_ bytes: ArraySlice<UInt8>, what: String) throws -> [ArraySlice<UInt8>] {
        var items: [ArraySlice<UInt8>] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            guard bytes.endIndex - i >= 4 else { throw SigningBlockError("\(what): truncated length prefix") }
            let length = Int(UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
            i += 4
            guard length <= bytes.endIndex - i else {
                throw SigningBlockError("\(what): length \(length) exceeds the \(bytes.endIndex - i) bytes remaining")
            }
            items.append(bytes[i..<(i + length)])
            i += length
        }
        return items
    }

    /// Reads one length-prefixed value from the front of `bytes`, advancing it.
    public static func take(_ bytes: inout ArraySlice<UInt8>, what: String) throws -> ArraySlice<UInt8> {
        guard bytes.count >= 4 else { throw SigningBlockError("\(what): truncated length prefix") }
        let s = bytes.startIndex
        let length = Int(UInt32(bytes[s]) | UInt32(bytes[s + 1]) << 8 | UInt32(bytes[s + 2]) << 16 | UInt32(bytes[s + 3]) << 24)
        guard length <= bytes.count - 4 else {
            throw SigningBlockError("\(what): length \(length) exceeds the \(bytes.count - 4) bytes remaining")
        }
        let value = bytes[(s + 4)..<(s + 4 + length)]
        bytes = bytes[(s + 4 + length)...]
        return value
    }

    /// Reads a uint32 little-endian from the front of `bytes`, advancing it.
    public static func takeUInt32(_ bytes: inout ArraySlice<UInt8>, what: String) throws -> UInt32 {
        guard bytes.count >= 4 else { throw SigningBlockError("\(what): truncated") }
        let s = bytes.startIndex
        let value = UInt32(bytes[s]) | UInt32(bytes[s + 1]) << 8 | UInt32(bytes[s + 2]) << 16 | UInt32(bytes[s + 3]) << 24
        bytes = bytes[(s + 4)...]
        return value
    }

    /// Encodes `value` with a uint32 length prefix.
    public static func encode<C: Collection>(_ value: C) -> [UInt8] where C.Element == UInt8 {
        UInt32(value.count).littleEndianBytes + value
    }

    /// Encodes the concatenation of already length-prefixed items, itself length-prefixed.
    public static func encodeSequence(_ items: [[UInt8]]) -> [UInt8] {
        encode(items.flatMap { encode($0) })
    }
}
