import APKCore
import Align
import Foundation
import Overlay
import Repack
import Testing
import TestSupport
import Unpack
import ZlibWrapper

/// The ZIP half of the pipeline against real APKs (aapt-built fixtures and framework-res.apk), checked with
/// the real tools: `zipalign -c`, `unzip -t`, `unzip -p`.
@Suite(.removesTemporaryDirectories) struct ZipStagesTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("zipstages") }

    /// Raw data and CRC of every entry, by name.
    func rawEntries(_ path: String) throws -> [String: ([UInt8], UInt32, CompressionMethod)] {
        let archive = try APKArchive(path: path)
        var result: [String: ([UInt8], UInt32, CompressionMethod)] = [:]
        for entry in archive.entries { result[entry.name] = (try archive.rawData(of: entry).allBytes(), entry.crc32, entry.method) }
        return result
    }

    @Test func patchReplacesAddsDeletesAndKeepsTheRestByteIdentical() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let before = try TestSupport.readBytes(input)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<html>patched</html>\n", to: "assets/www/index.html", in: patch)
        try TestSupport.write("console.log('patched');\n", to: "assets/www/js/app.js", in: patch)
        try TestSupport.write("new file\n", to: "assets/www/new/notes.txt", in: patch)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 5000, seed: 9), to: "lib/arm64-v8a/libextra.so", in: patch)
        try TestSupport.write("delete:\n  - assets/www/css/**\n", to: "apkpatch.yml", in: patch)
        let output = dir.appendingPathComponent("out.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output])
        #expect(run.succeeded, "\(run)")
        #expect(try TestSupport.readBytes(input) == before, "the input must never change")

        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
        #expect(try TestSupport.run("unzip", ["-tq", output]).succeeded)
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<html>patched</html>\n")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/new/notes.txt"]).stdout == "new file\n")

        let old = try rawEntries(input), new = try rawEntries(output)
        #expect(new["assets/www/css/app.css"] == nil)
        #expect(new["assets/www/index.html"]?.2 == old["assets/www/index.html"]?.2, "a replaced entry keeps its method")
        #expect(new["lib/arm64-v8a/libextra.so"]?.2 == .stored, "new .so files are stored")
        #expect(new["assets/www/new/notes.txt"]?.2 == .deflated)
        for (name, value) in old where !["assets/www/index.html", "assets/www/js/app.js", "assets/www/css/app.css"].contains(name) {
            let written = try #require(new[name], "\(name) missing")
            #expect(written.0 == value.0 && written.1 == value.1, "\(name) must be copied raw")
        }
        // The stored .so lands on a 16 KiB page (the pipeline default).
        let archive = try APKArchive(path: output)
        let so = try #require(archive.entry(named: "lib/arm64-v8a/libextra.so"))
        #expect(so.dataOffset % 16384 == 0)
    }

    @Test func emptyPatchKeepsEveryEntryAndIsDeterministic() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let patch = dir.appendingPathComponent("empty"); try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let a = dir.appendingPathComponent("a.apk").path, b = dir.appendingPathComponent("b.apk").path
        // Unsigned: the ZIP half alone (signing adds META-INF files; the pipeline tests cover that).
        #expect(try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", a, "--no-sign"]).succeeded)
        #expect(try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", b, "--no-sign"]).succeeded)
        #expect(try TestSupport.readBytes(a) == TestSupport.readBytes(b), "same input and patch → same bytes")
        let old = try rawEntries(input), new = try rawEntries(a)
        #expect(Set(old.keys) == Set(new.keys))
        for (name, value) in old { #expect(new[name]!.0 == value.0 && new[name]!.1 == value.1, "\(name)") }
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", a]).succeeded)
    }

    @Test func frameworkResRoundTripAndAlign() throws {
        let output = dir.appendingPathComponent("fw.apk").path
        let result = try TestSupport.apkpatch(["align", "-p", "4", TestSupport.frameworkRes, output])
        #expect(result.succeeded, "\(result)")
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
        #expect(try TestSupport.run("unzip", ["-tq", output]).succeeded)
        let old = try rawEntries(TestSupport.frameworkRes), new = try rawEntries(output)
        #expect(old.count == 7600 || old.count > 7000)
        #expect(Set(old.keys) == Set(new.keys))
        for (name, value) in old where new[name]!.0 != value.0 { Issue.record("\(name) changed") }
        // Aligning an aligned archive changes nothing.
        let again = dir.appendingPathComponent("fw2.apk").path
        #expect(try TestSupport.apkpatch(["align", "-p", "4", output, again]).succeeded)
        #expect(try TestSupport.readBytes(again) == TestSupport.readBytes(output))
    }

    @Test func alignCheckMatchesZipalignWordForWord() throws {
        for arguments in [["-c", "-v", "4"], ["-c", "-v", "-p", "4"]] {
            let ours = try TestSupport.apkpatch(["align"] + arguments + [TestSupport.frameworkRes])
            let theirs = try TestSupport.run("zipalign", arguments + [TestSupport.frameworkRes])
            #expect(ours.stdout == theirs.stdout)
            #expect(ours.status == 1 && theirs.stdout.contains("FAILED"), "framework-res.apk is not aligned")
        }
        #expect(try TestSupport.apkpatch(["align", "4"]).status == 2, "usage errors exit 2 like zipalign")
        #expect(try TestSupport.apkpatch(["align", "-p", "-P", "16", "4", "a", "b"]).status == 2)
    }

    /// Stored directory entries (`zip -r` without -D): aligned like every stored entry, as Debian's zipalign
    /// (build-tools 30) does and checks, and apksig's signer does; the current zipalign's `-c` (ZipAlign.cpp
    /// `isDirectory`) passes them however they lie, and so does `align -c`.
    @Test func storedDirectoryEntriesAreAligned() throws {
        var builder = ZipBuilder()
        // The data lengths put each directory entry off 4 bytes both in the input and in an output where only the
        // files were padded (with "xyz" and "hello" the unpadded directories landed on 4 by chance there, so a writer
        // that skipped them passed).
        for (name, text) in [("a.txt", "xy"), ("assets/", ""), ("assets/b.txt", "hi"), ("res/drawable/", ""), ("res/drawable/c.bin", "1234567")] {
            builder.items.append(.init(name: name, data: Array(text.utf8), crc: ForeignCorpus.crc32(Array(text.utf8))))
        }
        let input = dir.appendingPathComponent("dirs.zip").path
        try TestSupport.write(builder.build(), to: "dirs.zip", in: dir)
        let directories = try APKArchive(path: input).zip.entries.filter { $0.name.hasSuffix("/") }
        #expect(directories.count == 2 && directories.allSatisfy { $0.dataOffset % 4 != 0 }, "the fixture's directory entries start off 4 bytes")
        let oracle = try TestSupport.run("zipalign", ["-c", "-v", "4", input])
        #expect(!oracle.succeeded && oracle.stdout.contains("assets/ (BAD"), "Debian's zipalign checks directory entries: \(oracle)")

        let check = try TestSupport.apkpatch(["align", "-c", "-v", "4", input])
        #expect(check.stdout.contains(" assets/ (OK - directory)") && check.stdout.contains(" res/drawable/ (OK - directory)"), "\(check)")
        #expect(check.status == 1 && check.stdout.contains(" a.txt (BAD - "), "the files are still checked: \(check)")

        let output = dir.appendingPathComponent("dirs-aligned.zip").path
        let aligned = try TestSupport.apkpatch(["align", "4", input, output])
        #expect(aligned.succeeded, "\(aligned)")
        #expect(try TestSupport.run("zipalign", ["-c", "-v", "4", output]).succeeded)
        #expect(try TestSupport.run("unzip", ["-tq", output]).succeeded)
        let written = try APKArchive(path: output).zip.entries
        #expect(written.count == 5 && written.allSatisfy { $0.dataOffset % 4 == 0 }, "\(written.map { ($0.name, $0.dataOffset) })")
        #expect(written.filter(\.isDirectory).allSatisfy { !$0.localExtra.isEmpty }, "the directories needed padding: \(written.map { ($0.name, $0.localExtra.count) })")
        // zipalign's own output, padded with zeros the same way, is the same file.
        let theirs = dir.appendingPathComponent("dirs-zipalign.zip").path
        #expect(try TestSupport.run("zipalign", ["4", input, theirs]).succeeded)
        #expect(try TestSupport.readBytes(output) == TestSupport.readBytes(theirs))
    }

    @Test func sixteenKiBPagesForSharedLibraries() throws {
        var fixture = FixtureAPK.cordovaLike()
        fixture.storedExtensions = ["so"]
        let input = try fixture.build(in: dir)
        let output = dir.appendingPathComponent("p16.apk").path
        #expect(try TestSupport.apkpatch(["align", "-P", "16", "4", input, output]).succeeded)
        let so = try #require(try APKArchive(path: output).entry(named: "lib/arm64-v8a/libnative.so"))
        #expect(so.method == .stored && so.dataOffset % 16384 == 0)
        #expect(try TestSupport.apkpatch(["align", "-c", "-P", "16", "4", output]).succeeded)
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
    }

    /// A v4 signature belongs to one file: `align` writing over a signed APK removes the `.idsig` that `sign` left
    /// beside it (`adb install --incremental` would stream it with an APK it does not describe), and an align that
    /// is refused leaves the APK and its `.idsig` as they were.
    @Test func alignRemovesTheV4SignatureOfTheAPKItReplaces() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed-then-aligned.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", output, input])
        #expect(signed.succeeded && FileManager.default.fileExists(atPath: output + ".idsig"), "\(signed)")
        let signedBytes = try TestSupport.readBytes(output), idsig = try TestSupport.readBytes(output + ".idsig")

        let missingInput = dir.appendingPathComponent("no-such.apk").path
        #expect(try TestSupport.apkpatch(["align", "-f", "4", missingInput, output]).status == 1)
        #expect(try TestSupport.readBytes(output) == signedBytes && TestSupport.readBytes(output + ".idsig") == idsig,
                "a refused align changes neither file")

        let aligned = try TestSupport.apkpatch(["align", "-f", "-P", "16", "4", input, output])
        #expect(aligned.succeeded, "\(aligned)")
        #expect(try TestSupport.readBytes(output) != signedBytes)
        #expect(!FileManager.default.fileExists(atPath: output + ".idsig"), "the signed APK's .idsig stayed beside the aligned one")
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
    }

    @Test func unpackMatchesUnzip() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let ours = dir.appendingPathComponent("ours").path, theirs = dir.appendingPathComponent("theirs").path
        #expect(try TestSupport.apkpatch(["unpack", input, "-o", ours]).succeeded)
        #expect(try TestSupport.run("unzip", ["-q", input, "-d", theirs]).succeeded)
        #expect(try TestSupport.run("diff", ["-r", ours, theirs]).succeeded)
        // A second unpack into the same, now non-empty, directory is refused.
        #expect(try TestSupport.apkpatch(["unpack", input, "-o", ours]).status != 0)
    }

    /// unpack extracts into a hidden staging directory beside the output; one that a killed unpack (kill -9) left
    /// is removed by the next unpack to the same output, a failed unpack leaves none, and the output folder gets
    /// the mode mkdir gives (not the staging directory's 0700).
    @Test func unpackRemovesAKilledUnpacksStagingDirectory() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let parent = dir.appendingPathComponent("unpack-leftovers")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        // What a killed unpack to parent/out leaves: a staging directory holding part of the files, no lock held.
        let killed = parent.appendingPathComponent(".out.tmp-Ab3dE9")
        try TestSupport.write("partial", to: "assets/www/index.html", in: killed)
        let other = parent.appendingPathComponent(".other.tmp-Ab3dE9")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)

        let out = parent.appendingPathComponent("out")
        let result = try TestSupport.apkpatch(["unpack", input, "-o", out.path])
        #expect(result.succeeded, "\(result)")
        let names = try FileManager.default.contentsOfDirectory(atPath: parent.path).sorted()
        #expect(names == [".other.tmp-Ab3dE9", "out"], "the killed unpack's staging directory is gone, another output's is kept: \(names)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: out.path)[.posixPermissions] as? Int)
        let reference = parent.appendingPathComponent("mkdir")
        try FileManager.default.createDirectory(at: reference, withIntermediateDirectories: false)
        let expected = try #require(try FileManager.default.attributesOfItem(atPath: reference.path)[.posixPermissions] as? Int)
        #expect(mode == expected, "unpacked folder mode \(String(mode, radix: 8)), mkdir gives \(String(expected, radix: 8))")

        // A failed unpack (a corrupt entry, found while extracting) leaves neither output nor staging directory.
        var bytes = try TestSupport.readBytes(input)
        let entry = try #require(try APKArchive(path: input).zip.entries.max { $0.compressedSize < $1.compressedSize })
        bytes[Int(entry.dataOffset + entry.compressedSize / 2)] ^= 0x55
        try TestSupport.write(bytes, to: "corrupt.apk", in: dir)
        let failed = try TestSupport.apkpatch(["unpack", dir.appendingPathComponent("corrupt.apk").path, "-o", parent.appendingPathComponent("bad").path])
        #expect(failed.status == 1 && failed.stderr.contains("corrupt"), "\(failed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).sorted() == [".other.tmp-Ab3dE9", "mkdir", "out"])
    }

    @Test func patchDirectorySymlinkIsRefused() throws {
        let input = try FixtureAPK().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("x", to: "assets/a.txt", in: patch)
        try FileManager.default.createSymbolicLink(atPath: patch.appendingPathComponent("assets/passwd").path, withDestinationPath: "/etc/passwd")
        let output = dir.appendingPathComponent("o.apk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output])
        #expect(result.status != 0 && result.stderr.contains("symbolic link"))
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func outputIsNeverTheInput() throws {
        let input = try FixtureAPK().build(in: dir)
        let before = try TestSupport.readBytes(input)
        let patch = dir.appendingPathComponent("p"); try TestSupport.write("x", to: "assets/x", in: patch)
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", input])
        #expect(result.status != 0 && result.stderr.contains("never modifies") && result.stderr.contains("(choose another --out)"), "\(result)")
        #expect(try TestSupport.readBytes(input) == before)
    }

    @Test func globs() {
        #expect(Glob("assets/www/**").matches("assets/www/js/a.js"))
        #expect(!Glob("assets/www/*").matches("assets/www/js/a.js"))
        #expect(Glob("**/*.mp3").matches("a/b/c.mp3") && Glob("**/*.mp3").matches("c.mp3"))
        #expect(Glob("*.ogg").matches("res/raw/x.ogg"))
        #expect(Glob("res/raw/[ab]?.bin").matches("res/raw/a1.bin") && !Glob("res/raw/[ab]?.bin").matches("res/raw/c1.bin"))
    }
}

/// Hostile archives: each is refused with a clear error, a non-zero exit and no output.
@Suite(.removesTemporaryDirectories) struct HostileArchiveTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("hostile") }

    func item(_ name: String, _ text: String = "hello") -> ZipBuilder.Item {
        let data = Array(text.utf8)
        return ZipBuilder.Item(name: name, data: data, crc: CRC32.checksum(data))
    }

    func expectRefused(_ bytes: [UInt8], _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = dir.appendingPathComponent("hostile-\(UUID().uuidString).apk").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let out = dir.appendingPathComponent("out-\(UUID().uuidString)").path
        let unpack = try TestSupport.apkpatch(["unpack", path, "-o", out])
        #expect(unpack.status != 0, "unpack accepted it", sourceLocation: sourceLocation)
        #expect(unpack.stderr.lowercased().contains(expected.lowercased()), "\(unpack.stderr)", sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: out), "no partial output", sourceLocation: sourceLocation)
        let patch = dir.appendingPathComponent("emptypatch"); try? FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let run = try TestSupport.apkpatch(["run", path, "--patch", patch.path, "--out", out + ".apk"])
        #expect(run.status != 0, sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: out + ".apk"), sourceLocation: sourceLocation)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") || $0.contains(".partial-") }
        #expect(leftovers.isEmpty, "temporary files left: \(leftovers)", sourceLocation: sourceLocation)
    }

    @Test func zipSlipNames() throws {
        for name in ["../evil.txt", "assets/../../evil.txt", "/etc/evil", "assets\\..\\evil", "a\u{0}b", "C:/evil", "assets//x"] {
            var builder = ZipBuilder(); builder.items = [item("AndroidManifest.xml"), item(name)]
            try expectRefused(builder.build(), "unsafe")
        }
    }

    @Test func duplicateEntries() throws {
        var builder = ZipBuilder(); builder.items = [item("a.txt", "one"), item("a.txt", "two")]
        try expectRefused(builder.build(), "duplicate entry")
    }

    @Test func localHeaderDisagreesWithCentralDirectory() throws {
        var builder = ZipBuilder(); builder.items = [item("a.txt", "hello"), item("b.txt", "world")]
        try expectRefused(builder.build(mutateLocal: { i, e in if i == 1 { e.crc32 ^= 1 } }), "disagree")
        try expectRefused(builder.build(mutateLocal: { i, e in if i == 1 { e.nameBytes = Array("c.txt".utf8) } }), "local header")
    }

    @Test func overlappingEntries() throws {
        var builder = ZipBuilder(); builder.items = [item("a.txt", "hello"), item("b.txt", "world")]
        // Point the second central record at the first local header: two names, one record.
        try expectRefused(builder.build(mutateCentral: { i, e in if i == 1 { e.localHeaderOffset = 0; e.nameBytes = Array("a.txt".utf8) } }), "duplicate")
        var shared = ZipBuilder(); shared.items = [item("a.txt", "hello"), item("b.txt", "hello")]
        let bytes = shared.build(mutateCentral: { i, e in if i == 1 { e.localHeaderOffset = 0 } })
        try expectRefused(bytes, "local header")
    }

    @Test func truncationAtEveryStructure() throws {
        var builder = ZipBuilder(); builder.items = [item("a.txt", String(repeating: "x", count: 100)), item("b.txt")]
        let whole = builder.build()
        for cut in [0, 10, 30, 60, whole.count - 100, whole.count - 30, whole.count - 10, whole.count - 1] {
            try expectRefused(Array(whole[0..<cut]), "truncated")
        }
    }

    @Test func encryptedAndUnsupportedMethods() throws {
        var builder = ZipBuilder(); builder.items = [item("a.txt")]
        try expectRefused(builder.build(mutateLocal: { _, e in e.flags |= 1 }, mutateCentral: { _, e in e.flags |= 1 }), "encrypted")
        var bytes = builder.build()
        // Method field of the central record (offset 10 within it) → 12 (bzip2).
        let cd = bytes.count - 22 - (46 + 5)
        bytes[cd + 10] = 12
        try expectRefused(bytes, "compression method 12")
    }

    @Test func zipBombByRatioAndByDeclaredSize() throws {
        // 8 MiB of zeros deflates to ~8 KB (ratio ~1000:1, honest); claim 2 GiB → refused by ratio before inflating.
        let zeros = [UInt8](repeating: 0, count: 8 << 20)
        let deflated = try Deflate.compress(zeros, level: 9)
        var entry = ZipEntry(nameBytes: Array("bomb.bin".utf8), method: .deflated, crc32: CRC32.checksum(zeros),
                             compressedSize: Int64(deflated.count), uncompressedSize: 2_000_000_000, lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        var bytes = entry.encodedLocalHeader(extra: []) + deflated
        let cd = entry.encodedCentralDirectoryRecord(localHeaderOffset: 0)
        bytes += cd + EndOfCentralDirectory(entryCount: 1, centralDirectorySize: Int64(cd.count), centralDirectoryOffset: Int64(bytes.count)).encoded()
        try expectRefused(bytes, "zip bomb")
        // Declared honestly small but inflating beyond it: stops at the declared size.
        entry.uncompressedSize = 1000
        var lying = entry.encodedLocalHeader(extra: []) + deflated
        let cd2 = entry.encodedCentralDirectoryRecord(localHeaderOffset: 0)
        lying += cd2 + EndOfCentralDirectory(entryCount: 1, centralDirectorySize: Int64(cd2.count), centralDirectoryOffset: Int64(lying.count)).encoded()
        let path = dir.appendingPathComponent("lying.apk").path
        try Data(lying).write(to: URL(fileURLWithPath: path))
        let result = try TestSupport.apkpatch(["unpack", path, "-o", dir.appendingPathComponent("lying-out").path])
        #expect(result.status != 0)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("lying-out").path))
    }

    @Test func notAZipAtAll() throws {
        try expectRefused(Array("this is not an archive, just some text that is long enough".utf8), "not a zip")
    }
}

/// Large patch files are streamed; the result must be the entry the in-memory path makes.
@Suite(.removesTemporaryDirectories) struct StreamedEntryTests {
    @Test("a streamed file gives the same entry as the in-memory path, deflated or stored; Deflater equals Deflate.compress")
    func streamedMatchesInMemory() throws {
        let dir = try TestSupport.makeTemporaryDirectory("streamed")
        var content = [UInt8](repeating: 0, count: (3 << 20) + 777)
        for i in content.indices { content[i] = UInt8(truncatingIfNeeded: (i &* 7919) >> 5 ^ (i >> 13)) }
        let path = dir.appendingPathComponent("asset.bin").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
        for method in [CompressionMethod.deflated, .stored] {
            let inMemory = try OutputEntry.making(name: "assets/asset.bin", content: content, method: method, timestamp: .apksigDefault)
            let streamed = try OutputEntry.making(name: "assets/asset.bin", contentsOf: path, method: method, timestamp: .apksigDefault)
            #expect(streamed.entry.encodedLocalHeader(extra: []) == inMemory.entry.encodedLocalHeader(extra: []), "\(method)")
            #expect(try streamed.data.allBytes() == (try inMemory.data.allBytes()), "\(method)")
            #expect(try streamed.uncompressed?.allBytes() == content, "\(method)")
        }
        // Fed in uneven pieces, the stream is byte-identical to one-shot compression.
        let deflater = try Deflater(level: 9)
        var pieces: [UInt8] = []
        var offset = 0
        for size in [1, 100, 65_536, 1 << 20, 3, 2 << 20] where offset < content.count {
            let end = min(content.count, offset + size)
            try content[offset..<end].withUnsafeBytes { piece in try deflater.update(piece) { pieces += $0 } }
            offset = end
        }
        try content[offset...].withUnsafeBytes { piece in try deflater.update(piece) { pieces += $0 } }
        try deflater.finish { pieces += $0 }
        #expect(pieces == (try Deflate.compress(content, level: 9)))
    }
}
