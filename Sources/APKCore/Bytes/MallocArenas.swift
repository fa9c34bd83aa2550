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

    /// Makes each malloc arena start with `bytes` of heap it may use, and the main arena grow by that much more
    /// than it needs. A worker thread's arena otherwise starts small and grows a page or two at a time, each
    /// step an `mprotect` that takes the address space's lock against the other threads' page faults: hundreds
    /// of them in one signing of an APK with thousands of entries. Untouched pages cost nothing; what is freed
    /// stays for reuse rather than being given back, so this suits a command that runs once, not a watch session.
    ///
    /// Call it before any thread but the main one allocates (a new arena takes the value when it is made).
    /// It also fixes glibc's mmap threshold at its default (128 KiB), which is otherwise raised as large blocks are
    /// freed. Elsewhere than glibc it does nothing.
    public static func growInSteps(of bytes: Int) {
        #if canImport(CLinux)
        _ = apkpatch_malloc_top_pad(Int32(clamping: bytes))
        #endif
    }
}
