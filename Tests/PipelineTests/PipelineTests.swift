import APKCore
import Foundation
import Pipeline
import Testing
import TestSupport
import Unpack

/// End to end through the `apkpatch` binary: the one-shot pipeline, the install step (a fake adb, and the
/// real adb with no device) and watch mode, each checked with apksigner, apkverifier and unzip.
@Suite(.serialized, .removesTemporaryDirectories) struct PipelineTests {
    let dir: URL
    let keystore: String
    static let password = "Pipeline-Test-Secret-4711"

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("pipeline")
        keystore = dir.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Pipeline Test, O=apkpatch", validityDays: 365)
    }

    var signing: [String] { ["--ks", keystore, "--ks-pass", "env:KS_PASS"] }
    var environment: [String: String] { ["KS_PASS": Self.password] }

    func makePatch() throws -> URL {
        let patch = dir.appendingPathComponent("patch-\(UUID().uuidString)")
        try TestSupport.write("<html><body>patched index</body></html>\n", to: "assets/www/index.html", in: patch)
        try TestSupport.write("console.log('patched app.js');\n", to: "assets/www/js/app.js", in: patch)
        return patch
    }

    @Test func runPatchesSignsAndKeepsEverythingElse() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "cordova.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("cordova-out.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output] + signing, environment: environment)
        #expect(run.succeeded, "\(run)")
        #expect(run.stdout.contains("adb install -r"), "the summary ends with the adb command")
        #expect(!run.stdout.contains(Self.password) && !run.stderr.contains(Self.password))

        let verify = try TestSupport.run("apksigner", ["verify", "-v", output])
        #expect(verify.succeeded && verify.stdout.contains("Verified using v2 scheme (APK Signature Scheme v2): true"), "\(verify)")
        let oracle = try TestSupport.run("apkverifier", [output])
        #expect(oracle.succeeded, "\(oracle)")
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<html><body>patched index</body></html>\n")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/js/app.js"]).stdout == "console.log('patched app.js');\n")

        // Every other entry: compressed bytes and CRC identical to the input.
        let before = try APKArchive(path: input), after = try APKArchive(path: output)
        for entry in before.entries where !["assets/www/index.html", "assets/www/js/app.js"].contains(entry.name) {
            let written = try #require(after.entry(named: entry.name), "\(entry.name) missing")
            #expect(written.crc32 == entry.crc32)
            #expect(try after.rawData(of: written).allBytes() == before.rawData(of: entry).allBytes(), "\(entry.name)")
        }
    }

    /// The signer hashes the v4 tree's leaves of the blocks it writes (`StreamingChunkDigester`: SHA-256 chunks
    /// two at a time, leaves beside them) and the v1 digests of the repacked entries sixteen at a time (stored
    /// ones streamed through their lanes, small deflated ones inflated into an arena, a large one on its own):
    /// the .idsig's tree must be Linux fsverity's for the file, apksigner must accept it and every v1 digest,
    /// and OpenSSL alone (no lanes) must give the same APK and .idsig bytes.
    @Test("run's .idsig tree is fsverity's and apksigner checks it and every v1 digest; without the SHA-256 lanes the same bytes")
    func runV4LeavesAndV1LanesAreExact() throws {
        var fixture = FixtureAPK.cordovaLike()
        fixture.minSdk = 18  // v1 is checked by apksigner
        fixture.storedExtensions = ["bin"]
        // Over five chunks: stored blobs of uneven sizes (their lanes end apart), many small deflated scripts,
        // a deflated text larger than the 1 MiB arena, and an empty file.
        for index in 0..<40 {
            fixture.assets["blobs/b\(index).bin"] = FixtureAPK.pseudoRandomBytes(count: 20_000 + (index * 31_337) % 250_000, seed: UInt64(index))
            fixture.assets["www/js/extra\(index).js"] = Array(String(repeating: "var x\(index) = \(index);\n", count: 50 + index * 13).utf8)
        }
        fixture.assets["big/text.txt"] = Array((0..<90_000).map { "line \($0 % 977) of a large text\n" }.joined().utf8)
        fixture.assets["empty.bin"] = []
        let input = try fixture.build(in: dir, name: "v4-leaves.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("v4-leaves-out.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output] + signing, environment: environment)
        #expect(run.succeeded, "\(run)")
        #expect((try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int ?? 0) > 5 << 20, "five chunks or more: two pairs and a batch of one")
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--v4-signature-file", output + ".idsig", output])
        #expect(verify.succeeded && verify.stdout.contains("Verified using v1 scheme (JAR signing): true")
                && verify.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(verify)")
        let tree = dir.appendingPathComponent("v4-leaves.tree").path
        let fsverity = try TestSupport.run("fsverity", ["digest", output, "--out-merkle-tree", tree])
        #expect(fsverity.succeeded, "\(fsverity)")
        // The .idsig ends with the tree (apksig V4Signature: the tree, size-prefixed, last).
        let idsig = try TestSupport.readBytes(output + ".idsig")
        let expectedTree = try TestSupport.readBytes(tree)
        #expect(!expectedTree.isEmpty && Array(idsig.suffix(expectedTree.count)) == expectedTree, "the v4 tree is not fs-verity's")

        let plain = dir.appendingPathComponent("v4-leaves-openssl.apk").path
        var unaccelerated = environment
        unaccelerated["APKPATCH_SHA256_LANES"] = "0"
        let again = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", plain] + signing, environment: unaccelerated)
        #expect(again.succeeded, "\(again)")
        #expect(try TestSupport.readBytes(plain) == (try TestSupport.readBytes(output)), "the lanes changed the APK")
        #expect(try TestSupport.readBytes(plain + ".idsig") == idsig, "the lanes changed the .idsig")
    }

    @Test func defaultOutputJSONAndDeterminism() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "app.apk")
        let patch = try makePatch()
        let first = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--json"] + signing, environment: environment)
        #expect(first.succeeded, "\(first)")
        let expected = dir.appendingPathComponent("app-patched.apk").path
        let json = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        #expect(json["output"] as? String == expected)
        #expect(json["replaced"] as? [String] == ["assets/www/index.html", "assets/www/js/app.js"])
        #expect(json["schemes"] as? [String] == ["v1", "v2", "v3"])
        #expect(json["verified"] as? Bool == true)
        #expect((json["signerCertificateSHA256"] as? String)?.count == 64)
        let bytes = try TestSupport.readBytes(expected)
        let second = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--json"] + signing, environment: environment)
        #expect(second.succeeded)
        #expect(try TestSupport.readBytes(expected) == bytes, "same input, patch and RSA key → identical bytes")
    }

    @Test func failureLeavesNoOutputAndNoSecret() throws {
        let input = try FixtureAPK().build(in: dir, name: "small.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("never.apk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--ks", keystore, "--ks-pass", "env:WRONG_PASS"],
                                              environment: ["WRONG_PASS": "not-the-password-123"])
        #expect(result.status != 0)
        #expect(!result.stderr.contains("not-the-password-123") && !result.stdout.contains("not-the-password-123"))
        #expect(!FileManager.default.fileExists(atPath: output))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// A stand-in for a device: an `adb` script on PATH that records its arguments.
    func fakeADB(exitCode: Int32 = 0, output: String = "Success") throws -> (bin: URL, log: URL) {
        let bin = dir.appendingPathComponent("fakebin-\(UUID().uuidString)")
        let log = bin.appendingPathComponent("adb.log")
        let script = """
        #!/bin/sh
        echo "$*" >> "\(log.path)"
        case "$*" in *install*) echo "\(output)" ;; esac
        exit \(exitCode)
        """
        try TestSupport.write(script, to: "adb", in: bin)
        chmod(bin.appendingPathComponent("adb").path, 0o755)
        return (bin, log)
    }

    @Test func installRunsAdbWithTheRightArguments() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "inst.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("inst-out.apk").path
        let adb = try fakeADB()
        var env = environment
        env["PATH"] = adb.bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--install", "--serial", "emulator-5554",
                                               "--launch", "--emit-script", dir.appendingPathComponent("install.sh").path] + signing, environment: env)
        #expect(result.succeeded, "\(result)")
        let log = try String(contentsOf: adb.log, encoding: .utf8)
        // run writes the v4 signature beside the APK, so adb streams it (install --incremental).
        #expect(FileManager.default.fileExists(atPath: output + ".idsig"))
        #expect(log.contains("-s emulator-5554 install -r --incremental \(output)"), "\(log)")
        #expect(log.contains("com.example.cordova"), "launch names the package: \(log)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("install.sh").path))
    }

    @Test("an adb or device without incremental install gets a normal install; --v4-signing-enabled false installs normally at once")
    func incrementalInstallFallsBack() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "incremental.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("incremental-out.apk").path
        // An adb that refuses --incremental as Debian's adb 29 does (an unknown option: a generic failure).
        let bin = dir.appendingPathComponent("fakebin-\(UUID().uuidString)")
        let log = bin.appendingPathComponent("adb.log")
        try TestSupport.write("""
        #!/bin/sh
        echo "$*" >> "\(log.path)"
        case "$*" in *--incremental*) echo "adb: unknown option --incremental" >&2; exit 1 ;; *install*) echo Success ;; esac
        exit 0
        """, to: "adb", in: bin)
        chmod(bin.appendingPathComponent("adb").path, 0o755)
        var env = environment
        env["PATH"] = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--install"] + signing, environment: env)
        #expect(result.succeeded, "\(result)")
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines == ["install -r --incremental \(output)", "install -r \(output)"], "\(lines)")
        #expect(result.stderr.contains("installing the whole APK instead"), "\(result)")

        try FileManager.default.removeItem(at: log)
        let plain = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--install", "--v4-signing-enabled", "false"] + signing,
                                             environment: env)
        #expect(plain.succeeded, "\(plain)")
        #expect(!FileManager.default.fileExists(atPath: output + ".idsig"), "the previous run's .idsig is removed: it would not match")
        #expect(try String(contentsOf: log, encoding: .utf8) == "install -r \(output)\n")
    }

    @Test func installFailureGivesAdviceAndKeepsTheAPK() throws {
        let input = try FixtureAPK().build(in: dir, name: "mismatch.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("mismatch-out.apk").path
        let adb = try fakeADB(exitCode: 1, output: "Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package com.example.fixture signatures do not match newer version; ignoring!]")
        var env = environment
        env["PATH"] = adb.bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--install"] + signing, environment: env)
        #expect(result.status != 0)
        #expect(result.stderr.contains("adb uninstall com.example.fixture"), "\(result)")
        #expect(FileManager.default.fileExists(atPath: output), "the built APK is kept")
    }

    @Test func realAdbWithNoDevice() throws {
        let input = try FixtureAPK().build(in: dir, name: "nodevice.apk")
        let patch = try makePatch()
        let output = dir.appendingPathComponent("nodevice-out.apk").path
        // A private adb server port, so nothing else on the machine is touched; killed afterwards.
        var env = environment
        env["ANDROID_ADB_SERVER_PORT"] = "5439"
        defer { _ = try? TestSupport.run("adb", ["kill-server"], environment: ["ANDROID_ADB_SERVER_PORT": "5439"]) }
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--install"] + signing, environment: env)
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.lowercased().contains("device"), "\(result)")
        #expect(FileManager.default.fileExists(atPath: output))
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
    }
}

/// Watch mode driven by real file edits, with bounded waits.
@Suite(.serialized, .removesTemporaryDirectories) struct WatchTests {
    /// `apkpatch watch` on a Cordova-like APK, its patch directory holding assets/www/index.html ("<p>v1</p>").
    static func startSession(_ label: String) throws -> (dir: URL, patch: URL, output: String, process: Process, lines: LineCollector) {
        let dir = try TestSupport.makeTemporaryDirectory(label)
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "web.apk")
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--debug-keystore", dir.appendingPathComponent("debug.p12").path])
        return (dir, patch, dir.appendingPathComponent("web-patched.apk").path, process, lines)
    }

    @Test func rebuildsOnEditsSurvivesBadEditsAndStopsCleanly() throws {
        let (dir, patch, output, process, lines) = try Self.startSession("watch")
        defer { if process.isRunning { process.terminate() } }

        #expect(lines.waitFor { $0.contains("] built ") }, "first build: \(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<p>v1</p>\n")

        // An editor-style save: write a temp file, rename it over the original.
        try TestSupport.write("<p>v2</p>\n", to: "assets/www/.index.html.swp", in: patch)
        try FileManager.default.removeItem(at: patch.appendingPathComponent("assets/www/.index.html.swp"))
        try TestSupport.write("<p>v2</p>\n", to: "assets/www/index.tmp", in: patch)
        _ = rename(patch.appendingPathComponent("assets/www/index.tmp").path, patch.appendingPathComponent("assets/www/index.html").path)
        #expect(lines.waitFor { $0.contains("rebuilt") && $0.contains("index.html") }, "\(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<p>v2</p>\n")
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
        // Two builds ran on the main thread and the workers: all of them allocate from the main malloc arena.
        let arenas = Self.mallocArenaHeaps(of: process.processIdentifier)
        #expect(arenas.isEmpty, "the session's threads have malloc arenas of their own: \(arenas)")

        // Several files at once, in a new folder.
        try TestSupport.write("a\n", to: "assets/www/extra/a.js", in: patch)
        try TestSupport.write("b\n", to: "assets/www/extra/b.js", in: patch)
        #expect(lines.waitFor { $0.contains("rebuilt") && $0.contains("extra/b.js") }, "\(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/extra/b.js"]).stdout == "b\n")

        // A bad edit: a symlink in the patch dir. The error is printed, the last good APK stays.
        let good = try TestSupport.readBytes(output)
        try FileManager.default.createSymbolicLink(atPath: patch.appendingPathComponent("assets/www/link.js").path, withDestinationPath: "/etc/hostname")
        #expect(lines.waitFor { $0.contains("error") && $0.contains("symbolic link") }, "\(lines.lines)")
        #expect(try TestSupport.readBytes(output) == good)
        try FileManager.default.removeItem(at: patch.appendingPathComponent("assets/www/link.js"))
        #expect(lines.waitFor(3) { $0.contains("rebuilt") }, "recovers after the bad edit: \(lines.lines)")
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)

        process.interrupt()  // SIGINT, as Ctrl-C
        #expect(lines.waitFor { $0.contains("stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// The patch directory removed and made again while watch runs (`rm -rf patch && mkdir patch`, then a save;
    /// editors and `git checkout` do this): the removal is reported, and the next save builds as any save does
    /// (the fuzzer found watch deaf from then on). The rebuilt line times only the stages watch runs: no v4, since
    /// watch writes no .idsig.
    @Test func keepsWatchingAPatchDirectoryMadeAgain() throws {
        let (_, patch, output, process, lines) = try Self.startSession("watch-made-again")
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "first build: \(lines.lines)")

        try TestSupport.write("<p>v2</p>\n", to: "assets/www/index.html", in: patch)
        #expect(lines.waitFor { $0.contains("rebuilt") && $0.contains("index.html") }, "\(lines.lines)")
        let rebuilt = lines.lines.first { $0.contains("rebuilt") } ?? ""
        #expect(rebuilt.contains("repack+sign") && !rebuilt.contains("v4"), "\(rebuilt)")
        #expect(!FileManager.default.fileExists(atPath: output + ".idsig"))

        try FileManager.default.removeItem(at: patch)
        #expect(lines.waitFor { $0.contains("error") && $0.contains("does not exist") }, "\(lines.lines)")
        let builds = lines.lines.filter { $0.contains("rebuilt") }.count
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: false)
        try TestSupport.write("<p>v3</p>\n", to: "assets/www/index.html", in: patch)
        #expect(lines.waitFor(builds + 1) { $0.contains("rebuilt") }, "the save into the new folder builds: \(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<p>v3</p>\n")

        process.interrupt()
        #expect(lines.waitFor { $0.contains("stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// The heaps of glibc's malloc arenas other than the main one, from `/proc/PID/maps`: each is an anonymous
    /// mapping aligned to 64 MiB (HEAP_MAX_SIZE), its used part read-write and the rest of the 64 MiB reserved
    /// without access (`---p`), as glibc's `new_heap` makes it.
    static func mallocArenaHeaps(of pid: Int32) -> [String] {
        let heapSize: UInt64 = 64 << 20
        guard let maps = try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8) else { return ["/proc/\(pid)/maps unreadable"] }
        let regions: [(start: UInt64, end: UInt64, permissions: Substring, isAnonymous: Bool, line: Substring)] = maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let bounds = fields.first?.split(separator: "-") ?? []
            guard fields.count >= 5, bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16) else { return nil }
            return (start, end, fields[1], fields.count == 5 && fields[4] == "0", line)
        }
        var heaps: [String] = []
        for (index, region) in regions.enumerated() where region.isAnonymous && region.permissions == "rw-p" && region.start % heapSize == 0 {
            let end = index + 1 < regions.count && regions[index + 1].isAnonymous && regions[index + 1].permissions == "---p"
                && regions[index + 1].start == region.end ? regions[index + 1].end : region.end
            if end - region.start == heapSize { heaps.append(String(region.line)) }
        }
        return heaps
    }
}

/// The inotify watcher on its own: deterministic cases the end-to-end watch test can only hit by chance.
@Suite(.removesTemporaryDirectories) struct DirectoryWatcherTests {
    /// A folder and its files created before the watcher reads the folder's creation event: the files got no
    /// events of their own (there was no watch on the folder yet), so the watcher must find them when it adds
    /// the watch. (CI once missed `extra/b.js` this way: no rebuild for a new folder written in one go.)
    @Test func filesInANewFolderWrittenBeforeItsWatchAreReported() throws {
        let dir = try TestSupport.makeTemporaryDirectory("watcher")
        let watcher = try DirectoryWatcher(root: dir.path)
        try TestSupport.write("a\n", to: "extra/a.js", in: dir)
        try TestSupport.write("b\n", to: "extra/deeper/b.js", in: dir)
        var changed = Set<String>()
        let deadline = Date().addingTimeInterval(10)
        while !changed.isSuperset(of: ["extra/a.js", "extra/deeper/b.js"]) && Date() < deadline {
            changed.formUnion(try watcher.waitForChanges(quietPeriodMilliseconds: 50, timeoutMilliseconds: 1000))
        }
        #expect(changed.isSuperset(of: ["extra/a.js", "extra/deeper/b.js"]), "\(changed)")
        // Later writes into the new folders are seen through their own watches.
        try TestSupport.write("c\n", to: "extra/deeper/c.js", in: dir)
        var later = Set<String>()
        while !later.contains("extra/deeper/c.js") && Date() < deadline {
            later.formUnion(try watcher.waitForChanges(quietPeriodMilliseconds: 50, timeoutMilliseconds: 1000))
        }
        #expect(later.contains("extra/deeper/c.js"), "\(later)")
    }

    /// A folder moved out of the tree is unwatched with every folder below it, found by the paths' bytes: its
    /// subfolder "\u{301}sub" (a combining mark after the slash, which a Character joins to it) kept its watch,
    /// and saves where the folder went were reported as the tree's.
    @Test func aFolderMovedOutIsUnwatchedWithSubfoldersNamedWithMarks() throws {
        let base = try TestSupport.makeTemporaryDirectory("watcher-moved")
        let dir = base.appendingPathComponent("tree")
        try TestSupport.write("a\n", to: "www/\u{301}sub/a.js", in: dir)
        let watcher = try DirectoryWatcher(root: dir.path)
        #expect(rename(dir.appendingPathComponent("www").path, base.appendingPathComponent("elsewhere").path) == 0)
        let deadline = Date().addingTimeInterval(10)
        var moved = Set<String>()
        while !moved.contains("www") && Date() < deadline {
            moved.formUnion(try watcher.waitForChanges(quietPeriodMilliseconds: 50, timeoutMilliseconds: 1000))
        }
        #expect(moved == ["www"], "\(moved)")
        try TestSupport.write("x\n", to: "elsewhere/\u{301}sub/outside.js", in: base)
        try TestSupport.write("y\n", to: "inside.txt", in: dir)
        var later = Set<String>()
        while !later.contains("inside.txt") && Date() < deadline {
            later.formUnion(try watcher.waitForChanges(quietPeriodMilliseconds: 50, timeoutMilliseconds: 1000))
        }
        #expect(later == ["inside.txt"], "saves where the folder went are not the tree's: \(later)")
    }
}

/// `run` without `--out` writes beside the input, named after it.
@Suite struct DefaultOutputNameTests {
    /// The input's ".apk" is found by its bytes: "x\u{600}.apk" (a Prepend mark joins the dot in a Character)
    /// gives "x\u{600}-patched.apk", not "x\u{600}.apk-patched.apk".
    @Test func theInputsExtensionIsFoundByItsBytes() {
        #expect(PipelineOptions(input: "d/x\u{600}.apk", patchDirectory: "p").resolvedOutput == "d/x\u{600}-patched.apk")
        #expect(PipelineOptions(input: "d/app.apk", patchDirectory: "p").resolvedOutput == "d/app-patched.apk")
        #expect(PipelineOptions(input: "d/app", patchDirectory: "p").resolvedOutput == "d/app-patched.apk")
    }
}
