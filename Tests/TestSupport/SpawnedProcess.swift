import APKCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process for `TestSupport.run`, started with posix_spawn and reaped with a blocking waitpid.
///
/// Why not Foundation's `Process`: swift-corelibs-foundation's `waitUntilExit()` runs the caller's run loop in
/// 50 ms slices and is not woken when the child exits, so every process a test starts costs its thread up to 50 ms
/// of waiting after the child is done (a test runner's thread, with as many threads as cores: the suites start
/// tens of thousands of short processes). Here the thread wakes as the child ends.
struct SpawnedProcess {
    let pid: pid_t
    /// Read ends of the child's stdout and stderr pipes, and the write end of its stdin pipe (the caller closes them).
    let standardOutput: Int32
    let standardError: Int32
    let standardInput: Int32

    /// Starts `path` with `argv` (`argv[0]` included) and `environment`, standard input, output and error each a
    /// pipe; no other descriptor of this process reaches the child.
    static func spawn(_ path: String, argv: [String], environment: [String: String]) throws -> SpawnedProcess {
        // Close-on-exec on this side, so that a child another thread starts meanwhile does not hold them open (the
        // window before fcntl is covered by the close of every other descriptor in the child, below).
        func makePipe() throws -> [Int32] {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw FixtureError(message: "pipe failed: \(String(cString: strerror(errno)))") }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            return ends
        }
        var opened: [Int32] = []
        defer { opened.forEach { close($0) } }
        let output = try makePipe(); opened += output
        let error = try makePipe(); opened += error
        let input = try makePipe(); opened += input
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, error[1], 2)
        // Every other descriptor is closed in the child: a daemon it forks (the real adb's server) would otherwise
        // keep this process's other pipes open. posix_spawn's closefrom is not in Swift's Glibc module, so list them;
        // glibc ignores EBADF for one closed meanwhile.
        let keep: Set<Int32> = [0, 1, 2, input[0], output[1], error[1]]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let descriptor = Int32(name), !keep.contains(descriptor) { posix_spawn_file_actions_addclose(&actions, descriptor) }
        }
        // As Foundation's `Process` starts a child: in a process group of its own, signals as this process has them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))

        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { cArguments.forEach { free($0) }; cEnvironment.forEach { free($0) } }
        var pid: pid_t = 0
        var result = posix_spawn(&pid, path, &actions, &attributes, cArguments, cEnvironment)
        // ETXTBSY: a script a test has just written is still open for writing in a child another thread forked
        // meanwhile; it passes.
        var retries = 0
        while result == ETXTBSY && retries < 20 {
            usleep(50_000)
            retries += 1
            result = posix_spawn(&pid, path, &actions, &attributes, cArguments, cEnvironment)
        }
        guard result == 0 else { throw FixtureError(message: "posix_spawn \(path) failed: \(String(cString: strerror(result)))") }
        opened = [input[0], output[1], error[1]]
        return SpawnedProcess(pid: pid, standardOutput: output[0], standardError: error[0], standardInput: input[1])
    }

    /// Waits for the child: its exit status, or the number of the signal that ended it (as Foundation's
    /// `Process.terminationStatus` gives it).
    func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : signal
    }

    /// Hands `body` what `descriptor` gives, chunk by chunk, until its end, then closes it.
    static func read(_ descriptor: Int32, _ body: (Data) -> Void) {
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { body(Data(buffer[..<count])) } else if count == 0 || errno != EINTR { return }
        }
    }

    /// Writes `bytes` to `descriptor` (a child that stops reading early ends it: the rest is dropped), then closes it.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { offset += count } else if count < 0 && errno == EINTR { continue } else { return }
        }
    }
}
