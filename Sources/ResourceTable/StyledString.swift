import APKCore
import BinaryXML

/// A string with style spans (`<b>`, `<i>`, `<font color=…>`, `<annotation key=…>`), as a resource table stores it:
/// the plain text, and for each span the tag with its attributes (`font;color=#ff0000;size=12`) and the first and
/// last UTF-16 unit it covers (`ResStringPool_span`). aapt2 writes an empty `<b></b>` as last = first - 1.
public struct StyledString: Sendable, Hashable {
    public struct Span: Sendable, Hashable {
        /// The element name, then `;attribute=value` for each attribute in name order (aapt2's span name).
        public var tag: String
        public var firstChar: UInt32
        public var lastChar: UInt32
        public init(tag: String, firstChar: UInt32, lastChar: UInt32) { self.tag = tag; self.firstChar = firstChar; self.lastChar = lastChar }
    }

    public var text: String
    public var spans: [Span]

    public init(text: String, spans: [Span]) { self.text = text; self.spans = spans }

    /// Spans in one order whatever tool wrote them (aapt lists them by end tag, aapt2 by start tag), each tag with
    /// its attributes in one order (aapt keeps the source's, `font;size=12;fgcolor=#ff33b5e5`, aapt2 sorts them by
    /// name): Android applies each span on its own and reads attributes by name, so neither order carries meaning.
    var canonicalSpans: [Span] {
        spans.map { Span(tag: Self.canonicalTag($0.tag), firstChar: $0.firstChar, lastChar: $0.lastChar) }
            .sorted { ($0.firstChar, $0.lastChar, $0.tag) < ($1.firstChar, $1.lastChar, $1.tag) }
    }

    /// `tag` with its `;attribute=value` parts sorted: one form for every order of the same attributes.
    static func canonicalTag(_ tag: String) -> String {
        guard tag.utf8.contains(UInt8(ascii: ";")) else { return tag }
        let parts = tag.split(separator: ";", omittingEmptySubsequences: false)
        return ([parts[0]] + parts.dropFirst().sorted()).joined(separator: ";")
    }

    /// Spans as `tag:first,last` (aapt2's dump notation), for messages.
    static func describe(_ spans: [Span]) -> String {
        spans.map { "\($0.tag):\($0.firstChar),\($0.lastChar)" }.joined(separator: " ")
    }

    /// Same text and the same spans in any order.
    public func isSame(as other: StyledString) -> Bool { text == other.text && Self.isSame(spans, other.spans) }

    /// The same spans in any order, their attributes in any order.
    static func isSame(_ spans: [Span], _ other: [Span]) -> Bool {
        spans == other || (spans.count == other.count && StyledString(text: "", spans: spans).canonicalSpans == StyledString(text: "", spans: other).canonicalSpans)
    }

    // MARK: reading markup

    /// The value of a `<string>` or `<item>` element holding markup, compiled as aapt2's `FlattenXmlSubtree` does;
    /// nil when it holds no span element (only text and `<xliff:g>`). An element without a namespace prefix is a
    /// span; a prefixed one (`<xliff:g>`) keeps its text without a span. Text follows aapt's string rules (white
    /// space runs become one space, `"…"` quotes, backslash escapes), with the quote and white-space state starting
    /// afresh at each span's start and end; the ends are not trimmed (aapt2 trims only strings without spans).
    static func parse(_ element: TextXMLParser.Element, fileName: String) throws -> StyledString? {
        func hasSpan(_ element: TextXMLParser.Element) -> Bool {
            element.children.contains { if case .element(let e) = $0 { return !e.qualifiedName.contains(":") || hasSpan(e) }; return false }
        }
        guard hasSpan(element) else { return nil }
        var builder = Builder(fileName: fileName)
        var spans: [Span] = []
        func walk(_ element: TextXMLParser.Element) throws {
            for child in element.children {
                switch child {
                case .text(let text, let line, _): try builder.append(text, line: line)
                case .element(let inner) where inner.qualifiedName.contains(":"):
                    try walk(inner)
                case .element(let inner):
                    let attributes = inner.attributes.filter { $0.qualifiedName != "xmlns" && !$0.qualifiedName.hasPrefix("xmlns:") }
                        .sorted { $0.qualifiedName < $1.qualifiedName }
                    let tag = ([inner.qualifiedName] + attributes.map { $0.qualifiedName + "=" + $0.value }).joined(separator: ";")
                    builder.resetState()
                    let index = spans.count
                    spans.append(Span(tag: tag, firstChar: builder.utf16Count, lastChar: builder.utf16Count))
                    try walk(inner)
                    builder.resetState()
                    spans[index].lastChar = builder.utf16Count &- 1
                }
            }
        }
        try walk(element)
        return StyledString(text: String(builder.text), spans: spans)
    }

    /// The value of `<string>markup</string>` (`markup` as `markup` writes it), or nil when it has no span.
    package static func parse(markup: String, fileName: String = "string") throws -> StyledString? {
        var parser = TextXMLParser(text: "<string>" + markup + "</string>", fileName: fileName)
        do { return try parse(try parser.parse(), fileName: fileName) } catch let error as BinaryXMLError {
            throw ResourceTableError(.badValuesFile, error.message)
        }
    }

    /// aapt2's `StringBuilder::AppendText`.
    private struct Builder {
        let fileName: String
        var text = String.UnicodeScalarView()
        var utf16Count: UInt32 = 0
        var quoted = false
        var lastWasSpace = false

        mutating func resetState() { quoted = false; lastWasSpace = false }

        mutating func add(_ scalar: Unicode.Scalar) { text.append(scalar); utf16Count += UInt32(scalar.utf16.count) }

        mutating func append(_ raw: String, line: Int) throws {
            var scalars = raw.unicodeScalars.makeIterator()
            while let c = scalars.next() {
                if !quoted, StyledString.isASCIISpace(c) {
                    if !lastWasSpace { add(" "); lastWasSpace = true }
                    continue
                }
                lastWasSpace = false
                switch c {
                case "\\":
                    do { if let scalar = try AAPTEscaping.unescapedScalar(after: &scalars) { add(scalar) } } catch {
                        throw ResourceTableError(.badValuesFile, "\(fileName):\(line): \(error)")
                    }
                case "\"": quoted.toggle()
                default: add(c)
                }
            }
        }
    }

    static func isASCIISpace(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{0B}" || c == "\u{0C}" }

    // MARK: writing markup

    /// The element content that `parse` reads back as this string (apktool's markup: `Hello <b>world</b>`), or nil
    /// when the spans cannot be written as nested elements (they overlap, fall outside the text or split a
    /// surrogate pair, or a span name is not an element name with attributes).
    public var markup: String? {
        let units = Array(text.utf16)
        let count = UInt32(units.count)
        struct Tag { var name: String; var attributes: [(String, String)] }
        var tags: [Tag] = []
        for span in spans {
            let parts = span.tag.split(separator: ";", omittingEmptySubsequences: false)
            guard let name = parts.first, Self.isElementName(name) else { return nil }
            var attributes: [(String, String)] = []
            for part in parts.dropFirst() {
                guard let equals = part.firstIndex(of: "="), Self.isElementName(part[..<equals]) else { return nil }
                attributes.append((String(part[..<equals]), String(part[part.index(after: equals)...])))
            }
            // An empty span sits between two units (last = first - 1); any other must lie within the text.
            let isEmpty = span.lastChar &+ 1 == span.firstChar
            guard span.firstChar <= count, isEmpty || (span.lastChar >= span.firstChar && span.lastChar < count) else { return nil }
            tags.append(Tag(name: String(name), attributes: attributes))
        }
        // Boundaries in the text, each with the spans that end there (innermost first), the empty ones, and the
        // ones that start there (outermost first).
        let order = spans.indices.sorted { a, b in
            (spans[a].firstChar, UInt64(spans[b].lastChar &+ 1), a) < (spans[b].firstChar, UInt64(spans[a].lastChar &+ 1), b)
        }
        var stack: [Int] = []
        var out = ""
        var position: UInt32 = 0
        var next = 0
        func open(_ index: Int) -> String {
            "<" + tags[index].name + tags[index].attributes.map { " \($0.0)=\"\(XMLEscaping.attribute($0.1))\"" }.joined() + ">"
        }
        func close(_ index: Int) -> String { "</" + tags[index].name + ">" }
        func isSplittingPair(_ at: UInt32) -> Bool { at > 0 && at < count && UTF16.isTrailSurrogate(units[Int(at)]) }
        while true {
            // Close what ends here, innermost first; a span ending under another that is still open overlaps it.
            while let top = stack.last, spans[top].lastChar &+ 1 == position {
                stack.removeLast()
                out += close(top)
            }
            guard !stack.contains(where: { spans[$0].lastChar &+ 1 == position }) else { return nil }
            while next < order.count, spans[order[next]].firstChar == position {
                let index = order[next]
                next += 1
                guard !isSplittingPair(position) else { return nil }
                if spans[index].lastChar &+ 1 == position { out += open(index) + close(index); continue }
                if let top = stack.last, spans[index].lastChar > spans[top].lastChar { return nil }
                stack.append(index)
                out += open(index)
            }
            guard position < count else { break }
            // Text up to the next boundary.
            var end = count
            if next < order.count { end = min(end, spans[order[next]].firstChar) }
            if let top = stack.last { end = min(end, spans[top].lastChar &+ 1) }
            guard !isSplittingPair(end) else { return nil }
            let segment = String(decoding: units[Int(position)..<Int(end)], as: UTF16.self)
            out += XMLEscaping.text(Self.escapeSegment(segment, isFirst: position == 0))
            position = end
        }
        guard stack.isEmpty, next == order.count else { return nil }
        return out
    }

    /// One run of text between span boundaries, escaped for `Builder`: backslashes, quotes and apostrophes,
    /// newlines and tabs; the run goes in double quotes when it holds white space the builder would collapse.
    static func escapeSegment(_ segment: String, isFirst: Bool) -> String {
        let body = isFirst ? AAPTEscaping.escape(segment, apostrophes: true) : AAPTEscaping.escapeCharacters(segment, apostrophes: true)
        // Newlines and tabs are escaped; two spaces in a row or other white space would collapse.
        let scalars = Array(segment.unicodeScalars)
        let needsQuotes = zip(scalars, scalars.dropFirst()).contains { $0 == " " && $1 == " " }
            || scalars.contains { $0 != " " && $0 != "\n" && $0 != "\t" && isASCIISpace($0) }
        return needsQuotes ? "\"" + body + "\"" : body
    }

    static func isElementName(_ name: Substring) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || first.properties.isAlphabetic else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || $0 == "-" || $0 == "." || $0.properties.isAlphabetic || ("0"..."9").contains($0) }
    }
}
