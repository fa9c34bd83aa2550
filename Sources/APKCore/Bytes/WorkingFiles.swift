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

    /// A session's entry in the register of working files (`register`): removed, with the lock it holds, when
    /// the session lets it go; a killed session's stays unlocked for the next session to find.
    public final class Registration: @unchecked Sendable {
        // @unchecked Sendable: immutable after init.
        private let descriptor: Int32
        private let path: String
        fileprivate init(descriptor: Int32, path: String) { self.descriptor = descriptor; self.path = path }
        deinit {
            unlink(path)
            close(descriptor)
        }
    }

    /// The register of named working files that live beside outputs: one file per live session, locked by it and
    /// holding the absolute paths of its working files, so that the next session anywhere (not only in the same
    /// directory) removes what a killed one left. `$XDG_RUNTIME_DIR/apkpatch-working`, else
    /// `/tmp/apkpatch-working-<uid>`, made if missing (used only if `isPrivateDirectory`).
    static func registerDirectory() -> String? {
        let path: String
        if let value = getenv("XDG_RUNTIME_DIR"), case let runtime = String(cString: value), runtime.isAbsolutePath {
            path = runtime + "/apkpatch-working"
        } else {
            path = "/tmp/apkpatch-working-\(geteuid())"
        }
        mkdir(path, 0o700)
        return path
    }

    /// Whether `path` is a directory of this user's that nobody else can write (else another user could list
    /// paths for us to remove, or read ours).
    static func isPrivateDirectory(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR && status.st_uid == geteuid() && status.st_mode & 0o077 == 0
    }

    private static let registrationNameLength = 12

    /// Lists `paths` (made absolute) as this session's working files until the returned registration is
    /// released; nil where the register cannot be used (the same-directory removal still applies then). The
    /// file is locked before it gets its name, so no session ever sees a live one unlocked.
    public static func register(_ paths: [String], in register: String? = nil) -> Registration? {
        guard let directory = register ?? registerDirectory(), isPrivateDirectory(directory) else { return nil }
        let descriptor = OutputFile.openUnnamed(in: directory)
        guard descriptor >= 0 else { return nil }
        lock(descriptor)
        let text = paths.map(absolute).joined(separator: "\n") + "\n"
        let written = Array(text.utf8).withUnsafeBytes { pwriteAll(descriptor, $0, at: 0) } == nil
        for _ in 0..<10 where written {
            let path = directory + "/" + randomSuffix(count: registrationNameLength)
            if OutputFile.link(descriptor: descriptor, to: path) { return Registration(descriptor: descriptor, path: path) }
            if errno != EEXIST { break }
        }
        close(descriptor)
        return nil
    }

    /// Removes the working files that killed sessions listed in the register (their entries are locked by no
    /// process) and `isWorkingFile` accepts by name, under the rules of `removeLeftovers`; then their entries.
    /// Returns the paths removed.
    @discardableResult
    public static func removeRegisteredLeftovers(in register: String? = nil, where isWorkingFile: (String) -> Bool) -> [String] {
        guard let directory = register ?? registerDirectory(), isPrivateDirectory(directory) else { return [] }
        var removed: [String] = []
        for name in OutputDirectory.names(in: directory) where name.utf8.count == registrationNameLength {
            let path = directory + "/" + name
            let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            var status = stat()
            guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == geteuid(),
                  status.st_size < 1 << 16, lock(descriptor) else { continue }
            var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
            let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            guard count == bytes.count else { continue }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.isAbsolutePath {
                let listed = String(line)
                let base = listed.lastPathComponent
                if isWorkingFile(base) && removeIfLeftOver(listed) { removed.append(listed) }
            }
            // Locked by us: its session is gone. Remove the entry if the name still means this file.
            var current = stat()
            if lstat(path, &current) == 0, current.st_dev == status.st_dev, current.st_ino == status.st_ino { unlink(path) }
        }
        return removed
    }

    /// `path` from the root (the current directory prepended to a relative one).
    static func absolute(_ path: String) -> String {
        guard !path.isAbsolutePath else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory + (directory.utf8.last == UInt8(ascii: "/") ? "" : "/") + (path.droppingJavaPrefix("./") ?? path)
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
