#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import APKCore

/// Reads the input APK's bulk data (entry bytes to copy and to digest) with `pread` into small buffers when
/// the input is a file mapping, instead of through the mapping.
///
/// Why: pages touched through a mapping stay in the process's resident set until it exits, so copying a
/// 45 MB APK through its mapping makes the signer 45 MB bigger; `pread` copies from the page cache into a
/// reused 1 MiB buffer and memory stays flat whatever the APK size. Headers and the central directory are
/// still read through the mapping (they are small). Any other `DataSource` is read through itself.
final class InputReader: @unchecked Sendable {
    // @unchecked Sendable: the descriptor is only used with pread (no shared file offset) and closed in deinit.
    let source: any DataSource
    private let fd: Int32
    static let bufferSize = 1 << 20

    init(source: any DataSource) {
        self.source = source
        var descriptor: Int32 = -1
        if let mapped = source as? MappedFile {
            let opened = open(mapped.path, O_RDONLY | O_CLOEXEC)
            var info = stat()
            // Use the file only if it is still the size we mapped (it is the same input nobody edits).
            if opened >= 0, fstat(opened, &info) == 0, Int64(info.st_size) == mapped.count {
                descriptor = opened
            } else if opened >= 0 {
                close(opened)
            }
        }
        fd = descriptor
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The bytes in `range` (small records such as a local header).
    func bytes(_ range: Range<Int64>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Int(range.count64))
        try read(range) { out.append(contentsOf: $0) }
        return out
    }

    /// Streams `range` to `body` in pieces of at most `bufferSize` bytes.
    func read(_ range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try source.checkRange(range)
        guard fd >= 0 else {
            var position = range.lowerBound
            while position < range.upperBound {
                let end = min(range.upperBound, position + Int64(Self.bufferSize))
                try source.withBytes(in: position..<end, body)
                position = end
            }
            return
        }
        let pooled = BufferPool.shared.take()  // a fresh megabyte per entry fragments the heap (see BufferPool)
        defer { BufferPool.shared.recycle(pooled) }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: pooled[0..<min(pooled.count, Self.bufferSize)])
        var position = range.lowerBound
        while position < range.upperBound {
            let want = Int(min(Int64(buffer.count), range.upperBound - position))
            let got = try readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: position)
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            position += Int64(got)
        }
    }

    /// Calls `body` with all of `range` in one contiguous buffer (for inflating a compressed entry).
    func withContiguousBytes<R>(_ range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try source.checkRange(range)
        guard fd >= 0 else { return try source.withBytes(in: range, body) }
        return try BufferPool.shared.withBuffer(minimumSize: max(Int(range.count64), 1)) { buffer in
            var position = range.lowerBound
            while position < range.upperBound {
                let want = Int(range.upperBound - position)
                let start = Int(position - range.lowerBound)
                position += Int64(try readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[start..<(start + want)]), at: position))
            }
            return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(range.count64)]))
        }
    }

    private func readFully(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileError(path: (source as? MappedFile)?.path ?? "input", operation: "read", errno: errno)
            }
            if n == 0 {
                throw FileError(path: (source as? MappedFile)?.path ?? "input", operation: "read", errno: EIO,
                                detail: "the file got shorter while it was being signed")
            }
            done += n
        }
        return done
    }
}
