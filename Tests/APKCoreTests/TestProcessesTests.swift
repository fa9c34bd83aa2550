import Foundation
import Testing
@testable import TestSupport

/// How the tests start the oracles (TestSupport's `run`): a child's status, output, input, environment, working
/// directory and PATH lookup as Foundation's `Process` through `env` gave them; and apksigner run by a long-lived
/// JVM (`JavaToolServers`) gives what apksigner in a process of its own gives, for Debian's 31 and build-tools 35,
/// and so do Debian's apktool and the JDK's keytool.
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

    /// A small APK built with aapt, signed by apksigner in a process of its own with a keytool key (the password in
    /// the environment, as the suites pass it).
    static func signedFixture() throws -> (apk: String, keyStore: String, directory: URL) {
        let directory = try TestSupport.makeTemporaryDirectory("java-tool-servers")
        let unsigned = try FixtureAPK().build(in: directory, name: "unsigned.apk")
        let keyStore = directory.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keyStore, password: "server-pass", dname: "CN=Java tool servers")
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.runProcess("apksigner", ["sign", "--ks", keyStore, "--ks-pass", "env:SERVER_KS_PASS", "--out", signed, unsigned],
                                              environment: ["SERVER_KS_PASS": "server-pass"])
        try #require(sign.succeeded, "\(sign)")
        return (signed, keyStore, directory)
    }

    /// Requests whose answers cover the ways a run ends: verified (with the JVM options' line on stderr), refused,
    /// an option error, an uncaught exception (a stack trace), usage text, an environment variable read.
    static func requests(apk: String, keyStore: String, directory: URL) -> [(arguments: [String], environment: [String: String])] {
        let java = ["JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC", "LC_ALL": "C.UTF-8"]
        let notAnAPK = directory.appendingPathComponent("fixture.apk").path + ".missing"
        return [
            (["verify", "-v", "--print-certs", apk], java),
            (["verify", "--min-sdk-version", "24", "--max-sdk-version", "20", apk], [:]),
            (["verify", "--no-such-option", apk], [:]),
            (["verify", notAnAPK], java),
            (["verify", keyStore], [:]),
            (["sign"], [:]),
            (["sign", "--ks", keyStore, "--ks-pass", "env:SERVER_KS_PASS", "--out", directory.appendingPathComponent("resigned.apk").path, apk],
             ["SERVER_KS_PASS": "wrong-pass"]),
        ]
    }

    @Test("apksigner 31 through a long-lived JVM: the same stdout, stderr and exit status as in a process of its own")
    func debianApksignerServerMatchesProcesses() throws {
        let tool = try #require(JavaToolServers.Tool.debianApksigner, "Debian's apksigner script is not on PATH (make test-deps installs it)")
        let fixture = try Self.signedFixture()
        for request in Self.requests(apk: fixture.apk, keyStore: fixture.keyStore, directory: fixture.directory) {
            let served = try #require(JavaToolServers.run(tool, request.arguments, environment: request.environment), "not served: \(request)")
            let separate = try TestSupport.runProcess("apksigner", request.arguments, environment: request.environment)
            #expect(served.status == separate.status && served.stdout == separate.stdout && served.stderr == separate.stderr,
                    "\(request.arguments):\nserver: \(served)\nprocess: \(separate)")
        }
        // What a server signs is what a process signs (RSA PKCS#1 v1.5 signatures are deterministic).
        let outputs = ["served.apk", "separate.apk"].map { fixture.directory.appendingPathComponent($0).path }
        let arguments = { (out: String) in ["sign", "--ks", fixture.keyStore, "--ks-pass", "env:SERVER_KS_PASS", "--out", out, fixture.apk] }
        let served = try #require(JavaToolServers.run(tool, arguments(outputs[0]), environment: ["SERVER_KS_PASS": "server-pass"]))
        let separate = try TestSupport.runProcess("apksigner", arguments(outputs[1]), environment: ["SERVER_KS_PASS": "server-pass"])
        #expect(served.succeeded && separate.succeeded, "server: \(served)\nprocess: \(separate)")
        #expect(try TestSupport.readBytes(outputs[0]) == TestSupport.readBytes(outputs[1]))
    }

    @Test("apksigner 35 through a long-lived JVM: the same stdout, stderr and exit status as in a process of its own")
    func newerApksignerServerMatchesProcesses() throws {
        let tool = try NewerApksigner.tool()
        let fixture = try Self.signedFixture()
        for request in Self.requests(apk: fixture.apk, keyStore: fixture.keyStore, directory: fixture.directory).prefix(5) {
            let served = try #require(JavaToolServers.run(tool, request.arguments, environment: request.environment), "not served: \(request)")
            let separate = try NewerApksigner.runProcess(request.arguments, environment: request.environment)
            #expect(served.status == separate.status && served.stdout == separate.stdout && served.stderr == separate.stderr,
                    "\(request.arguments):\nserver: \(served)\nprocess: \(separate)")
        }
    }

    @Test("apktool through a long-lived JVM: the same output, status and decoded files as in a process of its own")
    func apktoolServerMatchesProcesses() throws {
        let tool = try #require(JavaToolServers.Tool.debianApktool, "Debian's apktool script is not on PATH (make test-deps installs it)")
        let directory = try TestSupport.makeTemporaryDirectory("java-tool-servers-apktool")
        let apk = try FixtureAPK.cordovaLike().build(in: directory)
        if !JavaToolServers.Tool.apktoolFrameworkIsSetUp { try TestSupport.runProcess("apktool", ["--version"]) }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":" + FileManager.default.currentDirectoryPath
        for (label, options, input) in [("decoded", ["-f"], apk), ("refused", ["-f", "-s"], directory.appendingPathComponent("missing.apk").path)] {
            let served = directory.appendingPathComponent("\(label)-served").path, separate = directory.appendingPathComponent("\(label)-separate").path
            let a = try #require(JavaToolServers.run(tool, ["d"] + options + ["-o", served, input], environment: ["LC_ALL": "C.UTF-8", "PATH": path]))
            let b = try TestSupport.runProcess("apktool", ["d"] + options + ["-o", separate, input], environment: ["LC_ALL": "C.UTF-8"])
            #expect(a.status == b.status && a.stdout.replacingOccurrences(of: served, with: "OUT") == b.stdout.replacingOccurrences(of: separate, with: "OUT")
                        && a.stderr.replacingOccurrences(of: served, with: "OUT") == b.stderr.replacingOccurrences(of: separate, with: "OUT"),
                    "\(label):\nserver: \(a)\nprocess: \(b)")
            let trees = try [served, separate].map { root in
                FileManager.default.fileExists(atPath: root) ? try FileManager.default.subpathsOfDirectory(atPath: root).sorted().map { name in
                    (name, try? Data(contentsOf: URL(fileURLWithPath: root + "/" + name))) } : []
            }
            #expect(trees[0].map(\.0) == trees[1].map(\.0) && trees[0].map(\.1) == trees[1].map(\.1) && (label == "refused" || !trees[0].isEmpty),
                    "\(label): other files decoded")
        }
    }

    @Test("keytool through a long-lived JVM: the same stdout, stderr, exit status and files as in a process of its own")
    func keytoolServerMatchesProcesses() throws {
        let tool = try #require(JavaToolServers.Tool.jdkKeytool, "the keytool on PATH is not the JDK's launcher beside java")
        let directory = try TestSupport.makeTemporaryDirectory("java-tool-servers-keytool")
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        let password = ["KT_PASS": "kt-Pass-1"]
        let generate = { (store: String) in
            ["-genkeypair", "-keystore", store, "-storetype", "PKCS12", "-alias", "release", "-keyalg", "RSA", "-keysize", "2048",
             "-validity", "3650", "-dname", "CN=Java tool servers, O=apkpatch", "-storepass:env", "KT_PASS", "-keypass:env", "KT_PASS"]
        }
        let made = try TestSupport.runProcess("keytool", generate(path("fixture.p12")), environment: password)
        try #require(made.succeeded, "\(made)")
        let store = ["-keystore", path("fixture.p12"), "-storepass:env", "KT_PASS"]
        // Listed, refused (wrong password, no store, an unknown command, a variable not set), printed and written.
        let requests: [(arguments: [String], environment: [String: String], writes: String?)] = [
            (["-list"] + store, password, nil),
            (["-list", "-v"] + store, password, nil),
            (["-list"] + store, ["KT_PASS": "wrong-pass"], nil),
            (["-list", "-keystore", path("missing.p12"), "-storepass:env", "KT_PASS"], password, nil),
            (["-nosuchcommand"], [:], nil),
            (generate(path("unset.p12")), [:], nil),
            (["-exportcert", "-rfc", "-alias", "release"] + store, password, nil),
            (["-exportcert", "-alias", "release", "-file", "OUT"] + store, password, "cert.der"),
        ]
        for request in requests {
            let outputs = request.writes.map { name in ["served-", "separate-"].map { path($0 + name) } }
            let arguments = { (index: Int) in request.arguments.map { $0 == "OUT" ? outputs![index] : $0 } }
            let served = try #require(JavaToolServers.run(tool, arguments(0), environment: request.environment), "not served: \(request)")
            let separate = try TestSupport.runProcess("keytool", arguments(1), environment: request.environment)
            let texts = [(served, 0), (separate, 1)].map { result, index in
                [result.stdout, result.stderr].map { text in outputs.map { text.replacingOccurrences(of: $0[index], with: "OUT") } ?? text }
            }
            #expect(served.status == separate.status && texts[0] == texts[1], "\(request.arguments):\nserver: \(served)\nprocess: \(separate)")
            if let outputs {
                #expect(try TestSupport.readBytes(outputs[0]) == TestSupport.readBytes(outputs[1]), "\(request.arguments): other bytes written")
            }
        }
        // A new key: the same messages, and a store that keytool in a process lists as it lists its own (what depends
        // on the key and the moment left out: serial number, validity, fingerprints, key identifier).
        let stores = [path("served.p12"), path("separate.p12")]
        let served = try #require(JavaToolServers.run(tool, generate(stores[0]), environment: password))
        let separate = try TestSupport.runProcess("keytool", generate(stores[1]), environment: password)
        #expect(served.status == 0 && served.status == separate.status && served.stdout == separate.stdout && served.stderr == separate.stderr,
                "server: \(served)\nprocess: \(separate)")
        let keyDependent = ["Serial number:", "Valid from:", "SHA1:", "SHA256:", "Certificate fingerprint", "0000:", "0010:"]
        let listings = try stores.map { store in
            let list = try TestSupport.runProcess("keytool", ["-list", "-v", "-keystore", store, "-storepass:env", "KT_PASS"], environment: password)
            return (list.status, list.stdout.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                keyDependent.first { line.trimmingCharacters(in: .whitespaces).hasPrefix($0) } ?? String(line)
            })
        }
        #expect(listings[0].0 == 0 && listings[0].0 == listings[1].0 && listings[0].1 == listings[1].1, "\(listings)")
    }

    @Test("what a server cannot give exactly goes to a process: standard input, a working directory, other JVM options")
    func unservedRequests() throws {
        let tool = try #require(JavaToolServers.Tool.debianApksigner)
        #expect(JavaToolServers.run(tool, ["--version"], environment: ["JAVA_TOOL_OPTIONS": "-Xmx64m"]) == nil)
        #expect(JavaToolServers.run(tool, ["--version"], environment: ["_JAVA_OPTIONS": "-Xmx64m"]) == nil)
        #expect(JavaToolServers.run(tool, ["--version"], environment: nil)?.stdout == "0.9\n")
        // keytool's JVM options and the providers it adds: the JVM's own, for one run.
        #expect(JavaToolServers.Tool.keytoolRunsInProcessOnly(["-J-Dkeystore.pkcs12.legacy", "-list"]))
        #expect(JavaToolServers.Tool.keytoolRunsInProcessOnly(["-list", "-providerclass", "Example", "-providerpath", "/tmp"]))
        #expect(JavaToolServers.Tool.keytoolRunsInProcessOnly(["-list", "-addprovider", "SunPKCS11"]))
        #expect(!JavaToolServers.Tool.keytoolRunsInProcessOnly(["-list", "-providername", "SUN"]))
    }
}
