// A minimal DER writer and a bounds-checked TLV reader. OpenSSL does the cryptography; these build and
// take apart the few ASN.1 structures whose exact bytes must match apksig's own encoder (the v1 PKCS#7
// SignedData block) and the Sun JKS key-protection wrapper, which OpenSSL does not know.

/// DER (ITU-T X.690) encoding helpers: tag-length-value assembly, no schema.
package enum DER {
    package static let sequenceTag: UInt8 = 0x30
    package static let setTag: UInt8 = 0x31
    package static let integerTag: UInt8 = 0x02
    package static let octetStringTag: UInt8 = 0x04
    package static let nullTag: UInt8 = 0x05
    package static let objectIdentifierTag: UInt8 = 0x06

    /// The DER length octets for `length` (short form below 128, else long form, minimal).
    package static func encodeLength(_ length: Int) -> [UInt8] {
        precondition(length >= 0)
        if length < 0x80 { return [UInt8(length)] }
        var bytes: [UInt8] = []
        var value = length
        while value > 0 { bytes.insert(UInt8(value & 0xff), at: 0); value >>= 8 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// One TLV: `tag`, the length of `contents`, `contents`.
    package static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        [tag] + encodeLength(contents.count) + contents
    }

    package static func sequence(_ elements: [[UInt8]]) -> [UInt8] { tlv(sequenceTag, elements.flatMap { $0 }) }

    /// A DER SET OF: elements sorted by their encodings (X.690 §11.6), as apksig's `Asn1DerEncoder.toSetOf`
    /// does (lexicographic, unsigned bytes, a proper prefix first).
    package static func setOf(_ elements: [[UInt8]], tag: UInt8 = setTag) -> [UInt8] {
        tlv(tag, elements.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }

    /// A non-negative INTEGER from a machine integer.
    package static func integer(_ value: Int) -> [UInt8] {
        precondition(value >= 0)
        var bytes: [UInt8] = []
        var remaining = value
        repeat { bytes.insert(UInt8(remaining & 0xff), at: 0); remaining >>= 8 } while remaining > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(integerTag, bytes)
    }

    package static let null: [UInt8] = [nullTag, 0x00]

    package static func octetString(_ bytes: [UInt8]) -> [UInt8] { tlv(octetStringTag, bytes) }

    /// An OBJECT IDENTIFIER from dotted text ("1.2.840.113549.1.7.2"). Traps on malformed constants: only
    /// called with literals from this module.
    package static func objectIdentifier(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").map { UInt64($0)! }
        precondition(arcs.count >= 2)
        var contents = base128(arcs[0] * 40 + arcs[1])
        for arc in arcs.dropFirst(2) { contents += base128(arc) }
        return tlv(objectIdentifierTag, contents)
    }

    private static func base128(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(value & 0x7f)]
        var remaining = value >> 7
        while remaining > 0 { bytes.insert(UInt8(remaining & 0x7f) | 0x80, at: 0); remaining >>= 7 }
        return bytes
    }

    /// Dotted text of an OBJECT IDENTIFIER's contents octets, or nil if malformed.
    package static func dottedObjectIdentifier(_ contents: ArraySlice<UInt8>) -> String? {
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        var inArc = false
        for byte in contents {
            guard value <= (UInt64.max >> 7) else { return nil }
            value = (value << 7) | UInt64(byte & 0x7f)
            inArc = true
            if byte & 0x80 == 0 { arcs.append(value); value = 0; inArc = false }
        }
        guard !inArc, let first = arcs.first else { return nil }
        let head: [UInt64] = first < 80 ? [first / 40, first % 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }
}

/// One parsed DER element: its tag, its contents octets, and the whole encoding (all as slices of the input).
package struct DERElement {
    package let tag: UInt8
    package let contents: ArraySlice<UInt8>
    package let encoded: ArraySlice<UInt8>

    /// The children of a constructed element.
    package func children() throws -> [DERElement] {
        var reader = DERReader(contents)
        var out: [DERElement] = []
        while !reader.isAtEnd { out.append(try reader.read()) }
        return out
    }
}

/// A bounds-checked reader of consecutive DER TLVs. Hostile input throws, never traps. Only definite,
/// single-byte tags are accepted (all that the structures read here use).
package struct DERReader {
    private let bytes: ArraySlice<UInt8>
    private var position: Int

    package init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes; position = bytes.startIndex }
    package init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    package var isAtEnd: Bool { position >= bytes.endIndex }

    package mutating func read() throws -> DERElement {
        let start = position
        guard position < bytes.endIndex else { throw DERError("DER element expected, input ended") }
        let tag = bytes[position]
        guard tag & 0x1f != 0x1f else { throw DERError("multi-byte DER tags are not supported") }
        position += 1
        guard position < bytes.endIndex else { throw DERError("DER length expected, input ended") }
        let first = bytes[position]
        position += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7f)
            guard count >= 1, count <= 4 else { throw DERError("unsupported DER length form (0x\(String(first, radix: 16)))") }
            guard bytes.endIndex - position >= count else { throw DERError("DER length truncated") }
            for _ in 0..<count { length = (length << 8) | Int(bytes[position]); position += 1 }
        }
        guard bytes.endIndex - position >= length else {
            throw DERError("DER element needs \(length) bytes, \(bytes.endIndex - position) available")
        }
        let contents = bytes[position..<(position + length)]
        position += length
        return DERElement(tag: tag, contents: contents, encoded: bytes[start..<position])
    }

    /// Reads one element and checks its tag.
    package mutating func read(expecting tag: UInt8, _ what: String) throws -> DERElement {
        let element = try read()
        guard element.tag == tag else {
            throw DERError("\(what): expected tag 0x\(String(tag, radix: 16)), found 0x\(String(element.tag, radix: 16))")
        }
        return element
    }
}

/// Malformed DER input.
package struct DERError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = "malformed DER: " + description }
}
