import APKCore
import Foundation
import Overlay
import Testing
import TestSupport
import Unpack

/// Entry names that differ only in case (`res/a.xml` and `res/A.xml`, `classes.dex` and `CLASSES.DEX`) are two
/// entries for Android and one file on a case-insensitive file system (macOS, Windows, exFAT; ext4 casefold
/// folders). apktool extracts them there and silently loses one (iBotPeaches/Apktool#1460, #2697, #3434), and
/// a build from the folder then differs from the APK. unpack and decode refuse before writing; run notes patch
/// files that cannot say which entry they mean. The volume is probed, not assumed: these tests stand in a
/// case-insensitive one through the `foldsCase` hook, run the real probe on this (case-sensitive) one, and on a
/// casefold tmpfs where the kernel lets a test make one.
@Suite(.removesTemporaryDirectories) struct CaseInsensitiveNamesTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("casefold") }

    @Test func collisionsAreFoundByCaseFoldedComponents() {
        #expect(CaseInsensitiveNames.firstCollision(in: ["res/a.xml", "res/b.xml", "res/ab.xml", "assets/a.xml"]) == nil)
        let file = CaseInsensitiveNames.firstCollision(in: ["AndroidManifest.xml", "res/a.xml", "res/b.xml", "res/A.xml"])
        #expect(file?.first == "res/a.xml" && file?.second == "res/A.xml" && file?.firstComponent == "a.xml" && file?.secondComponent == "A.xml")
        #expect(CaseInsensitiveNames.firstCollision(in: ["classes.dex", "CLASSES.DEX"])?.second == "CLASSES.DEX")
        // Two spellings of one folder: both files survive, in one folder, under one spelling.
        let folder = CaseInsensitiveNames.firstCollision(in: ["assets/x.js", "Assets/y.js"])
        #expect(folder?.firstComponent == "assets" && folder?.secondComponent == "Assets")
        // A folder entry and a file in the same folder are one folder, not a collision.
        #expect(CaseInsensitiveNames.firstCollision(in: ["res/", "res/a.xml", "res/raw/", "res/raw/a.bin"]) == nil)
        // APFS also ignores Unicode normalization: é precomposed and e + combining acute are one name there.
        #expect(CaseInsensitiveNames.firstCollision(in: ["res/\u{e9}.xml", "res/e\u{301}.xml"]) != nil)
        #expect(CaseInsensitiveNames.firstCollision(in: ["res/\u{c9}.xml", "res/\u{e9}.xml"]) != nil)
    }

    @Test func patchNamesAreMatchedToEntriesByASCIICase() {
        /// name, entry, the two prefixes, and whether the name is an entry, per variant.
        func variants(_ names: [String], _ entries: [String]) -> [[String]] {
            CaseInsensitiveNames.asciiCaseVariants(of: names, among: entries.map { Array($0.utf8) })
                .map { [$0.name, $0.entry, $0.namePrefix, $0.entryPrefix, "\($0.nameIsEntry)"] }
        }
        // A new name that an entry spells otherwise: the whole name, or its shallowest folder no entry has.
        #expect(variants(["assets/readme.txt"], ["res/a.xml", "assets/README.txt"])
                == [["assets/readme.txt", "assets/README.txt", "assets/readme.txt", "assets/README.txt", "false"]])
        #expect(variants(["Assets/new.txt"], ["assets/a.txt"])
                == [["Assets/new.txt", "assets/a.txt", "Assets", "assets", "false"]])
        // The folder exists as spelt: another spelling of it elsewhere is not this file's business.
        #expect(variants(["assets/a.txt"], ["assets/a.txt", "Assets/b.txt"]).isEmpty)
        #expect(variants(["res/new/x.xml", "AndroidManifest.xml"], ["res/a.xml", "AndroidManifest.xml", "classes.dex"]).isEmpty)
        // A name that is an entry, with another entry of the same name up to case.
        #expect(variants(["res/a.xml"], ["res/a.xml", "res/A.xml"])
                == [["res/a.xml", "res/A.xml", "res/a.xml", "res/A.xml", "true"]])
        // Only ASCII letters fold; other bytes must match.
        #expect(variants(["res/a-b.xml"], ["res/a_b.xml", "res/A-B.XML"]).map { $0[1] } == ["res/A-B.XML"])
    }

    #if os(Linux)
    /// The probe on this machine's (case-sensitive) temporary directory: a folder with files is read, an empty one
    /// gets a probe file that is removed again.
    @Test func probeSaysThisFileSystemKeepsCase() throws {
        let full = dir.appendingPathComponent("full"), empty = dir.appendingPathComponent("empty")
        try TestSupport.write("x", to: "Some.txt", in: full)
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        #expect(CaseInsensitiveNames.isCaseInsensitive(directory: full.path) == false)
        #expect(CaseInsensitiveNames.isCaseInsensitive(directory: empty.path) == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty.path).isEmpty)
        // Only names whose other spelling is listed too: nothing to ask about, so a probe file is made.
        let pair = dir.appendingPathComponent("pair")
        try TestSupport.write("1", to: "Some.txt", in: pair)
        try TestSupport.write("2", to: "sOME.TXT", in: pair)
        #expect(CaseInsensitiveNames.isCaseInsensitive(directory: pair.path) == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pair.path).sorted() == ["Some.txt", "sOME.TXT"])
        #expect(CaseInsensitiveNames.isCaseInsensitive(directory: dir.appendingPathComponent("absent").path) == nil)
    }
    #endif

    /// An aapt-built APK with assets/Readme.txt and assets/README.txt (two entries, two contents), added after
    /// packaging: aapt's own packaging refuses case-insensitive equivalents.
    func apkWithCaseVariants() throws -> String {
        var apk = FixtureAPK()
        apk.rawFiles["assets/Readme.txt"] = Array("first\n".utf8)
        apk.rawFiles["assets/README.txt"] = Array("second\n".utf8)
        return try apk.build(in: dir, name: "variants.apk")
    }

    @Test func unpackRefusesNamesThatDifferOnlyInCaseWhereCaseIsFolded() throws {
        let input = try apkWithCaseVariants()
        let parent = dir.appendingPathComponent("insensitive")
        var extractor = Extractor(archive: try APKArchive(path: input))
        extractor.foldsCase = { _ in true }
        let out = parent.appendingPathComponent("out").path
        #expect {
            try extractor.extract(to: out)
        } throws: { error in
            guard case UnpackError.namesDifferOnlyInCase(_, let first, let second, _, let directory) = error else { return false }
            let text = "\(error)"
            return Set([first, second]) == ["assets/Readme.txt", "assets/README.txt"] && directory == out
                && text.contains("case-insensitive file system") && text.contains("Nothing was written") && text.contains("apkpatch run")
        }
        // Nothing written: neither the output nor the staging directory is left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)

        // Where case is kept (this machine's file system, probed for real), both files are extracted.
        let kept = dir.appendingPathComponent("sensitive").path
        let result = try TestSupport.apkpatch(["unpack", input, "-o", kept])
        #expect(result.succeeded, "\(result)")
        #expect(try String(contentsOfFile: kept + "/assets/Readme.txt", encoding: .utf8) == "first\n")
        #expect(try String(contentsOfFile: kept + "/assets/README.txt", encoding: .utf8) == "second\n")
    }

    /// The real probe on a real case-folding volume, where one can be made without root privileges or FUSE: a
    /// casefold tmpfs (Linux 6.13 and later, built with CONFIG_UNICODE) mounted in a user and mount namespace of
    /// its own (`unshare --user --map-root-user --mount`), in which `apkpatch unpack` runs and must refuse. Skipped,
    /// with the reason, where the kernel or its settings do not allow it (a FAT or exFAT image needs root to mount,
    /// or FUSE); the `foldsCase` tests above cover the refusal everywhere.
    @Test func unpackProbesARealCaseFoldingVolume() throws {
        let input = try apkWithCaseVariants()
        let mountPoint = dir.appendingPathComponent("casefold")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let script = """
            mount -t tmpfs -o casefold tmpfs "$1" || exit 90
            touch "$1/probe" && [ -e "$1/PROBE" ] || exit 91
            exec "$2" unpack "$3" -o "$1/out"
            """
        let result = try TestSupport.run("unshare", ["--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
                                                     mountPoint.path, TestSupport.apkpatchBinary, input])
        switch result.status {
        case 90, 91:
            try Test.cancel(Comment(rawValue: "no case-folding volume can be made here without root or FUSE: a casefold tmpfs needs Linux 6.13+ built with CONFIG_UNICODE (mount said: \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))"))
        case _ where result.stderr.hasPrefix("unshare:"):
            // unshare itself failed: user namespaces are off (kernel.unprivileged_userns_clone, AppArmor) or absent.
            try Test.cancel(Comment(rawValue: "no user and mount namespace can be made here (\(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))"))
        default:
            #expect(result.status == 1 && result.stderr.contains("case-insensitive file system") && result.stderr.contains("assets/README.txt"), "\(result)")
        }
    }

    @Test func decodeRefusesNamesThatDifferOnlyInCaseWhereCaseIsFolded() throws {
        // aapt compiles res/xml/a.xml; the same binary XML is then added as res/xml/A.xml, as an obfuscator names files.
        var apk = FixtureAPK()
        apk.resources["xml/a.xml"] = Array("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<config name=\"lower\"/>\n".utf8)
        let first = try apk.build(in: dir, name: "one.apk")
        let compiled = try APKArchive(path: first)
        apk.rawFiles["res/xml/A.xml"] = try compiled.uncompressedData(of: try #require(compiled.entry(named: "res/xml/a.xml")))
        let input = try apk.build(in: dir, name: "two.apk")
        let archive = try APKArchive(path: input)

        let out = dir.appendingPathComponent("decoded-insensitive").path
        #expect {
            try ResourceDecoder.decodeAll(archive: archive, into: out, foldsCase: { _ in true })
        } throws: { error in
            guard case UnpackError.namesDifferOnlyInCase(_, let a, let b, _, _) = error else { return false }
            return Set([a, b]) == ["res/xml/a.xml", "res/xml/A.xml"]
        }
        #expect(!FileManager.default.fileExists(atPath: out))

        let kept = dir.appendingPathComponent("decoded").path
        let summary = try ResourceDecoder.decodeAll(archive: archive, into: kept)
        #expect(summary.files.contains("res/xml/a.xml") && summary.files.contains("res/xml/A.xml"))
    }

    @Test func runNotesPatchFilesThatMatchAnEntryOnlyUpToCase() throws {
        let input = try apkWithCaseVariants()
        let names = try APKArchive(path: input).entries
        // A new file whose name differs from an entry's only in case adds an entry; said on any file system.
        let typo = dir.appendingPathComponent("typo")
        try TestSupport.write("patched\n", to: "assets/readme.TXT", in: typo)
        try TestSupport.write("patched\n", to: "Assets/new.txt", in: typo)
        let notes = Overlay.caseNotes(entries: names, patch: try PatchDirectory(root: typo.path), foldsCase: { _ in false })
        #expect(notes.count == 2, "\(notes)")
        #expect(notes.contains { $0.contains("patch file Assets/new.txt adds a new entry") && $0.contains("(folders \"assets\" and \"Assets\")") })
        #expect(notes.contains { $0.contains("patch file assets/readme.TXT adds a new entry") && $0.contains("rename the patch file") })

        // Replacing one of two entries that differ only in case: on a case-insensitive volume the other cannot be
        // a file beside it; on a case-sensitive one nothing needs saying.
        let one = dir.appendingPathComponent("one")
        try TestSupport.write("patched\n", to: "assets/README.txt", in: one)
        let patch = try PatchDirectory(root: one.path)
        #expect(Overlay.caseNotes(entries: names, patch: patch, foldsCase: { _ in false }).isEmpty)
        let folded = Overlay.caseNotes(entries: names, patch: patch, foldsCase: { _ in true })
        #expect(folded.count == 1 && folded[0].contains("assets/README.txt is patched, assets/Readme.txt cannot be"), "\(folded)")

        // Through the command: the note is printed and the output keeps both entries plus the new one.
        let output = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", typo.path, "--out", output, "--no-sign"])
        #expect(result.succeeded && result.stdout.contains("note: patch file assets/readme.TXT adds a new entry"), "\(result)")
        let written = Set(try APKArchive(path: output).entries.map(\.name))
        #expect(written.isSuperset(of: ["assets/Readme.txt", "assets/README.txt", "assets/readme.TXT", "Assets/new.txt"]))
    }
}
