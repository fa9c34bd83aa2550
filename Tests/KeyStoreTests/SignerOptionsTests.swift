import Foundation
import Testing
import Sign
import TestSupport

/// The key options (`SignerOptions`) end to end through `apkpatch sign`, checked with `apksigner verify`.
@Suite(.removesTemporaryDirectories) struct SignerOptionsTests {
    static func verifiedSubject(_ apk: String) throws -> (TestSupport.ProcessResult, String?) {
        let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", apk])
        let line = verify.stdout.split(separator: "\n").first { $0.hasPrefix("Signer #1 certificate DN: ") }
        return (verify, line.map { String($0.dropFirst("Signer #1 certificate DN: ".count)) })
    }

    @Test func keystoreFromBase64SecretNeverTouchesDiskOrOutput() throws {
        let directory = try TestSupport.makeTemporaryDirectory("opts")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keystore = directory.appendingPathComponent("ci.p12").path
        let password = "Base64-Known-Pass-99"
        let certificate = try KeyStoreCreator(path: keystore, alias: "ci", password: Secret(password),
                                              distinguishedName: "CN=CI Signer, O=Example, C=US", key: .ec(curve: "P-256")).create()
        let encoded = try Data(contentsOf: URL(fileURLWithPath: keystore)).base64EncodedString(options: [.lineLength64Characters])
        try FileManager.default.removeItem(atPath: keystore)
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let environment = ["APKPATCH_TEST_KS_B64": encoded, "APKPATCH_TEST_KS_PASS": password]
        let sign = try TestSupport.apkpatch(["sign", "--ks-base64", "env:APKPATCH_TEST_KS_B64", "--ks-pass", "env:APKPATCH_TEST_KS_PASS",
                                             "--out", signed, "-v", apk], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        for output in [sign.stdout, sign.stderr] {
            #expect(!output.contains(password))
            #expect(!output.contains(String(encoded.prefix(40))))
        }
        let (verify, subject) = try Self.verifiedSubject(signed)
        #expect(verify.succeeded, "\(verify)")
        #expect(subject == certificate.subjectDN)
        #expect(verify.stdout.contains(certificate.fingerprint(.sha256).hexString))

        // A wrong password fails with the usual advice and without echoing it.
        let wrong = try TestSupport.apkpatch(["sign", "--ks-base64", "env:APKPATCH_TEST_KS_B64", "--ks-pass", "pass:Not-\(password)",
                                              "--out", signed + ".2", apk], environment: environment)
        #expect(!wrong.succeeded)
        #expect(wrong.stderr.contains("wrong password") && wrong.stderr.contains("--ks-pass"), "\(wrong)")
        #expect(!wrong.stderr.contains(password) && !wrong.stdout.contains(password))
        #expect(!FileManager.default.fileExists(atPath: signed + ".2"))
    }

    /// The keystore errors say what is wrong in the library's terms; `apkpatch sign` adds the option that answers
    /// each, once (KeyStoreTests checks the library's side).
    @Test func keystoreErrorsNameTheOptionThatAnswersThem() throws {
        let directory = try TestSupport.makeTemporaryDirectory("opts-hints")
        defer { try? FileManager.default.removeItem(at: directory) }
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let environment = ["APKPATCH_TEST_KS_PASS": "store-secret"]
        func sign(_ options: [String]) throws -> TestSupport.ProcessResult {
            try TestSupport.apkpatch(["sign"] + options + ["--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", signed, apk], environment: environment)
        }
        let two = directory.appendingPathComponent("two.p12").path
        for alias in ["first", "second"] {
            try KeytoolFixture.generate(keystore: two, type: "PKCS12", alias: alias, algorithm: "EC", size: 256, storePassword: "store-secret")
        }
        let own = directory.appendingPathComponent("own.jks").path
        try KeytoolFixture.generate(keystore: own, type: "JKS", alias: "release", algorithm: "EC", size: 256,
                                    storePassword: "store-secret", keyPassword: "key-secret-42")
        let cases: [(options: [String], says: String, hint: String)] = [
            (["--ks", two], "none was chosen", "(choose one with --ks-key-alias)"),
            (["--ks", two, "--ks-key-alias", "third"], "has no key entry", "(choose one with --ks-key-alias)"),
            (["--ks", two, "--ks-type", "BKS"], "unsupported keystore type BKS", "(--ks-type PKCS12, JKS or JCEKS, or leave it out to detect the type)"),
            (["--ks", own], "password of its own", "(--key-pass gives the key's own password)"),
            (["--ks", own, "--key-pass", "env:APKPATCH_TEST_UNSET_KEY_PASS"], "key password: the environment variable", "(--key-pass: env:NAME, file:PATH, stdin or pass:…)"),
        ]
        for (options, says, hint) in cases {
            let result = try sign(options)
            #expect(!result.succeeded && result.stderr.contains(says) && result.stderr.contains(hint), "\(options): \(result)")
            #expect(!result.stderr.contains("store-secret") && !result.stderr.contains("key-secret-42"))
        }
        #expect(!FileManager.default.fileExists(atPath: signed))
    }

    @Test func debugKeyIsCreatedInHomeWithMode0600() throws {
        let home = try TestSupport.makeTemporaryDirectory("opts-home")
        defer { try? FileManager.default.removeItem(at: home) }
        let apk = try FixtureAPK().build(in: home)
        let signed = home.appendingPathComponent("debug-signed.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--debug", "--out", signed, apk],
                                            environment: ["HOME": home.path, "ANDROID_USER_HOME": ""])
        #expect(sign.succeeded, "\(sign)")
        let keystore = home.appendingPathComponent(".android/debug.keystore").path
        let mode = try #require(FileManager.default.attributesOfItem(atPath: keystore)[.posixPermissions] as? NSNumber)
        #expect(mode.intValue & 0o777 == 0o600)
        let (verify, subject) = try Self.verifiedSubject(signed)
        #expect(verify.succeeded, "\(verify)")
        #expect(subject == "CN=Android Debug, O=Android, C=US")
        let list = try TestSupport.run("keytool", ["-list", "-keystore", keystore, "-storepass", "android", "-alias", "androiddebugkey"])
        #expect(list.succeeded, "\(list)")
    }

    @Test func storeAndKeyPasswordsFromConsecutiveStdinLines() throws {
        let directory = try TestSupport.makeTemporaryDirectory("opts")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keystore = directory.appendingPathComponent("legacy.jks").path
        try KeytoolFixture.generate(keystore: keystore, type: "JKS", alias: "legacy", algorithm: "RSA", size: 2048,
                                    storePassword: "stdin-store-pw", keyPassword: "stdin-key-pw")
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "stdin", "--key-pass", "stdin", "--out", signed, apk],
                                            stdin: "stdin-store-pw\nstdin-key-pw\n")
        #expect(sign.succeeded, "\(sign)")
        let (verify, subject) = try Self.verifiedSubject(signed)
        #expect(verify.succeeded, "\(verify)")
        #expect(subject == "CN=Keytool Test, OU=QA, O=Example Corp, L=Berlin, C=DE")
        // apksigner names the v1 files after the alias.
        let listing = try TestSupport.run("unzip", ["-l", signed])
        #expect(listing.stdout.contains("META-INF/LEGACY.SF") && listing.stdout.contains("META-INF/LEGACY.RSA"), "\(listing.stdout)")
    }

    @Test func keyAndCertificateOptions() throws {
        let directory = try TestSupport.makeTemporaryDirectory("opts")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        for arguments in [["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("k.pem")],
                          ["pkcs8", "-topk8", "-nocrypt", "-in", path("k.pem"), "-outform", "DER", "-out", path("platform.pk8")],
                          ["req", "-new", "-x509", "-key", path("k.pem"), "-subj", "/CN=Platform Key", "-days", "10", "-out", path("platform.x509.pem")]] {
            let result = try TestSupport.run("openssl", arguments)
            #expect(result.succeeded, "\(result)")
        }
        let apk = try FixtureAPK().build(in: directory)
        let signed = path("signed.apk")
        let sign = try TestSupport.apkpatch(["sign", "--key", path("platform.pk8"), "--cert", path("platform.x509.pem"), "--out", signed, apk])
        #expect(sign.succeeded, "\(sign)")
        let (verify, subject) = try Self.verifiedSubject(signed)
        #expect(verify.succeeded, "\(verify)")
        #expect(subject == "CN=Platform Key")
        let listing = try TestSupport.run("unzip", ["-l", signed])
        #expect(listing.stdout.contains("META-INF/PLATFORM.SF"), "\(listing.stdout)")

        let missingCert = try TestSupport.apkpatch(["sign", "--key", path("platform.pk8"), "--out", signed, apk])
        #expect(!missingCert.succeeded)
        #expect(missingCert.stderr.contains("--cert"), "\(missingCert)")
        let twoKeys = try TestSupport.apkpatch(["sign", "--debug", "--key", path("platform.pk8"), "--cert", path("platform.x509.pem"), apk])
        #expect(!twoKeys.succeeded)
        #expect(twoKeys.stderr.contains("choose one signing key"), "\(twoKeys)")
    }
}
