#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#elseif canImport(Darwin)
import Darwin
#endif

/// Removes the working directories of a process that is killed (`kill -9`, a signal it does not handle) as soon
/// as it is gone, instead of at the next run. A directory of outputs has no unnamed form (`O_TMPFILE` makes
/// files only), so a killed run's staging directory keeps its name, and its full-size APKs, until someone removes
/// it: here a helper process does, the moment the process that made it ends.
///
/// The helper is this program started again (`helper`, set by the command line's `main`; nil in a library or a
/// test runner, which starts none and relies on the next run's removal, `WorkingFiles.removeLeftovers`). It
/// reads the paths to watch from a socket until the socket's other end closes, which the kernel does when this
/// process ends, however it ends; then it removes each path that is then a killed session's leftover by the
/// rules of `WorkingFiles` (ours, and locked by no process: a committed or removed directory is simply gone).
/// It runs in a session of its own, so that a Ctrl-C or a signal to the process group ends only the command.
public enum LeftoverWatch {
    /// The executable to start as the helper and its arguments; nil starts none.
    nonisolated(unsafe) public static var helper: (path: String, arguments: [String])?

    /// The argument that makes the command line run `runHelper()`.
    public static let helperArgument = "--apkpatch-internal-leftover-watch"

    private static let lock = Lock()
    /// Our end of the socket the helper reads (-1 until the helper runs; -2 after it could not be started).
    nonisolated(unsafe) private static var socket: Int32 = -1

    /// Has the helper remove `path` once this process has ended, if it is a leftover then. Without a helper (or
    /// when it cannot be started) nothing happens: the next run removes the leftover instead.
    public static func watch(_ path: String) {
        guard let helper else { return }
        let line = Array((WorkingFiles.absolute(path) + "\n").utf8)
        lock.withLock {
            if socket == -1 { socket = start(helper) ?? -2 }
            guard socket >= 0 else { return }
            var sent = 0
            while sent < line.count {
                // MSG_NOSIGNAL: a helper that died must not end this process with SIGPIPE.
                let count = line[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                sent += count
            }
        }
    }

    /// Starts the helper with one end of a new socket pair as its standard input; returns our end.
    private static func start(_ helper: (path: String, arguments: [String])) -> Int32? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return nil }
        defer { close(ends[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], 0)
        // Nothing of ours but the socket: a helper holding a pipe of whoever started us (a test runner waiting
        // for our output's end) would keep it waiting until the helper ends.
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        for name in OutputDirectory.names(in: "/proc/self/fd") {
            if let descriptor = Int32(name), descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        #if canImport(CLinux)
        let newSession = apkpatch_posix_spawn_setsid()
        #else
        let newSession: Int16 = 0
        #endif
        posix_spawnattr_setflags(&attributes, newSession | Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = ([helper.path] + helper.arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, helper.path, &actions, &attributes, argv, environ) == 0 else {
            close(ends[0])
            return nil
        }
        return ends[0]
    }

    /// The helper's work: reads the paths on standard input until it ends (the process that started it is
    /// gone), removes those that are leftovers then, and exits.
    public static func runHelper() -> Never {
        let parent = getppid()
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        // The socket closes while the process is still ending: its other descriptors (a staging directory's lock
        // among them) may not be closed yet, and a directory still locked is a live one's. The kernel gives us a
        // new parent only once the old one's descriptors are all gone.
        // (At most ten seconds: then the lock decides alone.)
        var waits = 0
        while getppid() == parent && waits < 1000 {
            usleep(10_000)
            waits += 1
        }
        // Whole lines only: a path cut short by the kill could name a folder that holds the real one.
        let complete = bytes.last == UInt8(ascii: "\n") ? bytes[...] : bytes[..<(bytes.lastIndex(of: UInt8(ascii: "\n")) ?? 0)]
        for line in complete.split(separator: UInt8(ascii: "\n")) {
            let path = String(decoding: line, as: UTF8.self)
            if isStagingPath(path) { _ = WorkingFiles.removeIfLeftOver(path) }
        }
        exit(0)
    }

    /// Whether `path` is absolute and names a staging directory (`OutputDirectory`: `.NAME.tmp-XXXXXX`), the
    /// only thing the helper ever removes.
    static func isStagingPath(_ path: String) -> Bool {
        guard path.isAbsolutePath, let name = path.utf8.split(separator: UInt8(ascii: "/")).last, name.first == UInt8(ascii: "."), name.count > 12 else {
            return false
        }
        return WorkingFiles.hasRandomSuffix(String(decoding: name, as: UTF8.self), after: ".tmp-", count: 6)
    }
}
