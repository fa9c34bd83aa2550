import APKCore
import Foundation
import Repack
@testable import Pipeline
import Testing
import TestSupport

/// Which bursts of file events start a watch build. Editors' temporary files are dropped by name
/// (`PatchDirectory.isIgnored`, PatchSpecTests) and, whatever their name, by their short life: a file that
/// appeared and was gone again (removed, or renamed over the real file) within one debounce window was never
/// part of the patch. Real edits in the same burst, and the removal of a real patch file, still count.
@Suite(.removesTemporaryDirectories) struct WatchFilterTests {
    let dir: URL
    let patch: URL
    let session: WatchSession
    let watcher: DirectoryWatcher

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("watch-filter")
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "web.apk")
        patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        try TestSupport.write("one\n", to: "assets/www/app.js", in: patch)
        session = try WatchSession(options: PipelineOptions(input: input, patchDirectory: patch.path,
                                                            output: dir.appendingPathComponent("out.apk").path))
        // As after a first build of these two files.
        session.notePatchFiles(["assets/www/index.html", "assets/www/app.js"])
        watcher = try DirectoryWatcher(root: patch.path)
    }

    func path(_ relative: String) -> String { patch.appendingPathComponent(relative).path }

    /// The changes the next build would be started for. A short-lived file alone would make the session wait
    /// on for good, so a real edit follows two quiet periods later (its own burst, or the same one on a slow
    /// machine: either way the short-lived file must not be among what is returned).
    func nextBuild(editing edited: String = "assets/www/app.js", after events: () throws -> Void) throws -> [String] {
        try events()
        let quiet = Int(session.quietPeriodMilliseconds)
        let edit = Thread { [path = path(edited)] in
            Thread.sleep(forTimeInterval: Double(quiet * 2) / 1000)
            try? Data("two\n".utf8).write(to: URL(fileURLWithPath: path))
        }
        edit.start()
        return try waitForBuild()
    }

    /// What `waitForRelevantChanges` returns; after 10 s without a relevant change, a failure rather than a hang.
    func waitForBuild() throws -> [String] {
        nonisolated(unsafe) let session = session
        let watchdog = Thread {
            Thread.sleep(forTimeInterval: 10)
            if !Thread.current.isCancelled { session.stop() }
        }
        watchdog.start()
        defer { watchdog.cancel() }
        return try #require(try session.waitForRelevantChanges(watcher), "no build started within 10 s")
    }

    @Test func aFileCreatedAndRemovedWithinTheWindowStartsNoBuild() throws {
        // Names no editor rule knows: only their life gives them away.
        let changed = try nextBuild {
            try TestSupport.write("draft\n", to: "assets/www/draft-7Qx.js", in: patch)
            try TestSupport.write("x\n", to: "assets/www/scratch/notes.txt", in: patch)
            try FileManager.default.removeItem(atPath: path("assets/www/draft-7Qx.js"))
            try FileManager.default.removeItem(atPath: path("assets/www/scratch"))
        }
        #expect(changed == ["assets/www/app.js"])
    }

    @Test func aTemporaryFileRenamedOverTheRealOneCountsAsTheRealOne() throws {
        try TestSupport.write("<p>v2</p>\n", to: "assets/www/index.html.k3Rf9a", in: patch)
        #expect(rename(path("assets/www/index.html.k3Rf9a"), path("assets/www/index.html")) == 0)
        let changed = try waitForBuild()
        #expect(changed == ["assets/www/index.html"])
    }

    /// A save whose close comes after the quiet period (its fsync outlasts it under load) ends in a burst of its
    /// own with the close alone. The build the writes started read the bytes already: the close starts none.
    @Test func aCloseAloneAfterTheWritesStartsNoBuild() throws {
        let fd = open(path("assets/www/app.js"), O_WRONLY | O_TRUNC)
        try #require(fd >= 0)
        #expect(write(fd, "two\n", 4) == 4)
        #expect(try waitForBuild() == ["assets/www/app.js"])
        let changed = try nextBuild(editing: "assets/www/index.html") { close(fd) }
        #expect(changed == ["assets/www/index.html"])
    }

    /// After a failed build the close alone counts: the failure may have been the file's state then.
    @Test func aCloseAloneAfterAFailedBuildStartsOne() throws {
        let fd = open(path("assets/www/app.js"), O_WRONLY | O_TRUNC)
        try #require(fd >= 0)
        #expect(write(fd, "two\n", 4) == 4)
        #expect(try waitForBuild() == ["assets/www/app.js"])
        session.build(changed: ["assets/www/app.js"], verifies: false) { _ in }
        // The next build fails: a symbolic link is refused. Its removal comes back as a change.
        try FileManager.default.createSymbolicLink(atPath: path("assets/www/link.js"), withDestinationPath: "/etc/hostname")
        session.build(changed: [], verifies: false) { _ in }
        unlink(path("assets/www/link.js"))
        close(fd)
        #expect(try waitForBuild() == ["assets/www/app.js", "assets/www/link.js"])
    }

    /// A folder holds "caf\u{E9}.js" and "cafe\u{301}.js" (equal Swift Strings, two files, two entries): once one
    /// is removed, removing the other is still the removal of a patch file, not of a short-lived one.
    @Test func removingTheSecondOfTwoEquivalentNamesStillStartsABuild() throws {
        let composed = "assets/www/caf\u{E9}.js", decomposed = "assets/www/cafe\u{301}.js"
        for name in [composed, decomposed] {
            let fd = open(path(name), O_WRONLY | O_CREAT | O_EXCL, 0o644)
            try #require(fd >= 0)
            close(fd)
        }
        #expect(try waitForBuild().count == 2)
        session.notePatchFiles([composed, decomposed])
        unlink(path(composed))
        #expect(try waitForBuild() == [composed])
        session.notePatchFiles([composed])  // as the build after the removal notes it
        unlink(path(decomposed))
        #expect(try waitForBuild() == [decomposed])
    }

    /// A file in a folder an editor rule leaves out ("cache.tmp") starts no build, though its name starts with a
    /// combining mark: the path is split at its slash bytes (a Character would join the mark to the slash, and the
    /// folder's name to the file's).
    @Test func aFileInAnIgnoredFolderStartsNoBuildWhateverItsName() throws {
        let changed = try nextBuild {
            try TestSupport.write("x\n", to: "assets/www/cache.tmp/\u{301}a.js", in: patch)
        }
        #expect(changed == ["assets/www/app.js"])
    }

    /// A saved native library is verified: told by the name's bytes (a Prepend mark joins the dot in a Character).
    @Test func aNativeLibraryIsToldByItsBytes() {
        #expect(WatchSession.changesNativeLibrary(["assets/www/app.js", "lib/x/a\u{600}.so"]))
        #expect(!WatchSession.changesNativeLibrary(["lib/x/a.so\u{301}"]))
    }

    /// Watch mode keeps the stored copy of a compressed entry it had to store; the copy of one name is never
    /// handed back for another whose name String's == joins with it, even with the same CRC-32 and sizes.
    @Test func storedEntriesAreCachedByTheNamesBytes() throws {
        let content = Array("same bytes\n".utf8)
        let stored = try OutputEntry.making(name: "lib/x/caf\u{E9}.so", content: content, method: .stored,
                                            timestamp: DOSTimestamp(date: 0x3a21, time: 0))
        func entry(_ name: String) -> ZipEntry {
            ZipEntry(nameBytes: Array(name.utf8), method: .deflated, crc32: stored.entry.crc32, compressedSize: 9,
                     uncompressedSize: Int64(content.count), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        }
        let cache = StoredEntryCache()
        cache.store(stored, for: entry("lib/x/caf\u{E9}.so"))
        #expect(cache.stored(for: entry("lib/x/caf\u{E9}.so")) != nil)
        #expect(cache.stored(for: entry("lib/x/cafe\u{301}.so")) == nil)
    }

    @Test func removingARealPatchFileStillStartsABuild() throws {
        try FileManager.default.removeItem(atPath: path("assets/www/index.html"))
        let changed = try waitForBuild()
        #expect(changed == ["assets/www/index.html"])
    }

    /// A patch file whose name is not valid UTF-8 starts a build (which refuses it, naming the file), though no file
    /// has the name the watcher could decode: it was dropped as a short-lived file, so watch said nothing until
    /// the next real edit.
    @Test func aFileNamedInInvalidUTF8StartsABuild() throws {
        let name = Array(path("assets/www").utf8) + Array("/bad".utf8) + [0xff, 0xfe] + Array(".js".utf8)
        let descriptor = (name + [0]).withUnsafeBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o644) }
        }
        try #require(descriptor >= 0, "creating the file: \(String(cString: strerror(errno)))")
        close(descriptor)
        let changed = try waitForBuild()
        #expect(changed == ["assets/www/bad\u{FFFD}\u{FFFD}.js"], "\(changed)")
    }

    /// The patch directory removed and made again (`rm -rf patch && mkdir patch`, a `git checkout`, an editor that
    /// replaces the folder): the removal starts a build (which says the folder is missing), and a file saved into
    /// the new folder starts the next one. The watch on the old folder went with it, so the watcher must look for
    /// the new one: it said once that the folder did not exist, then nothing more, whatever was saved.
    @Test func aPatchDirectoryRemovedAndMadeAgainIsWatchedAgain() throws {
        try FileManager.default.removeItem(at: patch)
        let removed = try waitForBuild()
        #expect(removed.contains("assets/www/index.html") || removed.contains(""), "\(removed)")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: false)
        try TestSupport.write("<p>v3</p>\n", to: "assets/www/index.html", in: patch)
        var changed = try waitForBuild()
        // The folder may have been seen before or after its file was written: then the file comes on its own.
        if changed == [] || !changed.contains("assets/www/index.html") { changed += try waitForBuild() }
        #expect(changed.contains("assets/www/index.html"), "\(changed)")
        // And it is watched from then on.
        try TestSupport.write("three\n", to: "assets/www/app.js", in: patch)
        #expect(try waitForBuild().contains("assets/www/app.js"))
    }

    /// The patch directory moved away and replaced by a new one (`mv patch patch.old && mkdir patch`): the inotify
    /// watch follows the folder it was put on, so without care saves into patch.old were taken for the patch's
    /// and saves into the new patch went unseen.
    @Test func aPatchDirectoryMovedAwayIsNotWatchedWhereItWent() throws {
        let old = dir.appendingPathComponent("patch.old")
        #expect(rename(patch.path, old.path) == 0)
        let moved = try waitForBuild()
        #expect(moved == [""], "the folder itself went: \(moved)")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: false)
        try TestSupport.write("old\n", to: "assets/www/stale.js", in: old)
        try TestSupport.write("new\n", to: "assets/www/fresh.js", in: patch)
        var changed: [String] = []
        while !changed.contains("assets/www/fresh.js") { changed += try waitForBuild() }
        #expect(!changed.contains("assets/www/stale.js"), "an edit outside the patch directory: \(changed)")
    }

    /// A folder moved out of the patch directory takes its patch files with it: a build, though no event names them.
    @Test func aFolderMovedOutOfThePatchDirectoryStartsABuild() throws {
        #expect(rename(path("assets/www"), dir.appendingPathComponent("www-elsewhere").path) == 0)
        #expect(try waitForBuild() == ["assets/www"])
        // Saves in the folder where it went are not the patch's.
        try TestSupport.write("x\n", to: "www-elsewhere/outside.js", in: dir)
        try TestSupport.write("y\n", to: "assets/inside.txt", in: patch)
        var changed: [String] = []
        while !changed.contains("assets/inside.txt") { changed += try waitForBuild() }
        #expect(!changed.contains { $0.contains("outside.js") }, "\(changed)")
    }
}
