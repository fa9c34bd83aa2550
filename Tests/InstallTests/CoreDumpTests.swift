import Foundation
import Testing
import TestSupport

/// A command that reads a keystore's password and private key turns core dumps off, soft and hard limit, for
/// itself and what it starts: a crash or a SIGQUIT must not leave the key and the password in a core file (or
/// in systemd-coredump's store). The fake adb, which `run --install` starts, reports the limits it inherited.
@Suite(.removesTemporaryDirectories) struct CoreDumpTests {
    @Test func signingCommandsRunWithoutCoreDumps() throws {
        let (work, _, arguments) = try RunInstallTests().prepare()
        let adb = try FakeADB()
        let limits = work.appendingPathComponent("limits.txt")
        let hook = work.appendingPathComponent("hook.sh")
        try "echo \"$(ulimit -Sc) $(ulimit -Hc)\" >> '\(limits.path)'\n".write(to: hook, atomically: true, encoding: .utf8)
        var environment = adb.environment()
        environment["FAKE_ADB_HOOK"] = hook.path
        // Core dumps allowed up to the hard limit first, so that a command that leaves the limits alone shows
        // (where the hard limit is already 0, nothing can show it).
        let script = #"ulimit -Sc "$(ulimit -Hc)"; echo "$(ulimit -Sc) $(ulimit -Hc)" >&2; exec "$@""#
        let result = try TestSupport.run("bash", ["-c", script, "bash", TestSupport.apkpatchBinary] + arguments + ["--install"],
                                         environment: environment)
        #expect(result.succeeded, "\(result)")
        let seen = try String(contentsOf: limits, encoding: .utf8).split(separator: "\n")
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == "0 0" }, "adb ran with core limits \(seen); before the run: \(result.stderr.prefix(40))")
    }
}
