import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// `apkpatch decode` then `apkpatch run` with the decoded text, unchanged, as the patch directory must give an APK whose
/// `aapt dump xmltree` (line numbers aside) of every XML file and `aapt dump --values resources` equal the input's.
/// Inputs: aapt- and aapt2-built APKs with values that look like numbers and references in strings, a hand-patched
/// APK whose attributes carry IDs under unusual namespaces, one with a compressed resources.arsc, and framework-res.apk
/// (about 1,400 XML files).
@Suite struct LosslessRoundTripTests {
    static let configXML = """
        <widget xmlns:android="http://schemas.android.com/apk/res/android" id="io.x" version="1.0.0">
          <preference name="Zip" value="007"/>
          <preference name="Hex" value="0x0010"/>
          <preference name="F" value="1.50"/>
          <preference name="B" value="TRUE"/>
          <preference name="S" value=" 42 "/>
          <preference name="Ref" value="@string/app_name"/>
          <item android:width="016dp" android:name="x"/>
        </widget>
        """

    /// Decodes `apk`, runs it with the decoded directory as the patch and compares the dumps of every file.
    static func assertLossless(_ apk: String, in dir: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let decoded = dir.appendingPathComponent("decoded-\(UUID().uuidString)").path
        let decode = try TestSupport.apkpatch(["decode", apk, "-o", decoded])
        #expect(decode.succeeded, "\(decode)", sourceLocation: sourceLocation)
        let output = dir.appendingPathComponent("roundtrip-\(UUID().uuidString).apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", decoded, "--no-sign", "--out", output, "-q"])
        #expect(run.succeeded, "\(run)", sourceLocation: sourceLocation)
        guard run.succeeded else { return }
        let names = try RoundTripTests.binaryXMLEntries(of: apk).map(\.0)
        #expect(!names.isEmpty, sourceLocation: sourceLocation)
        func withoutLines(_ dump: String) -> String { dump.replacingOccurrences(of: #" \(line=\d+\)"#, with: "", options: .regularExpression) }
        for start in stride(from: 0, to: names.count, by: 300) {
            let batch = Array(names[start..<min(start + 300, names.count)])
            let original = withoutLines(try Oracle.aapt(["dump", "xmltree", apk] + batch))
            let ours = withoutLines(try Oracle.aapt(["dump", "xmltree", output] + batch))
            if original != ours {
                let a = original.split(separator: "\n"), b = ours.split(separator: "\n")
                let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
                Issue.record("\(apk): xmltree differs at dump line \(i + 1):\n original: \(i < a.count ? a[i] : "<end>")\n ours:     \(i < b.count ? b[i] : "<end>")",
                             sourceLocation: sourceLocation)
            }
        }
        #expect(try Oracle.aapt(["dump", "--values", "resources", output]) == Oracle.aapt(["dump", "--values", "resources", apk]),
                sourceLocation: sourceLocation)
    }

    static func aaptFixture() -> FixtureAPK {
        var fixture = FixtureAPK()
        fixture.strings["alias"] = "@string/app_name"
        fixture.strings["system"] = "@android:string/ok"
        fixture.resources["xml/config.xml"] = Array(configXML.utf8)
        return fixture
    }

    @Test func aaptBuiltKeepsRawTextAndReferenceStrings() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-aapt")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.aaptFixture().build(in: dir)
        try Self.assertLossless(apk, in: dir)
        // What the user sees: the text as written, and the reference strings.
        let decoded = dir.appendingPathComponent("view").path
        #expect(try TestSupport.apkpatch(["decode", apk, "-o", decoded]).succeeded)
        let config = try String(contentsOfFile: decoded + "/res/xml/config.xml", encoding: .utf8)
        for expected in [#"value="007""#, #"value="0x0010""#, #"value="1.50""#, #"value="TRUE""#, #"value="@string/app_name""#] {
            #expect(config.contains(expected), "missing \(expected) in\n\(config)")
        }
        let strings = try String(contentsOfFile: decoded + "/res/values/strings.xml", encoding: .utf8)
        #expect(strings.contains(#"<string name="alias">@string/app_name</string>"#), "\(strings)")
        #expect(strings.contains(#"<string name="system">@android:string/ok</string>"#), "\(strings)")
    }

    /// A reference string can be changed to another reference or to text, and back.
    @Test func referenceStringsCanBeChanged() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-refs")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.aaptFixture().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(#"<resources><string name="alias">@android:string/cancel</string><string name="system">plain</string></resources>"#,
                              to: "res/values/strings.xml", in: patch)
        let output = dir.appendingPathComponent("out.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--no-sign", "--out", output, "-q"])
        #expect(run.succeeded, "\(run)")
        let dump = try Oracle.aapt(["dump", "--values", "resources", output])
        #expect(dump.contains("(reference) 0x01040000"), "\(dump)")  // @android:string/cancel
        #expect(dump.contains(#"(string8) "plain""#), "\(dump)")
        try TestSupport.write(#"<resources><string name="alias">@string/nowhere</string></resources>"#, to: "res/values/strings.xml", in: patch)
        let bad = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--no-sign", "--out", output + "2", "-q"])
        #expect(!bad.succeeded && bad.stderr.contains("res/values/strings.xml:1") && bad.stderr.contains("string/nowhere"), "\(bad)")
        #expect(!FileManager.default.fileExists(atPath: output + "2"))
    }

    /// Attributes keep their IDs whatever namespace the binary file used: a framework attribute under an unknown
    /// URI and under none, one in the android namespace without an ID, a private framework attribute.
    @Test func handPatchedNamespacesKeepAttributeIDs() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-ns")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.aaptFixture().build(in: dir)
        var tree = try XMLTree(binaryXML: try Oracle.entry("res/xml/config.xml", in: apk))
        let odd = "http://example.com/odd"
        tree.nodes = tree.nodes.map { node in
            guard case .element(var root) = node else { return node }
            root.namespaceDeclarations.append(XMLTree.Namespace(prefix: "o", uri: odd, lineNumber: 1))
            root.attributes.append(XMLTree.Attribute(namespace: odd, name: "label", resourceID: 0x0101_0001, rawValue: "Odd", value: .string("Odd")))
            root.attributes.append(XMLTree.Attribute(namespace: nil, name: "icon", resourceID: 0x0101_0002, rawValue: nil, value: .reference(0x0108_0000)))
            root.attributes.append(XMLTree.Attribute(namespace: XMLTree.androidNamespace, name: "theme", resourceID: nil, rawValue: "t", value: .string("t")))
            root.attributes.append(XMLTree.Attribute(namespace: XMLTree.androidNamespace, name: "secret", resourceID: 0x0101_ffff, rawValue: "s", value: .string("s")))
            root.attributes.sort { ($0.resourceID ?? .max) < ($1.resourceID ?? .max) }
            return .element(root)
        }
        let patched = dir.appendingPathComponent("patched.apk").path
        try Oracle.replacing(["res/xml/config.xml": try tree.binaryXML()], in: apk, destination: patched)
        let dump = try Oracle.aapt(["dump", "xmltree", patched, "res/xml/config.xml"])
        #expect(dump.contains("A: o:label(0x01010001)=\"Odd\""), "\(dump)")
        try Self.assertLossless(patched, in: dir)
    }

    /// aapt2 leaves attributes without an ID as text unless they are references; its files keep that.
    @Test func aapt2BuiltKeepsUntypedText() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-aapt2")
        defer { try? FileManager.default.removeItem(at: dir) }
        try TestSupport.write(#"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.a2"><uses-sdk android:minSdkVersion="24" android:targetSdkVersion="34"/><application android:label="@string/app_name"/></manifest>"#,
                              to: "AndroidManifest.xml", in: dir)
        try TestSupport.write(#"<resources><string name="app_name">A2</string><string name="alias">@string/app_name</string><attr name="custom" format="dimension"/></resources>"#,
                              to: "res/values/values.xml", in: dir)
        try TestSupport.write(Self.configXML, to: "res/xml/config.xml", in: dir)
        try TestSupport.write(#"<LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res-auto" android:layout_width="match_parent" android:layout_height="wrap_content" app:custom="12dp" tag="007"/>"#,
                              to: "res/layout/main.xml", in: dir)
        let compile = try TestSupport.run("aapt2", ["compile", "--dir", "res", "-o", "compiled.zip"], currentDirectory: dir.path)
        #expect(compile.succeeded, "\(compile)")
        let link = try TestSupport.run("aapt2", ["link", "-o", "a2.apk", "-I", TestSupport.frameworkRes, "--manifest", "AndroidManifest.xml", "compiled.zip"],
                                       currentDirectory: dir.path)
        #expect(link.succeeded, "\(link)")
        let apk = dir.appendingPathComponent("a2.apk").path
        // This aapt2 types attributes without IDs and keeps no raw text: the round trip keeps exactly that.
        #expect(try Oracle.aapt(["dump", "xmltree", apk, "res/xml/config.xml"]).contains(#"A: value=(type 0x10)0x7"#))
        try Self.assertLossless(apk, in: dir)
    }

    /// Every file deflated, resources.arsc included (as some build tools and hand-repacked APKs have it).
    @Test func compressedResourceTable() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-deflated")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.aaptFixture().build(in: dir)
        let unpacked = dir.appendingPathComponent("unpacked")
        #expect(try TestSupport.run("unzip", ["-q", apk, "-d", unpacked.path]).succeeded)
        let deflated = dir.appendingPathComponent("deflated.apk").path
        #expect(try TestSupport.run("zip", ["-q", "-r", "-9", "-X", deflated, "."], currentDirectory: unpacked.path).succeeded)
        let listing = try TestSupport.run("unzip", ["-v", deflated]).stdout
        #expect(listing.split(separator: "\n").contains { $0.hasSuffix("resources.arsc") && $0.contains("Defl") }, "\(listing)")
        try Self.assertLossless(deflated, in: dir)
    }

    @Test func frameworkRes() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-framework")
        defer { try? FileManager.default.removeItem(at: dir) }
        try Self.assertLossless(TestSupport.frameworkRes, in: dir)
    }
}
