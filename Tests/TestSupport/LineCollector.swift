import APKCore
import Foundation

/// Collects a child process's stdout+stderr lines as they arrive (watch mode's tests read its lines while it runs).
public final class LineCollector: @unchecked Sendable {
    private var text = ""
    private let lock = Lock()
    public init() {}
    public func append(_ data: Data) { lock.withLock { text += String(decoding: data, as: UTF8.self) } }
    public var lines: [String] { lock.withLock { text.split(separator: "\n").map(String.init) } }
    /// Waits up to `seconds` for `count` lines matching `predicate`.
    public func waitFor(_ count: Int = 1, seconds: Double = 30, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if lines.filter(predicate).count >= count { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }
}

extension TestSupport {
    /// Starts the built `apkpatch` with `arguments` in the background (a long-running `watch`), its stdout and
    /// stderr collected line by line as they come. A `launcher` (a program and its arguments, such as setpriv's)
    /// runs `apkpatch` under it.
    public static func startApkpatch(_ arguments: [String], environment: [String: String]? = nil,
                                     launcher: [String] = []) throws -> (process: Process, lines: LineCollector) {
        let process = Process()
        let command = launcher + [apkpatchBinary] + arguments
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let lines = LineCollector()
        pipe.fileHandleForReading.readabilityHandler = { lines.append($0.availableData) }
        try process.run()
        return (process, lines)
    }
}
