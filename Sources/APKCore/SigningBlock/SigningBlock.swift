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
        /// The source stamp (apksig `V2_SOURCE_STAMP_BLOCK_ID`), which apksig verifies and signers regenerate.
        public static let sourceStamp: UInt32 = 0x6dff_800d
        /// The first source stamp format (`V1_SOURCE_STAMP_BLOCK_ID`): one signature over the content digests;
        /// apksig's verify no longer reads it.
        public static let sourceStampV1: UInt32 = 0x2b09_189e
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
        let bytes = try source.bytes(in: start..<centralDirectoryOffset)
        var pairs: [Pair] = []
        let end = walkPairs(ofBlock: bytes) { id, value in
            pairs.append(Pair(id: id, value: Array(bytes[value])))
            return true
        }
        if case .malformed(let reason) = end { throw SigningBlockError(reason) }
        return SigningBlock(pairs: pairs, offset: start)
    }

    /// How a walk over the pairs ended.
    public enum PairWalkEnd: Equatable {
        /// Every pair was well-formed (or the visitor stopped).
        case complete
        /// A pair's length field is cut off or out of range; the pairs before it were visited.
        case malformed(String)
    }

    /// Visits the ID-value pairs of `block` (a whole block: size, pairs, size, magic) in order, as apksig's
    /// `findApkSignatureSchemeBlock` walks them, until `visit` returns false or a pair is malformed. The one
    /// walk the signer's codec (`locate`) and the verifier's scheme lookup (`value(ofFirstPair:inBlock:)`)
    /// share: the verifier takes a malformed pair as the end of the pairs, `locate` as an error.
    @discardableResult
    public static func walkPairs(ofBlock block: [UInt8], _ visit: (_ id: UInt32, _ value: Range<Int>) throws -> Bool) rethrows -> PairWalkEnd {
        guard block.count >= 32 else { return .malformed("APK Signing Block too small: \(block.count) bytes") }
        let end = block.count - 24
        var position = 8
        var index = 0
        while position < end {
            index += 1
            guard end - position >= 8 else {
                return .malformed("insufficient data to read size of APK Signing Block entry #\(index)")
            }
            let length = block.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: position, as: UInt64.self)) }
            position += 8
            guard length >= 4, length <= UInt64(Int32.max), Int(length) <= end - position else {
                return .malformed("APK Signing Block entry #\(index) size out of range: \(length), available: \(end - position)")
            }
            let id = block.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: position, as: UInt32.self)) }
            guard try visit(id, (position + 4)..<(position + Int(length))) else { return .complete }
            position += Int(length)
        }
        return .complete
    }

    /// The value of the first pair with `id` in `block` (a whole block), or nil when there is none before the
    /// pairs end or turn malformed: what apksig's verifier takes as "no such signature".
    public static func value(ofFirstPair id: UInt32, inBlock block: [UInt8]) -> [UInt8]? {
        var found: Range<Int>?
        walkPairs(ofBlock: block) { pairID, value in
            if pairID == id { found = value }
            return found == nil
        }
        return found.map { Array(block[$0]) }
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
