/// Where the fields and boundaries of a valid input are, so mutations hit the numbers parsers trust (lengths,
/// counts, offsets, sizes, tags) and the places where a truncation or an insertion changes what a parser sees.
/// The scanners read only the seeds (inputs real tools made), never mutated bytes.
public struct Structure: Sendable {
    /// A number in the input: where it is, its width in bytes (1, 2, 4 or 8), its byte order.
    public struct Field: Sendable, Hashable {
        public var offset: Int
        public var width: Int
        public var bigEndian = false
        public var label: String
    }

    /// A chunk whose size fields cover its children (binary XML, resources.arsc): inserting or removing bytes
    /// inside it keeps the input parseable when these size fields grow or shrink with it.
    public struct Container: Sendable, Hashable {
        public var range: Range<Int>
        /// The 4-byte little-endian size fields of this chunk and of every chunk around it.
        public var sizeFields: [Int]
    }

    public var fields: [Field] = []
    /// Offsets where a structure starts or ends: truncation and insertion points.
    public var boundaries: Set<Int> = []
    /// Whole structures (records, chunks, TLVs) that can be duplicated, removed or nested deeper.
    public var containers: [Container] = []
    /// ZIP entries of an archive seed: name and where its stored bytes are (for nested mutation).
    public var entries: [(name: String, data: Range<Int>)] = []

    public init() {}

    mutating func field(_ offset: Int, _ width: Int, _ label: String, bigEndian: Bool = false, in bytes: [UInt8]) {
        guard offset >= 0, offset + width <= bytes.count else { return }
        fields.append(Field(offset: offset, width: width, bigEndian: bigEndian, label: label))
    }

    mutating func boundary(_ offset: Int, in bytes: [UInt8]) {
        if offset >= 0 && offset <= bytes.count { boundaries.insert(offset) }
    }
}

/// Little- and big-endian reads over a seed (callers check the bounds).
func le16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
func le32(_ b: [UInt8], _ at: Int) -> Int { le16(b, at) | le16(b, at + 2) << 16 }
func le64(_ b: [UInt8], _ at: Int) -> Int { le32(b, at) | le32(b, at + 4) << 32 }
func be16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) << 8 | Int(b[at + 1]) }
func be32(_ b: [UInt8], _ at: Int) -> Int { be16(b, at) << 16 | be16(b, at + 2) }

public enum Scanner {
    /// The format a seed is in, which decides how it is scanned.
    public enum Format: String, Sendable, CaseIterable {
        case zip, chunks, der, jks, lengthPrefixed, protobuf, text
    }

    public static func scan(_ bytes: [UInt8], as format: Format) -> Structure {
        var s = Structure()
        s.boundary(0, in: bytes)
        s.boundary(bytes.count, in: bytes)
        switch format {
        case .zip: zip(bytes, into: &s)
        case .chunks: chunks(bytes, range: 0..<bytes.count, parents: [], into: &s, depth: 0)
        case .der: der(bytes, range: 0..<bytes.count, into: &s, depth: 0)
        case .jks: jks(bytes, into: &s)
        case .lengthPrefixed: lengthPrefixed(bytes, range: 0..<bytes.count, into: &s, depth: 0, width: 4)
        case .protobuf: protobuf(bytes, range: 0..<bytes.count, into: &s, depth: 0)
        case .text: text(bytes, into: &s)
        }
        return s
    }

    // MARK: ZIP (local records, central directory, end records, APK Signing Block)

    static func zip(_ b: [UInt8], into s: inout Structure) {
        guard b.count >= 22 else { return }
        var e = b.count - 22
        while e >= 0, !(b[e] == 0x50 && b[e + 1] == 0x4b && b[e + 2] == 5 && b[e + 3] == 6) { e -= 1 }
        guard e >= 0 else { return }
        for (at, width, label) in [(4, 2, "eocd.disk"), (6, 2, "eocd.cdDisk"), (8, 2, "eocd.diskCount"), (10, 2, "eocd.count"),
                                   (12, 4, "eocd.cdSize"), (16, 4, "eocd.cdOffset"), (20, 2, "eocd.commentLength")] {
            s.field(e + at, width, label, in: b)
        }
        for cut in [e, e + 4, e + 10, e + 20, e + 22] { s.boundary(cut, in: b) }
        let cdOffset = le32(b, e + 16), count = le16(b, e + 10)
        s.containers.append(Structure.Container(range: e..<b.count, sizeFields: []))
        var at = cdOffset
        for index in 0..<count {
            guard at >= 0, at + 46 <= e else { break }
            let n = le16(b, at + 28), x = le16(b, at + 30), c = le16(b, at + 32)
            for (offset, width, label) in [(8, 2, "flags"), (10, 2, "method"), (16, 4, "crc"), (20, 4, "compressedSize"), (24, 4, "size"),
                                           (28, 2, "nameLength"), (30, 2, "extraLength"), (32, 2, "commentLength"), (34, 2, "disk"),
                                           (42, 4, "localOffset")] {
                s.field(at + offset, width, "cd[\(index)].\(label)", in: b)
            }
            s.boundary(at, in: b); s.boundary(at + 46, in: b)
            let end = at + 46 + n + x + c
            s.containers.append(Structure.Container(range: at..<min(end, e), sizeFields: []))
            let name = String(decoding: b[(at + 46)..<min(at + 46 + n, b.count)], as: UTF8.self)
            let local = le32(b, at + 42)
            if local + 30 <= b.count {
                for (offset, width, label) in [(6, 2, "flags"), (8, 2, "method"), (14, 4, "crc"), (18, 4, "compressedSize"), (22, 4, "size"),
                                               (26, 2, "nameLength"), (28, 2, "extraLength")] {
                    s.field(local + offset, width, "local[\(index)].\(label)", in: b)
                }
                let data = local + 30 + le16(b, local + 26) + le16(b, local + 28)
                let size = le32(b, at + 20)
                for cut in [local, local + 4, local + 30, data, data + 1, data + size / 2, data + size] { s.boundary(cut, in: b) }
                if data + size <= b.count {
                    s.entries.append((name, data..<(data + size)))
                    s.containers.append(Structure.Container(range: local..<(data + size), sizeFields: []))
                }
            }
            at = end
        }
        s.boundary(cdOffset, in: b)
        signingBlock(b, cdOffset: cdOffset, into: &s)
    }

    /// The APK Signing Block before the central directory: its two size fields, each id-value pair and the
    /// length-prefixed structures inside the v2/v3 values.
    static func signingBlock(_ b: [UInt8], cdOffset: Int, into s: inout Structure) {
        guard cdOffset >= 32, cdOffset <= b.count, Array(b[(cdOffset - 16)..<cdOffset]) == Array("APK Sig Block 42".utf8) else { return }
        let footer = cdOffset - 24
        let size = le64(b, footer)
        let start = cdOffset - size - 8
        guard start >= 0, size >= 24 else { return }
        s.field(footer, 8, "signingBlock.footerSize", in: b)
        s.field(start, 8, "signingBlock.headerSize", in: b)
        s.boundary(start, in: b); s.boundary(footer, in: b)
        var p = start + 8, index = 0
        while p + 12 <= footer {
            let length = le64(b, p)
            s.field(p, 8, "signingBlock.pair[\(index)].length", in: b)
            s.field(p + 8, 4, "signingBlock.pair[\(index)].id", in: b)
            s.boundary(p, in: b)
            guard length >= 4, p + 8 + length <= footer else { break }
            lengthPrefixed(b, range: (p + 12)..<(p + 8 + length), into: &s, depth: 0, width: 4)
            p += 8 + length
            index += 1
        }
    }

    // MARK: length-prefixed sequences (v2/v3 blocks, lineage files, .idsig)

    /// Reads `range` as a sequence of little-endian u32-length-prefixed items when it parses as one exactly,
    /// recording each length and recursing into the items; every other aligned u32 of a short region is a field
    /// too (algorithm ids, SDK versions, the lineage's magic and version).
    static func lengthPrefixed(_ b: [UInt8], range: Range<Int>, into s: inout Structure, depth: Int, width: Int) {
        guard depth < 12, range.count >= 4 else { return }
        var items: [Range<Int>] = []
        var p = range.lowerBound
        while p + 4 <= range.upperBound {
            let length = le32(b, p)
            guard p + 4 + length <= range.upperBound else { items = []; break }
            items.append((p + 4)..<(p + 4 + length))
            p += 4 + length
        }
        if !items.isEmpty && p == range.upperBound {
            for item in items {
                s.field(item.lowerBound - 4, 4, "length", in: b)
                s.boundary(item.lowerBound - 4, in: b); s.boundary(item.lowerBound, in: b); s.boundary(item.upperBound, in: b)
                s.containers.append(Structure.Container(range: (item.lowerBound - 4)..<item.upperBound, sizeFields: []))
                lengthPrefixed(b, range: item, into: &s, depth: depth + 1, width: width)
            }
        } else {
            // Not a clean sequence: a header of numbers, then maybe a sequence (e.g. minSdk, maxSdk, then a
            // length-prefixed key), or DER (certificates).
            if range.count >= 2, b[range.lowerBound] == 0x30 { der(b, range: range, into: &s, depth: depth + 1) }
            var q = range.lowerBound
            while q + 4 <= min(range.upperBound, range.lowerBound + 64) {
                s.field(q, 4, "u32", in: b)
                q += 4
            }
            for skip in stride(from: 4, through: min(16, range.count - 4), by: 4) {
                let rest = (range.lowerBound + skip)..<range.upperBound
                if parsesAsSequence(b, rest) { lengthPrefixed(b, range: rest, into: &s, depth: depth + 1, width: width); break }
            }
        }
    }

    static func parsesAsSequence(_ b: [UInt8], _ range: Range<Int>) -> Bool {
        var p = range.lowerBound, n = 0
        while p + 4 <= range.upperBound {
            let length = le32(b, p)
            guard p + 4 + length <= range.upperBound else { return false }
            p += 4 + length; n += 1
        }
        return n > 0 && p == range.upperBound
    }

    // MARK: Android chunks (binary XML, resources.arsc)

    static func chunks(_ b: [UInt8], range: Range<Int>, parents: [Int], into s: inout Structure, depth: Int) {
        var p = range.lowerBound
        var index = 0
        while p + 8 <= range.upperBound, depth < 16, index < 4096 {
            let type = le16(b, p), header = le16(b, p + 2), size = le32(b, p + 4)
            guard header >= 8, size >= header, p + size <= range.upperBound else { break }
            let sizeFields = parents + [p + 4]
            s.field(p, 2, "chunk(\(type)).type", in: b)
            s.field(p + 2, 2, "chunk(\(type)).headerSize", in: b)
            s.field(p + 4, 4, "chunk(\(type)).size", in: b)
            s.boundary(p, in: b); s.boundary(p + header, in: b); s.boundary(p + size, in: b)
            s.containers.append(Structure.Container(range: p..<(p + size), sizeFields: parents))
            // The header's numbers (counts, offsets, ids, flags), then the first numbers of the body (string
            // offsets, entry offsets, attribute records).
            var q = p + 8
            while q + 4 <= min(p + size, p + header + 64) {
                s.field(q, 4, "chunk(\(type))+\(q - p)", in: b)
                s.field(q, 2, "chunk(\(type))+\(q - p)/16", in: b)
                q += 4
            }
            // Containers: XML (0x0003), table (0x0002), package (0x0200): the children follow the header.
            if type == 0x0003 || type == 0x0002 || type == 0x0200 {
                chunks(b, range: (p + header)..<(p + size), parents: sizeFields, into: &s, depth: depth + 1)
            }
            p += size
            index += 1
        }
    }

    // MARK: DER (PKCS#12, certificates, PKCS#7)

    static func der(_ b: [UInt8], range: Range<Int>, into s: inout Structure, depth: Int) {
        var p = range.lowerBound
        var count = 0
        while p + 2 <= range.upperBound, depth < 24, count < 512 {
            let tag = b[p]
            var length = Int(b[p + 1]), header = 2
            if length & 0x80 != 0 {
                let n = length & 0x7f
                guard n >= 1, n <= 4, p + 2 + n <= range.upperBound else { return }
                length = 0
                for i in 0..<n { length = length << 8 | Int(b[p + 2 + i]) }
                header = 2 + n
            }
            guard p + header + length <= range.upperBound else { return }
            s.field(p, 1, "der.tag", in: b)
            s.field(p + 1, header - 1, "der.length", bigEndian: true, in: b)
            s.boundary(p, in: b); s.boundary(p + header, in: b); s.boundary(p + header + length, in: b)
            s.containers.append(Structure.Container(range: p..<(p + header + length), sizeFields: []))
            let content = (p + header)..<(p + header + length)
            if tag & 0x20 != 0 {
                der(b, range: content, into: &s, depth: depth + 1)
            } else if tag == 0x04 || tag == 0x03, content.count > 2 {
                // OCTET STRING / BIT STRING holding DER (PKCS#12 bags, the auth safe, keys).
                let inner = tag == 0x03 ? (content.lowerBound + 1)..<content.upperBound : content
                if inner.count >= 2, b[inner.lowerBound] == 0x30 { der(b, range: inner, into: &s, depth: depth + 1) }
            }
            p += header + length
            count += 1
        }
    }

    // MARK: JKS (Sun's keystore: big-endian counts and lengths, a SHA-1 at the end)

    static func jks(_ b: [UInt8], into s: inout Structure) {
        guard b.count >= 32, be32(b, 0) == 0xFEED_FEED else { return }
        s.field(0, 4, "jks.magic", bigEndian: true, in: b)
        s.field(4, 4, "jks.version", bigEndian: true, in: b)
        s.field(8, 4, "jks.count", bigEndian: true, in: b)
        var p = 12
        let end = b.count - 20
        s.boundary(end, in: b)
        func utf(_ label: String) -> Bool {
            guard p + 2 <= end else { return false }
            s.field(p, 2, label, bigEndian: true, in: b)
            p += 2 + be16(b, p)
            return p <= end
        }
        func blob(_ label: String) -> Bool {
            guard p + 4 <= end else { return false }
            s.field(p, 4, label, bigEndian: true, in: b)
            let length = be32(b, p)
            if p + 4 + length <= end { der(b, range: (p + 4)..<(p + 4 + length), into: &s, depth: 1) }
            p += 4 + length
            return p <= end
        }
        for _ in 0..<min(be32(b, 8), 64) {
            guard p + 4 <= end else { return }
            s.boundary(p, in: b)
            s.field(p, 4, "jks.entry.tag", bigEndian: true, in: b)
            let tag = be32(b, p)
            p += 4
            guard utf("jks.alias.length"), p + 8 <= end else { return }
            s.field(p, 8, "jks.date", bigEndian: true, in: b)
            p += 8
            if tag == 1 {
                guard blob("jks.key.length"), p + 4 <= end else { return }
                s.field(p, 4, "jks.chain.count", bigEndian: true, in: b)
                let chain = be32(b, p)
                p += 4
                for _ in 0..<min(chain, 16) { guard utf("jks.cert.type.length"), blob("jks.cert.length") else { return } }
            } else {
                guard utf("jks.cert.type.length"), blob("jks.cert.length") else { return }
            }
        }
    }

    // MARK: text (XML, YAML, JSON)

    static func text(_ b: [UInt8], into s: inout Structure) {
        for (i, byte) in b.enumerated() where byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "\"")
            || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
            s.boundary(i, in: b); s.boundary(i + 1, in: b)
        }
    }
}
