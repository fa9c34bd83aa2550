import Foundation
import Sets
import Testing
import TestSupport

/// bundletool `.apks` files holding standalone APKs (`standalones/`, for devices below Android 5.0) beside the
/// splits: signed, patched and verified with them, installed as bundletool's `install-apks` chooses; judged by
/// apksigner, aapt, unzip and the fake adb.
@Suite(.serialized, .removesTemporaryDirectories) struct SetStandaloneTests {
    let scratch: URL
    let fixture: StandaloneSetFixture
    let keystore: String

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-standalones")
        fixture = try StandaloneSetFixture(in: scratch)
        keystore = scratch.appendingPathComponent("debug.p12").path
    }

    /// Entry names of a ZIP in order, per `unzip -Z1`.
    func entryNames(_ archive: String) throws -> [String] {
        let listed = try TestSupport.run("unzip", ["-Z1", archive])
        guard listed.succeeded else { throw FixtureError(message: "unzip -Z1 failed:\n\(listed)") }
        return listed.stdout.split(separator: "\n").map(String.init)
    }

    /// `name` out of `archive`, per `unzip -p`.
    func entry(_ archive: String, _ name: String) throws -> [UInt8] {
        let folder = scratch.appendingPathComponent("extract-\(UUID().uuidString)")
        let unzipped = try TestSupport.run("unzip", ["-q", archive, name, "-d", folder.path])
        guard unzipped.succeeded else { throw FixtureError(message: "unzip \(name) failed:\n\(unzipped)") }
        return try TestSupport.readBytes(folder.appendingPathComponent(name).path)
    }

    /// `run input --device-spec SPEC --emit-script … --json` (patched with `patch`, else an empty patch) into
    /// `output`: the APKs chosen for the device (`installedAPKs`), or nil with the failure recorded.
    func installedAPKs(_ input: String, device specJSON: String, output: String, patch: String? = nil) throws -> [String]? {
        let spec = scratch.appendingPathComponent("device-\(UUID().uuidString).json").path
        try Data(specJSON.utf8).write(to: URL(fileURLWithPath: spec))
        let empty = scratch.appendingPathComponent("empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch ?? empty.path, "--out", output, "--debug-keystore", keystore,
                                            "--device-spec", spec, "--emit-script", scratch.appendingPathComponent("s.sh").path, "--json"])
        #expect(run.succeeded, "\(run)")
        let report = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        return report?["installedAPKs"] as? [String]
    }

    /// Every APK of `output` verified by apksigner, each by the one certificate; returns entry name → path.
    func checkSignedByOneKey(_ output: String, secondSplitVariant: Bool = false) throws -> [String: String] {
        let apks = try SetOracles.apkFiles(of: output, form: .apks, scratch: scratch)
        let expected = StandaloneSetFixture.splitNames + (secondSplitVariant ? StandaloneSetFixture.secondVariantNames : []) + StandaloneSetFixture.standaloneNames
        #expect(Set(apks.keys) == Set(expected), "\(apks.keys.sorted())")
        let certificates = try Set(apks.values.map(SetOracles.certificateSHA256))
        #expect(certificates.count == 1, "\(certificates)")
        for name in StandaloneSetFixture.standaloneNames {
            let badging = try SetOracles.badging(apks[name] ?? "")
            #expect(badging.contains("name='com.example.set' versionCode='7'") && !badging.contains("split="), "\(name): \(badging)")
        }
        return apks
    }

    @Test func signReSignsTheStandalonesInPlace() throws {
        let input = try fixture.pack(in: scratch)
        let output = scratch.appendingPathComponent("signed.apks").path
        let result = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", output, input, "--json"])
        #expect(result.succeeded, "\(result)")
        _ = try checkSignedByOneKey(output)
        #expect(try entryNames(output) == entryNames(input))
        #expect(try entry(output, "toc.pb") == StandaloneSetFixture.toc(), "toc.pb changed")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let apks = json?["apks"] as? [[String: Any]] ?? []
        #expect(apks.count == 9, "\(result.stdout)")
        #expect(apks.filter { $0["standalone"] as? Bool == true }.compactMap { $0["name"] as? String } == StandaloneSetFixture.standaloneNames.sorted())
        #expect(apks.allSatisfy { $0["verified"] as? Bool == true })

        let verified = try TestSupport.apkpatch(["verify", output, "--json"])
        #expect(verified.succeeded, "\(verified)")
        let report = try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any]
        let members = report?["apks"] as? [[String: Any]] ?? []
        #expect(members.filter { $0["standalone"] as? Bool == true }.count == 4, "\(verified.stdout)")
        #expect(members.filter { $0["standalone"] == nil }.compactMap { $0["split"] as? String }.sorted()
                == ["base", "config.arm64_v8a", "config.fr", "config.x86", "config.xhdpi_v4"])
    }

    /// A standalone signed by another key, or of another release, is caught: verify names it, sign refuses it.
    @Test func aStandaloneThatIsNotTheSameAppIsCaught() throws {
        let signed = scratch.appendingPathComponent("one-key.apks").path
        #expect(try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", signed, fixture.pack(in: scratch)]).succeeded)
        let odd = "standalones/standalone-x86_mdpi.apk"
        let other = scratch.appendingPathComponent("other-key.apk").path
        #expect(try TestSupport.apkpatch(["sign", "--debug-keystore", scratch.appendingPathComponent("other.p12").path,
                                          "--out", other, fixture.entries[odd]!]).succeeded)
        let mixed = scratch.appendingPathComponent("mixed.apks").path
        let extracted = try SetOracles.apkFiles(of: signed, form: .apks, scratch: scratch)
        var layout = fixture
        layout.entries = extracted
        _ = try layout.pack(in: scratch, name: "mixed.apks", replacing: [odd: other])
        let verified = try TestSupport.apkpatch(["verify", mixed])
        #expect(!verified.succeeded, "\(verified)")
        #expect(verified.stderr.contains("\(odd) is signed by certificate SHA-256") && verified.stderr.contains("signatures are inconsistent"), "\(verified)")

        let newer = try StandaloneSetFixture(in: scratch, standaloneVersionCode: 8)
        let release = try fixture.pack(in: scratch, replacing: [odd: newer.entries[odd]!])
        let output = scratch.appendingPathComponent("never.apks").path
        let refused = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", output, release])
        #expect(!refused.succeeded && refused.stderr.contains("\(odd) has versionCode 8, but the base"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: output))
        // toc.pb must describe every standalone: one it does not is refused before anything is written.
        let undescribed = try fixture.pack(in: scratch, toc: StandaloneSetFixture.toc(omitting: [odd]))
        let refusedTOC = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", output, undescribed])
        #expect(!refusedTOC.succeeded && refusedTOC.stderr.contains("toc.pb does not describe the standalone APK \"\(odd)\""), "\(refusedTOC)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func runPatchesTheStandalonesAsTheBaseAndTheSplitsTheyFuse() throws {
        let patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("hello", to: "assets/new.txt", in: patch)
        let arm64 = FixtureAPK.pseudoRandomBytes(count: 3000, seed: 99)
        try TestSupport.write(arm64, to: "splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so", in: patch)
        try TestSupport.write(arm64, to: "splits/config.arm64_v8a/lib/arm64-v8a/libnew.so", in: patch)
        try TestSupport.write("<resources><string name=\"hello\">Salut</string></resources>", to: "splits/config.fr/res/values-fr/strings.xml", in: patch)
        try TestSupport.write("xhdpi", to: "splits/config.xhdpi_v4/assets/density.txt", in: patch)
        let input = try fixture.pack(in: scratch)
        let output = scratch.appendingPathComponent("patched.apks").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        let apks = try checkSignedByOneKey(output)
        #expect(try entryNames(output) == entryNames(input))
        #expect(try entry(output, "toc.pb") == StandaloneSetFixture.toc())
        for name in StandaloneSetFixture.standaloneNames {
            let path = apks[name]!
            #expect(try entry(path, "assets/new.txt") == Array("hello".utf8), "\(name)")
            let names = try entryNames(path)
            // The arm64 split's patch reaches the arm64 standalones only; the x86 ones keep their library.
            if name.contains("arm64") {
                #expect(try entry(path, "lib/arm64-v8a/libfoo.so") == arm64 && names.contains("lib/arm64-v8a/libnew.so"), "\(name)")
            } else {
                #expect(!names.contains { $0.hasPrefix("lib/arm64-v8a/") }, "\(name): \(names)")
                #expect(try entry(path, "lib/x86/libfoo.so") == StandaloneSetFixture.library("x86"), "\(name)")
            }
            #expect(names.contains("assets/density.txt") == name.hasSuffix("_xhdpi.apk"), "\(name): \(names)")
            // The French split's strings override is in every standalone's table.
            let values = try TestSupport.run("aapt", ["dump", "--values", "resources", path])
            #expect(values.stdout.contains("\"Salut\"") && !values.stdout.contains("\"Bonjour\""), "\(name)")
        }
        #expect(try entry(apks["splits/base-arm64_v8a.apk"]!, "lib/arm64-v8a/libfoo.so") == arm64)
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)
    }

    /// An ABI split's patch reaches the standalones that hold that ABI's libraries, told by the names' bytes as
    /// Android finds them (NativeLibraryHelper, "lib/<abi>/"): a standalone whose only arm64 library is
    /// "lib/arm64-v8a/\u{301}libfoo.so" holds lib/arm64-v8a/, where a Character joins the mark to the slash (and the
    /// patch left that standalone out).
    @Test func anABISplitsPatchReachesAStandaloneByItsLibrariesBytes() throws {
        let odd = "standalones/standalone-arm64_v8a_mdpi.apk"
        let renamed = scratch.appendingPathComponent("renamed-library.apk").path
        let python = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1]) as old, zipfile.ZipFile(sys.argv[2], 'w') as new:
                for info in old.infolist():
                    name = 'lib/arm64-v8a/\\u0301libfoo.so' if info.filename == 'lib/arm64-v8a/libfoo.so' else info.filename
                    new.writestr(zipfile.ZipInfo(name, info.date_time), old.read(info.filename), compress_type=info.compress_type)
            """
        let rewritten = try TestSupport.run("python3", ["-c", python, fixture.entries[odd]!, renamed])
        #expect(rewritten.succeeded, "\(rewritten)")
        let patch = scratch.appendingPathComponent("abi-patch")
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 2000, seed: 98), to: "splits/config.arm64_v8a/lib/arm64-v8a/libnew.so", in: patch)
        let output = scratch.appendingPathComponent("abi-patched.apks").path
        let result = try TestSupport.apkpatch(["run", fixture.pack(in: scratch, replacing: [odd: renamed]), "--patch", patch.path,
                                               "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        let apks = try SetOracles.apkFiles(of: output, form: .apks, scratch: scratch)
        let names = try entryNames(try #require(apks[odd]))
        #expect(names.contains("lib/arm64-v8a/libnew.so") && names.contains("lib/arm64-v8a/\u{301}libfoo.so"), "\(names)")
        #expect(try !entryNames(try #require(apks["standalones/standalone-x86_mdpi.apk"])).contains("lib/arm64-v8a/libnew.so"))
    }

    /// What a standalone cannot take is refused with the reason, and nothing is written.
    @Test func runRefusesAPatchAStandaloneCannotTake() throws {
        let input = try fixture.pack(in: scratch)
        let cases: [(String, String, String)] = [
            ("splits/config.fr/\("apkpatch.yml")", "manifest:\n  debuggable: true\n", "edits the split \"config.fr\" itself"),
            ("splits/config.arm64_v8a/resources.arsc", "x", "replaces the split's own resources.arsc"),
            ("resources.arsc", "x", "the patch replaces the base's whole resources.arsc"),
        ]
        for (file, content, message) in cases {
            let patch = scratch.appendingPathComponent("bad-\(UUID().uuidString)")
            try TestSupport.write(content, to: file, in: patch)
            let output = scratch.appendingPathComponent("refused.apks").path
            let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore])
            #expect(!result.succeeded && result.stderr.contains(message) && result.stderr.contains("a bundletool standalone APK"), "\(file): \(result)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(file)")
        }
    }

    /// bundletool's install-apks gives a device below API 21 the standalone for its ABI and density, and any
    /// later device the splits.
    @Test func installChoosesAStandaloneOnlyBelowAPI21() throws {
        let input = try fixture.pack(in: scratch)
        let output = scratch.appendingPathComponent("installed.apks").path
        let empty = scratch.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let old = FakeADB.Reply(standardOutput: "abis=x86\nlocales=en-US,\nsdk=19\nPhysical density: 280\n")
        let adb = try FakeADB()
        let run = try TestSupport.apkpatch(["run", input, "--patch", scratch.appendingPathComponent("empty").path, "--out", output,
                                            "--debug-keystore", keystore, "--install", "--json"], environment: adb.environment(shell: old))
        #expect(run.succeeded, "\(run)")
        let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        // 280 dpi: of mdpi (160) and xhdpi (320), Android's resource matching prefers scaling xhdpi down.
        #expect(json?["installedAPKs"] as? [String] == ["standalones/standalone-x86_xhdpi.apk"], "\(run.stdout)")
        let calls = try adb.invocations()
        #expect(calls.count == 2 && calls[1].first == "install" && calls[1].count == 3 && calls[1][1] == "-r", "\(calls)")

        let specs: [(String, [String])] = [
            (#"{"supportedAbis": ["arm64-v8a"], "supportedLocales": ["fr-FR"], "screenDensity": 160, "sdkVersion": 19}"#,
             ["standalones/standalone-arm64_v8a_mdpi.apk"]),
            (#"{"supportedAbis": ["arm64-v8a"], "supportedLocales": ["fr-FR"], "screenDensity": 160, "sdkVersion": 30}"#,
             ["splits/base-master.apk", "splits/base-arm64_v8a.apk", "splits/base-fr.apk", "splits/base-xhdpi.apk"]),
        ]
        for (text, expected) in specs {
            let spec = scratch.appendingPathComponent("device-\(UUID().uuidString).json").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: spec))
            let script = scratch.appendingPathComponent("install-\(UUID().uuidString).sh").path
            let chosen = try TestSupport.apkpatch(["run", input, "--patch", scratch.appendingPathComponent("empty").path, "--out", output,
                                                   "--debug-keystore", keystore, "--device-spec", spec, "--emit-script", script, "--json"])
            #expect(chosen.succeeded, "\(chosen)")
            let report = try JSONSerialization.jsonObject(with: Data(chosen.stdout.utf8)) as? [String: Any]
            #expect(report?["installedAPKs"] as? [String] == expected, "\(chosen.stdout)")
            let scriptADB = try FakeADB()
            let ran = try TestSupport.run("sh", [script], environment: scriptADB.environment())
            #expect(ran.succeeded, "\(ran)")
            let installs = try scriptADB.invocations()
            #expect(installs.count == 1 && installs[0].first == (expected.count == 1 ? "install" : "install-multiple"), "\(installs)")
            #expect(installs.first.map { $0.dropFirst(2).map { ($0 as NSString).lastPathComponent } } == expected.map { ($0 as NSString).lastPathComponent }, "\(installs)")
        }
        // A device below every variant's SDK version: refused before anything is written.
        let spec = scratch.appendingPathComponent("too-old.json").path
        try Data(#"{"supportedAbis": ["x86"], "supportedLocales": ["en-US"], "screenDensity": 320, "sdkVersion": 14}"#.utf8).write(to: URL(fileURLWithPath: spec))
        let tooOld = scratch.appendingPathComponent("too-old.apks").path
        let refused = try TestSupport.apkpatch(["run", input, "--patch", empty.path, "--out", tooOld, "--debug-keystore", keystore,
                                                "--device-spec", spec, "--emit-script", scratch.appendingPathComponent("old.sh").path])
        #expect(!refused.succeeded && refused.stderr.contains("no APK of the set fits the device (SDK 14"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: tooOld))
    }

    /// watch rebuilds a standalone APK when a patch reaching it changes: a save under splits/config.x86/
    /// rebuilds that split and the x86 standalones, and nothing else.
    @Test func watchRebuildsTheStandalonesAPatchReaches() throws {
        let patch = scratch.appendingPathComponent("watch-patch")
        try TestSupport.write("one\n", to: "assets/note.txt", in: patch)
        let input = try fixture.pack(in: scratch)
        let output = scratch.appendingPathComponent("watched.apks").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output,
                                                              "--debug-keystore", keystore, "--json"])
        defer { if process.isRunning { process.terminate() } }
        let first = SetWatchTests.build(1, in: lines)
        #expect((first?["rebuiltAPKs"] as? [String])?.count == 9, "\(lines.lines)")
        try TestSupport.write([7, 7, 7], to: "splits/config.x86/lib/x86/libnew.so", in: patch)
        let second = SetWatchTests.build(2, in: lines)
        #expect(Set(second?["rebuiltAPKs"] as? [String] ?? []) == ["splits/base-x86.apk", "standalones/standalone-x86_mdpi.apk",
                                                                    "standalones/standalone-x86_xhdpi.apk"], "\(lines.lines)")
        let apks = try checkSignedByOneKey(output)
        #expect(try entry(apks["standalones/standalone-x86_xhdpi.apk"]!, "lib/x86/libnew.so") == [7, 7, 7])
        #expect(try !entryNames(apks["standalones/standalone-arm64_v8a_xhdpi.apk"]!).contains("lib/x86/libnew.so"))
        #expect(try entry(output, "toc.pb") == StandaloneSetFixture.toc())
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// bundletool writes the splits again as another variant from a higher SDK version (uncompressed native
    /// libraries from API 23: splits/base-master_2.apk, …): every variant is patched and signed alike, and a
    /// device gets the variant for its SDK version.
    @Test func severalSplitVariantsArePatchedAlikeAndChosenBySDK() throws {
        let toc = StandaloneSetFixture.toc(secondSplitVariant: true)
        let input = try fixture.pack(in: scratch, toc: toc, secondSplitVariant: true)
        let patch = scratch.appendingPathComponent("variants-patch")
        try TestSupport.write("hello", to: "assets/new.txt", in: patch)
        let library = FixtureAPK.pseudoRandomBytes(count: 2000, seed: 5)
        try TestSupport.write(library, to: "splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so", in: patch)
        let output = scratch.appendingPathComponent("variants.apks").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        let apks = try checkSignedByOneKey(output, secondSplitVariant: true)
        #expect(try entryNames(output) == entryNames(input))
        #expect(try entry(output, "toc.pb") == toc)
        for name in ["splits/base-arm64_v8a.apk", "splits/base-arm64_v8a_2.apk", "standalones/standalone-arm64_v8a_mdpi.apk"] {
            #expect(try entry(apks[name]!, "lib/arm64-v8a/libfoo.so") == library, "\(name)")
        }
        for name in ["splits/base-master.apk", "splits/base-master_2.apk"] {
            #expect(try entry(apks[name]!, "assets/new.txt") == Array("hello".utf8), "\(name)")
        }
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)

        let cases: [(Int, [String])] = [
            (19, ["standalones/standalone-arm64_v8a_mdpi.apk"]),
            (22, ["splits/base-master.apk", "splits/base-arm64_v8a.apk", "splits/base-fr.apk", "splits/base-xhdpi.apk"]),
            (30, ["splits/base-master_2.apk", "splits/base-arm64_v8a_2.apk", "splits/base-fr_2.apk", "splits/base-xhdpi_2.apk"]),
        ]
        for (sdk, expected) in cases {
            let device = #"{"supportedAbis": ["arm64-v8a"], "supportedLocales": ["fr-FR"], "screenDensity": 160, "sdkVersion": \#(sdk)}"#
            #expect(try installedAPKs(input, device: device, output: output, patch: patch.path) == expected, "sdk \(sdk)")
        }

        // Without the second variant in toc.pb its APKs belong to no variant: refused, nothing written.
        let undescribed = try fixture.pack(in: scratch, secondSplitVariant: true)
        let refusedOutput = scratch.appendingPathComponent("never-variants.apks").path
        let refused = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", refusedOutput, undescribed])
        #expect(!refused.succeeded && refused.stderr.contains("does not describe the split APK \"splits/base-master_2.apk\" in exactly one split variant"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: refusedOutput))
    }

    /// Within the split variant, toc.pb's targeting of each split decides, as in bundletool's ApkMatcher (here
    /// a table that says splits/base-fr.apk is for German speakers, which its name does not).
    @Test func theTableOfContentsTargetingChoosesTheSplits() throws {
        let input = try fixture.pack(in: scratch, toc: StandaloneSetFixture.toc(frenchSplitLanguage: "de"))
        let device = #"{"supportedAbis": ["x86"], "supportedLocales": ["de-DE"], "screenDensity": 480, "sdkVersion": 30}"#
        #expect(try installedAPKs(input, device: device, output: scratch.appendingPathComponent("german.apks").path)
                == ["splits/base-master.apk", "splits/base-fr.apk", "splits/base-x86.apk", "splits/base-xhdpi.apk"])
    }

    /// A feature module delivered on demand is signed with the set but not installed: bundletool's install-apks
    /// installs the install-time modules.
    @Test func anOnDemandModuleIsSignedButNotInstalled() throws {
        let feature = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "feature", isFeatureSplit: true)
        let input = try fixture.pack(in: scratch, toc: StandaloneSetFixture.toc(onDemandFeature: true), adding: ["splits/feature-master.apk": feature])
        let output = scratch.appendingPathComponent("feature.apks").path
        let device = #"{"supportedAbis": ["x86"], "supportedLocales": ["en-US"], "screenDensity": 320, "sdkVersion": 30}"#
        #expect(try installedAPKs(input, device: device, output: output) == ["splits/base-master.apk", "splits/base-x86.apk", "splits/base-xhdpi.apk"])
        let signed = try SetOracles.apkFiles(of: output, form: .apks, scratch: scratch)
        #expect(try SetOracles.certificateSHA256(signed["splits/feature-master.apk"] ?? "") == SetOracles.certificateSHA256(signed["splits/base-master.apk"] ?? ""))
    }

    /// Asset packs (`asset-slices/`): each slice signed with the set and patched by splits/<pack>/; the
    /// install-time pack installed with the splits as install-apks installs it, on-demand and fast-follow packs
    /// not, nor any pack with a standalone APK; a slice toc.pb does not describe is refused.
    @Test func assetPacksAreSignedAndTheInstallTimeOnesInstalled() throws {
        let packs: [(name: String, delivery: Int)] = [("install_pack", 1), ("ondemand_pack", 2), ("fastfollow_pack", 3)]
        var slices: [String: String] = [:]
        for pack in packs {
            // bundletool gives only install-time packs the app's versionCode.
            slices["asset-slices/\(pack.name)-master.apk"] = try SplitSetFixture.makeSplit(
                in: scratch, packageName: "com.example.set", versionCode: pack.delivery == 1 ? 7 : 1, split: pack.name,
                files: ["assets/\(pack.name).txt": Array("\(pack.name)\n".utf8)])
        }
        let input = try fixture.pack(in: scratch, toc: StandaloneSetFixture.toc(assetPacks: packs), adding: slices)
        let patch = scratch.appendingPathComponent("asset-patch")
        try TestSupport.write("patched\n", to: "splits/install_pack/assets/new.txt", in: patch)
        let output = scratch.appendingPathComponent("assets.apks").path
        let device = #"{"supportedAbis": ["x86"], "supportedLocales": ["en-US"], "screenDensity": 320, "sdkVersion": 30}"#
        #expect(try installedAPKs(input, device: device, output: output, patch: patch.path)
                == ["splits/base-master.apk", "splits/base-x86.apk", "splits/base-xhdpi.apk", "asset-slices/install_pack-master.apk"])
        let signed = try SetOracles.apkFiles(of: output, form: .apks, scratch: scratch)
        #expect(Set(signed.keys) == Set(StandaloneSetFixture.splitNames + StandaloneSetFixture.standaloneNames + slices.keys), "\(signed.keys.sorted())")
        #expect(try Set(signed.values.map(SetOracles.certificateSHA256)).count == 1)
        for pack in packs {
            let name = "asset-slices/\(pack.name)-master.apk"
            let badging = try SetOracles.badging(signed[name] ?? "")
            #expect(badging.contains("name='com.example.set' versionCode='\(pack.delivery == 1 ? 7 : 1)'") && badging.contains("split='\(pack.name)'"), "\(name): \(badging)")
        }
        let slice = signed["asset-slices/install_pack-master.apk"] ?? ""
        #expect(try TestSupport.run("unzip", ["-p", slice, "assets/new.txt"]).stdout == "patched\n")
        #expect(try TestSupport.run("unzip", ["-p", slice, "assets/install_pack.txt"]).stdout == "install_pack\n")
        // bundletool fuses install-time packs into the standalones: the pack's new file reaches them too.
        #expect(try TestSupport.run("unzip", ["-p", signed["standalones/standalone-x86_mdpi.apk"] ?? "", "assets/new.txt"]).stdout == "patched\n")
        #expect(try entryNames(output) == entryNames(input))
        #expect(try entry(output, "toc.pb") == StandaloneSetFixture.toc(assetPacks: packs))
        let verify = try TestSupport.apkpatch(["verify", output, "--json"])
        let report = try? JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
        let listed = (report?["apks"] as? [[String: Any]] ?? []).filter { $0["assetPack"] as? Bool == true }.compactMap { $0["name"] as? String }
        #expect(verify.succeeded && Set(listed) == Set(slices.keys), "\(verify)")

        // A pre-Lollipop device gets one standalone APK, no asset pack beside it.
        let old = #"{"supportedAbis": ["x86"], "screenDensity": 320, "sdkVersion": 19}"#
        #expect(try installedAPKs(input, device: old, output: scratch.appendingPathComponent("old.apks").path) == ["standalones/standalone-x86_xhdpi.apk"])

        // A slice the table of contents does not describe: refused, nothing written.
        let undescribed = try fixture.pack(in: scratch, toc: StandaloneSetFixture.toc(assetPacks: Array(packs.prefix(2))), adding: slices)
        let refusedOutput = scratch.appendingPathComponent("refused.apks").path
        let refused = try TestSupport.apkpatch(["sign", undescribed, "--out", refusedOutput, "--debug-keystore", keystore])
        #expect(!refused.succeeded && refused.stderr.contains("asset pack's APK \"asset-slices/fastfollow_pack-master.apk\""), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: refusedOutput))
    }

    /// merge makes one APK of the split variant (of the lowest SDK); the standalones, alternatives to it, are
    /// left out.
    @Test func mergeTakesTheSplitsAndLeavesTheStandalonesOut() throws {
        let input = try fixture.pack(in: scratch, toc: StandaloneSetFixture.toc(secondSplitVariant: true), secondSplitVariant: true)
        let output = scratch.appendingPathComponent("merged.apk").path
        let result = try TestSupport.apkpatch(["merge", input, "--out", output, "--debug-keystore", keystore, "--json"])
        #expect(result.succeeded, "\(result)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(json?["mergedAPKs"] as? [String] == ["splits/base-master.apk", "splits/base-arm64_v8a.apk", "splits/base-fr.apk",
                                                      "splits/base-x86.apk", "splits/base-xhdpi.apk"], "\(result.stdout)")
        #expect(try !SetOracles.certificateSHA256(output).isEmpty)
        let names = try entryNames(output)
        #expect(names.contains("lib/arm64-v8a/libfoo.so") && names.contains("lib/x86/libfoo.so"), "\(names)")
    }

    /// The table of contents read back as bundletool wrote it, and bundletool's variant matching on it.
    @Test func tableOfContentsAndVariantMatching() throws {
        let toc = try BundletoolTOC(bytes: StandaloneSetFixture.toc(), label: "toc.pb")
        #expect(toc.packageName == "com.example.set")
        #expect(toc.variants.count == 5 && toc.variants.filter(\.isStandalone).count == 4)
        #expect(toc.variants[0].targeting.sdkVersion == .init(values: [15], alternatives: [21]))
        #expect(toc.variants[0].targeting.abi == .init(values: ["arm64-v8a"], alternatives: ["x86"]))
        #expect(toc.variants[0].apks.first?.path == "standalones/standalone-arm64_v8a_mdpi.apk")
        #expect(toc.variants[4].apks.map(\.kind).first == .split(id: "", isMaster: true))
        func choice(_ abis: [String], _ dpi: Int?, _ sdk: Int?) throws -> BundletoolTOC.Choice {
            try toc.choice(for: DeviceSpec(supportedABIs: abis, screenDensity: dpi, sdkVersion: sdk))
        }
        #expect(try choice(["x86"], 160, 19) == .standalone("standalones/standalone-x86_mdpi.apk"))
        #expect(try choice(["armeabi-v7a", "arm64-v8a"], 480, 20) == .standalone("standalones/standalone-arm64_v8a_xhdpi.apk"))
        // Between mdpi and xhdpi: framework matching scales down from xhdpi unless mdpi is much closer.
        #expect(try choice(["x86"], 180, 19) == .standalone("standalones/standalone-x86_mdpi.apk"))
        #expect(try choice(["x86"], 200, 19) == .standalone("standalones/standalone-x86_xhdpi.apk"))
        #expect(try choice(["x86"], 160, 21) == .splits(Set(StandaloneSetFixture.splitNames)))
        #expect(try choice(["x86"], 160, nil) == .splits(nil))
        #expect(throws: APKSetError.self) { try choice(["x86"], 160, 14) }
        #expect(throws: APKSetError.self) { try choice([], 160, 19) }
        // Density splits are chosen by the same comparator: xhdpi from 200 dpi, mdpi only when much closer.
        let densitySplits: [(splitName: String?, configForSplit: String?)] = [(nil, nil), ("config.mdpi", nil), ("config.xhdpi", nil)]
        #expect(SplitSelection.select(densitySplits, for: DeviceSpec(screenDensity: 180)) == [0, 1])
        #expect(SplitSelection.select(densitySplits, for: DeviceSpec(screenDensity: 200)) == [0, 2])
        // A truncated table is refused, not read past.
        let bytes = StandaloneSetFixture.toc()
        #expect(throws: APKSetError.self) { try BundletoolTOC(bytes: Array(bytes.dropLast(3)), label: "toc.pb") }
    }
}
