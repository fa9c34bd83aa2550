#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Removes files on another thread, and makes the process wait for that before it exits.
///
/// Replacing a large output frees the previous file's page cache and blocks inside `unlink` for a time that
/// grows with the file, more when its pages are still dirty. The command-line tool has nothing left to do after its
/// output is in place but tear down, so it lets the removal overlap that (`OutputFile` uses this when
/// `isEnabled`). An `atexit` handler waits for pending removals, so no replaced file outlives the process.
public enum BackgroundRemoval {
    /// Off by default: a library caller expects the replaced file gone when `commit()` returns. The
    /// `apkpatch` executable turns it on.
    nonisolated(unsafe) public static var isEnabled = false

    private static let group = DispatchGroup()
    private static let queue = DispatchQueue(label: "apkpatch.background-removal")
    private static let exitHook: Void = { atexit { BackgroundRemoval.waitForAll() } }()

    /// Unlinks `path` now; when enabled, the file's data is freed in the background. The name goes at once (a
    /// process killed right after must not leave the replaced file under its hidden name): the file is opened
    /// first, so the unlink only drops the name, and the last `close`, which frees the data, runs on the queue.
    public static func unlink(_ path: String) {
        guard isEnabled else {
            removeFile(path)
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        removeFile(path)
        guard fd >= 0 else { return }
        _ = exitHook
        queue.async(group: group) { _ = close(fd) }
    }

    /// Waits until every removal started so far is done.
    public static func waitForAll() { group.wait() }
}

private func removeFile(_ path: String) { _ = unlink(path) }
