import Foundation
import Testing
import TestSupport

/// `apkpatch sign --out-dir` with several inputs, and the promise that secrets never reach the output.
@Suite(.removesTemporaryDirectories) struct BatchAndSecretsTests {
    static let password = "Batch-Secret-Password-90210"
    let dir: URL
    let keystore: String

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("batch")
        keystore = dir.appendingPathComponent("ks.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Batch", validityDays: 100)
    }

    @Test func batchSignsTheGoodOnesAndReportsTheBadOne() throws {
        var first = FixtureAPK(); first.packageName = "com.example.one"
        var second = FixtureAPK.cordovaLike(); second.packageName = "com.example.two"
        let a = try first.build(in: dir, name: "one.apk"), b = try second.build(in: dir, name: "two.apk")
        let bad = dir.appendingPathComponent("broken.apk").path
        try Data("not an apk".utf8).write(to: URL(fileURLWithPath: bad))
        let out = dir.appendingPathComponent("signed").path
        let result = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out-dir", out, a, bad, b, "--json"],
                                              environment: ["KS_PASS": Self.password])
        #expect(result.status != 0, "one input failed, so the batch fails")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
        #expect(json["succeeded"] as? Int == 2 && json["failed"] as? Int == 1)
        let results = try #require(json["results"] as? [[String: Any]])
        #expect(results.map { $0["input"] as? String } == [a, bad, b], "the summary keeps the input order")
        #expect(results[1]["error"] as? String != nil && results[0]["error"] == nil)
        for name in ["one.apk", "two.apk"] {
            let verify = try TestSupport.run("apksigner", ["verify", "\(out)/\(name)"])
            #expect(verify.succeeded, "\(name): \(verify)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(out)/broken.apk"))
    }

    @Test func severalInputsNeedAnOutputDirectory() throws {
        let a = try FixtureAPK().build(in: dir, name: "x.apk")
        let result = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", a, a], environment: ["KS_PASS": Self.password])
        #expect(result.status != 0 && result.stderr.contains("--out-dir"))
    }

    /// The password, given every way apksigner allows, never appears in stdout or stderr: not on success, not
    /// on a wrong alias, a missing input, a corrupt input, or a failure in a batch.
    @Test func thePasswordNeverShowsUp() throws {
        let apk = try FixtureAPK().build(in: dir, name: "s.apk")
        let passwordFile = dir.appendingPathComponent("pass.txt").path
        try Data((Self.password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))
        let bad = dir.appendingPathComponent("bad.apk").path
        try Data("junk".utf8).write(to: URL(fileURLWithPath: bad))
        let env = ["KS_PASS": Self.password]
        let runs: [[String]] = [
            ["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out", dir.appendingPathComponent("o1.apk").path, "-v", apk],
            ["sign", "--ks", keystore, "--ks-pass", "file:" + passwordFile, "--out", dir.appendingPathComponent("o2.apk").path, "--json", apk],
            ["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--ks-key-alias", "nope", "--out", dir.appendingPathComponent("o3.apk").path, apk],
            ["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out", dir.appendingPathComponent("o4.apk").path, bad],
            ["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out", dir.appendingPathComponent("o5.apk").path, dir.appendingPathComponent("missing.apk").path],
            ["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out-dir", dir.appendingPathComponent("batch").path, apk, bad],
            ["sign", "--ks", keystore, "--ks-pass", "stdin", "--out", dir.appendingPathComponent("o6.apk").path, apk],
            ["run", apk, "--patch", dir.path, "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out", dir.appendingPathComponent("o7.apk").path, "--json"],
            ["keystore", "list", "--ks", keystore, "--ks-pass", "env:KS_PASS"],
            ["verify", "-v", "--print-certs", dir.appendingPathComponent("o1.apk").path],
        ]
        for arguments in runs {
            let result = try TestSupport.apkpatch(arguments, environment: env, stdin: Self.password + "\n")
            #expect(!result.stdout.contains(Self.password) && !result.stderr.contains(Self.password), "\(arguments): \(result)")
        }
        // The wrong password, too, stays out of the error that reports it.
        let wrong = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out", dir.appendingPathComponent("o8.apk").path, apk],
                                             environment: ["KS_PASS": "Wrong-Password-31337"])
        #expect(wrong.status != 0)
        #expect(!wrong.stderr.contains("Wrong-Password-31337") && !wrong.stdout.contains("Wrong-Password-31337"))
    }
}
