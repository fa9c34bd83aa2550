/// Writes JAR manifest (`MANIFEST.MF`) and signature file (`.SF`) sections byte for byte as apksig's
/// `internal/jar/ManifestWriter` and `SignatureFileWriter` do:
///
///     main section:        first attribute (Manifest-Version / Signature-Version), then the others sorted
///                          by name (Java `String.compareTo`, i.e. UTF-16 code units), then CRLF
///     individual section:  "Name: <entry>", its attributes sorted by name, then CRLF
///     each attribute line: "<name>: <value>" as UTF-8, split into a first line of 70 bytes and continuation
///                          lines of a space plus 69 bytes (split by bytes, as apksig does), each ending CRLF
struct JARManifestWriter {
    private(set) var bytes: [UInt8] = []
    static let maxLineLength = 70

    /// A main section: `first` (name, value) then `others` sorted by name.
    mutating func writeMainSection(first: (String, String), others: [(String, String)]) {
        writeAttribute(first.0, first.1)
        for (name, value) in (others.count < 2 ? others : others.sorted(by: { Self.javaLess($0.0, $1.0) })) { writeAttribute(name, value) }
        writeSectionDelimiter()
    }

    /// An individual section for `name` with `attributes` sorted by name.
    mutating func writeIndividualSection(name: String, attributes: [(String, String)]) {
        writeAttribute("Name", name)
        for (attributeName, value) in (attributes.count < 2 ? attributes : attributes.sorted(by: { Self.javaLess($0.0, $1.0) })) {
            writeAttribute(attributeName, value)
        }
        writeSectionDelimiter()
    }

    mutating func writeSectionDelimiter() { bytes += [0x0d, 0x0a] }

    mutating func writeAttribute(_ name: String, _ value: String) {
        writeAttribute(name: Array(name.utf8), value: Array(value.utf8))
    }

    static let nameAttribute: [UInt8] = Array("Name".utf8)

    var count: Int { bytes.count }
    mutating func reserveCapacity(_ capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Appends bytes that are already manifest lines.
    mutating func write(_ lines: UnsafeRawBufferPointer) { bytes.append(contentsOf: lines) }

    mutating func writeAttribute(name: [UInt8], value: [UInt8]) {
        value.withUnsafeBytes { writeAttribute(name: name, value: $0) }
    }

    /// `name: value` split by bytes into a first line of 70 and continuation lines of a space plus 69.
    mutating func writeAttribute(name: [UInt8], value: UnsafeRawBufferPointer) {
        let start = bytes.count
        let size = Self.encodedSize(nameCount: name.count, valueCount: value.count)
        bytes.append(contentsOf: repeatElement(0, count: size))
        bytes.withUnsafeMutableBytes { out in
            name.withUnsafeBytes { name in _ = Self.write(name: name, value: value, into: out, at: start) }
        }
    }

    /// How many bytes `write(name:value:into:at:)` writes for a name and a value of these lengths, its CRLFs
    /// included: the logical line, three more bytes (CRLF and a space) per continuation line, and the final CRLF.
    static func encodedSize(nameCount: Int, valueCount: Int) -> Int {
        let total = nameCount + 2 + valueCount
        let rest = max(0, total - maxLineLength)
        let continuations = (rest + maxLineLength - 2) / (maxLineLength - 1)  // rest / 69, rounded up
        return total + 3 * continuations + 2
    }

    /// Writes the attribute line `name: value` (split as `writeAttribute` splits it, CRLF at the end) into `out`
    /// at `position`, which has `encodedSize` bytes of room there; returns where it ends. Whole runs of the name
    /// and value are copied at once: a manifest has two such lines per entry.
    static func write(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
                      at position: Int) -> Int {
        var at = position
        // Copies the logical line's bytes `from..<to` (name, then ": ", then value).
        func copy(_ from: Int, _ to: Int) {
            var index = from
            while index < to {
                if index < name.count {
                    let run = min(to, name.count) - index
                    UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + run)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: name[index..<(index + run)]))
                    at += run; index += run
                } else if index < name.count + 2 {
                    out[at] = index == name.count ? 0x3a : 0x20
                    at += 1; index += 1
                } else {
                    let offset = index - name.count - 2, run = to - index
                    UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + run)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: value[offset..<(offset + run)]))
                    at += run; index += run
                }
            }
        }
        let total = name.count + 2 + value.count
        if total <= maxLineLength, let target = out.baseAddress {
            // One line, as most are: the name, ": ", the value, CRLF.
            precondition(out.count - at >= total + 2)
            if let source = name.baseAddress { (target + at).copyMemory(from: source, byteCount: name.count) }
            out[at + name.count] = 0x3a; out[at + name.count + 1] = 0x20
            at += name.count + 2
            if let source = value.baseAddress { (target + at).copyMemory(from: source, byteCount: value.count) }
            at += value.count
            out[at] = 0x0d; out[at + 1] = 0x0a
            return at + 2
        }
        var offset = min(total, maxLineLength)
        copy(0, offset)
        while offset < total {
            out[at] = 0x0d; out[at + 1] = 0x0a; out[at + 2] = 0x20
            at += 3
            let end = min(total, offset + maxLineLength - 1)
            copy(offset, end)
            offset = end
        }
        out[at] = 0x0d; out[at + 1] = 0x0a
        return at + 2
    }

    /// Java's `String.compareTo`: lexicographic over UTF-16 code units (differs from Swift's `<` for
    /// characters outside the Basic Multilingual Plane and for canonically equivalent strings).
    static func javaLess(_ a: String, _ b: String) -> Bool {
        a.utf16.lexicographicallyPrecedes(b.utf16)
    }
}

/// The main section of an input `META-INF/MANIFEST.MF`, read the way `java.util.jar.Manifest` reads it (which
/// is what apksig copies into the output manifest).
///
/// Lines end with LF, CR or CRLF; a line starting with a space continues the previous value; each other line
/// is `name: value` (the colon must be followed by a space); names are case-insensitive and a repeated name
/// replaces the earlier value but keeps the first spelling; the section ends at the first empty line. A
/// last line without a line terminator, a line over 512 bytes, or a bad header line is malformed, as in Java.
struct JARMainSection {
    /// Attributes in first-seen order: (name as first spelled, value).
    private(set) var attributes: [(name: String, value: String)] = []

    init(manifest bytes: [UInt8]) throws {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        var terminated = true
        while i < bytes.count {
            let byte = bytes[i]
            if byte == 0x0a || byte == 0x0d {
                lines.append(bytes[start..<i])
                if byte == 0x0d && i + 1 < bytes.count && bytes[i + 1] == 0x0a { i += 1 }
                i += 1
                start = i
                terminated = true
                continue
            }
            terminated = false
            i += 1
        }
        if start < bytes.count { lines.append(bytes[start...]); terminated = false }
        var lastIndex: Int?
        for (lineNumber, line) in lines.enumerated() {
            if line.count > 512 { throw SignError.malformedInputManifest("line \(lineNumber + 1) is longer than 512 bytes") }
            if lineNumber == lines.count - 1 && !terminated && !line.isEmpty {
                throw SignError.malformedInputManifest("the last line has no line terminator (Java's manifest reader calls this \"line too long\")")
            }
            if line.isEmpty { break }
            if line.first == 0x20 {
                guard let index = lastIndex else {
                    throw SignError.malformedInputManifest("line \(lineNumber + 1) continues a value but there is none before it")
                }
                attributes[index].value += String(decoding: line.dropFirst(), as: UTF8.self)
                continue
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon + 1 < line.endIndex, line[colon + 1] == 0x20 else {
                throw SignError.malformedInputManifest("line \(lineNumber + 1) is not a \"Name: value\" header")
            }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            guard Self.isValidName(line[line.startIndex..<colon]) else {
                throw SignError.malformedInputManifest("invalid attribute name \(name.debugDescription) on line \(lineNumber + 1)")
            }
            let value = String(decoding: line[(colon + 2)...], as: UTF8.self)
            if let existing = attributes.firstIndex(where: { $0.name.lowercased() == name.lowercased() }) {
                attributes[existing].value = value
                lastIndex = existing
            } else {
                attributes.append((name, value))
                lastIndex = attributes.count - 1
            }
        }
    }

    /// `java.util.jar.Attributes.Name`: 1–70 characters from [A-Za-z0-9_-].
    static func isValidName(_ name: ArraySlice<UInt8>) -> Bool {
        guard !name.isEmpty, name.count <= 70 else { return false }
        return name.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f
        }
    }

    /// The value of `name`, compared case-insensitively.
    func value(of name: String) -> String? {
        attributes.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
