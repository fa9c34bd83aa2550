import Foundation
import Testing
import TestSupport

/// Inputs that are not regular files (issue 19): a FIFO made `verify`, `unpack`, `run`, `sign` and `watch` wait
/// forever in `open(2)` for a writer; a directory or a device must be refused as fast, naming what the path is.
/// Every command runs under `timeout`, so a regression fails the test (exit 124) instead of hanging the suite: a
/// command that opened the FIFO or read the device would never finish, so the limit is generous (a loaded CI
/// machine is no reason to fail) and no wall-clock bound is checked besides it.
@Suite(.removesTemporaryDirectories) struct InputKindTests {
    let dir: URL
    let patch: URL

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("input-kind")
        patch = dir.appendingPathComponent("patch")
        try TestSupport.write("x\n", to: "assets/x.txt", in: patch)
    }

    func commands(for input: String) -> [(String, [String])] {
        let out = dir.appendingPathComponent("out-\(UUID().uuidString).apk").path
        return [
            ("verify", ["verify", input]),
            ("unpack", ["unpack", input, "-o", dir.appendingPathComponent("unpacked-\(UUID().uuidString)").path]),
            ("sign", ["sign", "--debug", "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", out, input]),
            ("run", ["run", input, "--patch", patch.path, "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", out]),
            ("watch", ["watch", input, "--patch", patch.path, "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", out]),
            ("align", ["align", "4", input, out]),
        ]
    }

    func expectRefused(_ input: String, saying what: String, or alternatives: [String] = []) throws {
        for (name, arguments) in commands(for: input) {
            let result = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary] + arguments)
            #expect(result.status != 124, "\(name) on \(what) hung until timeout killed it")
            #expect(result.status != 0, "\(name) on \(what): \(result)")
            #expect(([what] + alternatives).contains { result.stderr.contains($0) }, "\(name) must say the input is \(what): \(result)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("out-") || $0.contains("unpacked-") }
        #expect(leftovers.isEmpty, "a refused input leaves no output: \(leftovers)")
    }

    @Test func aFIFOIsRefusedAtOnce() throws {
        let fifo = dir.appendingPathComponent("pipe.apk").path
        #expect(mkfifo(fifo, 0o600) == 0)
        try expectRefused(fifo, saying: "a FIFO")
        // A v4 signature file given as a FIFO: refused at once too, the path named once.
        let apk = try FixtureAPK().build(in: dir, name: "app.apk")
        let v4 = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary, "verify", "--v4-signature-file", fifo, apk])
        #expect(v4.status == 1 && v4.stderr == "Error: cannot read \(fifo): it is a FIFO (named pipe), not a regular file\n", "\(v4)")
    }

    /// A split set container (.apks, .xapk) given as a FIFO: refused at once by every command that reads sets,
    /// the path named once ("cannot read X: cannot read X: …" read as a stutter).
    @Test func aFIFOSetContainerIsRefusedNamingItOnce() throws {
        let fifo = dir.appendingPathComponent("pipe.apks").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let keystore = dir.appendingPathComponent("debug.p12").path
        let out = dir.appendingPathComponent("set-out-\(UUID().uuidString).apks").path
        for arguments in [["verify", fifo], ["sign", "--debug", "--debug-keystore", keystore, "--out", out, fifo],
                          ["run", fifo, "--debug-keystore", keystore, "--out", out],
                          ["merge", fifo, "--debug-keystore", keystore, "--out", out + ".apk"]] {
            let result = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary] + arguments)
            #expect(result.status == 1, "\(arguments[0]): \(result)")
            let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("Error:") }
            #expect(errors == ["Error: cannot read \(fifo): it is a FIFO (named pipe), not a regular file"], "\(arguments[0]): \(result)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("set-out-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// `verify --json` of a path it cannot read as an APK at all (missing, a FIFO, a device) prints its one
    /// object on stdout, the APK failing with the reason (`APK_UNREADABLE`), as `verify --json SET` does for a set
    /// it cannot read: the error went to stderr alone, and a CI step parsing stdout read nothing.
    @Test func verifyJSONReportsAPathItCannotRead() throws {
        let fifo = dir.appendingPathComponent("json-pipe.apk").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let missing = dir.appendingPathComponent("missing.apk").path
        for (path, reason) in [(missing, "no such file"), (fifo, "FIFO"), ("/dev/zero", "character device")] {
            let result = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary, "verify", "--json", path])
            #expect(result.status == 1 && result.stderr.isEmpty, "\(path): \(result)")
            let object = try #require(try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(path): \(result)")
            let error = (object["errors"] as? [[String: Any]])?.first
            #expect(object["path"] as? String == path && object["verified"] as? Bool == false && object["signatureVerified"] as? Bool == false, "\(result.stdout)")
            #expect(error?["code"] as? String == "APK_UNREADABLE" && (error?["message"] as? String)?.lowercased().contains(reason.lowercased()) == true, "\(result.stdout)")
            // The text output is unchanged: the error on stderr.
            let text = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary, "verify", path])
            #expect(text.status == 1 && text.stdout.isEmpty && text.stderr.lowercased().contains(reason.lowercased()), "\(path): \(text)")
        }
    }

    /// A directory is refused by the commands that take one APK; `verify`, `sign`, `run` and `watch` read a
    /// directory as a split APK set (issue 18), and refuse one that holds none.
    @Test func aDirectoryIsRefused() throws {
        let directory = dir.appendingPathComponent("folder.apk")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try expectRefused(directory.path, saying: "a directory", or: ["holds no APK", "split APK set"])
    }

    @Test func aDeviceIsRefused() throws {
        // /dev/zero reads forever and /dev/tty waits for a line: either would hang a reader that trusted it.
        try expectRefused("/dev/zero", saying: "a character device")
    }

    /// A patch file whose name is not valid UTF-8 was decoded with U+FFFD into an entry name the user never
    /// chose; it is refused, naming the file.
    @Test func aPatchFileNameThatIsNotUTF8IsRefused() throws {
        let apk = try FixtureAPK().build(in: dir, name: "in.apk")
        let bad = patch.appendingPathComponent("assets").path + "/caf\u{e9}"
        // "caf" + 0xE9: Latin-1 é, not valid UTF-8.
        var bytes = Array(bad.utf8.dropLast(2)) + [0xE9]
        bytes.append(0)
        let fd = bytes.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
        #expect(fd >= 0)
        close(fd)
        let out = dir.appendingPathComponent("out-utf8.apk").path
        let result = try TestSupport.apkpatch(["run", apk, "--patch", patch.path, "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", out])
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("not valid UTF-8"), "\(result)")
        // The name as the user can find it to rename it (ls -b shows it so), not with a replacement character.
        #expect(result.stderr.contains("assets/caf\\xE9 cannot become an APK entry"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A folder set holding an APK whose name is not valid UTF-8: it was listed with U+FFFD in its name and then
    /// reported as "No such file or directory"; every set command refuses it, naming the file and the cause. A
    /// file that is no APK (not ending in .apk) is not the set's, whatever its name.
    @Test func aSetFolderHoldingAnAPKWhoseNameIsNotUTF8IsRefused() throws {
        let folder = dir.appendingPathComponent("set")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let apk = try FixtureAPK().build(in: folder, name: "base.apk")
        // "caf" + 0xE9 (Latin-1 é, not valid UTF-8): a README of that name is no APK, and does not matter.
        func create(_ name: [UInt8], from source: String) throws {
            let path = Array(folder.path.utf8) + [UInt8(ascii: "/")] + name + [0]
            let made = path.withUnsafeBufferPointer { link(source, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) }
            try #require(made == 0, "link: \(errno)")
        }
        try create(Array("caf".utf8) + [0xE9] + Array(".txt".utf8), from: apk)
        let keys = ["--debug-keystore", dir.appendingPathComponent("debug.p12").path]
        let fine = try TestSupport.apkpatch(["sign", "--debug"] + keys + ["--out", dir.appendingPathComponent("fine").path, folder.path])
        #expect(fine.succeeded, "\(fine)")
        try create(Array("caf".utf8) + [0xE9] + Array(".apk".utf8), from: apk)
        for arguments in [["verify", folder.path], ["sign", "--debug"] + keys + ["--out", dir.appendingPathComponent("out-set").path, folder.path],
                          ["run", folder.path, "--patch", patch.path, "--out", dir.appendingPathComponent("out-run").path] + keys,
                          ["merge", folder.path, "--out", dir.appendingPathComponent("out-merged.apk").path] + keys] {
            let result = try TestSupport.apkpatch(arguments)
            #expect(result.status == 1, "\(arguments[0]): \(result)")
            #expect(result.stderr.contains("caf\\xE9.apk: the file name is not valid UTF-8; rename the file"), "\(arguments[0]): \(result)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("out-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

