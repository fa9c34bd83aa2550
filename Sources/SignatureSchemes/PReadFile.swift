#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import APKCore

/// A file read with `pread(2)`: `withBytes` copies the range into a temporary buffer.
///
/// Use it instead of a `MappedFile` to stream a large file in chunks (e.g. `ContentDigester` over a 45 MB
/// APK): pages touched through a mapping stay in the process's resident set until it exits, while `pread`
/// copies from the page cache into a short-lived buffer, so peak memory stays flat whatever the file size.
/// Each `withBytes` call allocates `range.count` bytes: keep ranges chunk-sized (1 MiB), not whole files.
/// The file must not change while it is read (the size is fixed at `init`; a shorter file throws).
public final class PReadFile: DataSource, @unchecked Sendable {
    // @unchecked Sendable: immutable; pread has no shared file offset, so concurrent reads are safe.
    public let path: String
    public let count: Int64
    private let fd: Int32

    /// Opens `path` for reading.
    public init(path: String) throws {
        self.path = path
        let (fd, info) = try RegularFile.open(path)
        self.fd = fd
        count = Int64(info.st_size)
    }

    deinit { close(fd) }

    public func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try checkRange(range)
        let length = Int(range.count64)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(length, 1), alignment: 16)
        defer { buffer.deallocate() }
        try preadAll(range, into: buffer)
        return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
    }

    /// Reads `range` into the caller's buffer: no allocation, safe from several threads at once.
    public func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        try checkRange(range)
        precondition(buffer.count >= Int(range.count64), "buffer too small")
        try preadAll(range, into: buffer)
    }

    private func preadAll(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        let length = Int(range.count64)
        var done = 0
        while done < length {
            let n = pread(fd, buffer.baseAddress! + done, length - done, off_t(range.lowerBound + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileError(path: path, operation: "read", errno: errno)
            }
            if n == 0 { throw FileError(path: path, operation: "read", errno: EIO, detail: "the file got shorter while it was read") }
            done += n
        }
    }
}
