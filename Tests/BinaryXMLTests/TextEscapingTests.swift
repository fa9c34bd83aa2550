import BinaryXML
import Testing

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
