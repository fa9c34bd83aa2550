import APKCore
import Foundation
@testable import Pipeline
import Testing
import TestSupport

/// Editors' saves against a running watch session. Most editors do not write a file in place: vim and Emacs rename
/// it to its backup and write it anew, JetBrains IDEs and GNOME write a temporary file and rename it over the real
/// one, other tools do the same under a name no rule knows. Whenever such a save lands between the build's scan of
/// the patch directory and its read of a file, that file is gone when read. That is a save in flight, not a failed
/// build (the save's own events build again); a file that is there but cannot be read is still a failure.
@Suite(.removesTemporaryDirectories) struct WatchSaveTests {
    /// A save of `text` to `path` in one editor's way.
    struct Save: Sendable {
        let editor: String
        let write: @Sendable (_ text: String, _ path: String) throws -> Void
    }

    static func writeFile(_ text: String, _ path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func renameFile(_ from: String, _ to: String) throws {
        guard rename(from, to) == 0 else { throw FixtureError(message: "rename \(from) \(to): \(String(cString: strerror(errno)))") }
    }

    static func folder(of path: String) -> String { (path as NSString).deletingLastPathComponent }

    static let saves: [Save] = [
        // vim (backupcopy=auto, writebackup): probes the folder with "4913", renames the file to its backup,
        // writes it anew, removes the backup.
        Save(editor: "vim") { text, path in
            let probe = folder(of: path) + "/4913"
            try writeFile("", probe)
            unlink(probe)
            try renameFile(path, path + "~")
            try writeFile(text, path)
            unlink(path + "~")
        },
        // JetBrains "safe write": a temporary file, the original renamed aside, the temporary renamed in.
        Save(editor: "JetBrains") { text, path in
            try writeFile(text, path + "___jb_tmp___")
            try renameFile(path, path + "___jb_old___")
            try renameFile(path + "___jb_tmp___", path)
            unlink(path + "___jb_old___")
        },
        // GNOME (gedit, GIO): a hidden temporary file renamed over the original.
        Save(editor: "GNOME") { text, path in
            let temporary = folder(of: path) + "/.goutputstream-Q3ZK9X"
            try writeFile(text, temporary)
            try renameFile(temporary, path)
        },
        // An atomic-write library: a temporary name no ignore rule knows, renamed over the original.
        Save(editor: "atomic write") { text, path in
            let temporary = folder(of: path) + "/." + (path as NSString).lastPathComponent + ".k3Rf9a"
            try writeFile(text, temporary)
            try renameFile(temporary, path)
        },
        // Emacs' first save of a visit: the original renamed to its backup, the file written anew (the backup stays).
        Save(editor: "Emacs") { text, path in
            try renameFile(path, path + "~")
            try writeFile(text, path)
        },
        // VS Code: in place.
        Save(editor: "VS Code") { text, path in try writeFile(text, path) },
    ]

    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [WatchSession.Event] = []
        func append(_ event: WatchSession.Event) { lock.withLock { all.append(event) } }
        var failures: [String] {
            lock.withLock { all.compactMap { if case .failed(let message, _) = $0 { return message } else { return nil } } }
        }
        var builds: Int { lock.withLock { all.filter { if case .built = $0 { return true } else { return false } }.count } }
        var stopped: Bool { lock.withLock { all.contains { if case .stopped = $0 { return true } else { return false } } } }
    }

    /// Waits up to `seconds` for `condition`.
    static func waitUntil(seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    /// Many saves while watch builds, with no failed build. Each round, a tool rewrites a set of assets, so the
    /// build that starts reads them for a while, and an atomic write pauses (an fsync under load does) between
    /// writing its temporary file and renaming it over the real one: the build has listed the temporary file, and
    /// finds it gone when it reaches it. Then another editor saves another file, in that build too.
    @Test func savesInFlightNeverFailABuild() throws {
        let dir = try TestSupport.makeTemporaryDirectory("watch-saves")
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "web.apk")
        let patch = dir.appendingPathComponent("patch")
        let names = (0..<6).map { "assets/www/js/part\($0).js" } + ["assets/www/index.html"]
        let assets = (0..<24).map { "assets/www/data/chunk\($0).txt" }
        for name in names + assets { try TestSupport.write("v0\n", to: name, in: patch) }
        let output = dir.appendingPathComponent("watched.apk").path
        let session = try WatchSession(options: PipelineOptions(input: input, patchDirectory: patch.path, output: output))
        session.quietPeriodMilliseconds = 2
        nonisolated(unsafe) let running = session
        let events = Events()
        let runner = Thread { try? running.run { events.append($0) } }
        runner.start()
        defer { session.stop() }
        try #require(Self.waitUntil { events.builds >= 1 || !events.failures.isEmpty }, "no first build")

        let seed: UInt64 = 0x5A7E
        var random = SplitMix64(seed: seed)
        var last: [String: String] = [:]
        let filler = String((0..<96 * 1024).map { _ in Character(UnicodeScalar(UInt8(97 + random.next() % 26))) })
        for round in 1...16 {
            for asset in assets { try Self.writeFile("\(round)\n" + filler, patch.appendingPathComponent(asset).path) }
            let saved = names[round % names.count]
            let text = "v\(round) by an atomic write\n"
            let path = patch.appendingPathComponent(saved).path
            let temporary = Self.folder(of: path) + "/." + (path as NSString).lastPathComponent + ".k3Rf9a"
            try Self.writeFile(text, temporary)
            usleep(UInt32(3_000 + random.next() % 15_000))
            try Self.renameFile(temporary, path)
            last[saved] = text
            let other = names[(round + 3) % names.count]
            let save = Self.saves[round % Self.saves.count]
            let otherText = "v\(round) by \(save.editor)\n"
            try save.write(otherText, patch.appendingPathComponent(other).path)
            last[other] = otherText
            usleep(UInt32(5_000 + random.next() % 25_000))
        }

        // The last saves reach the output; nothing on the way failed.
        let settled = try Self.waitUntil {
            guard let archive = try? APKArchive(path: output) else { return false }
            return try last.allSatisfy { name, text in
                try archive.entry(named: name).map { try archive.uncompressedData(of: $0) } == Array(text.utf8)
            }
        }
        session.stop()
        #expect(Self.waitUntil { events.stopped })
        #expect(settled, "the output never held the last save of each file")
        #expect(events.failures.isEmpty, "seed \(seed): \(events.failures.count) failed builds of \(events.builds + events.failures.count): \(events.failures.prefix(3))")
    }

    /// A patch file that is there but cannot be read still fails the build, with the system's reason, and the
    /// build after the fix succeeds. Root reads any file whatever its mode, so as root watch runs without the
    /// capabilities that let it (setpriv drops them from its bounding set).
    @Test func aFileThatCannotBeReadStillFailsTheBuild() throws {
        let dir = try TestSupport.makeTemporaryDirectory("watch-unreadable")
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "web.apk")
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        let output = dir.appendingPathComponent("watched.apk").path
        let watch = ["watch", input, "--patch", patch.path, "--out", output, "--debug-keystore", dir.appendingPathComponent("debug.p12").path, "--json"]
        let launcher = geteuid() == 0 ? ["/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] : []
        let (process, lines) = try TestSupport.startApkpatch(watch, launcher: launcher)
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("\"event\":\"built\"") }, "\(lines.lines)")

        let locked = patch.appendingPathComponent("assets/www/locked.js").path
        let fd = open(locked, O_CREAT | O_WRONLY | O_EXCL, 0)
        try #require(fd >= 0)
        _ = write(fd, "x\n", 2)
        close(fd)
        #expect(lines.waitFor { $0.contains("\"event\":\"failed\"") && $0.contains("locked.js") && $0.contains("Permission denied") }, "\(lines.lines)")
        chmod(locked, 0o644)
        #expect(lines.waitFor(2) { $0.contains("\"event\":\"built\"") }, "\(lines.lines)")
        process.interrupt()
        #expect(lines.waitFor { $0.contains("\"event\":\"stopped\"") }, "\(lines.lines)")
        process.waitUntilExit()
    }
}
