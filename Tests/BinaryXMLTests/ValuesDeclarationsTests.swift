import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// `<public>`, `<java-symbol>`, `<macro>` and `<overlayable>` in a patch's values files, as aapt2 reads them: a
/// declaration the APK already matches changes nothing, a new public ID is given when it is free, macros are
/// substituted, and what cannot be done is refused with the reason (file and line), leaving no output.
@Suite(.removesTemporaryDirectories) struct ValuesDeclarationsTests {
    /// `spec resource 0x… pkg:type/name` IDs of `aapt dump resources`.
    static func ids(_ dump: String) -> [String: UInt32] {
        var ids: [String: UInt32] = [:]
        for line in dump.split(separator: "\n") where line.contains("spec resource 0x") {
            guard let id = Oracle.capture("resource 0x([0-9a-f]{8})", in: String(line)).flatMap({ UInt32($0, radix: 16) }),
                  let name = Oracle.capture(#"resource 0x[0-9a-f]{8} [^:]+:([^:]+):"#, in: String(line)) else { continue }
            ids[name] = id
        }
        return ids
    }

    static func hex(_ id: UInt32) -> String { "0x" + String(format: "%08x", id) }

    @Test func declarationsApplyAsAapt2Reads() throws {
        let dir = try TestSupport.makeTemporaryDirectory("values-declarations")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try ValuesResourcesTests.fixture().build(in: dir)
        let before = try Oracle.aapt(["dump", "resources", apk])
        let ids = Self.ids(before)
        let enabled = try #require(ids["bool/enabled"])
        let freshID = enabled & 0xFFFF_0000 | 0x10  // past the type's last entry: the IDs between stay empty

        // Declarations the APK already matches change nothing, byte for byte.
        let same = dir.appendingPathComponent("same")
        try TestSupport.write("""
            <resources>
                <java-symbol type="string" name="app_name" />
                <symbol type="bool" name="enabled" />
            </resources>
            """, to: "res/values/public.xml", in: same)
        let sameOut = dir.appendingPathComponent("same.apk").path
        let unchanged = try TestSupport.apkpatch(["run", apk, "--patch", same.path, "--out", sameOut, "--no-sign"])
        #expect(unchanged.succeeded, "\(unchanged)")
        #expect(try Oracle.entry("resources.arsc", in: sameOut) == Oracle.entry("resources.arsc", in: apk))

        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("""
            <resources>
                <macro name="brand_color">#ff123456</macro>
                <macro name="alias">@macro/brand_color</macro>
                <macro name="greeting">Hello <b>macro</b></macro>
                <color name="brand">@macro/alias</color>
                <string name="hello">@macro/greeting</string>
                <string-array name="planets"><item>@macro/greeting</item><item>Mars</item></string-array>
                <bool name="fresh">true</bool>
                <bool name="later">false</bool>
                <public type="bool" name="fresh" id="\(Self.hex(freshID))" />
                <public type="bool" name="enabled" />
            </resources>
            """, to: "res/values/values.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        let after = try Oracle.aapt(["dump", "--values", "resources", out])
        // bool/enabled became public (its flags change); every other resource is as it was.
        for line in before.split(separator: "\n") where line.contains("spec resource") && !line.contains(":bool/enabled:") {
            #expect(after.contains(line), "ID changed: \(line)")
        }
        #expect(after.contains(":bool/enabled: flags=0x40000004"), "\(after)")  // public, and varying by locale as before
        let afterIDs = Self.ids(after)
        #expect(afterIDs["bool/fresh"] == freshID, "\(after)")
        #expect(afterIDs["bool/later"] == freshID + 1, "a name without a public ID follows: \(after)")
        #expect(after.contains("(color) #ff123456"), "\(after)")
        let styled = try StyledStringsTests.aapt2Dump(out)
        #expect(StyledStringsTests.value("string/hello", in: styled) == #"(styled string) "Hello macro" b:6,10"#, "\(styled)")
        #expect(styled.contains(#"[(styled string) "Hello macro" b:6,10, "Mars"]"#), "\(styled)")
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        let bools = try String(contentsOfFile: decoded + "/res/values/bools.xml", encoding: .utf8)
        #expect(bools.contains(#"<bool name="fresh">true</bool>"#), "\(bools)")
        let publics = try String(contentsOfFile: decoded + "/res/values/public.xml", encoding: .utf8)
        #expect(publics.contains(#"<public type="bool" name="fresh" id="\#(Self.hex(freshID))" />"#), "\(publics)")
    }

    /// What aapt2 would refuse, or what would change an existing ID, is refused with the file and line.
    @Test func refusals() throws {
        let dir = try TestSupport.makeTemporaryDirectory("values-declarations-refused")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fixture = ValuesResourcesTests.fixture()
        let ids = Self.ids(try Oracle.aapt(["dump", "resources", try fixture.build(in: dir)]))
        let enabled = try #require(ids["bool/enabled"]), accent = try #require(ids["color/accent"])
        let cases: [(String, String, String)] = [
            ("res/values/public.xml", "<resources>\n<public type=\"bool\" name=\"enabled\" id=\"\(Self.hex(enabled + 7))\"/></resources>",
             "res/values/public.xml:2: <public> gives bool/enabled the ID \(Self.hex(enabled + 7)), but it has \(Self.hex(enabled)); the IDs of existing resources never change"),
            ("res/values/public.xml", "<resources>\n<public type=\"bool\" name=\"nothing\"/></resources>",
             "res/values/public.xml:2: <public> declares bool/nothing, which neither the APK nor the patch's values files define"),
            ("res/values/public.xml", "<resources><bool name=\"x\">true</bool>\n<public type=\"bool\" name=\"x\" id=\"\(Self.hex(accent | 0x20))\"/></resources>",
             "res/values/public.xml:2: ID \(Self.hex(accent | 0x20)) is outside type bool's IDs"),
            ("res/values/public.xml", "<resources><bool name=\"x\">true</bool>\n<public type=\"bool\" name=\"x\" id=\"\(Self.hex(enabled))\"/></resources>",
             "res/values/public.xml:2: ID \(Self.hex(enabled)) is already bool/enabled's"),
            ("res/values/public.xml", "<resources><bool name=\"x\">true</bool>\n<public type=\"bool\" name=\"x\" id=\"7f\"/></resources>",
             "res/values/public.xml:2: '7f' is not a resource ID"),
            ("res/values/public.xml", "<resources><bool name=\"a\">true</bool><public-group type=\"bool\" first-id=\"\(Self.hex(enabled))\">\n<public name=\"a\" id=\"0x7f010000\"/></public-group></resources>",
             "res/values/public.xml:2: id=\"…\" is not allowed inside a <public-group>"),
            ("res/values/public.xml", "<resources><bool name=\"a\">true</bool><public-group type=\"bool\" first-id=\"\(Self.hex(enabled))\">\n<public name=\"a\"/></public-group></resources>",
             "res/values/public.xml:2: ID \(Self.hex(enabled)) is already bool/enabled's"),
            ("res/values/public.xml", "<resources>\n<staging-public-group type=\"bool\" first-id=\"0x7f050000\"/></resources>",
             "res/values/public.xml:2: <staging-public-group> stages framework API IDs"),
            ("res/values-fr/macros.xml", "<resources>\n<macro name=\"m\">x</macro></resources>", "res/values-fr/macros.xml:2: <macro> is only allowed in res/values/"),
            ("res/values/macros.xml", "<resources>\n<string name=\"s\">@macro/nothing</string></resources>",
             "res/values/macros.xml:2: @macro/nothing: no <macro name=\"nothing\"> in the patch's values files"),
            ("res/values/macros.xml", "<resources>\n<macro name=\"a\">@macro/b</macro>\n<macro name=\"b\">@macro/a</macro><string name=\"s\">@macro/a</string></resources>",
             "macro/a refers to itself (a -> b -> a)"),
            ("res/values/overlay.xml", "<resources>\n<overlayable name=\"Theme\"><policy type=\"public\"><item type=\"bool\" name=\"nothing\"/></policy></overlayable></resources>",
             "res/values/overlay.xml:2: <overlayable> names bool/nothing, which neither the APK nor the patch's values files define"),
            ("res/values/overlay.xml", "<resources>\n<overlayable name=\"Theme\"><policy type=\"everyone\"/></overlayable></resources>",
             "res/values/overlay.xml:2: 'everyone' is not a policy"),
        ]
        for (path, content, expected) in cases { try ResourceAddingTests.assertRefused(fixture, patchFile: path, content: content, expected: expected) }
    }

    /// An `<overlayable>` the APK declares (aapt2 wrote its RES_TABLE_OVERLAYABLE chunk) is accepted unchanged;
    /// moving one of its resources to another policy is refused, naming the item.
    @Test func overlayableMatchingTheAPK() throws {
        let dir = try TestSupport.makeTemporaryDirectory("values-overlayable")
        defer { try? FileManager.default.removeItem(at: dir) }
        let declaration = """
            <overlayable name="Theme" actor="overlay://theme">
                <policy type="public|system"><item type="bool" name="dark" /><item type="color" name="accent" /></policy>
            </overlayable>
            """
        let apk = try StyledStringsTests.aapt2APK(values: """
            <resources>
                <bool name="dark">false</bool>
                <bool name="other">false</bool>
                <color name="accent">#ff0000ff</color>
                \(declaration)
            </resources>
            """, in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<resources>\(declaration)<bool name=\"dark\">true</bool></resources>", to: "res/values/values.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--no-sign"])
        #expect(result.succeeded, "\(result)")
        let dump = try StyledStringsTests.aapt2Dump(out)
        #expect(StyledStringsTests.value("bool/dark", in: dump) == "true", "\(dump)")
        // The overlayable chunk aapt2 wrote is still there (aapt2 2.19's dump does not show it).
        let actor = Array("overlay://theme".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        for table in [try Oracle.entry("resources.arsc", in: apk), try Oracle.entry("resources.arsc", in: out)] {
            #expect(table.indices.dropLast(actor.count).contains { Array(table[$0..<($0 + actor.count)]) == actor })
        }
        // Moving one of its resources to another policy is refused, naming the item.
        let moving = dir.appendingPathComponent("moving")
        try TestSupport.write("<resources>\n<overlayable name=\"Theme\" actor=\"overlay://theme\">\n<policy type=\"signature\">\n<item type=\"bool\" name=\"dark\"/></policy></overlayable></resources>",
                              to: "res/values/overlay.xml", in: moving)
        let refusedOut = dir.appendingPathComponent("refused.apk").path
        let refused = try TestSupport.apkpatch(["run", apk, "--patch", moving.path, "--out", refusedOut, "--no-sign"])
        #expect(!refused.succeeded && refused.stderr.contains("res/values/overlay.xml:4: bool/dark is already overlayable in the APK's \"Theme\" under policy public|system"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: refusedOut))
    }
}
