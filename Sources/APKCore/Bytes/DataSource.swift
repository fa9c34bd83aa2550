#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Random-access bytes: a memory-mapped APK, an in-memory buffer, a slice of either, or a chain of them.
///
/// Modelled on apksig's `util/DataSource`: stages take sources rather than paths so that one mapping of the
/// input serves every stage (raw copies, digests, parsing) and nothing is read or copied twice by accident.
/// `withBytes` gives zero-copy access where the backing store is contiguous (every source here except a chain
/// spanning pieces, which copies); `feed` streams a range in chunks into a `DataSink`.
public protocol DataSource: Sendable {
    /// Number of bytes in the source.
    var count: Int64 { get }
    /// Calls `body` with the bytes in `range`; the pointer must not escape the closure.
    func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R
    /// Tells the source that `range` will not be read again soon, so a mapping can give its pages back
    /// (they stay in the page cache). Streaming a large input through `feed` thus keeps the resident set
    /// flat instead of growing with the file.
    func discard(_ range: Range<Int64>)
    /// What these bytes are, when that can be told without reading them (see `DataIdentity`); nil if not.
    var identity: DataIdentity? { get }
    /// Calls `body` with `range` in consecutive pieces of at most `chunkSize` bytes, for reading large
    /// ranges once, front to back (copies, digests). A file mapping reads them with `pread` instead.
    func stream(_ range: Range<Int64>, chunkSize: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws
    /// Copies `range` into the start of `buffer` (which holds at least `range.count` bytes). A file mapping
    /// reads it with `pread`, touching no mapped page: safe to call from several threads at once.
    func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws
}

extension DataSource {
    public func discard(_ range: Range<Int64>) {}
    public var identity: DataIdentity? { nil }
    public func stream(_ range: Range<Int64>, chunkSize: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try checkRange(range)
        var position = range.lowerBound
        while position < range.upperBound {
            let end = min(range.upperBound, position + chunkSize)
            try withBytes(in: position..<end, body)
            discard(position..<end)
            position = end
        }
    }
    public func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        precondition(buffer.count >= Int(range.count64), "buffer too small")
        try withBytes(in: range) { buffer.copyMemory(from: $0) }
    }
}

/// Tells that two sources hold the same bytes without reading them: the same range of the same immutable
/// mapping, or the same in-memory buffer. Watch mode uses it to skip rewriting records that did not change.
/// Equality is conservative: false only means "not known to be equal".
public enum DataIdentity: Equatable, @unchecked Sendable {
    // @unchecked Sendable: the object is only compared by reference, never used.
    case mapping(AnyObject, Range<Int64>)
    case bytes([UInt8])

    public static func == (a: DataIdentity, b: DataIdentity) -> Bool {
        switch (a, b) {
        case (.mapping(let x, let r), .mapping(let y, let s)): return x === y && r == s
        // Array equality compares storage identity first, so an unchanged cached buffer costs nothing.
        case (.bytes(let x), .bytes(let y)): return x == y
        default: return false
        }
    }
}

/// Receives bytes streamed from a `DataSource` (a digest, a file, a CRC).
public protocol DataSink {
    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws
}

/// A range outside a source's bounds: always a malformed input or a bug, never a trap.
public struct DataSourceRangeError: Error, CustomStringConvertible {
    public let range: Range<Int64>
    public let count: Int64
    public var description: String { "read of bytes \(range.lowerBound)..<\(range.upperBound) is outside the data (\(count) bytes)" }
}

extension DataSource {
    /// Throws unless `range` lies inside `0..<count`.
    public func checkRange(_ range: Range<Int64>) throws {
        guard range.lowerBound >= 0, range.upperBound <= count else {
            throw DataSourceRangeError(range: range, count: count)
        }
    }

    /// A view of `range` that shares storage with this source.
    public func slice(_ range: Range<Int64>) throws -> any DataSource {
        try checkRange(range)
        if range.lowerBound == 0 && range.upperBound == count { return self }
        return SliceDataSource(base: self, offset: range.lowerBound, count: range.count64)
    }

    /// Copies `range` into a new array. Use for small records; stream large ranges with `feed`.
    public func bytes(in range: Range<Int64>) throws -> [UInt8] {
        try withBytes(in: range) { Array($0.bindMemory(to: UInt8.self)) }
    }

    /// Copies the whole source into a new array.
    public func allBytes() throws -> [UInt8] { try bytes(in: 0..<count) }

    /// Streams `range` into `sink` in chunks of at most `chunkSize` bytes.
    public func feed<S: DataSink>(_ range: Range<Int64>, into sink: inout S, chunkSize: Int64 = 1 << 20) throws {
        try stream(range, chunkSize: chunkSize) { try sink.consume($0) }
    }
}

extension Range where Bound == Int64 {
    /// The number of elements, as an `Int64` (`count` on a `Range<Int64>` is an `Int`).
    @inlinable public var count64: Int64 { upperBound - lowerBound }
}

/// Bytes held in memory.
public struct ByteArrayDataSource: DataSource {
    public let storage: [UInt8]
    public init(_ bytes: [UInt8]) { storage = bytes }
    public var count: Int64 { Int64(storage.count) }
    public var identity: DataIdentity? { .bytes(storage) }
    public func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try checkRange(range)
        return try storage.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[Int(range.lowerBound)..<Int(range.upperBound)]))
        }
    }
}

/// A window onto another source; shares its storage (and keeps a mapping alive).
public struct SliceDataSource: DataSource {
    let base: any DataSource
    let offset: Int64
    public let count: Int64
    init(base: any DataSource, offset: Int64, count: Int64) {
        self.base = base; self.offset = offset; self.count = count
    }
    public func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try checkRange(range)
        return try base.withBytes(in: (range.lowerBound + offset)..<(range.upperBound + offset), body)
    }
    public func discard(_ range: Range<Int64>) {
        base.discard((range.lowerBound + offset)..<(range.upperBound + offset))
    }
    public func stream(_ range: Range<Int64>, chunkSize: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try checkRange(range)
        try base.stream((range.lowerBound + offset)..<(range.upperBound + offset), chunkSize: chunkSize, body)
    }
    public func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        try checkRange(range)
        try base.read((range.lowerBound + offset)..<(range.upperBound + offset), into: buffer)
    }
    public var identity: DataIdentity? {
        switch base.identity {
        case .mapping(let object, let range)?:
            return .mapping(object, (range.lowerBound + offset)..<(range.lowerBound + offset + count))
        case .bytes(let bytes)? where offset == 0 && count == Int64(bytes.count):
            return .bytes(bytes)
        case .bytes?, nil:
            return nil
        }
    }
}

/// Several sources read as one, without copying them into one buffer (apksig's `ChainedDataSource`).
/// A `withBytes` range that spans two pieces is copied; `feed` never copies.
public struct ChainedDataSource: DataSource {
    let pieces: [any DataSource]
    let starts: [Int64]
    public let count: Int64

    public init(_ pieces: [any DataSource]) {
        self.pieces = pieces
        var starts: [Int64] = []
        var total: Int64 = 0
        for piece in pieces { starts.append(total); total += piece.count }
        self.starts = starts
        self.count = total
    }

    public func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try checkRange(range)
        if range.isEmpty { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        // Find the piece holding the first byte.
        var index = 0
        while index + 1 < pieces.count && starts[index + 1] <= range.lowerBound { index += 1 }
        let local = range.lowerBound - starts[index]
        if local + range.count64 <= pieces[index].count {
            return try pieces[index].withBytes(in: local..<(local + range.count64), body)
        }
        var copy: [UInt8] = []
        copy.reserveCapacity(Int(range.count64))
        var position = range.lowerBound
        while position < range.upperBound {
            let piece = pieces[index]
            let start = position - starts[index]
            let end = min(piece.count, start + (range.upperBound - position))
            try piece.withBytes(in: start..<end) { copy.append(contentsOf: $0) }
            position += end - start
            index += 1
        }
        return try copy.withUnsafeBytes(body)
    }

    /// Each piece's part is read into its place in `buffer`: a range that spans pieces is not gathered into a
    /// copy first.
    public func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        precondition(buffer.count >= Int(range.count64), "buffer too small")
        try checkRange(range)
        var index = 0
        while index + 1 < pieces.count && starts[index + 1] <= range.lowerBound { index += 1 }
        var position = range.lowerBound
        while position < range.upperBound {
            let piece = pieces[index]
            let start = position - starts[index]
            let end = min(piece.count, start + (range.upperBound - position))
            let at = Int(position - range.lowerBound)
            try piece.read(start..<end, into: UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + Int(end - start))]))
            position += end - start
            index += 1
        }
    }
}

/// A read-only memory mapping of a whole file; slices keep it alive, so no view outlives the mapping.
///
/// Only for inputs that nobody edits while we read them (the APK): a file truncated under a mapping raises
/// SIGBUS, so patch-directory files, which an editor may rewrite during watch mode, are read with `read(2)`.
public final class MappedFile: DataSource, @unchecked Sendable {
    public let path: String
    public let count: Int64
    private let base: UnsafeRawPointer?
    /// Kept open for `stream`: the same file as the mapping, read with pread.
    private let fd: Int32

    /// Maps the file at `path`. An empty file is not mapped (`mmap` rejects length 0) and reads as empty.
    public init(path: String) throws {
        self.path = path
        let (fd, info) = try RegularFile.open(path)
        self.fd = fd
        var mapped = false
        defer { if !mapped { close(fd) } }
        count = Int64(info.st_size)
        if count == 0 {
            base = nil
            return
        }
        let pointer = mmap(nil, Int(count), PROT_READ, MAP_PRIVATE, fd, 0)
        guard let pointer, pointer != MAP_FAILED else { throw FileError(path: path, operation: "mmap", errno: errno) }
        madvise(pointer, Int(count), MADV_SEQUENTIAL)
        base = UnsafeRawPointer(pointer)
        mapped = true
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), Int(count)) }
        if base != nil { close(fd) }
    }

    /// Reads with `pread` into a buffer rather than through the mapping. Pages touched through a mapping
    /// stay resident (and the kernel maps 64 KiB around each fault), so streaming a 400 MB APK through it
    /// would grow the process by up to 400 MB; pread copies from the page cache into one reused buffer, costs
    /// less CPU than the page faults, and a file truncated behind our back gives an error, not SIGBUS.
    public func stream(_ range: Range<Int64>, chunkSize: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try checkRange(range)
        guard base != nil, range.count64 > 0 else { return }
        try BufferPool.shared.withBuffer(minimumSize: Int(min(chunkSize, range.count64))) { pooled in
            try stream(range, chunkSize: chunkSize, through: UnsafeMutableRawBufferPointer(rebasing: pooled[0..<Int(min(chunkSize, Int64(pooled.count)))]), body)
        }
    }

    private func stream(_ range: Range<Int64>, chunkSize: Int64, through buffer: UnsafeMutableRawBufferPointer,
                        _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var position = range.lowerBound
        while position < range.upperBound {
            let want = Int(min(Int64(buffer.count), range.upperBound - position))
            try preadAll(position..<(position + Int64(want)), into: buffer)
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<want]))
            position += Int64(want)
        }
    }

    public func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        try checkRange(range)
        precondition(buffer.count >= Int(range.count64), "buffer too small")
        guard base != nil, !range.isEmpty else { return }
        try preadAll(range, into: buffer)
    }

    private func preadAll(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        let want = Int(range.count64)
        var got = 0
        while got < want {
            let n = pread(fd, buffer.baseAddress! + got, want - got, off_t(range.lowerBound) + off_t(got))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw FileError(path: path, operation: "read", errno: n < 0 ? errno : EIO, detail: "it changed while apkpatch was reading it (another program truncated or rewrote it); run again once the file is complete")
            }
            got += n
        }
    }

    /// The mapping itself: an input APK is not modified while apkpatch reads it.
    public var identity: DataIdentity? { .mapping(self, 0..<count) }

    public func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try checkRange(range)
        guard let base else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: base + Int(range.lowerBound), count: Int(range.count64)))
    }

    /// Starts reading the whole file into the page cache, in the background, for a caller about to read all
    /// of it. A file some of whose pages were evicted since it was written (or never cached) then arrives in
    /// large asynchronous reads from the start, instead of in one synchronous read per 2 MiB granule as each
    /// reader reaches it. The kernel caps one readahead request at the device's readahead window, so the file
    /// is asked for in 4 MiB steps. A file that is all in the page cache (the usual case: just built, copied or
    /// downloaded) is not advised at all: the advice looks up every page of it all the same, which for a file
    /// cached in 4 KiB pages (one written in small writes, as zipalign writes) costs more than counting them.
    public func readAhead() {
        guard base != nil else { return }
        // Nobody waits for it: the value keeps itself alive until the advice is given.
        _ = BackgroundValue(qos: .utility) { [self] in
            if isAllCached == true { return }
            let step: Int64 = 4 << 20
            var offset: Int64 = 0
            while offset < count {
                guard posix_fadvise(fd, off_t(offset), off_t(min(step, count - offset)), POSIX_FADV_WILLNEED) == 0 else { return }
                offset += step
            }
        }
    }

    /// Whether every page of the file is in the page cache, by the kernel's count (cachestat); nil where that
    /// cannot be told (kernels before 6.5).
    var isAllCached: Bool? {
        #if canImport(CLinux)
        let pageSize = Int64(sysconf(Int32(_SC_PAGESIZE)))
        let cached = apkpatch_cached_pages(fd, 0, count)
        guard pageSize > 0, cached >= 0 else { return nil }
        return cached >= (count + pageSize - 1) / pageSize
        #else
        return nil
        #endif
    }

    /// Drops the pages around `range` from this process's resident set (MADV_DONTNEED on a read-only private
    /// mapping of a file: the next read faults them back in from the page cache, unchanged).
    public func discard(_ range: Range<Int64>) {
        guard let base, range.lowerBound >= 0, range.upperBound <= count else { return }
        // Out to 2 MiB boundaries, not just the pages the range touches: the kernel maps more than the page a
        // read faults on (64 KiB around it, and the whole folio where the page cache holds large folios, up
        // to 2 MiB: on Linux 6.x a file apkpatch wrote in 1 MiB writes is cached that way, and one touched
        // byte there costs 2 MiB of resident set). Dropping pages someone still reads is harmless: the
        // mapping is read-only, so they fault back in from the page cache.
        let granule: Int64 = 2 << 20
        let start = range.lowerBound / granule * granule
        let end = min(count, (range.upperBound + granule - 1) / granule * granule)
        guard end > start else { return }
        madvise(UnsafeMutableRawPointer(mutating: base + Int(start)), Int(end - start), MADV_DONTNEED)
    }
}

/// A failed file-system call, with the path and the system's reason.
public struct FileError: Error, CustomStringConvertible {
    public let path: String
    public let operation: String
    public let errno: Int32
    public var detail: String?
    /// The path names a directory, FIFO, device or socket (`RegularFile.open`), not a regular file: no
    /// permission change helps, another path does.
    public var isNotRegularFile = false
    public init(path: String, operation: String, errno: Int32, detail: String? = nil) {
        self.path = path; self.operation = operation; self.errno = errno; self.detail = detail
    }
    /// Why, without the path: the detail when there is one, else the system's message for `errno`.
    public var reason: String { detail ?? String(cString: strerror(errno)) }
    public var description: String { "cannot \(operation) \(path): \(reason)" }
}
