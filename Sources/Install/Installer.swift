#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the adb commands of an ``InstallCommands`` when adb is on PATH, showing adb's own messages as they come,
/// and turns a failure into an ``InstallError`` that says what to do. It never deletes or moves the APK.
public struct Installer: Sendable {
    /// One line adb printed, and where.
    public struct Message: Sendable, Equatable {
        public enum Stream: Sendable, Equatable { case standardOutput, standardError }
        public let stream: Stream
        public let line: String
        public init(stream: Stream, line: String) { self.stream = stream; self.line = line }

        /// A line a failure report replaces: adb's error lines (`adb: failed to install …`, `error: no devices/
        /// emulators found`, `Failure [INSTALL_FAILED_…]`) and the adb server's notes (`* daemon not running;
        /// starting now at tcp:5037`, `- waiting for device -`).
        public var isChatter: Bool {
            let lowered = line.lowercased()
            return line.hasPrefix("* ") || line.hasPrefix("- waiting") || lowered.hasPrefix("adb: ") || lowered.hasPrefix("error:")
                || line.contains("Failure [") || line.contains("INSTALL_FAILED_") || line.contains("INSTALL_PARSE_FAILED_")
        }
    }

    /// What a successful run did.
    public struct Report: Sendable {
        /// The adb binary that ran.
        public let adbPath: String
        /// Everything adb printed while installing (stdout and stderr, in arrival order).
        public let installOutput: String
        /// Whether the launch command ran (and succeeded).
        public let launched: Bool
        /// Whether `adb install --incremental` did the install (false after a fallback to a normal install).
        public var installedIncrementally = false
        /// The device paths of the files `adb push` copied after the install (`InstallCommands.Push.remote`), in order.
        public var pushed: [String] = []
    }

    /// The adb to run; nil looks `adb` up on the environment's PATH when ``install(_:)`` runs.
    public var adbPath: String?
    /// The environment adb runs with (and whose PATH is searched).
    public var environment: [String: String]
    /// Receives each line adb prints, as it prints it (or after the install, see `holdsMessagesUntilSuccess`).
    public var onMessage: @Sendable (Message) -> Void
    /// Passes adb's lines to `onMessage` only once the install (and launch) succeeded, and drops them when it
    /// failed: the `InstallError` then quotes adb's result with the advice, and a progress line such as
    /// "Performing Streamed Install" printed before it would read as if the install were under way.
    public var holdsMessagesUntilSuccess = false

    public init(adbPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                onMessage: @escaping @Sendable (Message) -> Void = Installer.forwardToStandardError) {
        self.adbPath = adbPath
        self.environment = environment
        self.onMessage = onMessage
    }

    /// The default message handler: each line to our stderr, so stdout stays free for summaries and `--json`.
    public static let forwardToStandardError: @Sendable (Message) -> Void = { message in
        writeAll(2, message.line + "\n")
    }

    /// Forwards adb's progress (`Performing Streamed Install`, `Success`) to our stderr and keeps back what a
    /// failed install's ``InstallError`` says better: adb's error lines and its server's start-up notes.
    public static let forwardProgressToStandardError: @Sendable (Message) -> Void = { message in
        if !message.isChatter { writeAll(2, message.line + "\n") }
    }

    /// The first executable `adb` on `environment`'s PATH.
    public static func findADB(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = String(directory).appendingPathComponent("adb")
            if FileKind(atPath: candidate) == .other,
               FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }

    /// Installs the app, then copies ``InstallCommands/pushes`` to the device, then (with
    /// ``InstallOptions/launch``) starts it: the commands of ``InstallCommands/text``, one by one.
    /// - Throws: ``InstallError``: adb missing, no device, signature mismatch, downgrade, a failed push, … each
    ///   with advice.
    @discardableResult
    public func install(_ commands: InstallCommands) throws -> Report {
        guard let adb = adbPath ?? Self.findADB(environment: environment) else {
            throw InstallError(code: .adbNotFound,
                               advice: "adb is not on PATH. Install it (Debian/Ubuntu: sudo apt-get install adb; or the Android SDK's platform-tools) and run: \(commands.installLine)",
                               apkPath: commands.apkPath)
        }
        var installer = self
        let held = OutputCollector()
        if holdsMessagesUntilSuccess { installer.onMessage = { held.hold($0) } }
        let report = try installer.install(commands, adb: adb)
        for message in held.heldMessages { onMessage(message) }
        return report
    }

    private func install(_ commands: InstallCommands, adb: String) throws -> Report {
        var commands = commands
        var installRun = try run(adb: adb, arguments: Array(commands.install.dropFirst()), commands: commands)
        var error = InstallError.classifyInstall(output: installRun.output, exitStatus: installRun.status, commands: commands)
        // An adb older than Android 11's platform-tools, or a device without incremental file system support,
        // refuses --incremental with a generic failure: install the usual way instead. Failures a normal install
        // would meet too (no device, another signer installed, ...) are reported as they are.
        if commands.options.incremental, let failure = error, [.installFailed, .invalidAPK].contains(failure.code) {
            commands = try commands.with { $0.incremental = false }
            onMessage(Message(stream: .standardError, line: "apkpatch: incremental install failed; installing the whole APK instead"))
            installRun = try run(adb: adb, arguments: Array(commands.install.dropFirst()), commands: commands)
            error = InstallError.classifyInstall(output: installRun.output, exitStatus: installRun.status, commands: commands)
        }
        if let error { throw error }
        // Before the launch: an app started without its expansion files may fail, or fetch them itself.
        let pushes = commands.pushes
        for (index, (push, command)) in zip(pushes, commands.pushCommands).enumerated() {
            let pushRun = try run(adb: adb, arguments: Array(command.dropFirst()), commands: commands)
            if var error = InstallError.classifyPush(push, output: pushRun.output, exitStatus: pushRun.status, commands: commands,
                                                     remaining: Array(pushes[(index + 1)...])) {
                error.pushedBeforeFailure = pushes[..<index].map(\.remote)
                throw error
            }
        }
        var launched = false
        if let launch = commands.launch {
            let launchRun = try run(adb: adb, arguments: Array(launch.dropFirst()), commands: commands)
            if var error = InstallError.classifyLaunch(output: launchRun.output, exitStatus: launchRun.status, commands: commands) {
                error.pushedBeforeFailure = pushes.map(\.remote)
                throw error
            }
            launched = true
        }
        return Report(adbPath: adb, installOutput: installRun.output, launched: launched, installedIncrementally: commands.options.incremental,
                      pushed: pushes.map(\.remote))
    }

    /// Collects adb's output (or messages held back) from two reader threads.
    private final class OutputCollector: @unchecked Sendable {
        private let lock = Lock()
        private var text = ""
        private var messages: [Message] = []
        func append(_ line: String) { lock.withLock { text += line + "\n" } }
        var output: String { lock.withLock { text } }
        func hold(_ message: Message) { lock.withLock { messages.append(message) } }
        var heldMessages: [Message] { lock.withLock { messages } }
    }

    private func run(adb: String, arguments: [String], commands: InstallCommands) throws -> (output: String, status: Int32) {
        do {
            return try run(adb: adb, arguments: arguments)
        } catch let error as ChildProcess.SpawnError {
            throw InstallError(code: .adbNotRunnable, adbMessage: "\(error)",
                               advice: "\(adb) could not be started; check that it is an executable adb (e.g. `\(adb) version`).",
                               apkPath: commands.apkPath)
        }
    }

    /// Runs adb with `arguments`, passing each line it prints to ``onMessage``; its output and exit status.
    func run(adb: String, arguments: [String]) throws -> (output: String, status: Int32) {
        let child = try ChildProcess.spawn(adb, arguments: arguments, environment: environment)
        let collector = OutputCollector()
        let handler = onMessage
        let readers = [(child.standardOutput, Message.Stream.standardOutput), (child.standardError, .standardError)].map { descriptor, stream in
            BackgroundValue<Void> {
                defer { close(descriptor) }
                var pending: [UInt8] = []
                func emit(_ bytes: ArraySlice<UInt8>) {
                    let line = String(decoding: bytes, as: UTF8.self)
                    guard !line.isEmpty else { return }
                    collector.append(line)
                    handler(Message(stream: stream, line: line))
                }
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    // Only the new bytes are searched, and the lines found are dropped at once: a line of megabytes
                    // (adb printing a whole file, no newline) costs its length, not its length squared.
                    var start = pending.count
                    pending.append(contentsOf: buffer[0..<count])
                    var lineStart = 0
                    // adb ends progress updates with \r; treat it as a line end too.
                    while let end = pending[start...].firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) {
                        emit(pending[lineStart..<end])
                        lineStart = end + 1
                        start = lineStart
                    }
                    if lineStart > 0 { pending.removeSubrange(..<lineStart) }
                }
                if !pending.isEmpty { emit(pending[...]) }
            }
        }
        let status = child.waitForExit()
        // The adb server that adb may start redirects its output to /tmp/adb.*.log, so our pipes reach EOF when
        // adb exits; the bounded wait guards against any other descendant that kept them open.
        let deadline = DispatchTime.now() + 5
        for reader in readers { reader.wait(until: deadline) }
        return (collector.output, status)
    }
}

/// A child started with posix_spawn and reaped with waitpid by us alone.
///
/// Why not Foundation's `Process`: swift-corelibs-foundation learns of a child's exit when a socketpair end the child
/// inherited closes, and the real adb forks a server daemon that keeps it open, so `waitUntilExit()` blocked forever
/// on an exited, unreaped adb. Here we own the pid, call `waitpid` ourselves, and give adb no descriptor but 0, 1, 2.
struct ChildProcess {
    let pid: pid_t
    /// Read ends of the child's stdout and stderr pipes (owned by the caller, who closes them).
    let standardOutput: Int32
    let standardError: Int32

    struct SpawnError: Error, CustomStringConvertible {
        let function: String
        let code: Int32
        var description: String { "\(function) failed: \(String(cString: strerror(code)))" }
    }

    static func spawn(_ path: String, arguments: [String], environment: [String: String]) throws -> ChildProcess {
        // Close-on-exec: only the dup2'ed copies reach adb, so adb's server daemon cannot hold our pipes open.
        // (pipe2 is not in Swift's Glibc module; the window before fcntl only matters for other threads' spawns.)
        func makePipe() throws -> [Int32] {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw SpawnError(function: "pipe", code: errno) }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            return ends
        }
        let outPipe = try makePipe()
        let errPipe: [Int32]
        do { errPipe = try makePipe() } catch { close(outPipe[0]); close(outPipe[1]); throw error }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        // Close every other descriptor in the child. adb forks a server daemon that lives on after adb exits, and it
        // would keep whatever it inherited open: swift-corelibs-foundation's Process notices a child's exit through
        // a socketpair the child inherits, so a daemon holding one makes `waitUntilExit()` of whoever started us
        // (a test runner, an IDE) hang forever. posix_spawn has no closefrom in Swift's Glibc module, so list them;
        // glibc ignores EBADF for one closed meanwhile.
        let keep: Set<Int32> = [0, 1, 2, outPipe[1], errPipe[1]]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let descriptor = Int32(name), !keep.contains(descriptor) {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
        // Default signal handling in the child (the Swift runtime ignores SIGPIPE; adb should not inherit that).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid: pid_t = 0
        var result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        // ETXTBSY: the executable is still open for writing somewhere, typically a descriptor inherited for a
        // moment by a child forked while the file was being written (just installed or generated). It passes.
        var retries = 0
        while result == ETXTBSY && retries < 20 {
            usleep(50_000)
            retries += 1
            result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        }
        close(outPipe[1]); close(errPipe[1])
        guard result == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw SpawnError(function: "posix_spawn", code: result)
        }
        return ChildProcess(pid: pid, standardOutput: outPipe[0], standardError: errPipe[0])
    }

    /// Waits for the child; its exit status, or 128 + the signal number if a signal ended it (as shells report).
    func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }
}
