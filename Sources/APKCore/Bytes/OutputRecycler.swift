#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Two files that watch mode rewrites in place and publishes in turn at one destination, so that a rebuild
/// writes only the bytes that changed since that file's last build instead of the whole APK.
///
/// A build opens the slot that is *not* at the destination, overwrites it from the first changed byte,
/// truncates it, and publishes it by swapping it with the destination atomically (`renameat2(RENAME_EXCHANGE)`):
/// readers of the destination always see a complete APK, and a failed build leaves the published one untouched.
///
/// Names, and what a `kill -9` leaves: a slot file is unnamed (`O_TMPFILE`) until it is first published, so a
/// session killed during its first build, or while copying the spare, leaves nothing. The published slot has
/// no name but the destination. The previous build, swapped out, must keep a name to be rewritten by the next
/// build: Linux lets `linkat` name an unlinked file only if it was never linked (`I_LINKABLE`), and a fresh
/// unnamed file per build would cost a copy of the whole APK. That one spare is a hidden file beside the
/// destination, `.<name>.apkpatch-<random>`, held under a lock (`WorkingFiles`) while the session runs, and listed
/// in the register of working files; every new recycler removes the spares that killed sessions left in its
/// directory and those the register lists, wherever they are. The write target never has a second name, and the
/// slots are removed with the recycler; the destination stays.
public final class OutputRecycler: @unchecked Sendable {
    // @unchecked Sendable: used by one build at a time (watch mode serialises builds); the background copy
    // touches only the descriptors it is given and the file it makes.
    public let destination: String
    private let directory: String
    /// The one name a slot file takes beside the destination: the swapped-out previous build.
    private let sparePath: String
    /// The name a slot takes for the moment of the swap (unnamed slots cannot be swapped without one).
    private let swapPath: String
    private var slots = [SlotFile(), SlotFile()]
    /// The slot whose file is at the destination, if any.
    private var published: Int?
    /// A background copy of the published file into a new file for the other slot (`prepareSpareCopy`).
    private var spareCopy: BackgroundValue<SlotFile>?
    /// The spare's names in the register of working files, while this recycler lives (`WorkingFiles.register`).
    private let registration: WorkingFiles.Registration?

    /// One slot's file: a descriptor that keeps it open and locked, and whether it has the spare name or is an
    /// `O_TMPFILE` never named (which `linkat` can still name).
    fileprivate struct SlotFile {
        var descriptor: Int32 = -1
        var isSpare = false
        var isLinkable = false
    }

    public init(destination: String) {
        self.destination = destination
        let base: String
        (directory, base) = destination.folderAndName
        sparePath = "\(directory.isEmpty ? "" : directory)/.\(base).apkpatch-" + WorkingFiles.randomSuffix(count: Self.suffixLength)
        swapPath = sparePath + ".swap"
        WorkingFiles.removeLeftovers(in: directory.isEmpty ? "/" : directory, where: Self.isWorkingFileName)
        WorkingFiles.removeRegisteredLeftovers(where: Self.isWorkingFileName)
        registration = WorkingFiles.register([sparePath, swapPath])
    }

    deinit {
        if let copy = spareCopy, let copied = try? copy.get() { adopt(copied, slot: 1 - (published ?? 0)) }
        for slot in slots.indices { discard(slot: slot) }
    }

    private static let suffixLength = 8

    /// A recycler's file names (`.<name>.apkpatch-<random>`, `….swap`), and those of versions that named slots
    /// `.<name>.apkpatch-0`/`-1` (`….link`). By bytes: the destination's name may start with a combining mark,
    /// which a Character joins to the dot before it.
    static func isWorkingFileName(_ name: String) -> Bool {
        guard name.utf8.first == UInt8(ascii: ".") else { return false }
        let marker = ".apkpatch-"
        for ending in ["", ".swap"] {
            if let stem = name.droppingJavaSuffix(ending), WorkingFiles.hasRandomSuffix(stem, after: marker, count: suffixLength) { return true }
        }
        return [marker + "0", marker + "1", marker + "0.link", marker + "1.link"].contains {
            name.javaHasSuffix($0) && name.utf8.count > $0.utf8.count + 1
        }
    }

    /// Starts copying the published file into a new unnamed file for the other slot in the background (in
    /// the kernel where it can), so the next build finds the same bytes there instead of an empty file and
    /// writes only what changed. `open` waits for the copy; a failed copy leaves no file, so that build writes
    /// everything.
    public func prepareSpareCopy() {
        guard let published, spareCopy == nil, slots[published].descriptor >= 0 else { return }
        let source = dup(slots[published].descriptor)
        guard source >= 0 else { return }
        let directory = directory.isEmpty ? "/" : directory
        let sparePath = sparePath
        spareCopy = BackgroundValue(qos: .utility) {
            defer { close(source) }
            // Unnamed until it is published where the file system allows it; else at the spare name, which
            // only the slot this copy replaces can hold (`open` waits for the copy before touching that slot).
            var file = SlotFile(descriptor: OutputFile.openUnnamed(in: directory), isSpare: false, isLinkable: true)
            if file.descriptor < 0 {
                unlink(sparePath)
                file = SlotFile(descriptor: Glibc.open(sparePath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644), isSpare: true, isLinkable: false)
                guard file.descriptor >= 0 else { return SlotFile() }
            }
            fchmod(file.descriptor, FileCreationMask.applied(to: 0o666))
            WorkingFiles.lock(file.descriptor)
            guard Self.copy(source, to: file.descriptor) else {
                if file.isSpare { unlink(sparePath) }
                close(file.descriptor)
                return SlotFile()
            }
            return file
        }
    }

    private static func copy(_ input: Int32, to output: Int32) -> Bool {
        var inOffset: Int64 = 0
        var outOffset: Int64 = 0
        #if canImport(CLinux)
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
            let n = buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress!, $0.count, off_t(inOffset)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return false }
            if n == 0 { return true }
            if buffer.withUnsafeBytes({ pwriteAll(output, UnsafeRawBufferPointer(rebasing: $0[..<n]), at: outOffset) }) != nil { return false }
            inOffset += Int64(n)
            outOffset += Int64(n)
        }
    }

    /// Opens the slot that is not published. `RecycledOutput.slot` tells the caller which layout it held;
    /// `reused` is false when the file is new (empty), so nothing in it may be kept.
    public func open() throws -> RecycledOutput {
        let slot = published == 0 ? 1 : 0
        if let copy = spareCopy {
            spareCopy = nil
            if let copied = try? copy.get(), copied.descriptor >= 0 { adopt(copied, slot: slot) }
        }
        let reused = isReusable(slot)
        if !reused {
            discard(slot: slot)
            slots[slot] = try makeSlotFile()
        }
        let descriptor = dup(slots[slot].descriptor)
        guard descriptor >= 0 else { throw FileError(path: destination, operation: "open a working file for", errno: errno) }
        return RecycledOutput(recycler: self, slot: slot, fd: descriptor, reused: reused)
    }

    /// Whether `slot`'s file can be rewritten: it is still ours alone (the spare name is still its only name,
    /// or it is an unnamed file `linkat` can still name).
    private func isReusable(_ slot: Int) -> Bool {
        let file = slots[slot]
        guard file.descriptor >= 0 else { return false }
        var status = stat()
        guard fstat(file.descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return false }
        if file.isLinkable { return status.st_nlink == 0 }
        guard file.isSpare, status.st_nlink == 1 else { return false }
        var named = stat()
        return lstat(sparePath, &named) == 0 && named.st_dev == status.st_dev && named.st_ino == status.st_ino
    }

    /// Replaces `slot`'s file with `file` (a finished spare copy).
    private func adopt(_ file: SlotFile, slot: Int) {
        discard(slot: slot)
        slots[slot] = file
    }

    /// Closes `slot`'s file, and removes its spare name.
    private func discard(slot: Int) {
        let file = slots[slot]
        guard file.descriptor >= 0 else { return }
        if file.isSpare { unlinkIfSame(sparePath, as: file.descriptor) }
        close(file.descriptor)
        slots[slot] = SlotFile()
    }

    /// Removes `path` if it still names the file open as `descriptor`.
    private func unlinkIfSame(_ path: String, as descriptor: Int32) {
        var named = stat(), open = stat()
        if lstat(path, &named) == 0, fstat(descriptor, &open) == 0, named.st_dev == open.st_dev, named.st_ino == open.st_ino {
            unlink(path)
        }
    }

    /// A new empty, locked slot file: unnamed where the file system allows it, else at the spare name.
    private func makeSlotFile() throws -> SlotFile {
        let descriptor = OutputFile.openUnnamed(in: directory.isEmpty ? "/" : directory)
        if descriptor >= 0 {
            fchmod(descriptor, FileCreationMask.applied(to: 0o666))
            WorkingFiles.lock(descriptor)
            return SlotFile(descriptor: descriptor, isSpare: false, isLinkable: true)
        }
        unlink(sparePath)
        let named = Glibc.open(sparePath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard named >= 0 else { throw FileError(path: destination, operation: "create a working file for", errno: errno) }
        fchmod(named, FileCreationMask.applied(to: 0o666))
        WorkingFiles.lock(named)
        return SlotFile(descriptor: named, isSpare: true, isLinkable: false)
    }

    /// Makes `slot` the destination: swaps it in, and keeps the file it replaces as the spare when that was
    /// the other slot (else removes it: an older file the session did not write).
    fileprivate func publish(slot: Int) throws {
        let other = 1 - slot
        let source: String
        if slots[slot].isSpare {
            source = sparePath
        } else {
            unlink(swapPath)
            guard OutputFile.link(descriptor: slots[slot].descriptor, to: swapPath) else {
                throw FileError(path: destination, operation: "link the finished output to", errno: errno)
            }
            slots[slot].isLinkable = false  // named once: unlinked again, it could never be named (nor reused)
            source = swapPath
        }
        // Whether the destination holds the other slot's file (else something older, or nothing).
        var previous = stat(), otherFile = stat()
        let replacesOther = published == other && slots[other].descriptor >= 0 && lstat(destination, &previous) == 0
            && fstat(slots[other].descriptor, &otherFile) == 0 && previous.st_dev == otherFile.st_dev && previous.st_ino == otherFile.st_ino
        var keptOther = false
        if OutputFile.exchange(source, destination) {
            // `source` names the previous destination now.
            if replacesOther && (source == sparePath || rename(source, sparePath) == 0) {
                keptOther = true
            } else {
                unlink(source)
            }
        } else {
            // No exchange: give the previous destination a second name first, as the rename takes its name.
            let holdPath = source == sparePath ? swapPath : sparePath
            if replacesOther { unlink(holdPath) }
            let held = replacesOther && Glibc.link(destination, holdPath) == 0
            guard rename(source, destination) == 0 else {
                let error = errno
                if held { unlink(holdPath) }
                if source == swapPath { unlink(swapPath) }
                throw FileError(path: destination, operation: "rename the finished output to", errno: error)
            }
            keptOther = held && (holdPath == sparePath || rename(holdPath, sparePath) == 0)
            if held && !keptOther { unlink(holdPath) }
        }
        slots[slot].isSpare = false
        if keptOther {
            slots[other].isSpare = true
        } else if published == other {
            discard(slot: other)  // not kept, or replaced by another program since it was published
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
