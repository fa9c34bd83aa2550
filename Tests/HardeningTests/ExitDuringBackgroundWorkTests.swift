import Foundation
import Testing
import TestSupport

/// A command that fails while a keystore is still being decrypted on another thread must exit cleanly.
///
/// `run` and `sign` start the key derivation (PBKDF2) before they parse or check anything else. A refusal that
/// comes first (an impossible `--v4-signing-enabled true`, an unknown option) used to exit while the derivation
/// still ran, and OpenSSL's exit handlers could free what it used: a crash (signal 11) printed after the error,
/// seen once in CI. The crash itself needs an unlucky moment; what makes it impossible is that the process waits
/// for the derivation before it exits. That is what is checked here, by CPU time rather than wall time (so a
/// loaded machine changes nothing): with a keystore re-exported with a million PBKDF2 iterations, a refusal
/// costs about as much CPU as the derivation, where a process that exits at once costs almost none.
@Suite(.serialized, .removesTemporaryDirectories) struct ExitDuringBackgroundWorkTests {
    static let password = "android"

    /// A PKCS#12 keystore whose key is slow to decrypt (made by keytool, re-exported by OpenSSL).
    static func slowKeyStore(in dir: URL) throws -> String {
        let fast = dir.appendingPathComponent("fast.p12").path, pem = dir.appendingPathComponent("key.pem").path
        let slow = dir.appendingPathComponent("slow.p12").path
        try TestSupport.makeKeyStore(at: fast, password: password, alias: "k", dname: "CN=Slow, C=US", validityDays: 365)
        let environment = ["APKPATCH_TEST_KS_PASS": password]
        let exported = try TestSupport.run("openssl", ["pkcs12", "-in", fast, "-passin", "env:APKPATCH_TEST_KS_PASS", "-nodes", "-out", pem],
                                           environment: environment)
        try #require(exported.succeeded, "\(exported)")
        let reexported = try TestSupport.run("openssl", ["pkcs12", "-export", "-in", pem, "-name", "k", "-iter", "1000000",
                                                         "-passout", "env:APKPATCH_TEST_KS_PASS", "-out", slow], environment: environment)
        try #require(reexported.succeeded, "\(reexported)")
        return slow
    }

    /// Runs apkpatch under bash and returns its result and the user+system CPU seconds it used (bash's `times`).
    static func apkpatchWithCPUTime(_ arguments: [String]) throws -> (TestSupport.ProcessResult, Double) {
        let script = #""$@"; status=$?; times >&2; exit $status"#
        let result = try TestSupport.run("bash", ["-c", script, "bash", TestSupport.apkpatchBinary] + arguments)
        // `times` prints the shell's own times, then its children's: "1m0.250s 0m0.010s".
        let children = try #require(result.stderr.split(separator: "\n").last)
        let seconds = children.split(separator: " ").map { field -> Double in
            let parts = field.dropLast().split(separator: "m")
            return (Double(parts[0]) ?? 0) * 60 + (Double(parts[1]) ?? 0)
        }
        return (result, seconds.reduce(0, +))
    }

    @Test("an error while the keystore is still decrypting waits for the derivation, then exits with the error alone (run, sign, a parse error)")
    func refusalDuringKeyDerivation() throws {
        let dir = try TestSupport.makeTemporaryDirectory("exit-background")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("x", to: "assets/added.txt", in: patch)
        let keys = ["--ks", try Self.slowKeyStore(in: dir), "--ks-pass", "pass:\(Self.password)"]
        let v1Only = ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--min-sdk-version", "21", "--v4-signing-enabled", "true"]
        let output = dir.appendingPathComponent("out.apk").path

        // What the derivation costs: a whole signing of the small fixture with the slow keystore.
        let (signed, derivation) = try Self.apkpatchWithCPUTime(["sign"] + keys + ["--out", output, input])
        try #require(signed.succeeded, "\(signed)")
        try FileManager.default.removeItem(atPath: output)

        let refusals: [(String, [String], String)] = [
            ("run, v4 without v2/v3", ["run", input, "--patch", patch.path] + keys + v1Only + ["--out", output], "v4 signature needs"),
            ("sign, v4 without v2/v3", ["sign"] + keys + v1Only + ["--out", output, input], "v4 signature needs"),
            ("sign, unknown option", ["sign"] + keys + ["--no-such-option", "--out", output, input], "no-such-option"),
        ]
        for (label, arguments, message) in refusals {
            let (refused, cpu) = try Self.apkpatchWithCPUTime(arguments)
            #expect(refused.status != 0 && refused.status < 128 && refused.stderr.contains(message)
                    && !refused.stderr.contains("crashed"), "\(label): \(refused)")
            #expect(cpu > derivation / 2, "\(label): the refusal used \(cpu) s of CPU, signing \(derivation) s: it exited before the key derivation ended")
            #expect(!FileManager.default.fileExists(atPath: output), "\(label): nothing is written")
        }
    }
}
