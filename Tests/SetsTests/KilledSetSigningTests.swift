import Foundation
import Testing
import TestSupport

/// `kill -9` of a set signing while its APKs are in the staging directory beside the output (a folder, since a
/// directory has no unnamed `O_TMPFILE` form): the staging directory, full-size APKs in it, is removed when the
/// command dies, not left until the next run; and where it is left (the helper that removes it was killed too),
/// the next run to that output removes it. The command stops itself at that moment (`APKPATCH_TEST_STOP_AT`).
@Suite(.serialized, .removesTemporaryDirectories) struct KilledSetSigningTests {
    let scratch: URL
    let fixture: SplitSetFixture

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-killed-set")
        fixture = try SplitSetFixture(in: scratch)
    }

    /// The names in `dir` of staging directories (`.NAME.tmp-XXXXXX`).
    static func staging(in dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") && $0.contains(".tmp-") }
    }

    /// The processes whose parent is `pid` (from `/proc/*/stat`).
    static func children(of pid: Int32) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap(Int32.init).filter { child in
            guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[close...].split(separator: " ")
            return fields.count > 2 && Int32(fields[2]) == pid
        }
    }

    /// Signs `input` into `output`, stops at the staged APKs, checks they are there, runs `atStop` with the
    /// command's pid, and kills it with SIGKILL.
    func signKilledWhileStaged(_ input: String, output: URL, atStop: (Int32) throws -> Void = { _ in }) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.apkpatchBinary)
        process.arguments = ["sign", "--debug-keystore", scratch.appendingPathComponent("debug.p12").path, "--out", output.path, input]
        var environment = ProcessInfo.processInfo.environment
        environment["APKPATCH_TEST_STOP_AT"] = "set-staged"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(300)
        while process.isRunning && StaleV4SignatureTests.state(of: process.processIdentifier) != "T" && Date() < deadline { usleep(10_000) }
        try #require(StaleV4SignatureTests.state(of: process.processIdentifier) == "T", "the signing never stopped with its APKs staged")
        let parent = output.deletingLastPathComponent()
        let staged = try Self.staging(in: parent)
        try #require(staged.count == 1, "not one staging directory beside the output: \(staged)")
        let apks = try FileManager.default.contentsOfDirectory(atPath: parent.appendingPathComponent(staged[0]).path).filter { $0.hasSuffix(".apk") }
        #expect(apks.count == 4, "the staged APKs: \(apks)")
        try atStop(process.processIdentifier)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    }

    @Test(arguments: [SplitSetFixture.Form.directory, .apks])
    func aKilledSigningLeavesNoStagingDirectory(form: SplitSetFixture.Form) throws {
        let dir = scratch.appendingPathComponent("gone-\(form)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let output = dir.appendingPathComponent(form == .directory ? "signed" : "signed.apks")
        try signKilledWhileStaged(try fixture.pack(form), output: output)
        // The helper removes it once it sees the command gone; a loaded machine may take a moment to run it.
        let deadline = Date().addingTimeInterval(30)
        while try !Self.staging(in: dir).isEmpty && Date() < deadline { usleep(20_000) }
        let left = try Self.staging(in: dir)
        #expect(left.isEmpty, "the killed signing left \(left)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "no output from a killed run")
    }

    /// Killed with the helper (a machine that lost power, a kill of every process of the user): the next run to
    /// the same output removes what the killed one left, and writes the set.
    @Test func theNextRunRemovesWhatAKilledRunAndItsHelperLeft() throws {
        let dir = scratch.appendingPathComponent("next-run")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let output = dir.appendingPathComponent("signed")
        let input = try fixture.pack(.directory)
        try signKilledWhileStaged(input, output: output) { pid in
            let helpers = Self.children(of: pid)
            #expect(helpers.count == 1, "one helper: \(helpers)")
            for helper in helpers { kill(helper, SIGKILL) }
            // Reaped by init once the command is gone; here, gone before the command is killed.
            let deadline = Date().addingTimeInterval(30)
            while helpers.contains(where: { StaleV4SignatureTests.state(of: $0) != nil && StaleV4SignatureTests.state(of: $0) != "Z" }) && Date() < deadline {
                usleep(10_000)
            }
        }
        usleep(500_000)
        let left = try Self.staging(in: dir)
        #expect(left.count == 1, "the helper was killed: the staging directory stays until the next run: \(left)")
        let again = try TestSupport.apkpatch(["sign", "--debug-keystore", scratch.appendingPathComponent("debug.p12").path, "--out", output.path, input])
        #expect(again.succeeded, "\(again)")
        let after = try Self.staging(in: dir)
        #expect(after.isEmpty, "the next run left \(after)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.path).filter { $0.hasSuffix(".apk") }.count == 4)
    }
}
