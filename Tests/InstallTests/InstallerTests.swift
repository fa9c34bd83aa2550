import APKCore
import Foundation
import Testing
import Install
import TestSupport

/// Collects the lines the installer streams.
final class MessageLog: @unchecked Sendable {
    private let lock = Lock()
    private var items: [Installer.Message] = []
    func append(_ message: Installer.Message) { lock.withLock { items.append(message) } }
    var messages: [Installer.Message] { lock.withLock { items } }
}

@Suite(.removesTemporaryDirectories) struct InstallerTests {
    func commands(_ apk: String, _ options: InstallOptions = InstallOptions()) throws -> InstallCommands {
        try InstallCommands(apkPath: apk, packageName: "com.example.fixture", launcherActivity: "com.example.fixture.MainActivity",
                            options: options, templates: sourceTemplates())
    }

    @Test func installsAndLaunchesThroughADBOnPath() throws {
        let (_, apk) = try makeFixtureAPK()
        let adb = try FakeADB()
        let log = MessageLog()
        let installer = Installer(environment: adb.environment(), onMessage: log.append)
        let report = try installer.install(commands(apk, InstallOptions(serial: "emulator-5554", launch: true)))
        #expect(report.adbPath == adb.path)
        #expect(report.launched)
        #expect(try adb.invocations() == [
            ["-s", "emulator-5554", "install", "-r", apk],
            ["-s", "emulator-5554", "shell", "am", "start", "-n", "com.example.fixture/com.example.fixture.MainActivity"],
        ])
        // adb's own messages are streamed, in order, with their stream.
        #expect(log.messages.prefix(2) == [Installer.Message(stream: .standardOutput, line: "Performing Streamed Install"),
                                           Installer.Message(stream: .standardOutput, line: "Success")])
        #expect(log.messages.contains { $0.line.hasPrefix("Starting: Intent") })
    }

    /// Real adb messages (adb 1.0.41 and Android 10–14 package manager) and what we must make of them.
    static let failures: [(name: String, reply: FakeADB.Reply, code: InstallError.Code, failureCode: String?, advice: String)] = [
        ("no device", .init(standardOutput: "Performing Push Install\nadb: error: failed to get feature set: no devices/emulators found\n",
                            standardError: "error: no devices/emulators found\n", status: 255), .noDevice, nil, "adb devices"),
        ("unauthorized", .init(standardError: "adb: error: failed to get feature set: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n", status: 1),
         .deviceUnauthorized, nil, "Allow USB debugging"),
        ("offline", .init(standardError: "adb: error: failed to get feature set: device offline\n", status: 1), .deviceOffline, nil, "adb kill-server"),
        ("serial not found", .init(standardError: "adb: error: failed to get feature set: device 'R58M' not found\n", status: 1), .deviceNotFound, nil, "adb devices"),
        ("several devices", .init(standardError: "adb: error: failed to get feature set: more than one device/emulator\n", status: 1), .multipleDevices, nil, "ANDROID_SERIAL"),
        ("signature mismatch", .init(standardOutput: "Performing Streamed Install\n",
                                     standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package com.example.fixture signatures do not match previously installed version; ignoring!]\n", status: 1),
         .signatureMismatch, "INSTALL_FAILED_UPDATE_INCOMPATIBLE", "adb uninstall com.example.fixture"),
        ("signature mismatch, old wording", .init(standardError: "Failure [INSTALL_FAILED_INCONSISTENT_CERTIFICATES]\n", status: 1),
         .signatureMismatch, "INSTALL_FAILED_INCONSISTENT_CERTIFICATES", "adb uninstall com.example.fixture"),
        ("downgrade", .init(standardOutput: "Performing Streamed Install\n",
                            standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected: Update version code 1 is older than current 2]\n", status: 1),
         .versionDowngrade, "INSTALL_FAILED_VERSION_DOWNGRADE", "install -r -d"),
        ("no matching ABIs", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_NO_MATCHING_ABIS: Failed to extract native libraries, res=-113]\n", status: 1),
         .noMatchingABIs, "INSTALL_FAILED_NO_MATCHING_ABIS", "ro.product.cpu.abilist"),
        ("unsigned", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_PARSE_FAILED_NO_CERTIFICATES: Failed collecting certificates for /data/app/vmdl.tmp/base.apk]\n", status: 1),
         .notSigned, "INSTALL_PARSE_FAILED_NO_CERTIFICATES", "apkpatch sign"),
        ("test only", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_TEST_ONLY: installPackageLI]\n", status: 1),
         .testOnly, "INSTALL_FAILED_TEST_ONLY", "install -r -t"),
        ("older sdk", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_OLDER_SDK: Failed parse during installPackageLI: /data/app/vmdl.tmp/base.apk (at Binary XML file line #7): Requires newer sdk version #34 (current version is #30)]\n", status: 1),
         .olderSDK, "INSTALL_FAILED_OLDER_SDK", "minSdkVersion"),
        ("deprecated target sdk", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_DEPRECATED_SDK_VERSION: App package must target at least SDK version 23, but found 21]\n", status: 1),
         .deprecatedSDK, "INSTALL_FAILED_DEPRECATED_SDK_VERSION", "targetSdkVersion"),
        ("storage", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE]\n", status: 1),
         .insufficientStorage, "INSTALL_FAILED_INSUFFICIENT_STORAGE", "free some space"),
        ("parse failure", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_PARSE_FAILED_MANIFEST_MALFORMED: Failed parse during installPackageLI]\n", status: 1),
         .invalidAPK, "INSTALL_PARSE_FAILED_MANIFEST_MALFORMED", "apkpatch verify"),
        ("missing split", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_MISSING_SPLIT: Missing split for com.example.fixture]\n", status: 1),
         .installFailed, "INSTALL_FAILED_MISSING_SPLIT", "Android installs it only together with its splits"),
        ("other pm failure", .init(standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_MISSING_SHARED_LIBRARY: Package couldn't be installed]\n", status: 1),
         .installFailed, "INSTALL_FAILED_MISSING_SHARED_LIBRARY", "INSTALL_FAILED_MISSING_SHARED_LIBRARY"),
        // Old adb printed the package manager's failure and still exited 0.
        ("failure with exit 0", .init(standardOutput: "\tpkg: /data/local/tmp/app.apk\nFailure [INSTALL_FAILED_VERSION_DOWNGRADE]\n", status: 0),
         .versionDowngrade, "INSTALL_FAILED_VERSION_DOWNGRADE", "-d"),
        ("unknown adb error", .init(standardError: "adb: error: connect failed: closed\n", status: 1), .installFailed, nil, "adb devices"),
    ]

    @Test(arguments: failures.indices)
    func failureBecomesAdviceAndKeepsTheAPK(index: Int) throws {
        let failure = Self.failures[index]
        let (_, apk) = try makeFixtureAPK()
        let before = try TestSupport.readBytes(apk)
        let adb = try FakeADB()
        let log = MessageLog()
        let installer = Installer(environment: adb.environment(install: failure.reply), onMessage: log.append)
        do {
            try installer.install(commands(apk, InstallOptions(launch: true)))
            Issue.record("\(failure.name): install succeeded")
        } catch let error as InstallError {
            #expect(error.code == failure.code, "\(failure.name): \(error)")
            #expect(error.failureCode == failure.failureCode, "\(failure.name)")
            #expect(error.description.contains(failure.advice), "\(failure.name): \(error)")
            #expect(error.description.contains("The APK is kept at \(apk)"))
            #expect(error.exitStatus == failure.reply.status)
        }
        // adb's own words reached the user; the launch did not run; the APK is untouched.
        let printed = log.messages.map(\.line).joined(separator: "\n")
        for line in (failure.reply.standardOutput + failure.reply.standardError).split(separator: "\n") {
            #expect(printed.contains(line.trimmingCharacters(in: .whitespaces)), "\(failure.name)")
        }
        #expect(try adb.invocations().count == 1)
        #expect(try TestSupport.readBytes(apk) == before)
    }

    /// `holdsMessagesUntilSuccess`: adb's lines come after a successful install, in order, and not at all after a
    /// failed one (its `InstallError` quotes adb's result).
    @Test func heldMessagesComeOnlyAfterSuccess() throws {
        let (_, apk) = try makeFixtureAPK()
        let adb = try FakeADB()
        let mismatch = FakeADB.Reply(standardOutput: "Performing Streamed Install\n",
                                     standardError: "adb: failed to install app.apk: Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package com.example.fixture signatures do not match previously installed version; ignoring!]\n",
                                     status: 1)
        let failedLog = MessageLog()
        var failing = Installer(environment: adb.environment(install: mismatch), onMessage: failedLog.append)
        failing.holdsMessagesUntilSuccess = true
        #expect { try failing.install(commands(apk)) } throws: { error in
            (error as? InstallError)?.adbMessage?.contains("signatures do not match") == true
        }
        #expect(failedLog.messages.isEmpty, "\(failedLog.messages)")

        let log = MessageLog()
        var installer = Installer(environment: adb.environment(), onMessage: log.append)
        installer.holdsMessagesUntilSuccess = true
        let report = try installer.install(commands(apk, InstallOptions(launch: true)))
        #expect(report.launched)
        #expect(log.messages.map(\.line) == ["Performing Streamed Install", "Success", "Starting: Intent { cmp=com.example.fixture/.MainActivity }"])
    }

    @Test func launchFailureIsReportedAfterTheInstall() throws {
        let (_, apk) = try makeFixtureAPK()
        let adb = try FakeADB()
        let shell = FakeADB.Reply(standardOutput: "Starting: Intent { cmp=com.example.fixture/.Nope }\n",
                                  standardError: "Error type 3\nError: Activity class {com.example.fixture/com.example.fixture.Nope} does not exist.\n")
        let installer = Installer(environment: adb.environment(shell: shell), onMessage: { _ in })
        #expect { try installer.install(commands(apk, InstallOptions(launch: true))) } throws: { error in
            (error as? InstallError)?.code == .launchFailed
        }
        #expect(try adb.invocations().count == 2)
        #expect(FileManager.default.fileExists(atPath: apk))
    }

    @Test func missingADBSaysHowToGetIt() throws {
        let (_, apk) = try makeFixtureAPK()
        let empty = try TestSupport.makeTemporaryDirectory("no-adb")
        let installer = Installer(environment: ["PATH": empty.path], onMessage: { _ in })
        #expect(Installer.findADB(environment: ["PATH": empty.path]) == nil)
        do {
            try installer.install(commands(apk))
            Issue.record("install without adb succeeded")
        } catch let error as InstallError {
            #expect(error.code == .adbNotFound)
            #expect(error.description.contains("apt-get install adb"))
            #expect(error.description.contains("adb install -r"))
        }
        #expect(FileManager.default.fileExists(atPath: apk))
    }

    /// The real adb (platform-tools 29) with no device attached: our clear error, the APK kept, and no adb server
    /// left behind.
    @Test func realADBWithoutDevice() throws {
        let adb = "/usr/bin/adb"
        #expect(FileManager.default.isExecutableFile(atPath: adb), "adb is an oracle: apt-get install adb")
        let (_, apk) = try makeFixtureAPK()
        let before = try TestSupport.readBytes(apk)
        let log = MessageLog()
        var environment = ProcessInfo.processInfo.environment
        environment["ANDROID_SERIAL"] = nil
        // A server port of our own: parallel tests (ours and other suites') never share or kill each other's server.
        environment["ANDROID_ADB_SERVER_PORT"] = String(Int.random(in: 20_000..<30_000))
        let installer = Installer(adbPath: adb, environment: environment, onMessage: log.append)
        defer { _ = try? TestSupport.run(adb, ["kill-server"], environment: environment) }
        do {
            try installer.install(commands(apk))
            Issue.record("install without a device succeeded")
        } catch let error as InstallError {
            #expect(error.code == .noDevice, "\(error)")
            #expect(error.description.contains("no devices/emulators found"))
            #expect(error.description.contains("The APK is kept at \(apk)"))
        }
        #expect(log.messages.contains { $0.line.contains("no devices/emulators found") })
        #expect(try TestSupport.readBytes(apk) == before)
    }
}
