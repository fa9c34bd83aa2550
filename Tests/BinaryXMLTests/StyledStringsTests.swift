import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// Styled strings (`<b>`, `<i>`, `<u>`, `<font …>`, `<annotation …>` in strings, plurals and arrays): decoded with
/// their markup, re-applied unchanged without a byte of difference, changed and added with the spans aapt2 writes,
/// checked with `aapt2 dump resources` (which prints spans), `aapt dump`, `apktool d` and `apksigner verify`.
@Suite(.removesTemporaryDirectories) struct StyledStringsTests {
    static let strings = """
        <resources xmlns:xliff="urn:oasis:names:tc:xliff:document:1.2">
            <string name="app_name">Styled</string>
            <string name="nested">Hello <b>bold</b> and <i>ital <u>under</u></i>!</string>
            <string name="font"><font color="#ff0000" size="12">red</font> <annotation key="v">ann</annotation></string>
            <string name="spaced">"a  b" <b>c</b>\\'s \\n<i>"  d  "</i></string>
            <string name="placeholder">Hi <b><xliff:g id="name">%1$s</xliff:g></b>!</string>
            <string name="plain">Just text</string>
            <plurals name="songs"><item quantity="one"><i>1</i> song</item><item quantity="other">%d <b>songs</b></item></plurals>
            <string-array name="planets"><item><b>Mercury</b></item><item>Venus</item></string-array>
        </resources>
        """

    static func fixture() -> FixtureAPK {
        var fixture = FixtureAPK()
        fixture.packageName = "com.example.styled"
        fixture.resources["values/styled.xml"] = Array(strings.replacingOccurrences(of: #"<string name="app_name">Styled</string>"#, with: "").utf8)
        fixture.resources["values-fr/strings.xml"] = Array(#"<resources><string name="nested">Bonjour <b>gras</b></string></resources>"#.utf8)
        fixture.resources["layout/main.xml"] = Array(#"<TextView xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="wrap_content" android:layout_height="wrap_content" android:text="@string/nested" />"#.utf8)
        return fixture
    }

    /// An APK built by aapt2 (compile + link) from one values file.
    static func aapt2APK(values: String, in dir: URL) throws -> String {
        let work = dir.appendingPathComponent("aapt2-\(UUID().uuidString)")
        try TestSupport.write(values, to: "res/values/values.xml", in: work)
        try TestSupport.write(#"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.probe"><application/></manifest>"#,
                              to: "AndroidManifest.xml", in: work)
        let flat = work.appendingPathComponent("flat").path
        try FileManager.default.createDirectory(atPath: flat, withIntermediateDirectories: true)
        let compile = try TestSupport.run("aapt2", ["compile", work.path + "/res/values/values.xml", "-o", flat])
        guard compile.succeeded else { throw FixtureError(message: "aapt2 compile failed: \(compile)") }
        let apk = dir.appendingPathComponent("aapt2-\(UUID().uuidString).apk").path
        let link = try TestSupport.run("aapt2", ["link", "-o", apk, "-I", TestSupport.frameworkRes, "--manifest", work.path + "/AndroidManifest.xml",
                                                 flat + "/values_values.arsc.flat"])
        guard link.succeeded else { throw FixtureError(message: "aapt2 link failed: \(link)") }
        return apk
    }

    static func aapt2Dump(_ apk: String) throws -> String {
        let result = try TestSupport.run("aapt2", ["dump", "resources", apk])
        guard result.succeeded else { throw FixtureError(message: "aapt2 dump failed: \(result)") }
        return result.stdout
    }

    /// The `(styled string) …` value line of `type/name` in `aapt2 dump resources` (first configuration listed, or
    /// the one in parentheses).
    static func value(_ resource: String, configuration: String = "", in dump: String) -> String? {
        let lines = dump.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let start = lines.firstIndex(where: { $0.hasPrefix("resource ") && $0.hasSuffix(" " + resource) }) else { return nil }
        for line in lines[(start + 1)...] {
            if line.hasPrefix("resource ") { return nil }
            if line.hasPrefix("(\(configuration)) ") { return String(line.dropFirst(configuration.count + 3)) }
        }
        return nil
    }

    @Test func decodeShowsMarkupAndReappliesUnchanged() throws {
        let dir = try TestSupport.makeTemporaryDirectory("styled-lossless")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        try LosslessRoundTripTests.assertLossless(apk, in: dir)
        let decoded = dir.appendingPathComponent("view").path
        #expect(try TestSupport.apkpatch(["decode", apk, "-o", decoded]).succeeded)
        for (path, lines) in [
            ("values/strings.xml", [#"<string name="nested">Hello <b>bold</b> and <i>ital <u>under</u></i>!</string>"#,
                                    ##"<string name="font"><font color="#ff0000" size="12">red</font> <annotation key="v">ann</annotation></string>"##,
                                    #"<string name="placeholder">Hi <b>%1$s</b>!</string>"#, #"<string name="plain">Just text</string>"#]),
            ("values-fr/strings.xml", [#"<string name="nested">Bonjour <b>gras</b></string>"#]),
            ("values/plurals.xml", [#"<item quantity="one"><i>1</i> song</item>"#, #"<item quantity="other">%d <b>songs</b></item>"#]),
            ("values/arrays.xml", ["<item><b>Mercury</b></item>", "<item>Venus</item>"]),
        ] {
            let text = try String(contentsOfFile: decoded + "/res/" + path, encoding: .utf8)
            for line in lines { #expect(text.contains(line), "\(path): missing \(line) in\n\(text)") }
        }
        // The unchanged decoded files leave the table as it was, byte for byte (spans included).
        let out = dir.appendingPathComponent("same.apk").path
        #expect(try TestSupport.apkpatch(["run", apk, "--patch", decoded, "--no-sign", "--out", out, "-q"]).succeeded)
        #expect(try Oracle.entry("resources.arsc", in: out) == Oracle.entry("resources.arsc", in: apk))
        #expect(try Self.aapt2Dump(out) == Self.aapt2Dump(apk))
    }

    @Test func changingAndAddingStyledStrings() throws {
        let dir = try TestSupport.makeTemporaryDirectory("styled-edit")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        let before = try Self.aapt2Dump(apk)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("""
            <resources>
                <string name="nested">Hello <i>new</i> <b>world</b></string>
                <string name="plain">Now <u>underlined</u></string>
                <string name="fresh"><font color="#00ff00">green</font> tea</string>
                <plurals name="songs"><item quantity="one"><b>1</b> song</item><item quantity="other">%d <b>songs</b></item></plurals>
                <string-array name="planets"><item><b>Mercury</b></item><item><i>Venus</i></item></string-array>
            </resources>
            """, to: "res/values/strings.xml", in: patch)
        try TestSupport.write(#"<resources><string name="fresh"><b>grüner</b> Tee 🍵</string></resources>"#, to: "res/values-de/strings.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        let after = try Self.aapt2Dump(out)
        for (resource, configuration, expected) in [
            ("string/nested", "", #"(styled string) "Hello new world" i:6,8 b:10,14"#),
            ("string/plain", "", #"(styled string) "Now underlined" u:4,13"#),
            ("string/fresh", "", #"(styled string) "green tea" font;color=#00ff00:0,4"#),
            ("string/fresh", "de", #"(styled string) "grüner Tee 🍵" b:0,5"#),
            // Unchanged ones keep their spans, though every string index after the styled ones moved.
            ("string/nested", "fr", #"(styled string) "Bonjour gras" b:8,11"#),
            ("string/font", "", #"(styled string) "red ann" font;color=#ff0000;size=12:0,2 annotation;key=v:4,6"#),
            ("string/app_name", "", #""Fixture""#),
        ] {
            #expect(Self.value(resource, configuration: configuration, in: after) == expected, "\(resource) (\(configuration)) in\n\(after)")
        }
        #expect(after.contains(#"one=(styled string) "1 song" b:0,0"#), "\(after)")
        #expect(after.contains(#"[(styled string) "Mercury" b:0,6, (styled string) "Venus" i:0,4]"#), "\(after)")
        // Existing IDs are kept.
        for line in before.split(separator: "\n") where line.contains("resource 0x") {
            #expect(after.contains(line), "missing \(line)")
        }
        // aapt (its own reader) and apktool (a decoder nobody here wrote) read the new spans.
        let aaptDump = try Oracle.aapt(["dump", "--values", "resources", out])
        #expect(aaptDump.contains(#"(string8) "Hello new world""#), "\(aaptDump)")
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        for (path, expected) in [("values/strings.xml", "Hello <i>new</i> <b>world</b>"), ("values/strings.xml", "Now <u>underlined</u>"),
                                 ("values/strings.xml", ##"<font color="#00ff00">green</font> tea"##), ("values-de/strings.xml", "<b>grüner</b> Tee")] {
            let text = (try? String(contentsOfFile: decoded + "/res/" + path, encoding: .utf8)) ?? ""
            #expect(text.contains(expected), "apktool \(path): missing \(expected) in\n\(text)")
        }
        let plurals = (try? String(contentsOfFile: decoded + "/res/values/plurals.xml", encoding: .utf8)) ?? ""
        // apktool 2.7 writes a plurals item's spans as escaped markup (it does so for aapt's own output too).
        #expect(plurals.contains("<b>1</b> song") || plurals.contains("&lt;b>1&lt;/b> song"), "\(plurals)")
        try LosslessRoundTripTests.assertLossless(out, in: dir)
    }

    /// aapt keeps a span's attributes in the source's order (`font;size=12;fgcolor=#ff33b5e5`, as LineageOS's
    /// framework-res has them), aapt2 sorts them by name: the decoded markup reads back as the same spans, so a
    /// string given back unchanged keeps its bytes (and with it the whole table), so does an unchanged item of a
    /// changed array; text that changes gets aapt2's order.
    @Test func aaptSpanAttributeOrderIsKept() throws {
        let dir = try TestSupport.makeTemporaryDirectory("styled-order")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.packageName = "com.example.spanorder"
        fixture.resources["values/spans.xml"] = Array("""
            <resources>
                <string name="holo"><font size="12" fgcolor="#ff33b5e5">blue</font> text</string>
                <string name="note"><annotation key="k" arg="1">x</annotation> y</string>
                <string-array name="list"><item><font size="10" color="#ff000000">a</font></item><item>b</item></string-array>
            </resources>
            """.utf8)
        let apk = try fixture.build(in: dir)
        let before = try Self.aapt2Dump(apk)
        #expect(Self.value("string/holo", in: before) == #"(styled string) "blue text" font;size=12;fgcolor=#ff33b5e5:0,3"#, "\(before)")
        #expect(before.contains(#"[(styled string) "a" font;size=10;color=#ff000000:0,0, "b"]"#), "\(before)")

        let decoded = dir.appendingPathComponent("decoded").path
        #expect(try TestSupport.apkpatch(["decode", apk, "-o", decoded]).succeeded)
        let strings = try String(contentsOfFile: decoded + "/res/values/strings.xml", encoding: .utf8)
        #expect(strings.contains(##"<string name="holo"><font size="12" fgcolor="#ff33b5e5">blue</font> text</string>"##), "\(strings)")
        let same = dir.appendingPathComponent("same.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", decoded, "--no-sign", "--out", same, "-q"])
        #expect(run.succeeded, "\(run)")
        #expect(try Oracle.entry("resources.arsc", in: same) == Oracle.entry("resources.arsc", in: apk))

        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("""
            <resources>
                <string name="holo"><font size="12" fgcolor="#ff33b5e5">green</font> text</string>
                <string-array name="list"><item><font size="10" color="#ff000000">a</font></item><item>c</item></string-array>
            </resources>
            """, to: "res/values/strings.xml", in: patch)
        let edited = dir.appendingPathComponent("edited.apk").path
        let edit = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--no-sign", "--out", edited, "-q"])
        try #require(edit.succeeded, "\(edit)")
        let after = try Self.aapt2Dump(edited)
        #expect(Self.value("string/holo", in: after) == #"(styled string) "green text" font;fgcolor=#ff33b5e5;size=12:0,4"#, "\(after)")
        #expect(Self.value("string/note", in: after) == #"(styled string) "x y" annotation;key=k;arg=1:0,0"#, "\(after)")
        #expect(after.contains(#"[(styled string) "a" font;size=10;color=#ff000000:0,0, "c"]"#), "\(after)")
    }

    /// Markup written for any text and nested spans reads back as the same styled string.
    @Test func markupReadsBackAsTheSameString() throws {
        let cases: [StyledString] = [
            StyledString(text: "Hello bold", spans: [.init(tag: "b", firstChar: 6, lastChar: 9)]),
            StyledString(text: "  two  spaces\tand\nlines ", spans: [.init(tag: "i", firstChar: 0, lastChar: 5), .init(tag: "b", firstChar: 2, lastChar: 5)]),
            StyledString(text: #"it's "quoted" \ @at"#, spans: [.init(tag: "font;color=#ff0000;face=a\"b", firstChar: 5, lastChar: 12)]),
            StyledString(text: "@start", spans: [.init(tag: "u", firstChar: 1, lastChar: 2)]),
            StyledString(text: "empty", spans: [.init(tag: "b", firstChar: 0, lastChar: 0xFFFF_FFFF), .init(tag: "i", firstChar: 5, lastChar: 4)]),
            StyledString(text: "🍵 tea", spans: [.init(tag: "b", firstChar: 0, lastChar: 1)]),
            StyledString(text: "a<b>&c", spans: [.init(tag: "annotation;key=x", firstChar: 0, lastChar: 5)]),
        ]
        for styled in cases {
            let markup = try #require(styled.markup, "\(styled)")
            let back = try StyledString.parse(markup: markup)
            #expect(back.map { $0.isSame(as: styled) } == true, "\(markup) -> \(String(describing: back)) for \(styled)")
        }
        // Spans that overlap, split a surrogate pair or leave the text have no markup form.
        for styled in [StyledString(text: "abcdef", spans: [.init(tag: "b", firstChar: 0, lastChar: 3), .init(tag: "i", firstChar: 2, lastChar: 5)]),
                       StyledString(text: "🍵x", spans: [.init(tag: "b", firstChar: 1, lastChar: 2)]),
                       StyledString(text: "ab", spans: [.init(tag: "b", firstChar: 1, lastChar: 2)]),
                       StyledString(text: "ab", spans: [.init(tag: "1x", firstChar: 0, lastChar: 1)])] {
            #expect(styled.markup == nil, "\(styled)")
        }
        // Random texts with random nested spans (seeded: a failure names its seed).
        let alphabet = Array("ab \t\n\"'\\@?<&>é🍵".unicodeScalars)
        for seed in UInt64(0)..<300 {
            var random = SplitMix64(seed: seed)
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...12, using: &random) { text.append(alphabet.randomElement(using: &random)!) }
            let units = Array(String(text).utf16)
            // Boundaries at scalar starts; spans nested by construction (each inside the previous one).
            let starts = (0...units.count).filter { $0 == units.count || !UTF16.isTrailSurrogate(units[$0]) }
            var spans: [StyledString.Span] = []
            var low = 0, high = units.count
            for tag in ["b", "i", "u"].prefix(Int.random(in: 1...3, using: &random)) {
                let candidates = starts.filter { $0 >= low && $0 <= high }
                let a = candidates.randomElement(using: &random)!, b = candidates.filter { $0 >= a }.randomElement(using: &random)!
                spans.append(.init(tag: tag, firstChar: UInt32(a), lastChar: UInt32(b) &- 1))
                (low, high) = (a, b)
            }
            let styled = StyledString(text: String(text), spans: spans)
            let markup = try #require(styled.markup, "seed \(seed): \(styled)")
            let back = try StyledString.parse(markup: markup)
            #expect(back.map { $0.isSame(as: styled) } == true, "seed \(seed): \(markup) -> \(String(describing: back)) for \(styled)")
        }
    }

    /// The string rules aapt2 applies to markup (spaces, quotes and escapes restart at each span edge), checked
    /// against aapt2 itself.
    @Test func compilesMarkupAsAapt2Does() throws {
        let dir = try TestSupport.makeTemporaryDirectory("styled-aapt2")
        defer { try? FileManager.default.removeItem(at: dir) }
        let values = """
            <resources xmlns:xliff="urn:oasis:names:tc:xliff:document:1.2">
                <string name="a">Hello <b>bold</b> and <i>ital <u>under</u></i>!</string>
                <string name="b">  lead <b> spaced  bold </b>  tail  </string>
                <string name="c"><font size="12" color="#ff0000">red</font> <xliff:g id="x">"a  b" c</xliff:g>  <b>x</b></string>
                <string name="d">"quoted <b>  x  </b> y"</string>
                <string name="e">esc \\' \\n <b>x</b>\\u0041</string>
                <string name="f"><b></b>empty</string>
                <string name="g"><b>a</b><i>b</i>"q  <u>w</u>  "</string>
            </resources>
            """
        let apk = try Self.aapt2APK(values: values, in: dir)
        let theirs = try Self.aapt2Dump(apk)
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        var parser = values.split(separator: "\n").dropFirst().dropLast()
        for name in ["a", "b", "c", "d", "e", "f", "g"] {
            let line = String(parser.removeFirst())
            let inner = line[line.range(of: "\">")!.upperBound..<line.range(of: "</string>", options: .backwards)!.lowerBound]
            let ours = try #require(try StyledString.parse(markup: String(inner)))
            let entry = try #require(table.entries.first { $0.type == "string" && $0.name == name })
            #expect(entry.styledValue.map { $0.isSame(as: ours) } == true, "\(name): ours \(ours), aapt2's \(String(describing: entry.styledValue))\n\(theirs)")
        }
    }

    /// Spans without a markup form (here made to overlap by editing an aapt2-built table) survive edits of other
    /// items of their bag and of other strings; an edit of their own text, which would drop them, is refused.
    @Test func spansWithoutMarkupAreKeptOrTheEditRefused() throws {
        let dir = try TestSupport.makeTemporaryDirectory("styled-unmarked")
        defer { try? FileManager.default.removeItem(at: dir) }
        let built = try Self.aapt2APK(values: """
            <resources>
                <string name="s">abcdefgh<b>ijklmnop</b><i>qrstuvwxyz</i></string>
                <string name="other">plain</string>
                <string-array name="arr"><item>ABCDEFGHIJ<b>KLMNOPQRST</b><u>UVWXYZabcdefghij</u></item><item>second</item></string-array>
            </resources>
            """, in: dir)
        // Start each second span inside the first: (first, last) u32 pairs of ResStringPool_span.
        var table = try Oracle.entry("resources.arsc", in: built)
        func moveStart(_ first: UInt32, _ last: UInt32, to newFirst: UInt32) throws {
            let pattern = [first, last].flatMap { value in (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
            let hits = stride(from: 0, to: table.count - 8, by: 4).filter { Array(table[$0..<($0 + 8)]) == pattern }
            let hit = try #require(hits.count == 1 ? hits.first : nil, "span \(first),\(last) found \(hits.count) times")
            table[hit] = UInt8(newFirst)
        }
        try moveStart(16, 25, to: 12)
        try moveStart(20, 35, to: 15)
        let apk = dir.appendingPathComponent("overlapping.apk").path
        try Oracle.replacing(["resources.arsc": table], in: built, destination: apk)
        let input = try Self.aapt2Dump(apk)
        #expect(Self.value("string/s", in: input) == #"(styled string) "abcdefghijklmnopqrstuvwxyz" b:8,15 i:12,25"#, "\(input)")
        let decoded = dir.appendingPathComponent("decoded").path
        #expect(try TestSupport.apkpatch(["decode", apk, "-o", decoded]).succeeded)
        let strings = try String(contentsOfFile: decoded + "/res/values/strings.xml", encoding: .utf8)
        #expect(strings.contains("<string name=\"s\">abcdefghijklmnopqrstuvwxyz</string>"), "\(strings)")

        let strings2 = "<resources>\n<string name=\"s\">abcdefghijklmnopqrstuvwxyz</string>\n<string name=\"other\">changed</string></resources>"
        let arrays = "<resources>\n<string-array name=\"arr\"><item>ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij</item><item>second changed</item></string-array></resources>"
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(strings2, to: "res/values/strings.xml", in: patch)
        try TestSupport.write(arrays, to: "res/values/arrays.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        let dump = try Self.aapt2Dump(out)
        #expect(Self.value("string/s", in: dump) == #"(styled string) "abcdefghijklmnopqrstuvwxyz" b:8,15 i:12,25"#, "\(dump)")
        #expect(Self.value("string/other", in: dump) == #""changed""#, "\(dump)")
        #expect(dump.contains(#"[(styled string) "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij" b:10,19 u:15,35, "second changed"]"#), "\(dump)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)

        for (path, content, expected) in [
            ("res/values/strings.xml", strings2.replacingOccurrences(of: "abcdefghijklmnopqrstuvwxyz", with: "abcdefgh"),
             "res/values/strings.xml:2: string/s has style spans with no markup form (b:8,15 i:12,25), which changing its text would drop"),
            ("res/values/arrays.xml", arrays.replacingOccurrences(of: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", with: "ABC"),
             "res/values/arrays.xml:2: array/arr item 1 has style spans with no markup form (b:10,19 u:15,35), which changing its text would drop"),
        ] {
            let refusedPatch = dir.appendingPathComponent("refused-\(UUID().uuidString)")
            try TestSupport.write(content, to: path, in: refusedPatch)
            let refusedOut = dir.appendingPathComponent("refused-\(UUID().uuidString).apk").path
            let refused = try TestSupport.apkpatch(["run", apk, "--patch", refusedPatch.path, "--out", refusedOut, "--no-sign"])
            #expect(!refused.succeeded && refused.stderr.contains(expected), "\(refused)")
            #expect(!FileManager.default.fileExists(atPath: refusedOut))
        }
    }
}
