import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// Runs the built `apkpatch` under a hard time limit (SIGKILL after `seconds`) and an address-space limit, so a hang
/// or a runaway allocation fails the test instead of stalling or exhausting the machine.
func boundedApkpatch(_ arguments: [String], seconds: Int = 60, memoryBytes: Int = 4 << 30) throws -> TestSupport.ProcessResult {
    try TestSupport.run("timeout", ["-s", "KILL", String(seconds), "prlimit", "--as=\(memoryBytes)", "--", TestSupport.apkpatchBinary] + arguments)
}

/// What a directory holds, recursively (relative paths), to prove a command wrote nothing else.
func snapshot(_ directory: URL) -> Set<String> {
    guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
    return Set(enumerator.compactMap { $0 as? String })
}

/// Hostile patch directories and hostile archives, end to end through the CLI (`run`, `sign`, `align`, `verify`,
/// `unpack`): each must end with a clear error and a non-zero exit (never a signal, a timeout or an OOM kill), write
/// nothing outside the output, and leave no partial output or temporary file. ZipStagesTests' HostileArchiveTests
/// cover `unpack`/`run` on the archive shapes; these add the other commands, ZIP64 and patch-directory tricks.
@Suite(.removesTemporaryDirectories) struct HostileInputTests {
    let dir: URL
    let input: String
    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("hardening-hostile")
        input = try FixtureAPK().build(in: dir, name: "input.apk")
    }

    static let keyOptions = ["--ks", keyStore, "--ks-pass", "pass:android"]
    /// One keytool-made keystore for the whole suite.
    static let keyStore: String = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("hardening-keystore")
        let path = directory.appendingPathComponent("k.p12").path
        try? TestSupport.makeKeyStore(at: path, password: "android", alias: "k", dname: "CN=Hostile, C=US", validityDays: 365)
        return path
    }

    /// Runs `apkpatch run` with `patch` into a fresh output directory and checks the failure contract.
    func expectRunRefused(patch: URL, mentioning expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let outDir = dir.appendingPathComponent("out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outDir, withIntermediateDirectories: true)
        let before = snapshot(dir)
        let output = outDir.appendingPathComponent("patched.apk").path
        let result = try boundedApkpatch(["run", input, "--patch", patch.path, "--out", output] + Self.keyOptions)
        #expect(result.status == 1, "expected exit 1 (an error, not a signal or timeout): \(result)", sourceLocation: sourceLocation)
        #expect(result.stderr.lowercased().contains(expected.lowercased()), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(snapshot(outDir).isEmpty, "partial output: \(snapshot(outDir))", sourceLocation: sourceLocation)
        #expect(snapshot(dir) == before, "written outside the output: \(snapshot(dir).symmetricDifference(before))", sourceLocation: sourceLocation)
    }

    func makePatch(_ name: String = "patch") throws -> URL {
        let patch = dir.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try TestSupport.write("ok", to: "assets/ok.txt", in: patch)
        return patch
    }

    @Test func symlinkedDirectoryInPatchIsRefused() throws {
        let patch = try makePatch()
        try FileManager.default.createSymbolicLink(atPath: patch.appendingPathComponent("assets/etc").path, withDestinationPath: "/etc")
        try expectRunRefused(patch: patch, mentioning: "symbolic link")
    }

    @Test func specFileThatIsADeviceOrFIFOFailsQuickly() throws {
        // apkpatch.yml → /dev/zero would be an endless read; a FIFO would block forever in open(2).
        let zero = try makePatch()
        try FileManager.default.createSymbolicLink(atPath: zero.appendingPathComponent("apkpatch.yml").path, withDestinationPath: "/dev/zero")
        try expectRunRefused(patch: zero, mentioning: "apkpatch.yml")
        let fifo = try makePatch()
        #expect(mkfifo(fifo.appendingPathComponent("apkpatch.yml").path, 0o644) == 0)
        try expectRunRefused(patch: fifo, mentioning: "apkpatch.yml")
    }

    @Test func fifoAndSocketFilesInPatchAreRefused() throws {
        let patch = try makePatch()
        #expect(mkfifo(patch.appendingPathComponent("assets/pipe").path, 0o644) == 0)
        try expectRunRefused(patch: patch, mentioning: "FIFO")
    }

    @Test func unsafeFileNamesInPatchAreRefused() throws {
        for name in ["back\\slash.txt", "new\nline.txt"] {
            let patch = try makePatch()
            try TestSupport.write("x", to: "assets/\(name)", in: patch)
            try expectRunRefused(patch: patch, mentioning: "assets/")
        }
    }

    @Test func yamlAliasBombIsBounded() throws {
        // "Billion laughs": nine levels of ten aliases each would expand to 10^9 strings.
        var lines = ["delete:", "  - &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        for level in 1...8 { lines.append("  - &a\(level) [" + Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ") + "]") }
        let patch = try makePatch()
        try TestSupport.write(lines.joined(separator: "\n") + "\n", to: "apkpatch.yml", in: patch)
        try expectRunRefused(patch: patch, mentioning: "apkpatch.yml")
    }

    // MARK: hostile archives through sign, align and verify

    func item(_ name: String, _ text: String = "hello") -> ZipBuilder.Item {
        let data = Array(text.utf8)
        return ZipBuilder.Item(name: name, data: data, crc: CRC32.checksum(data))
    }

    /// Every command that reads an APK refuses `bytes` with exit 1 and writes nothing.
    func expectAllCommandsRefuse(_ bytes: [UInt8], _ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let work = dir.appendingPathComponent("archive-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let path = work.appendingPathComponent("hostile.apk").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let before = snapshot(work)
        let patch = try makePatch()
        let commands: [[String]] = [
            ["sign", "--out", work.appendingPathComponent("signed.apk").path] + Self.keyOptions + [path],
            ["align", "-f", "4", path, work.appendingPathComponent("aligned.apk").path],
            ["align", "-c", "-v", "4", path],
            ["verify", path],
            ["run", path, "--patch", patch.path, "--out", work.appendingPathComponent("run.apk").path] + Self.keyOptions,
            ["unpack", path, "-o", work.appendingPathComponent("unpacked").path],
        ]
        for command in commands {
            let result = try boundedApkpatch(command)
            #expect(result.status == 1, "\(label): apkpatch \(command[0]) should fail with exit 1: \(result)", sourceLocation: sourceLocation)
            #expect(!(result.stderr + result.stdout).isEmpty, "\(label): \(command[0]) gave no message", sourceLocation: sourceLocation)
            #expect(!result.stderr.contains("Fatal error"), "\(label): \(command[0]) trapped: \(result.stderr)", sourceLocation: sourceLocation)
        }
        #expect(snapshot(work) == before, "\(label): files left behind: \(snapshot(work).subtracting(before))", sourceLocation: sourceLocation)
        #expect(try TestSupport.readBytes(path) == bytes, "\(label): the input was modified", sourceLocation: sourceLocation)
    }

    @Test func hostileArchivesThroughEveryCommand() throws {
        // A name like "../../evil.txt" is no longer here: Android opens such an APK, so the commands that write an
        // APK copy it (AndroidArchiveRulesTests), and unpack, which would write outside its directory, refuses it
        // (HostileArchiveTests.zipSlipNames).
        var duplicate = ZipBuilder(); duplicate.items = [item("AndroidManifest.xml"), item("a.txt", "one"), item("a.txt", "two")]
        try expectAllCommandsRefuse(duplicate.build(), "duplicate entries")
        var mismatch = ZipBuilder(); mismatch.items = [item("AndroidManifest.xml"), item("b.txt")]
        try expectAllCommandsRefuse(mismatch.build(mutateLocal: { i, e in if i == 1 { e.nameBytes = Array("c.txt".utf8) } }), "local/central mismatch")
        let whole = mismatch.build()
        for cut in [0, 22, whole.count / 2, whole.count - 23, whole.count - 1] {
            try expectAllCommandsRefuse(Array(whole[0..<cut]), "truncated at \(cut)")
        }
        try expectAllCommandsRefuse(mismatch.build(mutateLocal: { _, e in e.flags |= 1 }, mutateCentral: { _, e in e.flags |= 1 }), "encrypted")
        // Compression method 12 (bzip2) in the central record (offset 10 of the last record) and its local header.
        var bzip2 = mismatch.build()
        let lastRecord = bzip2.count - 22 - (46 + "b.txt".utf8.count)
        bzip2[lastRecord + 10] = 12
        let lastLocal = Int(bzip2[lastRecord + 42]) | Int(bzip2[lastRecord + 43]) << 8
        bzip2[lastLocal + 8] = 12
        try expectAllCommandsRefuse(bzip2, "unsupported compression method")
    }

    @Test func inconsistentZip64IsRefused() throws {
        var builder = ZipBuilder(); builder.items = [item("AndroidManifest.xml"), item("a.txt")]
        let plain = builder.build()
        let eocd = plain.count - 22
        // 1. EOCD saying "see ZIP64" (0xFFFF entries, 0xFFFFFFFF offset) with no ZIP64 locator at all.
        var noLocator = plain
        for i in 8..<12 { noLocator[eocd + i] = 0xff }
        for i in 16..<20 { noLocator[eocd + i] = 0xff }
        try expectAllCommandsRefuse(noLocator, "ZIP64 markers without locator")
        // 2. A ZIP64 locator (PK\x06\x07) pointing past the end of the file, before a normal-looking EOCD.
        var locator: [UInt8] = [0x50, 0x4b, 0x06, 0x07, 0, 0, 0, 0]
        locator += withUnsafeBytes(of: UInt64(0x7fff_ffff_ffff).littleEndian, Array.init)
        locator += [1, 0, 0, 0]
        var withLocator = Array(plain[..<eocd]) + locator + Array(plain[eocd...])
        for i in 16..<20 { withLocator[withLocator.count - 22 + i] = 0xff }
        try expectAllCommandsRefuse(withLocator, "ZIP64 locator out of range")
        // 3. A central record claiming 0xFFFFFFFF sizes with a ZIP64 extra field that is too short.
        let zip64Extra: [UInt8] = [0x01, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff]
        try expectAllCommandsRefuse(builder.build(mutateCentral: { i, e in
            if i == 1 { e.compressedSize = 0xffff_ffff; e.uncompressedSize = 0xffff_ffff; e.centralExtra = zip64Extra }
        }), "short ZIP64 extra field")
    }

    @Test func zipBombsThroughSignAndVerify() throws {
        // Honest 1000:1 deflate of 64 MiB of zeros, declared at 4 GiB: refused by ratio and size before inflating.
        let zeros = [UInt8](repeating: 0, count: 64 << 20)
        let deflated = try Deflate.compress(zeros, level: 9)
        for declared: Int64 in [4_000_000_000, 64 << 20] {
            var entry = ZipEntry(nameBytes: Array("assets/bomb.bin".utf8), method: .deflated, crc32: CRC32.checksum(zeros),
                                 compressedSize: Int64(deflated.count), uncompressedSize: declared, lastModifiedTime: 0, lastModifiedDate: 0x3a21)
            entry.localHeaderOffset = 0
            var bytes = entry.encodedLocalHeader(extra: []) + deflated
            let cd = entry.encodedCentralDirectoryRecord(localHeaderOffset: 0)
            bytes += cd + EndOfCentralDirectory(entryCount: 1, centralDirectorySize: Int64(cd.count), centralDirectoryOffset: Int64(bytes.count)).encoded()
            // 256 MiB of address space on top of the runtime's is far less than the bomb would need.
            let work = dir.appendingPathComponent("bomb-\(declared)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let path = work.appendingPathComponent("bomb.apk").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            for command in [["verify", path], ["sign", "--out", work.appendingPathComponent("s.apk").path] + Self.keyOptions + [path]] {
                let result = try boundedApkpatch(command, seconds: 60)
                // 64 MiB honestly declared is a valid (if odd) entry: only a clean verdict matters there.
                if declared > (1 << 30) { #expect(result.status == 1, "\(command[0]) on a \(declared)-byte bomb: \(result)") }
                #expect(result.status == 0 || result.status == 1, "\(command[0]) died: \(result)")
            }
        }
    }

    /// Peak resident memory of one bounded `apkpatch` run, in KiB (GNU time's %M).
    func peakMemory(_ arguments: [String]) throws -> (result: TestSupport.ProcessResult, kilobytes: Int) {
        let report = dir.appendingPathComponent("time-\(UUID().uuidString).txt").path
        let result = try TestSupport.run("/usr/bin/time", ["-f", "%M", "-o", report, "timeout", "-s", "KILL", "120", TestSupport.apkpatchBinary] + arguments)
        let text = try String(contentsOfFile: report, encoding: .utf8)
        return (result, Int(text.split(separator: "\n").last.map(String.init) ?? "") ?? -1)
    }

    /// A 300 KB APK whose AndroidManifest.xml inflates to 300 MiB of zeros (an honest 1000:1 ratio, so the
    /// bomb-ratio check lets it through). verify, sign and run used to inflate it into memory whole (a 1 GB
    /// manifest cost 1 GB RSS and 25 s); APKArchive.uncompressedData now refuses entries over
    /// `UnpackLimits.maxInMemoryEntrySize` (128 MiB) before reading them.
    @Test func hugeManifestIsNotReadIntoMemory() throws {
        let size = 300 << 20
        let gzip = dir.appendingPathComponent("zeros.gz").path
        let made = try TestSupport.run("sh", ["-c", "head -c \(size) /dev/zero | gzip -9 -n > '\(gzip)'"])
        try #require(made.succeeded, "\(made)")
        let gz = try TestSupport.readBytes(gzip)
        // gzip = 10-byte header, raw DEFLATE, CRC-32 (LE), size (LE).
        let deflated = Array(gz[10..<(gz.count - 8)])
        let crc = gz[(gz.count - 8)..<(gz.count - 4)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var manifest = ZipEntry(nameBytes: Array("AndroidManifest.xml".utf8), method: .deflated, crc32: crc, compressedSize: Int64(deflated.count),
                                uncompressedSize: Int64(size), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        manifest.localHeaderOffset = 0
        var bytes = manifest.encodedLocalHeader(extra: []) + deflated
        let cd = manifest.encodedCentralDirectoryRecord(localHeaderOffset: 0)
        bytes += cd + EndOfCentralDirectory(entryCount: 1, centralDirectorySize: Int64(cd.count), centralDirectoryOffset: Int64(bytes.count)).encoded()
        let path = dir.appendingPathComponent("huge-manifest.apk").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let patch = try makePatch()
        let limitKB = 200 << 10
        for command in [["verify", path], ["sign", "--out", dir.appendingPathComponent("s.apk").path] + Self.keyOptions + [path]] {
            let (result, peak) = try peakMemory(command)
            #expect(result.status == 1, "\(command[0]): \(result)")
            #expect(peak > 0 && peak < limitKB, "\(command[0]) peaked at \(peak) KiB")
            #expect((result.stdout + result.stderr).contains("limit"), "\(command[0]): \(result)")
        }
        // `run` reads the manifest through Repack's OutputEntry.uncompressedBytes() and Sign's RepackedEntriesWriter.uncompressed(_:)
        // (sign(entries:)), bounded the same way.
        let (result, peak) = try peakMemory(["run", path, "--patch", patch.path, "--out", dir.appendingPathComponent("r.apk").path] + Self.keyOptions)
        #expect(result.status == 1, "run: \(result)")
        #expect(peak > 0 && peak < limitKB, "run peaked at \(peak) KiB")
        #expect(result.stderr.contains("limit"), "run: \(result)")
    }

    /// A symlink entry (`zip -y`, Unix mode S_IFLNK in the external attributes) followed by an entry "through" it:
    /// unpack must not create the link (it would let the second entry land outside the output directory).
    @Test func symlinkEntriesDoNotEscapeOnUnpack() throws {
        let outside = dir.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let staging = dir.appendingPathComponent("staging")
        try FileManager.default.createDirectory(at: staging.appendingPathComponent("assets"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: staging.appendingPathComponent("assets/link").path, withDestinationPath: outside.path)
        let archive = dir.appendingPathComponent("symlink.apk").path
        try FileManager.default.copyItem(atPath: input, toPath: archive)
        let zipped = try TestSupport.run("zip", ["-q", "-y", archive, "assets/link"], currentDirectory: staging.path)
        try #require(zipped.succeeded, "\(zipped)")
        // A second entry named as if inside the link: assets/link/evil.txt.
        try FileManager.default.removeItem(at: staging.appendingPathComponent("assets/link"))
        try TestSupport.write("evil", to: "assets/link/evil.txt", in: staging)
        try #require(try TestSupport.run("zip", ["-q", archive, "assets/link/evil.txt"], currentDirectory: staging.path).succeeded)
        let out = dir.appendingPathComponent("unpacked")
        let result = try boundedApkpatch(["unpack", archive, "-o", out.path])
        #expect(result.status == 0 || result.status == 1, "\(result)")
        #expect(snapshot(outside).isEmpty, "unpack wrote through a symlink entry: \(snapshot(outside))")
        var info = stat()
        if lstat(out.appendingPathComponent("assets/link").path, &info) == 0 {
            #expect(info.st_mode & S_IFMT != S_IFLNK, "unpack created a symbolic link")
        }
    }

    /// A large (sparse) file in the patch directory: memory stays bounded whatever its size. Patch files of
    /// 16 MiB and more are streamed (OutputEntry.making(name:contentsOf:…): a snapshot and the deflated bytes
    /// in unlinked temporary files, mapped and given back page by page); before, 1 GiB cost about 2 GiB RSS.
    @Test func largePatchFileIsStreamed() throws {
        let patch = try makePatch()
        let big = patch.appendingPathComponent("assets/big.bin").path
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, 256 << 20) == 0)
        let output = dir.appendingPathComponent("big.apk").path
        let (result, peak) = try peakMemory(["run", input, "--patch", patch.path, "--out", output] + Self.keyOptions)
        #expect(result.status == 0, "\(result)")
        #expect(peak > 0 && peak < 128 << 10, "run peaked at \(peak) KiB for a 256 MiB patch file")
        let listing = try TestSupport.run("unzip", ["-lv", output])
        #expect(listing.stdout.contains("268435456") && listing.stdout.contains("assets/big.bin"), "\(listing)")
        let verify = try TestSupport.run("apksigner", ["verify", output])
        #expect(verify.succeeded, "\(verify)")
    }
}
