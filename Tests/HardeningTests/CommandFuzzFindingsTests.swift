import CommandFuzz
import Foundation
import Testing
import TestSupport

/// Regressions for what the command fuzzer (`make fuzz`, CommandFuzzTests) found, each input rebuilt at test time
/// from an aapt-built APK the way the fuzzer made it.
@Suite(.removesTemporaryDirectories) struct CommandFuzzFindingsTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("command-fuzz-findings") }

    /// An APK whose compiled XML resource `entry` is replaced by `content` (stored, CRC-32 right), as the fuzzer's
    /// nested mutations re-pack it.
    func apk(replacing entry: String, with edit: ([UInt8]) -> [UInt8]) throws -> String {
        var fixture = FixtureAPK()
        fixture.resources = [
            "xml/config.xml": Array("<widget id=\"x\"><content src=\"index.html\"/></widget>".utf8),
            "layout/main.xml": Array("<LinearLayout xmlns:android=\"http://schemas.android.com/apk/res/android\" android:orientation=\"vertical\"/>".utf8),
        ]
        let built = try fixture.build(in: dir, name: "built.apk")
        let repacker = try EntryRepacker(archive: TestSupport.readBytes(built), entry: entry)
        let path = dir.appendingPathComponent("damaged.apk").path
        try Data(repacker.repack(with: edit(repacker.content))).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Found: `decode` wrote the manifest and the layout, then failed on res/xml/config.xml (60 bytes cut from
    /// its middle) and left them: a half-decoded directory. Now nothing is written unless every file decodes.
    @Test func decodeWritesNothingWhenAFileDoesNotDecode() throws {
        let input = try apk(replacing: "res/xml/config.xml") { bytes in
            var cut = bytes
            cut.removeSubrange((bytes.count / 2)..<min(bytes.count, bytes.count / 2 + 60))
            return cut
        }
        let output = dir.appendingPathComponent("decoded")
        let result = try boundedApkpatch(["decode", input, "-o", output.path])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("res/xml/config.xml"), "the error names the file: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "partial output: \(snapshot(output).sorted())")
        // Into an existing directory (an unpacked APK): left as it was.
        try TestSupport.write("kept", to: "assets/kept.txt", in: output)
        let again = try boundedApkpatch(["decode", input, "-o", output.path])
        #expect(again.status == 1, "\(again)")
        #expect(snapshot(output) == ["assets", "assets/kept.txt"], "\(snapshot(output).sorted())")
    }

    /// Found by the refusal runs: `run` on a split APK set started loading the key on another thread, then refused
    /// a device spec the fuzzer had damaged (Inputs/FuzzCommands/device-spec-damaged.json) and exited while that
    /// thread was still in OpenSSL, whose exit handlers freed what it used: about 1 run in 10 died by signal 11
    /// after printing the error (a worker thread crashed in pthread_rwlock_rdlock on a lock OPENSSL_cleanup had
    /// freed). `sign` on a set refusing a bad value did it too. As in ExitDuringBackgroundWorkTests
    /// (which covers one APK), what makes the crash impossible is that the process waits for the key before it
    /// exits, checked by CPU time: each refusal with the slow keystore costs about what opening it costs.
    @Test func setRefusalsWaitForTheKeyBeforeExiting() throws {
        let seeds = try CommandFuzzTests.seeds.get()
        let keys = ["--ks", seeds.path("slow.p12"), "--ks-pass", "pass:\(Seeds.password)"]
        let (listed, derivation) = try ExitDuringBackgroundWorkTests.apkpatchWithCPUTime(["keystore", "list"] + keys)
        try #require(listed.succeeded, "\(listed)")
        let out = dir.appendingPathComponent("out").path
        let spec = FuzzRegressionTests.inputs.appendingPathComponent("FuzzCommands/device-spec-damaged.json").path
        let refusals: [(String, [String], String)] = [
            ("run, damaged device spec", ["run", seeds.path("set.apks"), "--patch", seeds.path("empty-patch"), "--out", out + ".apks", "--device-spec", spec,
                                          "--emit-script", out + ".sh"] + keys, "device-spec-damaged.json"),
            ("sign, bad --min-sdk-version", ["sign"] + keys + ["--out", out + ".apks", "--min-sdk-version", "x", seeds.path("set.apks")], "'x' is invalid"),
            ("run, missing patch directory", ["run", seeds.path("set.apks"), "--patch", dir.appendingPathComponent("missing").path, "--out", out + ".apks"] + keys,
             "missing"),
        ]
        for (label, arguments, message) in refusals {
            let (refused, cpu) = try ExitDuringBackgroundWorkTests.apkpatchWithCPUTime(arguments)
            let crash = refused.stderr.split(separator: "\n").first(where: Campaign.isCrashReport)
            #expect([1, 64].contains(refused.status) && refused.stderr.contains(message) && crash == nil, "\(label): \(refused)")
            #expect(cpu > derivation / 2, "\(label): the refusal used \(cpu) s of CPU, opening the keystore \(derivation) s: it exited before the key was loaded")
            #expect(snapshot(dir).allSatisfy { !$0.hasPrefix("out") }, "\(label): nothing is written: \(snapshot(dir).sorted())")
        }
    }
}
