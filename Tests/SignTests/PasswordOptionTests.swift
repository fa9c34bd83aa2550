import Foundation
import OpenSSLWrapper
import Testing
import TestSupport

/// Password options never print their argument (issue 19): a CI user who pastes the password after `env:`, or
/// names a password file that is missing, must not see it in the log. `pass:` works with one warning; the
/// signer certificate's validity is warned about by `sign` and marked by `keystore list`; `keystore create`
/// ends with the back-up reminder.
@Suite(.removesTemporaryDirectories) struct PasswordOptionTests {
    static let password = "Pasted-Secret-Value-4711"
    let dir: URL
    let keystore: String

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("password-options")
        keystore = dir.appendingPathComponent("ks.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Secrets")
    }

    @Test(arguments: [
        ("env:" + PasswordOptionTests.password + " oops", "not an environment variable name"),
        ("env:9" + PasswordOptionTests.password, "not an environment variable name"),
        ("env:UNSET_APKPATCH_TEST_VARIABLE_\(PasswordOptionTests.password.count)", "is not set"),
        ("file:/nonexistent/" + PasswordOptionTests.password, "cannot be read"),
    ])
    func theArgumentIsNeverEchoed(_ spec: String, _ problem: String) throws {
        let apk = try FixtureAPK().build(in: dir, name: "in-\(UUID().uuidString).apk")
        let out = dir.appendingPathComponent("o-\(UUID().uuidString).apk").path
        let argument = String(spec.drop { $0 != ":" }.dropFirst())
        let lineage = dir.appendingPathComponent("l-\(UUID().uuidString)").path
        // Key groups (a stamp key, a rotation's signers) are parsed apart: what parsing finds names the group too.
        let inGroup = problem == "not an environment variable name"
        for (option, arguments) in [("--ks-pass", ["sign", "--ks", keystore, "--ks-pass", spec, "--out", out, apk]),
                                    ("--key-pass", ["sign", "--ks", keystore, "--ks-pass", "env:KS", "--key-pass", spec, "--out", out, apk]),
                                    ("--ks-pass", ["keystore", "list", "--ks", keystore, "--ks-pass", spec]),
                                    (inGroup ? "--stamp-signer: --ks-pass" : "--ks-pass",
                                     ["sign", "--ks", keystore, "--ks-pass", "env:KS", "--stamp-signer", "--ks", keystore, "--ks-pass", spec, "--out", out, apk]),
                                    (inGroup ? "--old-signer: --ks-pass" : "--ks-pass",
                                     ["rotate", "--out", lineage, "--old-signer", "--ks", keystore, "--ks-pass", spec, "--new-signer", "--ks", keystore, "--ks-pass", "env:KS"])] {
            let result = try TestSupport.apkpatch(arguments, environment: ["KS": Self.password])
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains(option) && result.stderr.contains(problem), "\(option) \(problem): \(result)")
            // One sentence after one "Error:" (a group's error once read "Error: --stamp-signer: Error: --ks-pass: …").
            #expect(result.stderr.components(separatedBy: "Error:").count == 2, "\(result)")
            #expect(!result.stderr.contains(argument) && !result.stdout.contains(argument), "the argument leaked: \(result)")
            #expect(!result.stderr.contains(Self.password), "\(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: lineage))
    }

    @Test func passWorksWithOneWarning() throws {
        let apk = try FixtureAPK().build(in: dir, name: "p.apk")
        let out = dir.appendingPathComponent("p-signed.apk").path
        let result = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "pass:" + Self.password,
                                               "--key-pass", "pass:" + Self.password, "--out", out, apk])
        #expect(result.succeeded, "\(result)")
        let warnings = result.stderr.components(separatedBy: "WARNING:").count - 1
        #expect(warnings == 1 && result.stderr.contains("shell history"), "one warning for pass:, however many options use it: \(result)")
        #expect(!result.stderr.contains(Self.password))
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        let quiet = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "env:KS", "--out", out, apk], environment: ["KS": Self.password])
        #expect(quiet.succeeded && !quiet.stderr.contains("WARNING"), "env: gives no warning: \(quiet)")
    }

    @Test("no password option: a piped standard input gives the passwords, one line each, as apksigner reads them")
    func passwordsFromAPipeWithoutAnOption() throws {
        let apk = try FixtureAPK().build(in: dir, name: "piped.apk")
        let ours = dir.appendingPathComponent("piped-signed.apk").path, reference = dir.appendingPathComponent("stdin-signed.apk").path
        let piped = try TestSupport.apkpatch(["sign", "--ks", keystore, "--v4-signing-enabled", "false", "--out", ours, apk], stdin: Self.password + "\n")
        #expect(piped.succeeded && !piped.stderr.contains(Self.password) && !piped.stdout.contains(Self.password), "\(piped)")
        #expect(try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "stdin", "--v4-signing-enabled", "false", "--out", reference, apk],
                                         stdin: Self.password + "\n").succeeded)
        #expect(try TestSupport.readBytes(ours) == TestSupport.readBytes(reference))
        #expect(try TestSupport.run("apksigner", ["verify", ours]).succeeded)
        // rotate with two keystores and no password options: two lines, in apksigner's order (its file is ours).
        let other = dir.appendingPathComponent("other.p12").path
        try TestSupport.makeKeyStore(at: other, password: "Other-Secret-Value-0815", dname: "CN=Other")
        let lines = Self.password + "\nOther-Secret-Value-0815\n"
        let rotation = ["--old-signer", "--ks", keystore, "--new-signer", "--ks", other]
        let ourLineage = dir.appendingPathComponent("piped.lineage").path, theirLineage = dir.appendingPathComponent("apksigner.lineage").path
        let rotate = try TestSupport.apkpatch(["rotate", "--out", ourLineage] + rotation, stdin: lines)
        #expect(rotate.succeeded, "\(rotate)")
        #expect(try TestSupport.run("apksigner", ["rotate", "--out", theirLineage] + rotation, stdin: lines).succeeded)
        #expect(try TestSupport.readBytes(ourLineage) == TestSupport.readBytes(theirLineage))
        // Nothing on standard input: refused, naming the ways to give it.
        let none = try TestSupport.apkpatch(["sign", "--ks", keystore, "--out", dir.appendingPathComponent("none.apk").path, apk], stdin: "")
        #expect(none.status == 1 && none.stderr.contains("holds no password line") && none.stderr.contains("env:NAME"), "\(none)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("none.apk").path))
    }

    /// keytool -validity 30: the certificate ends long before 2033-10-22. A certificate whose validity ended
    /// is made with openssl (keytool cannot back-date one).
    @Test func certificateValidityIsWarnedAndMarked() throws {
        let short = dir.appendingPathComponent("short.p12").path
        try TestSupport.makeKeyStore(at: short, password: Self.password, dname: "CN=Short", validityDays: 30)
        let apk = try FixtureAPK().build(in: dir, name: "v.apk")
        let out = dir.appendingPathComponent("v-signed.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--ks", short, "--ks-pass", "env:KS", "--out", out, "--json", apk], environment: ["KS": Self.password])
        #expect(signed.succeeded, "a drop-in still signs: \(signed)")
        #expect(signed.stderr.contains("WARNING") && signed.stderr.contains("2033-10-22"), "\(signed)")
        // One sentence naming the fix once (not the library's advice and the CLI's hint both naming it).
        #expect(signed.stderr.components(separatedBy: "keystore create").count == 2, "\(signed)")
        #expect(signed.stdout.components(separatedBy: "keystore create").count == 2, "--json too: \(signed)")
        #expect(signed.stdout.contains("2033-10-22"), "--json carries it in warnings: \(signed)")
        let listed = try TestSupport.apkpatch(["keystore", "list", "--ks", short, "--ks-pass", "env:KS"], environment: ["KS": Self.password])
        #expect(listed.succeeded && listed.stdout.contains("expires before 2033-10-22"), "\(listed)")
        let json = try TestSupport.apkpatch(["keystore", "list", "--ks", short, "--ks-pass", "env:KS", "--json"], environment: ["KS": Self.password])
        #expect(json.stdout.contains("\"meetsPlayMinimumValidity\" : false"), "\(json)")

        // Expired: a certificate whose validity ended in 2020 (OpenSSL 3.0's command line cannot back-date one).
        let key = try PrivateKey.generateRSA(bits: 2048)
        let certificate = try Certificate.makeSelfSigned(key: key, subject: "CN=Old", notBefore: 1_546_300_800, validityDays: 365)
        let pk8 = dir.appendingPathComponent("old.pk8").path, cert = dir.appendingPathComponent("old.der").path
        try Data(try key.pkcs8DER()).write(to: URL(fileURLWithPath: pk8))
        try Data(certificate.derBytes).write(to: URL(fileURLWithPath: cert))
        let expired = try TestSupport.apkpatch(["sign", "--key", pk8, "--cert", cert, "--out", out, apk])
        #expect(expired.succeeded && expired.stderr.contains("expired on 2020-01-01"), "\(expired)")
        #expect(expired.stderr.components(separatedBy: "keystore create").count == 2, "\(expired)")
    }

    @Test func keystoreCreateEndsWithTheBackUpReminder() throws {
        let path = dir.appendingPathComponent("new.p12").path
        let result = try TestSupport.apkpatch(["keystore", "create", "--ks", path, "--ks-pass", "env:KS", "--dname", "CN=New"],
                                              environment: ["KS": Self.password])
        #expect(result.succeeded, "\(result)")
        let lines = result.stdout.split(separator: "\n")
        #expect(result.stdout.contains("Back up \(path)"), "\(result)")
        #expect(lines.last?.trimmingCharacters(in: .whitespaces) == "base64 -w0 \(path)", "the CI one-liner comes last: \(result)")
        #expect(!result.stdout.contains("expires before"), "the default validity is past 2033: \(result)")
    }
}
