import APKCore
import Glibc

/// Watches a directory tree with inotify and reports which relative paths changed, after a quiet period.
///
/// Editors save in bursts (write a temp file, rename it over the original; several files at once), so one
/// `waitForChanges` call collects events until nothing has happened for `quietPeriod`, then returns them all.
/// New subfolders are watched as they appear; a removed folder's watch goes with it, and so does a folder's moved
/// out of the tree. The root itself may go and come back (`rm -rf patch && mkdir patch`, `git checkout`, an editor
/// replacing the folder): while it is gone the watcher looks for it every `rootPollMilliseconds`, and once it is a
/// folder again watches it anew and reports the files it holds.
public final class DirectoryWatcher {
    public let root: String
    private let fd: Int32
    private var paths: [Int32: String] = [:]  // watch descriptor → relative folder ("" for the root)
    /// The root is not watched: it was removed, moved away, or was not there at the start. No event will say when
    /// it is back, so `waitForChanges` looks.
    private var rootMissing = false
    /// The root folder watched (device and inode): a folder made again at the root's path is another one.
    private var rootIdentity: (device: UInt, inode: UInt)?
    /// How often a missing root is looked for.
    static let rootPollMilliseconds: Int32 = 200
    /// When the first event of the burst `waitForChanges` last returned was read (CLOCK_MONOTONIC, ns): the
    /// save, as near as the watcher can tell (it is blocked in poll(2) until then).
    public private(set) var burstStart: UInt64 = 0
    /// The paths of the burst `waitForChanges` last returned whose only event in it was the close of a file open
    /// for writing: nothing was written since the burst before. A save whose fsync outlasts the quiet period
    /// (under load; vim and many atomic writers fsync before they close) ends in such a burst of its own.
    public private(set) var closedOnly: Set<ExactName> = []
    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB
                                     | IN_DELETE_SELF | IN_MOVE_SELF)

    public init(root: String) throws {
        self.root = root
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw WatchError.inotify("inotify_init1: \(String(cString: strerror(errno)))") }
        var existing: [String] = []
        try addWatches(relative: "", files: &existing)
        rootMissing = !paths.values.contains("")
    }

    deinit { close(fd) }

    private func absolute(_ relative: String) -> String { relative.isEmpty ? root : root + "/" + relative }

    /// Watches the folder `relative` and every folder below it, and adds the other entries found to `files`:
    /// for a folder that has just appeared, those were written before its watch existed and would otherwise
    /// never be reported (`cp -r` of an assets folder, or a save right after a `mkdir`).
    private func addWatches(relative: String, files: inout [String]) throws {
        let wd = inotify_add_watch(fd, absolute(relative), Self.mask)
        guard wd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return }  // gone again already
            let reason = errno == ENOSPC ? "the inotify watch limit is reached (raise fs.inotify.max_user_watches)" : String(cString: strerror(errno))
            throw WatchError.inotify("cannot watch \(absolute(relative)): \(reason)")
        }
        paths[wd] = relative
        if relative.isEmpty { rootIdentity = Self.identity(of: root) }
        guard let dir = opendir(absolute(relative)) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name == "." || name == ".." || name == ".git" { continue }
            let path = relative.isEmpty ? name : relative + "/" + name
            var isDirectory = entry.pointee.d_type == UInt8(DT_DIR)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) {  // file systems that do not fill d_type
                var info = stat()
                isDirectory = lstat(absolute(path), &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            }
            if isDirectory {
                try addWatches(relative: path, files: &files)
            } else {
                files.append(path)
            }
        }
    }

    /// Blocks until something changes (or `wakeFD` becomes readable, or `timeoutMilliseconds` passes), then
    /// until `quietPeriodMilliseconds` pass without events. Returns the changed relative paths (empty on
    /// timeout or wake-up); "" is the root itself (removed or moved away), "*" everything (events were lost).
    /// Paths are told apart by their bytes, as the folder (and Android, once they are entries) tells them: a save
    /// of "cafe\u{301}.js" is not one of "caf\u{E9}.js". In UTF-8 byte order.
    public func waitForChanges(quietPeriodMilliseconds: Int32 = 60, timeoutMilliseconds: Int32 = -1, wakeFD: Int32 = -1) throws -> [String] {
        var changed = Set<ExactName>()
        // Paths with an event other than a close after writing.
        var written = Set<ExactName>()
        defer { closedOnly = changed.subtracting(written) }
        var timeout = timeoutMilliseconds
        while true {
            let wait = rootMissing && (timeout < 0 || timeout > Self.rootPollMilliseconds) ? Self.rootPollMilliseconds : timeout
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            // A watch session's main thread waits here between builds: not working (see CoreBalance).
            let n = CoreBalance.waiting { poll(&fds, wakeFD >= 0 ? 2 : 1, wait) }
            if n < 0 {
                if errno == EINTR { if changed.isEmpty { return changed.sorted().map(\.string) } else { continue } }
                throw WatchError.inotify("poll: \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                if wait == timeout {  // quiet period over (or the caller's timeout)
                    if !changed.isEmpty { checkRoot(into: &changed, written: &written) }
                    return changed.sorted().map(\.string)
                }
                // Only the look for a missing root timed out.
                if timeout > 0 { timeout -= wait }
                let wasEmpty = changed.isEmpty
                try watchRootAgain(into: &changed, written: &written)
                if wasEmpty && !changed.isEmpty { burstStart = Self.monotonicNanoseconds() }
                if !changed.isEmpty { timeout = quietPeriodMilliseconds }
                continue
            }
            if wakeFD >= 0 && fds[1].revents != 0 { return changed.sorted().map(\.string) }
            let wasEmpty = changed.isEmpty
            try drain(into: &changed, written: &written)
            if wasEmpty && !changed.isEmpty { burstStart = Self.monotonicNanoseconds() }
            if !changed.isEmpty { timeout = quietPeriodMilliseconds }
        }
    }

    /// Watches the root again once it is a folder again, and adds the files in it to `changed`.
    private func watchRootAgain(into changed: inout Set<ExactName>, written: inout Set<ExactName>) throws {
        guard Self.identity(of: root) != nil else { return }
        var files: [String] = []
        try addWatches(relative: "", files: &files)
        guard paths.values.contains("") else { return }  // gone again already
        rootMissing = false
        changed.formUnion(files.map { ExactName($0) })
        written.formUnion(files.map { ExactName($0) })
    }

    /// A folder removed while a process still has it open (a shell's working directory) reports no deletion
    /// of itself until it is closed: after a burst, the root's path must still lead to the folder watched.
    private func checkRoot(into changed: inout Set<ExactName>, written: inout Set<ExactName>) {
        guard !rootMissing else { return }
        if let watched = rootIdentity, let current = Self.identity(of: root), current == watched { return }
        unwatch("")
        changed.insert("")
        written.insert("")
    }

    /// A folder's device and inode; nil when `path` is not a folder.
    private static func identity(of path: String) -> (device: UInt, inode: UInt)? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return (UInt(info.st_dev), UInt(info.st_ino))
    }

    /// Stops watching `folder` and every folder below it (moved out of the tree, its watches would follow it).
    /// Paths are compared by bytes: a Character would join a combining mark after the slash to it.
    private func unwatch(_ folder: String) {
        for (wd, path) in paths where folder.isEmpty || path.sameUTF8(as: folder) || path.javaHasPrefix(folder + "/") {
            inotify_rm_watch(fd, wd)
            paths[wd] = nil
        }
        if folder.isEmpty { rootMissing = true }
    }

    /// CLOCK_MONOTONIC in nanoseconds (the clock of `burstStart`).
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private func drain(into changed: inout Set<ExactName>, written: inout Set<ExactName>) throws {
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer, size)
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { return }
                throw WatchError.inotify("read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameLength = Int(event.len)
                var name = ""
                if nameLength > 0 {
                    name = String(cString: (buffer + offset + MemoryLayout<inotify_event>.size).assumingMemoryBound(to: CChar.self))
                }
                offset += MemoryLayout<inotify_event>.size + nameLength
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { changed.insert("*"); written.insert("*"); continue }
                guard let folder = paths[event.wd] else { continue }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    paths[event.wd] = nil
                    if folder.isEmpty { rootMissing = true }
                    continue
                }
                if event.mask & UInt32(IN_MOVE_SELF) != 0 {
                    // Renamed within the tree, the folder was watched again under its new name when its parent
                    // reported it (the same watch, now under the new path). Renamed out of it (or the root renamed
                    // away), its watches would report another folder's edits as the patch's.
                    var info = stat()
                    if folder.isEmpty || lstat(absolute(folder), &info) != 0 || (info.st_mode & S_IFMT) != S_IFDIR {
                        unwatch(folder)
                        changed.insert(ExactName(folder))
                        written.insert(ExactName(folder))
                    }
                    continue
                }
                let relative = name.isEmpty ? folder : (folder.isEmpty ? name : folder + "/" + name)
                if event.mask & UInt32(IN_ISDIR) != 0 && event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    // Files written into it before the watch was added get no events of their own: report them.
                    var files: [String] = []
                    try addWatches(relative: relative, files: &files)
                    changed.formUnion(files.map { ExactName($0) })
                    written.formUnion(files.map { ExactName($0) })
                }
                changed.insert(ExactName(relative))
                if event.mask != UInt32(IN_CLOSE_WRITE) { written.insert(ExactName(relative)) }
            }
        }
    }
}

public enum WatchError: Error, CustomStringConvertible {
    case inotify(String)
    public var description: String {
        switch self { case .inotify(let m): return "cannot watch the patch directory: \(m)" }
    }
}
