/// A small, strict XML 1.0 parser (shared with ResourceTable for strings.xml) for the text files apkpatch compiles (AndroidManifest.xml, res/xml/*.xml).
/// It keeps what aapt keeps (elements, attributes in order, character data, line numbers) and reports errors with
/// the line. Comments, processing instructions and the DOCTYPE are skipped; no external entities are ever read.
package struct TextXMLParser {
    package struct Attribute { package var qualifiedName: String; package var value: String; package var line: Int }
    /// Character data, with `literalSpace`: how many of its first and last characters are white space written as
    /// such, not as character references.
    package indirect enum Node { case element(Element), text(String, line: Int, literalSpace: LiteralSpace) }
    /// White space at the ends of character data that was written literally (CDATA's included): what aapt compacts.
    /// `TextXMLCompiler` keeps white space written as character references (`&#10;`), which lets decoded text give
    /// back a text node's exact white space. Counts of Unicode scalars; both are the whole text when it is all
    /// literal white space.
    package struct LiteralSpace: Sendable { package var leading: Int; package var trailing: Int }
    package struct Element {
        package var qualifiedName: String
        package var attributes: [Attribute] = []
        package var children: [Node] = []
        package var line: Int
        package var endLine: Int
    }

    private let bytes: [UInt8]
    private var position = 0
    private var line = 1
    private let fileName: String
    static let maximumDepth = 1000

    package init(text: String, fileName: String) {
        var bytes = Array(text.utf8)
        // End-of-line handling (XML 1.0 §2.11): CR LF and a lone CR are read as LF (a CR written as &#13; stays).
        if bytes.contains(0x0D) {
            var normalized: [UInt8] = []
            normalized.reserveCapacity(bytes.count)
            for (index, byte) in bytes.enumerated() where !(byte == 0x0D && index + 1 < bytes.count && bytes[index + 1] == 0x0A) {
                normalized.append(byte == 0x0D ? 0x0A : byte)
            }
            bytes = normalized
        }
        self.bytes = bytes; self.fileName = fileName
    }

    private func error(_ message: String, line: Int? = nil) -> BinaryXMLError {
        BinaryXMLError(.textSyntax, "\(fileName):\(line ?? self.line): \(message)")
    }

    private var atEnd: Bool { position >= bytes.count }
    private func peek(_ offset: Int = 0) -> UInt8? { position + offset < bytes.count ? bytes[position + offset] : nil }
    private func starts(with s: StaticString) -> Bool {
        // No allocation: this runs once per byte inside comments and character data.
        let count = s.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        return s.withUTF8Buffer { prefix in
            for i in 0..<count where bytes[position + i] != prefix[i] { return false }
            return true
        }
    }
    private mutating func advance(_ n: Int = 1) {
        for _ in 0..<n where position < bytes.count {
            if bytes[position] == UInt8(ascii: "\n") { line += 1 }
            position += 1
        }
    }
    private mutating func skip(until terminator: StaticString, what: String) throws {
        let start = line
        while !atEnd, !starts(with: terminator) { advance() }
        guard !atEnd else { throw error("unterminated \(what)", line: start) }
        advance(terminator.utf8CodeUnitCount)
    }
    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
    private mutating func skipSpace() { while let c = peek(), Self.isSpace(c) { advance() } }
    private static func isNameByte(_ c: UInt8) -> Bool {
        c >= 0x80 || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: ":") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
    }
    private mutating func name(_ what: String) throws -> String {
        let start = position
        while let c = peek(), Self.isNameByte(c) { advance() }
        guard position > start else { throw error("expected \(what)") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Parses the document and returns its root element.
    package mutating func parse() throws -> Element {
        if starts(with: "\u{FEFF}") { advance(3) }
        var root: Element?
        while true {
            skipSpace()
            if atEnd { break }
            if starts(with: "<?") { try skip(until: "?>", what: "processing instruction") }
            else if starts(with: "<!--") { try skip(until: "-->", what: "comment") }
            else if starts(with: "<!DOCTYPE") { try skipDoctype() }
            else if peek() == UInt8(ascii: "<") {
                guard root == nil else { throw error("a second root element; an XML file has exactly one") }
                root = try element(depth: 0)
            } else {
                throw error("text outside the root element")
            }
        }
        guard let root else { throw error("no root element (empty file?)") }
        return root
    }

    private mutating func skipDoctype() throws {
        var depth = 0
        let start = line
        while let c = peek() {
            advance()
            if c == UInt8(ascii: "[") { depth += 1 }
            if c == UInt8(ascii: "]") { depth -= 1 }
            if c == UInt8(ascii: ">"), depth <= 0 { return }
        }
        throw error("unterminated DOCTYPE", line: start)
    }

    private mutating func element(depth: Int) throws -> Element {
        guard depth < Self.maximumDepth else { throw error("elements nest deeper than \(Self.maximumDepth) levels") }
        let startLine = line
        advance()  // <
        let qualifiedName = try name("an element name after '<'")
        var element = Element(qualifiedName: qualifiedName, line: startLine, endLine: startLine)
        while true {
            skipSpace()
            guard let c = peek() else { throw error("unterminated start tag <\(qualifiedName)>", line: startLine) }
            if c == UInt8(ascii: "/") {
                guard peek(1) == UInt8(ascii: ">") else { throw error("expected '/>' in <\(qualifiedName)>") }
                advance(2)
                element.endLine = line
                return element
            }
            if c == UInt8(ascii: ">") { advance(); break }
            let attributeLine = line
            let attributeName = try name("an attribute name or '>' in <\(qualifiedName)>")
            skipSpace()
            guard peek() == UInt8(ascii: "=") else { throw error("attribute \(attributeName) in <\(qualifiedName)> has no '=' value") }
            advance(); skipSpace()
            guard let quote = peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw error("attribute \(attributeName) in <\(qualifiedName)>: value must be quoted")
            }
            advance()
            let valueStart = position
            while let v = peek(), v != quote {
                if v == UInt8(ascii: "<") { throw error("'<' in the value of attribute \(attributeName)") }
                advance()
            }
            guard !atEnd else { throw error("unterminated value of attribute \(attributeName)", line: attributeLine) }
            var raw = Array(bytes[valueStart..<position])
            advance()
            // Attribute-value normalisation (XML 1.0 §3.3.3): literal white space characters become spaces.
            for i in raw.indices where raw[i] == 0x0A || raw[i] == 0x0D || raw[i] == 0x09 { raw[i] = 0x20 }
            let value = try decodeEntities(raw, line: attributeLine)
            if element.attributes.contains(where: { $0.qualifiedName == attributeName }) {
                throw error("attribute \(attributeName) appears twice in <\(qualifiedName)>", line: attributeLine)
            }
            element.attributes.append(Attribute(qualifiedName: attributeName, value: value, line: attributeLine))
        }
        // Content.
        var text: [UInt8] = []
        var textLine = line
        func flushText(_ this: inout Element) throws {
            guard !text.isEmpty else { return }
            // Literal white space is ASCII, one scalar a byte, so the byte counts are the scalar counts.
            let leading = text.prefix(while: Self.isSpace).count
            let space = LiteralSpace(leading: leading, trailing: leading == text.count ? leading : text.reversed().prefix(while: Self.isSpace).count)
            this.children.append(.text(try decodeEntities(text, line: textLine), line: textLine, literalSpace: space))
            text = []
        }
        while true {
            guard let c = peek() else { throw error("<\(qualifiedName)> is never closed", line: startLine) }
            if c == UInt8(ascii: "<") {
                if starts(with: "</") {
                    try flushText(&element)
                    let endLine = line
                    advance(2)
                    let endName = try name("an element name after '</'")
                    skipSpace()
                    guard peek() == UInt8(ascii: ">") else { throw error("expected '>' after </\(endName)") }
                    advance()
                    guard endName == qualifiedName else {
                        throw error("</\(endName)> does not match <\(qualifiedName)> opened on line \(startLine)", line: endLine)
                    }
                    element.endLine = endLine
                    return element
                } else if starts(with: "<!--") {
                    try skip(until: "-->", what: "comment")
                } else if starts(with: "<![CDATA[") {
                    if text.isEmpty { textLine = line }
                    advance(9)
                    let start = position
                    while !atEnd, !starts(with: "]]>") { advance() }
                    guard !atEnd else { throw error("unterminated CDATA section", line: textLine) }
                    // Escape the CDATA bytes' ampersands so decodeEntities leaves them literal.
                    for b in bytes[start..<position] {
                        if b == UInt8(ascii: "&") { text += Array("&amp;".utf8) } else if b == UInt8(ascii: "<") { text += Array("&lt;".utf8) } else { text.append(b) }
                    }
                    advance(3)
                } else if starts(with: "<?") {
                    try skip(until: "?>", what: "processing instruction")
                } else {
                    try flushText(&element)
                    element.children.append(.element(try self.element(depth: depth + 1)))
                }
            } else {
                if text.isEmpty { textLine = line }
                text.append(c)
                advance()
            }
        }
    }

    /// Replaces the five predefined entities and character references.
    private func decodeEntities(_ raw: [UInt8], line: Int) throws -> String {
        guard raw.contains(UInt8(ascii: "&")) else { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        var i = 0
        while i < raw.count {
            guard raw[i] == UInt8(ascii: "&") else { out.append(raw[i]); i += 1; continue }
            guard let semicolon = raw[i...].firstIndex(of: UInt8(ascii: ";")), semicolon - i <= 12 else {
                throw error("'&' that does not start an entity (write &amp;)", line: line)
            }
            let entity = String(decoding: raw[(i + 1)..<semicolon], as: UTF8.self)
            switch entity {
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "amp": out.append(UInt8(ascii: "&"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            default:
                var scalar: UInt32?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") { scalar = UInt32(entity.dropFirst(2), radix: 16) }
                else if entity.hasPrefix("#") { scalar = UInt32(entity.dropFirst(1)) }
                guard let scalar, let unicode = Unicode.Scalar(scalar) else {
                    throw error("unknown entity &\(entity); (only &lt; &gt; &amp; &quot; &apos; and &#…; are allowed)", line: line)
                }
                out += Array(String(Character(unicode)).utf8)
            }
            i = semicolon + 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
