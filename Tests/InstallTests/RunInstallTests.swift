import Foundation
import Testing
import Install
import TestSupport

/// `apkpatch run … --install` end to end through the binary, with the fake adb and with the real one.
@Suite(.removesTemporaryDirectories) struct RunInstallTests {
    /// A Cordova-like fixture, a patch with one changed file, and the run arguments (debug key in the temp dir).
    func prepare() throws -> (work: URL, out: String, arguments: [String]) {
        let work = try TestSupport.makeTemporaryDirectory("run-install")
        let apk = try FixtureAPK.cordovaLike().build(in: work, name: "app.apk")
        let patch = work.appendingPathComponent("patch")
        try TestSupport.write("<html>patched</html>\n", to: "assets/www/index.html", in: patch)
        let out = work.appendingPathComponent("out dir/app patched.apk").path
        try FileManager.default.createDirectory(atPath: (out as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return (work, out, ["run", apk, "--patch", patch.path, "--out", out, "--debug", "--debug-keystore", work.appendingPathComponent("debug.p12").path])
    }

    @Test func installsAndLaunchesWithTheManifestsActivity() throws {
        let (_, out, arguments) = try prepare()
        let adb = try FakeADB()
        let result = try TestSupport.apkpatch(arguments + ["--install", "--serial", "emulator-5554", "--grant-permissions", "--launch"], environment: adb.environment())
        #expect(result.succeeded, "\(result)")
        #expect(try adb.invocations() == [
            ["-s", "emulator-5554", "install", "-r", "--incremental", "-g", out],
            ["-s", "emulator-5554", "shell", "am", "start", "-n", "com.example.cordova/com.example.cordova.MainActivity"],
        ])
        // adb's own words are shown, once the install succeeded.
        #expect(result.stderr.contains("Performing Streamed Install\nSuccess\nStarting: Intent"), "\(result)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
    }

    @Test func failedInstallExitsNonZeroWithAdviceAndKeepsTheAPK() throws {
        let (_, out, arguments) = try prepare()
        let adb = try FakeADB()
        let mismatch = FakeADB.Reply(standardOutput: "Performing Streamed Install\n",
                                     standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package com.example.cordova signatures do not match previously installed version; ignoring!]\n",
                                     status: 1)
        let result = try TestSupport.apkpatch(arguments + ["--install"], environment: adb.environment(install: mismatch))
        #expect(result.status != 0)
        #expect(result.stderr.contains("adb uninstall com.example.cordova"), "\(result)")
        #expect(FileManager.default.fileExists(atPath: out))
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        // The build's summary still comes, then one sentence-shaped error: adb's failure line once (quoted in it),
        // and no progress line before it that reads as if the install were under way.
        #expect(result.stdout.contains("Wrote \(out)") && result.stdout.contains("signed: v1, v2, v3"), "\(result)")
        #expect(result.stdout.contains("Not installed"), "\(result)")
        #expect(result.stderr.contains("Install failed (INSTALL_FAILED_UPDATE_INCOMPATIBLE): adb said"), "\(result)")
        #expect(result.stderr.components(separatedBy: "adb: failed to install").count == 2, "adb's raw line is not repeated: \(result)")
        #expect(!result.stderr.lowercased().contains("install failed: install failed"), "\(result)")
        #expect(!result.stderr.contains("Performing Streamed Install"), "\(result)")
        // --verbose shows adb's lines as they come.
        let verbose = try TestSupport.apkpatch(arguments + ["--install", "--verbose"], environment: adb.environment(install: mismatch))
        #expect(verbose.status == 1 && verbose.stderr.contains("Performing Streamed Install"), "\(verbose)")

        // --json: the object, with installed false and the error, on stdout; still exit status 1.
        let json = try TestSupport.apkpatch(arguments + ["--install", "--json"], environment: adb.environment(install: mismatch))
        #expect(json.status == 1, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(object["installed"] as? Bool == false)
        #expect(object["verified"] as? Bool == true)
        let error = try #require(object["installError"] as? [String: Any])
        #expect(error["code"] as? String == "SIGNATURE_MISMATCH")
        #expect(error["failureCode"] as? String == "INSTALL_FAILED_UPDATE_INCOMPATIBLE")
        #expect((error["advice"] as? String)?.contains("adb uninstall com.example.cordova") == true)

        let succeeded = try TestSupport.apkpatch(arguments + ["--install", "--json"], environment: adb.environment())
        #expect(succeeded.succeeded, "\(succeeded)")
        let installed = try #require(try JSONSerialization.jsonObject(with: Data(succeeded.stdout.utf8)) as? [String: Any])
        #expect(installed["installed"] as? Bool == true && installed["installError"] == nil)
    }

    /// The installer's advice says what to do in adb's terms; run adds its own options (text and --json).
    @Test func installAdviceNamesRunsOptions() throws {
        let (_, _, arguments) = try prepare()
        let adb = try FakeADB()
        let replies: [(FakeADB.Reply, String)] = [
            (.init(standardError: "adb: error: failed to get feature set: more than one device/emulator\n", status: 1), "Give its serial with -s/--serial."),
            (.init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected]\n", status: 1),
             "Or add --allow-downgrade, which passes -d."),
            (.init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_TEST_ONLY: installPackageLI]\n", status: 1),
             "Or add --allow-test, which passes -t."),
        ]
        for (reply, hint) in replies {
            let text = try TestSupport.apkpatch(arguments + ["--install"], environment: adb.environment(install: reply))
            #expect(text.status != 0 && text.stderr.contains(hint), "\(text)")
            let json = try TestSupport.apkpatch(arguments + ["--install", "--json"], environment: adb.environment(install: reply))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
            let error = try #require(object["installError"] as? [String: Any], "\(json)")
            #expect((error["advice"] as? String)?.hasSuffix(hint) == true && (error["message"] as? String)?.contains(hint) == true, "\(error)")
        }
    }

    /// A failure no rule names: adb's lines are held back (shown only with --verbose), so the error quotes the one
    /// that tells what happened and says nothing of an output "above" (it said "adb failed; its output is above"
    /// with nothing above it); an unknown INSTALL_FAILED_ code alike.
    @Test func anUnrecognizedFailureQuotesADBAndPointsAtNothingUnshown() throws {
        let (_, out, arguments) = try prepare()
        let adb = try FakeADB()
        let replies: [(FakeADB.Reply, String)] = [
            (.init(standardOutput: "Performing Streamed Install\n", standardError: "adb: error: connect failed: closed\nwaiting for the daemon\n", status: 1),
             "adb said \u{201C}adb: error: connect failed: closed\u{201D}. Check `adb devices`, then run again: adb install -r "),
            (.init(status: 1), "adb exited with status 1. Check `adb devices`, then run again: adb install -r "),
            (.init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_SESSION_INVALID: gone]\n", status: 1),
             "See the Android documentation of INSTALL_FAILED_SESSION_INVALID (PackageManager). The APK is kept at \(out)."),
        ]
        for (reply, said) in replies {
            let result = try TestSupport.apkpatch(arguments + ["--install"], environment: adb.environment(install: reply))
            #expect(result.status == 1 && result.stderr.contains(said), "\(result)")
            #expect(!result.stderr.contains("above") && !result.stderr.contains("waiting for the daemon"), "\(result)")
            #expect(!result.stderr.contains("Performing Streamed Install"), "\(result)")
            let verbose = try TestSupport.apkpatch(arguments + ["--install", "--verbose"], environment: adb.environment(install: reply))
            // --verbose shows adb's lines as they come; the error stays the same.
            let shown = reply.standardError.split(separator: "\n").allSatisfy { verbose.stderr.contains($0) }
            #expect(verbose.status == 1 && verbose.stderr.contains(said) && shown, "\(verbose)")
        }
    }

    /// The install line shown with `--launch` is one command that starts the app only once it is installed:
    /// printed as two lines, a pasted block started the app already on the device after a failed install, and
    /// exited with the launch's status. `--install --launch` alike starts nothing when the install fails.
    @Test func theShownInstallAndLaunchLineStartsNothingAfterAFailedInstall() throws {
        let (_, out, arguments) = try prepare()
        let shown = try TestSupport.apkpatch(arguments + ["--launch"])
        #expect(shown.succeeded, "\(shown)")
        let line = try #require(shown.stdout.components(separatedBy: "Install and start it with:\n  ").last?.split(separator: "\n").first.map(String.init), "\(shown)")
        #expect(line.contains("install -r") && line.contains(" && adb shell am start -n com.example.cordova/com.example.cordova.MainActivity"), "\(line)")
        let failure = FakeADB.Reply(standardOutput: "Performing Streamed Install\nadb: failed to install: Failure [INSTALL_FAILED_VERSION_DOWNGRADE]\n", status: 1)
        for (reply, status) in [(failure, Int32(1)), (FakeADB.Reply.installSuccess, Int32(0))] {
            let adb = try FakeADB()
            let ran = try TestSupport.run("sh", ["-c", line], environment: adb.environment(install: reply))
            #expect(ran.status == status, "\(line) with adb exiting \(reply.status): \(ran)")
            let calls = try adb.invocations()
            #expect(calls.contains { $0.contains("am") } == (status == 0), "\(line): \(calls)")
        }

        let adb = try FakeADB()
        let failed = try TestSupport.apkpatch(arguments + ["--install", "--launch"], environment: adb.environment(install: failure))
        #expect(failed.status == 1, "\(failed)")
        let calls = try adb.invocations()
        #expect(calls.count == 1, "only the install ran: \(calls)")
        #expect(failed.stdout.contains("Not installed (the reason follows); once fixed, install and start it with:\n  adb install -r"), "\(failed)")
        #expect(FileManager.default.fileExists(atPath: out))
    }

    /// A launch that fails after the install succeeded: the APK is on the device, and the report says so
    /// apart from the launch (`--json`: `installed: true`, `launched: false`), with one sentence on stderr
    /// saying what failed and what to do, exit status 1.
    @Test func aFailedLaunchStillReportsTheInstall() throws {
        let (_, _, arguments) = try prepare()
        // What `am start` prints for an activity the installed app does not have (and exits 0).
        let noActivity = FakeADB.Reply(standardOutput: "Starting: Intent { cmp=com.example.cordova/.MainActivity }\nError type 3\nError: Activity class {com.example.cordova/com.example.cordova.MainActivity} does not exist.\n")
        let json = try TestSupport.apkpatch(arguments + ["--install", "--launch", "--json"], environment: try FakeADB().environment(shell: noActivity))
        #expect(json.status == 1, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(object["installed"] as? Bool == true && object["launched"] as? Bool == false, "\(json.stdout)")
        #expect((object["installError"] as? [String: Any])?["code"] as? String == "LAUNCH_FAILED", "\(json.stdout)")
        let text = try TestSupport.apkpatch(arguments + ["--install", "--launch"], environment: try FakeADB().environment(shell: noActivity))
        #expect(text.status == 1 && text.stdout.contains("Installed, but not started (the reason follows)"), "\(text)")
        // One sentence: the quoted line's own full stop ends it.
        #expect(text.stderr.contains("Installed, but the app did not start: adb said \u{201C}Error: Activity class {com.example.cordova/com.example.cordova.MainActivity} does not exist.\u{201D} Start it from the launcher"), "\(text)")
        #expect(!text.stderr.contains(".\u{201D}."), "\(text)")
        #expect(text.stderr.components(separatedBy: "Installed, but").count == 2, "said once: \(text)")
        // The app is installed: what is left to do once fixed is to start it, not to install it again.
        let line = try #require(text.stdout.components(separatedBy: "once fixed, start it with:\n  ").dropFirst().first?.split(separator: "\n").first.map(String.init), "\(text)")
        #expect(line == "adb shell am start -n com.example.cordova/com.example.cordova.MainActivity", "\(line)")
    }

    @Test func emittedScriptInstallsWithFakeADB() throws {
        let (work, out, arguments) = try prepare()
        let script = work.appendingPathComponent("install.sh").path
        let result = try TestSupport.apkpatch(arguments + ["--emit-script", script, "--launch"])
        #expect(result.succeeded, "\(result)")
        let adb = try FakeADB()
        let run = try TestSupport.run(script, [], environment: adb.environment())
        #expect(run.succeeded, "\(run)")
        #expect(try adb.invocations().first == ["install", "-r", "--incremental", out])
        #expect(FileManager.default.fileExists(atPath: out + ".idsig"), "adb install --incremental finds the v4 signature beside the APK")
        #expect(try adb.invocations().count == 2)
    }

    /// Issue 4's proof with the real adb: no device here, so a clear error, a non-zero exit, and the APK kept.
    @Test func realADBWithoutDeviceThroughTheCLI() throws {
        let (_, out, arguments) = try prepare()
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = "/usr/bin:/bin"
        environment["ANDROID_SERIAL"] = nil
        // A server port of our own: parallel tests (ours and other suites') never share or kill each other's server.
        environment["ANDROID_ADB_SERVER_PORT"] = String(Int.random(in: 20_000..<30_000))
        defer { _ = try? TestSupport.run("/usr/bin/adb", ["kill-server"], environment: environment) }
        let result = try TestSupport.apkpatch(arguments + ["--install"], environment: environment)
        #expect(result.status != 0)
        #expect(result.stderr.contains("no devices/emulators found"), "\(result)")
        #expect(result.stderr.contains("adb devices"), "\(result)")
        #expect(result.stderr.contains("The APK is kept at \(out)"), "\(result)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
        // The summary, then the advice; the adb server's start-up notes stay out of it.
        #expect(result.stdout.contains("Wrote \(out)"), "\(result)")
        #expect(result.stderr.contains("Install failed: adb said"), "\(result)")
        #expect(!result.stderr.contains("* daemon"), "\(result)")
    }

    /// watch --install with no device: said once, retried on every build, not repeated.
    @Test func watchSaysNoDeviceOnceAndRetries() throws {
        let work = try TestSupport.makeTemporaryDirectory("watch-install")
        let apk = try FixtureAPK.cordovaLike().build(in: work, name: "app.apk")
        let patch = work.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        let adb = try FakeADB()
        let noDevice = FakeADB.Reply(standardError: "* daemon not running; starting now at tcp:5037\n* daemon started successfully\nadb: no devices/emulators found\n", status: 1)
        let (process, lines) = try TestSupport.startApkpatch(["watch", apk, "--patch", patch.path, "--install", "--debug-keystore", work.appendingPathComponent("debug.p12").path],
                                                             environment: adb.environment(install: noDevice))
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "\(lines.lines)")
        #expect(lines.waitFor { $0.contains("No device, will retry after each rebuild") }, "\(lines.lines)")
        for version in 2...3 {
            try TestSupport.write("<p>v\(version)</p>\n", to: "assets/www/index.html", in: patch)
            #expect(lines.waitFor(version - 1) { $0.contains("rebuilt") }, "\(lines.lines)")
            // The install after each build runs (and fails) before the next save is read.
            let deadline = Date().addingTimeInterval(30)
            while try adb.invocations().count < version && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        }
        let invocations = try adb.invocations()
        #expect(invocations.filter { $0.contains("install") }.count == 3, "each build retries: \(invocations)")
        process.interrupt()
        #expect(lines.waitFor { $0.contains("stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        let text = lines.lines
        #expect(text.filter { $0.contains("No device") }.count == 1, "said once: \(text)")
        #expect(!text.contains { $0.contains("* daemon") || $0.lowercased().contains("install failed: install failed") }, "\(text)")
    }
}
