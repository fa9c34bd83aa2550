/// The two layers of escaping in Android's text resources, in one place so that everything that writes them
/// (the decoder's XML, the strings.xml and values writers) produces what everything that reads them (the XML
/// compiler, the strings.xml and values readers) gives back unchanged.
///
/// A value is escaped for aapt first (`AAPTEscaping`: backslashes, quotes, a leading `@`), then for XML
/// (`XMLEscaping`: `&`, `<`, quotes in attributes); reading undoes them in the opposite order.

/// XML escaping: markup characters, and what XML would normalise away.
package enum XMLEscaping {
    /// An attribute value in double quotes: markup characters, quotes, and the white space XML would normalise.
    package static func attribute(_ s: String) -> String { escape(s, inAttribute: true) }

    /// Character data: markup characters and carriage returns (which XML would turn into newlines).
    package static func text(_ s: String) -> String { escape(s, inAttribute: false) }

    /// The white space aapt compacts at the ends of a text node (ASCII space, tab, newline, carriage return).
    package static func isSpace(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\n" || c == "\t" || c == "\r" }

    /// A text node's character data such that `TextXMLCompiler` compiles it back to exactly `s`: white space the
    /// compiler would compact or drop (a run of two or more at either end, a node of white space only) is written
    /// as character references, which it keeps; a single white space character at either end stays literal.
    /// `endsInLiteralSpace`: the written text ends in literal white space, so more (line padding) may follow it,
    /// since the compiler keeps the first character of that trailing run.
    package static func textNode(_ s: String) -> (text: String, endsInLiteralSpace: Bool) {
        let scalars = Array(s.unicodeScalars)
        let leading = scalars.prefix(while: isSpace).count
        guard leading < scalars.count else {
            return (scalars.map { "&#" + String($0.value) + ";" }.joined(), false)
        }
        let trailing = scalars.reversed().prefix(while: isSpace).count
        var out = ""
        for (index, c) in scalars.enumerated() {
            if isSpace(c), c == "\r" || (index < leading && leading > 1) || (index >= scalars.count - trailing && trailing > 1) {
                out += "&#" + String(c.value) + ";"
            } else {
                append(c, to: &out, inAttribute: false)
            }
        }
        return (out, trailing == 1 && scalars.last != "\r")
    }

    private static func escape(_ s: String, inAttribute: Bool) -> String {
        // Most values have nothing to escape: they are given back as they are, not rebuilt scalar by scalar.
        if !s.utf8.contains(where: { replacement(of: $0, inAttribute: inAttribute) != nil }) { return s }
        var out = ""
        for c in s.unicodeScalars { append(c, to: &out, inAttribute: inAttribute) }
        return out
    }

    private static func append(_ c: Unicode.Scalar, to out: inout String, inAttribute: Bool) {
        if c.isASCII, let replacement = replacement(of: UInt8(c.value), inAttribute: inAttribute) { out += replacement } else { out.unicodeScalars.append(c) }
    }

    /// What an ASCII character is written as, nil where it is written as itself (as is every other character).
    private static func replacement(of c: UInt8, inAttribute: Bool) -> String? {
        switch c {
        case UInt8(ascii: "&"): return "&amp;"
        case UInt8(ascii: "<"): return "&lt;"
        case UInt8(ascii: ">"): return "&gt;"
        case UInt8(ascii: "\r"): return "&#13;"
        case UInt8(ascii: "\"") where inAttribute: return "&quot;"
        case UInt8(ascii: "\n") where inAttribute: return "&#10;"
        case UInt8(ascii: "\t") where inAttribute: return "&#9;"
        default: return nil
        }
    }
}

/// aapt's escaping of string values, under XML's: backslash escapes, double quotes that keep white space, and a
/// backslash that keeps a leading `@` or `?` from making a reference. Reading follows aapt's `collectString`
/// (`ResourceTable.cpp`'s string processing) and aapt2's `StringBuilder`.
package enum AAPTEscaping {
    /// A `\u` not followed by four hexadecimal digits (the only escape aapt refuses).
    package struct InvalidEscape: Error, Sendable, CustomStringConvertible {
        package var description: String { "\\u must be followed by four hex digits (\\u00e9 is é); write \\\\ for a backslash itself" }
    }

    /// Backslash escapes for backslashes, double quotes, newlines and tabs, and for apostrophes when
    /// `apostrophes` is set (string resources need them: aapt refuses a bare one there; attribute values do not).
    package static func escapeCharacters(_ value: String, apostrophes: Bool) -> String {
        // Most values have nothing to escape: they are given back as they are, not rebuilt scalar by scalar.
        if !value.utf8.contains(where: { backslashed($0, apostrophes: apostrophes) != nil }) { return value }
        var body = ""
        for c in value.unicodeScalars {
            if c.isASCII, let escaped = backslashed(UInt8(c.value), apostrophes: apostrophes) { body += escaped } else { body.unicodeScalars.append(c) }
        }
        return body
    }

    /// The backslash escape an ASCII character is written as, nil where it is written as itself (as is every other character).
    private static func backslashed(_ c: UInt8, apostrophes: Bool) -> String? {
        switch c {
        case UInt8(ascii: "\\"): return "\\\\"
        case UInt8(ascii: "\""): return "\\\""
        case UInt8(ascii: "'") where apostrophes: return "\\'"
        case UInt8(ascii: "\n"): return "\\n"
        case UInt8(ascii: "\t"): return "\\t"
        default: return nil
        }
    }

    /// `escapeCharacters`, and a backslash before a leading `@` or `?`, which would otherwise make the value a
    /// reference. Whether the result also needs double quotes is the caller's rule.
    package static func escape(_ value: String, apostrophes: Bool) -> String {
        let body = escapeCharacters(value, apostrophes: apostrophes)
        return body.hasPrefix("@") || body.hasPrefix("?") ? "\\" + body : body
    }

    /// What the backslash escape whose backslash `scalars` has just passed stands for: `\n` and `\t` their
    /// characters, `\uXXXX` its code point, any other character itself; nil when the text ends after the backslash.
    package static func unescapedScalar(after scalars: inout String.UnicodeScalarView.Iterator) throws(InvalidEscape) -> Unicode.Scalar? {
        guard let next = scalars.next() else { return nil }
        switch next {
        case "n": return "\n"
        case "t": return "\t"
        case "u":
            var hex = ""
            for _ in 0..<4 { if let h = scalars.next() { hex.unicodeScalars.append(h) } }
            guard hex.count == 4, let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else { throw InvalidEscape() }
            return scalar
        default: return next
        }
    }

    /// aapt's `collectString`: backslash escapes applied (`unescapedScalar`) and unescaped double quotes dropped.
    /// With `collapsingWhitespace` (string resources), each run of white space outside double quotes becomes one
    /// space and the ends are trimmed; without it (attribute values), white space is kept as it is.
    package static func unescape(_ text: String, collapsingWhitespace: Bool) throws(InvalidEscape) -> String {
        if !collapsingWhitespace, !text.contains("\\"), !text.contains("\"") { return text }
        if collapsingWhitespace, isCollected(text) { return text }
        var out = String.UnicodeScalarView()
        var quoted = false
        var pendingSpace = false
        var scalars = text.unicodeScalars.makeIterator()
        while let c = scalars.next() {
            if collapsingWhitespace, !quoted, isWhitespace(c) { pendingSpace = true; continue }
            if pendingSpace {
                if !out.isEmpty { out.append(" ") }
                pendingSpace = false
            }
            switch c {
            case "\"": quoted.toggle()
            case "\\": if let scalar = try unescapedScalar(after: &scalars) { out.append(scalar) }
            default: out.append(c)
            }
        }
        return String(out)
    }

    /// `Character(c).isWhitespace` for one scalar, without making a Character or reading its properties: the
    /// scalars with Unicode's White_Space property (what Character.isWhitespace asks of its first scalar),
    /// unchanged since Unicode 6.3 took U+180E out; a test compares this with Character for every scalar.
    package static func isWhitespace(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x09...0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
    }

    /// Whether `unescape(text, collapsingWhitespace: true)` is `text` itself: no backslash or double quote, and
    /// white space only as single spaces between other characters. Most strings of an app are; collecting
    /// them anew would copy every one, a scalar at a time.
    static func isCollected(_ text: String) -> Bool {
        var previousIsSpace = true  // a space first is trimmed
        for c in text.unicodeScalars {
            if c == "\\" || c == "\"" { return false }
            if c == " " {
                if previousIsSpace { return false }
                previousIsSpace = true
            } else if isWhitespace(c) {
                return false
            } else {
                previousIsSpace = false
            }
        }
        return !previousIsSpace || text.isEmpty
    }
}
