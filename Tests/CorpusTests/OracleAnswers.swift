import Foundation
import TestSupport

/// What the oracles say, asked once per test process where the answer cannot change:
/// - about a corpus input: the suites compare several outputs of one input with the same dumps of it (`sign`, `run`
///   with and without an asset, decode then run, the edits: up to six times for a real-world app), and an input never
///   changes while the tests run;
/// - about bytes already judged: re-signing variants of one app that differ by their old signature alone give the
///   same signed APK, and so do `sign` and `run` without a patch for many apps.
/// The first asker runs the oracle, later askers of the same question read its answer (askers of other questions go
/// on meanwhile). Any other question (about an output, by its path) is asked afresh each time.
enum OracleAnswers {
    /// Whether `path` is a corpus input: a file under the real-world corpus's folder or the foreign corpus's (which
    /// `ForeignCorpusTests` builds once per process, before any test reads it).
    static func isInput(_ path: String) -> Bool {
        roots.contains { path.hasPrefix($0) }
    }

    private static let roots = [
        RealWorldCorpus.directory.path + "/",
        TestSupport.packageRoot.appendingPathComponent(".build/foreign-corpus").path + "/",
    ]

    /// Whether every absolute path among `arguments` is an input, and there is one: an answer that depends on
    /// inputs alone.
    static func asksAboutInputsOnly(_ arguments: [String]) -> Bool {
        let paths = arguments.filter { $0.hasPrefix("/") }
        return !paths.isEmpty && paths.allSatisfy(isInput)
    }

    /// `make()`'s value for `question` about the contents of `files`, computed once per process for the same bytes:
    /// the same question about byte-identical files (re-signing variants of one app that differ by their old
    /// signature alone, `sign` and `run` without a patch writing the same APK) gets the first file's answer. Only
    /// for answers that do not name the file (apksigner's verdict and signers); a file that cannot be read is asked
    /// about afresh.
    static func answer<T>(to question: [String], aboutTheBytesOf files: [String], _ make: () throws -> T) throws -> T {
        let digests = try TestSupport.run("sha256sum", files)
        let lines = digests.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        guard digests.succeeded, lines.count == files.count else { return try make() }
        return try answer(to: question + lines, cached: true, make)
    }

    /// `make()`'s value for `question` when `cached`, computed once per process; else `make()`.
    static func answer<T>(to question: [String], cached: Bool, _ make: () throws -> T) throws -> T {
        guard cached else { return try make() }
        let entry = lock.withLock {
            if let entry = entries[question] { return entry }
            let entry = Entry()
            entries[question] = entry
            return entry
        }
        return try entry.lock.withLock {
            if entry.result == nil { entry.result = Result { try make() as Any } }
            guard let value = try entry.result!.get() as? T else {
                throw FixtureError(message: "OracleAnswers: \(question) was answered with another type")
            }
            return value
        }
    }

    private final class Entry: @unchecked Sendable {
        let lock = NSLock()
        var result: Result<Any, any Error>?
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var entries: [[String]: Entry] = [:]
}
