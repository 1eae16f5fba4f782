// SPDX-License-Identifier: Apache-2.0
/*
 * io_loops.h - the loops around write(2), pwrite(2), read(2) and mkdir(2)
 * that the plugin's in-process fallback, its crash handler and the writer
 * process (plugin/writer/) all need: retried on EINTR, continued after a
 * short transfer, a transfer of 0 bytes taken as EIO. Static inline, no
 * state, system calls only: async-signal-safe, so the crash handler uses
 * them too. Each returns 0, or -1 with errno.
 */
#ifndef NSC_IO_LOOPS_H
#define NSC_IO_LOOPS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* The directories trace files go in (0750 before the umask). */
#define NSC_IO_DIR_MODE 0750

static inline int nsc_io_write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static inline int nsc_io_pwrite_all(int fd, const void *p, size_t n, uint64_t off) {
    const char *c = p;
    while (n) {
        ssize_t k = pwrite(fd, c, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        c += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

static inline int nsc_io_read_all(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* mkdir -p: every missing directory of `dir` (NSC_IO_DIR_MODE). */
static inline int nsc_io_mkdir_p(const char *dir) {
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, NSC_IO_DIR_MODE) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return (mkdir(tmp, NSC_IO_DIR_MODE) != 0 && errno != EEXIST) ? -1 : 0;
}

#endif /* NSC_IO_LOOPS_H */
