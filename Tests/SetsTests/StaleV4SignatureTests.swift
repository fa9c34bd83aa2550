import Foundation
import Testing
import TestSupport

/// `kill -9` between a signed APK's commit and its v4 signature's write: the `.idsig` an earlier run left beside
/// the output was made for the APK just replaced, and must be gone by then, so that the pair on disk is never an
/// APK beside another APK's v4 signature. The command stops itself at that moment (`APKPATCH_TEST_STOP_AT`,
/// SIGSTOP): the files are looked at there, then it is killed with SIGKILL; no timing decides where.
@Suite(.serialized, .removesTemporaryDirectories) struct StaleV4SignatureTests {
    let scratch: URL
    let fixture: SplitSetFixture
    let patch: URL

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-stale-idsig")
        fixture = try SplitSetFixture(in: scratch)
        patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("patched\n", to: "assets/patched.txt", in: patch)
    }

    enum Command: String, CaseIterable, CustomStringConvertible {
        case sign, run, merge, watch
        var description: String { rawValue }
    }

    /// The command writing `output` signed by the debug key at `keystore`; watch writes no .idsig (it removes a
    /// stale one), so its earlier output comes from `run`.
    func arguments(_ command: Command, output: String, keystore: String, first: Bool) throws -> [String] {
        let keys = ["--debug-keystore", keystore]
        let base = fixture.apks["base.apk"]!
        switch command {
        case .sign: return ["sign"] + keys + ["--out", output, base]
        case .run: return ["run", base, "--patch", patch.path, "--out", output] + keys
        case .merge: return ["merge", try fixture.pack(.directory), "--out", output] + keys
        case .watch: return (first ? ["run"] : ["watch"]) + [base, "--patch", patch.path, "--out", output] + keys
        }
    }

    /// The state letter of process `pid` (`/proc/PID/stat`'s third field: `T` when stopped), nil once it is gone.
    static func state(of pid: Int32) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[close...].dropFirst().first { $0 != " " }
    }

    /// Runs `arguments` until the command stops itself at `point`, calls `atStop`, then kills it with SIGKILL.
    /// Returns false when the command never reached the point (it exited, or took over 5 minutes).
    static func stopAndKill(_ arguments: [String], at point: String, atStop: () throws -> Void) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.apkpatchBinary)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["APKPATCH_TEST_STOP_AT"] = point
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(300)
        while process.isRunning && state(of: process.processIdentifier) != "T" && Date() < deadline { usleep(10_000) }
        guard process.isRunning, state(of: process.processIdentifier) == "T" else { return false }
        try atStop()
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
    }

    @Test(arguments: Command.allCases)
    func killedBeforeTheV4SignatureLeavesNoStaleOne(_ command: Command) throws {
        let dir = scratch.appendingPathComponent("case-\(command)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let output = dir.appendingPathComponent("out.apk").path
        let idsig = output + ".idsig"
        let first = try TestSupport.apkpatch(try arguments(command, output: output, keystore: scratch.appendingPathComponent("one.p12").path, first: true))
        try #require(first.succeeded, "\(first)")
        try #require(FileManager.default.fileExists(atPath: idsig), "the first run wrote no .idsig: \(first)")
        let previous = try TestSupport.readBytes(output)

        // Another key: the new APK differs, and the earlier .idsig does not match it.
        let again = try arguments(command, output: output, keystore: scratch.appendingPathComponent("two.p12").path, first: false)
        let stopped = try Self.stopAndKill(again, at: "before-v4-signature") {
            let now = try TestSupport.readBytes(output)
            #expect(now != previous, "\(command): the new APK is not in place at the stop point")
            #expect(!FileManager.default.fileExists(atPath: idsig), "\(command): the earlier .idsig is still beside the new APK")
        }
        #expect(stopped, "\(command) did not stop before its v4 signature: apkpatch \(again.joined(separator: " "))")

        // After the kill: the new APK, whole, and no v4 signature of another APK beside it.
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
        if FileManager.default.fileExists(atPath: idsig) {
            let v4 = try TestSupport.apkpatch(["verify", "--v4-signature-file", idsig, output])
            #expect(v4.succeeded, "\(command): the .idsig beside the APK is not its own: \(v4)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(command) left \(leftovers)")
    }

    /// `run --no-sign` over a signed build's output: an unsigned APK has no v4 signature, and the signed one's
    /// `.idsig` goes with it.
    @Test func anUnsignedBuildRemovesTheSignedOnesV4Signature() throws {
        let output = scratch.appendingPathComponent("unsigned.apk").path
        let base = fixture.apks["base.apk"]!
        let signed = try TestSupport.apkpatch(["run", base, "--patch", patch.path, "--out", output,
                                               "--debug-keystore", scratch.appendingPathComponent("one.p12").path])
        try #require(signed.succeeded && FileManager.default.fileExists(atPath: output + ".idsig"), "\(signed)")
        let unsigned = try TestSupport.apkpatch(["run", base, "--patch", patch.path, "--out", output, "--no-sign"])
        #expect(unsigned.succeeded, "\(unsigned)")
        #expect(!FileManager.default.fileExists(atPath: output + ".idsig"), "the signed build's .idsig is beside the unsigned APK")
    }

    /// A set written to a folder is swapped in whole: killed while its APKs' v4 signatures are written, the
    /// previous folder stays, each APK with its own .idsig.
    @Test func aSetFolderKilledBeforeItsV4SignaturesKeepsThePreviousPairs() throws {
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("set-out").path
        let signing = { (key: String) in ["sign", "--debug-keystore", self.scratch.appendingPathComponent(key).path, "--out", output, input] }
        let first = try TestSupport.apkpatch(signing("one.p12"))
        try #require(first.succeeded, "\(first)")
        let names = try FileManager.default.contentsOfDirectory(atPath: output).filter { $0.hasSuffix(".apk") }.sorted()
        try #require(names.count == 4)
        let before = try names.map { try TestSupport.readBytes(output + "/" + $0) }
        let checkPairs = { () throws -> Void in
            for (name, bytes) in zip(names, before) {
                let now = try TestSupport.readBytes(output + "/" + name)
                #expect(now == bytes, "\(name) changed")
                let v4 = try TestSupport.apkpatch(["verify", "--v4-signature-file", output + "/" + name + ".idsig", output + "/" + name])
                #expect(v4.succeeded, "\(name): \(v4)")
            }
        }
        let stopped = try Self.stopAndKill(signing("two.p12"), at: "before-v4-signature", atStop: checkPairs)
        #expect(stopped)
        try checkPairs()
    }
}
