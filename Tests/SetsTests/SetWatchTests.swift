import Foundation
import Testing
import TestSupport

/// `apkpatch watch` on a split APK set, driven by real file edits under the patch directory and its
/// splits/<name>/ folders, with the fake adb recording each `install-multiple`; judged by apksigner, aapt and
/// unzip, and by which output files are new (inode numbers, bytes).
@Suite(.serialized, .removesTemporaryDirectories) struct SetWatchTests {
    let scratch: URL
    let fixture: SplitSetFixture
    let keystore: String
    let patch: URL

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-set-watch")
        fixture = try SplitSetFixture(in: scratch)
        keystore = scratch.appendingPathComponent("debug.p12").path
        patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("one\n", to: "assets/note.txt", in: patch)
        try TestSupport.write([1, 2, 3], to: "splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so", in: patch)
    }

    /// The `--json` events printed so far (adb's own messages on stderr are not JSON).
    static func events(_ lines: LineCollector) -> [[String: Any]] {
        lines.lines.compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    /// Waits for the `count`-th build event and returns it (nil on timeout).
    static func build(_ count: Int, in lines: LineCollector) -> [String: Any]? {
        let built = { events(lines).filter { $0["event"] as? String == "built" } }
        guard lines.waitFor(count, { $0.contains("\"event\":\"built\"") }) else { return nil }
        return built()[count - 1]
    }

    static func inode(_ path: String) throws -> UInt64 {
        try (FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
    }

    @Test func directoryRebuildsOnlyTheChangedAPKsAndReinstallsTheSet() throws {
        let adb = try FakeADB()
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("watched").path
        let probe = FakeADB.Reply(standardOutput: "abis=arm64-v8a\nlocales=en-US,\nsdk=33\nPhysical density: 320\n")
        // `--out DIR/` (a trailing slash): the kept builds go beside the directory, not into it.
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output + "/", "--debug-keystore", keystore,
                                                              "--install", "--json"], environment: adb.environment(shell: probe))
        defer { if process.isRunning { process.terminate() } }
        let apk = { (name: String) in output + "/" + name }
        let names = ["base.apk", "split_config.arm64_v8a.apk", "split_config.fr.apk", "split_config.xhdpi.apk"]

        let first = Self.build(1, in: lines)
        #expect(Set(first?["rebuiltAPKs"] as? [String] ?? []) == Set(names), "\(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", apk("base.apk"), "assets/note.txt"]).stdout == "one\n")
        #expect(try Set(names.map { try SetOracles.certificateSHA256(apk($0)) }).count == 1)
        var inodes = try Dictionary(uniqueKeysWithValues: names.map { ($0, try Self.inode(apk($0))) })

        // A save under splits/config.arm64_v8a/ rebuilds that split alone; the others are the last build's files.
        try TestSupport.write([9, 9, 9, 9], to: "splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so.tmp", in: patch)
        _ = rename(patch.appendingPathComponent("splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so.tmp").path,
                   patch.appendingPathComponent("splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so").path)
        let second = Self.build(2, in: lines)
        #expect(second?["rebuiltAPKs"] as? [String] == ["split_config.arm64_v8a.apk"], "\(lines.lines)")
        #expect(second?["keptAPKs"] as? [String] == ["base.apk", "split_config.fr.apk", "split_config.xhdpi.apk"], "\(lines.lines)")
        let so = try TestSupport.run("unzip", ["-p", apk("split_config.arm64_v8a.apk"), "lib/arm64-v8a/libfoo.so"])
        #expect(so.stdout == "\u{9}\u{9}\u{9}\u{9}", "\(so)")
        for name in names {
            let same = try Self.inode(apk(name)) == inodes[name]
            #expect(same == (name != "split_config.arm64_v8a.apk"), "\(name): kept files are the last build's, the rebuilt one is new")
        }
        #expect(try SetOracles.certificateSHA256(apk("split_config.arm64_v8a.apk")) == SetOracles.certificateSHA256(apk("base.apk")))
        inodes = try Dictionary(uniqueKeysWithValues: names.map { ($0, try Self.inode(apk($0))) })

        // A save outside splits/ rebuilds the base alone.
        try TestSupport.write("two\n", to: "assets/note.txt", in: patch)
        let third = Self.build(3, in: lines)
        #expect(third?["rebuiltAPKs"] as? [String] == ["base.apk"], "\(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", apk("base.apk"), "assets/note.txt"]).stdout == "two\n")
        #expect(try Self.inode(apk("split_config.fr.apk")) == inodes["split_config.fr.apk"])

        // A new versionCode reaches every APK of the set.
        try TestSupport.write("manifest:\n  versionCode: 9\n", to: "apkpatch.yml", in: patch)
        let fourth = Self.build(4, in: lines)
        #expect(Set(fourth?["rebuiltAPKs"] as? [String] ?? []) == Set(names), "\(lines.lines)")
        for name in names {
            let badging = try SetOracles.badging(apk(name))
            #expect(badging.contains("versionCode='9'"), "\(name): \(badging)")
        }

        // A bad edit (a folder for a split the set does not have): the error, and the last good set stays.
        let before = try names.map { try TestSupport.readBytes(apk($0)) }
        try TestSupport.write("x", to: "splits/config.nope/x.txt", in: patch)
        #expect(lines.waitFor { $0.contains("\"event\":\"failed\"") && $0.contains("names no split") }, "\(lines.lines)")
        #expect(try names.map { try TestSupport.readBytes(apk($0)) } == before)
        try FileManager.default.removeItem(at: patch.appendingPathComponent("splits/config.nope"))
        let fifth = Self.build(5, in: lines)
        #expect(fifth?["rebuiltAPKs"] as? [String] == [], "nothing changed since the last good build: \(lines.lines)")

        process.interrupt()
        #expect(lines.waitFor { $0.contains("\"event\":\"stopped\"") }, "\(lines.lines)")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // The device was read once; each build was installed with install-multiple, the French split left out.
        let calls = try adb.invocations()
        #expect(calls.filter { $0.first == "shell" && $0.last?.contains("abilist") == true }.count == 1, "\(calls)")
        let installs = calls.filter { $0.first == "install-multiple" }
        #expect(installs.count == 5, "\(calls)")
        #expect(installs.last?.dropFirst(2).map { ($0 as NSString).lastPathComponent }
                == ["base.apk", "split_config.arm64_v8a.apk", "split_config.xhdpi.apk"], "\(calls)")
    }

    /// A container stays a container: its unchanged APKs are copied byte for byte, its other entries kept.
    @Test func containerKeepsUnchangedAPKsByteForByte() throws {
        let input = try fixture.pack(.apks)
        let output = scratch.appendingPathComponent("watched.apks").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output,
                                                              "--debug-keystore", keystore, "--json"])
        defer { if process.isRunning { process.terminate() } }
        #expect(Self.build(1, in: lines) != nil, "\(lines.lines)")
        let entry = { (name: String) in try TestSupport.readBytes(unzipped(output, name)) }
        let before = try ["splits/base-master.apk", "splits/base-fr.apk", "splits/base-arm64_v8a.apk"].map(entry)

        try TestSupport.write("salut\n", to: "splits/config.fr/assets/fr.txt", in: patch)
        let second = Self.build(2, in: lines)
        #expect(second?["rebuiltAPKs"] as? [String] == ["splits/base-fr.apk"], "\(lines.lines)")
        let after = try ["splits/base-master.apk", "splits/base-fr.apk", "splits/base-arm64_v8a.apk"].map(entry)
        #expect(after[0] == before[0] && after[2] == before[2], "unchanged APKs are copied as they were")
        #expect(after[1] != before[1])
        #expect(try TestSupport.readBytes(unzipped(output, "toc.pb")) == SplitSetFixture.extras(in: .apks)["toc.pb"])
        let verified = try TestSupport.apkpatch(["verify", output])
        #expect(verified.succeeded, "\(verified)")
        let french = try unzipped(output, "splits/base-fr.apk")
        #expect(try TestSupport.run("unzip", ["-p", french, "assets/fr.txt"]).stdout == "salut\n")
        #expect(try SetOracles.certificateSHA256(french) == SetOracles.certificateSHA256(unzipped(output, "splits/base-master.apk")))
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// watch on a container with --install: each build is installed from the session's kept copies (adb reads
    /// them while watch runs), and the install line it prints takes the device's APKs out of the container, so
    /// that it still installs after the session: run against the fake adb, it installs them, removes them, and
    /// exits with adb's status.
    @Test func containerInstallLineInstallsTheDevicesAPKsFromTheContainer() throws {
        let adb = try FakeADB()
        let input = try fixture.pack(.apks)
        let output = scratch.appendingPathComponent("installed.apks").path
        let probe = FakeADB.Reply(standardOutput: "abis=arm64-v8a\nlocales=en-US,\nsdk=33\nPhysical density: 480\n")
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                                              "--install", "--json"], environment: adb.environment(shell: probe))
        defer { if process.isRunning { process.terminate() } }
        let first = try #require(Self.build(1, in: lines), "\(lines.lines)")
        #expect(lines.waitFor { $0.contains("\"event\":\"installed\"") }, "\(lines.lines)")
        try TestSupport.write("two\n", to: "assets/note.txt", in: patch)
        let second = try #require(Self.build(2, in: lines), "\(lines.lines)")
        #expect(lines.waitFor(2) { $0.contains("\"event\":\"installed\"") }, "\(lines.lines)")
        process.interrupt()
        #expect(lines.waitFor { $0.contains("\"event\":\"stopped\"") }, "\(lines.lines)")
        process.waitUntilExit()

        // The device was read once; each build installed the device's APKs (the base, arm64, the only density
        // split; not French) with install-multiple, from copies that lasted the session (the fake adb refuses a
        // path that is not a file).
        let device = ["base-master.apk", "base-arm64_v8a.apk", "base-xhdpi.apk"]
        let calls = try adb.invocations()
        #expect(calls.filter { $0.first == "shell" }.count == 1, "\(calls)")
        let installs = calls.filter { $0.first == "install-multiple" }
        #expect(installs.count == 2 && installs.allSatisfy { $0.dropFirst(2).count == device.count }, "\(calls)")

        // The printed line, once the session is over: it takes the same APKs out of the container (every one there
        // when adb runs), removes them, and exits with adb's status.
        let line = try #require(second["installCommand"] as? String, "\(second)")
        #expect(first["installCommand"] as? String == line)
        #expect(line.contains(output) && !line.contains(".builds"), "\(line)")
        let hook = scratch.appendingPathComponent("every-apk-there.sh").path
        try #"for a in "$@"; do case "$a" in *.apk) [ -f "$a" ] || echo "missing: $a" >&2 ;; esac; done"#.write(toFile: hook, atomically: true, encoding: .utf8)
        for status in [Int32(0), 5] {
            let later = try FakeADB()
            var environment = later.environment(install: FakeADB.Reply(standardOutput: status == 0 ? "Success\n" : "Failure [INSTALL_FAILED_INVALID_APK]\n", status: status))
            environment["FAKE_ADB_HOOK"] = hook
            let ran = try TestSupport.run("sh", ["-c", line], environment: environment)
            #expect(ran.status == status && ran.stderr.isEmpty, "\(ran)")
            let installed = try later.invocations().first { $0.first == "install-multiple" } ?? []
            let apks = Array(installed.dropFirst(2))
            #expect(apks.map { ($0 as NSString).lastPathComponent } == device, "\(installed)")
            #expect(apks.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "the APKs taken out are removed: \(apks)")
        }
    }

    /// watch on an .xapk with --install: its expansion (OBB) file is pushed after the first install, before the
    /// app could start, and not again after each rebuild (a patch changes the APKs, not it; it may be gigabytes).
    @Test func anXAPKsExpansionFileIsPushedOncePerSession() throws {
        let adb = try FakeADB()
        let input = try fixture.pack(.xapk)
        let output = scratch.appendingPathComponent("watched.xapk").path
        let spec = scratch.appendingPathComponent("watch-arm.json").path
        try Data(#"{"supportedAbis": ["arm64-v8a"], "supportedLocales": ["en-US"], "screenDensity": 320}"#.utf8).write(to: URL(fileURLWithPath: spec))
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                                              "--device-spec", spec, "--install", "--json"], environment: adb.environment())
        defer { if process.isRunning { process.terminate() } }
        #expect(Self.build(1, in: lines) != nil, "\(lines.lines)")
        #expect(lines.waitFor { $0.contains("\"event\":\"installed\"") }, "\(lines.lines)")
        try TestSupport.write("pushed once\n", to: "assets/note.txt", in: patch)
        #expect(Self.build(2, in: lines) != nil, "\(lines.lines)")
        #expect(lines.waitFor(2) { $0.contains("\"event\":\"installed\"") }, "\(lines.lines)")
        process.interrupt()
        #expect(lines.waitFor { $0.contains("\"event\":\"stopped\"") }, "\(lines.lines)")
        process.waitUntilExit()
        let calls = try adb.invocations()
        let kinds = calls.compactMap { $0.first { ["install-multiple", "push"].contains($0) } }
        #expect(kinds == ["install-multiple", "push", "install-multiple"], "\(calls)")
        #expect(adb.pushed(to: "/sdcard/" + SplitSetFixture.obbEntry) == Data(SplitSetFixture.obbBytes), "\(calls)")
    }

    /// watch SET --install --emit-script with no device: each build still writes the script (the APKs a run
    /// without a device installs), and the missing device is said once, to be retried.
    @Test func theScriptIsWrittenWhileNoDeviceCanBeRead() throws {
        let adb = try FakeADB()
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("no-device").path
        let script = scratch.appendingPathComponent("no-device.sh").path
        let noDevice = FakeADB.Reply(standardError: "adb: no devices/emulators found\n", status: 1)
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                                              "--install", "--emit-script", script], environment: adb.environment(shell: noDevice))
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("install script: \(script) installs every APK of the set") }, "\(lines.lines)")
        #expect(lines.waitFor { $0.contains("No device, will retry") }, "\(lines.lines)")
        process.interrupt()
        #expect(lines.waitFor { $0.contains("] stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        #expect(try adb.invocations().allSatisfy { !$0.contains("install-multiple") })
        let installer = try FakeADB()
        let ran = try TestSupport.run("sh", [script], environment: installer.environment())
        #expect(ran.succeeded, "\(ran)")
        let installed = try installer.invocations().first { $0.first == "install-multiple" } ?? []
        #expect(Set(installed.filter { $0.hasSuffix(".apk") }.map { ($0 as NSString).lastPathComponent })
                == ["base.apk", "split_config.arm64_v8a.apk", "split_config.fr.apk", "split_config.xhdpi.apk"], "\(installed)")
    }

    func unzipped(_ archive: String, _ name: String) throws -> String {
        let folder = scratch.appendingPathComponent("extract-\(UUID().uuidString)")
        _ = try TestSupport.run("unzip", ["-q", archive, name, "-d", folder.path])
        return folder.appendingPathComponent(name).path
    }
}
