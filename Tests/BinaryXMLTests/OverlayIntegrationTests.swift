import APKCore
import Align
import BinaryXML
import Foundation
import Overlay
import Repack
import ResourceTable
import Testing
import TestSupport
import Unpack

/// Manifest shortcuts, compiled text XML and strings overrides, checked with aapt's dumps of the result.
@Suite(.removesTemporaryDirectories) struct OverlayIntegrationTests {
    static let editedAttributes = ["debuggable", "versionCode", "versionName", "label", "usesCleartextTraffic", "extractNativeLibs",
                                   "minSdkVersion", "targetSdkVersion"]

    func fixture(_ dir: URL) throws -> String {
        var fixture = FixtureAPK()
        fixture.manifestElements = #"<uses-permission android:name="android.permission.INTERNET" />"#
        fixture.applicationAttributes = #"android:allowBackup="false""#
        fixture.strings = ["greeting": "Hello"]
        fixture.resources["values-fr/strings.xml"] = Array(#"<resources><string name="greeting">Bonjour</string></resources>"#.utf8)
        return try fixture.build(in: dir)
    }

    @Test func shortcutsShowInBadgingAndXMLTree() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-shortcuts")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        let manifest = try Oracle.entry("AndroidManifest.xml", in: apk)
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        let edits = ManifestEdits(debuggable: true, versionCode: 7, versionName: "7.0-patched", label: "Patched App",
                                  usesCleartextTraffic: true, extractNativeLibs: false, minSdkVersion: .level(24), targetSdkVersion: .level(34))
        let patched = try ManifestPatch.applying(edits, to: manifest, resources: table)
        let output = dir.appendingPathComponent("patched.apk").path
        try Oracle.replacing(["AndroidManifest.xml": patched], in: apk, destination: output)

        let badging = try Oracle.aapt(["dump", "badging", output])
        #expect(badging.contains("versionCode='7' versionName='7.0-patched'"))
        #expect(badging.contains("sdkVersion:'24'"))
        #expect(badging.contains("targetSdkVersion:'34'"))
        #expect(badging.contains("application-label:'Patched App'"))
        #expect(badging.contains("application-debuggable"))
        let before = try Oracle.aapt(["dump", "xmltree", apk, "AndroidManifest.xml"])
        let after = try Oracle.aapt(["dump", "xmltree", output, "AndroidManifest.xml"])
        for expected in ["A: android:usesCleartextTraffic(0x010104ec)=(type 0x12)0xffffffff", "A: android:extractNativeLibs(0x010104ea)=(type 0x12)0x0",
                         "A: android:debuggable(0x0101000f)=(type 0x12)0xffffffff", #"A: android:label(0x01010001)="Patched App" (Raw: "Patched App")"#,
                         "A: android:versionCode(0x0101021b)=(type 0x10)0x7", "A: android:minSdkVersion(0x0101020c)=(type 0x10)0x18"] {
            #expect(after.contains(expected), "missing \(expected) in\n\(after)")
        }
        // The rest of the dump is unchanged.
        func rest(_ dump: String) -> [Substring] {
            dump.split(separator: "\n").filter { line in !Self.editedAttributes.contains { line.contains("android:\($0)(") } }
        }
        #expect(rest(before) == rest(after))
        // What the signer reads (minSdkVersion) comes from the patched manifest.
        let summary = try ManifestSummary(binaryXML: patched)
        #expect(summary.minSdkVersion == .level(24))
        #expect(summary.debuggable == true)
        #expect(summary.versionCode == 7)
        // Applying nothing changes nothing the oracle can see.
        let same = try ManifestPatch.applying(ManifestEdits(), to: manifest, resources: table)
        try Oracle.replacing(["AndroidManifest.xml": same], in: apk, destination: output)
        #expect(try Oracle.aapt(["dump", "xmltree", output, "AndroidManifest.xml"]) == before)
    }

    @Test func shortcutsCreateUsesSDKAndResolveReferences() throws {
        let text = """
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="org.example.bare">
                <application android:label="Bare"/>
            </manifest>
            """
        let binary = try ManifestPatch.compiling(textXML: text, original: nil, resources: nil)
        #expect(try ManifestSummary(binaryXML: binary).minSdkVersion == nil)
        // tools: attributes are for the build tools; aapt drops them and so do we.
        let withTools = text.replacingOccurrences(of: "<manifest ", with: #"<manifest xmlns:tools="http://schemas.android.com/tools" tools:ignore="GoogleAppIndexingWarning" "#)
        let toolsTree = try XMLTree(binaryXML: try ManifestPatch.compiling(textXML: withTools, original: nil, resources: nil))
        #expect(toolsTree.root?.attributes.map(\.name) == ["package"])
        #expect(toolsTree.root?.namespaceDeclarations.map(\.prefix) == ["android"])
        let patched = try ManifestPatch.applying(ManifestEdits(minSdkVersion: .level(21), targetSdkVersion: .codename("Baklava")), to: binary, resources: nil)
        let summary = try ManifestSummary(binaryXML: patched)
        #expect(summary.minSdkVersion == .level(21))
        #expect(summary.targetSdkVersion == .codename("Baklava"))
        #expect(throws: BinaryXMLError.self) { try ManifestPatch.applying(ManifestEdits(versionCode: 0), to: binary, resources: nil) }
        // A label reference needs the APK's table; without it the error says so.
        #expect(throws: BinaryXMLError.self) { try ManifestPatch.applying(ManifestEdits(label: "@string/app_name"), to: binary, resources: nil) }
    }

    @Test func textManifestCompilesWithAddedAndRemovedElements() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-textmanifest")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        let original = try Oracle.entry("AndroidManifest.xml", in: apk)
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        var text = try XMLTree(binaryXML: original).textXML(resources: table)
        #expect(text.contains(#"<uses-permission android:name="android.permission.INTERNET"/>"#))
        text = text.replacingOccurrences(of: #"<uses-permission android:name="android.permission.INTERNET"/>"#,
                                         with: #"<uses-permission android:name="android.permission.CAMERA"/><uses-feature android:name="android.hardware.camera" android:required="false"/>"#)
        text = text.replacingOccurrences(of: #"android:allowBackup="false""#, with: #"android:allowBackup="true" android:networkSecurityConfig="@string/greeting""#)
        let compiled = try ManifestPatch.compiling(textXML: text, original: original, resources: table)
        let output = dir.appendingPathComponent("text.apk").path
        try Oracle.replacing(["AndroidManifest.xml": compiled], in: apk, destination: output)
        let badging = try Oracle.aapt(["dump", "badging", output])
        #expect(badging.contains("uses-permission: name='android.permission.CAMERA'"))
        #expect(!badging.contains("android.permission.INTERNET"))
        #expect(badging.contains("uses-feature-not-required: name='android.hardware.camera'"))
        let tree = try Oracle.aapt(["dump", "xmltree", output, "AndroidManifest.xml"])
        #expect(tree.contains("A: android:allowBackup(0x01010280)=(type 0x12)0xffffffff"))
        let greeting = String(try #require(table.resourceID(type: "string", name: "greeting")), radix: 16)
        #expect(tree.contains("A: android:networkSecurityConfig(0x01010527)=@0x\(greeting)"))
        // The application's other attributes are as they were.
        #expect(tree.contains("A: android:label(0x01010001)=@0x"))
    }

    @Test func unresolvableNamesNameTheLine() throws {
        let text = """
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="org.example.bad">
                <application
                    android:label="@string/app_name"
                    android:debugable="true"/>
            </manifest>
            """
        var thrown: BinaryXMLError?
        do { _ = try ManifestPatch.compiling(textXML: text, original: nil, resources: nil) } catch let error as BinaryXMLError { thrown = error }
        #expect(thrown?.code == .unresolvedName)
        #expect(thrown?.message.contains("AndroidManifest.xml:4:") == true, "\(String(describing: thrown))")
        let typo = text.replacingOccurrences(of: "@string/app_name", with: "App")
        do { _ = try ManifestPatch.compiling(textXML: typo, original: nil, resources: nil); Issue.record("no error") } catch let error as BinaryXMLError {
            #expect(error.message.contains("AndroidManifest.xml:5:") && error.message.contains("android:debugable"), "\(error)")
        }
        let badValue = typo.replacingOccurrences(of: "debugable", with: "debuggable").replacingOccurrences(of: "\"true\"", with: "\"maybe\"")
        do { _ = try ManifestPatch.compiling(textXML: badValue, original: nil, resources: nil); Issue.record("no error") } catch let error as BinaryXMLError {
            #expect(error.code == .badValue && error.message.contains(":5:") && error.message.contains("boolean"), "\(error)")
        }
        let syntax = "<manifest package=\"a\">\n<application>\n</manifest>"
        do { _ = try ManifestPatch.compiling(textXML: syntax, original: nil, resources: nil); Issue.record("no error") } catch let error as BinaryXMLError {
            #expect(error.code == .textSyntax && error.message.contains(":3:"), "\(error)")
        }
    }

    @Test func overlayAppliesSpecShortcutsStringsAndXML() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-overlay")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        let patchDir = dir.appendingPathComponent("patch")
        try TestSupport.write("manifest:\n  debuggable: true\n  versionName: \"2.0\"\n", to: "apkpatch.yml", in: patchDir)
        try TestSupport.write(#"<resources><string name="greeting">Salut</string></resources>"#, to: "res/values-fr/strings.xml", in: patchDir)
        try TestSupport.write(#"<resources><string name="app_name">Overlaid</string></resources>"#, to: "res/values/strings.xml", in: patchDir)
        try TestSupport.write("hello", to: "assets/new.txt", in: patchDir)
        var overlay = Overlay(archive: try APKArchive(path: apk), patch: try PatchDirectory(root: patchDir.path))
        overlay.contentEditor = ResourceContentEditor()
        let plan = try overlay.plan()
        #expect(!plan.entries.contains { $0.entry.name.hasPrefix("res/values") })
        #expect(plan.summary.added == ["assets/new.txt"])
        #expect(Set(plan.summary.edited) == ["AndroidManifest.xml", "resources.arsc"])
        let output = dir.appendingPathComponent("overlaid.apk").path
        try Repacker.write(plan.entries, to: output, alignment: AlignmentPolicy())
        let badging = try Oracle.aapt(["dump", "badging", output])
        #expect(badging.contains("versionName='2.0'"))
        #expect(badging.contains("application-debuggable"))
        #expect(badging.contains("application-label:'Overlaid'"))
        let values = ResourceTableTests.aaptStrings(try Oracle.aapt(["dump", "--values", "resources", output]))
        #expect(values["fr"]?["greeting"] == "Salut")
        #expect(values["(default)"]?["greeting"] == "Hello")
        // resources.arsc keeps its method (aapt stores it).
        let arsc = try #require(plan.entries.first { $0.entry.name == "resources.arsc" })
        #expect(arsc.entry.method == (try APKArchive(path: apk)).entry(named: "resources.arsc")?.method)

        // A name given twice in one configuration is refused with the file and line.
        try TestSupport.write("<resources>\n<string name=\"nope\">x</string>\n<string name=\"nope\">y</string></resources>", to: "res/values/strings.xml", in: patchDir)
        var refused = Overlay(archive: try APKArchive(path: apk), patch: try PatchDirectory(root: patchDir.path))
        refused.contentEditor = ResourceContentEditor()
        do { _ = try refused.plan(); Issue.record("no error") } catch let error as ResourceTableError {
            #expect(error.code == .duplicate && error.message.contains("res/values/strings.xml:3:"), "\(error)")
        }
    }

    /// Which patch files the resource editor makes the entries of, so that the overlay does not compress them:
    /// text XML where Android reads binary XML, and values files the APK does not ship.
    @Test func theResourceEditorSaysWhichEntriesItMakes() throws {
        let editor = ResourceContentEditor()
        let text = Array(#"<LinearLayout xmlns:android="http://schemas.android.com/apk/res/android"/>"#.utf8)
        let binary: [UInt8] = [0x03, 0x00, 0x08, 0x00, 0x10, 0x00, 0x00, 0x00]
        #expect(editor.makesEntry(forPatchFileAt: "res/layout/main.xml", inAPK: true, content: text))
        #expect(editor.makesEntry(forPatchFileAt: "res/xml/network_security_config.xml", inAPK: false, content: text))
        #expect(editor.makesEntry(forPatchFileAt: "AndroidManifest.xml", inAPK: true, content: text))
        #expect(!editor.makesEntry(forPatchFileAt: "res/layout/main.xml", inAPK: true, content: binary))  // copied as it is
        #expect(editor.makesEntry(forPatchFileAt: "res/values-fr/strings.xml", inAPK: false, content: text))
        #expect(!editor.makesEntry(forPatchFileAt: "res/values/strings.xml", inAPK: true, content: text))  // the APK's own file stays
        #expect(!editor.makesEntry(forPatchFileAt: "res/raw/data.xml", inAPK: true, content: text))
        #expect(!editor.makesEntry(forPatchFileAt: "assets/www/config.xml", inAPK: false, content: text))
    }

    /// The overlay leaves the bytes of a file its editor makes the entry of uncompressed (deflate's stored blocks,
    /// still a valid entry of its method), and compresses the others as before.
    @Test func filesTheEditorMakesAreNotCompressed() throws {
        struct Claiming: ContentEditor {
            let seen = Parallel.Slots<OutputEntry?>(count: 2, repeating: nil)
            func makesEntry(forPatchFileAt path: String, inAPK: Bool, content: [UInt8]) -> Bool { path == "assets/claimed.txt" }
            func edit(entries: [OutputEntry], archive: APKArchive, patch: PatchDirectory, timestamp: DOSTimestamp,
                      summary: inout OverlaySummary) throws -> [OutputEntry] {
                seen[0] = entries.first { $0.entry.name == "assets/claimed.txt" }
                seen[1] = entries.first { $0.entry.name == "assets/other.txt" }
                return entries
            }
        }
        let dir = try TestSupport.makeTemporaryDirectory("binxml-overlay-claims")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        let patchDir = dir.appendingPathComponent("patch")
        let text = String(repeating: "compressible text ", count: 4096)
        try TestSupport.write(text, to: "assets/claimed.txt", in: patchDir)
        try TestSupport.write(text, to: "assets/other.txt", in: patchDir)
        var overlay = Overlay(archive: try APKArchive(path: apk), patch: try PatchDirectory(root: patchDir.path))
        let editor = Claiming()
        overlay.contentEditor = editor
        _ = try overlay.plan()
        let claimed = try #require(editor.seen[0]), other = try #require(editor.seen[1])
        #expect(claimed.entry.method == .deflated && other.entry.method == .deflated)
        #expect(claimed.entry.compressedSize > claimed.entry.uncompressedSize, "\(claimed.entry.compressedSize)")
        #expect(other.entry.compressedSize * 20 < other.entry.uncompressedSize, "\(other.entry.compressedSize)")
        #expect(try claimed.uncompressedBytes() == Array(text.utf8))
    }

    /// A text res/xml file and a text manifest in the patch are compiled; the manifest shortcuts apply on top.
    @Test func overlayCompilesTextXMLFiles() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-overlay-xml")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.resources["xml/network_security_config.xml"] = Array(#"<network-security-config><base-config cleartextTrafficPermitted="false"/></network-security-config>"#.utf8)
        fixture.applicationAttributes = #"android:networkSecurityConfig="@xml/network_security_config""#
        let apk = try fixture.build(in: dir)
        let decoded = dir.appendingPathComponent("decoded").path
        try ResourceDecoder.decodeAll(archive: try APKArchive(path: apk), into: decoded)
        let patchDir = dir.appendingPathComponent("patch")
        var nsc = try String(contentsOfFile: decoded + "/res/xml/network_security_config.xml", encoding: .utf8)
        nsc = nsc.replacingOccurrences(of: #"cleartextTrafficPermitted="false"/>"#,
                                       with: #"cleartextTrafficPermitted="true"/><domain-config><domain includeSubdomains="true">10.0.2.2</domain></domain-config>"#)
        try TestSupport.write(nsc, to: "res/xml/network_security_config.xml", in: patchDir)
        var manifest = try String(contentsOfFile: decoded + "/AndroidManifest.xml", encoding: .utf8)
        manifest = manifest.replacingOccurrences(of: "<application ", with: #"<uses-permission android:name="android.permission.CAMERA"/><application "#)
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: patchDir)
        try TestSupport.write("manifest:\n  debuggable: true\n", to: "apkpatch.yml", in: patchDir)
        var overlay = Overlay(archive: try APKArchive(path: apk), patch: try PatchDirectory(root: patchDir.path))
        overlay.contentEditor = ResourceContentEditor()
        let plan = try overlay.plan()
        #expect(Set(plan.summary.edited) == ["AndroidManifest.xml", "res/xml/network_security_config.xml"])
        let output = dir.appendingPathComponent("out.apk").path
        try Repacker.write(plan.entries, to: output, alignment: AlignmentPolicy())
        let tree = try Oracle.aapt(["dump", "xmltree", output, "res/xml/network_security_config.xml"])
        #expect(tree.contains("A: cleartextTrafficPermitted=(type 0x12)0xffffffff"), "\(tree)")
        #expect(tree.contains(#"C: "10.0.2.2""#), "\(tree)")
        #expect(tree.contains(#"A: includeSubdomains=(type 0x12)0xffffffff"#), "\(tree)")
        let badging = try Oracle.aapt(["dump", "badging", output])
        #expect(badging.contains("uses-permission: name='android.permission.CAMERA'"))
        #expect(badging.contains("application-debuggable"))
    }

    /// Patch paths are classified by their bytes: "res/xml/x\u{600}.xml" (a Prepend mark joins the dot after it, so
    /// it did not end with ".xml") replacing an obfuscated APK's compiled XML is compiled, not shipped as text that
    /// Android cannot parse; "res/\u{301}xml/" is a res/ folder (a Character joins the mark to the slash).
    @Test func patchPathsHoldingMarksAreClassifiedByTheirBytes() throws {
        #expect(ResourcePatch.isCompiledXMLPath("res/xml/x\u{600}.xml") && ResourcePatch.isCompiledXMLPath("res/\u{301}xml/a.xml"))
        #expect(ResourcePatch.isValuesPath("res/values-\u{301}fr/a.xml") && ResourcePatch.isStringsOverride(path: "res/values-\u{301}fr/strings.xml"))
        #expect(!ResourcePatch.isCompiledXMLPath("res/raw-\u{301}fr/a.xml") && !ResourcePatch.isCompiledXMLPath("res/values-\u{301}fr/a.xml"))
        let dir = try TestSupport.makeTemporaryDirectory("binxml-marked-xml")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.resources["xml/network_security_config.xml"] = Array(#"<network-security-config><base-config cleartextTrafficPermitted="false"/></network-security-config>"#.utf8)
        let first = dir.appendingPathComponent("first")
        try FileManager.default.createDirectory(at: first, withIntermediateDirectories: true)
        let compiled = try Oracle.entry("res/xml/network_security_config.xml", in: try fixture.build(in: first))
        let name = "res/xml/x\u{600}.xml"
        fixture.rawFiles[name] = compiled  // aapt refuses the name in the source; an obfuscator writes it
        let apk = try fixture.build(in: dir)
        let patchDir = dir.appendingPathComponent("patch")
        try TestSupport.write(#"<network-security-config><base-config cleartextTrafficPermitted="true"/></network-security-config>"#, to: name, in: patchDir)
        var overlay = Overlay(archive: try APKArchive(path: apk), patch: try PatchDirectory(root: patchDir.path))
        overlay.contentEditor = ResourceContentEditor()
        let output = dir.appendingPathComponent("out.apk").path
        try Repacker.write(try overlay.plan().entries, to: output, alignment: AlignmentPolicy())
        let tree = try Oracle.aapt(["dump", "xmltree", output, name])
        #expect(tree.contains("A: cleartextTrafficPermitted=(type 0x12)0xffffffff"), "\(tree)")
    }

    @Test func stringOverridesFunction() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-overrides")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        let arsc = try Oracle.entry("resources.arsc", in: apk)
        let (bytes, changed) = try ResourcePatch.applyingStringOverrides(
            [(path: "res/values-fr/strings.xml", text: #"<resources><string name="greeting">Coucou</string></resources>"#),
             (path: "res/values/strings.xml", text: #"<resources><string name="greeting">Hello</string></resources>"#)], to: arsc)
        #expect(changed == ["values-fr/greeting"])  // the default value was already "Hello"
        #expect(try ResourceTable(bytes: bytes).string(named: "greeting", qualifiers: "fr") == "Coucou")
        #expect(ResourcePatch.isStringsOverride(path: "res/values-b+sr+Latn/strings.xml"))
        #expect(!ResourcePatch.isStringsOverride(path: "res/values/colors.xml"))
        #expect(ResourcePatch.isCompiledXMLPath("res/xml/network_security_config.xml"))
        #expect(!ResourcePatch.isCompiledXMLPath("res/raw/data.xml"))
        #expect(!ResourcePatch.isCompiledXMLPath("assets/www/config.xml"))
        let unchanged = try ResourcePatch.applyingStringOverrides([], to: arsc)
        #expect(unchanged.bytes == arsc && unchanged.changed.isEmpty)
    }

    /// `apkpatch decode` through the built binary.
    @Test func decodeCommand() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-decode-cli")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        let out = dir.appendingPathComponent("out").path
        let result = try TestSupport.apkpatch(["decode", apk, "-o", out])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("Decoded 3 files"))
        let manifest = try String(contentsOfFile: out + "/AndroidManifest.xml", encoding: .utf8)
        #expect(manifest.contains(#"<uses-permission android:name="android.permission.INTERNET"/>"#))
        #expect(try String(contentsOfFile: out + "/res/values-fr/strings.xml", encoding: .utf8).contains(#"<string name="greeting">Bonjour</string>"#))
        let bad = try TestSupport.apkpatch(["decode", dir.appendingPathComponent("missing.apk").path, "-o", out])
        #expect(!bad.succeeded)
    }

    /// An archive with nothing to decode (assets only, zipped by Info-ZIP): the output directory is still made,
    /// as the option's help says, so that the `run --patch` that follows finds it empty rather than missing.
    @Test func decodeWithNothingToDecodeMakesTheDirectory() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-decode-empty")
        defer { try? FileManager.default.removeItem(at: dir) }
        let staging = dir.appendingPathComponent("staging")
        try FileManager.default.createDirectory(at: staging.appendingPathComponent("assets"), withIntermediateDirectories: true)
        try Data("hello".utf8).write(to: staging.appendingPathComponent("assets/hello.txt"))
        let archive = dir.appendingPathComponent("assets-only.zip").path
        try #require(try TestSupport.run("zip", ["-q", "-r", archive, "assets"], currentDirectory: staging.path).succeeded)
        let out = dir.appendingPathComponent("decoded/nested").path
        let result = try TestSupport.apkpatch(["decode", archive, "-o", out])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("Decoded 0 files into \(out)"))
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)
    }

    @Test func longStringsFallBackToUTF16Pools() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-long")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture(dir)
        var table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        #expect(table.valuePool.isUTF8)
        let long = String(repeating: "x", count: 40_000)
        try table.setString(named: "greeting", to: long)
        let output = dir.appendingPathComponent("long.apk").path
        try Oracle.replacing(["resources.arsc": try table.encoded()], in: apk, destination: output)
        let values = ResourceTableTests.aaptStrings(try Oracle.aapt(["dump", "--values", "resources", output]))
        #expect(values["(default)"]?["greeting"]?.count == 40_000)
        #expect(values["fr"]?["greeting"] == "Bonjour")
    }

    @Test func decodeAllWritesEditableText() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-decode")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.resources["xml/network_security_config.xml"] = Array(#"<network-security-config><base-config cleartextTrafficPermitted="true"/></network-security-config>"#.utf8)
        fixture.resources["values-de/strings.xml"] = Array(#"<resources><string name="app_name">Vorlage</string></resources>"#.utf8)
        let apk = try fixture.build(in: dir)
        let out = dir.appendingPathComponent("decoded").path
        let summary = try ResourceDecoder.decodeAll(archive: try APKArchive(path: apk), into: out)
        #expect(Set(summary.files) == ["AndroidManifest.xml", "res/xml/network_security_config.xml", "res/values/strings.xml", "res/values-de/strings.xml"])
        let manifest = try String(contentsOfFile: out + "/AndroidManifest.xml", encoding: .utf8)
        #expect(manifest.contains(#"android:label="@string/app_name""#))
        #expect(manifest.contains(#"package="com.example.fixture""#))
        let strings = try String(contentsOfFile: out + "/res/values-de/strings.xml", encoding: .utf8)
        #expect(strings.contains(#"<string name="app_name">Vorlage</string>"#))
        // The decoded files compile back to what aapt built (the overlay's path for an unedited decode).
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        let original = try Oracle.entry("AndroidManifest.xml", in: apk)
        let recompiled = try ManifestPatch.compiling(textXML: manifest, original: original, resources: table)
        let copy = dir.appendingPathComponent("copy.apk").path
        try Oracle.replacing(["AndroidManifest.xml": recompiled], in: apk, destination: copy)
        #expect(try Oracle.aapt(["dump", "xmltree", copy, "AndroidManifest.xml"]) == Oracle.aapt(["dump", "xmltree", apk, "AndroidManifest.xml"]))
    }
}
