import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// What a patch's values files declare beyond values, written as aapt2 writes it: new `<overlayable>` items
/// (`RES_TABLE_OVERLAYABLE` chunks), `<public>` and `<public-group>` (`SPEC_PUBLIC`, `FLAG_PUBLIC`, the IDs, for new
/// file resources too), and `@macro/name` in compiled res/ XML. Read back with Android's own loader (libandroidfw's
/// `LoadedArsc`, `Tests/Oracles/arsc-check.cc`), `aapt`, `aapt2`, `apktool d` and `apksigner verify`.
@Suite(.removesTemporaryDirectories) struct DeclarationsWritingTests {
    /// The oracle's lines for `apk`'s resources.arsc.
    static func loaded(_ apk: String, in dir: URL) throws -> [String] {
        let arsc = dir.appendingPathComponent("table-\(UUID().uuidString).arsc")
        try Data(try Oracle.entry("resources.arsc", in: apk)).write(to: arsc)
        let result = try TestSupport.libandroidfwTable(arsc.path)
        #expect(result.succeeded, "\(result)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// `type/name` by resource ID, from `aapt dump resources`.
    static func names(_ apk: String) throws -> [UInt32: String] {
        var names: [UInt32: String] = [:]
        for (name, id) in ValuesDeclarationsTests.ids(try Oracle.aapt(["dump", "resources", apk])) { names[id] = name }
        return names
    }

    /// The overlayable declarations libandroidfw reads, by resource name: `NAME actor=… policy=0x… type/name`.
    static func overlayables(_ apk: String, in dir: URL) throws -> [String] {
        let names = try Self.names(apk)
        return try loaded(apk, in: dir).compactMap { line -> String? in
            guard line.hasPrefix("overlayable-item "), let id = UInt32(line.split(separator: " ")[1].dropFirst(2), radix: 16) else { return nil }
            return line.split(separator: " ").dropFirst(2).joined(separator: " ") + " " + (names[id] ?? "?")
        }.sorted()
    }

    @Test func overlayablesAreWrittenAsAapt2Does() throws {
        let dir = try TestSupport.makeTemporaryDirectory("overlayable-written")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try StyledStringsTests.aapt2APK(values: """
            <resources>
                <bool name="dark">false</bool>
                <bool name="other">false</bool>
                <color name="accent">#ff0000ff</color>
                <overlayable name="Theme" actor="overlay://theme">
                    <policy type="public|system"><item type="bool" name="dark" /><item type="color" name="accent" /></policy>
                </overlayable>
            </resources>
            """, in: dir)
        let declarations = """
            <overlayable name="Theme" actor="overlay://theme">
                <policy type="public|system"><item type="bool" name="dark" /><item type="bool" name="added" /></policy>
                <policy type="signature"><item type="bool" name="other" /></policy>
            </overlayable>
            <overlayable name="Extra">
                <policy type="product|vendor"><item type="string" name="fresh" /></policy>
            </overlayable>
            """
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<resources>\(declarations)<bool name=\"added\">true</bool><string name=\"fresh\">new</string></resources>",
                              to: "res/values/overlayable.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }

        // What aapt2 itself builds from the same declarations (the APK's and the patch's together).
        let reference = try StyledStringsTests.aapt2APK(values: """
            <resources>
                <bool name="dark">false</bool>
                <bool name="other">false</bool>
                <color name="accent">#ff0000ff</color>
                <bool name="added">true</bool>
                <string name="fresh">new</string>
                <overlayable name="Theme" actor="overlay://theme">
                    <policy type="public|system"><item type="bool" name="dark" /><item type="color" name="accent" /><item type="bool" name="added" /></policy>
                    <policy type="signature"><item type="bool" name="other" /></policy>
                </overlayable>
                <overlayable name="Extra"><policy type="product|vendor"><item type="string" name="fresh" /></policy></overlayable>
            </resources>
            """, in: dir)
        let ours = try Self.overlayables(out, in: dir), aapt2s = try Self.overlayables(reference, in: dir)
        #expect(ours == aapt2s, "ours:\n\(ours.joined(separator: "\n"))\naapt2's:\n\(aapt2s.joined(separator: "\n"))")
        #expect(ours.count == 5, "\(ours)")
        let loaded = try Self.loaded(out, in: dir)
        #expect(loaded.contains("overlayable Extra actor=") && loaded.contains("overlayable Theme actor=overlay://theme"), "\(loaded)")
        // The chunks themselves, laid out as aapt2 lays them out: overlayables by name, policies by flags, IDs ascending.
        let hex = ValuesDeclarationsTests.hex
        let chunks = try Self.overlayableChunks(out).map { $0.map { "\(hex($0.policy)): \($0.ids.map(hex))" } }
        let aapt2Chunks = try Self.overlayableChunks(reference).map { chunk in
            try chunk.map { policy in "\(hex(policy.policy)): \(try policy.ids.map { try Self.translate($0, from: reference, to: out) }.sorted().map(hex))" }
        }
        #expect(chunks == aapt2Chunks)
        #expect(chunks.count == 2)
        let dump = try StyledStringsTests.aapt2Dump(out)
        #expect(StyledStringsTests.value("bool/added", in: dump) == "true", "\(dump)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        _ = try ResourceAddingTests.apktool(out, in: dir)

        // Given again, the same declarations change nothing.
        let again = dir.appendingPathComponent("again.apk").path
        let patch2 = dir.appendingPathComponent("patch2")
        try TestSupport.write("<resources>\(declarations)</resources>", to: "res/values/overlayable.xml", in: patch2)
        let same = try TestSupport.apkpatch(["run", out, "--patch", patch2.path, "--out", again, "--no-sign"])
        #expect(same.succeeded, "\(same)")
        #expect(try Oracle.entry("resources.arsc", in: again) == Oracle.entry("resources.arsc", in: out))
    }

    /// Per `RES_TABLE_OVERLAYABLE_TYPE` chunk of the first package, in file order: (policy flags, IDs) per policy
    /// chunk; each chunk's header sizes are checked on the way (1,032 and 16 bytes, as aapt2 writes them).
    static func overlayableChunks(_ apk: String) throws -> [[(policy: UInt32, ids: [UInt32])]] {
        let bytes = try Oracle.entry("resources.arsc", in: apk)
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
        var offset = u16(2)
        while u16(offset) != 0x0200 { offset += Int(u32(offset + 4)) }
        let packageEnd = offset + Int(u32(offset + 4))
        offset += u16(offset + 2)
        var chunks: [[(policy: UInt32, ids: [UInt32])]] = []
        while offset < packageEnd {
            let size = Int(u32(offset + 4))
            if u16(offset) == 0x0204 {
                #expect(u16(offset + 2) == 1032)
                var policies: [(policy: UInt32, ids: [UInt32])] = []
                var inner = offset + 1032
                while inner < offset + size {
                    #expect(u16(inner) == 0x0205 && u16(inner + 2) == 16)
                    let count = Int(u32(inner + 12))
                    policies.append((u32(inner + 8), (0..<count).map { u32(inner + 16 + 4 * $0) }))
                    inner += Int(u32(inner + 4))
                }
                chunks.append(policies)
            }
            offset += size
        }
        return chunks
    }

    /// The ID in `to` of the resource that has `id` in `from` (by name).
    static func translate(_ id: UInt32, from: String, to: String) throws -> UInt32 {
        let name = try #require(try names(from)[id])
        return try #require(try names(to).first { $0.value == name }?.key)
    }

    @Test func overlayableRefusals() throws {
        let dir = try TestSupport.makeTemporaryDirectory("overlayable-refused")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try StyledStringsTests.aapt2APK(values: """
            <resources>
                <bool name="dark">false</bool>
                <overlayable name="Theme" actor="overlay://theme"><policy type="public"><item type="bool" name="dark" /></policy></overlayable>
            </resources>
            """, in: dir)
        let cases: [(String, String)] = [
            ("<resources>\n<overlayable name=\"Theme\"><policy type=\"public\"><item type=\"bool\" name=\"dark\"/></policy></overlayable></resources>",
             "res/values/o.xml:2: the APK's overlayable \"Theme\" has actor \"overlay://theme\", not \"\""),
            ("<resources>\n<overlayable name=\"Other\">\n<policy type=\"system\">\n<item type=\"bool\" name=\"dark\"/></policy></overlayable></resources>",
             "res/values/o.xml:4: bool/dark is already overlayable in the APK's \"Theme\" under policy public"),
            ("<resources><bool name=\"b\">true</bool>\n<overlayable name=\"O\"><policy type=\"public\"><item type=\"bool\" name=\"b\"/>\n<item type=\"bool\" name=\"b\"/></policy></overlayable></resources>",
             "res/values/o.xml:3: bool/b is already declared overlayable at res/values/o.xml:2"),
            ("<resources>\n<overlayable name=\"O\"><policy type=\"public\"><item type=\"bool\" name=\"nothing\"/></policy></overlayable></resources>",
             "res/values/o.xml:2: <overlayable> names bool/nothing, which neither the APK nor the patch's values files define"),
        ]
        for (content, expected) in cases {
            let patch = dir.appendingPathComponent("patch-\(UUID().uuidString)")
            try TestSupport.write(content, to: "res/values/o.xml", in: patch)
            let out = dir.appendingPathComponent("out-\(UUID().uuidString).apk").path
            let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--no-sign"])
            #expect(!result.succeeded && result.stderr.contains(expected), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    @Test func publicDeclarationsSetTheFlagsAapt2Sets() throws {
        let dir = try TestSupport.makeTemporaryDirectory("public-flags")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fixture = ValuesResourcesTests.fixture()
        let apk = try fixture.build(in: dir)
        let before = try Oracle.aapt(["dump", "resources", apk])
        let ids = ValuesDeclarationsTests.ids(before)
        let enabled = try #require(ids["bool/enabled"]), count = try #require(ids["integer/count"])
        let fresh = enabled & 0xFFFF_0000 | 0x20, groupStart = count & 0xFFFF_0000 | 0x10
        // A new drawable type gets the next type ID; its public ID leaves entries 0 and 1 empty.
        let drawableType = try #require(ids.values.map { ($0 >> 16) & 0xFF }.max()) + 1
        let badge = 0x7f00_0000 | drawableType << 16 | 0x2
        let existingDrawable = ids["drawable/solid"]
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("""
            <resources>
                <bool name="fresh">true</bool>
                <integer name="g1">1</integer>
                <integer name="g2">2</integer>
                <public type="bool" name="fresh" id="\(ValuesDeclarationsTests.hex(fresh))" />
                <public type="color" name="accent" />
                <public-group type="integer" first-id="\(ValuesDeclarationsTests.hex(groupStart))">
                    <public name="g1" />
                    <public name="g2" />
                </public-group>
                <public type="drawable" name="badge" id="\(ValuesDeclarationsTests.hex(existingDrawable.map { $0 & 0xFFFF_0000 | 0x9 } ?? badge))" />
            </resources>
            """, to: "res/values/public.xml", in: patch)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 64, seed: 3), to: "res/drawable/badge.png", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        let badgeID = existingDrawable.map { $0 & 0xFFFF_0000 | 0x9 } ?? badge
        let after = try Oracle.aapt(["dump", "--values", "resources", out])
        let afterIDs = ValuesDeclarationsTests.ids(after)
        #expect(afterIDs["bool/fresh"] == fresh && afterIDs["integer/g1"] == groupStart && afterIDs["integer/g2"] == groupStart + 1
                && afterIDs["drawable/badge"] == badgeID, "\(after)")
        #expect(after.contains(#"(string8) "res/drawable/badge.png""#), "\(after)")
        let publicNames: Set = ["bool/fresh", "color/accent", "integer/g1", "integer/g2", "drawable/badge"]
        for line in after.split(separator: "\n") where line.contains("spec resource 0x") {
            let name = try #require(Oracle.capture(#"resource 0x[0-9a-f]{8} [^:]+:([^:]+):"#, in: String(line)))
            let flags = try #require(Oracle.capture("flags=0x([0-9a-f]{8})", in: String(line)).flatMap { UInt32($0, radix: 16) })
            #expect((flags & 0x4000_0000 != 0) == publicNames.contains(name), "\(line)")
        }
        // Every other resource keeps its ID and flags.
        for line in before.split(separator: "\n") where line.contains("spec resource") && !line.contains(":color/accent:") {
            #expect(after.contains(line), "changed: \(line)")
        }
        // libandroidfw: SPEC_PUBLIC in the typeSpec and FLAG_PUBLIC in each entry (every configuration), as aapt2
        // writes a public resource (its own build of `<public>` below).
        let loaded = try Self.loaded(out, in: dir)
        for id in [fresh, groupStart, groupStart + 1, badgeID, try #require(ids["color/accent"])] as [UInt32] {
            let line = try #require(loaded.first { $0.hasPrefix("resource \(ValuesDeclarationsTests.hex(id)) ") }, "\(loaded)")
            #expect(Oracle.capture("spec=0x([0-9a-f]{8})", in: line).flatMap { UInt32($0, radix: 16) }.map { $0 & 0x4000_0000 != 0 } == true, "\(line)")
            let flags = line.components(separatedBy: "entries=")[1].split(separator: ",")
            #expect(!flags.isEmpty && flags.allSatisfy { UInt16($0.dropFirst(2), radix: 16).map { $0 & 0x0002 != 0 } == true }, "\(line)")
        }
        let accent = try #require(ids["color/accent"])
        let accentLine = try #require(loaded.first { $0.hasPrefix("resource \(ValuesDeclarationsTests.hex(accent)) ") })
        #expect(accentLine.hasSuffix("entries=0x0002,0x0002"), "both configurations of color/accent: \(accentLine)")
        let aapt2Built = try StyledStringsTests.aapt2APK(values: #"<resources><bool name="x">true</bool><public type="bool" name="x" id="0x7f010000"/></resources>"#, in: dir)
        #expect(try Self.loaded(aapt2Built, in: dir).contains("resource 0x7f010000 spec=0x40000000 entries=0x0002"))
        let dump = try StyledStringsTests.aapt2Dump(out)
        #expect(dump.contains("bool/fresh PUBLIC") && dump.contains("integer/g2 PUBLIC") && dump.contains("drawable/badge PUBLIC"), "\(dump)")
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        let publics = try String(contentsOfFile: decoded + "/res/values/public.xml", encoding: .utf8)
        #expect(publics.contains(#"<public type="integer" name="g2" id="\#(ValuesDeclarationsTests.hex(groupStart + 1))" />"#), "\(publics)")
        #expect(FileManager.default.fileExists(atPath: decoded + "/res/drawable/badge.png"))
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)

        // Declaring public what already is changes nothing.
        let patch2 = dir.appendingPathComponent("patch2")
        try TestSupport.write(#"<resources><public type="bool" name="fresh" id="\#(ValuesDeclarationsTests.hex(fresh))" /><public type="color" name="accent" /></resources>"#,
                              to: "res/values/public.xml", in: patch2)
        let again = dir.appendingPathComponent("again.apk").path
        #expect(try TestSupport.apkpatch(["run", out, "--patch", patch2.path, "--out", again, "--no-sign"]).succeeded)
        #expect(try Oracle.entry("resources.arsc", in: again) == Oracle.entry("resources.arsc", in: out))
    }

    @Test func macrosInCompiledXML() throws {
        let dir = try TestSupport.makeTemporaryDirectory("macro-xml")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fixture = FixtureAPK()
        let apk = try fixture.build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("""
            <resources>
                <macro name="pad">16dp</macro>
                <macro name="padding">@macro/pad</macro>
                <macro name="hello">Hello macro</macro>
                <macro name="label">@string/greeting</macro>
                <macro name="styled">Hi <b>there</b></macro>
                <string name="greeting">Hi</string>
            </resources>
            """, to: "res/values/macros.xml", in: patch)
        try TestSupport.write("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="match_parent"
                android:layout_height="wrap_content" android:padding="@macro/padding">
                <TextView android:text="@macro/hello" android:contentDescription="@macro/label" android:tag=" @macro/pad ">@macro/pad</TextView>
            </LinearLayout>
            """, to: "res/layout/macro.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        let tree = try Oracle.aapt(["dump", "xmltree", out, "res/layout/macro.xml"])
        let greeting = try #require(ValuesDeclarationsTests.ids(try Oracle.aapt(["dump", "resources", out]))["string/greeting"])
        for expected in ["A: android:padding(0x010100d5)=(type 0x5)0x1001", #"A: android:text(0x0101014f)="Hello macro" (Raw: "Hello macro")"#,
                         "A: android:contentDescription(0x01010273)=@\(ValuesDeclarationsTests.hex(greeting))",
                         "A: android:tag(0x010100d1)=\"16dp\"",
                         // Element text is not a reference: aapt2 keeps it as written.
                         #"C: "@macro/pad""#] {
            #expect(tree.contains(expected), "missing \(expected) in\n\(tree)")
        }
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        let layout = try String(contentsOfFile: decoded + "/res/layout/macro.xml", encoding: .utf8)
        #expect(layout.contains(#"android:padding="16.0dip""#) && layout.contains(#"android:text="Hello macro""#), "\(layout)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)

        try ResourceAddingTests.assertRefused(fixture, patchFile: "res/layout/m.xml",
            content: "<View xmlns:android=\"http://schemas.android.com/apk/res/android\"\n android:padding=\"@macro/nowhere\"/>",
            expected: "res/layout/m.xml:2: android:padding=\"@macro/nowhere\": no <macro name=\"nowhere\"> in the patch's values files")
        try ResourceAddingTests.assertRefused(fixture, patchFile: "res/layout/m.xml",
            content: "<TextView xmlns:android=\"http://schemas.android.com/apk/res/android\"\n android:text=\"@macro/styled\"/>",
            otherFiles: ["res/values/macros.xml": "<resources><macro name=\"styled\">Hi <b>there</b></macro></resources>"],
            expected: "res/layout/m.xml:2: android:text=\"@macro/styled\": macro/styled holds markup")
        try ResourceAddingTests.assertRefused(fixture, patchFile: "res/layout/m.xml",
            content: "<View xmlns:android=\"http://schemas.android.com/apk/res/android\"\n android:padding=\"@macro/word\"/>",
            otherFiles: ["res/values/macros.xml": "<resources><macro name=\"word\">wide</macro></resources>"],
            expected: "res/layout/m.xml:2: android:padding=\"wide\" is not a valid value")
    }

    /// `@package:macro/name`: the package as written or through a prefix declared for it (aapt2's
    /// `ResolvePackage`: `res/<package>`, `prv/res/<package>`, `res-auto` for the app's own). The app's own macros
    /// compile as `@macro/name` does; another package's (the framework's included) cannot, since macros are not
    /// stored in APKs and aapt2 looks them up in the table it builds: refused naming file and line, as aapt2 fails.
    @Test func macrosOfAPackage() throws {
        let dir = try TestSupport.makeTemporaryDirectory("macro-package")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fixture = FixtureAPK()
        let apk = try fixture.build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        let macros = #"<macro name="pad">16dp</macro><macro name="hello">Hello macro</macro><string name="greeting">Hi</string>"#
        try TestSupport.write("""
            <resources>\(macros)
                <dimen name="literal">@com.example.fixture:macro/pad</dimen>
                <dimen name="private">@*macro/pad</dimen>
            </resources>
            """, to: "res/values/macros.xml", in: patch)
        try TestSupport.write("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res-auto"
                xmlns:me="http://schemas.android.com/apk/res/com.example.fixture" android:layout_width="match_parent"
                android:layout_height="wrap_content" android:padding="@app:macro/pad">
                <TextView android:text="@me:macro/hello" android:contentDescription="@app:string/greeting" android:paddingTop="@*com.example.fixture:macro/pad" />
            </LinearLayout>
            """, to: "res/layout/macro.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--no-sign"])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        let tree = try Oracle.aapt(["dump", "xmltree", out, "res/layout/macro.xml"])
        let greeting = try #require(ValuesDeclarationsTests.ids(try Oracle.aapt(["dump", "resources", out]))["string/greeting"])
        for expected in ["A: android:padding(0x010100d5)=(type 0x5)0x1001", #"A: android:text(0x0101014f)="Hello macro" (Raw: "Hello macro")"#,
                         "A: android:paddingTop(0x010100d7)=(type 0x5)0x1001",
                         "A: android:contentDescription(0x01010273)=@\(ValuesDeclarationsTests.hex(greeting))"] {
            #expect(tree.contains(expected), "missing \(expected) in\n\(tree)")
        }
        let values = try Oracle.aapt(["dump", "--values", "resources", out])
        for name in ["literal", "private"] {
            #expect(values.contains("dimen/\(name): t=0x05 d=0x00001001"), "dimen/\(name) in\n\(values)")
        }

        let layout = { (attribute: String) in
            "<View xmlns:android=\"http://schemas.android.com/apk/res/android\" xmlns:lib=\"http://schemas.android.com/apk/res/com.lib\"\n \(attribute)/>"
        }
        let ownMacros = ["res/values/macros.xml": "<resources><macro name=\"pad\">16dp</macro></resources>"]
        for (attribute, package) in [("android:padding=\"@android:macro/pad\"", "android"), ("android:padding=\"@lib:macro/pad\"", "com.lib"),
                                     ("android:padding=\"@*com.other:macro/pad\"", "com.other")] {
            try ResourceAddingTests.assertRefused(fixture, patchFile: "res/layout/m.xml", content: layout(attribute), otherFiles: ownMacros,
                expected: "res/layout/m.xml:2: \(attribute): macro/pad of package \(package) cannot be used: macros are compiled away, not stored in APKs")
        }
        try ResourceAddingTests.assertRefused(fixture, patchFile: "res/values/v.xml",
            content: "<resources><macro name=\"pad\">16dp</macro>\n<dimen name=\"d\">@android:macro/pad</dimen></resources>",
            expected: "res/values/v.xml:2: @android:macro/pad: macro/pad of package android cannot be used")
    }
}
