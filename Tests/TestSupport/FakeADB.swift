import Foundation

/// A stand-in `adb` on PATH (there is no device here): a shell script that appends its argv to a log and answers
/// `install` / `shell` with the output and exit status the test chose, copied from real adb sessions.
public struct FakeADB: Sendable {
    public let directory: URL
    public let log: URL

    /// What the fake prints and returns for one kind of command.
    public struct Reply: Sendable {
        public var standardOutput = ""
        public var standardError = ""
        public var status: Int32 = 0
        public init(standardOutput: String = "", standardError: String = "", status: Int32 = 0) {
            self.standardOutput = standardOutput; self.standardError = standardError; self.status = status
        }
        public static let installSuccess = Reply(standardOutput: "Performing Streamed Install\nSuccess\n")
        public static let launchSuccess = Reply(standardOutput: "Starting: Intent { cmp=com.example.fixture/.MainActivity }\n")
    }

    public init() throws {
        directory = try TestSupport.makeTemporaryDirectory("fake-adb")
        log = directory.appendingPathComponent("argv.log")
        // Arguments are separated by \037 (unit separator), one invocation per line, so quoting survives exactly.
        // Like the real adb, `install` refuses a path that is not a file: a quoting bug shows up as a failure.
        let script = """
        #!/bin/sh
        for a in "$@"; do printf '%s\\037' "$a"; done >> "$FAKE_ADB_LOG"
        printf '\\n' >> "$FAKE_ADB_LOG"
        kind=other
        for a in "$@"; do
            case "$a" in install|install-multiple) kind=install; break;; shell) kind=shell; break;; push) kind=push; break;; esac
        done
        # A hook (the command fuzzer's) may answer any invocation itself: it is sourced with $kind and "$@" set.
        if [ -n "$FAKE_ADB_HOOK" ]; then . "$FAKE_ADB_HOOK"; fi
        if [ "$kind" = install ]; then
            for last in "$@"; do :; done
            if [ ! -f "$last" ]; then echo "adb: failed to stat $last: No such file or directory" >&2; exit 1; fi
            printf '%b' "${FAKE_ADB_INSTALL_STDOUT-Performing Streamed Install\\nSuccess\\n}"
            printf '%b' "${FAKE_ADB_INSTALL_STDERR-}" >&2
            exit "${FAKE_ADB_INSTALL_STATUS:-0}"
        fi
        # Like the real adb, `push SRC DST` refuses a SRC that is not there; what it pushed is kept under
        # $FAKE_ADB_LOG.pushed/DST for the test to compare.
        if [ "$kind" = push ]; then
            src=; dst=
            for a in "$@"; do src=$dst; dst=$a; done
            if [ ! -f "$src" ]; then echo "adb: error: cannot stat '$src': No such file or directory" >&2; exit 1; fi
            mkdir -p "$FAKE_ADB_LOG.pushed/$(dirname "$dst")" && cp "$src" "$FAKE_ADB_LOG.pushed/$dst"
            printf '%b' "${FAKE_ADB_PUSH_STDOUT-$src: 1 file pushed, 0 skipped.\\n}"
            printf '%b' "${FAKE_ADB_PUSH_STDERR-}" >&2
            exit "${FAKE_ADB_PUSH_STATUS:-0}"
        fi
        if [ "$kind" = shell ]; then
            printf '%b' "${FAKE_ADB_SHELL_STDOUT-}"
            printf '%b' "${FAKE_ADB_SHELL_STDERR-}" >&2
            exit "${FAKE_ADB_SHELL_STATUS:-0}"
        fi
        exit 0
        """
        // Written under another name and installed by a child process: if this process wrote `adb` itself, a
        // test forking on another thread at that moment could inherit the open descriptor, and executing the fake
        // would then fail with ETXTBSY, upon which the shell goes on down PATH to the real adb (which starts a
        // server on the default port and never answers as the fake does).
        try TestSupport.write(script, to: "adb.in", in: directory)
        let installed = try TestSupport.run("/usr/bin/install", ["-m", "0755", directory.appendingPathComponent("adb.in").path,
                                                                   directory.appendingPathComponent("adb").path])
        guard installed.succeeded else { throw FixtureError(message: "installing the fake adb failed:\n\(installed)") }
    }

    public var path: String { directory.appendingPathComponent("adb").path }

    /// An environment with the fake first on PATH and the replies set (`push`: nil answers as a push that
    /// copied the file).
    public func environment(install: Reply = .installSuccess, shell: Reply = .launchSuccess, push: Reply? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = directory.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["FAKE_ADB_LOG"] = log.path
        // Should the real adb ever run in its place, it gets a server port of its own, not the shared default.
        environment["ANDROID_ADB_SERVER_PORT"] = String(Int.random(in: 30_000..<40_000))
        environment["FAKE_ADB_INSTALL_STDOUT"] = install.standardOutput
        environment["FAKE_ADB_INSTALL_STDERR"] = install.standardError
        environment["FAKE_ADB_INSTALL_STATUS"] = String(install.status)
        environment["FAKE_ADB_SHELL_STDOUT"] = shell.standardOutput
        environment["FAKE_ADB_SHELL_STDERR"] = shell.standardError
        environment["FAKE_ADB_SHELL_STATUS"] = String(shell.status)
        if let push {
            environment["FAKE_ADB_PUSH_STDOUT"] = push.standardOutput
            environment["FAKE_ADB_PUSH_STDERR"] = push.standardError
            environment["FAKE_ADB_PUSH_STATUS"] = String(push.status)
        }
        return environment
    }

    /// The bytes the fake received with `adb push … DEVICE_PATH`, nil when nothing was pushed there.
    public func pushed(to devicePath: String) -> Data? {
        FileManager.default.contents(atPath: log.path + ".pushed/" + devicePath)
    }

    /// The argv of each invocation so far (without argv[0]).
    public func invocations() throws -> [[String]] {
        guard FileManager.default.fileExists(atPath: log.path) else { return [] }
        let text = try String(contentsOf: log, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
            line.split(separator: "\u{1F}", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
    }
}
