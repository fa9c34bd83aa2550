import Foundation
import Testing
import TestSupport

/// Atomic output: `kill -9` of `apkpatch run`/`sign`/`align` at random moments while it writes framework-res.apk
/// (45 MB, 7,600 entries) must leave the destination as it was: absent if there was none, else byte-identical to the
/// previous output. Never a truncated or half-written APK at the destination path. (A killed process cannot clean up
/// its hidden `.<name>.tmp-XXXXXX` file; that leftover is allowed, the destination is what matters.)
@Suite(.serialized) struct AtomicOutputTests {
    enum Command: String, CaseIterable, CustomStringConvertible {
        case run, sign, align
        var description: String { rawValue }
    }

    func arguments(_ command: Command, output: String, patch: URL, keyStore: String) -> [String] {
        let keys = ["--ks", keyStore, "--ks-pass", "pass:android"]
        switch command {
        case .run: return ["run", TestSupport.frameworkRes, "--patch", patch.path, "--out", output] + keys
        case .sign: return ["sign", "--out", output] + keys + [TestSupport.frameworkRes]
        case .align: return ["align", "-f", "-p", "4", TestSupport.frameworkRes, output]
        }
    }

    /// Starts the command, SIGKILLs it after `delay` seconds (if still running), and waits for it.
    /// Returns true if the kill landed before the process finished.
    func runAndKill(_ arguments: [String], after delay: Double) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.apkpatchBinary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        Thread.sleep(forTimeInterval: delay)
        let killed = process.isRunning && kill(process.processIdentifier, SIGKILL) == 0
        process.waitUntilExit()
        return killed && process.terminationReason == .uncaughtSignal
    }

    @Test(arguments: Command.allCases)
    func killMidWriteLeavesPreviousOutputOrNone(_ command: Command) throws {
        let dir = try TestSupport.makeTemporaryDirectory("atomic-\(command)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyStore = dir.appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "android", alias: "k", dname: "CN=Atomic, C=US", validityDays: 365)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("patched\n", to: "assets/atomic.txt", in: patch)
        let output = dir.appendingPathComponent("out.apk").path
        let fm = FileManager.default

        var generator = SplitMix64(seed: 0xa70_0000 + UInt64(command.rawValue.count))
        // 1. No previous output: kills early in the run leave nothing at the destination.
        var killedWithoutPrevious = 0
        for _ in 0..<3 {
            let delay = 0.05 + Double(generator.next() % 1000) / 1000 * 0.5
            if try runAndKill(arguments(command, output: output, patch: patch, keyStore: keyStore), after: delay) {
                killedWithoutPrevious += 1
                #expect(!fm.fileExists(atPath: output), "\(command) killed after \(delay)s left a file at the destination")
            }
            try? fm.removeItem(atPath: output)
        }

        // 2. A complete previous output, timed so the kills below can land anywhere in a full run.
        let start = Date()
        let complete = try TestSupport.apkpatch(arguments(command, output: output, patch: patch, keyStore: keyStore))
        let duration = Date().timeIntervalSince(start)
        try #require(complete.succeeded, "\(complete)")
        let previous = dir.appendingPathComponent("previous.apk").path
        try fm.copyItem(atPath: output, toPath: previous)

        var killed = 0
        for _ in 0..<5 {
            let delay = duration * (0.05 + Double(generator.next() % 1000) / 1000 * 0.9)
            if try runAndKill(arguments(command, output: output, patch: patch, keyStore: keyStore), after: delay) { killed += 1 }
            #expect(fm.contentsEqual(atPath: output, andPath: previous),
                    "\(command) killed after \(delay)s of a \(duration)s run changed the destination")
        }
        #expect(killed + killedWithoutPrevious > 0, "no kill landed mid-run (runs took \(duration)s)")
        // Whatever was left behind is hidden temporary files, never something that looks like an APK output.
        let others = try fm.contentsOfDirectory(atPath: dir.path).filter { !["k.p12", "patch", "out.apk", "previous.apk"].contains($0) }
        #expect(others.allSatisfy { $0.hasPrefix(".out.apk.tmp-") }, "unexpected files: \(others)")
        // The surviving output still verifies.
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded || command == .align)
    }

    /// `apkpatch sign app.apk` without `--out` signs in place: killed at any moment, the input must still be
    /// exactly the input (the signed copy replaces it only by rename once complete).
    @Test func killDuringInPlaceSignLeavesTheInputIntact() throws {
        let dir = try TestSupport.makeTemporaryDirectory("atomic-inplace")
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyStore = dir.appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "android", alias: "k", dname: "CN=Atomic, C=US", validityDays: 365)
        let apk = dir.appendingPathComponent("app.apk").path
        try FileManager.default.copyItem(atPath: TestSupport.frameworkRes, toPath: apk)
        let arguments = ["sign", "--ks", keyStore, "--ks-pass", "pass:android", apk]
        let start = Date()
        let timing = dir.appendingPathComponent("timing.apk").path
        try #require(try TestSupport.apkpatch(["sign", "--ks", keyStore, "--ks-pass", "pass:android", "--out", timing, apk]).succeeded)
        let duration = Date().timeIntervalSince(start)
        try FileManager.default.removeItem(atPath: timing)
        var generator = SplitMix64(seed: 0x1a_91ace)
        var killed = 0
        for _ in 0..<4 {
            let delay = duration * (0.05 + Double(generator.next() % 1000) / 1000 * 0.9)
            if try runAndKill(arguments, after: delay) { killed += 1 }
            #expect(FileManager.default.contentsEqual(atPath: apk, andPath: TestSupport.frameworkRes),
                    "in-place sign killed after \(delay)s of a \(duration)s run changed the input")
        }
        #expect(killed > 0, "no kill landed mid-run (runs took \(duration)s)")
    }
}
