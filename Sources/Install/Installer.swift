import Foundation

/// Runs the adb commands of an ``InstallCommands`` when adb is on PATH, showing adb's own messages as they come,
/// and turns a failure into an ``InstallError`` that says what to do. It never deletes or moves the APK.
public struct Installer: Sendable {
    /// One line adb printed, and where.
    public struct Message: Sendable, Equatable {
        public enum Stream: Sendable, Equatable { case standardOutput, standardError }
        public let stream: Stream
        public let line: String
        public init(stream: Stream, line: String) { self.stream = stream; self.line = line }
    }

    /// What a successful run did.
    public struct Report: Sendable {
        /// The adb binary that ran.
        public let adbPath: String
        /// Everything adb printed while installing (stdout and stderr, in arrival order).
        public let installOutput: String
        /// Whether the launch command ran (and succeeded).
        public let launched: Bool
    }

    /// The adb to run; nil looks `adb` up on the environment's PATH when ``install(_:)`` runs.
    public var adbPath: String?
    /// The environment adb runs with (and whose PATH is searched).
    public var environment: [String: String]
    /// Receives each line adb prints, as it prints it.
    public var onMessage: @Sendable (Message) -> Void

    public init(adbPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                onMessage: @escaping @Sendable (Message) -> Void = Installer.forwardToStandardError) {
        self.adbPath = adbPath
        self.environment = environment
        self.onMessage = onMessage
    }

    /// The default message handler: each line to our stderr, so stdout stays free for summaries and `--json`.
    public static let forwardToStandardError: @Sendable (Message) -> Void = { message in
        FileHandle.standardError.write(Data((message.line + "\n").utf8))
    }

    /// The first executable `adb` on `environment`'s PATH.
    public static func findADB(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = (String(directory) as NSString).appendingPathComponent("adb")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
               FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }

    /// Installs (and with ``InstallOptions/launch`` starts) the app.
    /// - Throws: ``InstallError``: adb missing, no device, signature mismatch, downgrade, … each with advice.
    @discardableResult
    public func install(_ commands: InstallCommands) throws -> Report {
        guard let adb = adbPath ?? Self.findADB(environment: environment) else {
            throw InstallError(code: .adbNotFound,
                               advice: "adb is not on PATH. Install it (Debian/Ubuntu: sudo apt-get install adb; or the Android SDK's platform-tools) and run: \(commands.installLine)",
                               apkPath: commands.apkPath)
        }
        let installRun = try run(adb: adb, arguments: Array(commands.install.dropFirst()), commands: commands)
        if let error = InstallError.classifyInstall(output: installRun.output, exitStatus: installRun.status, commands: commands) {
            throw error
        }
        var launched = false
        if let launch = commands.launch {
            let launchRun = try run(adb: adb, arguments: Array(launch.dropFirst()), commands: commands)
            if let error = InstallError.classifyLaunch(output: launchRun.output, exitStatus: launchRun.status, commands: commands) {
                throw error
            }
            launched = true
        }
        return Report(adbPath: adb, installOutput: installRun.output, launched: launched)
    }

    /// Collects adb's output from two reader threads.
    private final class OutputCollector: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func append(_ line: String) { lock.lock(); text += line + "\n"; lock.unlock() }
        var output: String { lock.lock(); defer { lock.unlock() }; return text }
    }

    private func run(adb: String, arguments: [String], commands: InstallCommands) throws -> (output: String, status: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: adb)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        let standardOutput = Pipe(), standardError = Pipe()
        process.standardOutput = standardOutput
        process.standardError = standardError
        do {
            try process.run()
        } catch {
            throw InstallError(code: .adbNotRunnable, adbMessage: "\(error)",
                               advice: "\(adb) could not be started; check that it is an executable adb (e.g. `\(adb) version`).",
                               apkPath: commands.apkPath)
        }
        let collector = OutputCollector()
        let handler = onMessage
        let group = DispatchGroup()
        for (pipe, stream) in [(standardOutput, Message.Stream.standardOutput), (standardError, .standardError)] {
            group.enter()
            let handle = pipe.fileHandleForReading
            DispatchQueue.global().async {
                defer { group.leave() }
                var pending = Data()
                func emit(_ bytes: Data) {
                    // adb ends progress lines with \r; treat it as a line end too.
                    let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
                    guard !line.isEmpty else { return }
                    collector.append(line)
                    handler(Message(stream: stream, line: line))
                }
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    pending.append(chunk)
                    while let newline = pending.firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) {
                        emit(pending[pending.startIndex..<newline])
                        pending.removeSubrange(pending.startIndex...newline)
                    }
                }
                if !pending.isEmpty { emit(pending) }
            }
        }
        process.waitUntilExit()
        // The adb server that adb may start redirects its output to /tmp/adb.*.log, so our pipes reach EOF when
        // adb exits; the bounded wait guards against any other child that kept them open.
        _ = group.wait(timeout: .now() + 5)
        return (collector.output, process.terminationStatus)
    }
}
