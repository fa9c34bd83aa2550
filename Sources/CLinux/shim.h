// Linux system calls glibc's Swift module does not expose, reached only through APKCore.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

// glibc defines O_TMPFILE only with _GNU_SOURCE; its value is the same on x86-64 and arm64.
#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

// renameat2(RENAME_EXCHANGE): atomically swaps two paths. Returns 0, or -1 with errno set (ENOSYS/EINVAL when
// the kernel or file system cannot exchange).
static inline int apkpatch_rename_exchange(const char *from, const char *to) {
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE);
#else
    errno = ENOSYS;
    return -1;
#endif
}

// copy_file_range(2): copies between files inside the kernel. Returns bytes copied, 0 at end of input, or -1
// with errno set (ENOSYS/EXDEV/EINVAL when the kernel or file systems cannot: fall back to read/write).
static inline long long apkpatch_copy_file_range(int in, long long *in_offset, int out, long long *out_offset, unsigned long length) {
#ifdef SYS_copy_file_range
    return (long long)syscall(SYS_copy_file_range, in, in_offset, out, out_offset, length, 0u);
#else
    errno = ENOSYS;
    return -1;
#endif
}

// open(2) with O_TMPFILE: an unnamed regular file in `directory`, which the kernel removes when it is closed
// unless linkat(2) gave it a name first, so a process killed while writing leaves nothing behind. Returns the
// descriptor, or -1 with errno set (EOPNOTSUPP/EISDIR/EINVAL where the kernel or file system lacks O_TMPFILE).
static inline int apkpatch_open_tmpfile(const char *directory, unsigned int mode) {
#ifdef O_TMPFILE
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
#else
    errno = EOPNOTSUPP;
    return -1;
#endif
}

// linkat(2) of an O_TMPFILE descriptor to `path` through /proc/self/fd (AT_EMPTY_PATH would need
// CAP_DAC_READ_SEARCH). Returns 0, or -1 with errno set (EEXIST when `path` exists).
static inline int apkpatch_link_descriptor(int fd, const char *path) {
    char source[64];
    snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

// fallocate(2) with mode 0: allocates `length` bytes of blocks for `fd` (extending its size) in one call.
// Returns 0, or -1 with errno set (EOPNOTSUPP on file systems that cannot; ENOSPC when the disk is full).
static inline int apkpatch_fallocate(int fd, long long length) {
#ifdef SYS_fallocate
    return (int)syscall(SYS_fallocate, fd, 0, 0LL, length);
#else
    errno = ENOSYS;
    return -1;
#endif
}

// cachestat(2) (Linux 6.5): how many of the pages in `length` bytes at `offset` of `fd` are in the page cache, counted
// by the kernel in one call. Returns that count, or -1 with errno set (ENOSYS on older kernels). Its number is 451 on
// every architecture: system calls added since Linux 5.1 have one number everywhere.
static inline long long apkpatch_cached_pages(int fd, long long offset, long long length) {
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
    struct { unsigned long long offset, length; } range = { (unsigned long long)offset, (unsigned long long)length };
    struct { unsigned long long cached, dirty, writeback, evicted, recently_evicted; } counts;
    if (syscall(SYS_cachestat, fd, &range, &counts, 0u) != 0) return -1;
    return (long long)counts.cached;
}

// mallopt(M_ARENA_MAX, 1): every thread allocates from the main arena (glibc's malloc.h, which glibc's Swift
// module does not include). Returns 1 on success, 0 on failure.
#include <malloc.h>
static inline int apkpatch_use_one_malloc_arena(void) {
    return mallopt(M_ARENA_MAX, 1);
}

// mallopt(M_TOP_PAD, bytes): how much more than asked an arena's heap grows by. Returns 1 on success.
static inline int apkpatch_malloc_top_pad(int bytes) {
    return mallopt(M_TOP_PAD, bytes);
}

// A bus error while reading a mapped input means another program truncated the file under apkpatch: the
// handler (APKCore's BusErrorGuard) removes the temporary outputs registered in `slots` and exits 1 with a
// message, through async-signal-safe calls only (unlink, write, _exit). No static state here: a header's
// statics would be duplicated in each place the Swift compiler emits these functions.
#include <signal.h>
#include <string.h>

#define APKPATCH_OUTPUT_SLOTS 64

static inline void apkpatch_bus_error_exit(char **slots) {
    static const char message[] = "Error: an input file changed while apkpatch was reading it (another program truncated or "
                                  "rewrote it). Nothing was written; run again once the file is complete.\n";
    for (int i = 0; i < APKPATCH_OUTPUT_SLOTS; i++) {
        char *path = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);
        if (path) unlink(path);
    }
    ssize_t ignored = write(2, message, sizeof message - 1);
    (void)ignored;
    _exit(1);
}

static inline int apkpatch_install_bus_error_handler(void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGBUS, &action, NULL);
}

// Registers a temporary output path (a strdup'ed string the caller keeps alive); returns its slot, or -1
// when all slots are taken (the file is then not removed on a bus error).
static inline int apkpatch_register_output_path(char **slots, char *path) {
    for (int i = 0; i < APKPATCH_OUTPUT_SLOTS; i++) {
        char *expected = NULL;
        if (__atomic_compare_exchange_n(&slots[i], &expected, path, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return i;
    }
    return -1;
}

// Clears a slot; returns the path that was registered there (for the caller to free).
static inline char *apkpatch_unregister_output_path(char **slots, int slot) {
    if (slot < 0 || slot >= APKPATCH_OUTPUT_SLOTS) return NULL;
    return __atomic_exchange_n(&slots[slot], NULL, __ATOMIC_ACQ_REL);
}

// posix_spawn's flag that starts the child in a session of its own (setsid), so that a signal to the parent's
// process group (a Ctrl-C, a job control kill) does not reach it. glibc defines it only with _GNU_SOURCE; the
// value is glibc's (2.26 and later, every architecture).
#include <spawn.h>
#ifndef POSIX_SPAWN_SETSID
#define POSIX_SPAWN_SETSID 0x80
#endif
static inline short apkpatch_posix_spawn_setsid(void) { return POSIX_SPAWN_SETSID; }

// Thread placement (APKCore's CoreBalance), through the system calls themselves: sched.h's CPU_SET macros and
// sched_getcpu need _GNU_SOURCE, which Swift's import of glibc does not define. Masks cross as byte arrays, one byte
// per CPU, nonzero where the CPU is allowed; the kernel's masks are arrays of unsigned long, 1024 CPUs here.
#define APKPATCH_CPU_MASK_WORDS (1024 / (8 * sizeof(unsigned long)))

// The caller's CPU (getcpu), or -1.
static inline int apkpatch_current_cpu(void) {
    unsigned int cpu = 0;
    if (syscall(SYS_getcpu, &cpu, NULL, NULL) != 0) return -1;
    return (int)cpu;
}

// The caller's thread id (gettid).
static inline int apkpatch_thread_id(void) { return (int)syscall(SYS_gettid); }

// The CPUs the calling thread may run on: `allowed[i]` set to 1 or 0 for i < count (count at most 1024).
// Returns how many are allowed, or -1 with errno set.
static inline int apkpatch_allowed_cpus(unsigned char *allowed, int count) {
    unsigned long mask[APKPATCH_CPU_MASK_WORDS] = {0};
    if (syscall(SYS_sched_getaffinity, 0, sizeof mask, mask) < 0) return -1;
    int found = 0;
    const int bits = 8 * (int)sizeof(unsigned long);
    for (int i = 0; i < count && i < 1024; i++) {
        allowed[i] = (mask[i / bits] >> (i % bits)) & 1UL ? 1 : 0;
        found += allowed[i];
    }
    return found;
}

// Moves thread `tid` onto `cpu` now (the kernel migrates a running or waiting thread whose affinity no longer
// includes its CPU) and then gives it back every CPU in `allowed`: the thread is placed, not pinned, and the
// scheduler may move it again. Returns 0, or -1 with errno set (ESRCH once the thread has ended).
static inline int apkpatch_place_thread(int tid, int cpu, const unsigned char *allowed, int count) {
    unsigned long mask[APKPATCH_CPU_MASK_WORDS] = {0};
    const int bits = 8 * (int)sizeof(unsigned long);
    if (cpu < 0 || cpu >= 1024) { errno = EINVAL; return -1; }
    mask[cpu / bits] = 1UL << (cpu % bits);
    if (syscall(SYS_sched_setaffinity, tid, sizeof mask, mask) != 0) return -1;
    mask[cpu / bits] = 0;
    for (int i = 0; i < count && i < 1024; i++) if (allowed[i]) mask[i / bits] |= 1UL << (i % bits);
    return (int)syscall(SYS_sched_setaffinity, tid, sizeof mask, mask);
}
