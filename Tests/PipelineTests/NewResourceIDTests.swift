import APKCore
import Foundation
import Testing
import TestSupport

/// Resources a patch adds take IDs the APK's compiled XML does not already refer to (issue 19, "Outputs that
/// install"; the brief's "adding resources"). Compiled XML keeps the raw IDs it was built against: a manifest whose
/// table is gone (apksig's AndroidManifest_ShortName.apk has references and no resources.arsc at all), or a table
/// that lost resources, leaves references that a new resource with the same ID would silently answer, so the
/// launcher would show a colour as the app's label. `run` skips those IDs (the slots stay empty, as aapt2 leaves
/// the gaps `<public>` makes). Checked with `aapt dump resources` and `aapt dump xmltree` (Android's ResTable and
/// ResXMLTree) and libandroidfw's loader (`Tests/Oracles/arsc-check.cc --strict`).
@Suite(.removesTemporaryDirectories) struct NewResourceIDTests {
    /// Values of six types, so that new types reach the type IDs AndroidManifest_ShortName.apk's manifest uses
    /// (0x7f02…, 0x7f04…, 0x7f06…).
    static let values = """
        <resources>
          <string name="greeting">Hello</string>
          <color name="c0">#ff000000</color><color name="c1">#ff000001</color><color name="c2">#ff000002</color>
          <color name="c3">#ff000003</color><color name="c4">#ff000004</color>
          <dimen name="gap">4dp</dimen>
          <bool name="flag">true</bool>
          <integer name="count">3</integer>
          <item type="id" name="marker"/>
          <fraction name="half">50%</fraction>
        </resources>
        """

    /// The resource IDs `aapt dump xmltree` shows `file` of `apk` referring to (`@0x…` and `?0x…`).
    static func references(in apk: String, file: String) throws -> Set<UInt32> {
        let dump = try TestSupport.run("aapt", ["dump", "xmltree", apk, file])
        try #require(dump.succeeded, "\(dump)")
        return Set(dump.stdout.matches(of: /[@?]0x([0-9a-f]{8})/).compactMap { UInt32($0.1, radix: 16) })
    }

    /// The IDs `aapt dump resources` lists a resource (a name) for.
    static func definedIDs(in apk: String) throws -> [UInt32: String] {
        let dump = try TestSupport.run("aapt", ["dump", "resources", apk])
        try #require(dump.succeeded, "\(dump)")
        var ids: [UInt32: String] = [:]
        for match in dump.stdout.matches(of: /spec resource 0x([0-9a-f]{8}) ([^:]+:[^:]+):/) {
            if let id = UInt32(match.1, radix: 16) { ids[id] = String(match.2) }
        }
        return ids
    }

    func patch(in dir: URL, values: String) throws -> String {
        let patch = dir.appendingPathComponent("patch")
        try FileManager.default.createDirectory(at: patch.appendingPathComponent("res/values"), withIntermediateDirectories: true)
        try Data(values.utf8).write(to: patch.appendingPathComponent("res/values/added.xml"))
        return patch.path
    }

    /// AndroidManifest_ShortName.apk (apksig's test data): a manifest referring to 0x7f060000 (label), 0x7f020003
    /// (icon) and 0x7f040000 (wallpaper meta-data) and no resources.arsc. A patch adding values makes a new table;
    /// none of its resources takes one of those IDs, and the manifest still refers to them, now to nothing.
    @Test func aManifestWithoutItsTableKeepsItsReferencesDangling() throws {
        let input = try RealWorldCorpus.apk(named: "AndroidManifest_ShortName.apk").fetchedPath()
        let dir = try TestSupport.makeTemporaryDirectory("new-ids-shortname")
        defer { try? FileManager.default.removeItem(at: dir) }
        let referenced = try Self.references(in: input, file: "AndroidManifest.xml").filter { $0 >> 24 == 0x7f }
        try #require(referenced == [0x7f06_0000, 0x7f02_0003, 0x7f04_0000], "\(referenced)")

        let output = dir.appendingPathComponent("patched.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", try patch(in: dir, values: Self.values),
                                            "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", output])
        #expect(run.succeeded, "\(run)")
        let defined = try Self.definedIDs(in: output)
        #expect(defined.count == 11, "every added resource is in the table: \(defined)")
        let taken = referenced.filter { defined[$0] != nil }.map { "0x\(String($0, radix: 16)) → \(defined[$0]!)" }
        #expect(taken.isEmpty, "new resources took IDs the manifest refers to: \(taken)")
        #expect(try Self.references(in: output, file: "AndroidManifest.xml").filter { $0 >> 24 == 0x7f } == referenced)
        let table = dir.appendingPathComponent("resources.arsc").path
        #expect(try TestSupport.run("sh", ["-c", "unzip -p \"$1\" resources.arsc > \"$2\"", "sh", output, table]).succeeded)
        let strict = try TestSupport.libandroidfwTable(table, strict: true)
        #expect(strict.succeeded && strict.stdout == "OK\n", "\(strict)")
    }

    /// An aapt2-built APK whose table lost resources its res/xml file refers to (the table of a build with two of
    /// its five colours): the colours a patch adds skip the ID that file still holds, and the table loads.
    /// The file is found by its name's bytes: also as "res/xml/prefs\u{600}.xml" (an obfuscator's name, where a
    /// Prepend mark joins the dot of ".xml" in a Character).
    @Test(arguments: ["res/xml/prefs.xml", "res/xml/prefs\u{600}.xml"])
    func anXMLFileKeepsItsReferenceToAResourceTheTableLacks(xmlName: String) throws {
        let dir = try TestSupport.makeTemporaryDirectory("new-ids-aapt2")
        defer { try? FileManager.default.removeItem(at: dir) }
        func build(_ name: String, colors: Int, preferenceIcon: String) throws -> String {
            let res = dir.appendingPathComponent("\(name)/res")
            for folder in ["values", "xml"] {
                try FileManager.default.createDirectory(at: res.appendingPathComponent(folder), withIntermediateDirectories: true)
            }
            let colorValues = (0..<colors).map { "<color name=\"c\($0)\">#ff00000\($0)</color>" }.joined()
            try Data("<resources><string name=\"app_name\">IDs</string>\(colorValues)</resources>".utf8)
                .write(to: res.appendingPathComponent("values/values.xml"))
            try Data("""
                <PreferenceScreen xmlns:android="http://schemas.android.com/apk/res/android">
                  <Preference android:title="@string/app_name" android:icon="\(preferenceIcon)"/>
                </PreferenceScreen>
                """.utf8).write(to: res.appendingPathComponent("xml/prefs.xml"))
            let manifest = dir.appendingPathComponent("\(name)/AndroidManifest.xml")
            try Data("""
                <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.ids">
                  <uses-sdk android:minSdkVersion="21" android:targetSdkVersion="29"/>
                  <application android:label="@string/app_name"/>
                </manifest>
                """.utf8).write(to: manifest)
            let compiled = dir.appendingPathComponent("\(name)/compiled.zip").path
            let compile = try TestSupport.run("aapt2", ["compile", "--dir", res.path, "-o", compiled])
            try #require(compile.succeeded, "\(compile)")
            let apk = dir.appendingPathComponent("\(name).apk").path
            let link = try TestSupport.run("aapt2", ["link", "-o", apk, "-I", TestSupport.frameworkRes, "--manifest", manifest.path, compiled])
            try #require(link.succeeded, "\(link)")
            return apk
        }
        let full = try build("full", colors: 5, preferenceIcon: "@color/c4")
        let partial = try build("partial", colors: 2, preferenceIcon: "@color/c1")
        let table = dir.appendingPathComponent("partial-table")
        try FileManager.default.createDirectory(at: table, withIntermediateDirectories: true)
        let input = dir.appendingPathComponent("input.apk").path
        let transplant = try TestSupport.run("sh", ["-c", "cp \"$1\" \"$3\" && cd \"$4\" && unzip -q \"$2\" resources.arsc && zip -q -0 \"$3\" resources.arsc",
                                                    "sh", full, partial, input, table.path])
        try #require(transplant.succeeded, "\(transplant)")
        if xmlName != "res/xml/prefs.xml" {
            let python = """
                import os, sys, zipfile
                os.rename(sys.argv[1], sys.argv[1] + '.old')
                with zipfile.ZipFile(sys.argv[1] + '.old') as old, zipfile.ZipFile(sys.argv[1], 'w') as new:
                    for info in old.infolist():
                        name = 'res/xml/prefs\\u0600.xml' if info.filename == 'res/xml/prefs.xml' else info.filename
                        new.writestr(zipfile.ZipInfo(name, info.date_time), old.read(info.filename), compress_type=info.compress_type)
                """
            let renamed = try TestSupport.run("python3", ["-c", python, input])
            try #require(renamed.succeeded, "\(renamed)")
        }
        let inputDefined = try Self.definedIDs(in: input)
        let dangling = try Self.references(in: input, file: xmlName).filter { $0 >> 24 == 0x7f && inputDefined[$0] == nil }
        try #require(dangling.count == 1 && dangling.first! & 0xFFFF == 4, "res/xml/prefs.xml refers to colour 4, which the table lacks: \(dangling)")

        let output = dir.appendingPathComponent("patched.apk").path
        let added = "<resources><color name=\"x\">#ff0000aa</color><color name=\"y\">#ff0000bb</color><color name=\"z\">#ff0000cc</color></resources>"
        let run = try TestSupport.apkpatch(["run", input, "--patch", try patch(in: dir, values: added),
                                            "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", output])
        #expect(run.succeeded, "\(run)")
        let defined = try Self.definedIDs(in: output)
        let colors = defined.filter { $0.value.hasSuffix(":color/x") || $0.value.hasSuffix(":color/y") || $0.value.hasSuffix(":color/z") }
        #expect(colors.count == 3, "\(defined)")
        #expect(dangling.allSatisfy { defined[$0] == nil }, "a new colour took the ID res/xml/prefs.xml refers to: \(colors)")
        #expect(try Self.references(in: output, file: xmlName) == (try Self.references(in: input, file: xmlName)))
        let extracted = dir.appendingPathComponent("resources.arsc").path
        #expect(try TestSupport.run("sh", ["-c", "unzip -p \"$1\" resources.arsc > \"$2\"", "sh", output, extracted]).succeeded)
        let strict = try TestSupport.libandroidfwTable(extracted, strict: true)
        #expect(strict.succeeded && strict.stdout == "OK\n", "\(strict)")
    }
}
