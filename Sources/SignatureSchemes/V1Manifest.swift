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
            guard let first = attributes.first, first.name.lowercased() == "name" else { return nil }
            return first.value
        }

        /// The value of the first attribute called `name` (case-insensitive), or nil.
        public func value(of name: String) -> String? {
            let key = name.lowercased()
            return attributes.first { $0.name.lowercased() == key }?.value
        }
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
struct ManifestLineParser {
    let bytes: [UInt8]
    var offset = 0
    /// A line read ahead: nil (none), empty (end of section seen), or the start of the next attribute.
    var bufferedLine: [UInt8]?

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func readSection() -> JARManifest.Section? {
        var start: Int
        var line: [UInt8]
        repeat {
            start = offset
            guard let attribute = readAttributeBytes() else { return nil }
            line = attribute
        } while line.isEmpty
        var attributes = [Self.parseAttribute(line)]
        while let next = readAttributeBytes(), !next.isEmpty {
            attributes.append(Self.parseAttribute(next))
        }
        return JARManifest.Section(range: start..<offset, attributes: attributes)
    }

    static func parseAttribute(_ line: [UInt8]) -> JARManifest.Attribute {
        // Java decodes the whole line first and then searches; ": " is ASCII, so searching the bytes is the same.
        var index = 0
        while index + 1 < line.count {
            if line[index] == UInt8(ascii: ":") && line[index + 1] == UInt8(ascii: " ") {
                return JARManifest.Attribute(name: String(decoding: line[..<index], as: UTF8.self),
                                             value: String(decoding: line[(index + 2)...], as: UTF8.self))
            }
            index += 1
        }
        return JARManifest.Attribute(name: String(decoding: line, as: UTF8.self), value: "")
    }

    /// The next attribute (continuations joined), an empty array at the end of a section, nil at the end of input.
    mutating func readAttributeBytes() -> [UInt8]? {
        if let buffered = bufferedLine, buffered.isEmpty {
            bufferedLine = nil
            return []
        }
        guard let line = readLine() else {
            if let buffered = bufferedLine {
                bufferedLine = nil
                return buffered
            }
            return nil
        }
        if line.isEmpty {
            if let buffered = bufferedLine {
                bufferedLine = []
                return buffered
            }
            return []
        }
        var attribute: [UInt8]
        if let buffered = bufferedLine {
            if line[0] != UInt8(ascii: " ") {
                bufferedLine = line
                return buffered
            }
            attribute = buffered + line.dropFirst()
            bufferedLine = nil
        } else {
            attribute = line
        }
        while true {
            guard let next = readLine() else { return attribute }
            if next.isEmpty {
                bufferedLine = []
                return attribute
            }
            if next[0] == UInt8(ascii: " ") {
                attribute += next.dropFirst()
            } else {
                bufferedLine = next
                return attribute
            }
        }
    }

    /// The next line without its terminator, or nil at the end of input.
    mutating func readLine() -> [UInt8]? {
        guard offset < bytes.count else { return nil }
        let start = offset
        var lineEnd = bytes.count
        var next = bytes.count
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\r") {
                lineEnd = i
                next = (i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "\n")) ? i + 2 : i + 1
                break
            } else if b == UInt8(ascii: "\n") {
                lineEnd = i
                next = i + 1
                break
            }
            i += 1
        }
        offset = next
        return Array(bytes[start..<lineEnd])
    }
}
