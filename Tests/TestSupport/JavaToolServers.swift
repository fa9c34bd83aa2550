import APKCore
import Foundation

/// Java command-line tools (apksigner 31's and 35's `ApkSignerTool`, apktool, keytool) run as requests to long-lived JVMs
/// (`Tests/Oracles/JavaToolServer.java`) instead of one JVM per run: the suites run apksigner thousands of times,
/// and a short run spends most of its CPU starting the JVM, loading classes and compiling. A request gives what a
/// separate process gives (stdout, stderr, exit status; the JVM's "Picked up JAVA_TOOL_OPTIONS" line included),
/// and `run` returns nil, so that the caller starts a process, for what a server could not give exactly: standard
/// input, a working directory, JVM options in the environment other than the suites' own, or no `javac` to build
/// the server with. A server runs one request at a time; each tool has up to one server per core. They end with
/// the test process (their standard input closes). `APKPATCH_TEST_JAVA_SERVERS=0` turns them off.
public enum JavaToolServers {
    /// A tool: its class path and main class, and the JVM options its own launcher passes.
    public struct Tool: Hashable, Sendable {
        public let classpath: [String]
        public let mainClass: String
        public let jvmOptions: [String]

        public init(classpath: [String], mainClass: String, jvmOptions: [String] = []) {
            self.classpath = classpath
            self.mainClass = mainClass
            self.jvmOptions = jvmOptions
        }

        /// Debian's `apksigner` (build-tools 31.0.2): its script runs `java -Xmx1024M -Djava.library.path= -jar
        /// /usr/share/java/apksigner.jar` (the jar's manifest adds apksig.jar to the class path); nil when the
        /// `apksigner` on PATH is not that script.
        static let debianApksigner: Tool? = {
            let jar = "/usr/share/java/apksigner.jar"
            guard let script = TestSupport.executablePath("apksigner"),
                  let text = try? String(contentsOfFile: URL(fileURLWithPath: script).resolvingSymlinksInPath().path, encoding: .utf8),
                  text.contains("jarfile=apksigner.jar"), text.contains("libdir=/usr/share/java"), text.contains("defaultMx=\"-Xmx1024M\""),
                  FileManager.default.fileExists(atPath: jar) else { return nil }
            return Tool(classpath: [jar], mainClass: "com.android.apksigner.ApkSignerTool", jvmOptions: ["-Xmx1024M", "-Djava.library.path="])
        }()

        /// Debian's `apktool` (2.7.0): its script runs `java -Xmx512M -Dfile.encoding=utf-8 -cp "/usr/share/apktool/*"
        /// brut.apktool.Main` with its working directory appended to PATH (for aapt), after linking
        /// ~/.local/share/apktool/framework/1.apk to framework-res.apk the first time (so a request waits until a
        /// process has done that: `run` returns nil before). Nil when the `apktool` on PATH is not that script.
        static let debianApktool: Tool? = {
            guard let script = TestSupport.executablePath("apktool"),
                  let text = try? String(contentsOfFile: URL(fileURLWithPath: script).resolvingSymlinksInPath().path, encoding: .utf8),
                  text.contains("javaOpts=\"-Xmx512M -Dfile.encoding=utf-8\""), text.contains("-cp \"/usr/share/apktool/*\" brut.apktool.Main"),
                  text.contains("PATH=$PATH:`pwd`") else { return nil }
            return Tool(classpath: ["/usr/share/apktool/*"], mainClass: "brut.apktool.Main", jvmOptions: ["-Xmx512M", "-Dfile.encoding=utf-8"])
        }()

        /// The JDK's `keytool` (`sun.security.tools.keytool.Main`, in java.base), when the `keytool` on PATH is the
        /// launcher beside the `java` on PATH (which runs the servers): the launcher passes the JVM no options of
        /// its own. The tool's package is not exported, hence the one option a server needs to call its main.
        /// Nil otherwise.
        static let jdkKeytool: Tool? = {
            guard let keytool = TestSupport.executablePath("keytool"), let java = TestSupport.executablePath("java") else { return nil }
            let folders = [keytool, java].map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent().path }
            guard folders[0] == folders[1] else { return nil }
            return Tool(classpath: [], mainClass: "sun.security.tools.keytool.Main",
                        jvmOptions: ["--add-exports", "java.base/sun.security.tools.keytool=ALL-UNNAMED"])
        }()

        /// keytool arguments a server cannot run as a process would: the launcher gives any `-J…` argument to the
        /// JVM, and a provider added (`-addprovider`, `-providerclass`, `-providerpath`) would stay installed for
        /// the server's later runs.
        static func keytoolRunsInProcessOnly(_ arguments: [String]) -> Bool {
            arguments.contains { $0.hasPrefix("-J") || ["-addprovider", "-providerclass", "-providerpath"].contains($0) }
        }

        /// apktool's framework folder, which its script makes on the first run.
        static var apktoolFrameworkIsSetUp: Bool {
            let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
            return FileManager.default.fileExists(atPath: home + "/.local/share/apktool/framework/1.apk")
        }
    }

    /// The values of JAVA_TOOL_OPTIONS a request may carry: the suites' options for short runs, which change how
    /// fast a JVM computes, not what. The JVM prints the variable on stderr; the request's stderr starts with that line.
    static let toolOptionsServed: Set<String> = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]

    /// Variables a JVM reads once, as it starts (locale, time zone): servers started with other values are other servers.
    static func isReadAtStart(_ name: String) -> Bool { name == "LANG" || name.hasPrefix("LC_") || name == "TZ" }

    /// `tool ARGUMENTS` with `environment` set on top of this process's, as a separate `java` process would run
    /// it; nil when a server cannot give that exactly (the caller starts the process).
    public static func run(_ tool: Tool, _ arguments: [String], environment: [String: String]?) -> TestSupport.ProcessResult? {
        guard isEnabled else { return nil }
        let merged = ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }
        guard merged["_JAVA_OPTIONS"] == nil, merged["JDK_JAVA_OPTIONS"] == nil else { return nil }
        var stderrPrefix = ""
        if let options = merged["JAVA_TOOL_OPTIONS"] {
            guard options.split(separator: " ").allSatisfy({ toolOptionsServed.contains(String($0)) }) else { return nil }
            stderrPrefix = "Picked up JAVA_TOOL_OPTIONS: \(options)\n"
        }
        let startEnvironment = merged.filter { isReadAtStart($0.key) }
        let key = Key(tool: tool, startEnvironment: startEnvironment)
        guard let server = pool.take(key) else { return nil }
        do {
            let (status, stdout, stderr) = try server.request(arguments, environment: environment ?? [:])
            pool.give(server, back: key)
            return TestSupport.ProcessResult(status: status, stdout: String(decoding: stdout, as: UTF8.self),
                                             stderr: stderrPrefix + String(decoding: stderr, as: UTF8.self))
        } catch {
            // The server died or broke the protocol: this request goes to a process of its own, and the slot to a new server.
            server.stop()
            pool.forget(key)
            return nil
        }
    }

    static let isEnabled = ProcessInfo.processInfo.environment["APKPATCH_TEST_JAVA_SERVERS"] != "0"

    /// `APKPATCH_TEST_JAVA_SERVER_LOG=FILE`: the servers' stderr is appended to FILE (the JVM's own messages, and
    /// each server's count of runs and CPU time as it ends), else discarded.
    static let serverLog: Int32? = ProcessInfo.processInfo.environment["APKPATCH_TEST_JAVA_SERVER_LOG"].flatMap { path in
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        return descriptor >= 0 ? descriptor : nil
    }

    struct Key: Hashable {
        let tool: Tool
        let startEnvironment: [String: String]
    }

    private static let pool = Pool()

    /// Idle servers by key; up to one server per core for each key (a test thread waits for one when all are busy).
    private final class Pool: @unchecked Sendable {
        private let condition = NSCondition()
        private var idle: [Key: [Server]] = [:]
        private var started: [Key: Int] = [:]
        private let limit = max(1, ProcessInfo.processInfo.activeProcessorCount)

        func take(_ key: Key) -> Server? {
            condition.lock()
            while true {
                if var servers = idle[key], let server = servers.popLast() {
                    idle[key] = servers
                    condition.unlock()
                    return server
                }
                if started[key, default: 0] < limit {
                    started[key, default: 0] += 1
                    condition.unlock()
                    guard let server = Server.start(key) else {
                        forget(key)
                        return nil
                    }
                    return server
                }
                condition.wait()
            }
        }

        func give(_ server: Server, back key: Key) {
            condition.lock()
            idle[key, default: []].append(server)
            condition.signal()
            condition.unlock()
        }

        func forget(_ key: Key) {
            condition.lock()
            started[key, default: 1] -= 1
            condition.signal()
            condition.unlock()
        }
    }

    /// One JVM running JavaToolServer for one tool.
    private final class Server: @unchecked Sendable {
        private let process: Process
        private let requests: FileHandle
        private let responses: FileHandle

        private init(process: Process, requests: FileHandle, responses: FileHandle) {
            self.process = process
            self.requests = requests
            self.responses = responses
        }

        static func start(_ key: Key) -> Server? {
            guard let classes = try? compiledServer.get(), let java = TestSupport.executablePath("java") else { return nil }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: java)
            process.arguments = key.tool.jvmOptions + [
                // The server's own needs: System.exit caught by a SecurityManager, System.getenv's map written, its
                // class on the boot class path (its frame hidden from stack traces), the JVM's warnings kept off
                // the protocol's stdout.
                "-Djava.security.manager=allow", "--add-opens", "java.base/java.util=ALL-UNNAMED", "-Xbootclasspath/a:\(classes)",
                "-Xlog:disable", "-Xlog:all=warning:stderr", "-XX:+UseSerialGC",
            ] + (key.tool.classpath.isEmpty ? [] : ["-cp", key.tool.classpath.joined(separator: ":")]) + ["JavaToolServer", key.tool.mainClass]
            var environment = ProcessInfo.processInfo.environment.merging(key.startEnvironment) { $1 }
            environment["JAVA_TOOL_OPTIONS"] = nil
            process.environment = environment
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = serverLog.map { FileHandle(fileDescriptor: $0, closeOnDealloc: false) } ?? FileHandle.nullDevice
            do { try process.run() } catch { return nil }
            return Server(process: process, requests: input.fileHandleForWriting, responses: output.fileHandleForReading)
        }

        func request(_ arguments: [String], environment: [String: String]) throws -> (Int32, Data, Data) {
            var message = Data()
            func put(_ value: Int) { withUnsafeBytes(of: Int32(value).bigEndian) { message.append(contentsOf: $0) } }
            func put(_ string: String) { put(string.utf8.count); message.append(contentsOf: Array(string.utf8)) }
            put(arguments.count)
            arguments.forEach(put)
            put(environment.count)
            for (name, value) in environment.sorted(by: { $0.key < $1.key }) { put(name); put(value) }
            try requests.write(contentsOf: message)
            let status = try readInt()
            let stdout = try read(count: Int(try readInt()))
            let stderr = try read(count: Int(try readInt()))
            return (status, stdout, stderr)
        }

        private func readInt() throws -> Int32 {
            let bytes = try read(count: 4)
            return bytes.reduce(0) { $0 << 8 | Int32($1) }
        }

        private func read(count: Int) throws -> Data {
            guard count >= 0 else { throw FixtureError(message: "JavaToolServer: a negative length") }
            var data = Data()
            while data.count < count {
                guard let chunk = try responses.read(upToCount: count - data.count), !chunk.isEmpty else {
                    throw FixtureError(message: "JavaToolServer ended")
                }
                data.append(chunk)
            }
            return data
        }

        func stop() {
            try? requests.close()
            if process.isRunning { process.terminate() }
        }
    }

    /// JavaToolServer.java compiled with `javac` once per test process, into its temporary folder; a failure
    /// means separate processes.
    private static let compiledServer: Result<String, any Error> = Result {
        let source = TestSupport.packageRoot.appendingPathComponent("Tests/Oracles/JavaToolServer.java").path
        let classes = try TestSupport.sharedByTests { try TestSupport.makeTemporaryDirectory("java-tool-server") }.path
        let result = try TestSupport.run("javac", ["-nowarn", "--add-exports", "java.base/jdk.internal.vm.annotation=ALL-UNNAMED", "-d", classes, source])
        guard result.succeeded else { throw FixtureError(message: "javac JavaToolServer.java failed:\n\(result)") }
        return classes
    }
}
