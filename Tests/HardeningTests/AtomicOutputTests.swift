import Foundation
import Testing
import TestSupport

/// Atomic output: `kill -9` of `apkpatch run`/`sign`/`align` at random moments while it writes framework-res.apk
/// (45 MB, 7,600 entries) must leave the destination as it was: absent if there was none, else byte-identical to the
/// previous output. Never a truncated or half-written APK at the destination path, and no file left beside it: the
/// temporary output is an unnamed `O_TMPFILE` until the moment of its rename, so the kernel frees it with the process.
@Suite(.serialized, .removesTemporaryDirectories) struct AtomicOutputTests {
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
                if fm.fileExists(atPath: output) {
                    // The kill landed after the rename (`run` verifies its output, and every command exits after
                    // it): what is at the destination must then be the complete, valid output.
                    let check = command == .align ? try TestSupport.run("zipalign", ["-c", "-p", "4", output])
                                                  : try TestSupport.run("apksigner", ["verify", output])
                    #expect(check.succeeded, "\(command) killed after \(delay)s left an incomplete file at the destination: \(check)")
                }
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
        for delay in Self.killDelays(duration: duration, generator: &generator, count: 5, landed: { killed + killedWithoutPrevious > 0 }) {
            if try runAndKill(arguments(command, output: output, patch: patch, keyStore: keyStore), after: delay) { killed += 1 }
            #expect(fm.contentsEqual(atPath: output, andPath: previous),
                    "\(command) killed after \(delay)s of a \(duration)s run changed the destination")
        }
        #expect(killed + killedWithoutPrevious > 0, "no kill landed mid-run (runs took \(duration)s)")
        // Nothing is left behind: a killed run's temporary output had no name (issue 19; a named one was 46 MB).
        // The v4 signature `out.apk.idsig` is an output too (written once the APK is in place, as apksigner does).
        let others = try fm.contentsOfDirectory(atPath: dir.path).filter { !["k.p12", "patch", "out.apk", "out.apk.idsig", "previous.apk"].contains($0) }
        #expect(others.isEmpty, "a killed \(command) left files behind: \(others)")
        // The surviving output still verifies, and so does the v4 signature beside it.
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded || command == .align)
        if fm.fileExists(atPath: output + ".idsig") {
            let v4 = try TestSupport.apkpatch(["verify", "--v4-signature-file", output + ".idsig", output])
            #expect(v4.succeeded, "the .idsig beside the surviving output does not match it: \(v4)")
        }
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
        for delay in Self.killDelays(duration: duration, generator: &generator, count: 4, landed: { killed > 0 }) {
            let landed = try runAndKill(arguments, after: delay)
            if FileManager.default.contentsEqual(atPath: apk, andPath: TestSupport.frameworkRes) {
                if landed { killed += 1 }
                continue
            }
            // The rename came first (the run ended, or the kill landed between the rename and the exit): the input
            // must then be the whole signed APK. The next round starts from the original again.
            let verify = try TestSupport.run("apksigner", ["verify", apk])
            #expect(verify.succeeded, "in-place sign \(landed ? "killed" : "ended") after \(delay)s of a \(duration)s run left neither the input nor its signed copy: \(verify)")
            try FileManager.default.removeItem(atPath: apk)
            try FileManager.default.copyItem(atPath: TestSupport.frameworkRes, toPath: apk)
        }
        #expect(killed > 0, "no kill landed mid-run (runs took \(duration)s)")
    }

    /// `count` random moments within a run that took `duration`; then, while `landed` says no kill has landed yet
    /// (the runs went faster than the timed one: less load on the machine), ever earlier ones, down to the process's
    /// first milliseconds, which a kill cannot miss: random moments alone can all fall after the end of faster runs.
    static func killDelays(duration: Double, generator: inout SplitMix64, count: Int,
                           landed: @escaping () -> Bool) -> UnfoldSequence<Double, Int> {
        let random = (0..<count).map { _ in duration * (0.05 + Double(generator.next() % 1000) / 1000 * 0.9) }
        return sequence(state: 0) { index -> Double? in
            defer { index += 1 }
            if index < random.count { return random[index] }
            let halvings = index - random.count + 1
            return halvings <= 12 && !landed() ? duration / Double(1 << halvings) : nil
        }
    }

    /// An input truncated by another program while apkpatch reads it (a short `pread`, or SIGBUS where it is
    /// read through its mapping) must fail the process with a message and exit 1, and remove its temporary output: nothing at the
    /// destination, no hidden leftover. The truncation is made deterministic by stopping the process as soon
    /// as its temporary output exists (the copy is about to start), truncating, then letting it continue.
    @Test func inputTruncatedWhileSigningFailsCleanly() throws {
        let dir = try TestSupport.makeTemporaryDirectory("bus-error")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        let keyStore = dir.appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "android", alias: "k", dname: "CN=Bus, C=US", validityDays: 365)
        // 96 MiB stored: long enough to copy that the stop lands before the end.
        let input = try Self.largeStoredAPK(in: dir, seed: 0xb05)
        let output = dir.appendingPathComponent("out.apk").path

        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.apkpatchBinary)
        process.arguments = ["sign", "--ks", keyStore, "--ks-pass", "pass:android", "--min-sdk-version", "24", "--out", output, input]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        var stopped = false
        while process.isRunning && Date() < deadline {
            if Self.hasTemporaryOutput(process: process.processIdentifier, in: dir.path) {
                stopped = kill(process.processIdentifier, SIGSTOP) == 0
                break
            }
            usleep(200)
        }
        try #require(stopped, "apkpatch sign finished or failed before its temporary output appeared")
        #expect(truncate(input, 4096) == 0)
        kill(process.processIdentifier, SIGCONT)
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 1, "\(process.terminationReason) \(process.terminationStatus): \(message)")
        #expect(message.contains("changed while apkpatch was reading it"), "\(message)")
        #expect(!fm.fileExists(atPath: output))
        let leftovers = try fm.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// Whether `process` has a file open in `directory` that has no name there yet: an `O_TMPFILE` shows in
    /// /proc as "DIR/#INODE (deleted)"; the named fallback as "DIR/.NAME.tmp-…".
    static func hasTemporaryOutput(process: Int32, in directory: String) -> Bool {
        let descriptors = "/proc/\(process)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: descriptors) else { return false }
        return entries.contains { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(descriptors)/\(entry)") else { return false }
            return target.hasPrefix(directory + "/") && (target.hasSuffix("(deleted)") || target.contains(".tmp-"))
        }
    }

    /// A 96 MiB APK of one stored entry of random bytes (no manifest: sign it with --min-sdk-version).
    static func largeStoredAPK(in dir: URL, seed: UInt64) throws -> String {
        let payload = dir.appendingPathComponent("big.bin")
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: 96 << 20)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in words.indices { words[i] = generator.next() }
        }
        try Data(bytes).write(to: payload)
        let input = dir.appendingPathComponent("in.apk").path
        let zip = try TestSupport.run("zip", ["-q", "-0", "-j", input, payload.path])
        try #require(zip.succeeded, "\(zip)")
        try FileManager.default.removeItem(at: payload)
        return input
    }

    /// Signing starts before the keystore is decrypted; a wrong password must still end it with the
    /// keystore's error, exit 1, and nothing written (the copy stops at the next entry once the key failed).
    @Test func wrongPasswordWhileSigningALargeAPKFailsCleanly() throws {
        let dir = try TestSupport.makeTemporaryDirectory("wrong-password")
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyStore = dir.appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "android", alias: "k", dname: "CN=Wrong, C=US", validityDays: 365)
        let input = try Self.largeStoredAPK(in: dir, seed: 0x9a55)
        let output = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["sign", "--ks", keyStore, "--ks-pass", "pass:not-the-password", "--min-sdk-version", "24",
                                               "--out", output, input])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("wrong password"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: output))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
