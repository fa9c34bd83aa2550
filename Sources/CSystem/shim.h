// Linux system calls glibc's Swift module does not expose, reached only through APKCore.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

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
