import CommandFuzz
import Foundation
import Testing
import TestSupport

/// Regressions for what the command fuzzer (`make fuzz`, CommandFuzzTests) found, each input rebuilt at test time
/// from an aapt-built APK the way the fuzzer made it.
@Suite(.removesTemporaryDirectories) struct CommandFuzzFindingsTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("command-fuzz-findings") }

    /// An APK whose compiled XML resource `entry` is replaced by `content` (stored, CRC-32 right), as the fuzzer's
    /// nested mutations re-pack it.
    func apk(replacing entry: String, with edit: ([UInt8]) -> [UInt8]) throws -> String {
        var fixture = FixtureAPK()
        fixture.resources = [
            "xml/config.xml": Array("<widget id=\"x\"><content src=\"index.html\"/></widget>".utf8),
            "layout/main.xml": Array("<LinearLayout xmlns:android=\"http://schemas.android.com/apk/res/android\" android:orientation=\"vertical\"/>".utf8),
        ]
        let built = try fixture.build(in: dir, name: "built.apk")
        let repacker = try EntryRepacker(archive: TestSupport.readBytes(built), entry: entry)
        let path = dir.appendingPathComponent("damaged.apk").path
        try Data(repacker.repack(with: edit(repacker.content))).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Found: `decode` wrote the manifest and the layout, then failed on res/xml/config.xml (60 bytes cut from
    /// its middle) and left them: a half-decoded directory. Now nothing is written unless every file decodes.
    @Test func decodeWritesNothingWhenAFileDoesNotDecode() throws {
        let input = try apk(replacing: "res/xml/config.xml") { bytes in
            var cut = bytes
            cut.removeSubrange((bytes.count / 2)..<min(bytes.count, bytes.count / 2 + 60))
            return cut
        }
        let output = dir.appendingPathComponent("decoded")
        let result = try boundedApkpatch(["decode", input, "-o", output.path])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("res/xml/config.xml"), "the error names the file: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "partial output: \(snapshot(output).sorted())")
        // Into an existing directory (an unpacked APK): left as it was.
        try TestSupport.write("kept", to: "assets/kept.txt", in: output)
        let again = try boundedApkpatch(["decode", input, "-o", output.path])
        #expect(again.status == 1, "\(again)")
        #expect(snapshot(output) == ["assets", "assets/kept.txt"], "\(snapshot(output).sorted())")
    }

    /// Found by the refusal runs: `run` on a split APK set started loading the key on another thread, then refused
    /// a device spec the fuzzer had damaged (Inputs/FuzzCommands/device-spec-damaged.json) and exited while that
    /// thread was still in OpenSSL, whose exit handlers freed what it used: about 1 run in 10 died by signal 11
    /// after printing the error (a worker thread crashed in pthread_rwlock_rdlock on a lock OPENSSL_cleanup had
    /// freed). `sign` on a set refusing a bad value did it too. As in ExitDuringBackgroundWorkTests
    /// (which covers one APK), what makes the crash impossible is that the process waits for the key before it
    /// exits, checked by CPU time: each refusal with the slow keystore costs about what opening it costs.
    @Test func setRefusalsWaitForTheKeyBeforeExiting() throws {
        let seeds = try CommandFuzzTests.seeds.get()
        let keys = ["--ks", seeds.path("slow.p12"), "--ks-pass", "pass:\(Seeds.password)"]
        let (listed, derivation) = try ExitDuringBackgroundWorkTests.apkpatchWithCPUTime(["keystore", "list"] + keys)
        try #require(listed.succeeded, "\(listed)")
        let out = dir.appendingPathComponent("out").path
        let spec = FuzzRegressionTests.inputs.appendingPathComponent("FuzzCommands/device-spec-damaged.json").path
        let refusals: [(String, [String], String)] = [
            ("run, damaged device spec", ["run", seeds.path("set.apks"), "--patch", seeds.path("empty-patch"), "--out", out + ".apks", "--device-spec", spec,
                                          "--emit-script", out + ".sh"] + keys, "device-spec-damaged.json"),
            ("sign, bad --min-sdk-version", ["sign"] + keys + ["--out", out + ".apks", "--min-sdk-version", "x", seeds.path("set.apks")], "'x' is invalid"),
            ("run, missing patch directory", ["run", seeds.path("set.apks"), "--patch", dir.appendingPathComponent("missing").path, "--out", out + ".apks"] + keys,
             "missing"),
        ]
        for (label, arguments, message) in refusals {
            let (refused, cpu) = try ExitDuringBackgroundWorkTests.apkpatchWithCPUTime(arguments)
            let crash = refused.stderr.split(separator: "\n").first(where: Campaign.isCrashReport)
            #expect([1, 64].contains(refused.status) && refused.stderr.contains(message) && crash == nil, "\(label): \(refused)")
            #expect(cpu > derivation / 2, "\(label): the refusal used \(cpu) s of CPU, opening the keystore \(derivation) s: it exited before the key was loaded")
            #expect(snapshot(dir).allSatisfy { !$0.hasPrefix("out") }, "\(label): nothing is written: \(snapshot(dir).sorted())")
        }
    }

    /// Found by the install runs (the fake adb answering as HostileADB says): `merge --install` exited 0 when adb
    /// failed (the merged APK's install error was dropped), and `run SET --install` ended with the bare error: no
    /// summary, no `--json` object, and "The APK is kept at" a staging file already removed (the advice's adb line
    /// still named it: a container's install line was that of its staged APKs). Both must report as
    /// `run APK --install` does: the summary (or JSON with installed false and the error), the error naming what is
    /// kept, exit status 1.
    @Test func failedSetAndMergeInstallsReportAndExitNonZero() throws {
        let seeds = try CommandFuzzTests.seeds.get()
        let adb = try FakeADB()
        var environment = adb.environment(install: .init(standardError: "adb: device unauthorized.\n", status: 1),
                                          shell: .init(standardOutput: "abis=arm64-v8a\nlocales=en-US\nsdk=33\nPhysical density: 480\n"))
        environment[Seeds.passwordVariable] = Seeds.password
        let keys = ["--ks", seeds.path("ks.p12")] + Seeds.keyOptions
        let merged = dir.appendingPathComponent("merged.apk").path, set = dir.appendingPathComponent("out.apks").path
        // What is kept: the merged APK, or the signed set (not one of its APKs).
        let commands: [(String, [String], String)] = [
            ("merge", ["merge", seeds.path("set.apks"), "--out", merged, "--install"] + keys, "The APK is kept at \(merged)."),
            ("run SET", ["run", seeds.path("set.apks"), "--patch", seeds.path("empty-patch"), "--out", set, "--install"] + keys,
             "The signed set is kept in \(set)."),
        ]
        for (label, arguments, kept) in commands {
            let output = label == "merge" ? merged : set
            let text = try TestSupport.apkpatch(arguments, environment: environment)
            #expect(text.status == 1, "\(label): \(text)")
            #expect(text.stdout.contains("Wrote ") && text.stdout.contains("Not installed"), "\(label): the summary comes first: \(text)")
            #expect(text.stderr.contains("device unauthorized") && text.stderr.contains(kept), "\(label): \(text)")
            #expect(FileManager.default.fileExists(atPath: output), "\(label): the output is kept")
            let json = try TestSupport.apkpatch(arguments + ["--json"], environment: environment)
            #expect(json.status == 1, "\(label) --json: \(json)")
            let object = try #require(try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(label) --json: \(json)")
            #expect(object["installed"] as? Bool == false, "\(label) --json: \(json.stdout)")
            #expect((object["installError"] as? [String: Any])?["code"] as? String == "DEVICE_UNAUTHORIZED", "\(label) --json: \(json.stdout)")
        }
    }

    /// Found by the install runs (seed 1795766930, case 59): the device adb read (`sdk=1`) fits none of the
    /// .apks's variants (its toc.pb starts at SDK 15), and `run SET --install --json` ended with the bare error and
    /// no JSON object, although the set was written. It is a failed install like any other: the summary (or the
    /// JSON, installed false, OLDER_SDK), the reason, what is kept, exit status 1.
    @Test func aDeviceNoVariantFitsIsAFailedInstall() throws {
        let seeds = try CommandFuzzTests.seeds.get()
        let adb = try FakeADB()
        var environment = adb.environment(shell: .init(standardOutput: "abis=x86_64\nlocales=en-US\nsdk=1\nPhysical density: 480\n"))
        environment[Seeds.passwordVariable] = Seeds.password
        let set = dir.appendingPathComponent("unfit.apks").path
        let arguments = ["run", seeds.path("set.apks"), "--patch", seeds.path("empty-patch"), "--out", set, "--install", "--ks", seeds.path("ks.p12")] + Seeds.keyOptions
        let text = try TestSupport.apkpatch(arguments, environment: environment)
        #expect(text.status == 1 && text.stdout.contains("Wrote ") && text.stdout.contains("Not installed"), "\(text)")
        #expect(text.stderr.contains("fits the device (SDK 1") && text.stderr.contains("The signed set is kept in \(set)."), "\(text)")
        #expect(FileManager.default.fileExists(atPath: set), "the set is kept")
        let json = try TestSupport.apkpatch(arguments + ["--json"], environment: environment)
        let object = try #require(try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(json.status == 1 && object["installed"] as? Bool == false, "\(json)")
        #expect((object["installError"] as? [String: Any])?["code"] as? String == "OLDER_SDK", "\(json.stdout)")
        #expect(try adb.invocations().allSatisfy { !$0.contains("install-multiple") && !$0.contains("install") }, "adb install ran")
    }

    /// Found by the install runs: adb printing 3 MiB with no line end (Inputs/FuzzCommands/adb-hook-3mb-line.sh)
    /// kept `merge --install` busy past the fuzzer's 60 s timeout (debug build): each 4 KiB read searched the whole
    /// unfinished line again for its end. Only the new bytes may be searched: the run must cost about what it
    /// costs without the output (the bound leaves room for a debug build on a loaded machine).
    @Test func aHugeLineFromADBCostsItsLength() throws {
        let seeds = try CommandFuzzTests.seeds.get()
        let adb = try FakeADB()
        var environment = adb.environment()
        environment["FAKE_ADB_HOOK"] = FuzzRegressionTests.inputs.appendingPathComponent("FuzzCommands/adb-hook-3mb-line.sh").path
        environment[Seeds.passwordVariable] = Seeds.password
        let out = dir.appendingPathComponent("merged.apk").path
        let script = #""$@"; status=$?; times >&2; exit $status"#
        let result = try TestSupport.run("bash", ["-c", script, "bash", TestSupport.apkpatchBinary, "merge", seeds.path("set.apks"), "--out", out, "--install",
                                                  "--ks", seeds.path("ks.p12")] + Seeds.keyOptions, environment: environment)
        #expect(result.status == 1 && result.stderr.contains("Install failed") && result.stderr.contains("…"), "\(result.stdout)\n\(result.stderr.prefix(2000))")
        let children = try #require(result.stderr.split(separator: "\n").last)
        let cpu = children.split(separator: " ").map { field -> Double in
            let parts = field.dropLast().split(separator: "m")
            return (Double(parts.first ?? "") ?? 0) * 60 + (Double(parts.last ?? "") ?? 0)
        }.reduce(0, +)
        #expect(cpu < 10, "merge --install used \(cpu) s of CPU for 3 MiB of adb output")
        #expect(result.stderr.utf8.count < 64 << 10, "the error quotes adb's line cut, not whole: \(result.stderr.utf8.count) bytes")
    }

    /// Found by hand while fixing the fuzz findings (the fuzzer took FoundationEssentials' `CocoaError(...)` dumps
    /// for messages): paths the user names that cannot be written or read. `--emit-script` into a missing folder
    /// printed a dump after the APK was written (exit 1, the APK left); `--keep-stages`, `decode -o` and
    /// `ci-template --output` on a file, and `--ca-cert` or `--device-spec` that is missing, a FIFO or a folder
    /// printed dumps. Each now says what is wrong, and a script path is refused before anything is built.
    @Test func pathsThatCannotBeUsedAreRefusedInWords() throws {
        let seeds = try CommandFuzzTests.seeds.get()
        let file = dir.appendingPathComponent("a-file").path
        try TestSupport.write("x", to: "a-file", in: dir)
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let out = dir.appendingPathComponent("out.apk").path, outSet = dir.appendingPathComponent("out.apks").path
        let run = ["run", seeds.path("app.apk"), "--patch", seeds.path("empty-patch"), "--out", out, "--ks", seeds.path("ks.p12")] + Seeds.keyOptions
        let runSet = ["run", seeds.path("set.apks"), "--patch", seeds.path("empty-patch"), "--out", outSet, "--ks", seeds.path("ks.p12")] + Seeds.keyOptions
        let cases: [([String], String)] = [
            (run + ["--emit-script", dir.appendingPathComponent("missing/install.sh").path], "cannot write the install script"),
            (run + ["--emit-script", dir.path], "it is a directory"),
            (runSet + ["--emit-script", dir.appendingPathComponent("missing/install.sh").path], "the folder"),
            (run + ["--keep-stages", file], "a file of that name is in the way"),
            (run + ["--trust-user-certs", "--ca-cert", dir.appendingPathComponent("missing.pem").path], "No such file"),
            (run + ["--trust-user-certs", "--ca-cert", fifo], "FIFO"),
            (runSet + ["--device-spec", fifo], "FIFO"),
            (runSet + ["--device-spec", dir.path], "a directory"),
            (["decode", seeds.path("app.apk"), "-o", file], "it is a file"),
            (["ci-template", "github", "--output", file + "/ci.yml"], "a file of that name is in the way"),
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[Seeds.passwordVariable] = Seeds.password
        for (arguments, message) in cases {
            let result = try TestSupport.run("timeout", ["-s", "KILL", "60", TestSupport.apkpatchBinary] + arguments, environment: environment)
            #expect(result.status == 1 && result.stderr.contains(message), "\(arguments.suffix(2)): \(result)")
            #expect(!result.stderr.contains("CocoaError") && !result.stderr.contains("POSIXError"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: outSet), "written: \(arguments.suffix(2))")
        }
        #expect(try TestSupport.readBytes(file) == Array("x".utf8))
    }

    /// Found: a manifest with its resource map chunk given twice (the fuzzer repeated it) was signed, and `apksigner
    /// verify` then refused the output: apksig's manifest parser throws on a second resource map ("Multiple resource
    /// maps not supported", wherever the map lies: it reads every element for the largest <uses-sdk>), so it cannot
    /// tell the minSdkVersion. Android's ResXMLTree reads the APK (it keeps the last map before the first node), so
    /// `sign` does what apksigner does: it asks for --min-sdk-version.
    @Test func aSecondResourceMapNeedsTheMinSdkVersionAsApksignerDoes() throws {
        func chunks(_ xml: [UInt8]) -> [(type: UInt16, range: Range<Int>)] {
            func u16(_ at: Int) -> Int { Int(xml[at]) | Int(xml[at + 1]) << 8 }
            var found: [(type: UInt16, range: Range<Int>)] = []
            var offset = u16(2)
            while offset + 8 <= xml.count {
                let size = u16(offset + 4) | u16(offset + 6) << 16
                guard size >= 8 else { break }
                found.append((UInt16(u16(offset)), offset..<(offset + size)))
                offset += size
            }
            return found
        }
        /// The manifest with a copy of its resource map inserted before chunk `before(chunks)`.
        func secondMap(before: @escaping ([(type: UInt16, range: Range<Int>)]) -> Int) -> ([UInt8]) -> [UInt8] {
            { xml in
                let list = chunks(xml)
                guard let map = list.first(where: { $0.type == 0x0180 }) else { return xml }
                var edited = xml
                edited.insert(contentsOf: xml[map.range], at: list[before(list)].range.lowerBound)
                let size = UInt32(edited.count)
                for byte in 0..<4 { edited[4 + byte] = UInt8(truncatingIfNeeded: size >> (8 * UInt32(byte))) }
                return edited
            }
        }
        let seeds = try CommandFuzzTests.seeds.get()
        var environment = ProcessInfo.processInfo.environment
        environment[Seeds.passwordVariable] = Seeds.password
        let keys = ["--ks", seeds.path("ks.p12")] + Seeds.keyOptions
        func sign(_ input: String, _ name: String, _ options: [String] = []) throws -> (TestSupport.ProcessResult, String) {
            let out = dir.appendingPathComponent(name).path
            return (try TestSupport.apkpatch(["sign", "--out", out] + keys + options + [input], environment: environment), out)
        }

        let inputs = [
            // Right after the first map, and before the last chunk (</manifest>), after <uses-sdk>.
            ("early", try apk(replacing: "AndroidManifest.xml", with: secondMap { list in list.firstIndex { $0.type == 0x0180 }! + 1 })),
            ("late", try apk(replacing: "AndroidManifest.xml", with: secondMap { list in list.count - 1 })),
        ].map { name, path in
            let copy = dir.appendingPathComponent("\(name).apk").path
            try? FileManager.default.copyItem(atPath: path, toPath: copy)
            return copy
        }
        for input in inputs {
            let (refused, refusedOut) = try sign(input, "refused.apk")
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stderr.contains("second resource map") && refused.stderr.contains("--min-sdk-version"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: refusedOut))
            let apksigner = try TestSupport.run("apksigner", ["sign", "--out", dir.appendingPathComponent("apksigner.apk").path] + keys + [input],
                                                environment: environment)
            #expect(!apksigner.succeeded && apksigner.stderr.contains("minimum supported platform version"), "apksigner: \(apksigner)")
            let (given, givenOut) = try sign(input, "given.apk", ["--min-sdk-version", "21"])
            #expect(given.succeeded, "\(given)")
            let verify = try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "21", givenOut])
            #expect(verify.succeeded, "\(verify)")
            try? FileManager.default.removeItem(atPath: givenOut)
        }
    }
}
