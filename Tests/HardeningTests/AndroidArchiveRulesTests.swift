import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// One archive rule set in every command that writes an APK, Android's (issue 19): what libziparchive (AOSP
/// system/libziparchive/zip_archive.cc; Debian's build is the oracle here) refuses, `sign`, `run`, `align` and
/// `merge` refuse before writing anything; what it opens they take, and what they write is standard, so every
/// Android release reads it:
/// - the local header's compression method is not consulted (`FindEntry` takes the central directory's and
///   never compares the two); the output's local header is written to agree;
/// - names are not paths (`IsValidEntryName` refuses only NUL and invalid UTF-8): `/x`, `a\b`, `../x` are kept
///   by the writers and refused only by `unpack`, which would write them outside its directory;
/// - a method other than stored or deflated is refused (`ExtractToWriter` extracts no other, so the manifest,
///   code or resources would not load), but on a JAR signature file, which only the JAR verifier reads (as
///   deflate) and the signer drops;
/// - ZIP64 fields whose values fit (Python's `force_zip64`, `zip -fz`) are read and written as standard
///   records (libziparchive reads ZIP64 only from Android 11); an archive that really needs ZIP64 is refused.
@Suite(.removesTemporaryDirectories) struct AndroidArchiveRulesTests {
    let dir: URL
    let keystore: String
    let patch: URL
    static let password = "android-rules"
    var signing: [String] { ["--ks", keystore, "--ks-pass", "env:RULES_KS_PASS"] }
    var environment: [String: String] { ["RULES_KS_PASS": Self.password] }

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("android-rules")
        keystore = dir.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Android Rules")
        patch = dir.appendingPathComponent("patch")
        try TestSupport.write("patched\n", to: "assets/www/patched.txt", in: patch)
    }

    struct Written {
        var command: String
        var result: TestSupport.ProcessResult
        var output: String
        var isSigned: Bool { command != "align" }
    }

    /// `input` through every command that writes an APK.
    func writeWithEveryCommand(_ input: String, _ label: String) throws -> [Written] {
        let out = { (command: String) in dir.appendingPathComponent("\(label)-\(command).apk").path }
        return [
            Written(command: "sign", result: try TestSupport.apkpatch(["sign"] + signing + ["--out", out("sign"), input], environment: environment), output: out("sign")),
            Written(command: "run", result: try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", out("run")] + signing, environment: environment),
                    output: out("run")),
            Written(command: "align", result: try TestSupport.apkpatch(["align", "-f", "-p", "4", input, out("align")]), output: out("align")),
            Written(command: "merge", result: try TestSupport.apkpatch(["merge", input, "--no-verify", "--out", out("merge")] + signing, environment: environment),
                    output: out("merge")),
        ]
    }

    /// Standard records only (no ZIP64 field or end record, every local header agreeing with its central
    /// record), read by Android's reader, aligned, and (signed outputs) verified by apksigner.
    static func expectStandardAndInstallable(_ written: Written, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = written.output
        // The strict reading: ZIP64 fields and end records refused.
        let zip = try ZipArchive(source: try MappedFile(path: path))
        for entry in zip.entries {
            #expect(!entry.hasNonstandardRecords, "\(label) \(written.command): \(entry.name) has non-standard records", sourceLocation: sourceLocation)
            #expect(!Self.hasZip64Record(entry.localExtra) && !Self.hasZip64Record(entry.centralExtra),
                    "\(label) \(written.command): \(entry.name) keeps a ZIP64 extra record", sourceLocation: sourceLocation)
            let localMethod = try zip.source.bytes(in: (entry.localHeaderOffset + 8)..<(entry.localHeaderOffset + 10))
            #expect(localMethod == [UInt8(entry.method.rawValue), 0], "\(label) \(written.command): \(entry.name) local method \(localMethod)", sourceLocation: sourceLocation)
        }
        let android = try TestSupport.libziparchiveCheck(path)
        #expect(android.succeeded, "\(label) \(written.command): libziparchive: \(android)", sourceLocation: sourceLocation)
        let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", path])
        #expect(zipalign.succeeded, "\(label) \(written.command): \(zipalign)", sourceLocation: sourceLocation)
        if written.isSigned {
            let apksigner = try TestSupport.run("apksigner", ["verify", path])
            #expect(apksigner.succeeded, "\(label) \(written.command): \(apksigner)", sourceLocation: sourceLocation)
        }
    }

    static func hasZip64Record(_ extra: [UInt8]) -> Bool {
        var found = false
        ExtraField.forEachRecord(in: extra) { id, _, _ in
            found = found || id == 0x0001
            return true
        }
        return found
    }

    /// The refusal every writer must give: exit 1, `message` in its one error, no output, no temporary file.
    func expectRefusedByEveryWriter(_ input: String, _ label: String, saying message: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        var results = try writeWithEveryCommand(input, label)
        let unpacked = dir.appendingPathComponent("\(label)-unpacked").path
        results.append(Written(command: "unpack", result: try TestSupport.apkpatch(["unpack", input, "-o", unpacked]), output: unpacked))
        for written in results {
            #expect(written.result.status == 1 && written.result.stderr.contains(message), "\(label) \(written.command): \(written.result)", sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: written.output), "\(label) \(written.command) left its output", sourceLocation: sourceLocation)
        }
        let after = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(Set(after) == Set(before), "\(label): left \(Set(after).subtracting(before))", sourceLocation: sourceLocation)
    }

    /// Offsets of an archive's central records, by entry name (the strict reader gives only local offsets).
    static func centralRecordOffsets(_ bytes: [UInt8]) throws -> [String: Int] {
        let zip = try ZipArchive(source: ByteArrayDataSource(bytes))
        var offsets: [String: Int] = [:]
        var at = Int(zip.centralDirectoryOffset)
        for _ in zip.entries {
            let n = Int(bytes[at + 28]) | Int(bytes[at + 29]) << 8
            let rest = n + (Int(bytes[at + 30]) | Int(bytes[at + 31]) << 8) + (Int(bytes[at + 32]) | Int(bytes[at + 33]) << 8)
            offsets[String(decoding: bytes[(at + 46)..<(at + 46 + n)], as: UTF8.self)] = at
            at += 46 + rest
        }
        return offsets
    }

    // MARK: - Extra fields

    /// A local extra field of 65,531 bytes leaves no room in the header for alignment padding. libziparchive
    /// opens the APK (it reads a local extra field only for ZIP64 sizes); zipalign aligns it by dropping that
    /// field, and so must every writer here: align refused it ("extra field too large") while sign took it.
    @Test("a local extra field that leaves no room for padding: align and sign align the entry, its data unchanged")
    func localExtraFieldWithoutRoomForPadding() throws {
        let base = try TestSupport.readBytes(try FixtureAPK.cordovaLike().build(in: dir, name: "extra-base.apk"))
        let data = Array("a stored entry after a full local extra field".utf8)
        var entry = ZipEntry(nameBytes: Array("assets/full-extra.txt".utf8), method: .stored, crc32: CRC32.checksum(data),
                             compressedSize: Int64(data.count), uncompressedSize: Int64(data.count), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        entry.localExtra = [0x66, 0x66, 0xfb, 0xff] + [UInt8](repeating: 1, count: 0xfffb)
        var layout = try ZipRelayout(bytes: base)
        // One byte of name more or less moves the data by one: one of the two offsets cannot be 4-aligned as it is.
        var second = entry
        second.nameBytes = Array("assets/full-extra-2.txt".utf8)
        layout.trailing = [(entry, data), (second, data)]
        let input = dir.appendingPathComponent("full-extra.apk").path
        try Data(try layout.build()).write(to: URL(fileURLWithPath: input))
        #expect(try TestSupport.libziparchiveCheck(input).succeeded)
        for (command, arguments) in [("align", ["align", "-f", "-p", "4", input]), ("sign", ["sign"] + signing + ["--v4-signing-enabled", "false", input])] {
            let output = dir.appendingPathComponent("full-extra-\(command).apk").path
            let result = try TestSupport.apkpatch(command == "align" ? arguments + [output] : Array(arguments.dropLast()) + ["--out", output, input],
                                                 environment: environment)
            try #require(result.succeeded, "\(command): \(result)")
            let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
            #expect(zipalign.succeeded, "\(command): \(zipalign)")
            #expect(try TestSupport.libziparchiveCheck(output).succeeded, "\(command)")
            let written = try APKArchive(path: output)
            for name in ["assets/full-extra.txt", "assets/full-extra-2.txt"] {
                let copy = try #require(written.entry(named: name), "\(command): \(name)")
                #expect(try written.uncompressedData(of: copy) == data, "\(command): \(name)")
            }
        }
    }

    // MARK: - Compression methods

    @Test("a local header whose method is not the central directory's: read by the central one, written agreeing")
    func localMethodDisagreeing() throws {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        let archive = try APKArchive(path: base)
        let stored = try #require(archive.entries.first { $0.method == .stored && $0.name.hasPrefix("assets/") })
        let deflated = try #require(archive.entries.first { $0.method == .deflated && $0.name.hasPrefix("assets/") })
        var bytes = try TestSupport.readBytes(base)
        bytes[Int(stored.localHeaderOffset) + 8] = 8      // stored data, "deflated" in the local header
        bytes[Int(deflated.localHeaderOffset) + 8] = 0    // deflated data, "stored" in the local header
        let input = dir.appendingPathComponent("method-mismatch.apk").path
        try Data(bytes).write(to: URL(fileURLWithPath: input))
        let android = try TestSupport.libziparchiveCheck(input)
        try #require(android.succeeded, "libziparchive reads by the central directory: \(android)")
        for written in try writeWithEveryCommand(input, "mismatch") {
            try #require(written.result.succeeded, "\(written.command): \(written.result)")
            try Self.expectStandardAndInstallable(written, "mismatch")
            let out = try APKArchive(path: written.output)
            for entry in [stored, deflated] {
                #expect(try out.uncompressedData(of: try #require(out.entry(named: entry.name))) == archive.uncompressedData(of: entry), "\(written.command): \(entry.name)")
            }
        }
        let unpacked = dir.appendingPathComponent("mismatch-unpacked")
        let unpack = try TestSupport.apkpatch(["unpack", input, "-o", unpacked.path])
        #expect(unpack.succeeded, "\(unpack)")
        #expect(try TestSupport.readBytes(unpacked.appendingPathComponent(stored.name).path) == archive.uncompressedData(of: stored))
    }

    /// Method 3 ("reduce") on the manifest: apksig would sign it (any method but stored is deflate to it), but
    /// libziparchive cannot extract it, so the package manager cannot read the manifest.
    @Test("a method other than stored or deflated on an entry Android reads: refused by every command")
    func unknownMethodRefused() throws {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        var bytes = try TestSupport.readBytes(base)
        let manifest = try #require(try APKArchive(path: base).entry(named: "AndroidManifest.xml"))
        bytes[Int(manifest.localHeaderOffset) + 8] = 3
        bytes[try #require(try Self.centralRecordOffsets(bytes)["AndroidManifest.xml"]) + 10] = 3
        let input = dir.appendingPathComponent("method-3.apk").path
        try Data(bytes).write(to: URL(fileURLWithPath: input))
        let android = try TestSupport.libziparchiveCheck(input)
        #expect(!android.succeeded && android.stdout.contains("AndroidManifest.xml"), "\(android)")
        try expectRefusedByEveryWriter(input, "method-3", saying: "compression method 3, which Android cannot extract")
    }

    /// apksig's weird-compression-method.apk: a JAR signature file with method 21, read as deflate by the JAR
    /// verifier (Android's StrictJarFile, apksig), which alone reads it. Taken by every writer: sign and run drop
    /// it for their own signature, align copies it (as deflated, which is what it is).
    @Test("a JAR signature file with method 21: read as deflate, as Android's JAR verifier reads it")
    func unknownMethodOnSignatureFile() throws {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        let v1 = dir.appendingPathComponent("v1.apk").path
        let signed = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:RULES_KS_PASS", "--v2-signing-enabled", "false",
                                                       "--v3-signing-enabled", "false", "--out", v1, base], environment: environment)
        try #require(signed.succeeded, "\(signed)")
        var bytes = try TestSupport.readBytes(v1)
        let block = try #require(try APKArchive(path: v1).entries.first { $0.name.hasPrefix("META-INF/") && $0.name.hasSuffix(".RSA") })
        #expect(block.method == .deflated)
        bytes[Int(block.localHeaderOffset) + 8] = 21
        bytes[try #require(try Self.centralRecordOffsets(bytes)[block.name]) + 10] = 21
        let input = dir.appendingPathComponent("weird-method.apk").path
        try Data(bytes).write(to: URL(fileURLWithPath: input))
        // apksigner reads it as Android does (targetSdk 33 needs v2, so only up to API 29 here).
        #expect(try TestSupport.run("apksigner", ["verify", "--max-sdk-version", "29", input]).succeeded)
        for written in try writeWithEveryCommand(input, "weird") {
            try #require(written.result.succeeded, "\(written.command): \(written.result)")
            if written.command == "align" {
                // Written as deflated: the JAR signature still verifies.
                #expect(try TestSupport.run("apksigner", ["verify", "--max-sdk-version", "29", written.output]).succeeded)
            } else {
                try Self.expectStandardAndInstallable(written, "weird")
            }
        }
    }

    // MARK: - Names

    @Test("names Android opens (/x, a\\b, ../x): kept by every writer, refused by unpack")
    func namesAndroidOpens() throws {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        let names = ["/absolute.txt", "assets\\windows.txt", "../up.txt", "assets/../../inner.txt"]
        let input = dir.appendingPathComponent("names.apk").path
        let python = """
        import shutil, sys, zipfile
        shutil.copy(sys.argv[1], sys.argv[2])
        with zipfile.ZipFile(sys.argv[2], 'a') as z:
            for name in sys.argv[3:]:
                z.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), name.encode(), zipfile.ZIP_DEFLATED)
        """
        let made = try TestSupport.run("python3", ["-c", python, base, input] + names)
        try #require(made.succeeded, "\(made)")
        let original = try ZipArchive(source: try MappedFile(path: input))
        #expect(Set(names).isSubset(of: Set(original.entries.map(\.name))), "\(original.entries.map(\.name))")
        let android = try TestSupport.libziparchiveCheck(input)
        try #require(android.succeeded, "libziparchive opens these names: \(android)")
        for written in try writeWithEveryCommand(input, "names") {
            try #require(written.result.succeeded, "\(written.command): \(written.result)")
            try Self.expectStandardAndInstallable(written, "names")
            let out = try APKArchive(path: written.output, limits: .rewriting)
            for name in names {
                let entry = try #require(out.entry(named: name), "\(written.command) dropped \(name)")
                #expect(try out.uncompressedData(of: entry) == Array(name.utf8))
            }
        }
        let unpacked = dir.appendingPathComponent("names-unpacked")
        let unpack = try TestSupport.apkpatch(["unpack", input, "-o", unpacked.path])
        #expect(unpack.status == 1 && unpack.stderr.contains("unsafe"), "\(unpack)")
        #expect(!FileManager.default.fileExists(atPath: unpacked.path))
        #expect(!FileManager.default.fileExists(atPath: dir.deletingLastPathComponent().appendingPathComponent("up.txt").path))
    }

    /// A '.' component names a file by another spelling ("assets/./a.txt" is "assets/a.txt", a second entry that
    /// would overwrite the first) or no file at all ("assets/." is the folder): unpack refuses such names as it
    /// refuses '..' and '//', with the rule's words (it once failed renaming a file onto "assets/." with EBUSY).
    @Test("names with a '.' component are refused by unpack, before anything is written", arguments: ["assets/.", "assets/./a.txt", "./x.txt", "./"])
    func dotComponentsRefusedByUnpack(name: String) throws {
        let base = try FixtureAPK().build(in: dir, name: "base.apk")
        let input = dir.appendingPathComponent("dot-\(UUID().uuidString).apk").path
        let python = """
        import shutil, sys, zipfile
        shutil.copy(sys.argv[1], sys.argv[2])
        with zipfile.ZipFile(sys.argv[2], 'a') as z:
            z.writestr(zipfile.ZipInfo(sys.argv[3], (2024, 1, 1, 0, 0, 0)), b'x', zipfile.ZIP_STORED)
        """
        let made = try TestSupport.run("python3", ["-c", python, base, input, name])
        try #require(made.succeeded, "\(made)")
        let unpacked = dir.appendingPathComponent("dot-unpacked-\(UUID().uuidString)")
        let unpack = try TestSupport.apkpatch(["unpack", input, "-o", unpacked.path])
        #expect(unpack.status == 1 && unpack.stderr.contains("entry \(name.debugDescription) is unsafe to extract (the name contains a '.' component"), "\(unpack)")
        #expect(!FileManager.default.fileExists(atPath: unpacked.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".dot-unpacked") }.isEmpty)
    }

    /// Names Android reads that cannot all become files in one folder: a file another entry needs as a folder
    /// ("a.txt" and "a.txt/b.txt", or the folder entry "a.txt/"), a name with a part longer than a file name can
    /// be, and a name longer than a path can be. unpack refuses each in words before writing anything (it printed
    /// FoundationEssentials' CocoaError dumps, or named its own staging folder); the writers keep them.
    @Test("names that cannot all be files in one folder are refused by unpack in words, before anything is written",
          arguments: [(["assets/a.txt", "assets/a.txt/b.txt"], "it is a file, and the entry \"assets/a.txt/b.txt\" needs a folder of that name"),
                      (["assets/a.txt", "assets/a.txt/"], "the entry \"assets/a.txt/\" needs a folder of that name"),
                      (["assets/" + String(repeating: "n", count: 256)], "a part of its name is 256 bytes long, longer than a file name can be (255 bytes)"),
                      ([Array(repeating: "d", count: 2100).joined(separator: "/")], "its path would be longer than the system allows (4095 bytes)")])
    func namesThatCannotAllBeFilesRefusedByUnpack(names: [String], message: String) throws {
        let base = try FixtureAPK().build(in: dir, name: "base.apk")
        let input = dir.appendingPathComponent("paths-\(UUID().uuidString).apk").path
        let python = """
        import shutil, sys, zipfile
        shutil.copy(sys.argv[1], sys.argv[2])
        with zipfile.ZipFile(sys.argv[2], 'a') as z:
            for name in sys.argv[3:]:
                z.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), b'' if name.endswith('/') else b'x', zipfile.ZIP_STORED)
        """
        let made = try TestSupport.run("python3", ["-c", python, base, input] + names)
        try #require(made.succeeded, "\(made)")
        let android = try TestSupport.libziparchiveCheck(input)
        try #require(android.succeeded, "libziparchive opens these names: \(android)")
        let unpacked = dir.appendingPathComponent("paths-unpacked-\(UUID().uuidString)")
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        for command in [["unpack", input, "-o", unpacked.path], ["unpack", "--decode", input, "-o", unpacked.path]] {
            let unpack = try TestSupport.apkpatch(command)
            #expect(unpack.status == 1 && unpack.stderr.contains(message), "\(unpack)")
            #expect(!unpack.stderr.contains("Error(") && !unpack.stderr.contains(".tmp-"), "a dump or the staging folder: \(unpack.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == before, "nothing written")
        }
        let signed = dir.appendingPathComponent("paths-signed-\(UUID().uuidString).apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", signed, input], environment: environment)
        #expect(sign.succeeded, "sign keeps names Android reads: \(sign)")
    }

    /// decode writes the manifest and res/ XML under their entry names: a res/xml file whose name is longer than a
    /// file name can be made decode fail after it had written the manifest ("cannot name the finished output",
    /// a half-decoded folder left). It is refused before the first file is written.
    @Test func decodeRefusesAResourceNameNoFileCanHaveBeforeWriting() throws {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        let input = dir.appendingPathComponent("long-res.apk").path
        let python = """
        import sys, zipfile
        with zipfile.ZipFile(sys.argv[1]) as source:
            data = {name: source.read(name) for name in source.namelist()}
        with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as out:
            for name, content in data.items():
                out.writestr(name, content)
            out.writestr('res/xml/' + 'c' * 300 + '.xml', data['AndroidManifest.xml'])
        """
        let made = try TestSupport.run("python3", ["-c", python, base, input])
        try #require(made.succeeded, "\(made)")
        let decoded = dir.appendingPathComponent("long-res-decoded")
        let decode = try TestSupport.apkpatch(["decode", input, "-o", decoded.path])
        #expect(decode.status == 1 && decode.stderr.contains("a part of its name is 304 bytes long, longer than a file name can be (255 bytes)"), "\(decode)")
        #expect(!FileManager.default.fileExists(atPath: decoded.path), "nothing written")
    }

    /// A central record whose extra field declares more bytes than the record holds (id 0xFFFF, 16 bytes, none
    /// there): libziparchive reads the archive and every command that writes an APK takes it, so unpack extracts
    /// it with APKArchive's reader too (libzip calls it "Zip archive inconsistent").
    @Test func anExtraFieldRunningPastItsRecordIsExtractedByUnpack() throws {
        var builder = ZipBuilder()
        builder.items = [("AndroidManifest.xml", "manifest"), ("assets/a.txt", "hello")].map { ZipBuilder.Item(name: $0.0, data: Array($0.1.utf8), crc: CRC32.checksum(Array($0.1.utf8))) }
        let input = dir.appendingPathComponent("extra-overrun.apk").path
        try Data(builder.build(mutateCentral: { i, e in if i == 1 { e.centralExtra = [0xff, 0xff, 0x10, 0x00] } })).write(to: URL(fileURLWithPath: input))
        let android = try TestSupport.libziparchiveCheck(input)
        try #require(android.succeeded, "libziparchive reads it: \(android)")
        let unpacked = dir.appendingPathComponent("extra-overrun-unpacked")
        let unpack = try TestSupport.apkpatch(["unpack", input, "-o", unpacked.path])
        #expect(unpack.succeeded, "\(unpack)")
        #expect(FileManager.default.contents(atPath: unpacked.appendingPathComponent("assets/a.txt").path) == Data("hello".utf8))
    }

    // MARK: - ZIP64

    /// An APK re-written by Python's zipfile with `force_zip64` (ZIP64 sizes in every local header, a standard
    /// central directory), or by Info-ZIP's `zip -fz` (ZIP64 local and central fields and end records).
    func zip64Input(_ tool: String) throws -> String {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        let input = dir.appendingPathComponent("zip64-\(tool).apk").path
        switch tool {
        case "python":
            let python = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1]) as source, zipfile.ZipFile(sys.argv[2], 'w') as out:
                for info in source.infolist():
                    copy = zipfile.ZipInfo(info.filename, info.date_time)
                    copy.compress_type = info.compress_type
                    with out.open(copy, 'w', force_zip64=True) as sink:
                        sink.write(source.read(info))
            """
            let made = try TestSupport.run("python3", ["-c", python, base, input])
            try #require(made.succeeded, "\(made)")
        default:
            let unpacked = dir.appendingPathComponent("zip64-tree")
            let unzip = try TestSupport.run("unzip", ["-q", "-o", base, "-d", unpacked.path])
            try #require(unzip.succeeded, "\(unzip)")
            // resources.arsc, .so and .png stored, as aapt had them; the rest deflated; no directory entries, as aapt.
            let made = try TestSupport.run("zip", ["-q", "-X", "-D", "-r", "-fz", "-n", ".arsc:.so:.png", input, "."], currentDirectory: unpacked.path)
            try #require(made.succeeded, "\(made)")
        }
        return input
    }

    @Test("ZIP64 that is not needed (zipfile force_zip64, zip -fz): every writer writes standard records", arguments: ["python", "zip"])
    func zip64NotNeeded(_ tool: String) throws {
        let input = try zip64Input(tool)
        // It is ZIP64 (the strict reader refuses it) that Debian's libziparchive, from before Android 11, cannot read.
        #expect(throws: (any Error).self) { try ZipArchive(source: try MappedFile(path: input)) }
        #expect(!(try TestSupport.libziparchiveCheck(input).succeeded))
        for written in try writeWithEveryCommand(input, "zip64-\(tool)") {
            try #require(written.result.succeeded, "\(written.command): \(written.result)")
            try Self.expectStandardAndInstallable(written, "zip64-\(tool)")
        }
        let badging = try TestSupport.run("aapt", ["dump", "badging", dir.appendingPathComponent("zip64-\(tool)-sign.apk").path])
        #expect(badging.succeeded && badging.stdout.contains("package: name='com.example.cordova'"), "\(badging)")
        let unpacked = dir.appendingPathComponent("zip64-\(tool)-unpacked")
        #expect(try TestSupport.apkpatch(["unpack", input, "-o", unpacked.path]).succeeded)
    }

    /// More entries than a standard end record counts: ZIP64 is needed, and Android 10 and older cannot read it.
    @Test("an archive that needs ZIP64 (65,536 entries) is refused, with the reason")
    func zip64Needed() throws {
        let base = try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")
        let input = dir.appendingPathComponent("many.apk").path
        let python = """
        import shutil, sys, zipfile
        shutil.copy(sys.argv[1], sys.argv[2])
        with zipfile.ZipFile(sys.argv[2], 'a') as z:
            count = 65536 - len(z.infolist())
            for i in range(count):
                z.writestr(zipfile.ZipInfo('assets/many/%05d' % i, (2024, 1, 1, 0, 0, 0)), b'')
        """
        let made = try TestSupport.run("python3", ["-c", python, base, input])
        try #require(made.succeeded, "\(made)")
        try expectRefusedByEveryWriter(input, "many", saying: "ZIP64 archives are not supported: older Android releases cannot read one")
    }
}

/// verify's side of issue 19's archive rules: a leftover record at offset 0 is classified as libziparchive does,
/// and bytes after an entry's deflate stream are reported without failing the APK.
@Suite(.removesTemporaryDirectories) struct VerifyArchiveRulesTests {
    let dir: URL
    let keystore: String
    static let password = "verify-rules"
    var environment: [String: String] { ["RULES_KS_PASS": Self.password] }

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("verify-rules")
        keystore = dir.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Verify Rules")
    }

    func apksigner(_ input: String, _ output: String, _ options: [String] = []) throws {
        let signed = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:RULES_KS_PASS", "--out", output] + options + [input],
                                         environment: environment)
        try #require(signed.succeeded, "\(signed)")
    }

    static func codes(_ json: String, _ key: String) throws -> [String] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        return (object[key] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
    }

    /// A local record at offset 0 that the central directory does not name (a stamp an earlier apksigner signing
    /// left) is not bytes before the first entry: libziparchive reads a local header signature there and opens
    /// the APK. A prefix that is not one still is, and below API 24 a JAR-only APK's prefix is Janus.
    @Test func leftoverRecordAtOffsetZero() throws {
        // targetSdkVersion 29: a JAR signature alone installs, and resources.arsc need not be aligned.
        var fixture = FixtureAPK.cordovaLike()
        fixture.targetSdk = 29
        let base = try fixture.build(in: dir, name: "base.apk")
        let v1 = dir.appendingPathComponent("v1.apk").path
        try apksigner(base, v1, ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false"])
        let digest = [UInt8](repeating: 0x5a, count: 32)
        let stamp = ZipEntry(nameBytes: Array("stamp-cert-sha256".utf8), method: .stored, crc32: CRC32.checksum(digest),
                             compressedSize: 32, uncompressedSize: 32, lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        for (label, leading, android) in [("record", stamp.encodedLocalHeader(extra: []) + digest, true),
                                         ("prefix", Array("dex\n035\0".utf8) + [UInt8](repeating: 1, count: 71), false)] {
            var layout = try ZipRelayout(bytes: try TestSupport.readBytes(v1))
            layout.inserted[0] = leading
            let input = dir.appendingPathComponent("leading-\(label).apk").path
            try Data(try layout.build()).write(to: URL(fileURLWithPath: input))
            #expect(try TestSupport.libziparchiveCheck(input).succeeded == android, "\(label)")
            let verify = try TestSupport.apkpatch(["verify", "--json", input])
            let install = try Self.codes(verify.stdout, "installErrors")
            #expect(install.contains("INSTALL_BYTES_BEFORE_FIRST_ENTRY") == !android, "\(label): \(verify)")
            // The JAR signature covers entries only: unsigned bytes either way, a warning for a record (Android reads
            // by the central directory), an error for a prefix (Android 5.0-8.0 would run a DEX there).
            let errors = try Self.codes(verify.stdout, "errors"), warnings = try Self.codes(verify.stdout, "warnings")
            #expect(errors.contains("JAR_SIG_UNPROTECTED_BYTES") == !android && warnings.contains("JAR_SIG_UNPROTECTED_BYTES") == android, "\(label): \(verify)")
            #expect(verify.succeeded == android, "\(label): \(verify)")
        }
    }

    /// Bytes after the end of an entry's deflate stream, inside its compressed size: apksigner signs and verifies
    /// such an APK and Android installs it, so verify passes it; it warns (text and --json), since `sign` and
    /// `run` refuse to copy the entry.
    @Test func bytesAfterDeflateStreamWarned() throws {
        let text = Array((0..<300).map { "function handler\($0)(event) { return \($0); }\n" }.joined().utf8)
        let deflated = try text.withUnsafeBytes { try Deflate.compress($0) } + Array("HIDDEN!".utf8)
        let entry = ZipEntry(nameBytes: Array("assets/trailing.js".utf8), method: .deflated, crc32: CRC32.checksum(text),
                             compressedSize: Int64(deflated.count), uncompressedSize: Int64(text.count), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        var layout = try ZipRelayout(bytes: try TestSupport.readBytes(try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk")))
        layout.trailing = [(entry, deflated)]
        let unsigned = dir.appendingPathComponent("trailing-unsigned.apk").path
        try Data(try layout.build()).write(to: URL(fileURLWithPath: unsigned))
        let aligned = dir.appendingPathComponent("trailing-aligned.apk").path
        #expect(try TestSupport.run("zipalign", ["-f", "-p", "4", unsigned, aligned]).succeeded)
        let signed = dir.appendingPathComponent("trailing.apk").path
        try apksigner(aligned, signed)
        #expect(try TestSupport.run("apksigner", ["verify", signed]).succeeded)

        let report = try TestSupport.apkpatch(["verify", signed])
        #expect(report.succeeded, "\(report)")
        #expect(report.stdout.contains("WARNING: assets/trailing.js: 7 of the entry's") && report.stdout.contains("follow the end of its deflate stream"), "\(report)")
        let json = try TestSupport.apkpatch(["verify", "--json", signed])
        #expect(json.succeeded, "\(json)")
        #expect(try Self.codes(json.stdout, "warnings").contains("ENTRY_BYTES_AFTER_DEFLATE_STREAM"), "\(json.stdout)")
        // The writers refuse to copy it (CorruptEntryTests has every case).
        let out = dir.appendingPathComponent("trailing-resigned.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "env:RULES_KS_PASS", "--out", out, signed], environment: environment)
        #expect(sign.status == 1 && sign.stderr.contains("assets/trailing.js"), "\(sign)")
    }
}

/// Key material given as a FIFO or a device (issue 19): refused at once, saying what the path is, never read
/// (a FIFO would wait for a writer) and never with advice about permissions.
@Suite(.removesTemporaryDirectories) struct KeyFileKindTests {
    @Test func fifoAsKeyMaterial() throws {
        let dir = try TestSupport.makeTemporaryDirectory("key-kind")
        let fifo = dir.appendingPathComponent("secret-fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let apk = try FixtureAPK().build(in: dir, name: "in.apk")
        let keystore = dir.appendingPathComponent("ks.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: "kind-pass", dname: "CN=Kind")
        let key = dir.appendingPathComponent("key.pem").path, certificate = dir.appendingPathComponent("cert.pem").path
        let made = try TestSupport.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                                   "-days", "365", "-subj", "/CN=Kind"])
        try #require(made.succeeded, "\(made)")
        let out = dir.appendingPathComponent("out.apk").path
        let cases: [(String, [String], String)] = [
            ("--ks", ["--ks", fifo, "--ks-pass", "pass:kind-pass"], "a FIFO (named pipe), not a regular file"),
            ("--ks /dev/zero", ["--ks", "/dev/zero", "--ks-pass", "pass:kind-pass"], "a character device, not a regular file"),
            ("--key", ["--key", fifo, "--cert", certificate], "a FIFO (named pipe), not a regular file"),
            ("--cert", ["--key", key, "--cert", fifo], "a FIFO (named pipe), not a regular file"),
            ("--ks-pass file:", ["--ks", keystore, "--ks-pass", "file:\(fifo)"], "a FIFO (named pipe), not a regular file"),
            ("--lineage", ["--ks", keystore, "--ks-pass", "pass:kind-pass", "--lineage", fifo], "a FIFO (named pipe), not a regular file"),
        ]
        // A reader of the FIFO or of /dev/zero would never finish: `timeout` ends it (exit 124, not 1), with room
        // for a loaded machine.
        for (label, options, message) in cases {
            let result = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary, "sign", "--out", out] + options + [apk])
            #expect(result.status == 1, "\(label): \(result)")
            #expect(result.stderr.contains(message) && !result.stderr.contains("permissions"), "\(label): \(result)")
            if label.hasPrefix("--ks-pass") { #expect(!result.stderr.contains(fifo), "\(label) shows the password file's path: \(result)") }
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }
}
