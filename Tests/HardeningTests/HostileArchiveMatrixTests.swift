import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// One table for issue 19's hostile-archive classes: each class through every command that reads an APK (verify,
/// unpack, decode, run, sign, align, watch, the split-set commands, merge, run --install), each of which must
/// refuse it before writing anything: exit status 1 (watch: the failed build reported, no output, a clean stop),
/// a message naming the problem, no output, no temporary file (TMPDIR is the case's own), the patch directory
/// and the input as they were, and adb never run. The archives are built at test time from an apksigner-signed,
/// aapt-built APK (ArchiveStrictnessTests and CorruptEntryTests make each shape); the same commands on the
/// intact APK succeed (`intactInputPassesEveryCommand`), so what refuses below is the class.
@Suite(.removesTemporaryDirectories) struct HostileArchiveMatrixTests {
    enum Hostile: String, CaseIterable, CustomStringConvertible {
        // The archive's structure.
        case bytesBetweenEntries, bytesBeforeEndRecord, twoEndRecords, uncountedCentralRecord, countAboveRecords, noEntries
        // An entry's data.
        case storedCRC, deflatedCRC, invalidDeflate, unterminatedDeflate, truncatedDeflate, inflatesLonger, inflatesShorter
        // Names, a prefix.
        case emptyName, dotName, dotDotName, janusPrefixOnV1Only
        // The patch directory.
        case patchNameNotUTF8
        // A set container (the APK in it intact): another file's data, or the APK's, not what the container records.
        case containerFileCRC, containerAPKCRC
        // What the input path is.
        case fifo, device, directory
        var description: String { rawValue }

        /// The entry data damage (CorruptEntryTests' shapes) this class is.
        var damage: CorruptEntryTests.Damage? {
            switch self {
            case .storedCRC: return .storedCRC
            case .deflatedCRC: return .deflatedCRC
            case .invalidDeflate: return .invalidDeflate
            case .unterminatedDeflate: return .unterminatedDeflate
            case .truncatedDeflate: return .truncatedDeflate
            case .inflatesLonger: return .inflatesLonger
            case .inflatesShorter: return .inflatesShorter
            default: return nil
            }
        }

        var isInputKind: Bool { [.fifo, .device, .directory].contains(self) }
        /// Only the set's container is hostile: the commands that read a set are the ones to refuse it.
        var isContainerOnly: Bool { [.containerFileCRC, .containerAPKCRC].contains(self) }

        /// What the message must say (any one of these).
        var messages: [String] {
            if let damage { return [damage.name] }
            switch self {
            case .bytesBetweenEntries: return ["belong to no entry of the central directory"]
            case .bytesBeforeEndRecord: return ["between the central directory"]
            case .twoEndRecords: return ["two end of central directory records"]
            case .uncountedCentralRecord: return ["more bytes after them"]
            case .countAboveRecords: return ["central directory record"]
            case .noEntries: return ["counts no entries"]
            case .containerFileCRC: return ["entry \"icon.png\" is corrupt: CRC-32 is"]
            case .containerAPKCRC: return ["entry \"splits/base-master.apk\" is corrupt: CRC-32 is"]
            case .emptyName, .dotName, .dotDotName: return ["which names no file"]
            case .janusPrefixOnV1Only: return ["bytes before the first local header belong to no entry", "Janus"]
            case .patchNameNotUTF8: return ["not valid UTF-8"]
            case .fifo: return ["a FIFO"]
            case .device: return ["a character device"]
            case .directory: return ["a directory", "holds no APK"]
            default: return []
            }
        }
    }

    enum Command: String, CaseIterable, CustomStringConvertible {
        case verify, unpack, decode, run, sign, align, watch, merge, install
        case setRun = "run (set)", setSign = "sign (set)", setVerify = "verify (set)"
        case verifyEntries = "verify --check-entries", setVerifyEntries = "verify --check-entries (set)"
        var description: String { rawValue }
        var takesPatch: Bool { [.run, .watch, .install, .setRun].contains(self) }
        var readsSet: Bool { [.setRun, .setSign, .setVerify, .setVerifyEntries, .merge].contains(self) }
    }

    static let password = "matrix-secret"
    static let keyStore: Result<String, any Error> = Result {
        let path = try TestSupport.makeTemporaryDirectory("matrix-keystore").appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: path, password: password, alias: "k", dname: "CN=Matrix, C=US", validityDays: 3650)
        return path
    }

    /// `unsigned` signed by apksigner with `options`.
    static func apksigned(_ unsigned: [UInt8], _ options: [String]) throws -> [UInt8] {
        let dir = try TestSupport.makeTemporaryDirectory("matrix-sign")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.apk").path, out = dir.appendingPathComponent("out.apk").path
        try Data(unsigned).write(to: URL(fileURLWithPath: input))
        let result = try TestSupport.run("apksigner", ["sign", "--ks", try keyStore.get(), "--ks-pass", "env:MATRIX_PASS"] + options + ["--out", out, input],
                                         environment: ["MATRIX_PASS": password])
        guard result.succeeded else { throw FixtureError(message: "apksigner sign: \(result)") }
        return try TestSupport.readBytes(out)
    }

    /// The aapt-built fixture unsigned, signed by apksigner (v2 and v3), and signed v1-only (targetSdkVersion 28)
    /// for Janus.
    static let inputs: Result<(unsigned: [UInt8], signed: [UInt8], v1Only: [UInt8]), any Error> = Result {
        let dir = try TestSupport.makeTemporaryDirectory("matrix-inputs")
        defer { try? FileManager.default.removeItem(at: dir) }
        // minSdkVersion 24: v2 and v3 alone are a whole signature; zipalign -p: resources.arsc and the library
        // aligned, so that verify passes the intact APK.
        func aligned(_ fixture: FixtureAPK, _ name: String) throws -> [UInt8] {
            let built = try fixture.build(in: dir, name: "\(name)-aapt.apk")
            let out = dir.appendingPathComponent("\(name).apk").path
            let result = try TestSupport.run("zipalign", ["-f", "-p", "4", built, out])
            guard result.succeeded else { throw FixtureError(message: "zipalign: \(result)") }
            return try TestSupport.readBytes(out)
        }
        var fixture = FixtureAPK.cordovaLike()
        fixture.minSdk = 24
        let unsigned = try aligned(fixture, "unsigned")
        var v1Fixture = FixtureAPK.cordovaLike()
        v1Fixture.targetSdk = 28
        let v1Unsigned = try aligned(v1Fixture, "v1-unsigned")
        return (unsigned, try apksigned(unsigned, []), try apksigned(v1Unsigned, ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false"]))
    }

    static func bytes(_ hostile: Hostile) throws -> [UInt8] {
        let (unsigned, signed, v1Only) = try inputs.get()
        if let damage = hostile.damage {
            // Signed over the damage by apksigner with v2 and v3 (no v1, which would inflate the entry;
            // the APK Signature Schemes digest the bytes as they are): a signature that verifies, so only an entry
            // check can refuse it.
            var layout = try ZipRelayout(bytes: unsigned)
            layout.trailing = [try CorruptEntryTests.record(damage)]
            return try apksigned(try layout.build(), ["--v1-signing-enabled", "false"])
        }
        // The structure changed under a v1-only signature, which covers entries only and so still verifies:
        // verify's verdict is the structure's.
        switch hostile {
        case .bytesBetweenEntries: return try ArchiveStrictnessTests.make(.hiddenLocalEntry, from: v1Only)
        case .bytesBeforeEndRecord: return try ArchiveStrictnessTests.make(.bytesBeforeEndRecord, from: v1Only)
        case .twoEndRecords: return try ArchiveStrictnessTests.make(.secondEndRecord, from: v1Only)
        case .uncountedCentralRecord: return try ArchiveStrictnessTests.make(.uncountedCentralRecord, from: v1Only)
        case .countAboveRecords:
            // The end record (no comment: the last 22 bytes) counts one entry more than the central directory holds.
            var bytes = v1Only
            let end = bytes.count - 22
            for field in [end + 8, end + 10] {
                let count = (UInt16(bytes[field]) | UInt16(bytes[field + 1]) << 8) + 1
                bytes[field] = UInt8(count & 0xff)
                bytes[field + 1] = UInt8(count >> 8)
            }
            return bytes
        case .noEntries: return EndOfCentralDirectory(entryCount: 0, centralDirectorySize: 0, centralDirectoryOffset: 0).encoded()
        case .emptyName: return try ArchiveStrictnessTests.make(.emptyName, from: signed)
        case .dotName: return try ArchiveStrictnessTests.make(.dotName, from: signed)
        case .dotDotName: return try ArchiveStrictnessTests.make(.dotDotName, from: signed)
        case .janusPrefixOnV1Only:
            var layout = try ZipRelayout(bytes: v1Only)
            layout.inserted[0] = ArchiveStrictnessTests.dexPrefix
            return try layout.build()
        default: return signed
        }
    }

    /// A case's files: WORK/input.apk (or the FIFO, device, directory), WORK/set.apks holding it as its base
    /// (WORK/set/ when the input is not a file), WORK/patch, WORK/tmp (TMPDIR); outputs under WORK/out….
    struct Case {
        let work: URL
        let input: String
        let set: String
        let patch: URL
        let environment: [String: String]
        let adb: FakeADB

        init(_ hostile: Hostile?) throws {
            work = try TestSupport.makeTemporaryDirectory("matrix-\(hostile?.rawValue ?? "intact")")
            input = work.appendingPathComponent("input.apk").path
            patch = work.appendingPathComponent("patch")
            try TestSupport.write("patched\n", to: "assets/www/patched.txt", in: patch)
            try FileManager.default.createDirectory(at: work.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            let bytes = try HostileArchiveMatrixTests.bytes(hostile ?? .patchNameNotUTF8)
            let setMember: String
            if hostile?.isInputKind == true {
                let folder = work.appendingPathComponent("set")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                setMember = folder.appendingPathComponent("base.apk").path
                set = folder.path
            } else {
                setMember = work.appendingPathComponent("member.apk").path
                set = work.appendingPathComponent("set.apks").path
                try Data(bytes).write(to: URL(fileURLWithPath: input))
                var container = ZipBuilder()
                container.items = [ZipBuilder.Item(name: "splits/base-master.apk", data: bytes, crc: CRC32.checksum(bytes) ^ (hostile == .containerAPKCRC ? 1 : 0))]
                if hostile == .containerFileCRC {
                    // A file a container output would carry on as it is (bundletool's toc.pb, an .xapk's icon or OBB).
                    let icon = Array("not what the CRC-32 says".utf8)
                    container.items.append(ZipBuilder.Item(name: "icon.png", data: icon, crc: CRC32.checksum(icon) ^ 1))
                }
                try Data(container.build()).write(to: URL(fileURLWithPath: set))
            }
            switch hostile {
            case .fifo?:
                for path in [input, setMember] { guard mkfifo(path, 0o600) == 0 else { throw FixtureError(message: "mkfifo \(path)") } }
            case .device?:
                for path in [input, setMember] { try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/dev/zero") }
            case .directory?:
                for path in [input, setMember] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
            case .patchNameNotUTF8?:
                // "caf" + 0xE9: Latin-1 é, not valid UTF-8.
                let name = Array(patch.appendingPathComponent("assets/caf").path.utf8) + [0xE9, 0]
                let fd = name.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
                guard fd >= 0 else { throw FixtureError(message: "creating the non-UTF-8 name failed") }
                close(fd)
            default: break
            }
            adb = try FakeADB()
            var environment = adb.environment()
            environment["TMPDIR"] = work.appendingPathComponent("tmp").path
            environment["MATRIX_PASS"] = HostileArchiveMatrixTests.password
            self.environment = environment
        }

        var keys: [String] { ["--ks", (try? HostileArchiveMatrixTests.keyStore.get()) ?? "missing", "--ks-pass", "env:MATRIX_PASS"] }
        func out(_ name: String) -> String { work.appendingPathComponent(name).path }
        var setOut: String { out(set.hasSuffix(".apks") ? "out-set.apks" : "out-set") }

        func arguments(_ command: Command) -> [String] {
            switch command {
            case .verify: return ["verify", input]
            case .unpack: return ["unpack", input, "-o", out("out-unpacked")]
            case .decode: return ["decode", input, "-o", out("out-decoded")]
            case .run: return ["run", input, "--patch", patch.path, "--out", out("out-run.apk")] + keys
            case .sign: return ["sign"] + keys + ["--out", out("out-signed.apk"), input]
            case .align: return ["align", "-f", "-p", "4", input, out("out-aligned.apk")]
            case .watch: return ["watch", input, "--patch", patch.path, "--out", out("out-watch.apk")] + keys
            case .merge: return ["merge", set, "--out", out("out-merged.apk")] + keys
            case .install: return ["run", input, "--patch", patch.path, "--out", out("out-install.apk"), "--install"] + keys
            case .setRun: return ["run", set, "--patch", patch.path, "--out", setOut] + keys
            case .setSign: return ["sign"] + keys + ["--out", setOut, set]
            case .setVerify: return ["verify", set]
            case .verifyEntries: return ["verify", "--check-entries", input]
            case .setVerifyEntries: return ["verify", "--check-entries", set]
            }
        }

        /// What the command writes when it succeeds.
        func outputs(_ command: Command) -> [String] {
            switch command {
            case .verify, .setVerify, .verifyEntries, .setVerifyEntries: return []
            case .unpack: return ["out-unpacked"]
            case .decode: return ["out-decoded"]
            case .run: return ["out-run.apk", "out-run.apk.idsig"]
            case .sign: return ["out-signed.apk"]
            case .align: return ["out-aligned.apk"]
            case .watch: return ["out-watch.apk"]
            case .merge: return ["out-merged.apk", "out-merged.apk.idsig"]
            case .install: return ["out-install.apk", "out-install.apk.idsig"]
            case .setRun, .setSign: return [URL(fileURLWithPath: setOut).lastPathComponent]
            }
        }

        /// Runs `command`: watch until its first build is reported (or it exits), then SIGINT.
        func run(_ command: Command) throws -> (status: Int32, output: String) {
            let arguments = arguments(command)
            guard command == .watch else {
                let result = try TestSupport.run("timeout", ["-s", "KILL", "120", TestSupport.apkpatchBinary] + arguments, environment: environment)
                return (result.status, result.stdout + result.stderr)
            }
            // Its output into a file outside the case (read after the exit, nothing is lost to a pipe not yet drained).
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-watch-\(UUID().uuidString).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            defer { try? FileManager.default.removeItem(at: log) }
            let handle = try FileHandle(forWritingTo: log)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: TestSupport.apkpatchBinary)
            process.arguments = arguments
            process.environment = environment
            process.standardOutput = handle
            process.standardError = handle
            process.standardInput = FileHandle.nullDevice
            try process.run()
            try handle.close()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
            func text() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
            let reported = Date().addingTimeInterval(120)
            while process.isRunning && Date() < reported && !text().split(separator: "\n").contains(where: { $0.contains("] built ") || $0.contains("] error") }) {
                usleep(20_000)
            }
            if process.isRunning {
                process.interrupt()
                let deadline = Date().addingTimeInterval(60)
                while process.isRunning && Date() < deadline { usleep(20_000) }
                if process.isRunning { return (-1, text() + "\n[watch did not stop within 60 s of SIGINT]") }
            }
            process.waitUntilExit()
            let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
            return (status, text())
        }
    }

    /// Everything under `directory` (relative paths, "tmp/…" included).
    static func files(_ directory: URL) -> Set<String> {
        Set((FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String]) ?? [])
    }

    @Test(arguments: Hostile.allCases)
    func everyCommandRefusesItBeforeWriting(_ hostile: Hostile) throws {
        let c = try Case(hostile)
        let inputBytes = try? TestSupport.readBytes(c.input)
        var problems: [String] = []
        for command in Command.allCases where (hostile != .patchNameNotUTF8 || command.takesPatch) && (!hostile.isContainerOnly || command.readsSet) {
            let before = Self.files(c.work)
            let (status, output) = try c.run(command)
            var wrong: [String] = []
            if command == .watch {
                // A failed build is reported and watch goes on (an edit may mend it): it writes nothing and stops
                // cleanly; an archive it cannot open ends it at once.
                if status != 1 && !(status == 0 && output.contains("no build written yet")) { wrong.append("exit \(status)") }
            } else if status != 1 {
                wrong.append("exit \(status)")
            }
            if !hostile.messages.contains(where: output.contains) { wrong.append("no message saying \(hostile.messages)") }
            for trap in ["Fatal error", "Error Domain=", "The operation could", "crashed", "Segmentation fault"] where output.contains(trap) {
                wrong.append("untyped or trap: \(trap)")
            }
            let after = Self.files(c.work)
            if after != before { wrong.append("files changed: +\(after.subtracting(before).sorted()) -\(before.subtracting(after).sorted())") }
            for path in after.subtracting(before) { try? FileManager.default.removeItem(at: c.work.appendingPathComponent(path)) }
            if command == .install, let calls = try? c.adb.invocations(), !calls.isEmpty { wrong.append("adb ran: \(calls)") }
            guard !wrong.isEmpty else { continue }
            let problem = "\(hostile) through \(command): \(wrong.joined(separator: "; "))\n    apkpatch \(c.arguments(command).joined(separator: " "))\n    "
                + output.prefix(600).replacingOccurrences(of: "\n", with: "\n    ")
            if let gap = Self.knownGap(hostile, command) {
                withKnownIssue(gap, isIntermittent: true) { Issue.record(Comment(rawValue: problem)) }
            } else {
                problems.append(problem)
            }
        }
        if let inputBytes { #expect((try? TestSupport.readBytes(c.input)) == inputBytes, "\(hostile): the input was modified") }
        #expect(problems.isEmpty, "kept in \(c.work.path):\n\(problems.joined(separator: "\n"))")
        if problems.isEmpty { try? FileManager.default.removeItem(at: c.work) }
    }

    /// What is not refused yet, and why: reported as known issues, so the table says where the rule stops.
    static func knownGap(_ hostile: Hostile, _ command: Command) -> Comment? {
        switch (hostile, command) {
        case (.storedCRC, .verifyEntries), (.deflatedCRC, .verifyEntries), (.storedCRC, .setVerifyEntries), (.deflatedCRC, .setVerifyEntries):
            // VerifyEntryChecksTests: Android's libziparchive reads the entry without comparing its CRC-32, so the
            // APK works as built and --check-entries warns (ENTRY_CRC32_MISMATCH) instead of failing it.
            return "verify --check-entries warns about a wrong CRC-32 (Android reads the entry) and passes the APK"
        case (_, .verify) where hostile.damage != nil, (_, .setVerify) where hostile.damage != nil,
             (_, .align) where hostile.damage != nil:
            // Neither reads entry data unless --check-entries asks (VerifyEntryChecksTests, CorruptEntryTests):
            // verify's digests are the schemes' (apksigner does not check CRC-32s either), align copies entries
            // raw as zipalign does. Reading every entry costs them a quarter to a half more CPU.
            return "\(command) does not read entry data unless --check-entries asks: a damaged entry passes"
        default:
            return nil
        }
    }

    /// The control: the same commands on the intact APK (and the set holding it) succeed and write their outputs.
    @Test func intactInputPassesEveryCommand() throws {
        let c = try Case(nil)
        defer { try? FileManager.default.removeItem(at: c.work) }
        var problems: [String] = []
        for command in Command.allCases {
            let (status, output) = try c.run(command)
            let written = c.outputs(command).filter { FileManager.default.fileExists(atPath: c.out($0)) }
            if status != 0 || (!c.outputs(command).isEmpty && written.isEmpty) || (command == .watch && !output.contains("] built ")) {
                problems.append("\(command): exit \(status), wrote \(written)\n    \(output.prefix(600))")
            }
        }
        #expect(try c.adb.invocations().contains { $0.contains("install") }, "run --install ran adb install")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
