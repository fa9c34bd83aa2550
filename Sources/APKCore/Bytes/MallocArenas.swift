#if canImport(CLinux)
import CLinux
#endif

/// How a long-running process (watch mode) keeps what it has resident close to what it uses at once.
public enum MallocArenas {
    /// Makes every thread allocate from one malloc arena. glibc otherwise gives each thread that allocates an
    /// arena of its own (up to eight per core), and memory freed in one arena serves only the threads of that
    /// arena: a watch session, whose builds allocate on the main thread and on whichever workers run their
    /// parts, keeps every arena's high-water mark resident at once instead of the largest moment of the whole
    /// process. One arena returns nothing to the system, so a rebuild faults in no fresh pages; threads share
    /// its lock only when their own cache of small blocks (glibc's tcache) cannot serve them.
    ///
    /// Call it before any thread but the main one allocates: a thread keeps the arena it first allocated from.
    /// Elsewhere than glibc it does nothing.
    public static func useOneForAllThreads() {
        #if canImport(CLinux)
        _ = apkpatch_use_one_malloc_arena()
        #endif
    }
}
