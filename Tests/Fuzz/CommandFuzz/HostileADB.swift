import Foundation
import TestSupport

/// What the fake adb (TestSupport's FakeADB, through its hook) answers in one case: the install (with and without
/// --incremental, so the fallback is exercised), and `adb shell` (the launch, and the device probe of a split
/// set): real adb messages, odd exit statuses, deaths by signal, huge, binary or unterminated output, a child that
/// keeps adb's pipes open after adb exits.
public struct HostileADB: Sendable {
    public struct Reply: Sendable {
        var label: String
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        /// Exit status, or the signal adb dies of (negative).
        var status: Int32 = 0
        /// A background child holding stdout open this many seconds after adb exits.
        var lingers = 0

        /// Android's package manager would call it a failure: apkpatch must not exit 0.
        var fails: Bool {
            let text = String(decoding: stdout + stderr, as: UTF8.self)
            return status != 0 || text.contains("Failure [") || text.contains("INSTALL_FAILED_") || text.contains("INSTALL_PARSE_FAILED_")
        }
        /// A plain success: apkpatch must exit 0 (when the rest succeeds too).
        var succeedsPlainly: Bool { status == 0 && String(decoding: stdout + stderr, as: UTF8.self) == "Performing Streamed Install\nSuccess\n" }
    }

    public var incremental: Reply
    public var install: Reply
    public var shell: Reply

    static func text(_ s: String) -> [UInt8] { Array(s.utf8) }

    static func installReply(_ rng: inout SplitMix64) -> Reply {
        let pick = Int.random(in: 0..<24, using: &rng)
        switch pick {
        case 0...4: return Reply(label: "success", stdout: text("Performing Streamed Install\nSuccess\n"))
        case 5: return Reply(label: "signatures differ", stdout: text("Performing Streamed Install\n"),
                             stderr: text("adb: failed to install x.apk: Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package com.example signatures do not match previously installed version; ignoring!]\n"), status: 1)
        case 6: return Reply(label: "Failure with exit 0 (old adb)", stdout: text("\tpkg: /data/local/tmp/x.apk\nFailure [INSTALL_FAILED_VERSION_DOWNGRADE]\n"))
        case 7: return Reply(label: "no device", stderr: text("adb: no devices/emulators found\n"), status: 1)
        case 8: return Reply(label: "unauthorized", stderr: text("adb: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n"), status: 1)
        case 9: return Reply(label: "several devices", stderr: text("adb: more than one device/emulator\n"), status: 1)
        case 10: return Reply(label: "long failure code", stderr: text("Failure [INSTALL_FAILED_" + String(repeating: "X", count: 100_000) + "]\n"), status: 1)
        case 11: return Reply(label: "empty failure code", stderr: text("Failure [INSTALL_FAILED_]\n"), status: 1)
        case 12: return Reply(label: "Success but exit 1", stdout: text("Success\n"), status: 1)
        case 13: return Reply(label: "no output, exit 0", status: 0)
        case 14: return Reply(label: "killed by SIGKILL", stdout: text("Performing Streamed Install\n"), status: -9)
        case 15: return Reply(label: "killed by SIGSEGV", status: -11)
        case 16: return Reply(label: "exit 255", stderr: text("error: protocol fault (couldn't read status): Connection reset by peer\n"), status: 255)
        case 17: return Reply(label: "3 MB line, exit 1", stderr: Array(repeating: UInt8(ascii: "e"), count: 3 << 20), status: 1)
        case 18: return Reply(label: "100,000 progress lines ending in \\r, then Success",
                              stdout: text(String(repeating: "[ 50%] /data/local/tmp/x.apk\r", count: 100_000) + "Success\n"))
        case 19: return Reply(label: "binary output, exit 1", stdout: FixtureAPK.pseudoRandomBytes(count: 20_000, seed: rng.next()), status: 1)
        case 20: return Reply(label: "escape sequences and NUL", stdout: text("\u{1B}[2J\u{1B}]0;owned\u{07}Success\0\u{202E}\n"))
        case 21: return Reply(label: "Success, then a child holding stdout", stdout: text("Success\n"), lingers: 8)
        case 22: return Reply(label: "incremental unsupported", stderr: text("adb: failed to install: unknown option --incremental\n"), status: 1)
        default: return Reply(label: "Failure [INSTALL_PARSE_FAILED_NO_CERTIFICATES] on stdout, exit 0",
                              stdout: text("Failure [INSTALL_PARSE_FAILED_NO_CERTIFICATES: Failed to collect certificates]\n"))
        }
    }

    /// The launch (`am start`) and the split-set device probe (`getprop`, `wm density`) share `adb shell`.
    static func shellReply(_ rng: inout SplitMix64) -> Reply {
        switch Int.random(in: 0..<14, using: &rng) {
        case 0...3:
            return Reply(label: "device and launch OK", stdout: text("abis=arm64-v8a,armeabi-v7a\nlocales=fr-FR,en-US\nsdk=33\nPhysical density: 480\nStarting: Intent { cmp=x/.Main }\n"))
        case 4: return Reply(label: "empty properties", stdout: text("abis=\nlocales=,\nsdk=\n"))
        case 5: return Reply(label: "sdk not a number", stdout: text("abis=arm64-v8a\nlocales=en-US\nsdk=abc\nPhysical density: x\n"))
        case 6: return Reply(label: "huge numbers", stdout: text("abis=arm64-v8a\nlocales=en-US\nsdk=99999999999999999999999\nPhysical density: -2147483649\nOverride density: 0\n"))
        case 7: return Reply(label: "10,000 ABIs", stdout: text("abis=" + (0..<10_000).map { "abi\($0)" }.joined(separator: ",") + "\nlocales=en-US\nsdk=33\n"))
        case 8: return Reply(label: "activity missing", stdout: text("Error: Activity class {x/x.Main} does not exist.\n"))
        case 9: return Reply(label: "shell exit 1", stderr: text("error: closed\n"), status: 1)
        case 10: return Reply(label: "shell killed by SIGKILL", status: -9)
        case 11: return Reply(label: "binary", stdout: FixtureAPK.pseudoRandomBytes(count: 5000, seed: rng.next()))
        case 12: return Reply(label: "locales with garbage", stdout: text("abis=x86_64\nlocales=\u{1B}[31m;;,,--,zz-ZZZZZZZZ,\nsdk=1\nPhysical density: 1\n"))
        default: return Reply(label: "device offline", stderr: text("adb: device offline\n"), status: 1)
        }
    }

    /// A device that installs and starts the app (the controls).
    public static let plain = HostileADB(incremental: Reply(label: "success", stdout: text("Performing Streamed Install\nSuccess\n")),
                                         install: Reply(label: "success", stdout: text("Performing Streamed Install\nSuccess\n")),
                                         shell: Reply(label: "device and launch OK", stdout: text("abis=arm64-v8a,armeabi-v7a\nlocales=fr-FR,en-US\nsdk=33\nPhysical density: 480\nStarting: Intent { cmp=x/.Main }\n")))

    public static func random(_ rng: inout SplitMix64) -> HostileADB {
        let first = installReply(&rng)
        // Most of the time the fallback meets the same device as the incremental attempt.
        let second = Bool.random(using: &rng) ? first : installReply(&rng)
        return HostileADB(incremental: first, install: second, shell: shellReply(&rng))
    }

    public var description: String { "adb install --incremental: \(incremental.label); adb install: \(install.label); adb shell: \(shell.label)" }

    /// The hook FakeADB sources, and the reply files it reads, written into `directory`; the environment for
    /// apkpatch (the fake first on PATH).
    func prepare(in directory: URL, adb: FakeADB) throws -> [String: String] {
        var script = "# written by the command fuzzer: the reply of this case\n"
        func emit(_ reply: Reply, _ name: String) throws -> String {
            try TestSupport.write(reply.stdout, to: ".fuzz-adb/\(name).out", in: directory)
            try TestSupport.write(reply.stderr, to: ".fuzz-adb/\(name).err", in: directory)
            var body = "cat \"$d/\(name).out\"; cat \"$d/\(name).err\" >&2; "
            if reply.lingers > 0 { body += "( sleep \(reply.lingers) ) & " }
            body += reply.status < 0 ? "kill -\(-reply.status) $$" : "exit \(reply.status)"
            return body
        }
        let d = directory.appendingPathComponent(".fuzz-adb").path
        script += "d='\(d)'\n"
        script += "incremental=no; for a in \"$@\"; do [ \"$a\" = --incremental ] && incremental=yes; done\n"
        script += "case \"$kind/$incremental\" in\n"
        script += "  install/yes) \(try emit(incremental, "incremental"));;\n"
        script += "  install/no) \(try emit(install, "install"));;\n"
        script += "  shell/*) \(try emit(shell, "shell"));;\n"
        script += "esac\n"
        try TestSupport.write(script, to: ".fuzz-adb/hook.sh", in: directory)
        // Only the fake's variables: the rest of the case's environment (TMPDIR, HOME) stays the case's.
        var environment = adb.environment().filter { $0.key == "PATH" || $0.key.hasPrefix("FAKE_ADB_") || $0.key == "ANDROID_ADB_SERVER_PORT" }
        environment["FAKE_ADB_HOOK"] = d + "/hook.sh"
        environment["FAKE_ADB_LOG"] = d + "/argv.log"
        return environment
    }
}

extension HostileADB {
    /// Options a case may add to an install command line.
    static func flags(for command: FuzzCommand) -> [[String]] {
        var flags: [[String]] = [["--launch"], ["--serial", "emulator-5554"]]
        if command.mode == .install { flags.append(["--json"]) }
        if command.arguments.first == "run" { flags.append(["--verbose"]) }
        return flags
    }

    /// What is wrong with apkpatch's answer to these replies: an exit 0 after a failed install (or launch), a
    /// failure after a plain success, `--json` that does not parse or contradicts the exit status, a refusal that
    /// prints megabytes of adb's output.
    func problems(arguments: [String], status: Int32, stdout: String, stderr: String, adbLog: String) -> [String] {
        var problems: [String] = []
        let calls = adbLog.split(separator: "\n").map { $0.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init) }
        let installCalls = calls.filter { $0.contains("install") || $0.contains("install-multiple") }
        let usedIncremental = installCalls.first?.contains("--incremental") ?? false
        let first = usedIncremental ? incremental : install
        let launches = arguments.contains("--launch")
        let isSet = arguments.contains { $0.hasSuffix(".apks") && !$0.hasPrefix("out-") } && arguments.first == "run"
        let shellText = String(decoding: shell.stdout + shell.stderr, as: UTF8.self)
        let shellFine = shell.label == "device and launch OK"
        let launchFails = shell.status != 0 || shellText.split(separator: "\n").contains { $0.hasPrefix("Error") }
        let installFails = usedIncremental ? incremental.fails && install.fails : install.fails
        if status == 0 && !installCalls.isEmpty && installFails { problems.append("exit 0 although adb's install failed (\(description))") }
        if status == 0 && launches && launchFails && !installCalls.isEmpty && !installFails { problems.append("exit 0 although the launch failed (\(shell.label))") }
        if status != 0 && first.succeedsPlainly && (!launches || shellFine) && (!isSet || shellFine) {
            problems.append("exit \(status) although adb said Success (\(description))")
        }
        if arguments.contains("--json") {
            if let object = try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] {
                if let installed = object["installed"] as? Bool, installed != (status == 0) {
                    problems.append("--json says installed: \(installed) with exit \(status)")
                }
            } else {
                problems.append("--json: stdout is no JSON object: \(stdout.prefix(300).debugDescription)")
            }
        }
        if status != 0 && stderr.utf8.count > 1 << 20 { problems.append("the failure printed \(stderr.utf8.count >> 10) KiB on stderr") }
        return problems
    }
}
