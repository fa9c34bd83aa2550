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
    private var lock = pthread_mutex_t()
    private let maxKept = 16

    private init() { pthread_mutex_init(&lock, nil) }

    /// A buffer of `bufferSize` bytes; give it back with `recycle`.
    public func take() -> UnsafeMutableRawBufferPointer {
        pthread_mutex_lock(&lock)
        let buffer = free.popLast()
        pthread_mutex_unlock(&lock)
        return buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 64)
    }

    public func recycle(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count == Self.bufferSize, "not a pool buffer")
        pthread_mutex_lock(&lock)
        if free.count < maxKept {
            free.append(buffer)
            pthread_mutex_unlock(&lock)
        } else {
            pthread_mutex_unlock(&lock)
            buffer.deallocate()
        }
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
