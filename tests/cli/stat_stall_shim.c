// SPDX-License-Identifier: Apache-2.0
/*
 * stat_stall_shim.c - LD_PRELOAD'ed into a job: stat, lstat and unlink of a path
 * under $NSC_STALL_DIR sleep $NSC_STALL_MS first, as on a network file
 * system that stalls. No root needed; only the calls the trace directory's
 * triggers make are slowed.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int stat(const char *restrict path, struct stat *restrict st);
int lstat(const char *restrict path, struct stat *restrict st);
int unlink(const char *path);

static void maybe_stall(const char *path) {
    const char *dir = getenv("NSC_STALL_DIR"), *ms = getenv("NSC_STALL_MS");
    if (!dir || !ms || !path || strncmp(path, dir, strlen(dir)) != 0)
        return;
    long n = atol(ms);
    struct timespec t = {n / 1000, (n % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int stat(const char *restrict path, struct stat *restrict st) {
    maybe_stall(path);
    int (*real)(const char *, struct stat *) = (int (*)(const char *, struct stat *))dlsym(RTLD_NEXT, "stat");
    return real(path, st);
}

int lstat(const char *restrict path, struct stat *restrict st) {
    maybe_stall(path);
    int (*real)(const char *, struct stat *) = (int (*)(const char *, struct stat *))dlsym(RTLD_NEXT, "lstat");
    return real(path, st);
}

int unlink(const char *path) {
    maybe_stall(path);
    int (*real)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    return real(path);
}
