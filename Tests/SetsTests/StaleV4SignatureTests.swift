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

    /// apkpatch with `arguments`, set to stop itself at `point` (APKPATCH_TEST_STOP_AT), not yet started.
    static func stopping(_ arguments: [String], at point: String, standardError: FileHandle) -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.apkpatchBinary)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["APKPATCH_TEST_STOP_AT"] = point
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = standardError
        process.standardInput = FileHandle.nullDevice
        return process
    }

    /// Runs `arguments` until the command stops itself at `point`, calls `atStop`, then kills it with SIGKILL.
    /// Returns false when the command never reached the point (it exited, or took over 5 minutes).
    static func stopAndKill(_ arguments: [String], at point: String, atStop: () throws -> Void) throws -> Bool {
        let process = stopping(arguments, at: point, standardError: FileHandle.nullDevice)
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

    /// The commands that write an .idsig beside what they sign, each to its own output in `dir` (`--no-verify`
    /// where it has one: the APKs are changed under it below).
    enum Writer: String, CaseIterable, CustomStringConvertible {
        case run, runPatched, set, merge, batch
        var description: String { rawValue }
    }

    func arguments(_ writer: Writer, in dir: URL, keystore: String) throws -> (arguments: [String], idsigs: [String]) {
        let keys = ["--debug-keystore", keystore]
        let out = dir.appendingPathComponent("out.apk").path, folder = dir.appendingPathComponent("out").path
        let base = fixture.apks["base.apk"]!
        let setNames = fixture.apks.keys.sorted().map { "\(folder)/\($0).idsig" }
        switch writer {
        case .run: return (["run", base, "--out", out, "--no-verify"] + keys, [out + ".idsig"])
        case .runPatched: return (["run", base, "--patch", patch.path, "--out", out, "--no-verify"] + keys, [out + ".idsig"])
        // The patch directory patches the set's base (built through the pipeline); its splits are re-signed.
        case .set: return (["run", try fixture.pack(.directory), "--patch", patch.path, "--out", folder, "--no-verify"] + keys, setNames)
        case .merge: return (["merge", try fixture.pack(.directory), "--out", out, "--no-verify"] + keys, [out + ".idsig"])
        case .batch:
            let fr = fixture.apks["split_config.fr.apk"]!
            let names = [base, fr].map { "\(folder)/\($0.lastPathComponent).idsig" }
            return (["sign", "--out-dir", folder] + keys + [base, fr], names)
        }
    }

    /// Runs `arguments`; each time the command stops itself at `point`, calls `atStop` and lets it go on.
    /// Returns its exit status and standard error (nil status: it did not end within 5 minutes).
    static func runStopping(_ arguments: [String], at point: String, in dir: URL, atStop: () throws -> Void) throws -> (status: Int32?, stderr: String) {
        let errors = dir.appendingPathComponent("stderr-\(UUID().uuidString)")
        try Data().write(to: errors)
        let process = stopping(arguments, at: point, standardError: try FileHandle(forWritingTo: errors))
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(300)
        while process.isRunning && Date() < deadline {
            if state(of: process.processIdentifier) == "T" {
                try atStop()
                kill(process.processIdentifier, SIGCONT)
            }
            usleep(5_000)
        }
        guard !process.isRunning else { return (nil, "") }
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOf: errors, encoding: .utf8)) ?? "")
    }

    /// `bytes` (a signed APK, no archive comment) with one byte of its first central directory record changed:
    /// its external attributes, which no reader needs.
    static func changedCentralDirectory(_ bytes: [UInt8]) throws -> [UInt8] {
        let end = bytes.count - 22
        guard end > 0, bytes[end..<end + 4] == [0x50, 0x4b, 0x05, 0x06] else { throw FixtureError(message: "no end of central directory record at the end") }
        let offset = (0..<4).reduce(0) { $0 | Int(bytes[end + 16 + $1]) << (8 * $1) }
        guard offset + 46 <= end else { throw FixtureError(message: "the central directory offset \(offset) is past its end record") }
        var changed = bytes
        changed[offset + 38] ^= 0xff
        return changed
    }

    /// The v4 signature of each APK is the one the signer made from the bytes it wrote (`SignerConfig.makesV4Signature`),
    /// not one made by reading the published APK again: run (with and without a patch), a patched set folder (its
    /// base through the pipeline, its splits re-signed), merge and batch signing. Where the command stops before
    /// writing an .idsig, every APK published by then has a central directory byte changed; an .idsig made from the
    /// file would be the changed file's. Each .idsig must verify against the APK as the command wrote it (ours, and
    /// apksigner's for the first), and its tree be fs-verity's for it.
    @Test(arguments: Writer.allCases)
    func theV4SignatureIsTheSignersNotTheFilesReadBack(_ writer: Writer) throws {
        let dir = scratch.appendingPathComponent("made-\(writer)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let (arguments, idsigs) = try arguments(writer, in: dir, keystore: scratch.appendingPathComponent("one.p12").path)
        var written: [String: [UInt8]] = [:]  // file name → the bytes the command published
        var stops = 0
        let (status, stderr) = try Self.runStopping(arguments, at: "before-v4-signature", in: dir) {
            stops += 1
            let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".apk") && !file.lastPathComponent.contains(".tmp-") && written[file.lastPathComponent] == nil {
                let path = dir.appendingPathComponent(file).path
                let bytes = try TestSupport.readBytes(path)
                written[file.lastPathComponent] = bytes
                try Data(try Self.changedCentralDirectory(bytes)).write(to: URL(fileURLWithPath: path))
            }
        }
        try #require(status == 0, "\(writer): apkpatch \(arguments.joined(separator: " ")) -> \(String(describing: status)): \(stderr)")
        #expect(stops >= 1, "\(writer) never stopped before its v4 signature")
        for idsig in idsigs {
            let name = String(idsig.lastPathComponent.dropLast(".idsig".count))
            let bytes = try #require(written[name], "\(writer): \(name) was not in place when its v4 signature was made")
            let apk = dir.appendingPathComponent("as-written-\(name)").path
            try TestSupport.write(bytes, to: apk.lastPathComponent, in: dir)
            let verify = try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", idsig, apk])
            #expect(verify.succeeded, "\(writer): \(name)'s .idsig does not verify against the APK as written: \(verify)")
            let signature = try TestSupport.readBytes(idsig)
            let tree = dir.appendingPathComponent("\(name).tree").path
            #expect(try TestSupport.run("fsverity", ["digest", apk, "--out-merkle-tree", tree]).succeeded)
            let expectedTree = try TestSupport.readBytes(tree)
            #expect(!expectedTree.isEmpty && Array(signature.suffix(expectedTree.count)) == expectedTree, "\(writer): \(name)'s tree is not fs-verity's")
            // apksigner (a JVM start each) for the first APK of each command.
            guard idsig == idsigs[0] else { continue }
            let apksigner = try TestSupport.run("apksigner", ["verify", "-v", "--v4-signature-file", idsig, apk])
            #expect(apksigner.succeeded && apksigner.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(writer), \(name): \(apksigner)")
        }
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
