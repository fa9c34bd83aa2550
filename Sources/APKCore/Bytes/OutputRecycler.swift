#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Two files beside one destination that watch mode rewrites in place and publishes in turn, so that a
/// rebuild writes only the bytes that changed since that file's last build instead of the whole APK.
///
/// Each slot is a hidden file (`.<name>.apkpatch-0`, `-1`). A build opens the slot that is *not* at the
/// destination, overwrites it from the first changed byte, truncates it, and publishes it: a second hard link
/// swapped atomically with the destination. Readers of the destination always see a complete APK, and a
/// failed build leaves the published one untouched. The slot being written never has a second name: a slot
/// file with more than one link (another program linked it, or a killed session left it as the destination)
/// is replaced by a new file rather than written into. The slots are removed with the recycler; the
/// destination stays.
public final class OutputRecycler: @unchecked Sendable {
    // @unchecked Sendable: used by one build at a time (watch mode serialises builds).
    public let destination: String
    private let slotPaths: [String]
    /// The slot whose file is at the destination, if any.
    private var published: Int?
    /// A background copy of the published file into the other slot (`prepareSpareCopy`).
    private var spareCopy: BackgroundValue<Void>?

    public init(destination: String) {
        self.destination = destination
        let directory = destination.contains("/") ? String(destination[..<destination.lastIndex(of: "/")!]) : "."
        let base = destination.split(separator: "/").last.map(String.init) ?? destination
        let prefix = "\(directory.isEmpty ? "/" : directory)/.\(base).apkpatch-"
        slotPaths = [prefix + "0", prefix + "1"]
        // Left by a killed session: one of them may still be the destination's file, so never reuse them.
        for path in slotPaths { unlink(path) }
    }

    deinit {
        spareCopy?.wait()
        for path in slotPaths { unlink(path) }
    }

    /// Starts copying the published file into the other slot in the background (in the kernel where it
    /// can), so the next build finds the same bytes there instead of an empty file and writes only what
    /// changed. `open` waits for the copy; a failed copy leaves no file, so that build writes everything.
    public func prepareSpareCopy() {
        guard let published, spareCopy == nil else { return }
        let source = slotPaths[published]
        let target = slotPaths[1 - published]
        spareCopy = BackgroundValue(qos: .utility) {
            if !Self.copy(source, to: target) { unlink(target) }
        }
    }

    private static func copy(_ source: String, to target: String) -> Bool {
        let input = Glibc.open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return false }
        defer { close(input) }
        unlink(target)
        let output = Glibc.open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else { return false }
        defer { close(output) }
        fchmod(output, 0o644)
        #if canImport(CLinux)
        var inOffset: Int64 = 0
        var outOffset: Int64 = 0
        while true {
            let n = apkpatch_copy_file_range(input, &inOffset, output, &outOffset, 1 << 30)
            if n > 0 { continue }
            if n == 0 { return true }
            if errno == EINTR { continue }
            if inOffset == 0 && (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP) { break }
            return false
        }
        #endif
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return false }
            if n == 0 { return true }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { write(output, $0.baseAddress! + done, n - done) }
                if w < 0 && errno == EINTR { continue }
                if w <= 0 { return false }
                done += w
            }
        }
    }

    /// Opens the slot that is not published. `RecycledOutput.slot` tells the caller which layout it held;
    /// `reused` is false when the file is new (empty), so nothing in it may be kept.
    public func open() throws -> RecycledOutput {
        spareCopy?.wait()
        spareCopy = nil
        let slot = published == 0 ? 1 : 0
        let path = slotPaths[slot]
        var fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        var reused = false
        if fd >= 0 {
            var status = stat()
            if fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG && status.st_nlink == 1 {
                reused = true
            } else {
                close(fd)
                fd = -1
            }
        }
        if !reused {
            unlink(path)
            fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FileError(path: destination, operation: "create a working file for", errno: errno) }
            fchmod(fd, 0o644)
        }
        return RecycledOutput(recycler: self, slot: slot, fd: fd, reused: reused)
    }

    /// Makes `slot` the destination: link it under a temporary name, then swap that with the destination.
    fileprivate func publish(slot: Int) throws {
        let link = slotPaths[slot] + ".link"
        unlink(link)
        guard Glibc.link(slotPaths[slot], link) == 0 else {
            throw FileError(path: destination, operation: "link the finished output to", errno: errno)
        }
        if OutputFile.exchange(link, destination) {
            unlink(link)  // the previous destination: the other slot's second name, or an older file
        } else if rename(link, destination) != 0 {
            let error = errno
            unlink(link)
            throw FileError(path: destination, operation: "rename the finished output to", errno: error)
        }
        published = slot
    }
}

/// A slot of an `OutputRecycler` being rewritten: writes go to `position` (buffered), `skip` steps over
/// bytes known to be there already, and `commit` truncates the file to `position` and publishes it.
public final class RecycledOutput: DataSink {
    public let slot: Int
    /// False when the slot file was created empty for this build.
    public let reused: Bool
    private let recycler: OutputRecycler
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var bufferStart: Int64 = 0
    private let bufferLimit = 1 << 20
    public private(set) var position: Int64 = 0

    fileprivate init(recycler: OutputRecycler, slot: Int, fd: Int32, reused: Bool) {
        self.recycler = recycler
        self.slot = slot
        self.fd = fd
        self.reused = reused
        buffer.reserveCapacity(bufferLimit)
    }

    deinit { if fd >= 0 { close(fd) } }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if buffer.count + bytes.count > bufferLimit { try flush() }
        if buffer.isEmpty { bufferStart = position }
        position += Int64(bytes.count)
        if bytes.count >= bufferLimit {
            try writeAll(bytes, at: bufferStart)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    public func write(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try write($0) } }

    public func consume(_ bytes: UnsafeRawBufferPointer) throws { try write(bytes) }

    /// Moves past `count` bytes that the file already holds.
    public func skip(_ count: Int64) throws {
        try flush()
        position += count
    }

    /// Reads back bytes already in the file (or just written).
    public func read(_ range: Range<Int64>) throws -> [UInt8] {
        try flush()
        var out = [UInt8](repeating: 0, count: Int(range.count))
        var done = 0
        while done < out.count {
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(range.lowerBound) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FileError(path: recycler.destination, operation: "read back the working file of", errno: n < 0 ? errno : EIO) }
            done += n
        }
        return out
    }

    public func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { try writeAll($0, at: bufferStart) }
        buffer.removeAll(keepingCapacity: true)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        if let error = pwriteAll(fd, bytes, at: offset) {
            throw FileError(path: recycler.destination, operation: "write the working file of", errno: error)
        }
    }

    /// Truncates the file to what was written and publishes it at the destination.
    public func commit() throws {
        try flush()
        guard ftruncate(fd, off_t(position)) == 0 else {
            throw FileError(path: recycler.destination, operation: "truncate the working file of", errno: errno)
        }
        guard close(fd) == 0 else { fd = -1; throw FileError(path: recycler.destination, operation: "close the working file of", errno: errno) }
        fd = -1
        try recycler.publish(slot: slot)
    }
}
