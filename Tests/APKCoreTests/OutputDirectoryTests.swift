import Foundation
import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

/// A directory output (a split set's `--out DIR`) replaces the previous one in one step, and a commit that
/// fails leaves the previous one whole.
@Suite(.removesTemporaryDirectories) struct OutputDirectoryTests {
    /// A parent directory holding `out/` with the files of an earlier output.
    static func previousOutput(_ label: String) -> (parent: String, destination: String) {
        let parent = WorkingFilesTests.makeDirectory("outdir-\(label)")
        let destination = parent + "/out"
        mkdir(destination, 0o755)
        for name in ["base.apk", "split_config.fr.apk"] { WorkingFilesTests.write("old \(name)", to: destination + "/" + name) }
        return (parent, destination)
    }

    static func contents(_ directory: String) -> [String: String] {
        var result: [String: String] = [:]
        for name in WorkingFilesTests.names(directory) {
            result[name] = (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? "?"
        }
        return result
    }

    static let oldFiles = ["base.apk": "old base.apk", "split_config.fr.apk": "old split_config.fr.apk"]

    /// Writes a new output (one file) into `staging` and commits it.
    static func commitNew(_ staging: OutputDirectory) throws {
        WorkingFilesTests.write("new base.apk", to: staging.path(for: "base.apk"))
        try staging.commit { $0.hasSuffix(".apk") }
    }

    @Test("the previous output is swapped out with renameat2(RENAME_EXCHANGE), not removed first")
    func exchangeReplacesThePreviousOutput() throws {
        let (parent, destination) = Self.previousOutput("exchange")
        defer { OutputDirectory.removeTree(parent) }
        let calls = CallLog()
        var renames = OutputDirectory.Renames.system
        let system = renames
        renames.exchange = { from, to in
            // At the moment of the swap the previous output is still whole at its place.
            calls.append("exchange: \(OutputDirectoryTests.contents(to) == OutputDirectoryTests.oldFiles)")
            return system.exchange(from, to)
        }
        renames.rename = { from, to in calls.append("rename"); return system.rename(from, to) }
        let staging = try OutputDirectory(destination: destination, renames: renames)
        try Self.commitNew(staging)
        #expect(calls.entries == ["exchange: true"], "one exchange, no rename")
        #expect(Self.contents(destination) == ["base.apk": "new base.apk"])
        #expect(WorkingFilesTests.names(parent) == ["out"], "the previous output and the staging directory are gone")
    }

    @Test("the kernel's exchange swaps two directories here (else the test above proves nothing)")
    func systemExchangeWorks() throws {
        let parent = WorkingFilesTests.makeDirectory("outdir-system")
        defer { OutputDirectory.removeTree(parent) }
        mkdir(parent + "/a", 0o755)
        mkdir(parent + "/b", 0o755)
        WorkingFilesTests.write("in a", to: parent + "/a/file")
        #expect(OutputDirectory.Renames.system.exchange(parent + "/a", parent + "/b") == 0)
        #expect(Self.contents(parent + "/b") == ["file": "in a"] && Self.contents(parent + "/a").isEmpty)
    }

    @Test("without exchange (EINVAL, ENOSYS) the old output is moved aside, replaced, then removed", arguments: [EINVAL, ENOSYS])
    func fallbackWithoutExchange(refusal: Int32) throws {
        let (parent, destination) = Self.previousOutput("fallback")
        defer { OutputDirectory.removeTree(parent) }
        var renames = OutputDirectory.Renames.system
        renames.exchange = { _, _ in refusal }
        let staging = try OutputDirectory(destination: destination, renames: renames)
        try Self.commitNew(staging)
        #expect(Self.contents(destination) == ["base.apk": "new base.apk"])
        #expect(WorkingFilesTests.names(parent) == ["out"])
    }

    @Test("a failed swap leaves the previous output whole and no staging directory")
    func failedSwapKeepsThePreviousOutput() throws {
        let (parent, destination) = Self.previousOutput("failed")
        defer { OutputDirectory.removeTree(parent) }
        // The exchange fails for another reason than a file system without it: nothing is tried after it.
        var renames = OutputDirectory.Renames.system
        renames.exchange = { _, _ in EIO }
        do {
            let staging = try OutputDirectory(destination: destination, renames: renames)
            #expect(throws: FileError.self) { try Self.commitNew(staging) }
        }
        #expect(Self.contents(destination) == Self.oldFiles)
        #expect(WorkingFilesTests.names(parent) == ["out"])

        // Without exchange, the new output cannot take the old one's place: the old one is put back.
        let system = OutputDirectory.Renames.system
        let destinationPath = destination
        renames.exchange = { _, _ in EINVAL }
        let moves = CallLog()
        renames.rename = { from, to in
            // The first move onto the destination is the new output's; the second puts the old one back.
            guard to == destinationPath else { return system.rename(from, to) }
            moves.append(from)
            return moves.entries.count == 1 ? EACCES : system.rename(from, to)
        }
        do {
            let staging = try OutputDirectory(destination: destination, renames: renames)
            #expect(throws: FileError.self) { try Self.commitNew(staging) }
        }
        #expect(moves.entries.count == 2, "the old output was put back: \(moves.entries)")
        #expect(Self.contents(destination) == Self.oldFiles)
        #expect(WorkingFilesTests.names(parent) == ["out"])
    }

    @Test("a new destination is the staging directory renamed")
    func newDestination() throws {
        let parent = WorkingFilesTests.makeDirectory("outdir-new")
        defer { OutputDirectory.removeTree(parent) }
        let staging = try OutputDirectory(destination: parent + "/out")
        try Self.commitNew(staging)
        #expect(Self.contents(parent + "/out") == ["base.apk": "new base.apk"])
        #expect(WorkingFilesTests.names(parent) == ["out"])
    }
}

/// Calls recorded from `@Sendable` closures.
final class CallLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ entry: String) { lock.lock(); items.append(entry); lock.unlock() }
    var entries: [String] { lock.lock(); defer { lock.unlock() }; return items }
}
