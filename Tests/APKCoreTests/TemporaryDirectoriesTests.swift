import Foundation
import Testing
@testable import TestSupport

/// The tests' temporary directories (TestSupport's `TemporaryDirectories`): a passing test's go when its suite
/// ends (at once outside a suite's scope), a failing test's stay, a shared fixture's stay until the process
/// exits. The trait is run here by hand around a stand-in test body, so this suite itself does not carry it.
@Suite struct TemporaryDirectoriesTests {
    final class Made: @unchecked Sendable { var url: URL? }
    struct Deliberate: Error {}

    static func exists(_ url: URL?) -> Bool { url.map { FileManager.default.fileExists(atPath: $0.path) } ?? false }

    /// Runs `body` as the trait runs a test of a marked suite (this test's own case stands for it).
    static func asMarkedTest(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await RemovesTemporaryDirectoriesTrait().provideScope(for: Test.current!, testCase: Test.Case.current) { try body() }
    }

    static func makeFilled(_ label: String, into made: Made) throws {
        let url = try TestSupport.makeTemporaryDirectory(label)
        try TestSupport.write("content", to: "sub/file.txt", in: url)
        made.url = url
    }

    @Test("a passing test's directories are handed to its suite and removed when the suite ends, contents and all")
    func passingTestsDirectoriesGoWithTheSuite() async throws {
        let made = Made(), suite = TestDirectories()
        try await TemporaryDirectories.$currentSuite.withValue(suite) {
            try await Self.asMarkedTest { try Self.makeFilled("scope-suite", into: made) }
        }
        #expect(Self.exists(made.url))
        suite.endSuite()
        #expect(made.url != nil)
        #expect(!Self.exists(made.url))
    }

    @Test("outside a suite's scope, a passing test's directories are removed when it ends, contents and all")
    func passingTestsDirectoriesGo() async throws {
        let made = Made()
        try await Self.asMarkedTest { try Self.makeFilled("scope-pass", into: made) }
        #expect(made.url != nil)
        #expect(!Self.exists(made.url))
    }

    @Test("a test that throws keeps its directories")
    func throwingTestsDirectoriesStay() async throws {
        let made = Made()
        await #expect(throws: Deliberate.self) {
            try await Self.asMarkedTest { try Self.makeFilled("scope-throw", into: made); throw Deliberate() }
        }
        #expect(Self.exists(made.url))
        try? FileManager.default.removeItem(at: made.url!)
    }

    @Test("a test with a failed expectation keeps its directories")
    func failingTestsDirectoriesStay() async throws {
        let made = Made()
        // The trait sees the issue first; the handler outside it then drops it, so that this test passes.
        try await IssueHandlingTrait.filterIssues { _ in false }.provideScope(for: Test.current!, testCase: Test.Case.current) {
            try await Self.asMarkedTest {
                try Self.makeFilled("scope-issue", into: made)
                Issue.record("a deliberate failure (this test checks that its directories are kept)")
            }
        }
        #expect(Self.exists(made.url))
        try? FileManager.default.removeItem(at: made.url!)
    }

    @Test("what a shared fixture makes outlives the test that made it")
    func sharedDirectoriesStay() async throws {
        let made = Made()
        try await Self.asMarkedTest { try TestSupport.sharedByTests { try Self.makeFilled("scope-shared", into: made) } }
        #expect(Self.exists(made.url))
        try? FileManager.default.removeItem(at: made.url!)
    }

    @Test("the directories are in one folder of this process, which a new test process removes once it has ended")
    func oneFolderPerProcess() throws {
        let url = try TestSupport.makeTemporaryDirectory("scope-folder")
        defer { try? FileManager.default.removeItem(at: url) }
        let folder = url.deletingLastPathComponent()
        #expect(folder.lastPathComponent.hasPrefix("apkpatch-tests-\(getpid())-"))
        #expect(folder.deletingLastPathComponent().standardizedFileURL == FileManager.default.temporaryDirectory.standardizedFileURL)
    }

    @Test("a folder whose process has ended is removed, unless it kept something; a running process's is left")
    func abandonedFoldersGo() throws {
        let base = try TestSupport.makeTemporaryDirectory("scope-abandoned")
        defer { try? FileManager.default.removeItem(at: base) }
        // No process has a number above pid_max.
        let maxText = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
        let gone = try #require(Int(maxText.trimmingCharacters(in: .whitespacesAndNewlines))) + 1
        let names = ["apkpatch-tests-\(gone)-0000000a", "apkpatch-tests-\(gone)-0000000b", "apkpatch-tests-\(getpid())-0000000c",
                     "apkpatch-tests-\(getppid())-0000000d", "other-\(gone)-0000000e"]
        for name in names { try TestSupport.write("x", to: "\(name)/d/f", in: base) }
        try TestSupport.write("", to: "\(names[1])/\(TemporaryDirectories.keptMarker)", in: base)
        TemporaryDirectories.removeAbandonedFolders(in: base)
        let left = try FileManager.default.contentsOfDirectory(atPath: base.path).sorted()
        #expect(left == Array(names.dropFirst()).sorted())
    }
}

/// The runner gives the trait a scope for the marked suite and one for each of its tests.
@Suite(.removesTemporaryDirectories) struct MarkedSuiteTests {
    @Test("a test of a marked suite runs in its suite's scope and its own")
    func runsInBothScopes() {
        #expect(TemporaryDirectories.currentSuite != nil)
        #expect(TemporaryDirectories.currentTest != nil)
        #expect(TemporaryDirectories.currentSuite !== TemporaryDirectories.currentTest)
    }
}
