import APKCore
import Foundation
import Testing

/// Where `TestSupport.makeTemporaryDirectory` puts the tests' scratch directories, and when they go. A test run
/// makes thousands of them (fixture APKs, keystores, signed outputs, some of framework-res's 45 MB), so none is
/// left behind by a run that ends normally, passed or failed:
/// - they all live in one folder per test process in the system temp directory (`apkpatch-tests-PID-…`),
///   removed when the process exits;
/// - in a suite marked `.removesTemporaryDirectories`, those its tests make go when the suite ends (not when
///   each test ends: a `static` of the suite may have made one for all its tests), but a failing test's (each
///   case of a parameterized one is a test here) are kept and named on stderr, to look at after the run;
/// - `APKPATCH_KEEP_TEST_DIRS=1` keeps all of them, and the process's folder is named when it exits.
/// A process's folder left by a crash or a kill is removed by the next test process, unless it kept something.
public enum TemporaryDirectories {
    static let keepVariable = "APKPATCH_KEEP_TEST_DIRS"
    static let folderPrefix = "apkpatch-tests-"
    /// In a process's folder that holds directories kept on purpose: the next process leaves that folder alone.
    static let keptMarker = "KEPT"

    static let keepsEverything: Bool = {
        guard let value = ProcessInfo.processInfo.environment[keepVariable] else { return false }
        return !value.isEmpty && value != "0"
    }()

    /// The directories of the test running in this task, when its suite removes them.
    @TaskLocal static var currentTest: TestDirectories?
    /// What the passing tests of the suite running in this task made, removed when the suite ends.
    @TaskLocal static var currentSuite: TestDirectories?

    private static let keptLock = Lock()
    nonisolated(unsafe) private static var kept: [URL] = []

    /// This process's folder, made on first use (when the folders of test processes that are gone are removed).
    static let root: Result<URL, any Error> = Result {
        let base = FileManager.default.temporaryDirectory
        removeAbandonedFolders(in: base)
        let url = base.appendingPathComponent("\(folderPrefix)\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { TemporaryDirectories.processExits() }
        return url
    }

    /// A new directory in this process's folder, owned by the current test if its suite removes them.
    static func make(_ label: String) throws -> URL {
        let url = try root.get().appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        currentTest?.add(url)
        return url
    }

    /// Runs `body` so that the directories it makes outlive the current test (until the process exits).
    static func outlivingTheTest<T>(_ body: () throws -> T) rethrows -> T {
        try $currentTest.withValue(nil) { try body() }
    }

    static func noteKept(_ directories: [URL]) { keptLock.withLock { kept += directories } }

    /// Removes this process's folder, but for what failed tests kept (all of it with APKPATCH_KEEP_TEST_DIRS).
    private static func processExits() {
        guard case .success(let folder) = root else { return }
        let fm = FileManager.default
        let keptNames = Set(keptLock.withLock { kept }.map(\.lastPathComponent)).filter {
            fm.fileExists(atPath: folder.appendingPathComponent($0).path)
        }
        guard keepsEverything || !keptNames.isEmpty else { try? fm.removeItem(at: folder); return }
        if !keepsEverything {
            for name in (try? fm.contentsOfDirectory(atPath: folder.path)) ?? [] where !keptNames.contains(name) {
                try? fm.removeItem(at: folder.appendingPathComponent(name))
            }
        }
        fm.createFile(atPath: folder.appendingPathComponent(keptMarker).path, contents: Data())
        FileHandle.standardError.write(Data("Test directories kept in \(folder.path)\n".utf8))
    }

    /// Removes the folders of test processes that have ended without removing theirs (killed, or crashed), except
    /// those that kept directories on purpose. A folder whose process still runs (another test run) is left.
    static func removeAbandonedFolders(in base: URL) {
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: base.path)) ?? [] where name.hasPrefix(folderPrefix) {
            let pidText = name.dropFirst(folderPrefix.count).prefix { $0 != "-" }
            guard let pid = pid_t(pidText), pid > 0, kill(pid, 0) == -1, errno == ESRCH else { continue }
            let folder = base.appendingPathComponent(name)
            guard !fm.fileExists(atPath: folder.appendingPathComponent(keptMarker).path) else { continue }
            try? fm.removeItem(at: folder)
        }
    }
}

/// The directories one test made, or those its suite's passing tests made (see `TemporaryDirectories`).
final class TestDirectories: @unchecked Sendable {
    private let lock = Lock()
    private var directories: [URL] = []
    private var failed = false

    func add(_ url: URL) { lock.withLock { directories.append(url) } }
    func add(_ urls: [URL]) { lock.withLock { directories += urls } }
    func noteFailure() { lock.withLock { failed = true } }

    /// At the end of a test: keeps the directories (and names them on stderr) when the test failed, else hands
    /// them to `suite`, or removes them when there is none.
    func endTest(_ test: Test, suite: TestDirectories?) {
        let (directories, failed) = lock.withLock { (self.directories, self.failed) }
        guard !directories.isEmpty, !TemporaryDirectories.keepsEverything else { return }
        if failed {
            TemporaryDirectories.noteKept(directories)
            let list = directories.map { "  \($0.path)\n" }.joined()
            let place = "\(test.sourceLocation.fileID):\(test.sourceLocation.line)"
            FileHandle.standardError.write(Data("\(test.name) (\(place)) recorded a failure; its directories are kept:\n\(list)".utf8))
        } else if let suite {
            suite.add(directories)
        } else {
            Self.remove(directories)
        }
    }

    /// At the end of a suite: removes what its passing tests made.
    func endSuite() {
        guard !TemporaryDirectories.keepsEverything else { return }
        Self.remove(lock.withLock { directories })
    }

    private static func remove(_ directories: [URL]) {
        for url in directories { try? FileManager.default.removeItem(at: url) }
    }
}

/// On a suite: the temporary directories each of its tests makes are removed when the suite ends (a static of the
/// suite may have made them for its other tests too), unless that test failed (see `TemporaryDirectories`). What
/// a `static` makes for tests of several suites goes through `TestSupport.sharedByTests`.
public struct RemovesTemporaryDirectoriesTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    /// Each suite (nested ones too) and each test case: the suite's scope holds what its tests hand over.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase != nil ? self : nil
    }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        if test.isSuite {
            let suite = TestDirectories()
            defer { suite.endSuite() }
            return try await TemporaryDirectories.$currentSuite.withValue(suite) { try await function() }
        }
        guard testCase != nil else { return try await function() }
        let directories = TestDirectories()
        defer { directories.endTest(test, suite: TemporaryDirectories.currentSuite) }
        // Sees each issue the test records (a failed #expect does not throw) and passes it on unchanged.
        let failures = IssueHandlingTrait.compactMapIssues { issue in
            if issue.isFailure { directories.noteFailure() }
            return issue
        }
        do {
            try await TemporaryDirectories.$currentTest.withValue(directories) {
                try await failures.provideScope(for: test, testCase: testCase, performing: function)
            }
        } catch {
            // A test that cancels itself (`Test.cancel`: it cannot run here, and says why) did not fail: what it
            // made goes as a passing test's does. Cancelling also cancels its task, which is how it is told apart.
            if !Task.isCancelled { directories.noteFailure() }
            throw error
        }
    }
}

extension Trait where Self == RemovesTemporaryDirectoriesTrait {
    /// The temporary directories of the suite's tests are removed when it ends, but for a failing test's.
    public static var removesTemporaryDirectories: Self { Self() }
}

extension TestSupport {
    /// Runs the initializer of something several tests share (a `static let`): the temporary directories it
    /// makes stay until the process exits, not only until the end of the test that happened to run it first.
    public static func sharedByTests<T>(_ body: () throws -> T) rethrows -> T {
        try TemporaryDirectories.outlivingTheTest(body)
    }
}
