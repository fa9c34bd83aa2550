import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// Every command on APKs nobody here wrote (`ForeignCorpus`: aapt2 in each link mode, apktool's rebuild, `jar`,
/// Python's zipfile, `zip`, `zipalign`, apksigner and jarsigner signatures), checked with the tools Android
/// developers trust: `verify` gives apksigner's verdict; `sign` and `run` (no patch) give APKs apksigner verifies,
/// `zipalign -c -p 4` accepts and Android's own ZIP reader (libziparchive) reads, with the same `aapt dump badging`,
/// manifest `xmltree` and `--values resources` as the input and an output `apktool d` decodes; `unpack` extracts what
/// `unzip` extracts, byte for byte; `decode` then `run` with the decoded text gives identical dumps of every file.
@Suite struct ForeignCorpusTests {
    typealias Member = ForeignCorpus.Member

    /// Built once per test process (the producers take seconds: apktool, apksigner and jarsigner start a JVM each)
    /// into .build/foreign-corpus, replaced by the next run rather than left to pile up in the temp folder.
    static let corpus: Result<ForeignCorpus.Built, FixtureError> = {
        do {
            let directory = TestSupport.packageRoot.appendingPathComponent(".build/foreign-corpus")
            try? FileManager.default.removeItem(at: directory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return .success(try ForeignCorpus.build(in: directory))
        } catch {
            return .failure(FixtureError(message: "building the corpus failed: \(error)"))
        }
    }()

    /// Members whose archive the rewriting commands (`run`, `unpack`, `decode`) refuse, and what the message says.
    static let refusedByRewritingCommands: [Member: String] = [
        .pythonZip64: "ZIP64",
    ]

    /// Members `decode` refuses, and what its message names.
    static let refusedByDecode: [Member: String] = [
        .emptyResourceTable: "resources.arsc",
    ]

    /// `decode` then `run` with the decoded text loses something for these members (bugs reported in the corpus
    /// note, /work/notes/issue-corpus.md): each assertion still runs, its failure is recorded as known.
    static let knownDecodeLosses: [Member: String] = [:]

    @Test(arguments: Member.allCases)
    func roundTrip(_ member: Member) throws {
        let corpus = try Self.corpus.get()
        let input = corpus.path(of: member)
        let work = try TestSupport.makeTemporaryDirectory("corpus-\(member)")
        defer { try? FileManager.default.removeItem(at: work) }
        let checks = RoundTripChecks(member: member, input: input, work: work, corpus: corpus)
        try checks.verifyMatchesApksigner()
        try checks.signedOutput()
        if let refusal = Self.refusedByRewritingCommands[member] {
            try checks.rewritingCommandsRefuse(saying: refusal)
            return
        }
        try checks.runOutput()
        try checks.unpackMatchesUnzip()
        if let refusal = Self.refusedByDecode[member] {
            let decoded = checks.path("decoded")
            let decode = try TestSupport.apkpatch(["decode", input, "-o", decoded])
            #expect(decode.status == 1 && decode.stderr.contains(refusal), "\(member): decode should refuse (\(refusal)): \(decode)")
        } else if let reason = Self.knownDecodeLosses[member] {
            withKnownIssue(Comment(rawValue: reason)) { try checks.decodeThenRunIsLossless() }
        } else {
            try checks.decodeThenRunIsLossless()
        }
    }

    /// aapt2's protobuf outputs (`--proto-format`, `--static-lib`: the form bundletool and AARs take) are not APKs a
    /// device installs: every command says so instead of failing on the bytes or decoding nothing.
    @Test func protoFormatIsRefused() throws {
        let corpus = try Self.corpus.get()
        let work = try TestSupport.makeTemporaryDirectory("corpus-proto")
        defer { try? FileManager.default.removeItem(at: work) }
        for input in corpus.protoFormat {
            let name = URL(fileURLWithPath: input).lastPathComponent
            let environment = ["CORPUS_KS_PASS": corpus.keyStorePassword]
            let outputs = (0..<4).map { work.appendingPathComponent("\(name)-\($0)").path }
            let commands: [[String]] = [
                ["verify", input],
                ["sign", "--ks", corpus.keyStore, "--ks-pass", "env:CORPUS_KS_PASS", "--out", outputs[0], input],
                ["run", input, "--ks", corpus.keyStore, "--ks-pass", "env:CORPUS_KS_PASS", "--out", outputs[1], "-q"],
                ["decode", input, "-o", outputs[2]],
                ["unpack", input, "--decode", "-o", outputs[3]],
            ]
            for arguments in commands {
                let result = try TestSupport.apkpatch(arguments, environment: environment)
                #expect(result.status == 1 && (result.stderr + result.stdout).contains("protobuf"), "\(name): apkpatch \(arguments[0]): \(result)")
            }
            for output in outputs { #expect(!FileManager.default.fileExists(atPath: output), "\(name): \(output) was left") }
        }
    }
}

/// The checks of one member, each recording its failures under the member's name.
struct RoundTripChecks {
    let member: ForeignCorpus.Member
    let input: String
    let work: URL
    let corpus: ForeignCorpus.Built

    var environment: [String: String] { ["CORPUS_KS_PASS": corpus.keyStorePassword] }
    var signingOptions: [String] { ["--ks", corpus.keyStore, "--ks-pass", "env:CORPUS_KS_PASS"] }
    func path(_ name: String) -> String { work.appendingPathComponent(name).path }

    /// `verify --json` exits 0 or 1 with a JSON object whose `verified` is apksigner's verdict.
    func verifyMatchesApksigner() throws {
        let ours = try TestSupport.apkpatch(["verify", "--json", input])
        #expect(ours.status == 0 || ours.status == 1, "\(member): verify crashed: \(ours)")
        let report = try JSONSerialization.jsonObject(with: Data(ours.stdout.utf8)) as? [String: Any]
        let verified = try #require(report?["verified"] as? Bool, "\(member): verify --json gave no verdict: \(ours)")
        #expect(verified == (ours.status == 0), "\(member): exit status and verdict disagree: \(ours)")
        let theirs = try TestSupport.run("apksigner", ["verify", input], environment: ForeignCorpus.javaEnvironment)
        #expect(verified == theirs.succeeded, "\(member): verify says \(verified), apksigner verify says:\n\(theirs)\nours:\n\(ours.stdout)")
    }

    /// `sign` writes an APK the oracles accept with the input's content, or refuses (naming `apkpatch run`) an input
    /// whose resources.arsc Android requires stored.
    func signedOutput() throws {
        let output = path("signed.apk")
        let result = try TestSupport.apkpatch(["sign"] + signingOptions + ["--out", output, input], environment: environment)
        if member == .zipRecursive {
            #expect(result.status == 1 && result.stderr.contains("apkpatch run"), "\(member): sign should refuse a compressed resources.arsc: \(result)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(member): sign left \(output)")
            return
        }
        try #require(result.succeeded, "\(member): sign failed: \(result)")
        if member == .pythonZip64 {
            // As apksig signs them, ZIP64 local headers stay; Debian's apksigner 0.9 and libziparchive (Android 10)
            // cannot read those, so our verifier and unzip stand in.
            let verify = try TestSupport.apkpatch(["verify", output])
            #expect(verify.succeeded, "\(member): \(verify)")
            let test = try TestSupport.run("unzip", ["-tq", output])
            #expect(test.succeeded, "\(member): \(test)")
        } else {
            try expectInstallable(output, label: "sign")
        }
        try expectSameDumps(output, label: "sign")
    }

    /// `run` without a patch: signed, installable, same content; `apktool d` reads it; our verify passes it with no
    /// install finding.
    func runOutput() throws {
        let output = path("run.apk")
        let empty = path("empty-patch")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let result = try TestSupport.apkpatch(["run", input, "--patch", empty] + signingOptions + ["--out", output, "-q"], environment: environment)
        try #require(result.succeeded, "\(member): run failed: \(result)")
        try expectInstallable(output, label: "run")
        try expectSameDumps(output, label: "run")
        let verify = try TestSupport.apkpatch(["verify", "--json", output])
        #expect(verify.succeeded, "\(member): verify of run's output: \(verify)")
        if let report = try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any] {
            #expect((report["installErrors"] as? [Any])?.isEmpty ?? true, "\(member): install errors in run's output: \(verify.stdout)")
        }
        // apktool d must read the output whenever it reads the input (it cannot decode an empty resources.arsc).
        // A signature changes nothing it decodes: the re-signed members have the legacy app's content.
        guard !member.rawValue.hasPrefix("apksigner"), !member.rawValue.hasPrefix("jarsigner") else { return }
        let apktool = try TestSupport.run("apktool", ["d", "-f", "-s", "-o", path("apktool-run"), output], environment: ForeignCorpus.javaEnvironment)
        if !apktool.succeeded {
            let onInput = try TestSupport.run("apktool", ["d", "-f", "-s", "-o", path("apktool-input"), input], environment: ForeignCorpus.javaEnvironment)
            #expect(!onInput.succeeded, "\(member): apktool d of run's output failed, of the input not: \(apktool)")
        }
    }

    /// `run`, `unpack` and `decode` refuse the archive with `message` in the error, and write nothing.
    func rewritingCommandsRefuse(saying message: String) throws {
        let outputs = ["run.apk", "unpacked", "decoded"].map(path)
        let commands: [[String]] = [
            ["run", input] + signingOptions + ["--out", outputs[0], "-q"],
            ["unpack", input, "-o", outputs[1]],
            ["decode", input, "-o", outputs[2]],
        ]
        for arguments in commands {
            let result = try TestSupport.apkpatch(arguments, environment: environment)
            #expect(result.status == 1 && result.stderr.contains(message), "\(member): apkpatch \(arguments[0]) should refuse (\(message)): \(result)")
        }
        for output in outputs { #expect(!FileManager.default.fileExists(atPath: output), "\(member): \(output) was left") }
    }

    /// `unpack` extracts what `unzip` extracts (same folders, same bytes under the same names), and every entry
    /// libziparchive reads, under the name Android gives it, with its CRC-32. unzip reads names without the UTF-8
    /// flag as CP437 (aapt2 writes UTF-8 names without it), so only a non-ASCII name may differ from unzip's.
    func unpackMatchesUnzip() throws {
        let ours = path("unpacked"), theirs = path("unzipped")
        let unpack = try TestSupport.apkpatch(["unpack", input, "-o", ours])
        try #require(unpack.succeeded, "\(member): unpack failed: \(unpack)")
        try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true)
        let unzip = try TestSupport.run("unzip", ["-q", input, "-d", theirs])
        try #require(unzip.succeeded, "\(member): unzip failed: \(unzip)")
        let (a, b) = (try Self.tree(ours), try Self.tree(theirs))
        let onlyOurs = Set(a.keys).subtracting(b.keys), onlyUnzips = Set(b.keys).subtracting(a.keys)
        let unexplained = onlyOurs.union(onlyUnzips).filter { $0.utf8.allSatisfy { $0 < 0x80 } }
        #expect(unexplained.isEmpty, "\(member): unpack and unzip extract different names: only ours \(onlyOurs.sorted()), only unzip's \(onlyUnzips.sorted())")
        let differing = a.keys.filter { b[$0] != nil && a[$0] != b[$0] }.sorted()
        #expect(differing.isEmpty, "\(member): unpack and unzip extract different bytes for \(differing)")
        guard case .success(let entries) = try ZipArchiveOracle.read(input) else { return }  // not an archive Android reads
        let files = entries.filter { !$0.name.hasSuffix("/") }
        #expect(Set(files.map(\.name)) == Set(a.keys.filter { !$0.hasSuffix("/") }),
                "\(member): unpack's files are not the entries libziparchive reads: \(Set(files.map(\.name)).symmetricDifference(a.keys.filter { !$0.hasSuffix("/") }).sorted())")
        for entry in files {
            guard let data = a[entry.name] else { continue }
            #expect(String(format: "%08x", ForeignCorpus.crc32(data)) == entry.crc32 && Int64(data.count) == entry.uncompressedSize,
                    "\(member): unpack extracted other bytes for \(entry.name) than libziparchive's record")
        }
    }

    /// `decode`, then `run` with the decoded folder as the patch: identical badging, resource values and xmltree of
    /// every XML file (line numbers aside).
    func decodeThenRunIsLossless() throws {
        let decoded = path("decoded"), output = path("decoded-run.apk")
        let decode = try TestSupport.apkpatch(["decode", input, "-o", decoded])
        try #require(decode.succeeded, "\(member): decode failed: \(decode)")
        let run = try TestSupport.apkpatch(["run", input, "--patch", decoded, "--no-sign", "--out", output, "-q"])
        try #require(run.succeeded, "\(member): run with the decoded text failed: \(run)")
        #expect(try Dump.aapt(["badging", output]) == Dump.aapt(["badging", input]), "\(member): decode/run changed aapt dump badging")
        try Dump.expectEqual(Dump.aapt(["--values", "resources", input]), Dump.aapt(["--values", "resources", output]),
                             "\(member): decode/run changed aapt dump --values resources")
        let names = try Dump.entryNames(input).filter { $0 == "AndroidManifest.xml" || ($0.hasPrefix("res/") && $0.hasSuffix(".xml")) }
        for name in names {
            try Dump.expectEqual(Dump.xmltree(input, name), Dump.xmltree(output, name), "\(member): decode/run changed the xmltree of \(name)")
        }
    }

    /// apksigner verify, zipalign -c -p 4 and libziparchive accept `output`.
    func expectInstallable(_ output: String, label: String) throws {
        let apksigner = try TestSupport.run("apksigner", ["verify", output], environment: ForeignCorpus.javaEnvironment)
        #expect(apksigner.succeeded, "\(member): apksigner verify of \(label)'s output: \(apksigner)")
        let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
        #expect(zipalign.succeeded, "\(member): zipalign -c -p 4 of \(label)'s output: \(zipalign)")
        switch try ZipArchiveOracle.read(output) {
        case .failure(let error): Issue.record("\(member): \(label)'s output: \(error)")
        case .success(let entries): #expect(!entries.isEmpty, "\(member): libziparchive read no entry of \(label)'s output")
        }
    }

    /// `output` has the input's badging, manifest and resource values. Signing drops directory entries, as
    /// apksigner does; aapt counts a `lib/` directory entry as a native-code ABI named '', which therefore goes.
    func expectSameDumps(_ output: String, label: String) throws {
        let badging = try Dump.aapt(["badging", input]).replacingOccurrences(of: "native-code: '' ", with: "native-code: ")
        #expect(try Dump.aapt(["badging", output]) == badging, "\(member): \(label) changed aapt dump badging")
        try Dump.expectEqual(Dump.xmltree(input, "AndroidManifest.xml"), Dump.xmltree(output, "AndroidManifest.xml"),
                             "\(member): \(label) changed the manifest")
        try Dump.expectEqual(Dump.aapt(["--values", "resources", input]), Dump.aapt(["--values", "resources", output]),
                             "\(member): \(label) changed aapt dump --values resources")
    }

    /// Every regular file (relative path → bytes) and folder (relative path ending in "/" → empty) under `root`,
    /// walked by bytes: unzip may write names that are not UTF-8 (the key then holds replacement characters).
    static func tree(_ root: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        func cPath(_ bytes: [UInt8]) -> [CChar] { bytes.map { CChar(bitPattern: $0) } + [0] }
        func walk(_ relative: [UInt8]) throws {
            let directory = Array(root.utf8) + (relative.isEmpty ? [] : [UInt8(ascii: "/")] + relative)
            guard let stream = opendir(cPath(directory)) else { throw FixtureError(message: "cannot list \(String(decoding: directory, as: UTF8.self))") }
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                if name == Array(".".utf8) || name == Array("..".utf8) { continue }
                let childRelative = relative.isEmpty ? name : relative + [UInt8(ascii: "/")] + name
                let child = directory + [UInt8(ascii: "/")] + name
                var info = stat()
                guard lstat(cPath(child), &info) == 0 else { throw FixtureError(message: "cannot stat \(String(decoding: child, as: UTF8.self))") }
                let key = String(decoding: childRelative, as: UTF8.self)
                if info.st_mode & S_IFMT == S_IFDIR {
                    result[key + "/"] = Data()
                    try walk(childRelative)
                } else {
                    result[key] = try contents(of: cPath(child), size: Int(info.st_size))
                }
            }
        }
        func contents(of path: [CChar], size: Int) throws -> Data {
            let descriptor = open(path, O_RDONLY)
            guard descriptor >= 0 else { throw FixtureError(message: "cannot open \(String(cString: path))") }
            defer { close(descriptor) }
            var data = Data(count: size), done = 0
            while done < size {
                let n = data.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + done, size - done) }
                guard n > 0 else { throw FixtureError(message: "cannot read \(String(cString: path))") }
                done += n
            }
            return data
        }
        try walk([])
        return result
    }
}

/// The oracles' dumps, as text to compare.
enum Dump {
    /// `aapt dump ARGS` (stdout only: aapt writes warnings with a process ID and a time to stderr).
    static func aapt(_ arguments: [String]) throws -> String {
        let result = try TestSupport.run("aapt", ["dump"] + arguments)
        // A failure is a dump too (the input may be one aapt cannot read); without the path, so two files compare.
        guard result.succeeded else { return "aapt dump \(arguments[0]) failed (\(result.status)):\n\(result.stdout)" }
        return result.stdout
    }

    /// `aapt dump xmltree` of one file without the line numbers (decoded text need not keep them).
    static func xmltree(_ apk: String, _ name: String) throws -> String {
        try aapt(["xmltree", apk, name]).replacingOccurrences(of: #" \(line=\d+\)"#, with: "", options: .regularExpression)
    }

    static func entryNames(_ apk: String) throws -> [String] {
        let result = try TestSupport.run("unzip", ["-Z1", apk])
        guard result.succeeded else { throw FixtureError(message: "unzip -Z1 \(apk) failed: \(result)") }
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// Records the first differing line of two dumps (a whole dump in a message is unreadable).
    static func expectEqual(_ expected: String, _ actual: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard expected != actual else { return }
        let a = expected.split(separator: "\n", omittingEmptySubsequences: false), b = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let line = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        Issue.record("\(message): first difference at line \(line + 1):\n input:  \(line < a.count ? String(a[line]) : "<end>")\n output: \(line < b.count ? String(b[line]) : "<end>")",
                     sourceLocation: sourceLocation)
    }
}
