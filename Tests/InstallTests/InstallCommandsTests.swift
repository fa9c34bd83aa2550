import Foundation
import Testing
import Install
import TestSupport

@Suite(.removesTemporaryDirectories) struct ShellWordsTests {
    @Test(arguments: ["plain", "with space", "it's", "", "$HOME", "a\"b", "back\\slash", "tab\there", "ünï", "--", "`x`", "*.apk"])
    func quoteThenSplitRoundTrips(word: String) throws {
        #expect(try ShellWords.split(ShellWords.quote(word)) == [word])
        #expect(try ShellWords.split("adb " + ShellWords.quote(word) + " end") == ["adb", word, "end"])
    }

    @Test func quotedWordsAreWhatShSees() throws {
        let words = ["a b", "it's", "$HOME", "x\\y", ""]
        let result = try TestSupport.run("/bin/sh", ["-c", "for a in " + ShellWords.join(words) + "; do printf '<%s>' \"$a\"; done"])
        #expect(result.stdout == words.map { "<\($0)>" }.joined())
    }

    @Test func splitFollowsShellRules() throws {
        #expect(try ShellWords.split(#"a "b c" 'd e' f\ g "h\"i" "j\k""#) == ["a", "b c", "d e", "f g", "h\"i", "j\\k"])
        #expect(throws: ShellWordsError.self) { try ShellWords.split("adb 'oops") }
        #expect(throws: ShellWordsError.self) { try ShellWords.split("adb \"oops") }
        #expect(throws: ShellWordsError.self) { try ShellWords.split("adb oops\\") }
    }
}

@Suite(.removesTemporaryDirectories) struct InstallCommandsTests {
    @Test func plainInstall() throws {
        let commands = try InstallCommands(apkPath: "out/app.apk", packageName: "com.example.app", templates: sourceTemplates())
        #expect(commands.install == ["adb", "install", "-r", "out/app.apk"])
        #expect(commands.launch == nil)
        #expect(commands.text == "adb install -r out/app.apk\n")
    }

    @Test func everyFlagInAdbOrder() throws {
        let options = InstallOptions(serial: "192.168.1.20:5555", allowTestPackages: true, allowDowngrade: true, grantPermissions: true)
        let commands = try InstallCommands(apkPath: "/tmp/my app.apk", packageName: "com.example.app", options: options, templates: sourceTemplates())
        #expect(commands.install == ["adb", "-s", "192.168.1.20:5555", "install", "-r", "-t", "-d", "-g", "/tmp/my app.apk"])
        #expect(commands.text == "adb -s 192.168.1.20:5555 install -r -t -d -g '/tmp/my app.apk'\n")
    }

    @Test func incrementalRunsButIsNotShown() throws {
        // What is shown is typed with whatever adb is there, and adb refuses --incremental before platform-tools 30
        // (Debian 12's is 29): the shown line, the retry advice and the set's line are the normal install.
        let options = InstallOptions(serial: "emulator-5554", launch: true, incremental: true)
        let commands = try InstallCommands(apkPath: "out/app.apk", packageName: "com.example.app", launcherActivity: "com.example.app.Main",
                                           options: options, templates: sourceTemplates())
        #expect(commands.install == ["adb", "-s", "emulator-5554", "install", "-r", "--incremental", "out/app.apk"])
        #expect(commands.installLine == "adb -s emulator-5554 install -r out/app.apk")
        #expect(commands.text == "adb -s emulator-5554 install -r out/app.apk && adb -s emulator-5554 shell am start -n com.example.app/com.example.app.Main\n")
        #expect(try commands.with { $0.allowDowngrade = true }.installLine == "adb -s emulator-5554 install -r -d out/app.apk")
        let set = try InstallCommands(apkPaths: ["base.apk", "split.apk"], packageName: "com.example.app", options: InstallOptions(incremental: true),
                                      container: InstallCommands.Container(path: "app.apks", entries: ["base.apk", "split.apk"]),
                                      templates: sourceTemplates())
        #expect(set.install.contains("--incremental"))
        #expect(!set.installLine.contains("--incremental"), "\(set.installLine)")
        #expect(!set.text.contains("--incremental"), "\(set.text)")
    }

    @Test func launchWithKnownActivityUsesAmStart() throws {
        let options = InstallOptions(serial: "emulator-5554", launch: true)
        let commands = try InstallCommands(apkPath: "a.apk", packageName: "com.example.app", launcherActivity: "com.example.app.MainActivity",
                                           options: options, templates: sourceTemplates())
        #expect(commands.launch == ["adb", "-s", "emulator-5554", "shell", "am", "start", "-n", "com.example.app/com.example.app.MainActivity"])
        // One line: pasted, a failed install starts nothing and the line exits with the install's status.
        #expect(commands.text == "adb -s emulator-5554 install -r a.apk && adb -s emulator-5554 shell am start -n com.example.app/com.example.app.MainActivity\n")
    }

    @Test func launchWithoutActivityUsesMonkey() throws {
        let commands = try InstallCommands(apkPath: "a.apk", packageName: "com.example.app", options: InstallOptions(launch: true), templates: sourceTemplates())
        #expect(commands.launch == ["adb", "shell", "monkey", "-p", "com.example.app", "-c", "android.intent.category.LAUNCHER", "1"])
    }

    @Test func launchNeedsAPackageName() throws {
        #expect(throws: InstallCommandError.launchNeedsPackageName) {
            try InstallCommands(apkPath: "a.apk", packageName: nil, options: InstallOptions(launch: true), templates: sourceTemplates())
        }
        #expect(throws: InstallCommandError.invalidSerial("-x")) {
            try InstallCommands(apkPath: "a.apk", packageName: "p", options: InstallOptions(serial: "-x"), templates: sourceTemplates())
        }
    }

    @Test func uninstallAdvice() throws {
        let commands = try InstallCommands(apkPath: "a.apk", packageName: "com.example.app", options: InstallOptions(serial: "R58M"), templates: sourceTemplates())
        #expect(commands.uninstallLine == "adb -s R58M uninstall com.example.app")
    }

    @Test func scriptIsQuotedAndStrict() throws {
        let commands = try InstallCommands(apkPath: "out/it's here.apk", packageName: "com.example.app", launcherActivity: "com.example.app.MainActivity",
                                           options: InstallOptions(launch: true), templates: sourceTemplates())
        let script = try commands.script(currentDirectory: "/work/x")
        #expect(script.hasPrefix("#!/bin/sh\n"))
        #expect(script.split(separator: "\n").contains("set -e"))
        #expect(script.contains("adb install -r '/work/x/out/it'\\''s here.apk'\n"))
        #expect(script.contains("adb shell am start -n com.example.app/com.example.app.MainActivity\n"))
        // Syntax-checked by the shell itself.
        let path = try TestSupport.makeTemporaryDirectory().appendingPathComponent("install.sh").path
        try Data(script.utf8).write(to: URL(fileURLWithPath: path))
        let check = try TestSupport.run("/bin/sh", ["-n", path])
        #expect(check.succeeded, "\(check)")
    }

    /// The script, run with the fake adb on PATH: adb sees exactly the APK path (with a space and a quote in it).
    @Test func scriptRunsTheCommandsWithFakeADB() throws {
        let (directory, apk) = try makeFixtureAPK()
        let adb = try FakeADB()
        let commands = try InstallCommands(apkPath: apk, packageName: "com.example.fixture", launcherActivity: "com.example.fixture.MainActivity",
                                           options: InstallOptions(serial: "emulator-5554", grantPermissions: true, launch: true), templates: sourceTemplates())
        let scriptPath = directory.appendingPathComponent("install.sh").path
        try commands.writeScript(to: scriptPath)
        #expect(FileManager.default.isExecutableFile(atPath: scriptPath))
        let result = try TestSupport.run(scriptPath, [], environment: adb.environment())
        #expect(result.succeeded, "\(result)")
        #expect(try adb.invocations() == [
            ["-s", "emulator-5554", "install", "-r", "-g", apk],
            ["-s", "emulator-5554", "shell", "am", "start", "-n", "com.example.fixture/com.example.fixture.MainActivity"],
        ])
    }

    /// `set -e`: a failed install stops the script before the launch, with adb's exit status.
    @Test func scriptStopsAtAFailedInstall() throws {
        let (directory, apk) = try makeFixtureAPK()
        let adb = try FakeADB()
        let commands = try InstallCommands(apkPath: apk, packageName: "com.example.fixture", options: InstallOptions(launch: true), templates: sourceTemplates())
        let scriptPath = directory.appendingPathComponent("install.sh").path
        try commands.writeScript(to: scriptPath)
        let failing = FakeADB.Reply(standardOutput: "Performing Streamed Install\n",
                                    standardError: "adb: failed to install x.apk: Failure [INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected]\n", status: 1)
        let result = try TestSupport.run(scriptPath, [], environment: adb.environment(install: failing))
        #expect(result.status == 1)
        #expect(result.stderr.contains("INSTALL_FAILED_VERSION_DOWNGRADE"))
        #expect(try adb.invocations().count == 1)
        #expect(FileManager.default.fileExists(atPath: apk))
    }

    @Test func scriptExplainsMissingADB() throws {
        let (directory, apk) = try makeFixtureAPK()
        let commands = try InstallCommands(apkPath: apk, packageName: "com.example.fixture", templates: sourceTemplates())
        let scriptPath = directory.appendingPathComponent("install.sh").path
        try commands.writeScript(to: scriptPath)
        let empty = try TestSupport.makeTemporaryDirectory("empty-path")
        let result = try TestSupport.run("/bin/sh", [scriptPath], environment: ["PATH": empty.path])
        #expect(result.status == 127)
        #expect(result.stderr.contains("adb is not on PATH"))
    }
}
