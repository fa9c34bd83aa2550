#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Working files that must keep a name while a session uses them (watch mode's spare build, staging
/// directories), and so outlive a `kill -9` of the session that made them.
///
/// The process that makes one holds an advisory `flock` on it for as long as it uses it; the kernel drops the
/// lock when the process ends, however it ends. A later session tells a killed session's leftovers (ours by
/// name and owner, and locked by nobody) from a live session's files (locked) and removes only the former.
/// A lock is taken before the file gets its name where the file system allows it (`O_TMPFILE`), so no other
/// session ever sees a live working file unlocked.
public enum WorkingFiles {
    /// Takes the exclusive lock on the file or directory open as `descriptor`; false if another open file
    /// (in this process or another) holds it.
    @discardableResult
    public static func lock(_ descriptor: Int32) -> Bool {
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            if errno != EINTR { return false }
        }
    }

    /// Removes the entries of `directory` that `isWorkingFile` accepts by name and that a killed session left:
    /// owned by this user, a regular file or a directory, and locked by no process. Returns the names removed.
    @discardableResult
    public static func removeLeftovers(in directory: String, where isWorkingFile: (String) -> Bool) -> [String] {
        let parent = directory.isEmpty ? "." : directory
        return OutputDirectory.names(in: parent).filter { isWorkingFile($0) && removeIfLeftOver(parent + "/" + $0) }
    }

    /// Removes `path` if it is a killed session's working file (see `removeLeftovers`).
    static func removeIfLeftOver(_ path: String) -> Bool {
        var named = stat()
        guard lstat(path, &named) == 0, named.st_uid == geteuid() else { return false }
        let type = named.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFDIR else { return false }
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (type == S_IFDIR ? O_DIRECTORY : 0))
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0, opened.st_dev == named.st_dev, opened.st_ino == named.st_ino,
              lock(descriptor) else { return false }
        // Locked by us now: the session that made it is gone. Remove it only if the name still means this file.
        var current = stat()
        guard lstat(path, &current) == 0, current.st_dev == named.st_dev, current.st_ino == named.st_ino else { return false }
        if type == S_IFDIR {
            OutputDirectory.removeTree(path)
            return true
        }
        return unlink(path) == 0
    }

    /// Whether `name` ends with `marker` followed by `count` ASCII letters or digits (a random suffix).
    static func hasRandomSuffix(_ name: String, after marker: String, count: Int) -> Bool {
        let bytes = Array(name.utf8)
        let markerBytes = Array(marker.utf8)
        guard bytes.count >= markerBytes.count + count else { return false }
        let suffixStart = bytes.count - count
        guard Array(bytes[(suffixStart - markerBytes.count)..<suffixStart]) == markerBytes else { return false }
        return bytes[suffixStart...].allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }
    }

    /// Letters and digits chosen at random (names of working files that must not collide between sessions).
    static func randomSuffix(count: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<count).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] }, as: UTF8.self)
    }
}
