/// A JAR manifest or signature file (`META-INF/MANIFEST.MF`, `META-INF/*.SF`) read exactly as Android's
/// verifier reads it (apksig `internal/jar/ManifestParser.java`,
/// https://docs.oracle.com/javase/8/docs/technotes/guides/jar/jar.html#JAR_Manifest):
///
///     main section        attribute lines up to the first empty line
///     individual sections each starts at a non-empty line after one or more empty lines; "Name: <entry>"
///     attribute line      "<name>: <value>", the name/value delimiter is the first ": " (so names may end
///                         and values may start or end with spaces, which obfuscators exploit)
///     continuation line   a line starting with one SPACE continues the previous line (the space dropped)
///     line ends           CRLF, LF or a lone CR
///
/// Each section keeps the byte range it was parsed from: the .SF file signs sections by the digest of those
/// exact bytes (including the empty line that ends them), never a re-encoding.
public struct JARManifest: Sendable {
    /// One attribute, in file order. Names compare case-insensitively.
    public struct Attribute: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { self.name = name; self.value = value }
    }

    /// A section with its exact bytes.
    public struct Section: Sendable {
        /// Where the section lies in the file: from its first line to the end of the empty line (or lines) after
        /// it, as apksig's `Section.getStartOffset()`/`getSizeBytes()`.
        public var range: Range<Int>
        public var attributes: [Attribute]

        /// The value of the `Name` attribute when it is the section's first attribute, as for individual
        /// sections (nil for the main section, or for an unnamed individual section).
        public var name: String? {
            guard let first = attributes.first, JARManifest.namesEqual(first.name, "name") else { return nil }
            return first.value
        }

        /// The value of the first attribute called `name` (case-insensitive), or nil.
        public func value(of name: String) -> String? {
            attributes.first { JARManifest.namesEqual($0.name, name) }?.value
        }
    }

    /// Java's `String.equalsIgnoreCase` (apksig's `ManifestParser.Section.getAttributeValue` compares names
    /// with it), without building either string when both are ASCII (every name a real manifest has): a
    /// verifier asks each of thousands of sections for several names.
    public static func namesEqual(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        let fast: Bool? = a.withUTF8 { x in
            b.withUTF8 { y -> Bool? in
                var ascii = true
                for byte in x where byte >= 0x80 { ascii = false; break }
                for byte in y where byte >= 0x80 { ascii = false; break }
                // Non-ASCII: case mapping can map a character onto ASCII (U+212A KELVIN SIGN is "k", U+0131
                // DOTLESS I uppercases to "I"), so only Java's comparison is exact.
                guard ascii else { return nil }
                guard x.count == y.count else { return false }
                for i in 0..<x.count where x[i] != y[i] {
                    // ASCII letters differ only in bit 0x20.
                    let lower = x[i] | 0x20
                    guard lower == y[i] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
                }
                return true
            }
        }
        return fast ?? javaEqualsIgnoringCase(a, b)
    }

    /// `String.equalsIgnoreCase` as Java defines it: UTF-16 units pairwise equal, or equal after
    /// `Character.toUpperCase`, or after `Character.toLowerCase` of those. Lowercasing both strings is not the
    /// same: "Sıgned" (dotless i) equals "Signed" in Java, so an .SF naming X-Android-APK-Sıgned is protected
    /// on Android and must be here.
    public static func javaEqualsIgnoringCase(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf16), y = Array(b.utf16)
        guard x.count == y.count else { return false }
        for (c1, c2) in zip(x, y) where c1 != c2 {
            let u1 = simpleMapping(c1, upper: true), u2 = simpleMapping(c2, upper: true)
            if u1 != u2 && simpleMapping(u1, upper: false) != simpleMapping(u2, upper: false) { return false }
        }
        return true
    }

    /// Java's one-`char` case mapping: the Unicode mapping when it is one UTF-16 unit, else the unit itself
    /// (the simple mapping, except for U+0130, whose simple lowercase is "i": with K, ı and ſ the characters
    /// that can stand for an ASCII letter).
    private static func simpleMapping(_ unit: UInt16, upper: Bool) -> UInt16 {
        if unit == 0x130 && !upper { return 0x69 }
        guard let scalar = Unicode.Scalar(unit) else { return unit }  // a surrogate half maps to itself
        let mapped = (upper ? scalar.properties.uppercaseMapping : scalar.properties.lowercaseMapping).utf16
        return mapped.count == 1 ? mapped.first! : unit
    }

    /// The bytes the manifest was parsed from.
    public let bytes: [UInt8]
    /// The main section (nil when the file has no non-empty line).
    public let mainSection: Section?
    /// The individual sections, in file order.
    public let individualSections: [Section]

    /// Parses `bytes`. Never fails: like Android, a malformed line becomes an attribute with an empty value.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
        var parser = ManifestLineParser(bytes: bytes)
        mainSection = parser.readSection()
        var sections: [Section] = []
        while let section = parser.readSection() { sections.append(section) }
        individualSections = sections
    }

    /// The exact bytes of `section`.
    public func bytes(of section: Section) -> ArraySlice<UInt8> { bytes[section.range] }
}

/// apksig's ManifestParser state machine, byte for byte: the section ranges it reports are what digests
/// are computed over, so any difference in where a section "ends" is a verification difference.
///
/// Lines and attributes are ranges of `bytes`, not copies: a signed APK's MANIFEST.MF has a section per entry
/// (thousands of lines), and only an attribute continued over several lines is joined into a new array.
struct ManifestLineParser {
    /// An attribute's bytes: its first line, then each continuation line without its leading space.
    /// No segments means "end of section".
    struct AttributeBytes {
        var first: Range<Int>
        var continuations: [Range<Int>] = []
        static let endOfSection = AttributeBytes(first: 0..<0)
        var isEmpty: Bool { first.isEmpty && continuations.isEmpty }
    }

    let bytes: [UInt8]
    var offset = 0
    /// A line read ahead: nil (none), empty (end of section seen), or the start of the next attribute
    /// (a non-empty line that does not start with a space).
    var bufferedLine: Range<Int>?

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func readSection() -> JARManifest.Section? {
        var start: Int
        var line: AttributeBytes
        repeat {
            start = offset
            guard let attribute = readAttributeBytes() else { return nil }
            line = attribute
        } while line.isEmpty
        var attributes = [parseAttribute(line)]
        while let next = readAttributeBytes(), !next.isEmpty {
            attributes.append(parseAttribute(next))
        }
        return JARManifest.Section(range: start..<offset, attributes: attributes)
    }

    func parseAttribute(_ attribute: AttributeBytes) -> JARManifest.Attribute {
        if attribute.continuations.isEmpty {
            return bytes.withUnsafeBufferPointer { all in
                Self.parseAttribute(UnsafeBufferPointer(rebasing: all[attribute.first]))
            }
        }
        var joined = Array(bytes[attribute.first])
        for range in attribute.continuations { joined += bytes[range] }
        return joined.withUnsafeBufferPointer { Self.parseAttribute($0) }
    }

    static func parseAttribute(_ line: [UInt8]) -> JARManifest.Attribute {
        line.withUnsafeBufferPointer { parseAttribute($0) }
    }

    static func parseAttribute(_ line: UnsafeBufferPointer<UInt8>) -> JARManifest.Attribute {
        // Java decodes the whole line first and then searches; ": " is ASCII, so searching the bytes is the same.
        var index = 0
        while index + 1 < line.count {
            if line[index] == UInt8(ascii: ":") && line[index + 1] == UInt8(ascii: " ") {
                return JARManifest.Attribute(name: String(decoding: UnsafeBufferPointer(rebasing: line[..<index]), as: UTF8.self),
                                             value: String(decoding: UnsafeBufferPointer(rebasing: line[(index + 2)...]), as: UTF8.self))
            }
            index += 1
        }
        return JARManifest.Attribute(name: String(decoding: line, as: UTF8.self), value: "")
    }

    /// The next attribute (continuations joined), an empty one at the end of a section, nil at the end of input.
    mutating func readAttributeBytes() -> AttributeBytes? {
        if let buffered = bufferedLine, buffered.isEmpty {
            bufferedLine = nil
            return .endOfSection
        }
        guard let line = readLine() else {
            if let buffered = bufferedLine {
                bufferedLine = nil
                return AttributeBytes(first: buffered)
            }
            return nil
        }
        if line.isEmpty {
            if let buffered = bufferedLine {
                bufferedLine = 0..<0
                return AttributeBytes(first: buffered)
            }
            return .endOfSection
        }
        var attribute: AttributeBytes
        if let buffered = bufferedLine {
            if bytes[line.lowerBound] != UInt8(ascii: " ") {
                bufferedLine = line
                return AttributeBytes(first: buffered)
            }
            attribute = AttributeBytes(first: buffered, continuations: [(line.lowerBound + 1)..<line.upperBound])
            bufferedLine = nil
        } else {
            attribute = AttributeBytes(first: line)
        }
        while true {
            guard let next = readLine() else { return attribute }
            if next.isEmpty {
                bufferedLine = 0..<0
                return attribute
            }
            if bytes[next.lowerBound] == UInt8(ascii: " ") {
                attribute.continuations.append((next.lowerBound + 1)..<next.upperBound)
            } else {
                bufferedLine = next
                return attribute
            }
        }
    }

    /// The next line without its terminator, or nil at the end of input.
    mutating func readLine() -> Range<Int>? {
        guard offset < bytes.count else { return nil }
        let start = offset
        var lineEnd = bytes.count
        var next = bytes.count
        bytes.withUnsafeBufferPointer { all in
            var i = start
            while i < all.count {
                let b = all[i]
                if b == UInt8(ascii: "\r") {
                    lineEnd = i
                    next = (i + 1 < all.count && all[i + 1] == UInt8(ascii: "\n")) ? i + 2 : i + 1
                    break
                } else if b == UInt8(ascii: "\n") {
                    lineEnd = i
                    next = i + 1
                    break
                }
                i += 1
            }
        }
        offset = next
        return start..<lineEnd
    }
}
