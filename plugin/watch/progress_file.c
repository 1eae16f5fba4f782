// SPDX-License-Identifier: Apache-2.0
/* progress_file.c - writing, reading and parsing progress files
 * (progress_file.h). The suspect thread only. */
#include "progress_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of dir (0777 less the umask, as the trace directory). */
static void make_dir(const char *dir) {
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0777);
            *p = '/';
        }
    mkdir(tmp, 0777);
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int nsc_pf_write(const char *dir, const char *name, const char *text, size_t len) {
    char tmp[1400], path[1400];
    /* A leading dot: readers listing the directory skip temporaries. */
    if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp) ||
        snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char t2[sizeof(tmp)];
    memcpy(t2, tmp, sizeof(tmp));
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        make_dir(dir);
        memcpy(tmp, t2, sizeof(tmp));
        fd = mkostemp(tmp, O_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    /* 0644: a job's ranks may run as other users of one group reading it */
    int rc = fchmod(fd, 0644) == 0 && write_all(fd, text, len) == 0 ? 0 : -1;
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) { /* replaces a link, never follows it */
        rc = -1;
        err = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        errno = err;
    }
    return rc;
}

ssize_t nsc_pf_read(const char *dir, const char *name, char *buf, size_t cap) {
    char path[1400];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* O_NONBLOCK: a FIFO planted at the name must not hold the thread */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t n = -1;
    int err = 0;
    if (fstat(fd, &st) != 0)
        err = errno;
    else if (!S_ISREG(st.st_mode))
        err = EINVAL;
    else if ((uint64_t)st.st_size > cap - 1)
        err = EFBIG;
    else {
        size_t got = 0;
        for (;;) {
            ssize_t r = read(fd, buf + got, cap - 1 - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                err = errno;
                break;
            }
            if (r == 0)
                break;
            got += (size_t)r;
            if (got == cap - 1) { /* grew past the bound since fstat */
                char c;
                if (read(fd, &c, 1) > 0)
                    err = EFBIG;
                break;
            }
        }
        if (!err) {
            buf[got] = '\0';
            n = (ssize_t)got;
        }
    }
    close(fd);
    if (n < 0)
        errno = err ? err : EIO;
    return n;
}

int nsc_pf_is_name(const char *name) {
    size_t n = strlen(name), k = strlen(NSC_PF_SUFFIX);
    return name[0] != '.' && n > k && !strcmp(name + n - k, NSC_PF_SUFFIX);
}

long nsc_pf_list(const char *dir, char *buf, size_t cap, uint64_t *left) {
    DIR *d = opendir(dir);
    *left = 0;
    if (!d)
        return -1;
    size_t used = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!nsc_pf_is_name(de->d_name))
            continue;
        size_t n = strlen(de->d_name);
        if (used + n + 1 > cap) {
            (*left)++;
            continue;
        }
        memcpy(buf + used, de->d_name, n + 1);
        used += n + 1;
    }
    closedir(d);
    return (long)used;
}

/* The next line of *p (NUL-terminated in place), or NULL at the end. */
static char *next_line(char **p) {
    if (!**p)
        return NULL;
    char *l = *p, *e = strchr(l, '\n');
    if (!e)
        return NULL; /* a last line without its newline: cut short */
    *e = '\0';
    *p = e + 1;
    return l;
}

int nsc_pf_parse(char *text, struct nsc_pf_head *h,
                 void (*fn)(void *ud, const struct nsc_pf_entry *e), void *ud) {
    char *p = text, *l;
    int v = 0, n;
    memset(h, 0, sizeof(*h));
    l = next_line(&p);
    if (!l || sscanf(l, "ncclscope-progress %d%n", &v, &n) != 1 || l[n] || v != 1)
        return -1;
    l = next_line(&p);
    if (!l || sscanf(l, "gen %" SCNu64 "%n", &h->gen, &n) != 1 || l[n])
        return -1;
    l = next_line(&p);
    if (!l || sscanf(l, "ok %d%n", &h->ok, &n) != 1 || l[n] || (h->ok != 0 && h->ok != 1))
        return -1;
    struct nsc_pf_entry e;
    int in_comm = 0;
    memset(&e, 0, sizeof(e));
    while ((l = next_line(&p)) != NULL) {
        if (!strcmp(l, "end"))
            return 0;
        if (l[0] == 'c' && l[1] == ' ') {
            e.func[0] = '\0';
            e.seq = 0;
            if (sscanf(l, "c %" SCNx64 " %" SCNd32 " %" SCNd32 " %d%n", &e.comm_id, &e.rank,
                       &e.nranks, &e.complete, &n) != 4 || l[n] || e.rank < 0 ||
                e.nranks <= e.rank)
                return -1;
            in_comm = 1;
        } else if (l[0] == 'f' && l[1] == ' ' && in_comm) {
            if (sscanf(l, "f %31s %" SCNu64 "%n", e.func, &e.seq, &n) != 2 || l[n])
                return -1;
        } else {
            return -1;
        }
        fn(ud, &e);
    }
    return -1; /* no end line */
}
