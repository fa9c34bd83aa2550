import Foundation
@testable import ResourceTable
import Testing
import TestSupport

/// The Android Gradle Plugin's aapt2 writes a resource table without any package for an app that has no resources
/// (in the real-world corpus: Appium's UiAutomator2 server, Mobly's UiAutomator snippet, scrcpy's server). `decode`
/// writes such an APK's manifest, `run` passes its table through untouched, and resources a patch adds go into a new
/// package 0x7f named as the manifest's package, as aapt2 makes it when an app has resources; checked with aapt,
/// aapt2, apktool, apksigner and Android's own table loader (libandroidfw).
@Suite(.removesTemporaryDirectories) struct PackagelessTableTests {
    /// The 40 bytes those APKs hold: the table header (package count 0) and an empty UTF-8 value string pool.
    static let table: [UInt8] = [
        0x02, 0x00, 0x0C, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x1C, 0x00, 0x1C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x1C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]

    /// An APK of a manifest and that table (aapt2's link of the manifest alone, its table replaced, stored), or of
    /// the manifest alone (`withTable` false: no resources.arsc, as androguard's AndroidManifest_ShortName.apk).
    static func fixture(in dir: URL, withTable: Bool = true) throws -> String {
        try TestSupport.write("""
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.nores"
                android:versionCode="3" android:versionName="1.3">
              <uses-sdk android:minSdkVersion="21" android:targetSdkVersion="33"/>
              <application android:label="No resources" android:hasCode="false"/>
            </manifest>
            """, to: "AndroidManifest.xml", in: dir)
        let apk = dir.appendingPathComponent("nores.apk").path
        let link = try TestSupport.run("aapt2", ["link", "-o", apk, "-I", TestSupport.frameworkRes, "--manifest", dir.appendingPathComponent("AndroidManifest.xml").path])
        guard link.succeeded else { throw FixtureError(message: "aapt2 link failed: \(link)") }
        let tableDir = dir.appendingPathComponent("table")
        try TestSupport.write(table, to: "resources.arsc", in: tableDir)
        let zip = try TestSupport.run("zip", ["-q", "-X", "-0", apk, "resources.arsc"], currentDirectory: tableDir.path)
        guard zip.succeeded else { throw FixtureError(message: "zip failed: \(zip)") }
        #expect(try Oracle.entry("resources.arsc", in: apk) == table)
        if !withTable {
            let delete = try TestSupport.run("zip", ["-q", "-d", apk, "resources.arsc"])
            guard delete.succeeded else { throw FixtureError(message: "zip -d failed: \(delete)") }
        }
        return apk
    }

    @Test func tableWithoutPackageReadsAsEmptyAndWritesBackUnchanged() throws {
        let parsed = try ResourceTable(bytes: Self.table, packageNameIfAbsent: "com.example.nores")
        #expect(parsed.entries.isEmpty && parsed.packageID == 0x7F && parsed.packageName == "com.example.nores")
        #expect(try parsed.encoded() == Self.table)
    }

    @Test func decodeThenRunKeepsTheTable() throws {
        let dir = try TestSupport.makeTemporaryDirectory("packageless-decode")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture(in: dir)
        let decoded = dir.appendingPathComponent("decoded").path
        let decode = try TestSupport.apkpatch(["decode", apk, "-o", decoded])
        try #require(decode.succeeded, "\(decode)")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: decoded) == ["AndroidManifest.xml"])
        let output = dir.appendingPathComponent("roundtrip.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", decoded, "--no-sign", "--out", output, "-q"])
        try #require(run.succeeded, "\(run)")
        #expect(try Oracle.entry("resources.arsc", in: output) == Self.table)
        #expect(try Oracle.aapt(["dump", "xmltree", output, "AndroidManifest.xml"]) == Oracle.aapt(["dump", "xmltree", apk, "AndroidManifest.xml"]))
    }

    /// Also for an APK without any resources.arsc: `run` writes one (stored, as Android 11+ wants it).
    @Test(arguments: [true, false]) func addedResourcesGoInANewAppPackage(withTable: Bool) throws {
        let dir = try TestSupport.makeTemporaryDirectory("packageless-add")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.fixture(in: dir, withTable: withTable)
        #expect(try TestSupport.run("unzip", ["-l", apk]).stdout.contains("resources.arsc") == withTable)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(#"<resources><string name="greeting">Hello</string><color name="accent">#ff123456</color></resources>"#,
                              to: "res/values/values.xml", in: patch)
        try TestSupport.write(#"<resources><string name="greeting">Bonjour</string></resources>"#, to: "res/values-fr/strings.xml", in: patch)
        try TestSupport.write("""
            <TextView xmlns:android="http://schemas.android.com/apk/res/android" android:id="@+id/text" android:layout_width="wrap_content"
                android:layout_height="wrap_content" android:text="@string/greeting" android:textColor="@color/accent"/>
            """, to: "res/layout/main.xml", in: patch)
        let ca = try ResourceAddingTests.makeCertificate("proxy-ca", in: dir)
        let keyStore = dir.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "packageless", dname: "CN=packageless")
        let output = dir.appendingPathComponent("out.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--trust-user-certs", "--ca-cert", ca, "--ks", keyStore,
                                            "--ks-pass", "env:PACKAGELESS_PASS", "--out", output, "-q"], environment: ["PACKAGELESS_PASS": "packageless"])
        try #require(run.succeeded, "\(run)")

        let resources = try Oracle.aapt(["dump", "--values", "resources", output])
        #expect(resources.contains("Package Group 0 id=0x7f packageCount=1 name=com.example.nores"), "\(resources)")
        let listing = try TestSupport.run("unzip", ["-v", output]).stdout
        #expect(listing.split(separator: "\n").contains { $0.hasSuffix(" resources.arsc") && $0.contains(" Stored ") }, "\(listing)")
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
        let badging = try Oracle.aapt(["dump", "badging", output])
        #expect(badging.contains("package: name='com.example.nores' versionCode='3' versionName='1.3'") && badging.contains("application-label:'No resources'"),
                "\(badging)")
        for expected in ["com.example.nores:string/greeting", #"(string8) "Hello""#, #"(string8) "Bonjour""#, "com.example.nores:color/accent",
                         "com.example.nores:layout/main", "com.example.nores:id/text", "com.example.nores:xml/network_security_config",
                         "com.example.nores:raw/proxy_ca"] {
            #expect(resources.contains(expected), "aapt dump resources lacks \(expected):\n\(resources)")
        }
        let aapt2 = try TestSupport.run("aapt2", ["dump", "resources", output])
        #expect(aapt2.succeeded && aapt2.stdout.contains("Package name=com.example.nores id=7f"), "\(aapt2)")
        let arsc = dir.appendingPathComponent("out.arsc")
        try Data(try Oracle.entry("resources.arsc", in: output)).write(to: arsc)
        let loaded = try TestSupport.libandroidfwTable(arsc.path)
        #expect(loaded.succeeded && loaded.stdout.hasPrefix("package 0x7f com.example.nores\n"), "\(loaded)")
        let layout = try Oracle.aapt(["dump", "xmltree", output, "res/layout/main.xml"])
        #expect(layout.contains("A: android:text(0x0101014f)=@0x7f") && layout.contains("A: android:textColor(0x01010098)=@0x7f"), "\(layout)")
        let manifest = try Oracle.aapt(["dump", "xmltree", output, "AndroidManifest.xml"])
        #expect(manifest.contains("A: android:networkSecurityConfig(0x01010527)=@0x7f"), "\(manifest)")
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
        let decoded = try ResourceAddingTests.apktool(output, in: dir)
        let strings = try String(contentsOfFile: decoded + "/res/values-fr/strings.xml", encoding: .utf8)
        #expect(strings.contains(#"<string name="greeting">Bonjour</string>"#), "\(strings)")
    }
}
