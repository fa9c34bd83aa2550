import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// Adding resources and the network-security preset, through the built binary, checked with `aapt dump`,
/// `apktool d` (a decoder nobody here wrote must read every added resource) and `apksigner verify`.
@Suite(.removesTemporaryDirectories) struct ResourceAddingTests {
    /// `apktool d` of `apk` into `directory`; returns the decoded directory.
    static func apktool(_ apk: String, in directory: URL) throws -> String {
        let out = directory.appendingPathComponent("apktool-\(UUID().uuidString)").path
        let result = try TestSupport.run("apktool", ["d", "-f", "-o", out, apk])
        #expect(result.succeeded, "\(result)")
        return out
    }

    static func makeCertificate(_ name: String, in dir: URL, der: Bool = false) throws -> String {
        let key = dir.appendingPathComponent("\(name).key").path, pem = dir.appendingPathComponent("\(name).pem").path
        let made = try TestSupport.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", pem, "-days", "30", "-subj", "/CN=\(name)"])
        #expect(made.succeeded, "\(made)")
        guard der else { return pem }
        let derPath = dir.appendingPathComponent("\(name).der").path
        #expect(try TestSupport.run("openssl", ["x509", "-in", pem, "-outform", "der", "-out", derPath]).succeeded)
        return derPath
    }

    /// The pin as Android's documentation computes it, with openssl.
    static func opensslPin(_ certificate: String) throws -> String {
        let form = certificate.hasSuffix(".der") ? "der" : "pem"
        let result = try TestSupport.run("sh", ["-c", "openssl x509 -inform \(form) -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"])
        #expect(result.succeeded, "\(result)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func trustUserCertificatesAddsConfigTypesAndCA() throws {
        let dir = try TestSupport.makeTemporaryDirectory("nsc-new")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.targetSdk = 23
        let apk = try fixture.build(in: dir)
        #expect(!(try Oracle.aapt(["dump", "resources", apk])).contains(":xml/"))
        let ca = try Self.makeCertificate("proxy-ca", in: dir, der: true)
        let patch = dir.appendingPathComponent("patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--trust-user-certs", "--ca-cert", ca, "--json"])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("targetSdkVersion 23 is below 24"), "\(result.stdout)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        let resources = try Oracle.aapt(["dump", "--values", "resources", out])
        #expect(resources.contains("spec resource 0x7f030000 com.example.fixture:xml/network_security_config"), "\(resources)")
        #expect(resources.contains(#"(string8) "res/xml/network_security_config.xml""#), "\(resources)")
        #expect(resources.contains("com.example.fixture:raw/proxy_ca"), "\(resources)")
        // Existing IDs never change.
        #expect(resources.contains("0x7f020000 com.example.fixture:string/app_name"), "\(resources)")
        let manifest = try Oracle.aapt(["dump", "xmltree", out, "AndroidManifest.xml"])
        #expect(manifest.contains("A: android:networkSecurityConfig(0x01010527)=@0x7f030000"), "\(manifest)")
        let decoded = try Self.apktool(out, in: dir)
        let config = try String(contentsOfFile: decoded + "/res/xml/network_security_config.xml", encoding: .utf8)
        for expected in [#"<certificates src="system" />"#, #"<certificates src="user" />"#, #"<certificates src="@raw/proxy_ca" />"#] {
            #expect(config.contains(expected), "missing \(expected) in\n\(config)")
        }
        #expect(try TestSupport.readBytes(decoded + "/res/raw/proxy_ca.der") == TestSupport.readBytes(ca))
        #expect(try String(contentsOfFile: decoded + "/AndroidManifest.xml", encoding: .utf8).contains(#"android:networkSecurityConfig="@xml/network_security_config""#))
    }

    /// A new config states the cleartext flag the manifest (or the patch) sets: Android 7+ ignores
    /// `android:usesCleartextTraffic` once a config exists, and a base-config without the attribute forbids
    /// cleartext from targetSdk 28 on (and allows it below), so the app would lose (or gain) plain HTTP.
    @Test(arguments: [(34, #"android:usesCleartextTraffic="true""#, "", true),
                      (27, "", "manifest:\n  usesCleartextTraffic: false\n", false),
                      (34, "", "", nil)])
    func newConfigKeepsTheCleartextFlag(targetSdk: Int, applicationAttributes: String, spec: String, expected: Bool?) throws {
        let dir = try TestSupport.makeTemporaryDirectory("nsc-cleartext")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.targetSdk = targetSdk
        fixture.applicationAttributes = applicationAttributes
        let apk = try fixture.build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(spec, to: "apkpatch.yml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--trust-user-certs", "-q"])
        #expect(result.succeeded, "\(result)")
        let dump = try Oracle.aapt(["dump", "xmltree", out, "res/xml/network_security_config.xml"])
        #expect(dump.components(separatedBy: "E: base-config").count == 2, "\(dump)")
        #expect(dump.contains(#"A: src="user""#), "\(dump)")
        switch expected {
        case true?: #expect(dump.contains("A: cleartextTrafficPermitted=(type 0x12)0xffffffff"), "\(dump)")
        case false?: #expect(dump.contains("A: cleartextTrafficPermitted=(type 0x12)0x0"), "\(dump)")
        case nil: #expect(!dump.contains("cleartextTrafficPermitted"), "\(dump)")
        }
        let decoded = try Self.apktool(out, in: dir)
        let config = try String(contentsOfFile: decoded + "/res/xml/network_security_config.xml", encoding: .utf8)
        #expect(config.contains(#"<certificates src="user" />"#), "\(config)")
    }

    /// `manifest: usesCleartextTraffic` on an app with a network security config of its own changes nothing on
    /// Android 7+ (the config decides): the summary says so.
    @Test func cleartextFlagBesideAnExistingConfigIsNoted() throws {
        let dir = try TestSupport.makeTemporaryDirectory("nsc-flag")
        defer { try? FileManager.default.removeItem(at: dir) }
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("manifest:\n  usesCleartextTraffic: true\n", to: "apkpatch.yml", in: patch)
        let note = "usesCleartextTraffic: the app has a network security config"
        let withConfig = try TestSupport.apkpatch(["run", try Self.pinnedFixture(in: dir), "--patch", patch.path, "--out", dir.appendingPathComponent("a.apk").path])
        #expect(withConfig.succeeded && withConfig.stdout.contains(note), "\(withConfig)")
        let without = try TestSupport.apkpatch(["run", try FixtureAPK().build(in: dir, name: "plain.apk"), "--patch", patch.path, "--out", dir.appendingPathComponent("b.apk").path])
        #expect(without.succeeded && !without.stdout.contains(note), "\(without)")
    }

    /// A CA file that also holds the CA's private key (mitmproxy's mitmproxy-ca.pem) is refused: it would be
    /// shipped in the APK as it is (it was, key and all).
    @Test func aCAFileWithItsPrivateKeyIsRefused() throws {
        let dir = try TestSupport.makeTemporaryDirectory("nsc-key")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try FixtureAPK().build(in: dir)
        let certificate = try Self.makeCertificate("proxy", in: dir)
        let both = dir.appendingPathComponent("mitmproxy-ca.pem")
        try TestSupport.write(try TestSupport.readBytes(dir.appendingPathComponent("proxy.key").path) + TestSupport.readBytes(certificate),
                              to: both.lastPathComponent, in: dir)
        let out = dir.appendingPathComponent("out.apk").path
        let refused = try TestSupport.apkpatch(["run", apk, "--out", out, "--trust-user-certs", "--ca-cert", both.path])
        #expect(refused.status == 1 && refused.stderr.contains("holds a private key beside the certificate")
                && refused.stderr.contains("mitmproxy-ca-cert.pem"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let accepted = try TestSupport.apkpatch(["run", apk, "--out", out, "--trust-user-certs", "--ca-cert", certificate, "-q"])
        #expect(accepted.succeeded, "\(accepted)")
        #expect(!(try TestSupport.run("unzip", ["-p", out, "res/raw/proxy.pem"]).stdout.contains("PRIVATE KEY")))
    }

    static func pinnedFixture(in dir: URL) throws -> String {
        var fixture = FixtureAPK()
        fixture.applicationAttributes = #"android:networkSecurityConfig="@xml/nsc""#
        fixture.resources["xml/nsc.xml"] = Array("""
            <network-security-config>
              <base-config cleartextTrafficPermitted="false"/>
              <domain-config cleartextTrafficPermitted="true">
                <domain includeSubdomains="true">api.example.com</domain>
                <pin-set expiration="2030-01-01"><pin digest="SHA-256">7HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
                <domain-config><domain>inner.example.com</domain></domain-config>
              </domain-config>
            </network-security-config>
            """.utf8)
        return try fixture.build(in: dir)
    }

    /// The yml shorthand extends the app's own config: anchors in base-config and every domain-config, pins removed
    /// (and listed), cleartext settings kept; keepPins keeps them.
    @Test func presetExtendsExistingConfig() throws {
        let dir = try TestSupport.makeTemporaryDirectory("nsc-existing")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try Self.pinnedFixture(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("networkSecurity: trustUserCertificates\n", to: "apkpatch.yml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("certificate pins removed for: api.example.com"), "\(result.stdout)")
        let dump = try Oracle.aapt(["dump", "xmltree", out, "res/xml/nsc.xml"])
        #expect(!dump.contains("pin-set"), "\(dump)")
        #expect(dump.components(separatedBy: "E: trust-anchors").count == 4, "\(dump)")  // base + two domain configs
        #expect(dump.components(separatedBy: #"A: src="user""#).count == 4, "\(dump)")
        #expect(dump.contains(#"A: cleartextTrafficPermitted=(type 0x12)0xffffffff (Raw: "true")"#), "\(dump)")
        #expect(dump.contains(#"A: cleartextTrafficPermitted=(type 0x12)0x0 (Raw: "false")"#), "\(dump)")
        #expect(try Oracle.aapt(["dump", "resources", out]) == Oracle.aapt(["dump", "resources", apk]))
        let decoded = try Self.apktool(out, in: dir)
        #expect(try String(contentsOfFile: decoded + "/res/xml/nsc.xml", encoding: .utf8).contains(#"<certificates src="user" />"#))

        try TestSupport.write("networkSecurity:\n  trustUserCertificates: true\n  keepPins: true\n", to: "apkpatch.yml", in: patch)
        let kept = dir.appendingPathComponent("kept.apk").path
        #expect(try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", kept, "-q"]).succeeded)
        #expect(try Oracle.aapt(["dump", "xmltree", kept, "res/xml/nsc.xml"]).contains("E: pin-set"))
    }

    /// Hardening: pins for a domain from certificate files (PEM and DER), as Android computes them; one
    /// certificate alone is refused.
    @Test func pinsFromCertificates() throws {
        let dir = try TestSupport.makeTemporaryDirectory("nsc-pins")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try FixtureAPK().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try FileManager.default.createDirectory(at: patch.appendingPathComponent("certs"), withIntermediateDirectories: true)
        let server = try Self.makeCertificate("server", in: patch.appendingPathComponent("certs"))
        let backup = try Self.makeCertificate("backup", in: patch.appendingPathComponent("certs"), der: true)
        try TestSupport.write("""
            networkSecurity:
              pin:
                - domain: api.example.com
                  certificates: [certs/server.pem, certs/backup.der]
                  expiration: 2027-06-30
            """, to: "apkpatch.yml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "-q"])
        #expect(result.succeeded, "\(result)")
        let dump = try Oracle.aapt(["dump", "xmltree", out, "res/xml/network_security_config.xml"])
        for pin in [try Self.opensslPin(server), try Self.opensslPin(backup)] {
            #expect(dump.contains("C: \"\(pin)\""), "missing pin \(pin) in\n\(dump)")
        }
        #expect(dump.contains(#"A: expiration="2027-06-30""#) && dump.contains(#"C: "api.example.com""#), "\(dump)")
        #expect(!dump.contains("trust-anchors"), "\(dump)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)

        try TestSupport.write("networkSecurity:\n  pin:\n    - domain: api.example.com\n      certificates: [certs/server.pem]\n", to: "apkpatch.yml", in: patch)
        let single = dir.appendingPathComponent("single.apk").path
        let refused = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", single, "-q"])
        #expect(!refused.succeeded && refused.stderr.contains("backup"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: single))
    }

    /// New files and names become resources: next free IDs, a new type, a new configuration, aapt2's paths; text
    /// XML referring to them by name compiles; existing IDs stay.
    @Test func addingFilesAndStrings() throws {
        let dir = try TestSupport.makeTemporaryDirectory("res-adding")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.strings["greeting"] = "Hello"
        fixture.resources["raw/old.bin"] = FixtureAPK.pseudoRandomBytes(count: 100, seed: 7)
        let apk = try fixture.build(in: dir)
        let before = try Oracle.aapt(["dump", "resources", apk])
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(#"<resources><string name="greeting">Hello</string><string name="added">Added text</string><string name="alias">@string/added</string></resources>"#,
                              to: "res/values/strings.xml", in: patch)
        try TestSupport.write(#"<resources><string name="added">Ajouté</string></resources>"#, to: "res/values-fr/strings.xml", in: patch)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 200, seed: 9), to: "res/drawable-hdpi/badge.png", in: patch)
        try TestSupport.write("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="match_parent" android:layout_height="wrap_content">
                <TextView android:id="@+id/title" android:text="@string/added" android:background="@drawable/badge" />
            </LinearLayout>
            """, to: "res/layout/screen.xml", in: patch)
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--json"])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("res/drawable-hdpi-v4/badge.png") && !result.stdout.contains("\"res/drawable-hdpi/badge.png\""), "\(result.stdout)")
        let after = try Oracle.aapt(["dump", "--values", "resources", out])
        for line in before.split(separator: "\n") where line.contains("spec resource") {
            #expect(after.contains(line), "ID changed: \(line)")
        }
        for expected in ["com.example.fixture:string/added", "com.example.fixture:string/alias", "com.example.fixture:layout/screen",
                         "com.example.fixture:drawable/badge", "config fr:", "config hdpi-v4:", #"(string8) "Ajouté""#,
                         #"(string8) "res/drawable-hdpi-v4/badge.png""#, #"(string8) "res/layout/screen.xml""#] {
            #expect(after.contains(expected), "missing \(expected) in\n\(after)")
        }
        let layout = try Oracle.aapt(["dump", "xmltree", out, "res/layout/screen.xml"])
        #expect(layout.contains("A: android:text(0x0101014f)=@0x7f"), "\(layout)")
        let decoded = try Self.apktool(out, in: dir)
        let screen = try String(contentsOfFile: decoded + "/res/layout/screen.xml", encoding: .utf8)
        #expect(screen.contains(#"android:text="@string/added""#) && screen.contains(#"android:background="@drawable/badge""#), "\(screen)")
        #expect(FileManager.default.fileExists(atPath: decoded + "/res/drawable-hdpi-v4/badge.png"))
        #expect(try String(contentsOfFile: decoded + "/res/values-fr/strings.xml", encoding: .utf8).contains("Ajouté"))
        #expect(try String(contentsOfFile: decoded + "/res/values/strings.xml", encoding: .utf8).contains(#"<string name="alias">@string/added</string>"#))
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
    }

    /// Each mistake: a clear message naming the file (and line), and no output.
    @Test(arguments: [
        ("res/foo/x.xml", "<a/>", "'foo' is not a resource type"),
        ("res/drawable-xyz/a.png", "png", "'xyz'"),
        ("res/drawable-hdpi-fr/a.png", "png", "not in the order"),
        ("res/values/strings.xml", "<resources>\n<string name=\"a\">1</string>\n<string name=\"a\">2</string></resources>", "res/values/strings.xml:3"),
        ("res/layout/l.xml", "<View xmlns:android=\"http://schemas.android.com/apk/res/android\"\n android:background=\"@drawable/nowhere\"/>", "res/layout/l.xml:2"),
        ("res/xml/bad.xml", "<a>\n<b></a>", "res/xml/bad.xml:2"),
        ("res/values/colors.xml", "<resources>\n<color name=\"c\">@color/nowhere</color></resources>", "res/values/colors.xml:2: @color/nowhere"),
        ("res/values/ids.xml", "<resources>\n<item type=\"colour\" name=\"c\">#fff</item></resources>", "res/values/ids.xml:2: 'colour' is not a resource type"),
        ("res/values-xyz/bools.xml", "<resources><bool name=\"b\">true</bool></resources>", "res/values-xyz/bools.xml: "),
        ("res/values/dimens.xml", "<resources>\n<dimen name=\"d\">1dp</dimen>\n<item type=\"dimen\" name=\"d\">2dp</item></resources>", "res/values/dimens.xml:3: dimen/d is already defined at res/values/dimens.xml:2"),
        ("res/values/bools.xml", "<resources>\n<bool name=\"b\">maybe</bool></resources>", "res/values/bools.xml:2: 'maybe' is not a valid value for bool/b"),
        ("res/values/arrays.xml", "<resources>\n<string-array name=\"a\"><item>x</string-array></resources>", "res/values/arrays.xml:2"),
        ("res/values/strings.xml", "<resources>\n<string name=\"s\">a <b>bold</string></resources>", "res/values/strings.xml:2: </string> does not match <b>"),
        ("res/values/strings.xml", "<resources>\n<string name=\"s\"><b>x</b>\\u12</string></resources>", "res/values/strings.xml:2: \\u must be followed by four hex digits"),
        ("res/values/arrays.xml", "<resources>\n<integer-array name=\"i\"><item><b>1</b></item></integer-array></resources>", "res/values/arrays.xml:2: array/i takes reference|integer, not text with markup"),
        ("res/values/strings.xml", "<resources>\n<string name=\"s\">@string/nowhere</string></resources>", "res/values/strings.xml:2: @string/nowhere"),
        ("AndroidManifest.xml", "<manifest xmlns:android=\"http://schemas.android.com/apk/res/android\" package=\"com.example.fixture\">\n<application android:label=\"@string/nowhere\"/></manifest>", "AndroidManifest.xml:2"),
    ])
    func errorsNameTheFile(path: String, content: String, expected: String) throws {
        try Self.assertRefused(FixtureAPK(), patchFile: path, content: content, expected: expected)
    }

    /// A name given twice in one configuration across two files: both places are named.
    @Test func duplicateAcrossFilesNamesBoth() throws {
        try Self.assertRefused(FixtureAPK(), patchFile: "res/values/b.xml", content: "<resources>\n\n<bool name=\"flag\">false</bool></resources>",
                               otherFiles: ["res/values/a.xml": "<resources>\n<bool name=\"flag\">true</bool></resources>"],
                               expected: "res/values/b.xml:3: bool/flag is already defined at res/values/a.xml:2")
    }

    /// Two files for one name in one configuration (a new one beside another new one, or beside the APK's): both
    /// are named.
    @Test func fileNamesCollide() throws {
        try Self.assertRefused(FixtureAPK(), patchFile: "res/drawable/x.xml", content: "<shape xmlns:android=\"http://schemas.android.com/apk/res/android\"/>",
                               otherFiles: ["res/drawable/x.png": "png"],
                               expected: "res/drawable/x.xml: drawable/x is already given by res/drawable/x.png")
        var fixture = FixtureAPK()
        fixture.resources["drawable/icon.xml"] = Array("<shape xmlns:android=\"http://schemas.android.com/apk/res/android\"/>".utf8)
        try Self.assertRefused(fixture, patchFile: "res/drawable/icon.png", content: "png",
                               expected: "res/drawable/icon.png: drawable/icon already is res/drawable/icon.xml in the APK")
    }

    /// `run` with a patch of one file fails with `expected` in its message and writes no output.
    static func assertRefused(_ fixture: FixtureAPK, patchFile path: String, content: String, otherFiles: [String: String] = [:], expected: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let dir = try TestSupport.makeTemporaryDirectory("res-errors")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try fixture.build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write(content, to: path, in: patch)
        for (other, text) in otherFiles { try TestSupport.write(text, to: other, in: patch) }
        let out = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--out", out, "--no-sign"])
        #expect(!result.succeeded && result.stderr.contains(expected), "\(result)", sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: out), sourceLocation: sourceLocation)
    }
}
