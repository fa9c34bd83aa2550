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

    /// `count` strings of fewer than `shorterThan` pieces of `alphabet`, the same ones for the same seed.
    static func randomStrings(of alphabet: [String], seed: UInt64, count: Int, shorterThan limit: UInt64) -> [String] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            (0..<Int(random.next() % limit)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
        }
    }

    @Test("strings of spaces, other white space, quotes, backslashes and marks collect as they always did (seed 11, 20,000 strings)")
    func collectsAsBefore() throws {
        let alphabet: [String] = ["a", "b", " ", " ", "\t", "\n", "\u{A0}", "\u{2003}", "\u{3000}", "\"", "\\", "\u{301}", "\u{E9}", "\u{1F600}", "\u{85}"]
        var wrong: [String] = []
        for text in Self.randomStrings(of: alphabet, seed: 11, count: 20_000, shorterThan: 9) {
            if text.hasSuffix("\\") { continue }  // a trailing backslash: the reference and aapt differ on nothing else
            if try AAPTEscaping.unescape(text, collapsingWhitespace: true) != Self.reference(text) { wrong.append(text) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) differ, first \(wrong.prefix(3).map(\.debugDescription))")
    }

    @Test("escaping gives what escaping scalar by scalar gives, values with nothing to escape included (seed 9, 20,000 strings)")
    func escapingAsScalarByScalar() {
        // The references as tables of what each scalar becomes (every other scalar stays itself).
        let text: [Unicode.Scalar: String] = ["&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"]
        let attribute = text.merging(["\"": "&quot;", "\n": "&#10;", "\t": "&#9;"]) { kept, _ in kept }
        let backslashes: [Unicode.Scalar: String] = ["\\": "\\\\", "\"": "\\\"", "\n": "\\n", "\t": "\\t"]
        let apostrophes = backslashes.merging(["'": "\\'"]) { kept, _ in kept }
        func escaped(_ value: String, by table: [Unicode.Scalar: String]) -> String {
            value.unicodeScalars.map { table[$0] ?? String($0) }.joined()
        }
        let alphabet: [String] = ["a", "é", "中", "\u{301}", " ", "&", "<", ">", "\r", "\r\n", "\"", "\n", "\t", "\\", "'", "@"]
        let wrong = Self.randomStrings(of: alphabet, seed: 9, count: 20_000, shorterThan: 7).filter { value in
            XMLEscaping.attribute(value) != escaped(value, by: attribute) || XMLEscaping.text(value) != escaped(value, by: text)
                || AAPTEscaping.escapeCharacters(value, apostrophes: true) != escaped(value, by: apostrophes)
                || AAPTEscaping.escapeCharacters(value, apostrophes: false) != escaped(value, by: backslashes)
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
        let wrong = Self.randomStrings(of: alphabet, seed: 5, count: 50_000, shorterThan: 8).filter { StringsXML.needsQuotes($0) != reference($0) }
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
