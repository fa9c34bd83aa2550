import BinaryXML
import Foundation
import Testing
import TestSupport

/// `manifest: package:` and `run --rename-package`: the copy's manifest and resources.arsc name the new package,
/// class names stay where the code is, authorities and the app's permissions move with the package, and what still
/// names the old one is listed. Checked with `aapt dump badging`/`xmltree`/`resources`, `apktool d` and `apksigner`.
@Suite struct PackageRenameTests {
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
        fixture.resources["xml/syncadapter.xml"] = Array(#"<sync-adapter xmlns:android="http://schemas.android.com/apk/res/android" android:contentAuthority="com.example.fixture.files" android:accountType="com.example.fixture.account" />"#.utf8)
        return fixture
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
                         "res/xml/syncadapter.xml <sync-adapter> contentAuthority", "accountType"] {
            #expect(result.stdout.contains(expected), "missing \(expected) in\n\(result.stdout)")
        }
        let decoded = try ResourceAddingTests.apktool(out, in: dir)
        let text = try String(contentsOfFile: decoded + "/AndroidManifest.xml", encoding: .utf8)
        #expect(text.contains(#"package="com.example.copy""#) && text.contains(#"android:name="com.example.fixture.MainActivity""#), "\(text)")
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
