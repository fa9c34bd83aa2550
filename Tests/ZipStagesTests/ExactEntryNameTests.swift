import Align
import APKCore
import Foundation
import Overlay
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Entry names are bytes: Android (libziparchive) finds and tells entries apart by their names' bytes, apksig by
/// Java Strings (no normalization). "caf\u{E9}.txt" (composed) and "cafe\u{301}.txt" (decomposed), or U+212A
/// KELVIN SIGN and "K", are equal Swift Strings but two entries. A Linux folder holds such names side by side, so
/// a patch directory adds both; `run`, `sign` and `verify` must keep each with its own content, the oracles must
/// find each by its bytes, and a patch that replaces one must leave its twin alone.
@Suite(.removesTemporaryDirectories) struct ExactEntryNameTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("exact-names") }

    /// Two pairs of canonically equivalent names, and a third whose second name only the patch adds (U+212B
    /// ANGSTROM SIGN beside U+00C5).
    static let names = ["assets/caf\u{E9}.txt", "assets/cafe\u{301}.txt", "assets/Key.txt", "assets/\u{212A}ey.txt",
                        "assets/\u{C5}.txt", "assets/\u{212B}.txt"]
    static func content(_ index: Int, _ version: String = "") -> [UInt8] { Array("entry \(index)\(version): \(names[index].unicodeScalars.map { String($0.value, radix: 16) })\n".utf8) }

    /// Writes files named by their exact bytes (open(2): no layer between that could normalize them).
    func patchDirectory(_ label: String, files: [(name: String, content: [UInt8])]) throws -> String {
        let root = dir.appendingPathComponent(label).path
        try FileManager.default.createDirectory(atPath: root + "/assets", withIntermediateDirectories: true)
        for file in files {
            let fd = open(root + "/" + file.name, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
            try #require(fd >= 0)
            #expect(file.content.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == file.content.count)
            close(fd)
        }
        return root
    }

    /// The entries' data by name's bytes, read with our own reader.
    func contents(_ apk: String) throws -> [[UInt8]: [UInt8]] {
        let archive = try APKArchive(path: apk)
        var result: [[UInt8]: [UInt8]] = [:]
        for entry in archive.entries { result[entry.nameBytes] = try archive.uncompressedData(of: entry) }
        return result
    }

    /// Each of `names` with an expected content is an entry of its own, found by its bytes with that content, by
    /// us and by libziparchive, and the others are absent; `verify` and `apksigner verify -v` accept the APK.
    func expectEveryName(in apk: String, contents expected: [[UInt8]?], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let archive = try APKArchive(path: apk)
        let found = try contents(apk)
        #expect(found.keys.filter { $0.starts(with: Array("assets/".utf8)) }.count == expected.compactMap { $0 }.count, sourceLocation: sourceLocation)
        for (index, name) in Self.names.enumerated() {
            let entry = archive.entry(named: name)
            #expect(entry?.nameBytes == expected[index].map { _ in Array(name.utf8) }, "\(name.debugDescription)", sourceLocation: sourceLocation)
            #expect(try entry.map { try archive.uncompressedData(of: $0) } == expected[index], "\(name.debugDescription)", sourceLocation: sourceLocation)
            #expect(found[Array(name.utf8)] == expected[index], "\(name.debugDescription)", sourceLocation: sourceLocation)
        }
        let present = Self.names.indices.filter { expected[$0] != nil }
        let oracle = try TestSupport.libziparchiveFind(apk, names: present.map { Self.names[$0] })
        #expect(oracle.succeeded, "\(oracle)", sourceLocation: sourceLocation)
        let hex = present.map { expected[$0]!.map { String(format: "%02x", $0) }.joined() }
        #expect(oracle.stdout.split(separator: "\n").map(String.init) == hex, "libziparchive finds each name's own data", sourceLocation: sourceLocation)
        let check = try TestSupport.libziparchiveCheck(apk)
        #expect(check.succeeded, "\(check)", sourceLocation: sourceLocation)
        let verify = try TestSupport.apkpatch(["verify", apk])
        #expect(verify.succeeded, "\(verify)", sourceLocation: sourceLocation)
        let apksigner = try TestSupport.run("apksigner", ["verify", "-v", "--min-sdk-version", "21", apk])
        #expect(apksigner.succeeded && apksigner.stdout.contains("Verified using v1 scheme (JAR signing): true"), "\(apksigner)", sourceLocation: sourceLocation)
    }

    @Test func canonicallyEquivalentNamesStayTwoEntriesThroughRunSignVerifyAndAPatch() throws {
        #expect(Set(Self.names).count == 3, "Swift's String == joins the pairs: the premise of the test")
        var fixture = FixtureAPK()
        fixture.minSdk = 21
        let input = try fixture.build(in: dir)
        let original: [[UInt8]?] = (0..<5).map { Self.content($0) } + [nil]
        let patch = try patchDirectory("patch", files: (0..<5).map { (Self.names[$0], Self.content($0)) })
        let listing = try TestSupport.run("ls", [patch + "/assets"])
        #expect(listing.stdout.split(separator: "\n").count == 5, "the folder holds the five names: \(listing)")

        // `run` signs the entries it builds; `sign` signs an APK given as a file (the copy of its records).
        let signedByRun = dir.appendingPathComponent("run.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch, "--out", signedByRun])
        #expect(run.succeeded, "\(run)")
        try expectEveryName(in: signedByRun, contents: original)
        let unsigned = dir.appendingPathComponent("unsigned.apk").path
        let runUnsigned = try TestSupport.apkpatch(["run", input, "--patch", patch, "--out", unsigned, "--no-sign"])
        #expect(runUnsigned.succeeded, "\(runUnsigned)")
        let signed = dir.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--out", signed, unsigned])
        #expect(sign.succeeded, "\(sign)")
        try expectEveryName(in: signed, contents: original)

        // A patch that replaces the decomposed spelling and the ASCII K changes those two, and only those; one
        // whose name is equivalent to an entry's, but not the same bytes, adds an entry.
        var changed = original
        changed[1] = Self.content(1, " patched")
        changed[2] = Self.content(2, " patched")
        changed[5] = Self.content(5)
        let second = try patchDirectory("second", files: [1, 2, 5].map { (Self.names[$0], changed[$0]!) })
        let replaced = dir.appendingPathComponent("replaced.apk").path
        let patched = try TestSupport.apkpatch(["run", signed, "--patch", second, "--out", replaced])
        #expect(patched.succeeded, "\(patched)")
        // The new file's name is an entry's in another Unicode form: said, as a case-only difference is.
        #expect(patched.stdout.contains("note: patch file \(Self.names[5].debugDescription) adds a new entry: the APK's \(Self.names[4].debugDescription) is the same text in another Unicode form (U+212B against U+00C5)"), "\(patched)")
        #expect(!patched.stdout.contains("cafe\u{301}.txt\" adds"), "a file that replaces its own entry gets no note: \(patched)")
        try expectEveryName(in: replaced, contents: changed)
        let before = try APKArchive(path: signed), after = try APKArchive(path: replaced)
        #expect(after.entries.count == before.entries.count + 1)
        for index in [0, 3, 4] {
            let old = try #require(before.entry(named: Self.names[index])), new = try #require(after.entry(named: Self.names[index]))
            #expect(try after.rawData(of: new).allBytes() == before.rawData(of: old).allBytes() && new.crc32 == old.crc32,
                    "\(Self.names[index].debugDescription) is copied as it was")
        }
    }

    /// Native libraries are told by the name's bytes (libziparchive's prefix and suffix iteration, apksig's
    /// `endsWith(".so")`), where String's Characters join a combining mark to the slash before it and a prepended
    /// mark (U+0600) to the dot after it.
    @Test func nativeLibrariesByBytes() {
        #expect(!"lib/\u{301}x/a.so".hasPrefix("lib/") && !"a\u{600}.so".hasSuffix(".so"), "the premise: Characters differ from bytes")
        #expect(PackagingRequirements.isNativeLibrary("lib/\u{301}x/a.so"))
        #expect(PackagingRequirements.isNativeLibrary("lib/x/a\u{600}.so"))
        #expect(!PackagingRequirements.isNativeLibrary("lib/x/a.so\u{301}"))
        #expect(AlignmentPolicy.isNativeLibrary("assets/a\u{600}.so"))
        #expect(!AlignmentPolicy.isNativeLibrary("assets/a.so\u{301}"))
        #expect(CompressionPolicy.mustBeStored("lib/\u{301}x/a.so") && CompressionPolicy.mustBeStored("lib/x/a\u{600}.so"))
        #expect(!CompressionPolicy.mustBeStored("lib/x/a.so\u{301}"))
    }

    /// Watch mode's cache of compressed patch files keys them by name, size and modification time: two files whose
    /// names String's == joins, of one size and one mtime, must not be handed each other's entry.
    @Test func compressionCacheKeepsEquivalentNamesApart() throws {
        let input = try FixtureAPK().build(in: dir)
        let files = [(Self.names[0], Array("twin A\n".utf8)), (Self.names[1], Array("twin B\n".utf8))]
        let root = try patchDirectory("cached", files: files)
        for (name, _) in files {
            var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, root + "/" + name, &times, 0) == 0)
        }
        let overlay = Overlay(archive: try APKArchive(path: input), patch: try PatchDirectory(root: root))
        let cache = CompressionCache()
        _ = try overlay.plan(cache: cache)
        let plan = try overlay.plan(cache: cache)  // from the cache
        for (name, content) in files {
            let entries = plan.entries.filter { $0.entry.nameBytes == Array(name.utf8) }
            #expect(entries.count == 1, "\(name.debugDescription)")
            #expect(try entries.first?.uncompressedBytes() == content, "\(name.debugDescription)")
        }
    }

    /// A name may start with a combining mark; unpacking writes it where it belongs, not refusing it as a path
    /// that leaves the output directory (which a String prefix test of the path, by Characters, took it for).
    @Test func unpackWritesANameThatStartsWithACombiningMark() throws {
        let input = try FixtureAPK().build(in: dir)
        let name = "\u{301}top.txt"
        let patch = try patchDirectory("mark", files: [(name, Array("mark\n".utf8))])
        let apk = dir.appendingPathComponent("mark.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch, "--out", apk, "--no-sign"])
        #expect(run.succeeded, "\(run)")
        let unpacked = dir.appendingPathComponent("unpacked").path
        let unpack = try TestSupport.apkpatch(["unpack", apk, "-o", unpacked])
        #expect(unpack.succeeded, "\(unpack)")
        #expect(FileManager.default.contents(atPath: unpacked + "/" + name).map { Array($0) } == Array("mark\n".utf8))
    }

    /// A split's patch folder is found at the slash bytes: "splits/config.x/\u{301}a.txt" is the file "\u{301}a.txt"
    /// of the split config.x (Characters would join the mark to the slash and find no folder).
    @Test func splitPatchFoldersAreSplitAtSlashBytes() throws {
        let root = dir.appendingPathComponent("split-patch").path
        try FileManager.default.createDirectory(atPath: root + "/splits/config.x", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: root + "/splits/config.x/\u{301}a.txt", contents: Data("a\n".utf8)))
        let (base, splits) = try PatchDirectory(root: root).splitPatches()
        #expect(base.files.isEmpty)
        #expect(splits["config.x"]?.files.keys == ["\u{301}a.txt"])
    }
}
