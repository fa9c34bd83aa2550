import Foundation
import Sets
import Testing
import TestSupport

/// Installing a split APK set: `adb install-multiple` with the splits the device needs, through the fake adb
/// that records argv (the real adb, without a device, for the error).
@Suite(.serialized, .removesTemporaryDirectories) struct SetInstallTests {
    let scratch: URL
    let fixture: SplitSetFixture
    let keystore: String
    let patch: URL

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-set-install")
        fixture = try SplitSetFixture(in: scratch)
        keystore = scratch.appendingPathComponent("debug.p12").path
        patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("hello", to: "assets/new.txt", in: patch)
    }

    /// A device spec file `name` in the scratch folder: an arm64 phone at 320 dpi in English.
    func armDeviceSpec(_ name: String) throws -> String {
        let spec = scratch.appendingPathComponent(name).path
        try Data(#"{"supportedAbis": ["arm64-v8a"], "supportedLocales": ["en-US"], "screenDensity": 320}"#.utf8).write(to: URL(fileURLWithPath: spec))
        return spec
    }

    @Test func installMultipleWithTheSplitsTheDeviceReportsNeeding() throws {
        let adb = try FakeADB()
        let input = try fixture.pack(.apks)
        let output = scratch.appendingPathComponent("installed.apks").path
        // What `adb shell` prints for the probe on an arm64 phone at 480 dpi in English.
        let probe = FakeADB.Reply(standardOutput: "abis=arm64-v8a,armeabi-v7a,armeabi\nlocales=en-US,\nsdk=33\nPhysical density: 480\n")
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                               "--install", "--serial", "emulator-5554", "--allow-downgrade", "--launch"],
                                              environment: adb.environment(shell: probe))
        #expect(result.succeeded, "\(result)")
        let calls = try adb.invocations()
        #expect(calls.count == 3, "\(calls)")
        #expect(calls.first.map { Array($0.prefix(3)) } == ["-s", "emulator-5554", "shell"])
        #expect(calls.first?.last == DeviceSpec.probeCommand)
        let install = calls.count > 1 ? calls[1] : []
        #expect(Array(install.prefix(5)) == ["-s", "emulator-5554", "install-multiple", "-r", "-d"], "\(install)")
        // The base, the arm64 split and the only density split; not the French one.
        let names = install.dropFirst(5).map { ($0 as NSString).lastPathComponent }
        #expect(names.count == 3, "\(install)")
        #expect(calls.last.map { Array($0.prefix(4)) } == ["-s", "emulator-5554", "shell", "monkey"], "\(calls)")
        #expect(result.stdout.contains("for the device: splits/base-master.apk, splits/base-arm64_v8a.apk, splits/base-xhdpi.apk"), "\(result.stdout)")
        // The container itself is written and complete; the APK files adb read were temporary.
        #expect(FileManager.default.fileExists(atPath: output))
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)
    }

    @Test func deviceSpecChoosesWithoutADeviceAndTheScriptInstallsThat() throws {
        let spec = scratch.appendingPathComponent("device.json").path
        try Data(#"{"supportedAbis": ["x86_64", "x86"], "supportedLocales": ["fr-FR"], "screenDensity": 160, "sdkVersion": 30}"#.utf8)
            .write(to: URL(fileURLWithPath: spec))
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("for-device").path
        let script = scratch.appendingPathComponent("install set.sh").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                               "--device-spec", spec, "--emit-script", script, "--json"])
        #expect(result.succeeded, "\(result)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        // No x86 split in the set: no ABI split; French; xhdpi is the only density (the closest to 160 dpi).
        #expect(json?["installedAPKs"] as? [String] == ["base.apk", "split_config.fr.apk", "split_config.xhdpi.apk"], "\(result.stdout)")
        let adb = try FakeADB()
        let ran = try TestSupport.run("sh", [script], environment: adb.environment())
        #expect(ran.succeeded, "\(ran)")
        let calls = try adb.invocations()
        // Every APK installed has its .idsig beside it (v4 signing is on by default): the install is incremental.
        #expect(calls.count == 1 && calls[0].prefix(3) == ["install-multiple", "-r", "--incremental"], "\(calls)")
        #expect(calls.first?.dropFirst(3).map { ($0 as NSString).lastPathComponent } == ["base.apk", "split_config.fr.apk", "split_config.xhdpi.apk"])
        #expect(calls.first?.dropFirst(3).allSatisfy { $0.hasPrefix(output) && FileManager.default.fileExists(atPath: $0 + ".idsig") } == true, "\(calls)")
    }

    /// An adb or a device that refuses `--incremental` (platform-tools before Android 11, a device without the
    /// incremental file system) fails the first install: the set goes in again the usual way, the same APKs in the
    /// same order, as `run` does for one APK.
    @Test func incrementalSetInstallFallsBackToANormalOne() throws {
        let adb = try FakeADB()
        try TestSupport.write("""
            for a in "$@"; do
                if [ "$a" = --incremental ]; then echo "adb: failed to install: unknown option --incremental" >&2; exit 1; fi
            done

            """, to: "refuse-incremental.sh", in: scratch)
        let probe = FakeADB.Reply(standardOutput: "abis=arm64-v8a,armeabi-v7a,armeabi\nlocales=en-US,\nsdk=33\nPhysical density: 480\n")
        var environment = adb.environment(shell: probe)
        environment["FAKE_ADB_HOOK"] = scratch.appendingPathComponent("refuse-incremental.sh").path
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("fallback").path
        let script = scratch.appendingPathComponent("fallback.sh").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--install",
                                               "--emit-script", script], environment: environment)
        #expect(result.succeeded, "\(result)")
        #expect(result.stderr.contains("incremental install failed; installing the whole APK instead"), "\(result.stderr)")
        let installs = try adb.invocations().filter { $0.contains("install-multiple") }
        try #require(installs.count == 2, "\(installs)")
        #expect(Array(installs[0].prefix(3)) == ["install-multiple", "-r", "--incremental"], "\(installs[0])")
        #expect(installs[0].filter { $0 != "--incremental" } == installs[1] && installs[1].count > 3, "\(installs)")
        #expect(installs[1].dropFirst(2).allSatisfy { FileManager.default.fileExists(atPath: $0 + ".idsig") }, "\(installs[1])")
        // The install script, run later on such a device or with such an adb, does the same.
        let ran = try TestSupport.run("sh", [script], environment: environment)
        #expect(ran.succeeded && ran.stderr.contains("the incremental install failed"), "\(ran)")
        let scripted = try adb.invocations().filter { $0.contains("install-multiple") }.dropFirst(2)
        #expect(Array(scripted) == installs, "\(scripted)")
    }

    @Test func realADBWithoutDeviceFailsClearlyAndKeepsTheSet() throws {
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("no-device").path
        var environment = ProcessInfo.processInfo.environment
        let port = String(Int.random(in: 20_000..<30_000))
        environment["ANDROID_ADB_SERVER_PORT"] = port
        defer { _ = try? TestSupport.run("adb", ["kill-server"], environment: ["ANDROID_ADB_SERVER_PORT": port]) }
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--install"],
                                              environment: environment)
        #expect(!result.succeeded)
        #expect(result.stderr.lowercased().contains("no devices"), "\(result)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output).filter { $0.hasSuffix(".apk") }.count == 4, "the written set is kept")
        // The advice is a set's: what is kept is the signed set (not "the APK", one of its files), and the splits
        // can be chosen without a device.
        #expect(result.stderr.contains("The signed set is kept in \(output).") && !result.stderr.contains("The APK is kept"), "\(result)")
        #expect(result.stderr.contains("--device-spec FILE"), "\(result)")
    }

    /// A container keeps its APKs inside: the script takes those the device needs out with unzip into a
    /// temporary directory, installs them in one session (no --incremental: no .idsig in a container), and
    /// removes them.
    @Test func scriptForAContainerExtractsTheChosenAPKs() throws {
        let spec = try armDeviceSpec("arm.json")
        let input = try fixture.pack(.xapk)
        let output = scratch.appendingPathComponent("script.xapk").path
        let script = scratch.appendingPathComponent("x.sh").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                               "--device-spec", spec, "--emit-script", script])
        #expect(result.succeeded, "\(result)")
        let adb = try FakeADB()
        // The fake adb records where each APK was when it ran; the script removes them afterwards.
        let ran = try TestSupport.run("sh", [script], environment: adb.environment())
        #expect(ran.succeeded, "\(ran)")
        let calls = try adb.invocations()
        // The .xapk's expansion file follows its APKs (ExpansionInstallLineTests).
        #expect(calls.count == 2 && calls[0].prefix(2) == ["install-multiple", "-r"] && calls[1].first == "push", "\(calls)")
        let apks = calls.first.map { Array($0.dropFirst(2)) } ?? []
        #expect(apks.map { ($0 as NSString).lastPathComponent } == ["com.example.set.apk", "config.arm64_v8a.apk", "config.xhdpi.apk"], "\(calls)")
        #expect(apks.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "the extracted APKs are removed: \(apks)")
        let text = try String(contentsOfFile: script, encoding: .utf8)
        #expect(text.contains("unzip -q -o \(output)") || text.contains("unzip -q -o '\(output)'"), "\(text)")
    }

    /// A container's APKs are installed from copies that are gone once `run` ends: the install line it shows (the
    /// summary's "once fixed, install with:", the advice's "run again:", `--json`'s installCommand) takes them out
    /// of the container first, and still installs afterwards (the fuzzer found the removed copies named there). A
    /// device that cannot be read is reported as a failed install is: after the summary, naming the set, exit 1.
    @Test func aContainersInstallLinesStillInstallAfterTheRun() throws {
        let input = try fixture.pack(.apks)
        let output = scratch.appendingPathComponent("advice.apks").path
        let adb = try FakeADB()
        let probe = FakeADB.Reply(standardOutput: "abis=arm64-v8a\nlocales=en-US\nsdk=33\nPhysical density: 480\n")
        let unauthorized = FakeADB.Reply(standardError: "adb: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n", status: 1)
        let arguments = ["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--install"]
        let failed = try TestSupport.apkpatch(arguments, environment: adb.environment(install: unauthorized, shell: probe))
        #expect(failed.status == 1, "\(failed)")
        #expect(!(failed.stdout + failed.stderr).contains(".tmp-"), "a staging copy is named: \(failed)")
        #expect(failed.stderr.contains("The signed set is kept in \(output)."), "\(failed)")
        let json = try TestSupport.apkpatch(arguments + ["--json"], environment: adb.environment(install: unauthorized, shell: probe))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let shown: [(String, String)] = [
            ("summary", failed.stdout.components(separatedBy: "once fixed, install with:\n").last ?? ""),
            ("advice", failed.stderr.components(separatedBy: "then run again: ").last?.components(separatedBy: ". The signed set is kept in").first ?? ""),
            ("--json installCommand", object["installCommand"] as? String ?? ""),
        ]
        // The fake adb checks the last APK only: every one must be there when adb runs.
        let hook = scratch.appendingPathComponent("every-apk-there.sh").path
        try #"for a in "$@"; do case "$a" in *.apk) [ -f "$a" ] || echo "missing: $a" >&2 ;; esac; done"#.write(toFile: hook, atomically: true, encoding: .utf8)
        for (label, text) in shown {
            let installer = try FakeADB()
            var environment = installer.environment()
            environment["FAKE_ADB_HOOK"] = hook
            let ran = try TestSupport.run("sh", ["-c", text], environment: environment)
            #expect(ran.succeeded && ran.stderr.isEmpty, "\(label): \(text)\n\(ran)")
            let calls = try installer.invocations()
            #expect(calls.count == 1 && calls.first?.prefix(2) == ["install-multiple", "-r"], "\(label): \(calls)")
            // The device's splits (arm64, the only density split; not French), taken out of the container and removed again.
            let apks = calls.first.map { Array($0.dropFirst(2)) } ?? []
            #expect(apks.map { ($0 as NSString).lastPathComponent } == ["base-master.apk", "base-arm64_v8a.apk", "base-xhdpi.apk"], "\(label): \(calls)")
            #expect(apks.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "\(label): the APKs taken out are removed: \(apks)")
        }

        // The device could not be read: the set stands, the summary comes first, then why it was not installed.
        let unread = try TestSupport.apkpatch(arguments, environment: adb.environment(shell: unauthorized))
        #expect(unread.status == 1 && unread.stdout.contains("Wrote \(output)") && unread.stdout.contains("Not installed"), "\(unread)")
        #expect(unread.stderr.contains("device unauthorized") && !(unread.stdout + unread.stderr).contains(".tmp-"), "\(unread)")
        let unreadJSON = try TestSupport.apkpatch(arguments + ["--json"], environment: adb.environment(shell: unauthorized))
        let unreadObject = try #require(try JSONSerialization.jsonObject(with: Data(unreadJSON.stdout.utf8)) as? [String: Any], "\(unreadJSON)")
        #expect(unreadJSON.status == 1 && unreadObject["installed"] as? Bool == false, "\(unreadJSON)")
        let unreadAdvice = (unreadObject["installError"] as? [String: Any])?["advice"] as? String ?? ""
        #expect(unreadAdvice.contains("--device-spec FILE") && unread.stderr.contains("--device-spec FILE"), "\(unreadJSON.stdout)\n\(unread)")
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)
    }

    /// `run SET --install --emit-script` when the device cannot be read: the script is written all the same (it is
    /// how the user installs later), with the APKs a run without a device installs, and the summary and the JSON
    /// say so; the exit status is 1 (not installed).
    @Test(arguments: [SplitSetFixture.Form.directory, .apks])
    func theScriptIsWrittenWhenTheDeviceCannotBeRead(form: SplitSetFixture.Form) throws {
        let input = try fixture.pack(form)
        let output = scratch.appendingPathComponent(form == .directory ? "unread" : "unread.apks").path
        let script = scratch.appendingPathComponent("unread-\(form).sh").path
        let adb = try FakeADB()
        let noDevice = FakeADB.Reply(standardError: "adb: no devices/emulators found\n", status: 1)
        let arguments = ["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--install", "--emit-script", script]
        let result = try TestSupport.apkpatch(arguments, environment: adb.environment(shell: noDevice))
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("Wrote \(output)") && result.stdout.contains("Not installed"), "\(result)")
        #expect(result.stdout.contains("install script: \(script) installs every APK of the set"), "\(result)")
        #expect(result.stdout.contains("the device could not be read"), "\(result)")
        #expect(try adb.invocations().allSatisfy { !$0.contains("install-multiple") }, "nothing was installed")
        try #require(FileManager.default.fileExists(atPath: script), "no script written: \(result)")
        try FileManager.default.removeItem(atPath: script)

        let json = try TestSupport.apkpatch(arguments + ["--json"], environment: adb.environment(shell: noDevice))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(json.status == 1 && object["installed"] as? Bool == false && object["installScript"] as? String == script, "\(json)")
        #expect(object["installScriptWithoutDevice"] as? Bool == true, "\(json.stdout)")
        let names = Set((SplitSetFixture.names(in: form)).values)
        #expect(Set(object["installedAPKs"] as? [String] ?? []) == names, "\(json.stdout)")

        // The script installs them all once a device is there.
        let installer = try FakeADB()
        let ran = try TestSupport.run("sh", [script], environment: installer.environment())
        #expect(ran.succeeded, "\(ran)")
        let calls = try installer.invocations()
        #expect(calls.count == 1 && calls.first?.contains("install-multiple") == true, "\(calls)")
        #expect(Set(calls.first?.filter { $0.hasSuffix(".apk") }.map { ($0 as NSString).lastPathComponent } ?? [])
                == Set(names.map { ($0 as NSString).lastPathComponent }), "\(calls)")
    }

    /// The install commands of a container output (the summary's, `--json`'s `installCommand`, the emitted script)
    /// end with adb's exit status, not with that of the clean-up after it, and still remove what they took out; a
    /// failed install does not start the app.
    @Test func aContainersInstallCommandsExitWithADBsStatus() throws {
        let spec = try armDeviceSpec("status.json")
        let input = try fixture.pack(.apks)
        let output = scratch.appendingPathComponent("status.apks").path
        let script = scratch.appendingPathComponent("status.sh").path
        let arguments = ["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--device-spec", spec,
                         "--emit-script", script, "--launch"]
        let result = try TestSupport.apkpatch(arguments)
        #expect(result.succeeded, "\(result)")
        let json = try TestSupport.apkpatch(arguments + ["--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let commands: [(String, [String])] = [
            ("summary", ["-c", result.stdout.components(separatedBy: "Install and start it with:\n").last ?? ""]),
            ("--json installCommand", ["-c", object["installCommand"] as? String ?? ""]),
            ("script", [script]),
        ]
        let failure = FakeADB.Reply(standardOutput: "Performing Streamed Install\nadb: failed to install: Failure [INSTALL_FAILED_VERSION_DOWNGRADE]\n", status: 3)
        for (label, shellArguments) in commands {
            for (reply, status) in [(failure, Int32(3)), (FakeADB.Reply.installSuccess, Int32(0))] {
                let adb = try FakeADB()
                let ran = try TestSupport.run("sh", shellArguments, environment: adb.environment(install: reply))
                #expect(ran.status == status, "\(label) with adb exiting \(reply.status): \(ran)")
                let calls = try adb.invocations()
                let install = calls.first { $0.contains("install-multiple") } ?? []
                #expect(!install.isEmpty, "\(label): \(calls)")
                let apks = install.filter { $0.hasSuffix(".apk") }
                #expect(!apks.isEmpty && apks.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "\(label): the APKs taken out are removed: \(apks)")
                // The app is started after a successful install only (the summary's and the script's lines start it).
                let launched = calls.contains { $0.contains("monkey") || $0.contains("am") }
                #expect(status == 0 ? (launched || label == "--json installCommand") : !launched, "\(label): \(calls)")
            }
        }
    }

    /// An `.xapk`'s expansion (OBB) files are copied where APKPure's installer copies them (manifest.json's
    /// `expansions[].install_path` on the shared storage) after its APKs are installed and before the app starts,
    /// and the summary and `--json` say so. A failed push fails the command (the app may not start without the
    /// file), starts nothing, and says how to copy the file by hand.
    @Test func anXAPKsExpansionFilesArePushedAfterItsAPKs() throws {
        let spec = try armDeviceSpec("obb.json")
        let input = try fixture.pack(.xapk)
        let output = scratch.appendingPathComponent("obb.xapk").path
        let device = "/sdcard/" + SplitSetFixture.obbEntry
        let arguments = ["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--device-spec", spec, "--install", "--launch"]
        let adb = try FakeADB()
        let result = try TestSupport.apkpatch(arguments, environment: adb.environment())
        #expect(result.succeeded, "\(result)")
        let calls = try adb.invocations()
        #expect(calls.map { $0.first { ["install-multiple", "push", "shell"].contains($0) } ?? "?" } == ["install-multiple", "push", "shell"], "\(calls)")
        #expect(calls.count == 3 && calls[1].last == device, "\(calls)")
        #expect(adb.pushed(to: device) == Data(SplitSetFixture.obbBytes), "the pushed file is not the .xapk's expansion file")
        #expect(result.stdout.contains("expansion file pushed: \(device)") && result.stdout.contains("Installed and started."), "\(result)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "the copy taken out is removed: \(leftovers)")

        let json = try TestSupport.apkpatch(arguments + ["--json"], environment: try FakeADB().environment())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let files = object["expansionFiles"] as? [[String: Any]] ?? []
        #expect(json.succeeded && files.count == 1 && files.first?["devicePath"] as? String == device && files.first?["pushed"] as? Bool == true, "\(json.stdout)")

        let refusing = try FakeADB()
        let denied = FakeADB.Reply(standardError: "adb: error: failed to copy 'x.obb' to '\(device)': remote couldn't create file: Permission denied\n", status: 1)
        let failed = try TestSupport.apkpatch(arguments, environment: refusing.environment(push: denied))
        #expect(failed.status == 1, "\(failed)")
        let refusingCalls = try refusing.invocations()
        #expect(refusingCalls.allSatisfy { !$0.contains("shell") }, "started after a failed push: \(refusingCalls)")
        #expect(failed.stdout.contains("Installed, but an expansion file was not copied to the device (the reason follows)."), "\(failed)")
        #expect(failed.stderr.contains("Installed, but an expansion (OBB) file was not copied to the device: adb said"), "\(failed)")
        #expect(failed.stderr.contains("Permission denied") && failed.stderr.contains("The signed set is kept in \(output)."), "\(failed)")
        let failedJSON = try TestSupport.apkpatch(arguments + ["--json"], environment: refusing.environment(push: denied))
        let failedObject = try #require(try JSONSerialization.jsonObject(with: Data(failedJSON.stdout.utf8)) as? [String: Any], "\(failedJSON)")
        #expect((failedObject["installError"] as? [String: Any])?["code"] as? String == "EXPANSION_PUSH_FAILED", "\(failedJSON.stdout)")
        #expect((failedObject["expansionFiles"] as? [[String: Any]])?.first?["pushed"] as? Bool == false, "\(failedJSON.stdout)")
        // The advice's command copies the file from the container written, the copy taken out removed again.
        let manual = try #require(failed.stderr.components(separatedBy: "then copy it and start the app: ").dropFirst().first?.components(separatedBy: ". The signed set is kept").first, "\(failed)")
        let byHand = try FakeADB()
        let ran = try TestSupport.run("sh", ["-c", manual], environment: byHand.environment())
        #expect(ran.succeeded && byHand.pushed(to: device) == Data(SplitSetFixture.obbBytes), "\(manual)\n\(ran)")
        #expect(try byHand.invocations().first.map { $0.dropLast(2) == ["push"] && !FileManager.default.fileExists(atPath: $0[1]) } == true)
    }

    /// Two expansion files, the second refused by the device: `--json` says the first was pushed, the second not.
    @Test func aFailedPushReportsWhatWasPushedBeforeIt() throws {
        let patchOBB = "Android/obb/com.example.set/patch.7.com.example.set.obb"
        let manifest = #"{"package_name":"com.example.set","version_code":"7","split_apks":[{"file":"com.example.set.apk","id":"base"}],"expansions":["#
            + #"{"file":"\#(SplitSetFixture.obbEntry)","install_location":"EXTERNAL_STORAGE","install_path":"\#(SplitSetFixture.obbEntry)"},"#
            + #"{"file":"\#(patchOBB)","install_location":"EXTERNAL_STORAGE","install_path":"\#(patchOBB)"}]}"#
        let input = try fixture.pack(.xapk, extras: ["manifest.json": Array(manifest.utf8), patchOBB: Array("patch".utf8)])
        let adb = try FakeADB()
        let hook = scratch.appendingPathComponent("refuse-patch-obb.sh").path
        try #"if [ "$kind" = push ]; then for a in "$@"; do d=$a; done; case "$d" in *patch.*) echo "adb: error: failed to copy: No space left on device" >&2; exit 1;; esac; fi"#
            .write(toFile: hook, atomically: true, encoding: .utf8)
        var environment = adb.environment()
        environment["FAKE_ADB_HOOK"] = hook
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", scratch.appendingPathComponent("two-obb.xapk").path,
                                               "--debug-keystore", keystore, "--device-spec", try armDeviceSpec("two.json"), "--install", "--json"],
                                              environment: environment)
        #expect(result.status == 1, "\(result)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
        let files = (object["expansionFiles"] as? [[String: Any]] ?? []).map { ($0["devicePath"] as? String ?? "", $0["pushed"] as? Bool) }
        #expect(files.map(\.0) == ["/sdcard/" + SplitSetFixture.obbEntry, "/sdcard/" + patchOBB] && files.map(\.1) == [true, false], "\(result.stdout)")
    }

    /// A renamed app (`--rename-package`) looks for its expansion files in its own folder, under its own name
    /// (`main.7.<new package>.obb`): that is where they are pushed.
    @Test func aRenamedAppsExpansionFileGoesToItsOwnFolder() throws {
        let input = try fixture.pack(.xapk)
        let output = scratch.appendingPathComponent("renamed.xapk").path
        let adb = try FakeADB()
        let result = try TestSupport.apkpatch(["run", input, "--rename-package", "com.example.setcopy", "--out", output, "--debug-keystore", keystore,
                                               "--device-spec", try armDeviceSpec("renamed.json"), "--install", "--json"], environment: adb.environment())
        #expect(result.succeeded, "\(result)")
        let device = "/sdcard/Android/obb/com.example.setcopy/main.7.com.example.setcopy.obb"
        let calls = try adb.invocations()
        #expect(adb.pushed(to: device) == Data(SplitSetFixture.obbBytes), "\(calls)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
        #expect((object["expansionFiles"] as? [[String: Any]])?.first?["devicePath"] as? String == device, "\(result.stdout)")
    }

    /// An expansion file manifest.json would put anywhere but the app's own expansion folder
    /// (`Android/obb/<package>/`) is refused before anything is written or installed: a hostile .xapk must not
    /// have `--install` overwrite the user's files on the device.
    /// The path is read by its bytes, as the device reads it: "a\u{600}/.." holds a ".." component, though a
    /// Prepend mark joins the slash after it in a Character.
    @Test(arguments: ["Android/obb/com.example.set/../../../DCIM/Camera/photo.jpg", "DCIM/main.7.com.example.set.obb",
                      "Android/obb/com.example.other/main.7.com.example.other.obb", "Android/obb/com.example.set/",
                      "Android/obb/com.example.set/a\u{600}/../main.7.com.example.set.obb"])
    func anExpansionFileOutsideTheAppsFolderIsRefused(installPath: String) throws {
        let input = try fixture.pack(.xapk, extras: ["manifest.json": Array(SplitSetFixture.xapkManifest(installPath: installPath).utf8)])
        let output = scratch.appendingPathComponent("hostile-\(UUID().uuidString.prefix(6)).xapk").path
        let adb = try FakeADB()
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                               "--device-spec", try armDeviceSpec("hostile.json"), "--install"], environment: adb.environment())
        #expect(result.status == 1 && result.stderr.contains("the app's expansion folder"), "\(result)")
        let calls = try adb.invocations()
        #expect(calls.isEmpty, "adb ran: \(calls)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// A serial adb would read as an option (`--serial=-x`) is refused before anything is built: it used to be
    /// found only when the install commands were made, after the APK or set was written, with no summary. (An
    /// empty `--serial=` is the argument parser's "Missing value".)
    @Test func anInvalidSerialIsRefusedBeforeAnythingIsBuilt() throws {
        let set = try fixture.pack(.directory)
        let base = fixture.apks["base.apk"]!
        let out = scratch.appendingPathComponent("serial-out").path
        for serial in ["-x", "-s"] {
            let commands: [[String]] = [
                ["run", base, "--out", out, "--install"],
                ["run", base, "--out", out],
                ["run", set, "--out", out, "--install"],
                ["run", set, "--out", out, "--emit-script", out + ".sh"],
                ["merge", set, "--out", out, "--install"],
                ["watch", base, "--patch", patch.path, "--out", out, "--install"],
                ["watch", set, "--patch", patch.path, "--out", out, "--install"],
            ]
            for arguments in commands {
                let all = arguments + ["--debug-keystore", keystore, "--serial=\(serial)"]
                // watch would run on: a kill after two minutes ends a test that failed.
                let result = try TestSupport.run("timeout", ["-s", "KILL", "120", TestSupport.apkpatchBinary] + all)
                #expect(result.status == 1 && result.stderr.contains("invalid device serial"), "apkpatch \(all.joined(separator: " ")): \(result)")
                let written = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasPrefix("serial-out") }
                #expect(written.isEmpty, "apkpatch \(all.joined(separator: " ")) wrote \(written)")
                for name in written { try FileManager.default.removeItem(at: scratch.appendingPathComponent(name)) }
            }
        }
    }

    /// `run --merge --install`: the merged APK installs as one APK does (adb install, --incremental with the
    /// .idsig written beside it), and the app is started.
    @Test func mergeInstallsTheMergedAPK() throws {
        let adb = try FakeADB()
        let input = try fixture.pack(.apks)
        let output = scratch.appendingPathComponent("merged.apk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--merge", "--out", output, "--debug-keystore", keystore,
                                               "--install", "--launch"], environment: adb.environment())
        #expect(result.succeeded, "\(result)")
        let calls = try adb.invocations()
        #expect(calls.first == ["install", "-r", "--incremental", output], "\(calls)")
        #expect(calls.count == 2 && calls[1].prefix(2) == ["shell", "monkey"], "\(calls)")
        let v4 = try TestSupport.run("apksigner", ["verify", "-v", "--v4-signature-file", output + ".idsig", output])
        #expect(v4.succeeded && v4.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(v4)")
        let refused = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--merge", "--out", output, "--device-spec", "x.json"])
        #expect(!refused.succeeded && refused.stderr.contains("a merged APK holds them all"), "\(refused)")
    }

    @Test(arguments: [
        ("config.arm64_v8a", SplitSelection.Dimension.abi("arm64-v8a")), ("config.xhdpi_v4", .density(320)), ("config.xxhdpi", .density(480)),
        ("config.fr", .language("fr")), ("feature.config.pt_BR", .language("pt")), ("config.armeabi_v7a", .abi("armeabi-v7a")),
    ])
    func splitNamesGiveTheirDimension(name: String, dimension: SplitSelection.Dimension) {
        #expect(SplitSelection.dimension(of: name) == dimension)
    }

    @Test func selectionPerDimensionAndFeature() {
        let members: [(splitName: String?, configForSplit: String?)] = [
            (nil, nil), ("config.arm64_v8a", nil), ("config.x86_64", nil), ("config.mdpi", nil), ("config.xxhdpi", nil),
            ("config.xxxhdpi", nil), ("config.de", nil), ("config.fr", nil), ("feature", nil), ("feature.config.xxhdpi", "feature"),
            ("feature.config.mdpi", "feature"),
        ]
        let spec = DeviceSpec(supportedABIs: ["x86_64", "arm64-v8a"], supportedLocales: ["de-AT", "en-US"], screenDensity: 420)
        #expect(SplitSelection.select(members, for: spec) == [0, 2, 4, 6, 8, 9])
        // Nothing known about the device: everything.
        #expect(SplitSelection.select(members, for: DeviceSpec()) == Array(members.indices))
        // Above every density: the largest.
        #expect(SplitSelection.select(members, for: DeviceSpec(screenDensity: 700)).contains(5))
    }
}

/// Expansion (OBB) paths are read by their bytes, as the device reads them (`XAPKExpansion`).
@Suite struct ExpansionPathBytesTests {
    /// A renamed app's expansion file moves to its folder and takes its name, though the file's name starts with
    /// a combining mark (which a Character joins to the slash before it, and the file stayed in the old folder).
    @Test func aRenamedAppsExpansionFileNamedWithAMarkMoves() {
        let renamed = XAPKExpansion(file: "f.obb", installPath: "Android/obb/com.x/\u{301}main.7.com.x.obb").renamed(from: "com.x", to: "com.y")
        #expect(Array(renamed.installPath.utf8) == Array("Android/obb/com.y/\u{301}main.7.com.y.obb".utf8), "\(renamed.installPath.debugDescription)")
    }
}
