import Foundation
import TestSupport

/// The valid inputs mutations start from, made at run time by the real tools (aapt, apksigner, keytool, zip,
/// openssl) and by apkpatch itself where it is the only writer (v4 with `sign`, a rotation lineage with `rotate`,
/// text resources with `decode`): APKs signed each way, split sets (a .apks with bundletool's toc.pb and a
/// standalone variant, an .xapk, an .apkm and a folder of APKs), keystores (one slow to open), a lineage, an .idsig, certificates, a device spec, and a
/// patch directory (apkpatch.yml, text manifest, res/ XML and values).
public struct Seeds: Sendable {
    public let directory: URL
    public let apkpatch: String
    /// Distinctive, so that a command echoing it (an error, adb's arguments) is caught.
    public static let password = "fuzz-s3cret-pw"
    /// The environment every command gets: the keystore password (never in argv), no Swift backtracer (a trap
    /// must end the process at once, not wait on a symbolicating helper), a TMPDIR inside the case.
    public static let passwordVariable = "FUZZ_KS_PASS"

    /// PBKDF2 iterations of slow.p12 (Refusals): seconds to open at 3,000,000; the short pass in the test suite
    /// takes fewer, so a loaded CI machine opens it well within the timeout.
    public let slowKeyStoreIterations: Int

    public init(directory: URL, apkpatch: String, slowKeyStoreIterations: Int = 3_000_000) throws {
        self.directory = directory
        self.apkpatch = apkpatch
        self.slowKeyStoreIterations = slowKeyStoreIterations
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try build()
    }

    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    public func bytes(_ name: String) throws -> [UInt8] { try TestSupport.readBytes(path(name)) }

    public static let keyOptions = ["--ks-pass", "env:\(passwordVariable)"]

    func run(_ tool: String, _ arguments: [String], in directory: URL? = nil) throws {
        let result = try TestSupport.run(tool, arguments, environment: [Self.passwordVariable: Self.password], currentDirectory: (directory ?? self.directory).path)
        guard result.succeeded else { throw FixtureError(message: "seed: \(tool) \(arguments.joined(separator: " ")) failed:\n\(result)") }
    }

    func build() throws {
        let d = directory
        try TestSupport.makeKeyStore(at: path("ks.p12"), password: Self.password, alias: "k", dname: "CN=Fuzz RSA, O=apkpatch, C=US")
        try TestSupport.makeKeyStore(at: path("ks2.p12"), password: Self.password, alias: "k2", dname: "CN=Fuzz EC, C=US",
                                     keyAlgorithm: "EC", keySize: 256)
        try TestSupport.makeKeyStore(at: path("ks.jks"), password: Self.password, alias: "j", dname: "CN=Fuzz JKS, C=US", type: "JKS")
        // ks.p12's key in a keystore that is slow to open (PBKDF2 for the key, the certificate and the MAC), so a
        // command refusing something is still decrypting it on another thread (Refusals).
        let pem = path("ks-key-and-cert.pem")
        try run("openssl", ["pkcs12", "-in", path("ks.p12"), "-passin", "env:\(Self.passwordVariable)", "-nodes", "-out", pem])
        try run("openssl", ["pkcs12", "-export", "-in", pem, "-out", path("slow.p12"), "-passout", "env:\(Self.passwordVariable)",
                            "-iter", String(slowKeyStoreIterations), "-name", "k"])
        try FileManager.default.removeItem(atPath: pem)

        // The app: manifest, strings, a layout, an XML resource, assets stored and deflated, a dex, a stored .so.
        var app = FixtureAPK()
        app.packageName = "com.example.fuzz"
        app.applicationAttributes = #"android:debuggable="true" android:extractNativeLibs="false""#
        app.manifestElements = #"<uses-permission android:name="android.permission.INTERNET" />"#
        app.applicationElements = #"<meta-data android:name="answer" android:value="42" />"#
        app.strings = ["greeting": "Hello, <b>world</b>", "plain": "Plain text"]
        app.resources = [
            "xml/config.xml": Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <widget xmlns:cdv="http://cordova.apache.org/ns/1.0" id="com.example.fuzz" version="1.0">
                <content src="index.html" /><preference name="loglevel" value="DEBUG" />text &amp; <![CDATA[cdata]]>
            </widget>
            """.utf8),
            "layout/main.xml": Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android"
                android:layout_width="match_parent" android:layout_height="match_parent" android:orientation="vertical">
                <TextView android:id="@+id/text" android:layout_width="wrap_content" android:layout_height="wrap_content"
                    android:text="@string/greeting" android:padding="16dp" />
            </LinearLayout>
            """.utf8),
            "values/more.xml": Array("""
            <resources>
                <color name="accent">#ff336699</color><dimen name="margin">16dp</dimen><bool name="flag">true</bool>
                <integer name="count">3</integer><string-array name="planets"><item>Mercury</item><item>Venus</item></string-array>
                <plurals name="apples"><item quantity="one">%d apple</item><item quantity="other">%d apples</item></plurals>
                <style name="AppTheme" parent="android:Theme.Material"><item name="android:colorAccent">@color/accent</item></style>
                <attr name="level" format="enum"><enum name="low" value="0"/><enum name="high" value="1"/></attr>
            </resources>
            """.utf8),
        ]
        app.assets = ["stored.txt": Array(repeating: UInt8(ascii: "s"), count: 300), "www/index.html": Array(String(repeating: "<p>deflate me</p>\n", count: 40).utf8)]
        app.storedExtensions = [".txt", ".so", ".arsc"]
        app.rawFiles = ["classes.dex": Array("dex\n035\0".utf8) + FixtureAPK.pseudoRandomBytes(count: 400, seed: 3),
                        "lib/arm64-v8a/libnative.so": FixtureAPK.pseudoRandomBytes(count: 3000, seed: 2)]
        _ = try app.build(in: d, name: "app-aapt.apk")
        // zipalign -p: the stored .so on a page (extractNativeLibs="false"), so the signed seeds install.
        try run("zipalign", ["-f", "-p", "4", path("app-aapt.apk"), path("app.apk")])

        let keys = ["--ks", path("ks.p12")] + Self.keyOptions
        try run("apksigner", ["sign", "--ks", path("ks.p12"), "--ks-pass", "env:\(Self.passwordVariable)", "--out", path("v1.apk"),
                              "--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--min-sdk-version", "21", path("app.apk")])
        try run("apksigner", ["sign", "--ks", path("ks.p12"), "--ks-pass", "env:\(Self.passwordVariable)", "--out", path("v2.apk"),
                              "--v3-signing-enabled", "false", path("app.apk")])
        try run("apksigner", ["sign", "--ks", path("ks2.p12"), "--ks-pass", "env:\(Self.passwordVariable)", "--out", path("v3.apk"),
                              "--v3-signing-enabled", "true", "--v4-signing-enabled", "false", path("app.apk")])
        try run(apkpatch, ["sign"] + keys + ["--v4-signing-enabled", "true", "--out", path("v4.apk"), path("app.apk")])
        try run(apkpatch, ["rotate", "--out", path("lineage.bin"), "--old-signer", "--ks", path("ks.p12")] + Self.keyOptions
                + ["--new-signer", "--ks", path("ks2.p12")] + Self.keyOptions)
        try run(apkpatch, ["sign", "--ks", path("ks.p12")] + Self.keyOptions + ["--next-signer", "--ks", path("ks2.p12")] + Self.keyOptions
                + ["--lineage", path("lineage.bin"), "--out", path("rotated.apk"), path("app.apk")])

        // Split sets: aapt's --split fr gives a base and a configuration split.
        let src = d.appendingPathComponent("set-src")
        try TestSupport.write(#"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.fuzzset" android:versionCode="7" android:versionName="1.0"><uses-sdk android:minSdkVersion="21" android:targetSdkVersion="33"/><application android:label="@string/app_name"/></manifest>"#,
                              to: "AndroidManifest.xml", in: src)
        try TestSupport.write("<resources><string name=\"app_name\">Set</string><string name=\"hello\">Hello</string></resources>", to: "res/values/strings.xml", in: src)
        try TestSupport.write("<resources><string name=\"hello\">Bonjour</string></resources>", to: "res/values-fr/strings.xml", in: src)
        try run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes, "-F", "base.apk", "--split", "fr"], in: src)
        let apks = d.appendingPathComponent("apks-stage"), xapk = d.appendingPathComponent("xapk-stage")
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base.apk").path), to: "splits/base-master.apk", in: apks)
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base_fr.apk").path), to: "splits/base-fr.apk", in: apks)
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base.apk").path), to: "standalones/standalone.apk", in: apks)
        try TestSupport.write(Protobuf.bundletoolTOC(package: "com.example.fuzzset", master: "splits/base-master.apk",
                                                     language: ("config.fr", "splits/base-fr.apk", "fr"), standalone: "standalones/standalone.apk"),
                              to: "toc.pb", in: apks)
        try run("zip", ["-q", "-X", "-0", path("set-unsigned.apks"), "toc.pb", "splits/base-master.apk", "splits/base-fr.apk", "standalones/standalone.apk"],
                in: apks)
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base.apk").path), to: "com.example.fuzzset.apk", in: xapk)
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base_fr.apk").path), to: "config.fr.apk", in: xapk)
        try TestSupport.write(#"{"xapk_version":2,"package_name":"com.example.fuzzset","version_code":"7","version_name":"1.0","split_apks":[{"file":"com.example.fuzzset.apk","id":"base"},{"file":"config.fr.apk","id":"config.fr"}]}"#,
                              to: "manifest.json", in: xapk)
        try run("zip", ["-q", "-X", path("set-unsigned.xapk"), "manifest.json", "com.example.fuzzset.apk", "config.fr.apk"], in: xapk)
        // APKMirror's .apkm (info.json and the APKs at the top) and a folder of APKs: the other forms a set comes in.
        let apkm = d.appendingPathComponent("apkm-stage")
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base.apk").path), to: "base.apk", in: apkm)
        try TestSupport.write(TestSupport.readBytes(src.appendingPathComponent("base_fr.apk").path), to: "split_config.fr.apk", in: apkm)
        try TestSupport.write(#"{"pname":"com.example.fuzzset","versioncode":"7","apk_title":"Set"}"#, to: "info.json", in: apkm)
        try run("zip", ["-q", "-X", path("set-unsigned.apkm"), "info.json", "base.apk", "split_config.fr.apk"], in: apkm)
        try TestSupport.write(#"{"supportedAbis": ["arm64-v8a", "armeabi-v7a"], "supportedLocales": ["fr-FR", "en-US"], "screenDensity": 480, "sdkVersion": 33}"#,
                              to: "device-spec.json", in: d)
        // Signed (so verify reads them to the end), by apkpatch: apksigner signs one APK, not a set.
        for ext in ["apks", "xapk", "apkm"] { try run(apkpatch, ["sign"] + keys + ["--out", path("set.\(ext)"), path("set-unsigned.\(ext)")]) }
        try FileManager.default.createDirectory(at: d.appendingPathComponent("set-dir-unsigned"), withIntermediateDirectories: true)
        for (from, to) in [("base.apk", "base.apk"), ("base_fr.apk", "split_config.fr.apk")] {
            try FileManager.default.copyItem(at: src.appendingPathComponent(from), to: d.appendingPathComponent("set-dir-unsigned/\(to)"))
        }
        try run(apkpatch, ["sign"] + keys + ["--out", path("set-dir"), path("set-dir-unsigned")])

        // Certificates: DER and PEM (a proxy CA for --ca-cert).
        try run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=Fuzz CA"])
        try run("openssl", ["x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der"])

        // The patch directory: decode's text of the app, edited values, an apkpatch.yml using every section.
        try run(apkpatch, ["decode", path("app.apk"), "-o", path("decoded")])
        let patch = d.appendingPathComponent("patch")
        for file in ["AndroidManifest.xml", "res/xml/config.xml", "res/layout/main.xml"] {
            try TestSupport.write(TestSupport.readBytes(d.appendingPathComponent("decoded/\(file)").path), to: file, in: patch)
        }
        try TestSupport.write("""
        <?xml version="1.0" encoding="utf-8"?>
        <resources>
            <string name="app_name">Fuzzed</string>
            <string name="greeting">Hi <i>there</i> <font color="#ff0000">red</font> <annotation key="v">x</annotation></string>
            <string name="added">New %1$s \\'quoted\\' \\u0041</string>
            <bool name="flag">false</bool><color name="accent">#f00</color><dimen name="margin">8sp</dimen>
            <string-array name="planets"><item>Earth</item></string-array>
            <plurals name="apples"><item quantity="other">%d pommes</item></plurals>
            <item type="id" name="extra_id"/>
            <public type="string" name="added2" id="0x7f0b00ff"/>
            <string name="added2">@string/plain</string>
            <style name="AppTheme.Child" parent="AppTheme"><item name="level">high</item></style>
        </resources>
        """, to: "res/values/strings.xml", in: patch)
        try TestSupport.write("<resources><string name=\"app_name\">Fuzzé</string></resources>", to: "res/values-fr/strings.xml", in: patch)
        try TestSupport.write("hello", to: "assets/new.txt", in: patch)
        try TestSupport.write(TestSupport.readBytes(path("ca.pem")), to: "certs/proxy.pem", in: patch)
        try TestSupport.write("""
        # every section
        delete:
          - assets/stored.txt
        store:
          - "**/*.bin"
        deflate: [assets/www/*.html]
        manifest:
          debuggable: true
          versionCode: 42
          versionName: "1.2-test"
          label: "My App (test)"
          usesCleartextTraffic: true
          extractNativeLibs: false
          minSdkVersion: 24
          targetSdkVersion: 34
          package: com.example.copy
        networkSecurity:
          trustUserCertificates: true
          keepPins: false
          caCertificates: [certs/proxy.pem]
        """, to: "apkpatch.yml", in: patch)
        // A minimal patch for the commands whose subject is the APK.
        try TestSupport.write("ok", to: "empty-patch/assets/ok.txt", in: d)
    }
}
