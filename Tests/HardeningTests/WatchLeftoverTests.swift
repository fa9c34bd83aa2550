import Foundation
import Testing
import TestSupport

/// `kill -9` of `apkpatch watch` (and of `run` staging a large patch file) on framework-res (45 MB): what is left
/// in the output directory and in `$TMPDIR` (issue 19). Nothing, until a rebuild has been swapped in; from then on
/// one hidden spare (the previous build, which the next rebuild rewrites: it must keep a name), which the next
/// session removes, while a running session's spare is never touched.
@Suite(.serialized, .removesTemporaryDirectories) struct WatchLeftoverTests {
    let dir: URL
    let patch: URL
    let temporary: URL
    let keyStore: String
    let environment: [String: String]
    let register: URL

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("watch-leftovers")
        patch = dir.appendingPathComponent("patch")
        temporary = dir.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        keyStore = dir.appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "android", alias: "k", dname: "CN=Leftovers, C=US", validityDays: 365)
        try TestSupport.write("edit 0\n", to: "assets/edit.txt", in: patch)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary.path
        environment["LEFTOVER_KS_PASS"] = "android"
        // A register of working files of these sessions' own: other suites' sessions never see (and remove) the
        // spares these tests leave on purpose.
        register = dir.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: register, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        environment["XDG_RUNTIME_DIR"] = register.path
        self.environment = environment
    }

    func watch(_ output: String) throws -> (process: Process, lines: LineCollector) {
        try TestSupport.startApkpatch(["watch", TestSupport.frameworkRes, "--patch", patch.path, "--out", output,
                                       "--ks", keyStore, "--ks-pass", "env:LEFTOVER_KS_PASS"], environment: environment)
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// Hidden names in the output directory (outputs, the patch and the keystore are not hidden).
    func hidden(in directory: URL? = nil) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: (directory ?? dir).path)) ?? []).filter { $0.hasPrefix(".") }.sorted()
    }

    func temporaryFiles() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [] }

    func edit(_ number: Int) throws {
        try TestSupport.write("edit \(number)\n", to: "assets/.edit.txt.tmp", in: patch)
        #expect(rename(patch.appendingPathComponent("assets/.edit.txt.tmp").path, patch.appendingPathComponent("assets/edit.txt").path) == 0)
    }

    func content(_ output: String) throws -> String { try TestSupport.run("unzip", ["-p", output, "assets/edit.txt"]).stdout }

    func expectVerifies(_ output: String, _ label: String) throws {
        let verify = try TestSupport.run("apksigner", ["verify", output])
        #expect(verify.succeeded, "\(label): \(verify)")
    }

    func killed(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func stopped(_ process: Process) {
        process.interrupt()
        process.waitUntilExit()
    }

    /// The spare names a session may leave: `.<output>.apkpatch-<8 letters or digits>` (and its `.swap`).
    func isSpare(_ name: String, of output: String) -> Bool {
        name.range(of: "^\\.\(NSRegularExpression.escapedPattern(for: output))\\.apkpatch-[A-Za-z0-9]{8}(\\.swap)?$", options: .regularExpression) != nil
    }

    @Test("killed during its first build or the copy after it, a session leaves nothing: no output, no hidden file, nothing in TMPDIR")
    func killDuringFirstBuild() throws {
        defer { try? FileManager.default.removeItem(at: dir) }
        // How long a first build takes here, so the kills below land inside one.
        let start = Date()
        let timing = try watch(path("out.apk"))
        try #require(timing.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(timing.lines.lines)")
        let duration = Date().timeIntervalSince(start)
        stopped(timing.process)
        #expect(hidden().isEmpty, "\(hidden())")
        try FileManager.default.removeItem(atPath: path("out.apk"))

        var generator = SplitMix64(seed: 0x19_f1257)
        var landed = 0
        // Five kills at random moments; then, if none of them found the session writing (a loaded machine stretches
        // the timed build, and the moments with it), kills as soon as it writes, which cannot miss.
        var attempt = 0
        while attempt < 5 || (landed == 0 && attempt < 15) {
            defer { attempt += 1 }
            let session = try watch(path("out.apk"))
            // Wait until the session writes in the output directory, then kill it at a random moment after that.
            let deadline = Date().addingTimeInterval(attempt < 5 ? duration * 2 : 120)
            while Date() < deadline && session.process.isRunning && !Self.writesFile(session.process.processIdentifier, in: dir.path) {
                usleep(500)
            }
            if attempt < 5 { usleep(UInt32(Double(generator.next() % 1000) / 1000 * duration * 0.5 * 1e6)) }
            let writing = Self.writesFile(session.process.processIdentifier, in: dir.path)
            killed(session.process)
            if writing { landed += 1 }
            let whole = try !FileManager.default.fileExists(atPath: path("out.apk")) || TestSupport.run("apksigner", ["verify", path("out.apk")]).succeeded
            #expect(whole, "attempt \(attempt): an incomplete output")
            #expect(hidden().isEmpty, "attempt \(attempt) (killed while writing: \(writing)): \(hidden())")
            #expect(temporaryFiles().isEmpty, "attempt \(attempt): \(temporaryFiles())")
            try? FileManager.default.removeItem(atPath: path("out.apk"))
        }
        #expect(landed > 0, "no kill landed while the first build or its copy was written")
    }

    @Test("after rebuilds: a killed session leaves one spare; the next session removes it, but never a running session's")
    func killAfterRebuilds() throws {
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = path("out.apk"), other = path("other.apk")
        let first = try watch(out)
        defer { if first.process.isRunning { killed(first.process) } }
        try #require(first.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(first.lines.lines)")
        #expect(hidden().isEmpty, "the first build has no name but the output: \(hidden())")
        for number in 1...2 {
            try edit(number)
            try #require(first.lines.waitFor(number, seconds: 60) { $0.contains("rebuilt") }, "\(first.lines.lines)")
        }
        killed(first.process)
        try expectVerifies(out, "after kill -9")
        #expect(try content(out) == "edit 2\n")
        let left = hidden()
        #expect(left.count == 1 && left.allSatisfy { isSpare($0, of: "out.apk") }, "one spare is left: \(left)")

        // The next session on the same output removes it when it starts writing.
        let second = try watch(out)
        defer { if second.process.isRunning { killed(second.process) } }
        try #require(second.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(second.lines.lines)")
        #expect(hidden().isEmpty, "the killed session's spare is removed: \(hidden())")
        try edit(3)
        try #require(second.lines.waitFor(seconds: 60) { $0.contains("rebuilt") }, "\(second.lines.lines)")
        let live = hidden()
        #expect(live.count == 1 && live.allSatisfy { isSpare($0, of: "out.apk") }, "\(live)")

        // A third session in the same directory (another output) leaves the running session's spare alone, and both
        // keep rebuilding.
        let third = try watch(other)
        defer { if third.process.isRunning { killed(third.process) } }
        try #require(third.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(third.lines.lines)")
        #expect(live.allSatisfy(hidden().contains), "a running session's spare was removed: \(hidden())")
        try edit(4)
        try #require(second.lines.waitFor(2, seconds: 60) { $0.contains("rebuilt") }, "\(second.lines.lines)")
        try #require(third.lines.waitFor(seconds: 60) { $0.contains("rebuilt") }, "\(third.lines.lines)")
        #expect(try content(out) == "edit 4\n" && (try content(other)) == "edit 4\n")
        #expect(second.lines.lines.allSatisfy { !$0.lowercased().contains("error") }, "\(second.lines.lines)")

        stopped(second.process)
        stopped(third.process)
        #expect(hidden().isEmpty, "stopped sessions leave their outputs only: \(hidden())")
        try expectVerifies(out, "out.apk")
        try expectVerifies(other, "other.apk")
        #expect(temporaryFiles().isEmpty, "\(temporaryFiles())")
    }

    @Test("a killed session's spare is removed by the next session wherever it starts (the register); SIGTERM and SIGHUP stop a session cleanly")
    func spareRemovedAtNextStartAnywhereAndOnSignals() throws {
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = path("out.apk")
        let first = try watch(out)
        defer { if first.process.isRunning { killed(first.process) } }
        try #require(first.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(first.lines.lines)")
        for number in 1...2 {
            try edit(number)
            try #require(first.lines.waitFor(number, seconds: 60) { $0.contains("rebuilt") }, "\(first.lines.lines)")
        }
        killed(first.process)
        let left = hidden()
        #expect(left.count == 1 && left.allSatisfy { isSpare($0, of: "out.apk") }, "one spare is left: \(left)")

        // A session on an output in another directory removes it when it starts.
        let elsewhere = dir.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let second = try watch(elsewhere.appendingPathComponent("out.apk").path)
        defer { if second.process.isRunning { killed(second.process) } }
        try #require(second.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(second.lines.lines)")
        #expect(hidden().isEmpty, "the killed session's spare is removed: \(hidden())")
        try edit(3)
        try #require(second.lines.waitFor(seconds: 60) { $0.contains("rebuilt") }, "\(second.lines.lines)")
        #expect(hidden(in: elsewhere).count == 1, "\(hidden(in: elsewhere))")

        // SIGTERM (a service manager) and SIGHUP (the terminal closed) end the session as Ctrl-C does: no spare left.
        kill(second.process.processIdentifier, SIGTERM)
        second.process.waitUntilExit()
        #expect(second.process.terminationReason == .exit, "SIGTERM ends the session, not the process")
        #expect(hidden(in: elsewhere).isEmpty, "\(hidden(in: elsewhere))")
        let third = try watch(out)
        defer { if third.process.isRunning { killed(third.process) } }
        try #require(third.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(third.lines.lines)")
        try edit(4)
        try #require(third.lines.waitFor(seconds: 60) { $0.contains("rebuilt") }, "\(third.lines.lines)")
        #expect(hidden().count == 1, "\(hidden())")
        kill(third.process.processIdentifier, SIGHUP)
        third.process.waitUntilExit()
        #expect(third.process.terminationReason == .exit, "SIGHUP ends the session, not the process")
        #expect(hidden().isEmpty, "\(hidden())")
        // Every session's entry in the register went with it.
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: register.appendingPathComponent("apkpatch-working").path)) ?? []
        #expect(entries.isEmpty, "\(entries)")
        try expectVerifies(out, "out.apk")
    }

    @Test("killed at random moments of a rebuild: the output stays whole, and only spares are left for the next session")
    func killDuringRebuilds() throws {
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = path("out.apk")
        var generator = SplitMix64(seed: 0x19_4eb)
        for round in 1...3 {
            let session = try watch(out)
            defer { if session.process.isRunning { killed(session.process) } }
            try #require(session.lines.waitFor(seconds: 120) { $0.contains("] built ") }, "\(session.lines.lines)")
            #expect(hidden().isEmpty, "round \(round): the previous round's leftovers are removed: \(hidden())")
            try edit(2 * round)
            try #require(session.lines.waitFor(seconds: 60) { $0.contains("rebuilt") }, "\(session.lines.lines)")
            try edit(2 * round + 1)
            usleep(UInt32(generator.next() % 400_000))  // the debounce, then the rebuild
            killed(session.process)
            try expectVerifies(out, "round \(round)")
            #expect(["edit \(2 * round)\n", "edit \(2 * round + 1)\n"].contains(try content(out)))
            #expect(hidden().allSatisfy { isSpare($0, of: "out.apk") } && hidden().count <= 2, "round \(round): \(hidden())")
        }
        #expect(temporaryFiles().isEmpty, "\(temporaryFiles())")
    }

    @Test("run killed while staging a large patch file leaves nothing in TMPDIR")
    func killedRunWithLargePatchFile() throws {
        defer { try? FileManager.default.removeItem(at: dir) }
        var generator = SplitMix64(seed: 0x19_7a4)
        var bytes = [UInt8](repeating: 0, count: 48 << 20)
        bytes.withUnsafeMutableBytes { raw in
            for index in raw.bindMemory(to: UInt64.self).indices { raw.bindMemory(to: UInt64.self)[index] = generator.next() }
        }
        try Data(bytes).write(to: patch.appendingPathComponent("assets/large.bin"))
        let arguments = ["run", TestSupport.frameworkRes, "--patch", patch.path, "--out", path("out.apk"), "--ks", keyStore, "--ks-pass", "env:LEFTOVER_KS_PASS"]
        var staged = 0
        // Four attempts, and more while none has seen the file staged (a poll can miss it on a loaded machine).
        var attempt = 0
        while attempt < 4 || (staged == 0 && attempt < 12) {
            defer { attempt += 1 }
            let (process, _) = try TestSupport.startApkpatch(arguments, environment: environment)
            let deadline = Date().addingTimeInterval(60)
            var seen = false
            while Date() < deadline && process.isRunning {
                if Self.writesFile(process.processIdentifier, in: temporary.path) { seen = true; break }
                usleep(200)
            }
            usleep(UInt32(generator.next() % 50_000))
            killed(process)
            if seen { staged += 1 }
            #expect(temporaryFiles().isEmpty, "attempt \(attempt): \(temporaryFiles())")
            #expect(hidden().isEmpty, "attempt \(attempt): \(hidden())")
        }
        #expect(staged > 0, "no kill landed while the large patch file was staged")
    }

    /// Whether `process` has a file of `directory` open (an unnamed `O_TMPFILE` shows as "DIR/#INODE (deleted)").
    static func writesFile(_ process: Int32, in directory: String) -> Bool {
        let descriptors = "/proc/\(process)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: descriptors) else { return false }
        return entries.contains { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(descriptors)/\(entry)") else { return false }
            return target.hasPrefix(directory + "/")
        }
    }
}
