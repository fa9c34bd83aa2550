import BinaryXML
import ResourceTable
import Foundation
import Testing
import TestSupport

/// Decoding and re-encoding every binary XML file of framework-res.apk and of aapt-built fixtures must give files
/// whose `aapt dump xmltree` equals the original's.
@Suite(.removesTemporaryDirectories) struct RoundTripTests {
    /// Extracts every binary XML entry (by content, not by name: res/raw may hold text XML) of `apk` with `unzip`.
    static func binaryXMLEntries(of apk: String) throws -> [(String, [UInt8])] {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-extract")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try TestSupport.run("unzip", ["-q", "-o", apk, "AndroidManifest.xml", "res/*", "-d", dir.path])
        guard result.succeeded else { throw FixtureError(message: "unzip failed: \(result)") }
        var out: [(String, [UInt8])] = []
        let enumerator = FileManager.default.enumerator(atPath: dir.path)
        while let relative = enumerator?.nextObject() as? String {
            guard relative.hasSuffix(".xml") else { continue }
            let bytes = try TestSupport.readBytes(dir.appendingPathComponent(relative).path)
            if bytes.count >= 8, bytes[0] == 0x03, bytes[1] == 0x00 { out.append((relative, bytes)) }
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// Re-encodes each file with `transform`, puts the results into a copy of `apk` and compares both xmltree dumps.
    static func assertXMLTreeEqual(apk: String, files: [(String, [UInt8])],
                                   transform: (String, [UInt8]) throws -> [UInt8]) throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-roundtrip")
        defer { try? FileManager.default.removeItem(at: dir) }
        var replaced: [String: [UInt8]] = [:]
        for (name, bytes) in files { replaced[name] = try transform(name, bytes) }
        let copy = dir.appendingPathComponent("copy.apk").path
        try Oracle.replacing(replaced, in: apk, destination: copy)
        let names = files.map(\.0)
        var reported = 0
        // One aapt run per 200 files keeps the command line short and the diff readable.
        for start in stride(from: 0, to: names.count, by: 200) {
            let batch = Array(names[start..<min(start + 200, names.count)])
            let original = try Oracle.aapt(["dump", "xmltree", apk] + batch)
            let ours = try Oracle.aapt(["dump", "xmltree", copy] + batch)
            if original != ours {
                // Find the first differing file to report something readable.
                for name in batch {
                    let a = try Oracle.aapt(["dump", "xmltree", apk, name]), b = try Oracle.aapt(["dump", "xmltree", copy, name])
                    if a != b {
                        let al = a.split(separator: "\n", omittingEmptySubsequences: false), bl = b.split(separator: "\n", omittingEmptySubsequences: false)
                        let i = (0..<min(al.count, bl.count)).first { al[$0] != bl[$0] } ?? min(al.count, bl.count)
                        Issue.record("\(name): xmltree differs at line \(i + 1):\n original: \(i < al.count ? al[i] : "<end>")\n ours:     \(i < bl.count ? bl[i] : "<end>")")
                        reported += 1
                        if reported >= 8 { return }
                    }
                }
            }
        }
    }

    @Test func frameworkResBinaryRoundTrip() throws {
        let files = try Self.binaryXMLEntries(of: TestSupport.frameworkRes)
        #expect(files.count > 1000)
        try Self.assertXMLTreeEqual(apk: TestSupport.frameworkRes, files: files) { _, bytes in
            try XMLTree(binaryXML: bytes).binaryXML()
        }
    }

    @Test func frameworkResTextRoundTrip() throws {
        let files = try Self.binaryXMLEntries(of: TestSupport.frameworkRes)
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: TestSupport.frameworkRes))
        try Self.assertXMLTreeEqual(apk: TestSupport.frameworkRes, files: files) { name, bytes in
            let tree = try XMLTree(binaryXML: bytes)
            let text = tree.textXML(resources: table)
            do {
                return try XMLTree(textXML: text, fileName: name, resources: table, usesUTF8Strings: tree.usesUTF8Strings, rawValues: tree.rawValuePolicy).binaryXML()
            } catch {
                Issue.record("\(name): \(error)")
                return bytes
            }
        }
    }

    /// aapt keeps the source text `?attr/name` of a reference to an attr that framework-res files under
    /// ^attr-private (LineageOS's preference layouts: `style="?attr/preferencePanelStyle"`): the text names it so,
    /// and compiles back to the same reference.
    @Test func privateFrameworkAttrReferenceKeepsItsText() throws {
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: TestSupport.frameworkRes))
        let id = try #require(table.resourceID(type: "^attr-private", name: "activityChooserViewStyle"))
        #expect(table.resourceID(type: "attr", name: "activityChooserViewStyle") == nil)
        for raw in ["?attr/activityChooserViewStyle", "?android:attr/activityChooserViewStyle"] {
            let style = XMLTree.Attribute(namespace: nil, name: "style", resourceID: nil, rawValue: raw, value: .typed(.attribute, id))
            let tree = XMLTree(root: XMLTree.Element(name: "View", attributes: [style], lineNumber: 1, endLineNumber: 1))
            let text = tree.textXML(resources: table)
            #expect(text.contains("style=\"\(raw)\""), "\(text)")
            let back = try XMLTree(textXML: text, fileName: "view.xml", resources: table, rawValues: .untypedAndStrings)
            #expect(back.root?.attributes == [style], "\(String(describing: back.root?.attributes))")
        }
    }

    /// aapt-built fixtures (UTF-8 pools from this aapt, app references through the fixture's own resources.arsc):
    /// binary and text round trips, line numbers included.
    @Test func fixtureRoundTrips() throws {
        var fixture = FixtureAPK.cordovaLike()
        fixture.applicationAttributes = #"android:debuggable="false" android:theme="@android:style/Theme.Material.Light" android:icon="@drawable/icon""#
        fixture.manifestElements = """
            <uses-permission android:name="android.permission.INTERNET" />
            <uses-feature android:glEsVersion="0x00020000" android:required="true" />
            <supports-screens android:anyDensity="true" android:largeScreens="true" />
            """
        fixture.resources["drawable/icon.xml"] = Array(##"<shape xmlns:android="http://schemas.android.com/apk/res/android" android:shape="oval"><solid android:color="#f0f"/><size android:width="48dp" android:height="48dp"/></shape>"##.utf8)
        fixture.resources["xml/config.xml"] = Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <widget xmlns:android="http://schemas.android.com/apk/res/android" id="io.cordova" version="1.0.0">
                <preference name="loglevel" value="DEBUG" />
                <content src="index.html" />
                <access origin="*" />
                <feature name="Whitelist">
                    <param name="android-package" value="org.apache.cordova.whitelist.WhitelistPlugin" />
                    <param name="onload" value="true" />
                </feature>
                <item android:width="16dp" android:pivotX="50%" android:color="#80ff0000" android:gravity="center_vertical|left">@string/greeting is \\@home</item>
            </widget>
            """.utf8)
        let dir = try TestSupport.makeTemporaryDirectory("binxml-fixture-rt")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture.build(in: dir)
        let files = try Self.binaryXMLEntries(of: apk)
        #expect(files.map(\.0) == ["AndroidManifest.xml", "res/drawable/icon.xml", "res/xml/config.xml"])
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        try Self.assertXMLTreeEqual(apk: apk, files: files) { _, bytes in try XMLTree(binaryXML: bytes).binaryXML() }
        try Self.assertXMLTreeEqual(apk: apk, files: files) { name, bytes in
            let tree = try XMLTree(binaryXML: bytes)
            return try XMLTree(textXML: tree.textXML(resources: table), fileName: name, resources: table, usesUTF8Strings: tree.usesUTF8Strings,
                               rawValues: tree.rawValuePolicy).binaryXML()
        }
        // The decoded text reads the way apktool shows it.
        let manifest = try XMLTree(binaryXML: files[0].1).textXML(resources: table, options: TextXMLOptions(keepsLineNumbers: false))
        for expected in [#"android:theme="@android:style/Theme.Material.Light""#, #"android:icon="@drawable/icon""#,
                         #"android:label="@string/app_name""#, #"android:debuggable="false""#, #"android:glEsVersion="0x20000""#,
                         #"<uses-permission android:name="android.permission.INTERNET"/>"#, #"package="com.example.cordova""#] {
            #expect(manifest.contains(expected), "missing \(expected) in\n\(manifest)")
        }
        let config = try XMLTree(binaryXML: files[2].1).textXML(resources: table)
        for expected in [#"android:width="16.0dip""#, #"android:pivotX="50.0%""#, ##"android:color="#80ff0000""##, #"android:gravity="left|center_vertical""#] {
            #expect(config.contains(expected), "missing \(expected) in\n\(config)")
        }
    }

    /// aapt2 (how most APKs are built today): no raw values, res-auto attributes, enum and flag values, layouts.
    @Test func aapt2BuiltRoundTrips() throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-aapt2")
        defer { try? FileManager.default.removeItem(at: dir) }
        try TestSupport.write("""
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.aapt2"
                android:versionCode="3" android:versionName="3.0">
                <uses-sdk android:minSdkVersion="24" android:targetSdkVersion="34" />
                <uses-permission android:name="android.permission.INTERNET" />
                <application android:label="@string/app_name" android:networkSecurityConfig="@xml/nsc"
                    android:theme="@android:style/Theme.Material" android:hardwareAccelerated="true">
                    <activity android:name=".Main" android:exported="true" android:screenOrientation="portrait"
                        android:configChanges="orientation|keyboardHidden|screenSize" android:windowSoftInputMode="adjustResize|stateHidden">
                        <intent-filter>
                            <action android:name="android.intent.action.MAIN" />
                            <category android:name="android.intent.category.LAUNCHER" />
                        </intent-filter>
                    </activity>
                </application>
            </manifest>
            """, to: "AndroidManifest.xml", in: dir)
        try TestSupport.write(#"<resources><string name="app_name">A2</string><attr name="custom" format="dimension|reference"/><attr name="mode"><enum name="fast" value="1"/><enum name="slow" value="2"/></attr></resources>"#,
                              to: "res/values/values.xml", in: dir)
        try TestSupport.write(#"<network-security-config><domain-config cleartextTrafficPermitted="true"><domain includeSubdomains="true">10.0.2.2</domain></domain-config></network-security-config>"#,
                              to: "res/xml/nsc.xml", in: dir)
        try TestSupport.write("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res-auto"
                android:layout_width="match_parent" android:layout_height="wrap_content" android:orientation="vertical"
                app:custom="12dp" app:mode="slow" android:alpha="0.5" android:background="#ff336699">
                <TextView android:text="@string/app_name" android:textSize="14sp" android:gravity="center" android:padding="-2.5px" />
            </LinearLayout>
            """, to: "res/layout/main.xml", in: dir)
        let compile = try TestSupport.run("aapt2", ["compile", "--dir", "res", "-o", "compiled.zip"], currentDirectory: dir.path)
        #expect(compile.succeeded, "\(compile)")
        let link = try TestSupport.run("aapt2", ["link", "-o", "out.apk", "-I", TestSupport.frameworkRes, "--manifest", "AndroidManifest.xml", "compiled.zip"],
                                       currentDirectory: dir.path)
        #expect(link.succeeded, "\(link)")
        let apk = dir.appendingPathComponent("out.apk").path
        let files = try Self.binaryXMLEntries(of: apk)
        #expect(files.map(\.0) == ["AndroidManifest.xml", "res/layout/main.xml", "res/xml/nsc.xml"])
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk))
        try Self.assertXMLTreeEqual(apk: apk, files: files) { _, bytes in try XMLTree(binaryXML: bytes).binaryXML() }
        try Self.assertXMLTreeEqual(apk: apk, files: files) { name, bytes in
            let tree = try XMLTree(binaryXML: bytes)
            #expect(tree.rawValuePolicy != .untypedAndStrings)
            return try XMLTree(textXML: tree.textXML(resources: table), fileName: name, resources: table, usesUTF8Strings: tree.usesUTF8Strings,
                               rawValues: tree.rawValuePolicy).binaryXML()
        }
        let layout = try XMLTree(binaryXML: files[1].1).textXML(resources: table)
        for expected in [#"android:layout_width="match_parent""#, #"android:orientation="vertical""#, #"app:custom="12.0dip""#, #"app:mode="slow""#,
                         #"android:gravity="center""#, #"android:textSize="14.0sp""#, #"android:text="@string/app_name""#, #"android:padding="-2.5px""#,
                         #"android:alpha="0.5""#, ##"android:background="#ff336699""##, #"xmlns:app="http://schemas.android.com/apk/res-auto""#] {
            #expect(layout.contains(expected), "missing \(expected) in\n\(layout)")
        }
        let manifest = try XMLTree(binaryXML: files[0].1).textXML(resources: table)
        for expected in [#"android:configChanges="keyboardHidden|orientation|screenSize""#, #"android:screenOrientation="portrait""#,
                         #"android:windowSoftInputMode="stateHidden|adjustResize""#, #"android:networkSecurityConfig="@xml/nsc""#] {
            #expect(manifest.contains(expected), "missing \(expected) in\n\(manifest)")
        }
    }

    /// The writer produces valid pools in both encodings, whatever the original used.
    @Test func switchingStringEncodingKeepsTheDocument() throws {
        let manifest = try Oracle.entry("AndroidManifest.xml", in: TestSupport.frameworkRes)
        var tree = try XMLTree(binaryXML: manifest)
        let dir = try TestSupport.makeTemporaryDirectory("binxml-encoding")
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = try Oracle.aapt(["dump", "xmltree", TestSupport.frameworkRes, "AndroidManifest.xml"])
        for utf8 in [true, false] {
            tree.usesUTF8Strings = utf8
            let bytes = try tree.binaryXML()
            #expect((bytes[8 + 17] & 0x01 != 0) == utf8)  // pool flags at pool offset 16; UTF8_FLAG is 0x100
            let copy = dir.appendingPathComponent("copy-\(utf8).apk").path
            try Oracle.replacing(["AndroidManifest.xml": bytes], in: TestSupport.frameworkRes, destination: copy)
            #expect(try Oracle.aapt(["dump", "xmltree", copy, "AndroidManifest.xml"]) == original)
        }
    }

    /// Namespaces the text must declare itself: none declared in the binary (some obfuscators strip them), and an
    /// attribute in a namespace that is only declared as the default one.
    @Test func undeclaredAndDefaultNamespaces() throws {
        let android = XMLTree.androidNamespace
        let root = XMLTree.Element(namespace: "urn:x", name: "root", attributes: [
            XMLTree.Attribute(namespace: android, name: "debuggable", resourceID: AndroidAttribute.debuggable, rawValue: nil, value: .boolean(true)),
            XMLTree.Attribute(namespace: "urn:x", name: "flag", resourceID: nil, rawValue: "on", value: .string("on")),
        ], namespaceDeclarations: [XMLTree.Namespace(prefix: "", uri: "urn:x")])
        let text = XMLTree(root: root).textXML()
        #expect(text.contains(#"xmlns:android="http://schemas.android.com/apk/res/android""#), "\(text)")
        let back = try XMLTree(textXML: text)
        let attributes = try #require(back.root?.attributes)
        #expect(back.root?.namespace == "urn:x")
        #expect(attributes.map(\.namespace) == [android, "urn:x"])
        #expect(attributes.map(\.value) == [.boolean(true), .string("on")])
        #expect(attributes.first?.resourceID == AndroidAttribute.debuggable)
    }

    /// Obfuscated manifests keep resource IDs but rename the attribute name strings: text uses the ID's name.
    @Test func attributeNamesComeFromResourceIDs() throws {
        let root = XMLTree.Element(name: "application", attributes: [
            XMLTree.Attribute(namespace: XMLTree.androidNamespace, name: "x1", resourceID: AndroidAttribute.debuggable, rawValue: nil, value: .boolean(true)),
        ], namespaceDeclarations: [XMLTree.Namespace(prefix: "android", uri: XMLTree.androidNamespace)])
        let text = XMLTree(root: root).textXML()
        #expect(text.contains(#"android:debuggable="true""#), "\(text)")
        let back = try XMLTree(textXML: text)
        #expect(back.root?.attributes.first?.resourceID == AndroidAttribute.debuggable)
        #expect(back.root?.attributes.first?.name == "debuggable")
    }

    @Test func binaryRoundTripIsStable() throws {
        // Writing what we wrote gives the same bytes (the writer is deterministic).
        let manifest = try Oracle.entry("AndroidManifest.xml", in: TestSupport.frameworkRes)
        let once = try XMLTree(binaryXML: manifest).binaryXML()
        let twice = try XMLTree(binaryXML: once).binaryXML()
        #expect(once == twice)
        #expect(try XMLTree(binaryXML: once) == XMLTree(binaryXML: manifest))
    }
}
