import Foundation

/// apksigner from build-tools 35 (Debian's later `apksigner` and `libapksig-java` packages, 35.0.2), beside
/// Debian 12's apksigner 31.0.2, which predates APK Signature Scheme v3.1 and so cannot check apkpatch's v3.1
/// rotations. Its jars are never in git: `make apksigner-new` (which `make test` runs) fetches the pinned
/// packages (scripts/oracles/fetch-apksigner.py) into `directory`, and `run` starts them with java.
public enum NewerApksigner {
    /// `$APKPATCH_APKSIGNER_NEW_DIR`, else `.build/oracles/apksigner-new` in the package (the Makefile's default).
    public static let directory: URL = ProcessInfo.processInfo.environment["APKPATCH_APKSIGNER_NEW_DIR"]
        .flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
        ?? TestSupport.packageRoot.appendingPathComponent(".build/oracles/apksigner-new")

    /// `apksigner ARGUMENTS` of build-tools 35.
    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String]? = nil) throws -> TestSupport.ProcessResult {
        let tool = try self.tool()
        if let result = JavaToolServers.run(tool, arguments, environment: environment) { return result }
        return try runProcess(arguments, environment: environment)
    }

    /// `run` in a process of its own.
    static func runProcess(_ arguments: [String], environment: [String: String]? = nil) throws -> TestSupport.ProcessResult {
        let tool = try self.tool()
        return try TestSupport.runProcess("java", ["-cp", tool.classpath.joined(separator: ":"), tool.mainClass] + arguments, environment: environment)
    }

    /// The jars and the main class; apksig's classes first: the apksigner jar's manifest also names Debian 12's apksig.jar.
    static func tool() throws -> JavaToolServers.Tool {
        let jars = ["apksig.jar", "apksigner.jar"].map { directory.appendingPathComponent($0).path }
        guard jars.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) else { throw missingError }
        return JavaToolServers.Tool(classpath: jars, mainClass: "com.android.apksigner.ApkSignerTool")
    }

    /// `verify -v` text of apksigner 35 (and apkpatch) as Debian's apksigner 31 prints it: without the
    /// "Verified using v3.1 scheme" line, which apksigner prints for every APK from build-tools 33 on.
    public static func asApksigner31(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("Verified using v3.1 scheme ") }.joined(separator: "\n")
    }

    static var missingError: FixtureError {
        let standard = directory.path == TestSupport.packageRoot.appendingPathComponent(".build/oracles/apksigner-new").path
        let command = standard ? "make apksigner-new" : "APKPATCH_APKSIGNER_NEW_DIR=\(directory.path) make apksigner-new"
        let place = "apksigner 35 (apksig.jar, apksigner.jar) is not in \(directory.path)"
        if ProcessInfo.processInfo.environment["CI"].map({ !$0.isEmpty }) ?? false {
            return FixtureError(message: "\(place): in CI `make test` fetches it first (`\(command)`); that step failed or did not run")
        }
        return FixtureError(message: "\(place): fetch it with `\(command)` (Debian's packages, pinned by SHA-256, about 1 MB)")
    }
}
