import Dispatch

/// The package's one way to spread work over the cores: a throwing loop (and map) over indices, run by
/// `DispatchQueue.concurrentPerform`, one call per core taking indices in order (the calling thread takes part,
/// so a caller already on a worker thread does not wait for a free one) or, with a concurrency of one, in order on this thread (`sign --out-dir`
/// signs several APKs at once, one per core, and each must not spread again).
///
/// After the first error the indices not yet started are skipped, calls still running finish, and that
/// error is rethrown. Results go into `Parallel.Slots`, which each index writes once, without a lock.
/// A value computed once on another thread is a `BackgroundValue`; shared mutable state takes a `Lock`.
public enum Parallel {
    /// Calls `body` with every index in `0..<count`: on all cores when `concurrency` is above 1 (0: the
    /// number of cores) and there are two indices or more, else in order on this thread.
    ///
    /// - Parameter failure: where the first error goes; long bodies that should stop early once another
    ///   call has failed pass one and check `hasFailed`.
    public static func forEach(_ count: Int, concurrency: Int = 0, failure: FirstFailure = FirstFailure(),
                               _ body: @Sendable (Int) throws -> Void) throws {
        guard count > 0 else { return }
        let cores = concurrency > 0 ? concurrency : ProcessorCount.active
        if cores <= 1 || count < 2 {
            for index in 0..<count {
                do { try body(index) } catch { failure.record(error); throw error }
            }
            return
        }
        // One call per core, each taking the next index until none is left: the work is spread as evenly as
        // with one call per index, and each thread says once that it works (CoreBalance), and where it is at
        // each index. The calling thread counts as working only while it runs a call: once out of indices it
        // waits for the other calls, and its core can take one of two threads sharing another.
        let next = Counter()
        CoreBalance.waiting {
            DispatchQueue.concurrentPerform(iterations: min(cores, count)) { _ in
                CoreBalance.enter()
                defer { CoreBalance.leave() }
                // A worker the call woke onto this core (the caller's, as a rule) starts now when another core is free.
                CoreBalance.letWokenWorkerStart()
                while !failure.hasFailed, let index = next.take(below: count) {
                    CoreBalance.checkpoint()
                    do { try body(index) } catch { failure.record(error) }
                }
            }
        }
        try failure.rethrow()
    }

    /// `body` of every index in `0..<count`, in index order, computed as `forEach` runs it.
    public static func map<T>(_ count: Int, concurrency: Int = 0, _ body: @Sendable (Int) throws -> T) throws -> [T] {
        let slots = Slots<T?>(count: count, repeating: nil)
        try forEach(count, concurrency: concurrency) { index in slots[index] = try body(index) }
        return slots.values.map { $0! }
    }

    /// The indices handed out so far.
    private final class Counter: @unchecked Sendable {
        // @unchecked Sendable: `taken` is read and written under `lock`.
        private let lock = Lock()
        private var taken = 0

        func take(below count: Int) -> Int? {
            lock.withLock {
                guard taken < count else { return nil }
                defer { taken += 1 }
                return taken
            }
        }
    }

    /// Fixed storage that concurrent calls write, each slot by one call only (so it needs no lock), and that
    /// is read once they have all returned.
    public final class Slots<Element>: @unchecked Sendable {
        // @unchecked Sendable: slots are disjoint between writers, and read only after `forEach` returned.
        private let storage: UnsafeMutableBufferPointer<Element>

        public init(count: Int, repeating value: Element) {
            storage = .allocate(capacity: count)
            storage.initialize(repeating: value)
        }

        deinit {
            storage.deinitialize()
            storage.deallocate()
        }

        public var count: Int { storage.count }

        public subscript(index: Int) -> Element {
            get { storage[index] }
            set { storage[index] = newValue }
        }

        /// The slots, copied out in order.
        public var values: [Element] { Array(storage) }

        /// The slots' memory, for writers that fill byte ranges of it (each its own) rather than elements. Valid
        /// only while this object is alive: callers hold it (a closure capturing it, or `withUnsafeBytes`).
        public var unsafeMutableBytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(storage) }

        /// The slots' memory, read with this object kept alive for `body`.
        public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(storage)) }
        }
    }

    /// The first error any call threw; whether one has (for work that stops early).
    public final class FirstFailure: @unchecked Sendable {
        // @unchecked Sendable: `error` is read and written under `lock`.
        private let lock = Lock()
        private var error: (any Error)?

        public init() {}

        public var hasFailed: Bool { lock.withLock { error != nil } }

        /// Keeps `error` unless one was recorded before.
        public func record(_ error: any Error) { lock.withLock { if self.error == nil { self.error = error } } }

        public func rethrow() throws {
            if let error = lock.withLock({ error }) { throw error }
        }
    }
}
