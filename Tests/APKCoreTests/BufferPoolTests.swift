import Testing
@testable import APKCore

/// `BufferPool` hands out 1 MiB buffers, two at a time from a 2 MiB-aligned slab: buffers in use at once never
/// share bytes, every byte is writable, and a recycled buffer is handed out again rather than a new one.
@Suite(.removesTemporaryDirectories) struct BufferPoolTests {
    @Test func buffersInUseAreDisjointWritableAndReused() {
        let pool = BufferPool()  // its own: tests running beside this one take from the shared pool
        var taken = (0..<5).map { _ in pool.take() }
        for (index, buffer) in taken.enumerated() {
            #expect(buffer.count == BufferPool.bufferSize)
            buffer.initializeMemory(as: UInt8.self, repeating: UInt8(index + 1))
        }
        // Each still holds its own fill: no two overlap.
        for (index, buffer) in taken.enumerated() {
            #expect(buffer.allSatisfy { $0 == UInt8(index + 1) }, "buffer \(index) was overwritten")
        }
        let starts = taken.map { UInt(bitPattern: $0.baseAddress) }.sorted()
        for (low, high) in zip(starts, starts.dropFirst()) { #expect(high - low >= UInt(BufferPool.bufferSize)) }
        // A slab's first buffer starts on a 2 MiB boundary (what lets the kernel back it with one huge page).
        #expect(starts.contains { $0 % UInt(2 * BufferPool.bufferSize) == 0 })

        let returned = taken.removeLast()
        pool.recycle(returned)
        let again = pool.take()
        #expect(again.baseAddress == returned.baseAddress)
        for buffer in taken + [again] { pool.recycle(buffer) }
    }

    /// `takeIfFree` hands out only a buffer that is free: with none free it gives nil and makes no slab.
    @Test func takeIfFreeMakesNoNewBuffer() {
        let pool = BufferPool()
        #expect(pool.takeIfFree() == nil)
        let first = pool.take()  // a slab: this buffer and a free second one
        let second = pool.takeIfFree()
        #expect(second != nil && second?.baseAddress != first.baseAddress)
        #expect(pool.takeIfFree() == nil)
        if let second { pool.recycle(second) }
        #expect(pool.takeIfFree()?.baseAddress == second?.baseAddress)
        pool.recycle(first)
    }
}
