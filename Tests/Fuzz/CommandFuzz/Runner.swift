#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Runs one command the way a hostile corpus would: in its own process group, stdin from /dev/null, stdout and
/// stderr to files, an address-space limit (prlimit, as `ulimit -v`), SIGKILL at the deadline, and the peak RSS
/// as GNU time measures it.
public struct BoundedRun: Sendable {
    public var status: Int32 = 0          // exit status when it exited
    public var signal: Int32 = 0          // the signal that ended it (0: it exited)
    public var timedOut = false
    public var maxRSSKiB = 0
    public var seconds = 0.0
    public var stdout = ""
    public var stderr = ""

    public var exited: Bool { signal == 0 && !timedOut }
    public var summary: String {
        let how = timedOut ? "timed out" : signal != 0 ? "killed by signal \(signal)" : "exit \(status)"
        return "\(how), \(String(format: "%.2f", seconds)) s, peak RSS \(maxRSSKiB / 1024) MiB"
    }

    public static func run(_ executable: String, _ arguments: [String], in directory: String, environment: [String: String],
                           seconds: Double, memoryBytes: Int) -> BoundedRun {
        var result = BoundedRun()
        let outPath = directory + "/.fuzz-stdout", errPath = directory + "/.fuzz-stderr", usagePath = directory + "/.fuzz-rusage"
        // The peak RSS comes from GNU time, which forks the command: posix_spawn's child shares this process's
        // memory until its first exec, and Linux counts that (this process's peak, hundreds of MiB inside a test
        // run) in the child's ru_maxrss, whatever the command itself uses. After the fork, one exec chain (env -C,
        // prlimit, the command) keeps one pid, so time's figure and exit report are the command's.
        let argv = ["/usr/bin/time", "-f", "%M %x", "-o", usagePath,
                    "/usr/bin/env", "-C", directory, "/usr/bin/prlimit", "--as=\(memoryBytes)", "--", executable] + arguments
        let start = Date()
        let (pid, spawned) = spawnInOwnGroup(argv, environment: environment, stdout: outPath, stderr: errPath)
        guard spawned == 0 else {
            result.status = -1
            result.stderr = "posix_spawn failed: \(spawned)"
            return result
        }
        var status: Int32 = 0
        var usage = rusage()
        // A hang is a command that had the CPU and did not finish: at the deadline, one that used less than a
        // quarter of it in CPU time (a loaded machine gave it no more) gets more time, up to ten deadlines for one
        // that is blocked. A wall-clock limit alone flagged slow-but-finite cases on a machine at load 30.
        var deadline = start.addingTimeInterval(seconds)
        let lastDeadline = start.addingTimeInterval(seconds * 10)
        var pause = 1_000 as useconds_t
        while true {
            let done = wait4(pid, &status, WNOHANG, &usage)
            if done == pid { break }
            if done < 0 && errno != EINTR { break }
            if Date() > deadline, Date() < lastDeadline, groupCPUSeconds(pid) < seconds / 4 {
                deadline = Date().addingTimeInterval(seconds / 4)
            } else if Date() > deadline {
                result.timedOut = true
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                _ = wait4(pid, &status, 0, &usage)
                break
            }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        // Whatever the command started in its group goes too.
        kill(-pid, SIGKILL)
        result.seconds = Date().timeIntervalSince(start)
        if (status & 0x7f) == 0 { result.status = (status >> 8) & 0xff } else if !result.timedOut { result.signal = status & 0x7f }
        // time's report: "Command terminated by signal N" when the command died by one, then "PEAK_KIB STATUS".
        // Without it (time itself killed at the deadline) the wait status stands and the peak is unknown.
        if !result.timedOut, let report = try? String(contentsOfFile: usagePath, encoding: .utf8) {
            let lines = report.split(separator: "\n")
            if let last = lines.last?.split(separator: " "), last.count == 2, let peak = Int(last[0]) {
                result.maxRSSKiB = peak
            }
            if let line = lines.first(where: { $0.hasPrefix("Command terminated by signal ") }),
               let number = Int32(line.dropFirst("Command terminated by signal ".count)) {
                result.signal = number
                result.status = 0
            }
        }
        unlink(usagePath)
        result.stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(), as: UTF8.self)
        result.stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data(), as: UTF8.self)
        unlink(outPath); unlink(errPath)
        return result
    }
}

/// Starts `argv` in a process group of its own, stdin /dev/null, stdout and stderr into the files, with SIGINT,
/// SIGTERM, SIGHUP and SIGPIPE at their defaults and none blocked (a test runner may ignore or block them; a
/// command must get them as a shell gives them). Returns the pid and posix_spawn's result.
public func spawnInOwnGroup(_ argv: [String], environment: [String: String], stdout outPath: String, stderr errPath: String) -> (pid_t, Int32) {
    let env = environment.map { "\($0.key)=\($0.value)" }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t(), empty = sigset_t()
    sigemptyset(&defaults); sigemptyset(&empty)
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
    posix_spawnattr_setpgroup(&attributes, 0)
    var pid: pid_t = 0
    let spawned = withCStrings(argv) { cArgv in withCStrings(env) { cEnv in posix_spawn(&pid, argv[0], &actions, &attributes, cArgv, cEnv) } }
    return (pid, spawned)
}

/// The CPU time (user and system, with reaped children's) of every process in the process group `group`, from
/// /proc/PID/stat: time, env, prlimit and the command are one group (see `BoundedRun.run`).
func groupCPUSeconds(_ group: pid_t) -> Double {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var total = 0.0
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where name.first?.isNumber == true {
        // After "PID (comm) ": state, ppid, pgrp, … utime, stime, cutime, cstime are fields 11 to 14.
        guard let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, Int32(fields[2]) == group else { continue }
        total += fields[11...14].compactMap { Double($0) }.reduce(0, +) / ticks
    }
    return total
}

/// NUL-terminated C strings for argv/envp, alive during `body`.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
