#if os(Linux)
import CLinux
import Glibc
#endif

/// Keeps the package's busy threads on different cores.
///
/// Linux does not always spread them by itself. A woken worker is often queued on its waker's core while the
/// other core idles (the wake-up's search for an idle core is cut short when the cores have been busy, and they
/// are throughout a signing), and a core that goes idle while two threads share the other one may not take
/// one of them over for a scheduler period or longer: on a two-core machine a large APK's signing spent a good part
/// of its time with one core idle and two of its threads taking turns on the other.
///
/// So the threads say when they work: a work item of `Parallel` or `BackgroundValue` (`enter`/`leave`), and the
/// main thread of a command from `enable()` on, except while it waits for a value (`waiting`). A thread that
/// starts work on a core where another of ours works moves to a core none of ours is using, and a thread that
/// stops working leaves its core to one of two sharing another or, when none does, to a thread waiting on a core
/// where another works (often the one it is about to wake, which Linux would wake behind that other thread). Moving
/// is placing, not pinning: the thread's CPU mask is narrowed to the new core and at once widened back to all the
/// process may use, so the scheduler is still free to move it (for another program's sake) afterwards; only a
/// waiting thread stays held to its new core until it resumes. Only threads of this package count; other
/// programs' load is the scheduler's to weigh.
///
/// Off unless `enable()` was called (the command-line tool does, for the commands that spread work): a library
/// caller's threads are the caller's to place. A no-op with one allowed core and off Linux.
public enum CoreBalance {
    /// Turns placement on and counts the calling thread (the command's main thread) as working from now on.
    /// Call once, before any work is spread.
    public static func enable() {
        #if os(Linux)
        guard !state.isEnabled else { return }
        var mask = [UInt8](repeating: 0, count: 1024)
        let count = mask.withUnsafeMutableBufferPointer { apkpatch_allowed_cpus($0.baseAddress, Int32($0.count)) }
        guard count > 1, state.enable(allowed: mask) else { return }
        state.enter()
        #endif
    }

    /// The calling thread starts a work item (nested calls count).
    static func enter() {
        #if os(Linux)
        if state.isEnabled { state.enter() }
        #endif
    }

    /// The calling thread ends a work item.
    static func leave() {
        #if os(Linux)
        if state.isEnabled { state.leave() }
        #endif
    }

    /// The calling thread, in a long work item, says which core it is on now. The scheduler moves threads on its
    /// own (when more of ours work than there are cores), so where each was when it started is soon out of date;
    /// without this, a thread that stops working might leave its core to nobody while two others share one.
    public static func checkpoint() {
        #if os(Linux)
        if state.isEnabled { state.checkpoint() }
        #endif
    }

    /// Lets a worker the calling thread has just woken (by queuing work) start at once, when a core has none of
    /// the package's working threads: Linux often queues the worker on its waker's core, where it waits for the
    /// waker's scheduler slice to end, milliseconds, while that core idles (a command's main thread queues the APK's
    /// opening, then parses its arguments). A yield lets it run; it moves to the free core as it starts (`enter`).
    /// Nothing when every core has working threads (the worker then takes its turn where it is) or placement is off.
    static func letWokenWorkerStart() {
        #if os(Linux)
        if state.isEnabled { state.letWokenWorkerStart() }
        #endif
    }

    /// Runs `body`, a wait (for other threads, for events), with the calling thread counted as not working
    /// meanwhile (its core can take a thread that shares another), and placed again when it returns.
    public static func waiting<R>(_ body: () throws -> R) rethrows -> R {
        #if os(Linux)
        guard state.isEnabled, state.pause() else { return try body() }
        // The wait's errno is its caller's to read (a poll(2) interrupted by a signal).
        defer {
            let saved = errno
            state.resume()
            errno = saved
        }
        #endif
        return try body()
    }

    #if os(Linux)
    private static let state = Balancer()

    /// The bookkeeping behind the calls above, for the process (`state`) or a test.
    final class Balancer: @unchecked Sendable {
        // @unchecked Sendable: every mutable property is read and written under `lock`, except `isEnabled`,
        // which is written once in `enable()` before any work is spread and only read after.
        private let lock = Lock()
        private(set) var isEnabled = false
        private var allowed: [UInt8] = []
        private struct Worker {
            var thread: Int32
            var cpu: Int32
            /// Nested work items; working while above zero.
            var depth: Int
            /// The depth a wait set aside (`pause`), restored by `resume`.
            var paused: Int
            /// Held to `cpu` while it waits (`handOverLocked`), until it resumes.
            var isPinned = false
        }
        private var workers: [Worker] = []

        /// Places threads on the cores `allowed` marks (one byte per CPU, nonzero where allowed). Whether
        /// there are two or more.
        func enable(allowed mask: [UInt8]) -> Bool {
            guard mask.filter({ $0 != 0 }).count > 1 else { return false }
            lock.withLock {
                allowed = mask
                isEnabled = true
            }
            return true
        }

        func enter() {
            let thread = apkpatch_thread_id()
            let here = apkpatch_current_cpu()
            let move: Int32? = lock.withLock {
                let index = slot(for: thread)
                workers[index].depth += 1
                guard workers[index].depth == 1 else { return nil }
                workers[index].cpu = here
                return placeLocked(index)
            }
            if let move { place(thread, on: move) }
        }

        func leave() {
            let thread = apkpatch_thread_id()
            let here = apkpatch_current_cpu()
            let move: (Int32, Int32)? = lock.withLock {
                guard let index = workers.firstIndex(where: { $0.thread == thread }), workers[index].depth > 0 else { return nil }
                workers[index].depth -= 1
                guard workers[index].depth == 0 else { return nil }
                if let taken = takeOverLocked(freed: here) { return taken }
                // Held under the lock: the waiter's `resume`, which lets go of it, cannot come in between.
                if let waiter = handOverLocked(freed: here) { pin(waiter.0, to: waiter.1) }
                return nil
            }
            if let move { place(move.0, on: move.1) }
        }

        func checkpoint() {
            let thread = apkpatch_thread_id()
            let here = apkpatch_current_cpu()
            let move: Int32? = lock.withLock {
                guard let index = workers.firstIndex(where: { $0.thread == thread }), workers[index].depth > 0 else { return nil }
                workers[index].cpu = here
                return placeLocked(index)
            }
            if let move { place(thread, on: move) }
        }

        /// Whether the calling thread was working (and is now set aside until `resume`).
        func pause() -> Bool {
            let thread = apkpatch_thread_id()
            let here = apkpatch_current_cpu()
            let move: (Int32, Int32)?? = lock.withLock {
                guard let index = workers.firstIndex(where: { $0.thread == thread }), workers[index].depth > 0 else { return .none }
                workers[index].paused = workers[index].depth
                workers[index].depth = 0
                // Where it waits: the core a wake-up puts it back on (`handOverLocked`).
                if here >= 0 { workers[index].cpu = here }
                return .some(takeOverLocked(freed: workers[index].cpu))
            }
            guard case .some(let taken) = move else { return false }
            if let taken { place(taken.0, on: taken.1) }
            return true
        }

        func resume() {
            let thread = apkpatch_thread_id()
            let here = apkpatch_current_cpu()
            var wasPinned = false
            let move: Int32? = lock.withLock {
                guard let index = workers.firstIndex(where: { $0.thread == thread }) else { return nil }
                wasPinned = workers[index].isPinned
                workers[index].isPinned = false
                workers[index].depth = workers[index].paused
                workers[index].paused = 0
                guard workers[index].depth > 0 else { return nil }
                workers[index].cpu = here
                return placeLocked(index)
            }
            // A move widens the mask again; a thread held to its core gets it back here otherwise.
            if let move { place(thread, on: move) } else if wasPinned { place(thread, on: here) }
        }

        /// Whether an allowed core has none of the working threads.
        var hasFreeCore: Bool { lock.withLock { idleCoreLocked(loadLocked(), preferring: -1) != nil } }

        /// Yields the calling thread's core while a core is free (see `CoreBalance.letWokenWorkerStart`).
        func letWokenWorkerStart() {
            if hasFreeCore { sched_yield() }
        }

        private func slot(for thread: Int32) -> Int {
            if let index = workers.firstIndex(where: { $0.thread == thread }) { return index }
            // Threads the pool let go of (a watch session runs for hours) leave slots behind: idle ones go.
            if workers.count >= 64 { workers.removeAll { $0.depth == 0 && $0.paused == 0 } }
            workers.append(Worker(thread: thread, cpu: -1, depth: 0, paused: 0))
            return workers.count - 1
        }

        /// How many working threads each core has, leaving out `except`.
        private func loadLocked(except: Int? = nil) -> [Int32: Int] {
            var load: [Int32: Int] = [:]
            for (index, worker) in workers.enumerated() where worker.depth > 0 && index != except && worker.cpu >= 0 {
                load[worker.cpu, default: 0] += 1
            }
            return load
        }

        /// An allowed core none of the working threads is on, if any.
        private func idleCoreLocked(_ load: [Int32: Int], preferring preferred: Int32) -> Int32? {
            if preferred >= 0, Int(preferred) < allowed.count, allowed[Int(preferred)] != 0, load[preferred, default: 0] == 0 {
                return preferred
            }
            for cpu in allowed.indices where allowed[cpu] != 0 && load[Int32(cpu), default: 0] == 0 { return Int32(cpu) }
            return nil
        }

        /// Where worker `index`, now working on `workers[index].cpu`, should move: a free core when another
        /// working thread shares its own. Records the move.
        private func placeLocked(_ index: Int) -> Int32? {
            let here = workers[index].cpu
            guard here >= 0 else { return nil }
            let load = loadLocked(except: index)
            guard load[here, default: 0] > 0, let free = idleCoreLocked(load, preferring: -1) else { return nil }
            workers[index].cpu = free
            return free
        }

        /// A working thread to move onto `freed`, a core the caller just stopped working on, when two working
        /// threads share another core. Records the move.
        private func takeOverLocked(freed: Int32) -> (Int32, Int32)? {
            guard freed >= 0 else { return nil }
            let load = loadLocked()
            guard load[freed, default: 0] == 0,
                  let crowded = load.first(where: { $0.value > 1 })?.key,
                  let index = workers.lastIndex(where: { $0.depth > 0 && $0.cpu == crowded }) else { return nil }
            workers[index].cpu = freed
            return (workers[index].thread, freed)
        }

        /// A waiting thread to wake on `freed`, a core the caller just stopped working on, when another working
        /// thread is on the core the waiting one waits on (or is held to, since): the kernel would wake it there
        /// (the freed core does not look idle yet: its thread is still signalling), behind that thread, for the
        /// rest of its slice, while the freed core idles. Records the pin; `resume` undoes it.
        private func handOverLocked(freed: Int32) -> (Int32, Int32)? {
            guard freed >= 0 else { return nil }
            let load = loadLocked()
            guard load[freed, default: 0] == 0,
                  let index = workers.lastIndex(where: {
                      $0.depth == 0 && $0.paused > 0 && $0.cpu >= 0 && $0.cpu != freed && load[$0.cpu, default: 0] > 0
                  }) else { return nil }
            workers[index].cpu = freed
            workers[index].isPinned = true
            return (workers[index].thread, freed)
        }

        private func place(_ thread: Int32, on cpu: Int32) {
            _ = allowed.withUnsafeBufferPointer { apkpatch_place_thread(thread, cpu, $0.baseAddress, Int32($0.count)) }
        }

        /// Holds `thread` to `cpu` alone until it widens its mask again (`resume`).
        private func pin(_ thread: Int32, to cpu: Int32) {
            var only = [UInt8](repeating: 0, count: allowed.count)
            guard Int(cpu) < only.count else { return }
            only[Int(cpu)] = 1
            _ = only.withUnsafeBufferPointer { apkpatch_place_thread(thread, cpu, $0.baseAddress, Int32($0.count)) }
        }
    }
    #endif
}
