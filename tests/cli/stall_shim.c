// SPDX-License-Identifier: Apache-2.0
/*
 * stall_shim.c - an LD_PRELOAD library that makes one directory look like a
 * frozen file system (a hung NFS mount, a full FUSE daemon): open, mkostemp
 * and rename of a path under $STALL_DIR block until the file $STALL_RELEASE
 * exists (at most 60 s), then go on. Everything else passes through.
 * test_live_metrics.py points NCCLSCOPE_METRICS_DIR there and checks that
 * the control files still act.
 */
/* open and open64 both defined here: no redirection of one to the other */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void stall_if_under(const char *path) {
    const char *dir = getenv("STALL_DIR"), *release = getenv("STALL_RELEASE");
    if (!dir || !*dir || !path || strncmp(path, dir, strlen(dir)) != 0)
        return;
    struct timespec ts = {0, 50000000};
    struct stat st;
    for (int i = 0; i < 1200 && !(release && stat(release, &st) == 0); i++)
        nanosleep(&ts, NULL);
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

typedef int (*open_fn)(const char *, int, ...);
typedef int (*mkostemp_fn)(char *, int);
typedef int (*rename_fn)(const char *, const char *);

static int open_as(const char *name, const char *path, int flags, mode_t mode) {
    stall_if_under(path);
    return REAL(name, open_fn)(path, flags, mode);
}

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return open_as("open", path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return open_as("open64", path, flags, mode);
}

int mkostemp(char *tmpl, int flags) {
    stall_if_under(tmpl);
    return REAL("mkostemp", mkostemp_fn)(tmpl, flags);
}

int mkostemp64(char *tmpl, int flags) {
    stall_if_under(tmpl);
    return REAL("mkostemp64", mkostemp_fn)(tmpl, flags);
}

int rename(const char *from, const char *to) {
    stall_if_under(to);
    return REAL("rename", rename_fn)(from, to);
}
