import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// Values beyond strings (bools, integers, colors, dimens, fractions, ids, plurals, arrays, styles, attrs) in
/// several configurations: decoded apktool-style, re-applied unchanged without a byte of difference, changed and
/// added, checked with `aapt dump`, `apktool d` and `apksigner verify`.
@Suite(.removesTemporaryDirectories) struct ValuesResourcesTests {
    static let values = """
        <resources>
            <bool name="enabled">true</bool>
            <integer name="count">3</integer>
            <color name="accent">#ff336699</color>
            <color name="pale">#abc</color>
            <color name="alias">@color/accent</color>
            <dimen name="margin">16dp</dimen>
            <dimen name="text">14sp</dimen>
            <fraction name="half">50%</fraction>
            <item type="id" name="marker"/>
            <item type="dimen" name="ratio" format="float">1.5</item>
            <item type="drawable" name="solid">#ff000000</item>
            <plurals name="songs"><item quantity="one">%d song</item><item quantity="other">%d songs</item></plurals>
            <string-array name="planets"><item>Mercury</item><item>Venus</item><item>It\\'s \\"Earth\\"</item></string-array>
            <integer-array name="primes"><item>2</item><item>3</item></integer-array>
            <array name="mixed"><item>@color/accent</item><item>12dp</item></array>
            <attr name="tint" format="color|reference" localization="suggested"/>
            <attr name="mode"><enum name="fast" value="1"/><enum name="slow" value="2"/></attr>
            <attr name="edges"><flag name="top" value="0x1"/><flag name="bottom" value="0x2"/></attr>
            <style name="AppTheme" parent="@android:style/Theme.Material.Light">
                <item name="android:colorAccent">@color/accent</item>
                <item name="android:windowNoTitle">true</item>
                <item name="android:gravity">center_vertical|left</item>
                <item name="tint">#ff00ff00</item>
                <item name="mode">fast</item>
            </style>
            <style name="AppTheme.Dark"><item name="android:textSize">18sp</item></style>
            <style name="Plain.Child" parent=""><item name="edges">top|bottom</item></style>
        </resources>
        """

    static func fixture() -> FixtureAPK {
        var fixture = FixtureAPK()
        fixture.resources["values/values.xml"] = Array(values.utf8)
        fixture.resources["values-fr/values.xml"] = Array("""
            <resources><bool name="enabled">false</bool>
            <plurals name="songs"><item quantity="one">%d chanson</item><item quantity="other">%d chansons</item></plurals>
            <string-array name="planets"><item>Mercure</item><item>Vénus</item></string-array></resources>
            """.utf8)
        fixture.resources["values-night/colors.xml"] = Array(#"<resources><color name="accent">#ff000000</color></resources>"#.utf8)
        fixture.resources["values-land/dimens.xml"] = Array(#"<resources><dimen name="margin">24dp</dimen></resources>"#.utf8)
        fixture.resources["values-v21/styles.xml"] = Array(#"<resources><style name="AppTheme" parent="@android:style/Theme.Material"><item name="tint">@color/accent</item></style></resources>"#.utf8)
        fixture.resources["layout/main.xml"] = Array("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res-auto"
                android:layout_width="match_parent" android:layout_height="wrap_content" app:tint="#ff0000ff" app:mode="slow" app:edges="top" />
            """.utf8)
        return fixture
    }

    static func file(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    /// decode -> unchanged -> run: identical `aapt dump --values resources` and xmltree; the decoded files are apktool's.
    @Test func decodeWritesEveryTypeAndReappliesUnchanged() throws {
        let dir = try TestSupport.makeTemporaryDirectory("values-lossless")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        try LosslessRoundTripTests.assertLossless(apk, in: dir)
        let decoded = dir.appendingPathComponent("view").path
        #expect(try TestSupport.apkpatch(["decode", apk, "-o", decoded]).succeeded)
        let expectations: [(String, [String])] = [
            ("values/bools.xml", [#"<bool name="enabled">true</bool>"#]),
            ("values-fr/bools.xml", [#"<bool name="enabled">false</bool>"#]),
            ("values/integers.xml", [#"<integer name="count">3</integer>"#]),
            ("values/colors.xml", [#"<color name="accent">#ff336699</color>"#, #"<color name="alias">@color/accent</color>"#, #"<color name="pale">#abc</color>"#]),
            ("values-night-v8/colors.xml", [#"<color name="accent">#ff000000</color>"#]),
            ("values/dimens.xml", [#"<dimen name="margin">16.0dip</dimen>"#, #"<item type="dimen" name="ratio" format="float">1.5</item>"#]),
            ("values-land/dimens.xml", [#"<dimen name="margin">24.0dip</dimen>"#]),
            ("values/fractions.xml", [#"<fraction name="half">50.0%</fraction>"#]),
            ("values/ids.xml", [#"<item type="id" name="marker" />"#, #"<item type="id" name="fast" />"#]),
            ("values/drawables.xml", [#"<item type="drawable" name="solid" format="color">#ff000000</item>"#]),
            ("values/plurals.xml", [#"<item quantity="one">%d song</item>"#]),
            ("values/arrays.xml", [#"<string-array name="planets">"#, #"<item>It\'s \"Earth\"</item>"#, #"<integer-array name="primes">"#,
                                   #"<array name="mixed">"#, "<item>12.0dip</item>"]),
            ("values/attrs.xml", [#"<attr name="tint" format="reference|color" localization="suggested" />"#, #"<enum name="fast" value="1" />"#, #"<flag name="top" value="0x00000001" />"#]),
            ("values/styles.xml", [#"<style name="AppTheme" parent="@android:style/Theme.Material.Light">"#, #"<item name="android:gravity">left|center_vertical</item>"#,
                                   #"<item name="mode">fast</item>"#, #"<style name="Plain.Child" parent="">"#, #"<item name="edges">top|bottom</item>"#]),
            ("values-v21/styles.xml", [#"<item name="tint">@color/accent</item>"#]),
        ]
        for (path, lines) in expectations {
            let text = try Self.file(decoded + "/res/" + path)
            for line in lines { #expect(text.contains(line), "\(path): missing \(line) in\n\(text)") }
        }
    }

    /// Every value of framework-res (thousands of styles and attrs, 80 languages) decodes and re-applies unchanged:
    /// the table is written back byte for byte.
    @Test func frameworkValuesReapplyUnchanged() throws {
        let bytes = try Oracle.entry("resources.arsc", in: TestSupport.frameworkRes)
        var table = try ResourceTable(bytes: bytes)
        let files = table.valuesFiles()
        #expect(files.count > 50)
        #expect(files.contains { $0.directory == "values" && $0.fileName == "styles.xml" })
        let changed = try table.applyValuesFiles(files.map { ($0.directory, "res/\($0.directory)/\($0.fileName)", $0.text) })
        #expect(changed.isEmpty, "\(changed.prefix(10))")
        #expect(try table.encoded() == bytes)
        // An extra attribute on every resource makes each one differ as text, so each is compiled again: the
        // compiler must give back exactly the values in the table.
        let marked = files.map { file in
            (file.directory, "res/\(file.directory)/\(file.fileName)",
             file.text.replacingOccurrences(of: #"(?m)^    <([a-z-]+) "#, with: "    <$1 recompiled=\"1\" ", options: .regularExpression))
        }
        #expect(marked.contains { $0.2.contains("<style recompiled=\"1\" name=") })
        var recompiled = try ResourceTable(bytes: bytes)
        let differing = try recompiled.applyValuesFiles(marked)
        #expect(differing.isEmpty, "\(differing.count) differ: \(differing.prefix(20))")
        #expect(try recompiled.encoded() == bytes)
    }

    /// Changing and adding values of every kind: existing IDs stay, new names take the next free entry ID of their
    /// type, new types and configurations appear; aapt, apktool and apksigner read the result.
    @Test func changingAndAddingValues() throws {
        let dir = try TestSupport.makeTemporaryDirectory("values-edit")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        let before = try Oracle.aapt(["dump", "resources", apk])
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("""
            <resources>
                <bool name="enabled">false</bool>
                <bool name="fresh">true</bool>
                <integer name="retries">7</integer>
                <color name="accent">#ff112233</color>
                <color name="brand">@color/accent</color>
                <dimen name="margin">20dp</dimen>
                <dimen name="gutter">4dp</dimen>
                <item type="id" name="badge"/>
                <plurals name="songs"><item quantity="one">%d track</item><item quantity="other">%d tracks</item></plurals>
                <string-array name="planets"><item>Mercury</item><item>Mars</item></string-array>
                <integer-array name="squares"><item>1</item><item>4</item></integer-array>
                <attr name="mode"><enum name="fast" value="1"/><enum name="slow" value="2"/><enum name="warp" value="3"/></attr>
                <attr name="speed" format="integer" localization="suggested"/>
                <style name="AppTheme" parent="@android:style/Theme.Material.Light">
                    <item name="android:colorAccent">@color/brand</item>
                    <item name="android:windowNoTitle">false</item>
                    <item name="tint">#ff00ff00</item>
                    <item name="mode">warp</item>
                    <item name="speed">9</item>
                </style>
                <style name="Fresh.Theme" parent="AppTheme"><item name="android:textSize">20sp</item></style>
            </resources>
            """, to: "res/values/values.xml", in: patch)
        try TestSupport.write(#"<resources><bool name="fresh">false</bool><color name="brand">#ff0000ff</color></resources>"#, to: "res/values-de/bools.xml", in: patch)
        try TestSupport.write(#"<resources><color name="tone">#ff445566</color></resources>"#, to: "res/values-night/colors.xml", in: patch)
        try TestSupport.write("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res-auto"
                android:layout_width="match_parent" android:layout_height="wrap_content" app:tint="@color/brand" app:mode="warp" app:speed="12">
                <TextView android:id="@+android:id/text1" android:layout_width="wrap_content" android:layout_height="wrap_content" />
            </LinearLayout>
            """, to: "res/layout/main.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--json"])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        let after = try Oracle.aapt(["dump", "--values", "resources", out])
        for line in before.split(separator: "\n") where line.contains("spec resource") {
            #expect(after.contains(line), "ID changed: \(line)")
        }
        func id(_ name: String, in dump: String) -> UInt32? {
            Oracle.capture(#"resource 0x([0-9a-f]{8}) com\.example\.fixture:"# + NSRegularExpression.escapedPattern(for: name) + ":", in: dump)
                .flatMap { UInt32($0, radix: 16) }
        }
        // New names take the next free entry of their type.
        for (new, existing) in [("bool/fresh", "bool/enabled"), ("color/brand", "color/pale"), ("dimen/gutter", "dimen/ratio"),
                                ("array/squares", "array/primes"), ("attr/speed", "attr/edges")] {
            let type = new.split(separator: "/")[0]
            let last = before.split(separator: "\n").compactMap { line -> UInt32? in
                guard line.contains("spec resource"), line.contains(":\(type)/") else { return nil }
                return Oracle.capture("resource 0x([0-9a-f]{8})", in: String(line)).flatMap { UInt32($0, radix: 16) }
            }.max()
            #expect(id(new, in: after) == last.map { $0 + 1 }, "\(new) after \(existing): \(after)")
        }
        #expect(id("integer/retries", in: after) != nil && id("id/badge", in: after) != nil && id("id/warp", in: after) != nil)
        for expected in ["config de:", "(color) #ff112233", "(color) #ff0000ff", "(color) #ff445566", "(dimension) 20.000000dp", "\"%d track\"",
                         "\"Mars\"", "t=0x10 d=0x00000007", "(Key=0x7f010001): (color) #00000003"] {
            #expect(after.contains(expected), "missing \(expected) in\n\(after)")
        }
        // The new attr keeps localization="suggested" (ATTR_L10N), as the fixture's tint does.
        #expect(after.components(separatedBy: "(Key=0x01000003)").count == 3, "\(after)")
        // The layout's app: attributes resolve through the attr resources, the new one included.
        let layout = try Oracle.aapt(["dump", "xmltree", out, "res/layout/main.xml"])
        if let speed = id("attr/speed", in: after) {
            #expect(layout.contains("(0x\(String(speed, radix: 16)))=(type 0x10)0xc"), "\(layout)")
        }
        #expect(layout.contains("A: android:id(0x010100d0)=@0x01020014"), "\(layout)")
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        let res = decoded + "/res/"
        for (path, expected) in [("values/bools.xml", #"<bool name="fresh">true</bool>"#), ("values-de/bools.xml", #"<bool name="fresh">false</bool>"#),
                                 ("values/colors.xml", #"<color name="brand">@color/accent</color>"#), ("values-night-v8/colors.xml", "tone"),
                                 ("values/plurals.xml", "%d tracks"), ("values/arrays.xml", "Mars"), ("values/attrs.xml", #"<enum name="warp" value="3" />"#),
                                 ("values/styles.xml", #"<item name="speed">9</item>"#), ("values/styles.xml", #"<style name="Fresh.Theme" parent="@style/AppTheme">"#),
                                 ("layout/main.xml", #"app:speed="12""#)] {
            let text = (try? Self.file(res + path)) ?? ""
            #expect(text.contains(expected), "apktool \(path): missing \(expected) in\n\(text)")
        }
        // And our own decoder reads its own output back unchanged.
        try LosslessRoundTripTests.assertLossless(out, in: dir)
    }

    /// Style and attr edits with more than one meaning are refused with the reason; so is a new id in android's package.
    @Test(arguments: [
        ("res/values/attrs.xml", "<resources>\n<attr name=\"mode\"><enum name=\"fast\" value=\"5\"/><enum name=\"slow\" value=\"2\"/></attr></resources>", "res/values/attrs.xml:2: attr/mode changes fast from 1 to 5"),
        ("res/values/attrs.xml", "<resources>\n<attr name=\"tint\" format=\"reference\"/></resources>", "attr/tint drops format color"),
        ("res/values/styles.xml", "<resources>\n<style name=\"AppTheme\">\n<item name=\"nothing\">1</item></style></resources>", "res/values/styles.xml:3: style/AppTheme: 'nothing' is not an attribute"),
        ("res/layout/main.xml", "<View xmlns:android=\"http://schemas.android.com/apk/res/android\"\n android:id=\"@+android:id/brand_new\"/>", "res/layout/main.xml:2: @+android:id/brand_new: new ids can only be created in the app's own package"),
    ])
    func ambiguousEditsAreRefused(path: String, content: String, expected: String) throws {
        try ResourceAddingTests.assertRefused(Self.fixture(), patchFile: path, content: content, expected: expected)
    }

    /// Values files are parsed on all cores, yet of several bad files the first in order is the one named, as
    /// when they were read one after another: here the first fails only at its end, long after the second.
    @Test func ofSeveralBadValuesFilesTheFirstIsNamed() throws {
        let slow = "<resources>\n" + String(repeating: "<bool name=\"fine\">true</bool>\n", count: 40_000) + "<bool name=\"cut\">true</bool"
        let files = [("values", "res/values/a.xml", slow), ("values", "res/values/b.xml", "<resources><oops")]
        for _ in 0..<3 {
            var table = try ResourceTable.empty(packageName: "com.example.fixture")
            do {
                _ = try table.applyValuesFiles(files)
                Issue.record("bad values files were applied")
            } catch let error as ResourceTableError {
                #expect(error.message.contains("res/values/a.xml"), "\(error)")
            }
        }
        var table = try ResourceTable.empty(packageName: "com.example.fixture")
        do {
            _ = try table.applyValuesFiles([("values-xx-rYY-zz", "res/values-xx-rYY-zz/c.xml", "<resources/>"), files[1]])
            Issue.record("a bad folder was accepted")
        } catch let error as ResourceTableError {
            #expect(error.message.contains("res/values-xx-rYY-zz/c.xml"), "\(error)")
        }
    }
}
