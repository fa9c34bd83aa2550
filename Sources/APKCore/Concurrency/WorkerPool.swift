#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Starts the global queue's worker threads before there is work for them.
///
/// libdispatch creates its threads the first time work is queued. Linux places a new thread on its
/// parent's CPU, and when the parent keeps running (parsing arguments, opening the APK) the new thread can
/// wait there for a whole scheduler slice before a load balance moves it to the idle core, while a thread that
/// already exists and is woken goes to the idle core almost at once. The commands that spread work over the
/// cores call `warmUp()` first thing: each thread is started while the main thread waits for it (a fraction
/// of a slice), so the work queued later starts at once.
public enum WorkerPool {
    /// Makes sure `count` (default: one per core, at most 4) worker threads of the default global queue exist.
    /// Each started thread holds until all have started (so they are distinct threads), at most 20 ms.
    /// Returns how many checked in in time: `count` when the pool is idle, as it is when a command starts.
    @discardableResult
    public static func warmUp(count: Int = min(4, ProcessorCount.active)) -> Int {
        guard count > 0 else { return 0 }
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            DispatchQueue.global().async {
                started.signal()
                _ = release.wait(timeout: .now() + .milliseconds(20))
            }
        }
        // One deadline for all: a pool busy with other work (a library caller's) costs at most 20 ms here.
        let deadline = DispatchTime.now() + .milliseconds(20)
        var checkedIn = 0
        for _ in 0..<count where started.wait(timeout: deadline) == .success { checkedIn += 1 }
        for _ in 0..<count { release.signal() }
        return checkedIn
    }
}

/// The number of online processors, without Foundation.
public enum ProcessorCount {
    public static var active: Int {
        #if canImport(Glibc)
        return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        #else
        return max(1, Int(sysconf(_SC_NPROCESSORS_ONLN)))
        #endif
    }
}
