#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reused 1 MiB buffers for streaming (pread chunks, digest chunks).
///
/// Allocating a fresh megabyte per chunk lets glibc's adaptive mmap threshold move such buffers onto the
/// heap, where thousands of them interleaved with small allocations fragment it: signing a 400 MB APK grew
/// the process by 400 MB. A handful of buffers passed around instead keeps memory flat and skips the page
/// faults of fresh memory.
public final class BufferPool: @unchecked Sendable {
    // @unchecked Sendable: `free` is guarded by `lock`.
    public static let shared = BufferPool()
    public static let bufferSize = 1 << 20
    private var free: [UnsafeMutableRawBufferPointer] = []
    private let lock = Lock()
    private let maxKept = 16
    /// Buffers carved from huge-page slabs (`newBuffer`), always kept.
    private var slabBuffers = Set<UInt>()

    init() {}  // internal: tests use a pool of their own

    /// A buffer of `bufferSize` bytes; give it back with `recycle`.
    public func take() -> UnsafeMutableRawBufferPointer {
        let buffer = lock.withLock { free.popLast() }
        return buffer ?? newBuffer()
    }

    /// A free buffer, or nil when all are in use: for work that has somewhere else to go, and is better off there
    /// than in a new slab (fresh memory, whose first writes fault; see `newBuffer`).
    public func takeIfFree() -> UnsafeMutableRawBufferPointer? {
        lock.withLock { free.popLast() }
    }

    /// Buffers come two at a time from a 2 MiB region the kernel may back with one huge page: one page fault
    /// where 4 KiB pages take 512, which matters where faults are costly (virtual machines). Such buffers are
    /// kept, never freed one by one: there are only as many as were in use at once.
    private func newBuffer() -> UnsafeMutableRawBufferPointer {
        let slab = 2 * Self.bufferSize
        // Twice the size, so a 2 MiB-aligned slab fits inside; the rest is given back.
        guard let raw = mmap(nil, 2 * slab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), raw != MAP_FAILED else {
            return UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 64)
        }
        let address = UInt(bitPattern: raw), aligned = (address + UInt(slab) - 1) & ~UInt(slab - 1), end = address + UInt(2 * slab)
        if aligned > address { munmap(raw, Int(aligned - address)) }
        if end > aligned + UInt(slab) { munmap(UnsafeMutableRawPointer(bitPattern: aligned + UInt(slab)), Int(end - aligned - UInt(slab))) }
        let base = UnsafeMutableRawPointer(bitPattern: aligned)!
        #if os(Linux)
        _ = madvise(base, slab, MADV_HUGEPAGE)  // a hint: without transparent huge pages, 4 KiB pages
        #endif
        let first = UnsafeMutableRawBufferPointer(start: base, count: Self.bufferSize)
        let second = UnsafeMutableRawBufferPointer(start: base + Self.bufferSize, count: Self.bufferSize)
        lock.withLock {
            slabBuffers.insert(UInt(bitPattern: first.baseAddress))
            slabBuffers.insert(UInt(bitPattern: second.baseAddress))
            free.append(second)
        }
        return first
    }

    public func recycle(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count == Self.bufferSize, "not a pool buffer")
        let kept = lock.withLock {
            guard free.count < maxKept || slabBuffers.contains(UInt(bitPattern: buffer.baseAddress)) else { return false }
            free.append(buffer)
            return true
        }
        if !kept { buffer.deallocate() }
    }

    /// Runs `body` with a pool buffer of at least `size` bytes (a private one when `size` is larger).
    public func withBuffer<R>(minimumSize size: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        if size > Self.bufferSize {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
            defer { buffer.deallocate() }
            return try body(buffer)
        }
        let buffer = take()
        defer { recycle(buffer) }
        return try body(buffer)
    }
}
