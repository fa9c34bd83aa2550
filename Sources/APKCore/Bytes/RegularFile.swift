#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening an input that must be a regular file (an APK, a keystore, a patch file) without ever blocking.
///
/// `open(2)` on a FIFO waits for a writer and `read(2)` on a terminal or a pipe waits for input, so a path that
/// names one would hang the command. The path is opened with `O_NONBLOCK` (which opens a FIFO at once and
/// changes nothing for a regular file) and its type is checked on the open descriptor, so a file swapped in
/// between a check and the open cannot slip through.
public enum RegularFile {
    /// A readable descriptor for the regular file at `path` and its `stat`. Throws `FileError` naming what the
    /// path is when it is not a regular file (directory, FIFO, device, socket).
    public static func open(_ path: String, flags: Int32 = 0) throws -> (descriptor: Int32, status: stat) {
        let fd = SystemOpen.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags)
        guard fd >= 0 else { throw FileError(path: path, operation: "open", errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw FileError(path: path, operation: "stat", errno: code)
        }
        guard let kind = kind(of: info) else {
            // Reads of a regular file never block; clear the flag anyway so nothing depends on it.
            let current = fcntl(fd, F_GETFL)
            if current >= 0 { _ = fcntl(fd, F_SETFL, current & ~O_NONBLOCK) }
            return (fd, info)
        }
        close(fd)
        var error = FileError(path: path, operation: "read", errno: kind.errno, detail: "it is \(kind.name), not a regular file")
        error.isNotRegularFile = true
        throw error
    }

    /// The whole regular file at `path` (a key, a certificate, a password file), read without ever blocking:
    /// a FIFO or a device is refused at once (`FileError.isNotRegularFile`), not read. Throws `FileError` too
    /// when the file holds more than `limit` bytes, which no such file does.
    public static func contents(of path: String, limit: Int) throws -> [UInt8] {
        let (fd, info) = try open(path)
        defer { close(fd) }
        guard Int64(info.st_size) <= Int64(limit) else {
            throw FileError(path: path, operation: "read", errno: EFBIG, detail: "it is \(info.st_size) bytes, more than the \(limit >> 20) MiB such a file can be")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var got = 0
        while got < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw FileError(path: path, operation: "read", errno: errno) }
            if n == 0 { break }  // shorter than its size said: it shrank while read
            got += n
        }
        return Array(bytes[0..<got])
    }

    /// What `info` describes when it is not a regular file (for messages), or nil for a regular file.
    public static func kind(of info: stat) -> (name: String, errno: Int32)? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return ("a directory", EISDIR)
        case S_IFIFO: return ("a FIFO (named pipe)", EINVAL)
        case S_IFCHR: return ("a character device", EINVAL)
        case S_IFBLK: return ("a block device", EINVAL)
        case S_IFSOCK: return ("a socket", EINVAL)
        default: return ("not a regular file", EINVAL)
        }
    }
}

/// `open(2)` under a name that does not clash with `RegularFile.open`.
private enum SystemOpen {
    static func open(_ path: String, _ flags: Int32) -> Int32 {
        #if canImport(Glibc)
        return Glibc.open(path, flags)
        #else
        return Darwin.open(path, flags)
        #endif
    }
}
