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
@Suite(.removesTemporaryDirectories) struct LosslessRoundTripTests {
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
    static func assertLossless(_ apk: String, in dir: URL, keepingLines: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let decoded = dir.appendingPathComponent("decoded-\(UUID().uuidString)").path
        let decode = try TestSupport.apkpatch(["decode", apk, "-o", decoded])
        #expect(decode.succeeded, "\(decode)", sourceLocation: sourceLocation)
        let output = dir.appendingPathComponent("roundtrip-\(UUID().uuidString).apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", decoded, "--no-sign", "--out", output, "-q"])
        #expect(run.succeeded, "\(run)", sourceLocation: sourceLocation)
        guard run.succeeded else { return }
        let names = try RoundTripTests.binaryXMLEntries(of: apk).map(\.0)
        #expect(!names.isEmpty, sourceLocation: sourceLocation)
        func withoutLines(_ dump: String) -> String {
            keepingLines ? dump : dump.replacingOccurrences(of: #" \(line=\d+\)"#, with: "", options: .regularExpression)
        }
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

    /// A `?` with no name after it is a string to aapt2, not a theme attribute reference: Google's Leanback sample
    /// (androguard's com.example.android.tvleanback.apk in the real-world corpus) has `searchSuggestSelection=" ?"`,
    /// which `run` refused to compile back ("the APK has no resource attr/").
    @Test func questionMarkWithoutNameIsAString() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-question-mark")
        defer { try? FileManager.default.removeItem(at: dir) }
        try TestSupport.write(#"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.search"><uses-sdk android:minSdkVersion="21" android:targetSdkVersion="34"/><application android:label="@string/app_name"/></manifest>"#,
                              to: "AndroidManifest.xml", in: dir)
        try TestSupport.write(#"<resources><string name="app_name">Search</string></resources>"#, to: "res/values/values.xml", in: dir)
        try TestSupport.write(#"<searchable xmlns:android="http://schemas.android.com/apk/res/android" android:label="@string/app_name" android:searchSuggestSelection=" ?" android:searchSuggestPath="?" android:hint="?attr/" android:searchSuggestIntentData="content://x/?q=1"/>"#,
                              to: "res/xml/searchable.xml", in: dir)
        let compile = try TestSupport.run("aapt2", ["compile", "--dir", "res", "-o", "compiled.zip"], currentDirectory: dir.path)
        try #require(compile.succeeded, "\(compile)")
        let link = try TestSupport.run("aapt2", ["link", "-o", "search.apk", "-I", TestSupport.frameworkRes, "--manifest", "AndroidManifest.xml", "compiled.zip"],
                                       currentDirectory: dir.path)
        try #require(link.succeeded, "\(link)")
        let apk = dir.appendingPathComponent("search.apk").path
        let tree = try Oracle.aapt(["dump", "xmltree", apk, "res/xml/searchable.xml"])
        #expect(tree.contains(#"android:searchSuggestSelection(0x010101d8)=" ?""#), "aapt2 no longer writes the string: \(tree)")
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

    /// Typed values in forms aapt never writes, as other build tools do: Godot's export writes the manifest's
    /// booleans as 1 (`isGame`, `hasFragileUserData`: org.sajeg.fallingblocks), SystemWebView's repack has an enum
    /// stored as hex (`scrollbarStyle`), and a hand-patched file may hold a number no symbol of an enum names or a
    /// TYPE_NULL "@null". The decoded text records each in tools:typedValues; unchanged text gives them back, and
    /// an edited attribute compiles from its new text.
    @Test func nonCanonicalTypedValuesFromOtherBuildTools() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-typed")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = Self.aaptFixture()
        fixture.applicationAttributes = #"android:allowBackup="true" android:hasCode="false""#
        fixture.resources["layout/main.xml"] = Array("""
            <ScrollView xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="match_parent"
                android:layout_height="match_parent" android:scrollbarStyle="outsideOverlay" android:visibility="gone"
                android:background="@null"/>
            """.utf8)
        let apk = try fixture.build(in: dir)
        func edited(_ entry: String, _ change: (inout XMLTree.Attribute) -> Void) throws -> [UInt8] {
            var tree = try XMLTree(binaryXML: try Oracle.entry(entry, in: apk))
            func visit(_ element: inout XMLTree.Element) {
                for i in element.attributes.indices { change(&element.attributes[i]) }
                element.children = element.children.map { node in
                    guard case .element(var child) = node else { return node }
                    visit(&child)
                    return .element(child)
                }
            }
            if var root = tree.root { visit(&root); tree.root = root }
            return try tree.binaryXML()
        }
        let manifest = try edited("AndroidManifest.xml") { attribute in
            if ["allowBackup", "exported"].contains(attribute.name), case .typed(.intBoolean, _) = attribute.value { attribute.value = .typed(.intBoolean, 1) }
        }
        let layout = try edited("res/layout/main.xml") { attribute in
            switch attribute.name {
            case "scrollbarStyle": attribute.value = .typed(.intHex, 0x0200_0000)
            case "visibility": attribute.value = .typed(.intDecimal, 7)  // no symbol of visibility has 7
            case "background": attribute.value = .typed(.null, 0)
            default: break
            }
        }
        let patched = dir.appendingPathComponent("patched.apk").path
        try Oracle.replacing(["AndroidManifest.xml": manifest, "res/layout/main.xml": layout], in: apk, destination: patched)
        let dump = try Oracle.aapt(["dump", "xmltree", patched, "AndroidManifest.xml"]) + Oracle.aapt(["dump", "xmltree", patched, "res/layout/main.xml"])
        for expected in ["A: android:allowBackup(0x01010280)=(type 0x12)0x1", "A: android:exported(0x01010010)=(type 0x12)0x1",
                         "A: android:scrollbarStyle(0x0101007f)=(type 0x11)0x2000000", "A: android:visibility(0x010100dc)=(type 0x10)0x7",
                         "A: android:background(0x010100d4)=(null)", "A: android:hasCode(0x0101000c)=(type 0x12)0x0"] {
            #expect(dump.contains(expected), "fixture lacks \(expected):\n\(dump)")
        }
        try Self.assertLossless(patched, in: dir)

        // The text says what each value means; an edit to such an attribute compiles from the new text.
        let decoded = dir.appendingPathComponent("decoded")
        #expect(try TestSupport.apkpatch(["decode", patched, "-o", decoded.path]).succeeded)
        var text = try String(contentsOfFile: decoded.path + "/AndroidManifest.xml", encoding: .utf8)
        #expect(text.contains(#"android:allowBackup="true""#) && text.contains(#"tools:typedValues="android:allowBackup=0x12:0x00000001""#), "\(text)")
        #expect(!text.contains("hasCode=0x"), "\(text)")
        text = text.replacingOccurrences(of: #"android:allowBackup="true""#, with: #"android:allowBackup="false""#)
        try TestSupport.write(text, to: "AndroidManifest.xml", in: decoded)
        let layoutText = try String(contentsOfFile: decoded.path + "/res/layout/main.xml", encoding: .utf8)
        for expected in [#"android:visibility="7""#, #"android:scrollbarStyle="outsideOverlay""#, #"android:background="@null""#,
                         "android:scrollbarStyle=0x11:0x02000000", "android:visibility=0x10:0x00000007", "android:background=0x0:0x00000000"] {
            #expect(layoutText.contains(expected), "missing \(expected) in\n\(layoutText)")
        }
        let output = dir.appendingPathComponent("edited.apk").path
        let run = try TestSupport.apkpatch(["run", patched, "--patch", decoded.path, "--no-sign", "--out", output, "-q"])
        #expect(run.succeeded, "\(run)")
        let after = try Oracle.aapt(["dump", "xmltree", output, "AndroidManifest.xml"])
        #expect(after.contains("A: android:allowBackup(0x01010280)=(type 0x12)0x0") && after.contains("A: android:exported(0x01010010)=(type 0x12)0x1"), "\(after)")
        // A malformed record is an error with the line.
        text = text.replacingOccurrences(of: "allowBackup=0x12:0x00000001", with: "allowBackup=true")
        try TestSupport.write(text, to: "AndroidManifest.xml", in: decoded)
        let bad = try TestSupport.apkpatch(["run", patched, "--patch", decoded.path, "--no-sign", "--out", output + "2", "-q"])
        #expect(!bad.succeeded && bad.stderr.contains("AndroidManifest.xml:") && bad.stderr.contains("name=0xTYPE:0xDATA"), "\(bad)")
        #expect(!FileManager.default.fileExists(atPath: output + "2"))
    }

    /// aapt keeps the source text of a reference in an attribute without an ID (`style="@android:style/ButtonBar"`
    /// in souch.smsbypass's layouts, F-Droid): its files must keep that raw text after a round trip, as written.
    @Test func aaptReferenceTextWithoutAttributeID() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-style")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = Self.aaptFixture()
        fixture.resources["layout/bar.xml"] = Array("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="match_parent"
                android:layout_height="wrap_content" style="@android:style/ButtonBar">
              <Button style="@*android:style/Widget.Button" android:text="@string/app_name" android:layout_width="wrap_content" android:layout_height="wrap_content"/>
              <TextView style="@com.example.fixture:string/app_name" android:layout_width="wrap_content" android:layout_height="wrap_content"/>
            </LinearLayout>
            """.utf8)
        let apk = try fixture.build(in: dir)
        let dump = try Oracle.aapt(["dump", "xmltree", apk, "res/layout/bar.xml"])
        for raw in ["@android:style/ButtonBar", "@*android:style/Widget.Button", "@com.example.fixture:string/app_name"] {
            #expect(dump.contains("(Raw: \"\(raw)\")"), "fixture lacks the raw \(raw):\n\(dump)")
        }
        try Self.assertLossless(apk, in: dir)
    }

    /// Text nodes keep their exact white space: aapt keeps a text's inner white space and compacts a run at either
    /// end to the character next to the text (a platform manifest's stray ` -->` line comes out as " -->\n");
    /// other tools may write any white space. Decoded text writes what the compiler would compact as character
    /// references, which it keeps, and still puts every element on its own line (a line it cannot reach, such as
    /// 0, goes in tools:lineNumber).
    @Test func textNodesKeepTheirWhiteSpace() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-text")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = Self.aaptFixture()
        fixture.resources["xml/text.xml"] = Array("""
            <texts>
                <permission name="a"/>
                -->

                <t>one  two
                   three</t>
                <t>  padded	 </t>
                <t>
                    lines
                </t>
                <t>a<b/>  b  <c/>
                </t>
            </texts>
            """.utf8)
        let apk = try fixture.build(in: dir)
        let aapt = try Oracle.aapt(["dump", "xmltree", apk, "res/xml/text.xml"])
        for expected in [#"C: " -->\n""#, #"C: "one  two\n       three""#, "C: \" padded\t\"", #"C: " lines\n""#, #"C: " b ""#] {
            #expect(aapt.contains(expected), "aapt no longer writes \(expected):\n\(aapt)")
        }
        // Texts aapt never writes (other tools, hand-patched files): white space only, runs at the ends, CR.
        var tree = try XMLTree(binaryXML: try Oracle.entry("res/xml/text.xml", in: apk))
        let odd = ["\n\n", " ", "\t", "  x  ", "\r\ny\r", "z\n\n\n", "\n\tw", " v\n"]
        guard var root = tree.root else { Issue.record("no root"); return }
        for (index, text) in odd.enumerated() {
            var element = XMLTree.Element(namespace: nil, name: "odd", attributes: [], children: [.text(XMLTree.Text(text: text, lineNumber: UInt32(20 + index)))],
                                          namespaceDeclarations: [], lineNumber: UInt32(20 + index), endLineNumber: UInt32(20 + index))
            if index % 2 == 1 {
                element.children.append(.element(XMLTree.Element(namespace: nil, name: "e", attributes: [], children: [], namespaceDeclarations: [],
                                                                 lineNumber: UInt32(21 + index), endLineNumber: UInt32(21 + index))))
            }
            root.children.append(.element(element))
        }
        // An element with no source line (aapt gives 0 to the uses-sdk it adds to a platform manifest).
        root.children.append(.element(XMLTree.Element(name: "added", lineNumber: 0, endLineNumber: 0)))
        root.endLineNumber = 30
        tree.root = root
        let patched = dir.appendingPathComponent("patched.apk").path
        try Oracle.replacing(["res/xml/text.xml": try tree.binaryXML()], in: apk, destination: patched)
        let dump = try Oracle.aapt(["dump", "xmltree", patched, "res/xml/text.xml"])
        #expect(dump.contains("C: \"\r\\ny\r\"") && dump.contains(#"C: "\n\n""#), "\(dump)")
        try Self.assertLossless(patched, in: dir, keepingLines: true)
    }

    /// Text written by hand compiles as aapt compiles it: white space inside kept, a run at either end compacted to
    /// the character next to the text, text of white space only dropped.
    @Test func handWrittenTextCompilesAsAapt() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-handwritten-text")
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = "<texts>\n\t  hello  \n  world \t\n  <b/>\n   <c>\r\n x\ty\n\n</c> \t <d>  </d></texts>\n"
        var fixture = Self.aaptFixture()
        fixture.resources["xml/text.xml"] = Array(text.utf8)
        let apk = try fixture.build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(text, to: "res/xml/text.xml", in: patch)
        let output = dir.appendingPathComponent("out.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--no-sign", "--out", output, "-q"])
        try #require(run.succeeded, "\(run)")
        let ours = try Oracle.aapt(["dump", "xmltree", output, "res/xml/text.xml"])
        #expect(ours == (try Oracle.aapt(["dump", "xmltree", apk, "res/xml/text.xml"])))
        #expect(ours.contains(#"C: " hello  \n  world ""#) && ours.contains("C: \" x\ty\\n\""), "\(ours)")
    }

    @Test func frameworkRes() throws {
        let dir = try TestSupport.makeTemporaryDirectory("lossless-framework")
        defer { try? FileManager.default.removeItem(at: dir) }
        try Self.assertLossless(TestSupport.frameworkRes, in: dir)
    }
}
