// SPDX-License-Identifier: Apache-2.0
/* out_file.c - outputs through a temporary file, renamed when complete. */
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t n, const char *path, int e) {
    snprintf(err, n, "%s: %s", path, strerror(e));
    return -1;
}

int nsc_out_open(struct nsc_out *o, const char *path, const char *const *inputs, int ninputs,
                 char *err, size_t errlen) {
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists) {
        for (int i = 0; i < ninputs; i++) {
            struct stat in;
            if (stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino) {
                snprintf(err, errlen,
                         "%s: refusing to write the output over an input (%s is the same file); "
                         "choose another output name", path, inputs[i]);
                return -1;
            }
        }
        if (S_ISDIR(st.st_mode))
            return fail(err, errlen, path, EISDIR);
        /* A device or a FIFO cannot be replaced, nor can /dev/stdout or
         * /proc/self/fd/N name a file that is to stay the one the shell
         * opened: written in place. */
        if (!S_ISREG(st.st_mode) || !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6)) {
            o->fd = open(path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
            if (o->fd < 0)
                return fail(err, errlen, path, errno);
            o->path = strdup(path);
            if (!o->path) {
                close(o->fd);
                return fail(err, errlen, path, ENOMEM);
            }
            return 0;
        }
    }
    /* Through a symlink, the file it names is what gets replaced. */
    struct stat lst;
    char *dest = NULL;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        dest = realpath(path, NULL);
    if (!dest)
        dest = strdup(path);
    if (!dest)
        return fail(err, errlen, path, ENOMEM);
    const char *slash = strrchr(dest, '/');
    size_t dirlen = slash ? (size_t)(slash - dest) + 1 : 0;
    const char *base = slash ? slash + 1 : dest;
    size_t n = dirlen + strlen(base) + 16;
    o->tmp = malloc(n);
    if (!o->tmp) {
        free(dest);
        return fail(err, errlen, path, ENOMEM);
    }
    /* Hidden and without the .nsc suffix: a directory input never lists it. */
    snprintf(o->tmp, n, "%.*s.%s.XXXXXX", (int)dirlen, dest, base);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        int e = errno;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%.*s", dirlen ? (int)dirlen : 1, dirlen ? dest : ".");
        free(o->tmp);
        free(dest);
        o->tmp = NULL;
        snprintf(err, errlen, "%s: cannot create a temporary file in %s: %s", path, dir, strerror(e));
        return -1;
    }
    /* The mode a plain open would give: the replaced file's, or 0666 less
     * the umask for a new one (mkstemp makes 0600). */
    mode_t mode;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    (void)!fchmod(o->fd, mode); /* not fatal: the output is still written */
    o->path = dest;
    return 0;
}

int nsc_out_finish(struct nsc_out *o, int ok, char *err, size_t errlen) {
    int rc = 0;
    if (o->tmp) {
        if (ok && rename(o->tmp, o->path) != 0) {
            int e = errno;
            snprintf(err, errlen, "%s: cannot rename %s over it: %s", o->path, o->tmp, strerror(e));
            rc = -1;
            ok = 0;
        }
        if (!ok)
            unlink(o->tmp);
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    o->fd = -1;
    return rc;
}
