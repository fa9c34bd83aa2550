import BinaryXML
import ResourceTable
import Testing
import TestSupport

/// aapt's string collection (`AAPTEscaping.unescape`): white space outside quotes collapsed, escapes applied.
@Suite struct TextEscapingTests {
    @Test("a scalar is white space exactly when a Character of it is (Unicode's White_Space), for every scalar")
    func whitespaceAsCharacterSays() {
        var differing: [UInt32] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }  // surrogates
            if AAPTEscaping.isWhitespace(scalar) != Character(scalar).isWhitespace { differing.append(value) }
        }
        #expect(differing.isEmpty, "differ at \(differing.prefix(10).map { String($0, radix: 16) })")
    }

    /// The collection as it was written first, a Character per scalar: what the shortcuts must still give.
    static func reference(_ text: String) -> String {
        var out = String.UnicodeScalarView(), quoted = false, pendingSpace = false
        var scalars = text.unicodeScalars.makeIterator()
        while let c = scalars.next() {
            if !quoted, Character(c).isWhitespace { pendingSpace = true; continue }
            if pendingSpace { if !out.isEmpty { out.append(" ") }; pendingSpace = false }
            switch c {
            case "\"": quoted.toggle()
            case "\\": if let next = scalars.next() { out.append(next == "n" ? "\n" : next == "t" ? "\t" : next) }
            default: out.append(c)
            }
        }
        return String(out)
    }

    @Test("strings of spaces, other white space, quotes, backslashes and marks collect as they always did (seed 11, 20,000 strings)")
    func collectsAsBefore() throws {
        let alphabet: [String] = ["a", "b", " ", " ", "\t", "\n", "\u{A0}", "\u{2003}", "\u{3000}", "\"", "\\", "\u{301}", "\u{E9}", "\u{1F600}", "\u{85}"]
        var random = SplitMix64(seed: 11)
        var wrong: [String] = []
        for _ in 0..<20_000 {
            let text = (0..<Int(random.next() % 9)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
            if text.hasSuffix("\\") { continue }  // a trailing backslash: the reference and aapt differ on nothing else
            if try AAPTEscaping.unescape(text, collapsingWhitespace: true) != Self.reference(text) { wrong.append(text) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) differ, first \(wrong.prefix(3).map(\.debugDescription))")
    }

    @Test("escaping gives what escaping scalar by scalar gives, values with nothing to escape included (seed 9, 20,000 strings)")
    func escapingAsScalarByScalar() {
        func xml(_ value: String, attribute: Bool) -> String {
            var out = ""
            for c in value.unicodeScalars {
                switch c {
                case "&": out += "&amp;"
                case "<": out += "&lt;"
                case ">": out += "&gt;"
                case "\r": out += "&#13;"
                case "\"" where attribute: out += "&quot;"
                case "\n" where attribute: out += "&#10;"
                case "\t" where attribute: out += "&#9;"
                default: out.unicodeScalars.append(c)
                }
            }
            return out
        }
        func aapt(_ value: String, apostrophes: Bool) -> String {
            var out = ""
            for c in value.unicodeScalars {
                switch c {
                case "\\": out += "\\\\"
                case "\"": out += "\\\""
                case "'" where apostrophes: out += "\\'"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                default: out.unicodeScalars.append(c)
                }
            }
            return out
        }
        let alphabet: [String] = ["a", "é", "中", "\u{301}", " ", "&", "<", ">", "\r", "\r\n", "\"", "\n", "\t", "\\", "'", "@"]
        var random = SplitMix64(seed: 9)
        var wrong: [String] = []
        for _ in 0..<20_000 {
            let value = (0..<Int(random.next() % 7)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
            if XMLEscaping.attribute(value) != xml(value, attribute: true) || XMLEscaping.text(value) != xml(value, attribute: false)
                || AAPTEscaping.escapeCharacters(value, apostrophes: true) != aapt(value, apostrophes: true)
                || AAPTEscaping.escapeCharacters(value, apostrophes: false) != aapt(value, apostrophes: false) {
                wrong.append(value)
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) differ, first \(wrong.prefix(3).map(\.debugDescription))")
    }

    @Test("a decoded string is quoted exactly when its Characters need it, ASCII read by bytes (seed 5, 50,000 strings)")
    func quotesAsCharactersSay() {
        // `firstRange(of:)`: the standard library's search by Characters, which StringsXML's `contains` is (here
        // Foundation's, by UTF-16 units, would be chosen for `contains`).
        func reference(_ value: String) -> Bool {
            value.first?.isWhitespace == true || value.last?.isWhitespace == true || value.firstRange(of: "  ") != nil
                || value.unicodeScalars.contains { $0 != " " && $0 != "\n" && $0 != "\t" && Character($0).isWhitespace }
        }
        let alphabet: [String] = ["a", "b", " ", " ", "\t", "\n", "\r", "\r\n", "\u{0B}", "\u{0C}", "\"", "\\", "\u{A0}", "\u{301}", "\u{600}"]
        var random = SplitMix64(seed: 5)
        var wrong: [String] = []
        for _ in 0..<50_000 {
            let value = (0..<Int(random.next() % 8)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
            if StringsXML.needsQuotes(value) != reference(value) { wrong.append(value) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) differ, first \(wrong.prefix(3).map(\.debugDescription))")
    }

    @Test("runs of white space (any of Unicode's) outside quotes become one space, the ends trimmed; quoted text is kept")
    func collapsing() throws {
        #expect(try AAPTEscaping.unescape("  a\u{2003}\u{A0} b\t\n", collapsingWhitespace: true) == "a b")
        #expect(try AAPTEscaping.unescape("x\u{0B}\u{0C}\r\u{85}y", collapsingWhitespace: true) == "x y")
        #expect(try AAPTEscaping.unescape("\" a  b \"  c", collapsingWhitespace: true) == " a  b  c")
        #expect(try AAPTEscaping.unescape("a\\nb\\t\\u0041\\\"", collapsingWhitespace: true) == "a\nb\tA\"")
        #expect(try AAPTEscaping.unescape("a  b", collapsingWhitespace: false) == "a  b")
        #expect(try AAPTEscaping.unescape("e\u{301}  \u{3000}z", collapsingWhitespace: true) == "e\u{301} z")
    }
}
