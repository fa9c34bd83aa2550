import Glibc

/// Watches a directory tree with inotify and reports which relative paths changed, after a quiet period.
///
/// Editors save in bursts (write a temp file, rename it over the original; several files at once), so one
/// `waitForChanges` call collects events until nothing has happened for `quietPeriod`, then returns them all.
/// New subfolders are watched as they appear; a removed folder's watch goes with it.
public final class DirectoryWatcher {
    public let root: String
    private let fd: Int32
    private var paths: [Int32: String] = [:]  // watch descriptor → relative folder ("" for the root)
    /// When the first event of the burst `waitForChanges` last returned was read (CLOCK_MONOTONIC, ns): the
    /// save, as near as the watcher can tell (it is blocked in poll(2) until then).
    public private(set) var burstStart: UInt64 = 0
    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB
                                     | IN_DELETE_SELF | IN_MOVE_SELF)

    public init(root: String) throws {
        self.root = root
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw WatchError.inotify("inotify_init1: \(String(cString: strerror(errno)))") }
        var existing: [String] = []
        try addWatches(relative: "", files: &existing)
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
    /// timeout or wake-up).
    public func waitForChanges(quietPeriodMilliseconds: Int32 = 60, timeoutMilliseconds: Int32 = -1, wakeFD: Int32 = -1) throws -> Set<String> {
        var changed = Set<String>()
        var timeout = timeoutMilliseconds
        while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            let n = poll(&fds, wakeFD >= 0 ? 2 : 1, timeout)
            if n < 0 {
                if errno == EINTR { if changed.isEmpty { return changed } else { continue } }
                throw WatchError.inotify("poll: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return changed }  // quiet period over (or the caller's timeout)
            if wakeFD >= 0 && fds[1].revents != 0 { return changed }
            let wasEmpty = changed.isEmpty
            try drain(into: &changed)
            if wasEmpty && !changed.isEmpty { burstStart = Self.monotonicNanoseconds() }
            if !changed.isEmpty { timeout = quietPeriodMilliseconds }
        }
    }

    /// CLOCK_MONOTONIC in nanoseconds (the clock of `burstStart`).
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private func drain(into changed: inout Set<String>) throws {
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
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { changed.insert("*"); continue }
                guard let folder = paths[event.wd] else { continue }
                if event.mask & UInt32(IN_IGNORED) != 0 { paths[event.wd] = nil; continue }
                let relative = name.isEmpty ? folder : (folder.isEmpty ? name : folder + "/" + name)
                if event.mask & UInt32(IN_ISDIR) != 0 && event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    // Files written into it before the watch was added get no events of their own: report them.
                    var files: [String] = []
                    try addWatches(relative: relative, files: &files)
                    changed.formUnion(files)
                }
                changed.insert(relative)
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
