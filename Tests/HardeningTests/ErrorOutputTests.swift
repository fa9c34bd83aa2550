import CommandFuzz
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// An error message is written to stderr in one piece. ArgumentParser's own exit writes it a byte per write(2)
/// on unbuffered stderr: an unknown option of 100 KB (the kernel's limit for one argument is 128 KiB) took
/// 100,000 system calls, and a 3 MB message (a long name echoed from a patch file) seconds of system time.
@Suite(.removesTemporaryDirectories) struct ErrorOutputTests {
    /// What one run of apkpatch wrote and how many write system calls it made, counted by the kernel
    /// (`syscw` of /proc/PID/io, read while the exited process is still a zombie: no tracer needed).
    struct Counted {
        var status: Int32
        var stdout: String
        var stderr: String
        var writeCalls: Int
    }

    static func runCountingWrites(_ arguments: [String], in dir: URL) throws -> Counted {
        let outPath = dir.appendingPathComponent("stdout-\(UUID().uuidString)").path
        let errPath = dir.appendingPathComponent("stderr-\(UUID().uuidString)").path
        let (pid, spawned) = spawnInOwnGroup([TestSupport.apkpatchBinary] + arguments, environment: ProcessInfo.processInfo.environment,
                                             stdout: outPath, stderr: errPath)
        try #require(spawned == 0, "posix_spawn: \(String(cString: strerror(spawned)))")
        // Wait for the exit but leave the process a zombie, so its counters can still be read.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
            try #require(errno == EINTR, "waitid: \(String(cString: strerror(errno)))")
        }
        let io = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let line = io.split(separator: "\n").first { $0.hasPrefix("syscw:") }
        let writeCalls = try #require(line.flatMap { Int($0.dropFirst("syscw:".count).trimmingCharacters(in: .whitespaces)) },
                                      "no syscw in /proc/\(pid)/io: \(io)")
        let exited = status & 0x7f == 0
        return Counted(status: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f),
                       stdout: String(decoding: try TestSupport.readBytes(outPath), as: UTF8.self),
                       stderr: String(decoding: try TestSupport.readBytes(errPath), as: UTF8.self),
                       writeCalls: writeCalls)
    }

    /// An unknown option of 100 KB: a usage error (64) worded by ArgumentParser, the option cut to 80 characters as
    /// any long text a user wrote (it was a dump of ArgumentParser's internal error, exit status 1, once past 256
    /// characters), in one write.
    @Test func aLongUnknownOptionIsAUsageErrorInOneWrite() throws {
        let dir = try TestSupport.makeTemporaryDirectory("error-output")
        defer { try? FileManager.default.removeItem(at: dir) }
        let option = "--" + String(repeating: "x", count: 100_000)
        let result = try Self.runCountingWrites(["verify", option, dir.appendingPathComponent("app.apk").path], in: dir)
        #expect(result.status == 64, "usage errors keep their exit status: \(result.status) \(result.stderr.prefix(300))")
        #expect(result.stderr.hasPrefix("Error: Unknown option '\(option.prefix(79))…\n"), "\(result.stderr.prefix(300))")
        #expect(result.stderr.hasSuffix("\nUsage: apkpatch verify [<options>] [<apks> ...]\n  See 'apkpatch verify --help' for more information.\n"),
                "\(result.stderr.suffix(300))")
        #expect(result.stdout.isEmpty)
        #expect(result.writeCalls <= 10, "\(result.writeCalls) write calls for \(result.stderr.utf8.count) bytes of message")
    }

    /// A usage error that a subcommand finds while it runs (here sign's split APK set without --out) shows that
    /// subcommand's usage, as one found while parsing does (it showed "Usage: apkpatch <subcommand>").
    @Test func aUsageErrorFoundWhileRunningShowsTheSubcommandsUsage() throws {
        let dir = try TestSupport.makeTemporaryDirectory("error-output")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Self.runCountingWrites(["sign", "--debug-keystore", dir.appendingPathComponent("debug.p12").path,
                                                 dir.appendingPathComponent("app.apks").path], in: dir)
        #expect(result.status == 64, "\(result.status) \(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: signing a split APK set needs --out"), "\(result.stderr)")
        #expect(result.stderr.contains("\nUsage: apkpatch sign --ks release.jks "), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("\n  See 'apkpatch sign --help' for more information.\n"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.writeCalls <= 10, "\(result.writeCalls) write calls for \(result.stderr.utf8.count) bytes of message")
    }

    /// Help and version still reach stdout; a failure's message and a short usage error are written in one piece too.
    @Test func helpAndVersionStillGoToStdout() throws {
        let dir = try TestSupport.makeTemporaryDirectory("error-output")
        defer { try? FileManager.default.removeItem(at: dir) }
        let version = try Self.runCountingWrites(["--version"], in: dir)
        #expect(version.status == 0 && version.stdout.hasPrefix("apkpatch ") && version.stderr.isEmpty, "\(version)")
        let help = try Self.runCountingWrites(["unpack", "--help"], in: dir)
        #expect(help.status == 0 && help.stdout.contains("USAGE: apkpatch unpack") && help.stderr.isEmpty, "\(help)")
        let failure = try Self.runCountingWrites(["unpack", dir.appendingPathComponent("missing.apk").path, "-o", dir.appendingPathComponent("o").path], in: dir)
        #expect(failure.status == 1 && failure.stderr.hasPrefix("Error: ") && failure.stdout.isEmpty, "\(failure)")
        #expect(failure.writeCalls <= 10, "\(failure.writeCalls) write calls for \(failure.stderr.utf8.count) bytes of message")
        let usage = try Self.runCountingWrites(["unpack", "--no-such-option", "app.apk", "-o", "x"], in: dir)
        #expect(usage.status == 64 && usage.stderr.hasPrefix("Error: Unknown option '--no-such-option'\nUsage: apkpatch unpack ") && usage.stdout.isEmpty, "\(usage)")
    }
}
