import Foundation
import Testing
import TestSupport

/// A store or key whose password-based iteration count is above Java's limit (5,000,000) is refused before any
/// derivation runs, as keytool refuses it, with the count named: a hostile count would otherwise buy minutes of
/// hashing. The counts are made by keytool and openssl with 3-byte values (65537...) and then raised in place to
/// 0x7fffff (8,388,607), so each file is otherwise what the tools wrote.
@Suite(.removesTemporaryDirectories) struct IterationLimitTests {
    static let password = "it-Pass-7"
    static let environment = ["APKPATCH_TEST_PASS": password]

    /// `bytes` with the one INTEGER 65536 + `low` (02 03 01 00 low) raised to 8,388,607.
    static func raised(_ bytes: [UInt8], low: UInt8) throws -> [UInt8] {
        let needle: [UInt8] = [0x02, 0x03, 0x01, 0x00, low]
        let hits = bytes.indices.dropLast(4).filter { Array(bytes[$0..<$0 + 5]) == needle }
        guard hits.count == 1 else { throw FixtureError(message: "iteration count 65536+\(low) found \(hits.count) times") }
        var out = bytes
        out.replaceSubrange(hits[0] + 2..<hits[0] + 5, with: [0x7f, 0xff, 0xff])
        return out
    }

    @Test func pkcs12CountsAboveJavasLimitAreRefused() throws {
        let directory = try TestSupport.makeTemporaryDirectory("iteration-limit")
        let store = directory.appendingPathComponent("store.p12").path
        let made = try TestSupport.run("keytool", ["-J-Dkeystore.pkcs12.certPbeIterationCount=65537", "-J-Dkeystore.pkcs12.keyPbeIterationCount=65538",
                                                   "-J-Dkeystore.pkcs12.macIterationCount=65539", "-genkeypair", "-keystore", store,
                                                   "-alias", "release", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
                                                   "-dname", "CN=Iterations", "-storepass:env", "APKPATCH_TEST_PASS", "-keypass:env", "APKPATCH_TEST_PASS"],
                                       environment: Self.environment)
        try #require(made.succeeded, "\(made)")
        let listed = try TestSupport.apkpatch(["keystore", "list", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_PASS"], environment: Self.environment)
        #expect(listed.succeeded && listed.stdout.contains("release"), "\(listed)")

        let apk = try FixtureAPK().build(in: directory)
        let original = try TestSupport.readBytes(store)
        for (low, what) in [(UInt8(1), "encrypted safe"), (2, "key"), (3, "MAC")] {
            let hostile = directory.appendingPathComponent("hostile-\(low).p12").path
            try Data(try Self.raised(original, low: low)).write(to: URL(fileURLWithPath: hostile))
            let keytool = try TestSupport.run("keytool", ["-list", "-keystore", hostile, "-storepass:env", "APKPATCH_TEST_PASS"], environment: Self.environment)
            #expect(!keytool.succeeded, "keytool opens the \(what) case: \(keytool)")
            let message = "\(what) iteration count too large: 8388607"
            let list = try TestSupport.apkpatch(["keystore", "list", "--ks", hostile, "--ks-pass", "env:APKPATCH_TEST_PASS"], environment: Self.environment)
            #expect(!list.succeeded && list.stderr.contains("is refused: \(message)") && list.stderr.contains("5000000"), "\(what): \(list)")
            let out = directory.appendingPathComponent("out-\(low).apk").path
            let sign = try TestSupport.apkpatch(["sign", "--ks", hostile, "--ks-pass", "env:APKPATCH_TEST_PASS", "--out", out, apk],
                                                environment: Self.environment)
            #expect(!sign.succeeded && sign.stderr.contains(message) && !FileManager.default.fileExists(atPath: out), "\(what): \(sign)")
            #expect(!sign.stderr.contains(Self.password) && !list.stderr.contains(Self.password))
        }
    }

    /// `--key`: an encrypted PKCS#8 key (PEM PBES2, DER PKCS#12 PBE) with a count above the limit.
    @Test func pkcs8KeyCountsAboveJavasLimitAreRefused() throws {
        let directory = try TestSupport.makeTemporaryDirectory("iteration-limit-key")
        func openssl(_ arguments: [String]) throws {
            let result = try TestSupport.run("openssl", arguments, environment: Self.environment)
            try #require(result.succeeded, "openssl \(arguments): \(result)")
        }
        let key = directory.appendingPathComponent("key.pem").path, certificate = directory.appendingPathComponent("cert.pem").path
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
        try openssl(["req", "-new", "-x509", "-key", key, "-subj", "/CN=Iterations", "-days", "3650", "-out", certificate])
        let apk = try FixtureAPK().build(in: directory)
        for (low, scheme) in [(UInt8(4), ["-v2", "aes-256-cbc"]), (5, ["-v1", "PBE-SHA1-3DES"])] {
            let encrypted = directory.appendingPathComponent("key-\(low).der").path
            try openssl(["pkcs8", "-topk8", "-in", key, "-outform", "DER", "-out", encrypted, "-iter", "\(65536 + Int(low))", "-passout", "env:APKPATCH_TEST_PASS"] + scheme)
            let bytes = try TestSupport.readBytes(encrypted)
            let signWith = { (file: String, out: String) in
                try TestSupport.apkpatch(["sign", "--key", file, "--cert", certificate, "--key-pass", "env:APKPATCH_TEST_PASS",
                                          "--out", directory.appendingPathComponent(out).path, apk], environment: Self.environment)
            }
            let fine = try signWith(encrypted, "fine-\(low).apk")
            #expect(fine.succeeded, "\(scheme): \(fine)")

            let hostileDER = directory.appendingPathComponent("hostile-\(low).der").path
            let raised = try Self.raised(bytes, low: low)
            try Data(raised).write(to: URL(fileURLWithPath: hostileDER))
            let hostilePEM = directory.appendingPathComponent("hostile-\(low).pem").path
            let pem = "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + Data(raised).base64EncodedString(options: .lineLength64Characters)
                + "\n-----END ENCRYPTED PRIVATE KEY-----\n"
            try pem.write(toFile: hostilePEM, atomically: true, encoding: .utf8)
            for file in [hostileDER, hostilePEM] {
                let sign = try signWith(file, "out-\(low).apk")
                #expect(!sign.succeeded && sign.stderr.contains("is refused: key iteration count too large: 8388607"), "\(file): \(sign)")
                #expect(!sign.stderr.contains("wrong key password") && !sign.stderr.contains(Self.password), "\(file): \(sign)")
            }
        }
    }
}
