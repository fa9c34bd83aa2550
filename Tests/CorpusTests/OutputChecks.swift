import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// The oracle checks both corpus suites run on an input and what a command wrote from it, each recording its
/// failures under the input's `name`.
struct OutputChecks {
    let name: String
    let input: String
    let work: URL
    /// The APK whose dumps the outputs must have, when aapt cannot read `input` itself (ZIP64 local headers: the
    /// same content written without them); nil: `input`.
    var reference: String? = nil

    func path(_ file: String) -> String { work.appendingPathComponent(file).path }

    /// `unpack` extracts what `unzip` extracts (same folders, same bytes under the same names), and every entry
    /// libziparchive reads, under the name Android gives it, with its CRC-32. unzip reads names without the UTF-8
    /// flag as CP437 (aapt2 writes UTF-8 names without it), so only a non-ASCII name may differ from unzip's.
    func unpackMatchesUnzip() throws {
        let ours = path("unpacked"), theirs = path("unzipped")
        let unpack = try TestSupport.apkpatch(["unpack", input, "-o", ours])
        try #require(unpack.succeeded, "\(name): unpack failed: \(unpack)")
        try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true)
        let unzip = try TestSupport.run("unzip", ["-q", input, "-d", theirs])
        let read = try Dump.zipEntries(input)
        // unzip fails where it reads an entry's method from the local header (below) and Android does not.
        try #require(unzip.succeeded || (try? read.get()) != nil, "\(name): unzip failed: \(unzip)")
        let (a, b) = (try Self.tree(ours), try Self.tree(theirs))
        let onlyOurs = Set(a.keys).subtracting(b.keys), onlyUnzips = Set(b.keys).subtracting(a.keys)
        let unexplained = onlyOurs.union(onlyUnzips).filter { $0.utf8.allSatisfy { $0 < 0x80 } }
        #expect(unexplained.isEmpty, "\(name): unpack and unzip extract different names: only ours \(onlyOurs.sorted()), only unzip's \(onlyUnzips.sorted())")
        // unzip takes an entry's compression method from its local header; Android, apksig and unpack take the
        // central directory's (apksig's mismatched-compression-method.apk): where the two disagree unzip's bytes
        // fail the directory's CRC-32, and unpack's are checked against libziparchive's record below.
        let androidCRCs = (try? read.get()).map { Dictionary($0.map { ($0.name, $0.crc32) }, uniquingKeysWith: { first, _ in first }) } ?? [:]
        let differing = a.keys.filter { key in
            guard let theirs = b[key], a[key] != theirs else { return false }
            return androidCRCs[key].map { $0 == String(format: "%08x", ForeignCorpus.crc32(theirs)) } ?? true
        }.sorted()
        #expect(differing.isEmpty, "\(name): unpack and unzip extract different bytes for \(differing)")
        guard case .success(let entries) = read else { return }  // not an archive Android reads
        let files = entries.filter { !$0.name.hasSuffix("/") }
        #expect(Set(files.map(\.name)) == Set(a.keys.filter { !$0.hasSuffix("/") }),
                "\(name): unpack's files are not the entries libziparchive reads: \(Set(files.map(\.name)).symmetricDifference(a.keys.filter { !$0.hasSuffix("/") }).sorted())")
        for entry in files {
            guard let data = a[entry.name] else { continue }
            #expect(String(format: "%08x", ForeignCorpus.crc32(data)) == entry.crc32 && Int64(data.count) == entry.uncompressedSize,
                    "\(name): unpack extracted other bytes for \(entry.name) than libziparchive's record")
        }
    }

    /// apksigner verify, zipalign -c -p 4 and libziparchive accept `output`. With `v4SignatureFile`, the verifier
    /// is apksigner 35 (Debian's 31 cannot read .idsig files), which must also verify the v4 signature in that file.
    /// Returns apksigner's result (`verify -v --print-certs`), for the caller to check the signers.
    @discardableResult
    func expectInstallable(_ output: String, label: String, v4SignatureFile: String? = nil) throws -> TestSupport.ProcessResult {
        let apksigner: TestSupport.ProcessResult
        if let v4SignatureFile {
            apksigner = try OracleAnswers.answer(to: ["apksigner 35 verify -v --print-certs --v4-signature-file"], aboutTheBytesOf: [v4SignatureFile, output]) {
                try NewerApksigner.run(["verify", "-v", "--print-certs", "--v4-signature-file", v4SignatureFile, output],
                                       environment: ForeignCorpus.javaEnvironment)
            }
            #expect(apksigner.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"),
                    "\(name): apksigner 35 did not verify the v4 signature of \(label)'s output: \(apksigner)")
        } else {
            apksigner = try OracleAnswers.answer(to: ["apksigner verify -v --print-certs"], aboutTheBytesOf: [output]) {
                try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", output], environment: ForeignCorpus.javaEnvironment)
            }
        }
        #expect(apksigner.succeeded, "\(name): apksigner verify of \(label)'s output: \(apksigner)")
        let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
        #expect(zipalign.succeeded, "\(name): zipalign -c -p 4 of \(label)'s output: \(zipalign)")
        switch try Dump.zipEntries(output) {
        case .failure(let error): Issue.record("\(name): \(label)'s output: \(error)")
        case .success(let entries): #expect(!entries.isEmpty, "\(name): libziparchive read no entry of \(label)'s output")
        }
        return apksigner
    }

    /// `output` has the input's badging, manifest, resource values (aapt's and aapt2's dumps) and a table Android's
    /// libandroidfw reads the same. Signing drops directory entries, as apksigner does; aapt counts a `lib/`
    /// directory entry as a native-code ABI named '', which therefore goes.
    func expectSameDumps(_ output: String, label: String) throws {
        let input = reference ?? self.input
        let badging = try Dump.aapt(["badging", input]).replacingOccurrences(of: "native-code: '' ", with: "native-code: ")
        #expect(try Dump.aapt(["badging", output]) == badging, "\(name): \(label) changed aapt dump badging")
        try Dump.expectEqual(Dump.xmltree(input, "AndroidManifest.xml"), Dump.xmltree(output, "AndroidManifest.xml"),
                             "\(name): \(label) changed the manifest")
        try Dump.expectEqual(Dump.aapt(["--values", "resources", input]), Dump.aapt(["--values", "resources", output]),
                             "\(name): \(label) changed aapt dump --values resources")
        try Dump.expectEqual(RealWorldResourceTests.aapt2Resources(input), RealWorldResourceTests.aapt2Resources(output),
                             "\(name): \(label) changed aapt2 dump resources")
        try expectSameTableForAndroid(output, label: label)
    }

    /// libandroidfw (`TestSupport.libandroidfwTable`, Android's own loader) reads `output`'s resources.arsc whenever
    /// it reads the input's, with the same typeSpec and entry flags for every resource.
    func expectSameTableForAndroid(_ output: String, label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let before = try tableReadings(of: reference ?? input, into: "table-input") else { return }
        guard let after = try tableReadings(of: output, into: "table-\(label)") else {
            Issue.record("\(name): \(label)'s output has no resources.arsc", sourceLocation: sourceLocation)
            return
        }
        #expect(after.strict.succeeded || !before.strict.succeeded, "\(name): libandroidfw refuses \(label)'s table: \(after.strict.stdout)",
                sourceLocation: sourceLocation)
        Dump.expectEqual(before.listing.stdout, after.listing.stdout, "\(name): \(label) changed how libandroidfw reads the table",
                         sourceLocation: sourceLocation)
    }

    /// libandroidfw's verdict (`--strict`) and listing of `apk`'s resources.arsc, extracted into the work folder
    /// `folder`; nil when it has none (or an empty one).
    func tableReadings(of apk: String, into folder: String) throws -> (strict: TestSupport.ProcessResult, listing: TestSupport.ProcessResult)? {
        try OracleAnswers.answer(to: ["libandroidfw readings", apk], cached: OracleAnswers.isInput(apk)) {
            guard let table = try extractTable(of: apk, into: folder) else { return nil }
            return (try TestSupport.libandroidfwTable(table, strict: true), try TestSupport.libandroidfwTable(table))
        }
    }

    /// `apk`'s resources.arsc extracted into the work folder `folder`; nil when it has none (or an empty one).
    func extractTable(of apk: String, into folder: String) throws -> String? {
        let directory = path(folder)
        let unzip = try TestSupport.run("unzip", ["-qq", "-o", apk, "resources.arsc", "-d", directory])
        let table = directory + "/resources.arsc"
        guard unzip.succeeded, let size = try? FileManager.default.attributesOfItem(atPath: table)[.size] as? Int, size > 0 else { return nil }
        return table
    }

    /// `align -p 4` agrees with `zipalign -p 4` on the input: ours passes `zipalign -c -p 4`, and libziparchive
    /// reads the same entries (name, method, sizes, CRC-32) from both outputs, every stored entry's data of ours on
    /// a 4-byte boundary and every stored .so on a 4 KiB page; `align -c -p 4` gives `zipalign -c -p 4`'s verdict
    /// on the input. `refusal`: the words with which align refuses a resources.arsc Android cannot load (zipalign
    /// copies it), leaving no output. `zipalignFailsItsOwnCheck`: zipalign writes its output, then its own
    /// verification of it fails (exit 1); the entries are still compared.
    func alignAgreesWithZipalign(refusal: String? = nil, zipalignFailsItsOwnCheck: Bool = false) throws {
        let check = try TestSupport.apkpatch(["align", "-c", "-p", "4", input])
        let checkOracle = try TestSupport.run("zipalign", ["-c", "-p", "4", input])
        #expect(check.succeeded == checkOracle.succeeded, "\(name): align -c says \(check.succeeded), zipalign -c says \(checkOracle.succeeded): \(check)\(checkOracle)")
        let ours = path("aligned.apk"), theirs = path("zipaligned.apk")
        let align = try TestSupport.apkpatch(["align", "-p", "4", input, ours])
        if let refusal {
            #expect(align.status == 1 && align.stderr.contains(refusal), "\(name): align should refuse (\(refusal)): \(align)")
            #expect(!FileManager.default.fileExists(atPath: ours), "\(name): align left \(ours)")
            return
        }
        try #require(align.succeeded, "\(name): align failed: \(align)")
        let zipalign = try TestSupport.run("zipalign", ["-p", "4", input, theirs])
        if zipalignFailsItsOwnCheck {
            #expect(zipalign.status == 1 && FileManager.default.fileExists(atPath: theirs),
                    "\(name): zipalign -p 4 was expected to write an output that fails its own check: \(zipalign)")
        } else {
            try #require(zipalign.succeeded, "\(name): zipalign -p 4 failed: \(zipalign)")
        }
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", ours]).succeeded, "\(name): zipalign -c -p 4 of align's output")
        let a = try Dump.zipEntries(ours).get(), b = try Dump.zipEntries(theirs).get()
        func record(_ e: ZipArchiveOracle.Entry) -> String { "\(e.name) method=\(e.method) \(e.compressedSize)/\(e.uncompressedSize) crc=\(e.crc32)" }
        let (mine, zipaligns) = (a.map(record).sorted(), b.map(record).sorted())
        #expect(mine == zipaligns, "\(name): align and zipalign wrote other entries: only ours \(Set(mine).subtracting(zipaligns).sorted().prefix(5)), only zipalign's \(Set(zipaligns).subtracting(mine).sorted().prefix(5))")
        let misaligned = a.filter { $0.method == 0 && $0.dataOffset % ($0.name.hasSuffix(".so") ? 4096 : 4) != 0 }.map(\.name)
        #expect(misaligned.isEmpty, "\(name): align left stored entries unaligned: \(misaligned.prefix(5))")
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
        try OracleAnswers.answer(to: ["aapt dump"] + arguments, cached: OracleAnswers.asksAboutInputsOnly(arguments)) {
            let result = try TestSupport.run("aapt", ["dump"] + arguments)
            // A failure is a dump too (the input may be one aapt cannot read); without the path, so two files compare.
            guard result.succeeded else { return "aapt dump \(arguments[0]) failed (\(result.status)):\n\(result.stdout)" }
            return result.stdout
        }
    }

    /// `aapt dump xmltree` of one file without the line numbers (decoded text need not keep them).
    static func xmltree(_ apk: String, _ name: String) throws -> String {
        try aapt(["xmltree", apk, name]).replacingOccurrences(of: #" \(line=\d+\)"#, with: "", options: .regularExpression)
    }

    static func entryNames(_ apk: String) throws -> [String] {
        try OracleAnswers.answer(to: ["unzip -Z1", apk], cached: OracleAnswers.isInput(apk)) {
            let result = try TestSupport.run("unzip", ["-Z1", apk])
            guard result.succeeded else { throw FixtureError(message: "unzip -Z1 \(apk) failed: \(result)") }
            return result.stdout.split(separator: "\n").map(String.init)
        }
    }

    /// `ZipArchiveOracle.read`: the entries Android's libziparchive reads, or its refusal.
    static func zipEntries(_ apk: String) throws -> Result<[ZipArchiveOracle.Entry], FixtureError> {
        try OracleAnswers.answer(to: ["libziparchive", apk], cached: OracleAnswers.isInput(apk)) { try ZipArchiveOracle.read(apk) }
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
