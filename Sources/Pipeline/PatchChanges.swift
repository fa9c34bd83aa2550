import APKCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Overlay

/// Which changes in a patch directory start a rebuild, for watch mode on an APK or a split APK set.
struct PatchChangeFilter {
    let root: String
    /// The patch files of the last build, to tell a deleted patch file from a short-lived temporary one. By the
    /// names' bytes: a folder may hold "caf\u{E9}" and "cafe\u{301}", and removing one must not forget the other.
    var lastFiles = Set<ExactName>()
    /// After a failed build any change may be the fix (even removing a file the build never accepted).
    var lastBuildFailed = false
    /// The changes of a build that a save in flight interrupted (a patch file was gone when read), owed to the
    /// next build. While set, every change counts: the interrupted build may not have listed what the save moves.
    private(set) var interrupted: [String]?

    init(root: String) { self.root = root }

    /// Records that a build stopped on a save in flight: `changed` goes to the next build, which the save's events start.
    mutating func interrupt(_ changed: [String]) { interrupted = (interrupted ?? []) + changed }

    /// The next burst of changes that matter, with those an interrupted build owes, sorted; nil once `wakeFD`
    /// became readable (stop).
    mutating func next(from watcher: DirectoryWatcher, quietPeriodMilliseconds: Int32, wakeFD: Int32) throws -> [String]? {
        while true {
            let changed = try watcher.waitForChanges(quietPeriodMilliseconds: quietPeriodMilliseconds, wakeFD: wakeFD)
            if changed.isEmpty { return nil }  // woken by stop()
            let closedOnly = watcher.closedOnly
            // Editor droppings don't count, a new folder is reported through the files in it, and a temporary
            // file that came and went (written, then renamed over the real one) was never part of the patch.
            let relevant = changed.filter { path in
                // Events were lost: anything may have changed.
                if path == "*" { return true }
                // The folder itself went (or came back): the build says which.
                if path.isEmpty { return FileKind(atPath: root) != .directory }
                // Closed with nothing written since the burst before: the build that burst started read these bytes
                // (unless it failed or stopped on a save, when any change may be the one that matters).
                if closedOnly.contains(ExactName(path)) && !lastBuildFailed && interrupted == nil { return false }
                let kind = FileKind(atPath: root + "/" + path)
                let exists = kind != nil
                if kind == .directory { return false }
                // A name that is not valid UTF-8 reaches here decoded with replacement characters, which name no
                // file: it is a change all the same, and the build (which reads the folder) refuses the file. A
                // folder moved out of the tree takes its patch files with it, without an event for each.
                if !exists && !lastFiles.contains(ExactName(path)) && !lastBuildFailed && interrupted == nil && !path.contains("\u{FFFD}")
                    && !lastFiles.contains(where: { $0.string.javaHasPrefix(path + "/") }) { return false }
                // Split at slash bytes: a Character would join a combining mark after the slash to it.
                return !path.componentsAtSlashBytes().contains(where: PatchDirectory.isIgnored)
            }
            if !relevant.isEmpty {
                defer { interrupted = nil }
                return Set((relevant + (interrupted ?? [])).map { ExactName($0) }).sorted().map(\.string)
            }
        }
    }

    /// Records which of `paths` exist now, for telling deleted patch files from temporary ones without a build.
    mutating func note(_ paths: [String]) {
        for path in paths {
            if FileManager.default.fileExists(atPath: root + "/" + path) { lastFiles.insert(ExactName(path)) } else { lastFiles.remove(ExactName(path)) }
        }
    }
}

/// The pipe a watch session's `stop()` (or a signal handler) writes one byte to, waking the watcher's poll.
final class StopPipe: @unchecked Sendable {
    let read: Int32
    let write: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw WatchError.inotify("pipe: \(String(cString: strerror(errno)))") }
        read = fds[0]
        write = fds[1]
    }

    deinit {
        close(read)
        close(write)
    }

    func signal() { var byte: UInt8 = 1; _ = Glibc.write(write, &byte, 1) }
}
