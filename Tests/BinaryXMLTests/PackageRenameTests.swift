import APKCore
import BinaryXML
import Overlay
import Foundation
import Testing
import TestSupport

/// `manifest: package:` and `run --rename-package`: the copy's manifest and resources.arsc name the new package,
/// class names stay where the code is, authorities and the app's permissions move with the package, and what still
/// names the old one is listed. Checked with `aapt dump badging`/`xmltree`/`resources`, `apktool d` and `apksigner`.
@Suite(.removesTemporaryDirectories) struct PackageRenameTests {
    static func fixture() -> FixtureAPK {
        var fixture = FixtureAPK()
        fixture.manifestElements = """
            <permission android:name="com.example.fixture.permission.READ" android:protectionLevel="signature" />
            <uses-permission android:name="com.example.fixture.permission.READ" />
            <uses-permission android:name="android.permission.INTERNET" />
            """
        fixture.applicationElements = """
            <provider android:name=".data.Provider" android:authorities="com.example.fixture.files;com.other.thing" android:exported="false"
                android:readPermission="com.example.fixture.permission.READ" />
            <service android:name="Worker" android:process=":bg" />
            <activity-alias android:name=".Alias" android:targetActivity=".MainActivity" android:exported="false" />
            <receiver android:name="com.lib.Receiver" android:exported="false">
                <intent-filter><action android:name="com.example.fixture.ACTION_PING" /></intent-filter>
            </receiver>
            <meta-data android:name="com.example.fixture.KEY" android:value="x" />
            """
        fixture.strings["provider_authority"] = "com.example.fixture.files"
        fixture.strings["search_authority"] = "com.example.fixture.search"
        fixture.resources["xml/syncadapter.xml"] = Array(#"<sync-adapter xmlns:android="http://schemas.android.com/apk/res/android" android:contentAuthority="com.example.fixture.files" android:accountType="com.example.fixture.account" />"#.utf8)
        fixture.resources["xml/searchable.xml"] = Array(#"<searchable xmlns:android="http://schemas.android.com/apk/res/android" android:label="@string/app_name" android:searchSuggestAuthority="@string/search_authority" />"#.utf8)
        fixture.resources["xml/shortcuts.xml"] = Array("""
            <shortcuts xmlns:android="http://schemas.android.com/apk/res/android">
                <shortcut android:shortcutId="open" android:shortcutShortLabel="@string/app_name">
                    <intent android:action="android.intent.action.VIEW" android:targetPackage="com.example.fixture" android:targetClass="com.example.fixture.MainActivity" />
                </shortcut>
            </shortcuts>
            """.utf8)
        fixture.resources["values/attrs.xml"] = Array(#"<resources><attr name="speed" format="integer" /></resources>"#.utf8)
        fixture.resources["layout/main.xml"] = Array("""
            <View xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res/com.example.fixture"
                android:layout_width="match_parent" android:layout_height="wrap_content" app:speed="3" />
            """.utf8)
        return fixture
    }

    /// What renaming does to res/ XML and the strings it refers to, checked in `aapt dump xmltree`/`resources`;
    /// with `notes`, what the summary lists.
    static func assertResourcesRenamed(_ out: String, notes: String?, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (file, expected, unexpected) in [
            ("res/xml/syncadapter.xml", #"="com.example.copy.files""#, #"="com.example.fixture.files""#),
            ("res/xml/shortcuts.xml", #"android:targetPackage(0x01010021)="com.example.copy""#, #"targetPackage(0x01010021)="com.example.fixture""#),
            ("res/xml/shortcuts.xml", #"android:targetClass(0x0101002f)="com.example.fixture.MainActivity""#, "res/com.example.fixture"),
            ("res/layout/main.xml", "N: app=http://schemas.android.com/apk/res/com.example.copy", "res/com.example.fixture"),
        ] {
            let tree = try Oracle.aapt(["dump", "xmltree", out, file])
            #expect(tree.contains(expected) && !tree.contains(unexpected), "\(file): \(expected) in\n\(tree)", sourceLocation: sourceLocation)
        }
        let values = try Oracle.aapt(["dump", "--values", "resources", out])
        // A string an authority attribute refers to moves with it; the others stay and are listed.
        #expect(values.contains(#"(string8) "com.example.copy.search""#) && values.contains(#"(string8) "com.example.fixture.files""#), "\(values)",
                sourceLocation: sourceLocation)
        guard let notes else { return }
        for expected in ["string/provider_authority", "accountType"] { #expect(notes.contains(expected), "missing \(expected) in \(notes)", sourceLocation: sourceLocation) }
        for unexpected in ["contentAuthority", "string/search_authority", "targetPackage"] {
            #expect(!notes.contains(unexpected), "\(unexpected) listed though renamed: \(notes)", sourceLocation: sourceLocation)
        }
    }

    @Test func specRenamesManifestAndTable() throws {
        let dir = try TestSupport.makeTemporaryDirectory("rename")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("manifest:\n  package: com.example.copy\n", to: "apkpatch.yml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--json"])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        #expect(try Oracle.aapt(["dump", "badging", out]).contains("package: name='com.example.copy'"))
        let resources = try Oracle.aapt(["dump", "resources", out])
        #expect(resources.contains("Package 0 id=0x7f name=com.example.copy"), "\(resources)")
        let manifest = try Oracle.aapt(["dump", "xmltree", out, "AndroidManifest.xml"])
        for expected in [#"package="com.example.copy""#, #"android:name(0x01010003)="com.example.fixture.MainActivity""#,
                         #"android:name(0x01010003)="com.example.fixture.data.Provider""#, #"android:name(0x01010003)="com.example.fixture.Worker""#,
                         #"android:name(0x01010003)="com.example.fixture.Alias""#, #"android:targetActivity(0x01010202)="com.example.fixture.MainActivity""#,
                         #"android:authorities(0x01010018)="com.example.copy.files;com.other.thing""#,
                         #"android:name(0x01010003)="com.example.copy.permission.READ""#, #"android:readPermission(0x01010007)="com.example.copy.permission.READ""#,
                         #"android:name(0x01010003)="android.permission.INTERNET""#, #"android:name(0x01010003)="com.lib.Receiver""#,
                         #"android:process(0x01010011)=":bg""#] {
            #expect(manifest.contains(expected), "missing \(expected) in\n\(manifest)")
        }
        #expect(!manifest.contains(#"="com.example.fixture.permission"#), "\(manifest)")
        // What still names the old package is listed, not silently kept.
        for expected in ["ACTION_PING", "com.example.fixture.KEY", "string/provider_authority", "package renamed from com.example.fixture to com.example.copy",
                         "res/xml/syncadapter.xml <sync-adapter> accountType"] {
            #expect(result.stdout.contains(expected), "missing \(expected) in\n\(result.stdout)")
        }
        try Self.assertResourcesRenamed(out, notes: result.stdout)
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        let text = try String(contentsOfFile: decoded + "/AndroidManifest.xml", encoding: .utf8)
        #expect(text.contains(#"package="com.example.copy""#) && text.contains(#"android:name="com.example.fixture.MainActivity""#), "\(text)")
        let shortcuts = try String(contentsOfFile: decoded + "/res/xml/shortcuts.xml", encoding: .utf8)
        #expect(shortcuts.contains(#"android:targetPackage="com.example.copy""#), "\(shortcuts)")
    }

    /// `watch --rename-package` renames each build as run does.
    @Test func watchRenamesEachBuild() throws {
        let dir = try TestSupport.makeTemporaryDirectory("rename-watch")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/a.html", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", apk, "--patch", patch.path, "--out", out, "--rename-package", "com.example.copy",
                                                              "--debug-keystore", dir.appendingPathComponent("debug.p12").path])
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "first build: \(lines.lines)")
        try TestSupport.write("<p>v2</p>\n", to: "assets/a.html", in: patch)
        #expect(lines.waitFor { $0.contains("rebuilt") }, "\(lines.lines)")
        #expect(try Oracle.aapt(["dump", "badging", out]).contains("package: name='com.example.copy'"))
        try Self.assertResourcesRenamed(out, notes: nil)
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        process.interrupt()
        process.waitUntilExit()
    }

    /// The rename reaches every binary XML file under res/, found by the names' bytes: "res/\u{301}s.xml" (a
    /// combining mark after the slash, which a Character joins to it) and "res/xml/s\u{600}.xml" (a Prepend mark,
    /// which joins the dot), as an obfuscator may name them.
    @Test func renameReachesResourceXMLWhoseNamesHoldMarks() throws {
        let dir = try TestSupport.makeTemporaryDirectory("rename-marks")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture().build(in: dir)
        let names = ["res/\u{301}s.xml", "res/xml/s\u{600}.xml"]
        let python = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], 'a') as z:
                data = z.read('res/xml/shortcuts.xml')
                for name in ['res/\\u0301s.xml', 'res/xml/s\\u0600.xml']:
                    z.writestr(name, data, zipfile.ZIP_DEFLATED)
            """
        let added = try TestSupport.run("python3", ["-c", python, apk])
        #expect(added.succeeded, "\(added)")
        let patch = dir.appendingPathComponent("patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--no-sign", "--rename-package", "com.example.copy"])
        #expect(result.succeeded, "\(result)")
        for name in names + ["res/xml/shortcuts.xml"] {
            let tree = try Oracle.aapt(["dump", "xmltree", out, name])
            #expect(tree.contains(#"android:targetPackage(0x01010021)="com.example.copy""#), "\(name.debugDescription):\n\(tree)")
        }
    }

    /// Class names and authorities are read by their bytes, as PackageParser reads them (charAt, indexOf,
    /// startsWith on UTF-16 units): ".\u{301}Main" starts with a dot (a Character joins the mark to it, which made it
    /// "com.example.fixture..\u{301}Main"), "w\u{600}.Worker" holds one (a Prepend mark joins the dot after it, which
    /// made it "com.example.fixture.w\u{600}.Worker"), "com.example.fixture.\u{301}files" is under the package (it
    /// kept the old name), and ";\u{301}y" starts a new authority (a Character joins the mark to the semicolon). An obfuscator may name classes so; aapt refuses such names in the source, so the test
    /// puts them into the compiled manifest.
    @Test func classNamesAndAuthoritiesHoldingMarksAreReadByTheirBytes() throws {
        let dir = try TestSupport.makeTemporaryDirectory("rename-class-marks")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.applicationElements = """
            <activity android:name=".Main" android:exported="false" />
            <service android:name="Wx.Worker" />
            <provider android:name="com.lib.Provider" android:authorities="com.example.fixture.files;com.example.fixturex" android:exported="false" />
            """
        let apk = try fixture.build(in: dir)
        let archive = try APKArchive(path: apk)
        var tree = try XMLTree(binaryXML: try archive.uncompressedData(of: try #require(archive.entry(named: "AndroidManifest.xml"))))
        let marked = [".Main": ".\u{301}Main", "Wx.Worker": "w\u{600}.Worker",
                      "com.example.fixture.files;com.example.fixturex": "com.example.fixture.\u{301}files;com.example.fixture\u{301}x;com.example.fixture;\u{301}y"]
        func mark(_ element: inout XMLTree.Element) {
            for index in element.attributes.indices {
                if let text = element.attributes[index].value.stringValue, let new = marked[text] {
                    element.attributes[index].value = .string(new)
                    element.attributes[index].rawValue = new
                }
            }
            for index in element.children.indices {
                if case .element(var child) = element.children[index] { mark(&child); element.children[index] = .element(child) }
            }
        }
        var root = try #require(tree.root)
        mark(&root)
        tree.root = root
        _ = try PackageRename.rename(&tree, to: "com.example.copy")
        var found: [String: String] = [:]
        func collect(_ element: XMLTree.Element) {
            for attribute in element.attributes where ["name", "authorities"].contains(attribute.name) {
                if let text = attribute.value.stringValue { found[element.name + " " + attribute.name] = text }
            }
            element.elements.forEach(collect)
        }
        collect(try #require(tree.root))
        #expect(found["activity name"]?.unicodeScalars.elementsEqual("com.example.fixture.\u{301}Main".unicodeScalars) == true, "\(found)")
        #expect(found["service name"]?.unicodeScalars.elementsEqual("w\u{600}.Worker".unicodeScalars) == true, "\(found)")
        #expect(found["provider authorities"]?.unicodeScalars.elementsEqual("com.example.copy.\u{301}files;com.example.fixture\u{301}x;com.example.copy;\u{301}y".unicodeScalars) == true, "\(found)")
    }

    @Test func runOptionRenamesAndBadNamesAreRefused() throws {
        let dir = try TestSupport.makeTemporaryDirectory("rename-option")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try FixtureAPK().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--no-sign", "--rename-package", "org.example.side"])
        #expect(result.succeeded, "\(result)")
        #expect(try Oracle.aapt(["dump", "badging", out]).contains("package: name='org.example.side'"))
        #expect(try Oracle.aapt(["dump", "resources", out]).contains("name=org.example.side"))
        for bad in ["single", "com..x", "com.1x", "com.example.copy!"] {
            let badOut = dir.appendingPathComponent("bad.apk").path
            let refused = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", badOut, "--no-sign", "--rename-package", bad])
            #expect(!refused.succeeded && refused.stderr.contains("'\(bad)' is not a package name"), "\(refused)")
            #expect(!FileManager.default.fileExists(atPath: badOut))
        }
    }
}
