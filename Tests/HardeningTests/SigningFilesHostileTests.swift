import Foundation
import Testing
import TestSupport

/// Hostile signing files read beside an APK: the lineage file (`lineage --in`, `sign --lineage`) and the v4
/// `.idsig` (`verify --v4-signature-file`). Each must end in one typed line and bounded work: both used to be read
/// into memory whole (a 1 GiB file cost 2 GB of RSS), and a v4 salt is hashed with every block of the APK's tree.
@Suite(.removesTemporaryDirectories) struct SigningFilesHostileTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("hostile-signing-files") }

    /// The exit status, output and peak resident memory (KiB, GNU time's %M) of one bounded `apkpatch` run.
    func measured(_ arguments: [String]) throws -> (result: TestSupport.ProcessResult, kilobytes: Int) {
        let report = dir.appendingPathComponent("time-\(UUID().uuidString).txt").path
        let result = try TestSupport.run("/usr/bin/time", ["-f", "%M", "-o", report, "timeout", "-s", "KILL", "120",
                                                          TestSupport.apkpatchBinary] + arguments, environment: ["KS_PASS": "android"])
        let text = try String(contentsOfFile: report, encoding: .utf8)
        return (result, Int(text.split(separator: "\n").last.map(String.init) ?? "") ?? -1)
    }

    /// Two EC keystores (apkpatch's own, quick to make) and the lineage file `rotate` makes from them.
    func lineageFile() throws -> String {
        var signers: [[String]] = []
        for name in ["old", "new"] {
            let path = dir.appendingPathComponent("\(name).p12").path
            let made = try TestSupport.apkpatch(["keystore", "create", "--ks", path, "--alias", "key", "--ks-pass", "env:KS_PASS",
                                                 "--dname", "CN=\(name)", "--key-alg", "EC"], environment: ["KS_PASS": "android"])
            try #require(made.succeeded, "\(made)")
            signers.append(["--ks", path, "--ks-pass", "env:KS_PASS"])
        }
        let lineage = dir.appendingPathComponent("lineage.bin").path
        let rotate = try TestSupport.apkpatch(["rotate", "--out", lineage, "--old-signer"] + signers[0] + ["--new-signer"] + signers[1],
                                              environment: ["KS_PASS": "android"])
        try #require(rotate.succeeded, "\(rotate)")
        return lineage
    }

    /// `path` grown to `size` bytes with a hole (no disk used; reads give zeros).
    func extend(_ path: String, to size: UInt64) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: size)
        try handle.close()
    }

    @Test func aLineageFileIsReadOnlyAsFarAsItDeclares() throws {
        let lineage = try lineageFile()
        try extend(lineage, to: 1 << 30)
        let (result, kilobytes) = try measured(["lineage", "--in", lineage, "--print-certs"])
        // apksig ignores what follows the lineage too; the 1 GiB after it must not be read.
        #expect(result.status == 0 && result.stdout.contains("Signer #2 in lineage certificate DN: CN=new"), "\(result)")
        #expect(kilobytes > 0 && kilobytes < 256 * 1024, "peak RSS \(kilobytes) KiB for a 1 GiB lineage file")
    }

    @Test func aLineageFileDeclaringAHugeLengthIsRefusedUnread() throws {
        let lineage = try lineageFile()
        var bytes = try TestSupport.readBytes(lineage)
        bytes.replaceSubrange(8..<12, with: [0xf0, 0xff, 0xff, 0x7f])  // 2 GiB - 16
        try Data(bytes).write(to: URL(fileURLWithPath: lineage))
        try extend(lineage, to: (1 << 31) + 64)
        for arguments in [["lineage", "--in", lineage, "--print-certs"],
                          ["sign", "--ks", dir.appendingPathComponent("new.p12").path, "--ks-pass", "env:KS_PASS", "--lineage", lineage,
                           "--out", dir.appendingPathComponent("out.apk").path, try FixtureAPK().build(in: dir, name: "in.apk")]] {
            let (result, kilobytes) = try measured(arguments)
            #expect(result.status == 1 && result.stderr.split(separator: "\n").count == 1, "\(arguments[0]): \(result)")
            #expect(result.stderr.contains("declares a lineage of 2147483632 bytes") && result.stderr.contains("it is damaged"), "\(result)")
            #expect(kilobytes > 0 && kilobytes < 256 * 1024, "\(arguments[0]): peak RSS \(kilobytes) KiB")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.apk").path), "a refused lineage leaves no output")
    }

    /// A signed APK and the `.idsig` sign wrote beside it.
    func signedWithV4() throws -> (apk: String, idsig: String) {
        let input = try FixtureAPK().build(in: dir, name: "in.apk")
        let apk = dir.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--debug", "--debug-keystore", dir.appendingPathComponent("debug.p12").path,
                                             "--v4-signing-enabled", "true", "--out", apk, input])
        try #require(sign.succeeded && FileManager.default.fileExists(atPath: apk + ".idsig"), "\(sign)")
        let verify = try TestSupport.apkpatch(["verify", "--v4-signature-file", apk + ".idsig", apk])
        try #require(verify.succeeded, "\(verify)")
        return (apk, apk + ".idsig")
    }

    @Test func anIdsigBiggerThanAnyOfItsAPKIsNotRead() throws {
        let (apk, idsig) = try signedWithV4()
        try extend(idsig, to: 1 << 30)
        let (result, kilobytes) = try measured(["verify", "--v4-signature-file", idsig, apk])
        #expect(result.status == 1 && result.stderr.contains("more than a v4 signature of this") && result.stderr.contains("not this APK's .idsig"),
                "\(result)")
        #expect(kilobytes > 0 && kilobytes < 256 * 1024, "peak RSS \(kilobytes) KiB for a 1 GiB .idsig")
    }

    @Test func anIdsigSaltLongerThanFsVerityTakesIsRefused() throws {
        let (apk, idsig) = try signedWithV4()
        // version, hashing info's length, hash algorithm, log2 block size, then the salt's length and bytes.
        var bytes = try TestSupport.readBytes(idsig)
        let hashingLength = Int(bytes[4]) | Int(bytes[5]) << 8
        #expect(bytes[13..<17] == [0, 0, 0, 0], "apkpatch writes an empty salt")
        bytes.replaceSubrange(13..<17, with: [33, 0, 0, 0] + [UInt8](repeating: 7, count: 33))
        bytes.replaceSubrange(4..<8, with: [UInt8(truncatingIfNeeded: hashingLength + 33), UInt8((hashingLength + 33) >> 8), 0, 0])
        try Data(bytes).write(to: URL(fileURLWithPath: idsig))
        let result = try TestSupport.apkpatch(["verify", "--v4-signature-file", idsig, apk])
        #expect(result.status == 1 && result.stderr.contains("its salt is 33 bytes, and fs-verity takes at most 32"), "\(result)")
    }
}
