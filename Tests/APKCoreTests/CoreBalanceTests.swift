#if os(Linux)
import CLinux
import Dispatch
import Glibc
import Testing
@testable import APKCore

/// CoreBalance's placement, on a balancer of the test's own (the process-wide one would count other tests' threads).
/// Each thread is first confined to one core, as the scheduler leaves threads stacked, then works through the
/// balancer; the checks read where the kernel runs it afterwards. Needs two allowed cores.
@Suite struct CoreBalanceTests {
    static let allowed: [UInt8] = {
        var mask = [UInt8](repeating: 0, count: 1024)
        _ = mask.withUnsafeMutableBufferPointer { apkpatch_allowed_cpus($0.baseAddress, Int32($0.count)) }
        return mask
    }()
    static var cores: [Int32] { allowed.indices.filter { allowed[$0] != 0 }.map(Int32.init) }

    /// A thread that confines itself to `start`, runs `work`, then spins (runnable, as a working thread
    /// is) until `stop`, reporting the core it runs on and how many cores its mask allows; `stop` runs `finish`
    /// on the thread and widens its mask again.
    final class Spinner: @unchecked Sendable {
        private let lock = Lock()
        private var cpu: Int32 = -1
        private var stopped = false
        private var mask: Int32 = 0
        private var finish: @Sendable () -> Void = {}
        private let done = DispatchSemaphore(value: 0)

        init(on start: Int32, _ work: @escaping @Sendable () -> Void) {
            let ready = DispatchSemaphore(value: 0)
            // A thread of its own: it spins, and the pool's threads are few.
            Self.startThread { [self] in
                var only = [UInt8](repeating: 0, count: 1024)
                only[Int(start)] = 1
                _ = only.withUnsafeBufferPointer { apkpatch_place_thread(apkpatch_thread_id(), start, $0.baseAddress, 1024) }
                work()
                var signalled = false
                while true {
                    var now = [UInt8](repeating: 0, count: 1024)
                    let count = now.withUnsafeMutableBufferPointer { apkpatch_allowed_cpus($0.baseAddress, 1024) }
                    let here = apkpatch_current_cpu()
                    let stop = lock.withLock { cpu = here; mask = count; return stopped }
                    if !signalled && here >= 0 {
                        signalled = true
                        ready.signal()
                    }
                    if stop { break }
                }
                lock.withLock { finish }()
                _ = CoreBalanceTests.allowed.withUnsafeBufferPointer {
                    apkpatch_place_thread(apkpatch_thread_id(), apkpatch_current_cpu(), $0.baseAddress, 1024)
                }
                done.signal()
            }
            ready.wait()
        }

        private final class Body {
            let run: () -> Void
            init(_ run: @escaping () -> Void) { self.run = run }
        }

        static func startThread(_ body: @escaping () -> Void) {
            var thread = pthread_t()
            let context = Unmanaged.passRetained(Body(body)).toOpaque()
            let created = pthread_create(&thread, nil, { context in
                let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
                body.run()
                return nil
            }, context)
            precondition(created == 0, "pthread_create failed: \(created)")
            pthread_detach(thread)
        }

        var current: (cpu: Int32, allowedCount: Int32) { lock.withLock { (cpu, mask) } }

        /// Waits up to a second for the thread to report running on `target` with `allowedCount` cores in its
        /// mask (it reads the two one after the other, so a report can fall between a move's two steps).
        func settles(on target: Int32, allowedCount: Int32) -> Bool {
            for _ in 0..<1000 {
                if current == (target, allowedCount) { return true }
                usleep(1000)
            }
            return false
        }

        func stop(then last: @escaping @Sendable () -> Void = {}) {
            lock.withLock {
                finish = last
                stopped = true
            }
            done.wait()
        }
    }

    @Test(.enabled(if: cores.count >= 2)) func aThreadStartingWorkBesideAnotherMovesToAFreeCore() {
        let balancer = CoreBalance.Balancer()
        #expect(balancer.enable(allowed: Self.allowed))
        let first = Self.cores[0]
        let a = Spinner(on: first) { balancer.enter() }
        let b = Spinner(on: first) { balancer.enter() }
        defer {
            a.stop { balancer.leave() }
            b.stop { balancer.leave() }
        }
        #expect(a.current.cpu == first)
        // b was confined to a's core; starting to work moved it off, and its mask is whole again (placed, not
        // pinned).
        #expect(b.current.cpu != first)
        #expect(b.settles(on: b.current.cpu, allowedCount: Int32(Self.cores.count)), "b: \(b.current)")
    }

    @Test(.enabled(if: cores.count == 2)) func aCoreLeftByOneWorkerTakesOneOfTwoSharingTheOther() {
        let balancer = CoreBalance.Balancer()
        #expect(balancer.enable(allowed: Self.allowed))
        let (first, second) = (Self.cores[0], Self.cores[1])
        let a = Spinner(on: first) { balancer.enter() }
        let b = Spinner(on: second) { balancer.enter() }
        // Both cores are taken: c stays where it started, sharing b's core.
        let c = Spinner(on: second) { balancer.enter() }
        defer {
            b.stop { balancer.leave() }
            c.stop { balancer.leave() }
        }
        #expect(c.current.cpu == second)
        #expect(c.current.allowedCount == 1)
        // a waits (and then ends its work): its core takes c, the last to come to b's.
        a.stop {
            _ = balancer.pause()
            balancer.resume()
            balancer.leave()
        }
        #expect(c.settles(on: first, allowedCount: 2), "c: \(c.current)")
    }

    @Test(.enabled(if: cores.count == 2)) func aThreadTheSchedulerMovedIsPlacedAtItsCheckpoint() {
        let balancer = CoreBalance.Balancer()
        #expect(balancer.enable(allowed: Self.allowed))
        let (first, second) = (Self.cores[0], Self.cores[1])
        let a = Spinner(on: first) { balancer.enter() }
        // b starts working on the other core, then is moved onto a's behind the balancer's back (as the scheduler
        // moves threads when more work than there are cores), and says where it is.
        let b = Spinner(on: second) {
            balancer.enter()
            var only = [UInt8](repeating: 0, count: 1024)
            only[Int(first)] = 1
            _ = only.withUnsafeBufferPointer { apkpatch_place_thread(apkpatch_thread_id(), first, $0.baseAddress, 1024) }
            balancer.checkpoint()
        }
        defer {
            a.stop { balancer.leave() }
            b.stop { balancer.leave() }
        }
        #expect(a.current.cpu == first)
        #expect(b.settles(on: second, allowedCount: 2), "b: \(b.current)")
    }

    @Test(.enabled(if: cores.count >= 2)) func aWorkerWokenOntoABusyCoreStartsWhileAnotherCoreIsFree() {
        let balancer = CoreBalance.Balancer()
        #expect(balancer.enable(allowed: Self.allowed))
        let first = Self.cores[0]
        let started = Flag()
        let seenAfterYield = Flag()
        let a = Spinner(on: first) {
            balancer.enter()
            // A thread queued on this core (it inherits the confinement), as a worker woken by this one is.
            Spinner.startThread { started.set() }
            balancer.letWokenWorkerStart()
            if started.isSet { seenAfterYield.set() }
        }
        a.stop { balancer.leave() }
        // Without the yield it would have waited for the spinning thread's slice to end.
        #expect(seenAfterYield.isSet)
    }

    @Test(.enabled(if: cores.count == 2)) func aWaitingThreadWakesOnTheCoreTheWorkerItWaitedForLeaves() {
        let balancer = CoreBalance.Balancer()
        #expect(balancer.enable(allowed: Self.allowed))
        let (first, second) = (Self.cores[0], Self.cores[1])
        // The waiter works, then waits, on the first core (confined there, as the scheduler leaves a thread where it
        // last ran); a works there meanwhile, the worker on the second core.
        let paused = DispatchSemaphore(value: 0), wake = DispatchSemaphore(value: 0), woke = DispatchSemaphore(value: 0)
        let wokeOn = Flag.Value(), allowedAfter = Flag.Value()
        Spinner.startThread {
            var only = [UInt8](repeating: 0, count: 1024)
            only[Int(first)] = 1
            _ = only.withUnsafeBufferPointer { apkpatch_place_thread(apkpatch_thread_id(), first, $0.baseAddress, 1024) }
            balancer.enter()
            _ = balancer.pause()
            paused.signal()
            wake.wait()
            wokeOn.set(apkpatch_current_cpu())
            balancer.resume()
            var now = [UInt8](repeating: 0, count: 1024)
            allowedAfter.set(now.withUnsafeMutableBufferPointer { apkpatch_allowed_cpus($0.baseAddress, 1024) })
            balancer.leave()
            woke.signal()
        }
        paused.wait()
        let a = Spinner(on: first) { balancer.enter() }
        defer { a.stop { balancer.leave() } }
        let worker = Spinner(on: second) { balancer.enter() }
        // The worker ends and wakes the waiter, which runs on the core the worker left, not behind a, and gets its
        // whole mask back once it resumes.
        worker.stop {
            balancer.leave()
            wake.signal()
        }
        woke.wait()
        #expect(wokeOn.value == second)
        #expect(allowedAfter.value == Int32(Self.cores.count))
    }

    @Test(.enabled(if: cores.count == 2)) func aFreeCoreIsOneWithoutWorkingThreads() {
        let balancer = CoreBalance.Balancer()
        #expect(balancer.enable(allowed: Self.allowed))
        let (first, second) = (Self.cores[0], Self.cores[1])
        #expect(balancer.hasFreeCore)
        let a = Spinner(on: first) { balancer.enter() }
        #expect(balancer.hasFreeCore)
        let b = Spinner(on: second) { balancer.enter() }
        #expect(!balancer.hasFreeCore)
        b.stop { balancer.leave() }
        #expect(balancer.hasFreeCore)
        a.stop { balancer.leave() }
    }

    final class Flag: @unchecked Sendable {
        private let lock = Lock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }

        final class Value: @unchecked Sendable {
            private let lock = Lock()
            private var stored: Int32 = -1
            func set(_ value: Int32) { lock.withLock { stored = value } }
            var value: Int32 { lock.withLock { stored } }
        }
    }

    @Test func oneCoreIsNotBalanced() {
        var one = [UInt8](repeating: 0, count: 1024)
        one[0] = 1
        #expect(!CoreBalance.Balancer().enable(allowed: one))
    }
}
#endif
