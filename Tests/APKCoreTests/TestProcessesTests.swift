import Foundation
import Testing
@testable import TestSupport

/// How the tests start the oracles (TestSupport's `run`): a child's status, output, input, environment, working
/// directory and PATH lookup as Foundation's `Process` through `env` gave them.
@Suite(.removesTemporaryDirectories) struct TestProcessesTests {
    @Test("a child's exit status, stdout and stderr apart, stdin, environment and working directory")
    func childOutputsAndInputs() throws {
        let script = #"printf 'out:%s:%s\n' "$APKPATCH_TEST_VALUE" "$(pwd)"; cat >&2; exit 3"#
        let directory = try TestSupport.makeTemporaryDirectory("test-processes")
        let result = try TestSupport.run("sh", ["-c", script], environment: ["APKPATCH_TEST_VALUE": "value"],
                                         currentDirectory: directory.path, stdin: "in\nput")
        #expect(result.status == 3)
        #expect(result.stdout == "out:value:\(directory.resolvingSymlinksInPath().path)\n")
        #expect(result.stderr == "in\nput")
        // No standard input given: an empty one, at its end at once.
        #expect(try TestSupport.run("cat", []).stdout.isEmpty)
        // More output than a pipe holds, on both streams, is read whole.
        let large = try TestSupport.run("sh", ["-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"])
        #expect(large.succeeded && large.stdout.utf8.count == 300_000 && large.stderr.utf8.count == 200_000)
    }

    @Test("a tool is found on the child's PATH by name, a missing one gives env's message and 127, a signal its number")
    func lookupAndEnding() throws {
        let directory = try TestSupport.makeTemporaryDirectory("test-processes-path")
        try TestSupport.write("#!/bin/sh\necho \"found as $0\"\n", to: "apkpatch-test-tool", in: directory)
        chmod(directory.appendingPathComponent("apkpatch-test-tool").path, 0o755)
        let path = directory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let found = try TestSupport.run("apkpatch-test-tool", [], environment: ["PATH": path])
        #expect(found.succeeded && found.stdout == "found as \(directory.path)/apkpatch-test-tool\n", "\(found)")
        let missing = try TestSupport.run("apkpatch-no-such-tool", [])
        #expect(missing.status == 127 && missing.stderr.contains("apkpatch-no-such-tool") && missing.stderr.contains("No such file"), "\(missing)")
        let killed = try TestSupport.run("sh", ["-c", "kill -KILL $$"])
        #expect(killed.status == SIGKILL, "\(killed)")
    }
}
