import Foundation
import Testing
import TestSupport

/// An `.xapk`'s expansion (OBB) files go wherever its APKs go: what `--install` runs, the install line shown
/// ("Install and start it with:", `--json`'s installCommand) and the `--emit-script` script make the same adb
/// calls, so a user who installs by hand or from CI gets the app with its data; `merge --install` pushes them
/// beside the merged APK. (Part of the serialized SetInstallTests suite: its fixture and key.)
extension SetInstallTests {
    /// adb's argv with what differs between the runs and the shown commands made comparable: every APK path is
    /// "APK" (`--install` reads staging copies, the shown commands copies taken out of the container), and the
    /// file a push reads is "LOCAL" (the bytes the fake adb received are compared instead).
    static func comparable(_ calls: [[String]]) -> [[String]] {
        calls.map { call in
            call.enumerated().map { index, word in
                if word.hasSuffix(".apk") { return "APK" }
                if call.contains("push") && index == call.count - 2 { return "LOCAL" }
                return word
            }
        }
    }

    /// Runs `shellArguments` with a fresh fake adb; its calls and the bytes pushed to `device`.
    func runWithFakeADB(_ shellArguments: [String]) throws -> (calls: [[String]], result: TestSupport.ProcessResult, adb: FakeADB) {
        let adb = try FakeADB()
        let ran = try TestSupport.run("sh", shellArguments, environment: adb.environment())
        return (try adb.invocations(), ran, adb)
    }

    @Test("the shown install line, --json's installCommand and the script push an .xapk's expansion files as --install does (renamed too)",
          arguments: [nil, "com.example.setcopy"])
    func shownCommandsPushWhatInstallPushes(renamedTo rename: String?) throws {
        let input = try fixture.pack(.xapk)
        let label = rename == nil ? "same" : "same-renamed"
        let output = scratch.appendingPathComponent("\(label).xapk").path
        let script = scratch.appendingPathComponent("\(label).sh").path
        let package = rename ?? "com.example.set"
        let device = "/sdcard/Android/obb/\(package)/main.7.\(package).obb"
        let arguments = ["run", input, "--out", output, "--debug-keystore", keystore, "--device-spec", try armDeviceSpec("\(label).json"), "--launch"]
            + (rename.map { ["--rename-package", $0] } ?? [])

        let installer = try FakeADB()
        let installed = try TestSupport.apkpatch(arguments + ["--install", "--emit-script", script, "--json"], environment: installer.environment())
        #expect(installed.succeeded, "\(installed)")
        let expected = Self.comparable(try installer.invocations())
        #expect(expected.map { $0.first { ["install-multiple", "push", "shell"].contains($0) } ?? "?" } == ["install-multiple", "push", "shell"], "\(expected)")
        #expect(expected.dropFirst().first?.last == device, "\(expected)")
        #expect(installer.pushed(to: device) == Data(SplitSetFixture.obbBytes))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(installed.stdout.utf8)) as? [String: Any], "\(installed)")
        let installCommand = try #require(object["installCommand"] as? String, "\(installed.stdout)")

        // A set shows its install line when it is to be installed or scripted.
        let shown = try TestSupport.apkpatch(arguments + ["--emit-script", script + ".again"])
        #expect(shown.succeeded, "\(shown)")
        let line = try #require(shown.stdout.components(separatedBy: "Install and start it with:\n").dropFirst().first, "\(shown.stdout)")

        // The script and the shown line install, push and start; installCommand installs and pushes.
        for (what, shellArguments, calls) in [("script", [script], expected), ("shown line", ["-c", line], expected),
                                               ("--json installCommand", ["-c", installCommand], Array(expected.dropLast()))] {
            let (ran, result, adb) = try runWithFakeADB(shellArguments)
            #expect(result.succeeded, "\(what): \(result)")
            #expect(Self.comparable(ran) == calls, "\(what): \(ran)")
            #expect(adb.pushed(to: device) == Data(SplitSetFixture.obbBytes), "\(what) pushed other bytes to \(device): \(ran)")
            let takenOut = ran.flatMap { $0 }.filter { $0.hasSuffix(".apk") || $0.hasSuffix(".obb") && !$0.hasPrefix("/sdcard/") }
            #expect(!takenOut.isEmpty && takenOut.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "\(what) left \(takenOut)")
        }
    }

    /// `merge app.xapk --install`: the merged APK is installed, then the .xapk's expansion files are pushed from
    /// the input (the merged APK is one file, the files stay in the .xapk), then the app starts; the summary and
    /// `--json` say so, and the script makes the same calls.
    @Test func mergeInstallPushesTheExpansionFiles() throws {
        let input = try fixture.pack(.xapk)
        let output = scratch.appendingPathComponent("merged-obb.apk").path
        let script = scratch.appendingPathComponent("merged-obb.sh").path
        let device = "/sdcard/" + SplitSetFixture.obbEntry
        let arguments = ["merge", input, "--out", output, "--debug-keystore", keystore, "--launch"]
        let installer = try FakeADB()
        let result = try TestSupport.apkpatch(arguments + ["--install", "--emit-script", script], environment: installer.environment())
        #expect(result.succeeded, "\(result)")
        let calls = try installer.invocations()
        #expect(calls.map { $0.first { ["install", "push", "shell"].contains($0) } ?? "?" } == ["install", "push", "shell"], "\(calls)")
        #expect(installer.pushed(to: device) == Data(SplitSetFixture.obbBytes), "\(calls)")
        #expect(result.stdout.contains("expansion file pushed: \(device)\nInstalled (adb install --incremental) and started."), "\(result.stdout)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasPrefix(".merged-obb") }
        #expect(leftovers.isEmpty, "the copies taken out are removed: \(leftovers)")

        let (ran, scripted, adb) = try runWithFakeADB([script])
        #expect(scripted.succeeded, "\(scripted)")
        #expect(Self.comparable(ran) == Self.comparable(calls), "\(ran)")
        #expect(adb.pushed(to: device) == Data(SplitSetFixture.obbBytes))

        let json = try TestSupport.apkpatch(arguments + ["--install", "--json"], environment: try FakeADB().environment())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let files = object["expansionFiles"] as? [[String: Any]] ?? []
        #expect(json.succeeded && object["installed"] as? Bool == true && object["launched"] as? Bool == true, "\(json.stdout)")
        #expect(files.count == 1 && files.first?["devicePath"] as? String == device && files.first?["pushed"] as? Bool == true, "\(json.stdout)")
    }

    /// A push or a launch that fails after the APKs were installed: `--json` says they were installed
    /// (`installed: true`), which step failed (`expansionFiles[].pushed`, `launched`), and why; exit status 1.
    @Test func aFailedPushOrLaunchStillReportsTheInstall() throws {
        let input = try fixture.pack(.xapk)
        let arguments = ["run", input, "--out", scratch.appendingPathComponent("steps.xapk").path, "--debug-keystore", keystore,
                         "--device-spec", try armDeviceSpec("steps.json"), "--install", "--launch", "--json"]
        let denied = FakeADB.Reply(standardError: "adb: error: failed to copy 'x.obb' to '/sdcard/x.obb': remote couldn't create file: Permission denied\n", status: 1)
        let noActivity = FakeADB.Reply(standardOutput: "Error: Activity not started, unable to resolve Intent\n")
        for (what, pushReply, shellReply, code) in [("push", Optional(denied), FakeADB.Reply.launchSuccess, "EXPANSION_PUSH_FAILED"),
                                                    ("launch", nil, noActivity, "LAUNCH_FAILED")] {
            let adb = try FakeADB()
            let result = try TestSupport.apkpatch(arguments, environment: adb.environment(shell: shellReply, push: pushReply))
            #expect(result.status == 1, "\(what): \(result)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(what): \(result)")
            #expect(object["installed"] as? Bool == true, "\(what): \(result.stdout)")
            #expect(object["launched"] as? Bool == false, "\(what): \(result.stdout)")
            #expect((object["expansionFiles"] as? [[String: Any]])?.first?["pushed"] as? Bool == (what == "launch"), "\(what): \(result.stdout)")
            let error = object["installError"] as? [String: Any]
            #expect(error?["code"] as? String == code && (error?["message"] as? String ?? "").hasPrefix("Installed, but "), "\(what): \(result.stdout)")
        }
    }

    /// The first of two expansion files refused: the advice's command copies it and the one after it (which
    /// never ran), then starts the app (`--launch`), as the install would have; run, it does exactly that.
    @Test func aFailedPushsAdviceCopiesWhatIsLeftAndStartsTheApp() throws {
        let patchOBB = "Android/obb/com.example.set/patch.7.com.example.set.obb"
        let manifest = #"{"package_name":"com.example.set","version_code":"7","split_apks":[{"file":"com.example.set.apk","id":"base"}],"expansions":["#
            + #"{"file":"\#(SplitSetFixture.obbEntry)","install_location":"EXTERNAL_STORAGE","install_path":"\#(SplitSetFixture.obbEntry)"},"#
            + #"{"file":"\#(patchOBB)","install_location":"EXTERNAL_STORAGE","install_path":"\#(patchOBB)"}]}"#
        let input = try fixture.pack(.xapk, extras: ["manifest.json": Array(manifest.utf8), patchOBB: Array("patch".utf8)])
        let refusing = try FakeADB()
        let hook = scratch.appendingPathComponent("refuse-main-obb.sh").path
        try #"if [ "$kind" = push ]; then for a in "$@"; do d=$a; done; case "$d" in *main.*) echo "adb: error: failed to copy: No space left on device" >&2; exit 1;; esac; fi"#
            .write(toFile: hook, atomically: true, encoding: .utf8)
        var environment = refusing.environment()
        environment["FAKE_ADB_HOOK"] = hook
        let output = scratch.appendingPathComponent("first-refused.xapk").path
        let failed = try TestSupport.apkpatch(["run", input, "--out", output, "--debug-keystore", keystore, "--device-spec", try armDeviceSpec("first.json"),
                                               "--install", "--launch"], environment: environment)
        #expect(failed.status == 1 && failed.stderr.contains("No space left on device"), "\(failed)")
        #expect(try refusing.invocations().filter { $0.contains("push") }.count == 1, "the push after the failed one did not run")
        let advice = try #require(failed.stderr.components(separatedBy: "then copy it and the file after it and start the app: ").dropFirst().first?
            .components(separatedBy: ". The signed set is kept").first, "\(failed)")
        let (calls, ran, adb) = try runWithFakeADB(["-c", advice])
        #expect(ran.succeeded, "\(advice)\n\(ran)")
        #expect(calls.map { $0.first { ["push", "shell"].contains($0) } ?? "?" } == ["push", "push", "shell"], "\(calls)")
        #expect(adb.pushed(to: "/sdcard/" + SplitSetFixture.obbEntry) == Data(SplitSetFixture.obbBytes) && adb.pushed(to: "/sdcard/" + patchOBB) == Data("patch".utf8))
    }

    /// merge takes the install options run takes: a failed install's hint names the option, not `apkpatch run`.
    @Test func aMergesInstallHintNamesNoOtherCommand() throws {
        let input = try fixture.pack(.apks)
        let downgrade = FakeADB.Reply(standardOutput: "Performing Streamed Install\n",
                                      standardError: "adb: failed to install m.apk: Failure [INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected: Update version code 7 is older than current 9]\n", status: 1)
        let result = try TestSupport.apkpatch(["merge", input, "--out", scratch.appendingPathComponent("hint.apk").path, "--debug-keystore", keystore, "--install"],
                                              environment: try FakeADB().environment(install: downgrade))
        #expect(result.status == 1 && result.stderr.contains("Or add --allow-downgrade, which passes -d."), "\(result)")
        #expect(!result.stderr.contains("apkpatch run"), "\(result)")
    }

    /// watch on an .xapk whose push fails: said once, as a set's failure ("The signed set is kept in …", not "The
    /// APK is kept at", naming the container as if it were one APK).
    @Test func aWatchedSetsFailedPushNamesTheSet() throws {
        let input = try fixture.pack(.xapk)
        let output = scratch.appendingPathComponent("watched.xapk").path
        let denied = FakeADB.Reply(standardError: "adb: error: failed to copy 'x.obb' to '/sdcard/x.obb': remote couldn't create file: Permission denied\n", status: 1)
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                                              "--device-spec", try armDeviceSpec("watched.json"), "--install"],
                                                             environment: try FakeADB().environment(push: denied))
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(lines.waitFor { $0.contains("Installed, but an expansion (OBB) file was not copied") }, "\(lines.lines)")
        process.interrupt()
        process.waitUntilExit()
        let failure = lines.lines.first { $0.contains("Installed, but an expansion (OBB) file was not copied") } ?? ""
        #expect(failure.hasSuffix("The signed set is kept in \(output).") && !failure.contains("The APK is kept"), "\(failure)")

        // --json: the installFailed event says the APKs were installed.
        let (json, events) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore,
                                                            "--device-spec", try armDeviceSpec("watched-json.json"), "--install", "--json"],
                                                           environment: try FakeADB().environment(push: denied))
        defer { if json.isRunning { json.terminate(); json.waitUntilExit() } }
        #expect(events.waitFor { $0.contains("\"event\":\"installFailed\"") }, "\(events.lines)")
        json.interrupt()
        json.waitUntilExit()
        let event = events.lines.first { $0.contains("\"event\":\"installFailed\"") }.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(event?["code"] as? String == "EXPANSION_PUSH_FAILED" && event?["installed"] as? Bool == true, "\(events.lines)")
    }
}
