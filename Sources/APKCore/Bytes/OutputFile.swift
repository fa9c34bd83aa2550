#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#elseif canImport(Darwin)
import Darwin
#endif

/// An output written to a temporary file beside its destination and renamed over it only on `commit()`.
///
/// Nobody ever sees a half-written APK at the output path: if the process fails or is killed, the
/// destination keeps its previous content (or stays absent). On Linux the temporary file is unnamed
/// (`O_TMPFILE` in the destination's directory) and gets a name only in `commit`, just before the rename: a
/// process killed while writing leaves no file behind, since the kernel frees an unnamed file with its last
/// descriptor. Where the file system lacks `O_TMPFILE` (or `/proc` is not mounted, which naming it needs), it
/// is a hidden named file that `deinit` removes for an uncommitted output, and a bus error handler too.
/// Writes are buffered; `position` is the logical file offset.
public final class OutputFile: DataSink {
    public let destination: String
    /// The temporary file's path: a hidden file beside the destination, or `/proc/self/fd/N` for an unnamed
    /// one (valid while the output is open: `mapWritten` reads through it).
    public let temporaryPath: String
    /// True when the temporary file is unnamed (`O_TMPFILE`) until `commit`.
    public let isUnnamed: Bool
    /// The path errors name: the destination for an unnamed file, whose `/proc` path means nothing to a user.
    private var errorPath: String { isUnnamed ? destination : temporaryPath }
    private var fd: Int32
    /// Copies of the bytes given to `write`, until the next flush (allocated once: `pending` points into it).
    private let buffer: UnsafeMutableRawBufferPointer
    private var bufferUsed = 0
    /// What the next flush writes, in order: pieces of `buffer`.
    private var pending: [iovec] = []
    private var pendingBytes = 0
    private static let flushThreshold = 1 << 20
    /// Linux's IOV_MAX.
    private static let maxPieces = 1024
    public private(set) var position: Int64 = 0
    private var committed = false
    /// The size `reserve` gave the file (0: none); `commit` cuts the file back to what was written when less was.
    private var reservedSize: Int64 = 0
    /// Removes the temporary file if reading a mapped input ends the process with a bus error.
    /// Ended once (a slot ended twice could belong to another output by then).
    private var busErrorCleanup: BusErrorGuard.Registration?

    /// Creates the temporary file; `mode`, narrowed by the umask as `open(2)` would narrow it, is applied to it (and so
    /// to the destination after the rename).
    /// `unnamed` false always uses a named temporary file (the fallback; tests choose it).
    public init(destination: String, mode: mode_t = 0o666, unnamed: Bool = true) throws {
        self.destination = destination
        let (directory, base) = destination.folderAndName
        let prefix = "\(directory.isEmpty ? "/" : directory)/.\(base).tmp-"
        self.namePrefix = prefix
        if unnamed {
            let fd = Self.openUnnamed(in: directory.isEmpty ? "/" : directory)
            if fd >= 0 {
                self.fd = fd
                self.temporaryPath = "/proc/self/fd/\(fd)"
                self.isUnnamed = true
                fchmod(fd, FileCreationMask.applied(to: mode))
                buffer = .allocate(byteCount: Self.flushThreshold, alignment: 64)
                pending.reserveCapacity(Self.maxPieces)
                return
            }
        }
        self.isUnnamed = false
        // Named temporary files are held locked while written, so the ones killed runs left can be told apart
        // and removed (`WorkingFiles`); only on file systems without `O_TMPFILE`, where they are named at all.
        let marker = ".\(base).tmp-"
        WorkingFiles.removeLeftovers(in: directory.isEmpty ? "/" : directory) { name in
            name.utf8.count == marker.utf8.count + 8 && WorkingFiles.hasRandomSuffix(name, after: marker, count: 8)
        }
        // The name is registered for the bus-error cleanup before the file exists: other threads may already
        // be reading a mapped input, and a file created first and registered after could be left behind by a
        // bus error in between. (mkstemp picks the name and creates the file in one call, so it cannot do that.)
        var attempts = 0
        while true {
            let path = prefix + Self.randomSuffix()
            let registration = BusErrorGuard.register(path)
            let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                WorkingFiles.lock(fd)
                Self.createdForTesting?(path)
                self.fd = fd
                self.temporaryPath = path
                busErrorCleanup = registration
                break
            }
            let error = errno
            registration.end()
            attempts += 1
            guard error == EEXIST && attempts < 100 else {
                throw FileError(path: destination, operation: "create a temporary file for", errno: error)
            }
        }
        fchmod(fd, FileCreationMask.applied(to: mode))
        buffer = .allocate(byteCount: Self.flushThreshold, alignment: 64)
        pending.reserveCapacity(Self.maxPieces)
    }

    /// The hidden name's start (`dir/.NAME.tmp-`): the named temporary file, or the name an unnamed one gets in
    /// `commit` for the moment before its rename.
    private let namePrefix: String

    /// Whether `/proc/self/fd` exists: giving an unnamed file a name goes through it.
    private static let canNameDescriptors = access("/proc/self/fd", F_OK) == 0

    /// A new unnamed regular file (`O_TMPFILE`, mode 0600) in `directory` that `link(descriptor:to:)` can name
    /// later; -1 with errno set where the kernel or file system cannot (or `/proc` is missing).
    package static func openUnnamed(in directory: String) -> Int32 {
        #if canImport(CLinux)
        guard canNameDescriptors else { errno = EOPNOTSUPP; return -1 }
        return apkpatch_open_tmpfile(directory, 0o600)
        #else
        errno = EOPNOTSUPP
        return -1
        #endif
    }

    /// Gives the file open as `descriptor` the name `path`, if nothing has it (`linkat` replaces no file).
    static func link(descriptor: Int32, to path: String) -> Bool {
        #if canImport(CLinux)
        return apkpatch_link_descriptor(descriptor, path) == 0
        #else
        errno = EOPNOTSUPP
        return false
        #endif
    }

    /// Called with each temporary file's path just after it is created (tests check it is registered by then).
    nonisolated(unsafe) static var createdForTesting: ((String) -> Void)?

    /// Eight random letters and digits (as mkstemp's six, a little longer).
    private static func randomSuffix() -> String { WorkingFiles.randomSuffix(count: 8) }

    deinit {
        buffer.deallocate()
        if fd >= 0 { close(fd) }
        // Removed before the registration ends: a failed run's other threads may still be reading the input.
        if !committed && !isUnnamed { unlink(temporaryPath) }
        busErrorCleanup?.end()
    }

    /// Appends a copy of `bytes` (buffered).
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        if bufferUsed + bytes.count > buffer.count || pending.count >= Self.maxPieces { try flush() }
        position += Int64(bytes.count)
        if bytes.count >= buffer.count {
            try writeAll(bytes)
            return
        }
        let start = buffer.baseAddress! + bufferUsed
        start.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        bufferUsed += bytes.count
        if let last = pending.last, last.iov_base == start - last.iov_len {
            pending[pending.count - 1].iov_len += bytes.count
        } else {
            pending.append(iovec(iov_base: start, iov_len: bytes.count))
        }
        pendingBytes += bytes.count
        if pendingBytes >= Self.flushThreshold { try flush() }
    }

    public func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    public func writeZeros(_ count: Int) throws {
        guard count > 0 else { return }
        try write([UInt8](repeating: 0, count: count))
    }

    public func consume(_ bytes: UnsafeRawBufferPointer) throws { try write(bytes) }

    /// Allocates about `bytes` of disk for the output in one call before it is written: ext4 then writes
    /// into allocated blocks instead of reserving delayed allocation page by page, a third less kernel time
    /// for a 45 MB APK, and a full disk shows before anything is written. Best effort (some file systems
    /// cannot); `commit` cuts the file to what was written when that is less. Cutting a file back is a
    /// journalled truncation, which on ext4 can wait for the journal's running commit: a writer that knows the
    /// size of a first part of its output (a signer's entries section) reserves that, and appends the rest.
    public func reserve(_ bytes: Int64) throws {
        #if canImport(CLinux)
        guard bytes > 0, fd >= 0 else { return }
        if apkpatch_fallocate(fd, bytes) == 0 {
            reservedSize = bytes
        } else if errno == ENOSPC {
            throw FileError(path: errorPath, operation: "reserve \(bytes) bytes for", errno: ENOSPC, detail: "the disk is full")
        }
        #endif
    }

    /// Writes what is pending to the temporary file.
    public func flush() throws {
        guard !pending.isEmpty else { return }
        var first = 0
        while first < pending.count {
            let n = pending.withUnsafeBufferPointer { writev(fd, $0.baseAddress! + first, Int32($0.count - first)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileError(path: errorPath, operation: "write", errno: errno)
            }
            // Skip what was written; a short write leaves the rest of a piece for the next call.
            var written = n
            while first < pending.count && written >= pending[first].iov_len {
                written -= pending[first].iov_len
                first += 1
            }
            if written > 0 {
                pending[first].iov_base = pending[first].iov_base! + written
                pending[first].iov_len -= written
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        bufferUsed = 0
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw FileError(path: errorPath, operation: "write", errno: errno)
            }
            done += n
        }
    }

    /// Writes `bytes` at `offset` with `pwrite`, past the buffer: for a region that several threads write
    /// at once, each its own part (nothing else may be written meanwhile). `skip(to:)` then moves the
    /// sequential writer to the region's end.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        if let error = pwriteAll(fd, bytes, at: offset) { throw FileError(path: errorPath, operation: "write", errno: error) }
    }

    /// Continues sequential writing at `offset`, after a region written with `write(_:at:)`.
    public func skip(to offset: Int64) throws {
        try flush()
        guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            throw FileError(path: errorPath, operation: "seek in", errno: errno)
        }
        position = offset
    }

    /// Overwrites bytes already written at `offset` (flushes first). Used to patch headers after the fact.
    public func overwrite(at offset: Int64, with bytes: [UInt8]) throws {
        try flush()
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(offset)) }
        guard n == bytes.count else { throw FileError(path: errorPath, operation: "write", errno: errno) }
    }

    /// Maps what has been written so far, for digesting it without another read through the page cache.
    public func mapWritten() throws -> any DataSource {
        try flush()
        return try MappedFile(path: temporaryPath).slice(0..<position)  // not the reserved space beyond
    }

    /// Flushes and moves the temporary file to the destination in one atomic step.
    ///
    /// An existing regular file is swapped out with `renameat2(RENAME_EXCHANGE)` and then unlinked: a plain
    /// `rename` over it makes ext4 (auto_da_alloc) start writing the whole new file back inside the call, a
    /// cost that grows with the file, while the exchange is as atomic for readers and costs nothing. Anything else (no
    /// destination, a symlink, a file system without exchange) gets a plain `rename`. An unnamed file is
    /// linked at the destination directly when nothing is there, else under a hidden name for the swap.
    public func commit() throws {
        try flush()
        busErrorCleanup?.end()  // every byte is written: nothing reads an input any more
        busErrorCleanup = nil
        if position < reservedSize && ftruncate(fd, off_t(position)) != 0 {
            throw FileError(path: errorPath, operation: "truncate", errno: errno)
        }
        if isUnnamed && linkUnnamedFile(to: destination) {
            // No output was there: the file got its final name in one step, nothing to rename.
            let closed = close(fd) == 0
            let error = errno
            fd = -1
            guard closed else {
                unlink(destination)  // not known to be whole
                throw FileError(path: destination, operation: "close", errno: error)
            }
            committed = true
            return
        }
        let finished = isUnnamed ? try linkUnnamedFile() : temporaryPath
        guard close(fd) == 0 else {
            let error = errno
            fd = -1
            if isUnnamed { unlink(finished) }
            throw FileError(path: errorPath, operation: "close", errno: error)
        }
        fd = -1
        if Self.exchange(finished, destination) {
            committed = true
            BackgroundRemoval.unlink(finished)  // now the previous output
            return
        }
        guard rename(finished, destination) == 0 else {
            let error = errno
            if isUnnamed { unlink(finished) }
            throw FileError(path: destination, operation: "rename the finished output to", errno: error)
        }
        committed = true
    }

    /// Gives the unnamed temporary file the name `path` if nothing has it (`linkat` replaces no file).
    private func linkUnnamedFile(to path: String) -> Bool { Self.link(descriptor: fd, to: path) }

    /// Gives the unnamed temporary file a hidden name beside the destination, for the exchange or rename that
    /// replaces the existing output, and returns it.
    private func linkUnnamedFile() throws -> String {
        for _ in 0..<100 {
            let path = namePrefix + Self.randomSuffix()
            if Self.link(descriptor: fd, to: path) { return path }
            guard errno == EEXIST else { throw FileError(path: destination, operation: "name the finished output for", errno: errno) }
        }
        throw FileError(path: destination, operation: "name the finished output for", errno: EEXIST)
    }

    /// Swaps `from` with `to` when `to` is an existing regular file and the kernel can; false otherwise.
    static func exchange(_ from: String, _ to: String) -> Bool {
        #if canImport(CLinux)
        var status = stat()
        guard lstat(to, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return false }
        return apkpatch_rename_exchange(from, to) == 0
        #else
        return false
        #endif
    }
}

/// Writes all of `bytes` at `offset` (retrying short writes and EINTR); the errno of a failure, else nil.
func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
    var done = 0
    while done < bytes.count {
        let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
        if n < 0 {
            if errno == EINTR { continue }
            return errno
        }
        done += n
    }
    return nil
}
