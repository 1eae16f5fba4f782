// SPDX-License-Identifier: Apache-2.0
/*
 * ncclscope_writer.c - the writer process (writer_proto.h): every
 * file-system call on the trace directory, on the plugin's behalf, so that
 * a directory that stalls holds this process, never the application's.
 *
 * Started by the plugin (posix_spawn, never fork: the application is
 * multithreaded) with its channels on fds 3..7 and the plugin's pid as
 * argv[1]. Single-threaded: serves the channels in turn, writes the crash
 * area when it is READY, and leaves once every channel is closed or the
 * plugin's process is gone (PR_SET_PDEATHSIG, and its pid checked once a
 * tick: a forked child of the application keeps the sockets open), after
 * writing what the crash area holds. It ignores the terminal's and the
 * job's signals (SIGINT, SIGTERM, SIGHUP): it ends with the process it
 * serves, not before it, so a job that is told to stop loses nothing here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io_loops.h"
#include "writer_proto.h"

#define TICK_MS 50

static pid_t parent;
static unsigned char *buf;
static size_t buf_cap;
static unsigned char *out;     /* READ's and LIST's bytes (NSC_WRITER_MAX_REPLY) */
static size_t out_len;





/* Descriptors this process opened for the plugin: the only ones APPEND and
 * CLOSE act on (never a channel). */
#define MAX_FILES 64
static int files[MAX_FILES];
static unsigned nfiles;

static int owned(int fd) {
    for (unsigned i = 0; i < nfiles; i++)
        if (files[i] == fd)
            return (int)i;
    return -1;
}

/* REPLACE: a whole small file, atomically (writer_proto.h). */
static int replace(const char *path, const unsigned char *data, size_t n, unsigned mode) {
    const char *slash = strrchr(path, '/');
    char tmp[4200];
    int w = slash ? snprintf(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1)
                  : snprintf(tmp, sizeof(tmp), ".%s.XXXXXX", path);
    if (w < 0 || (size_t)w >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fchmod(fd, mode & 0777) == 0 && nsc_io_write_all(fd, data, n) == 0 ? 0 : -1;
    int e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        errno = e;
    }
    return rc;
}

/* READ: a small regular file, never through a link, never blocking on a FIFO. */
static int read_small(const char *path, size_t cap) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    int rc = -1, e = 0;
    out_len = 0;
    if (fstat(fd, &st) != 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL;
    else if ((uint64_t)st.st_size > cap)
        e = EFBIG;
    else {
        for (;;) {
            ssize_t k = read(fd, out + out_len, cap - out_len);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                e = errno;
                break;
            }
            if (k == 0)
                break;
            out_len += (size_t)k;
            if (out_len == cap) { /* grew past the bound since fstat */
                char c;
                if (read(fd, &c, 1) > 0)
                    e = EFBIG;
                break;
            }
        }
        if (!e)
            rc = (int)out_len;
    }
    close(fd);
    if (rc < 0) {
        out_len = 0;
        errno = e ? e : EIO;
    }
    return rc;
}

/* LIST: the names of dir ending with suffix, not hidden. */
static int list_names(const char *dir, const char *suffix, size_t cap, int64_t *left) {
    DIR *d = opendir(dir);
    out_len = 0;
    *left = 0;
    if (!d)
        return -1;
    size_t k = strlen(suffix);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.' || n <= k || strcmp(de->d_name + n - k, suffix))
            continue;
        if (out_len + n + 1 > cap) {
            (*left)++;
            continue;
        }
        memcpy(out + out_len, de->d_name, n + 1);
        out_len += n + 1;
    }
    closedir(d);
    return (int)out_len;
}

static void serve(const struct nsc_wreq *q, const unsigned char *data, struct nsc_wrep *r) {
    const char *path = (const char *)data;
    int rc = -1, k;
    struct stat st;
    errno = 0;
    switch (q->op) {
    case NSC_WOP_MKDIR:
        rc = nsc_io_mkdir_p(path);
        break;
    case NSC_WOP_CREATE:
        if (nfiles == MAX_FILES) {
            errno = EMFILE;
            break;
        }
        rc = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, q->mode & 0777);
        if (rc >= 0)
            files[nfiles++] = rc;
        break;
    case NSC_WOP_APPEND:
        if (owned(q->fd) < 0) {
            errno = EBADF;
            break;
        }
        rc = nsc_io_write_all(q->fd, data, q->len);
        if (rc != 0) { /* keep the file a sequence of whole blocks */
            int e = errno;
            if (ftruncate(q->fd, (off_t)q->off) == 0)
                lseek(q->fd, (off_t)q->off, SEEK_SET);
            errno = e ? e : EIO;
        }
        break;
    case NSC_WOP_PWRITE:
        if (owned(q->fd) < 0) {
            errno = EBADF;
            break;
        }
        rc = nsc_io_pwrite_all(q->fd, data, q->len, q->off);
        break;
    case NSC_WOP_CLOSE:
        if ((k = owned(q->fd)) < 0) {
            errno = EBADF;
            break;
        }
        files[k] = files[--nfiles];
        rc = close(q->fd);
        break;
    case NSC_WOP_UNLINK:
        rc = unlink(path);
        break;
    case NSC_WOP_MTIME:
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            r->sec = st.st_mtim.tv_sec;
            r->nsec = st.st_mtim.tv_nsec;
            rc = 0;
        } else if (errno == 0)
            errno = EINVAL;
        break;
    case NSC_WOP_TOUCH:
        k = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, q->mode & 0777);
        if (k < 0)
            break;
        if (fstat(k, &st) == 0 && S_ISREG(st.st_mode) && futimens(k, NULL) == 0 &&
            fstat(k, &st) == 0) {
            r->sec = st.st_mtim.tv_sec;
            r->nsec = st.st_mtim.tv_nsec;
            rc = 0;
        } else if (errno == 0)
            errno = EINVAL;
        close(k);
        break;
    case NSC_WOP_REPLACE:
        k = (int)strnlen(path, q->len);
        if ((uint32_t)k >= q->len) {
            errno = EINVAL;
            break;
        }
        rc = replace(path, data + k + 1, q->len - (uint32_t)k - 1, q->mode);
        break;
    case NSC_WOP_READ:
        rc = read_small(path, q->off < NSC_WRITER_MAX_REPLY ? (size_t)q->off : NSC_WRITER_MAX_REPLY);
        break;
    case NSC_WOP_LIST:
        k = (int)strnlen(path, q->len);
        if ((uint32_t)k >= q->len) {
            errno = EINVAL;
            break;
        }
        rc = list_names(path, path + k + 1,
                        q->off < NSC_WRITER_MAX_REPLY ? (size_t)q->off : NSC_WRITER_MAX_REPLY, &r->sec);
        break;
    default:
        errno = EINVAL;
    }
    r->rc = rc < 0 ? -1 : rc;
    r->err = rc < 0 ? (errno ? errno : EIO) : 0;
}

/* One request from a channel and its reply. Returns -1 when the channel is
 * closed (or speaks nonsense: then it is dropped). */
static int one_request(int fd) {
    struct nsc_wreq q;
    if (nsc_io_read_all(fd, &q, sizeof(q)) != 0 || q.len > NSC_WRITER_MAX_DATA)
        return -1;
    if ((size_t)q.len + 1 > buf_cap) {
        size_t cap = (size_t)q.len + 1;
        unsigned char *b = realloc(buf, cap);
        if (!b)
            return -1;
        buf = b;
        buf_cap = cap;
    }
    if (q.len && nsc_io_read_all(fd, buf, q.len) != 0)
        return -1;
    buf[q.len] = '\0';
    struct nsc_wrep r;
    memset(&r, 0, sizeof(r));
    out_len = 0;
    serve(&q, buf, &r);
    if (send(fd, &r, sizeof(r), MSG_NOSIGNAL) != (ssize_t)sizeof(r))
        return -1;
    /* READ's and LIST's bytes after the reply */
    size_t sent = 0;
    while (r.rc > 0 && (q.op == NSC_WOP_READ || q.op == NSC_WOP_LIST) && sent < out_len) {
        ssize_t k = send(fd, out + sent, out_len - sent, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        sent += (size_t)k;
    }
    return 0;
}

/* The bytes our own mapping of the area holds after its header: what
 * `cap` and `len` (written by a process that may be crashing from a memory
 * fault) can never take us past. */
static uint64_t area_room;

/* A crash or SIGTERM dump the plugin copied into the area: to its file. */
static void write_crash(struct nsc_crash_area *a) {
    uint64_t len = atomic_load_explicit(&a->len, memory_order_acquire);
    if (len > a->cap)
        len = a->cap;
    if (len > area_room)
        len = area_room;
    if (len) {
        a->dir[sizeof(a->dir) - 1] = '\0';
        a->path[sizeof(a->path) - 1] = '\0';
        nsc_io_mkdir_p(a->dir);
        int fd = open(a->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, a->mode & 0777);
        if (fd >= 0) {
            nsc_io_write_all(fd, a->data, len);
            close(fd);
        }
    }
    atomic_fetch_add_explicit(&a->dumps_written, 1, memory_order_relaxed);
    atomic_store_explicit(&a->len, 0, memory_order_relaxed);
    /* RELEASE: the area is free for the next dump only after it was read */
    atomic_store_explicit(&a->state, NSC_CRASH_IDLE, memory_order_release);
}

static void on_parent_death(int sig) { (void)sig; /* only wakes poll(2) */ }

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    parent = (pid_t)strtol(argv[1], NULL, 10);
    /* The job's signals are not ours: leave with the process we serve. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_parent_death;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    /* Sent when the thread that started us ends: that is not always the
     * process, so it only makes us look (getppid below). */
    prctl(PR_SET_PDEATHSIG, SIGUSR1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Whatever else the application had open stays its own (a pipe we
     * kept open would keep its reader waiting). */
    syscall(SYS_close_range, NSC_WFD_AUX + 1, ~0u, 0);
    out = malloc(NSC_WRITER_MAX_REPLY);
    if (!out)
        close(NSC_WFD_AUX); /* the suspect level's calls fail; the trace's do not */

    struct nsc_crash_area *area = NULL;
    struct stat st;
    if (fstat(NSC_WFD_CRASH, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t)sizeof(*area)) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, NSC_WFD_CRASH, 0);
        area_room = (uint64_t)st.st_size - offsetof(struct nsc_crash_area, data);
        if (m != MAP_FAILED)
            area = m;
        close(NSC_WFD_CRASH);
    }
    struct pollfd pf[4] = {{.fd = NSC_WFD_ENGINE, .events = POLLIN},
                           {.fd = NSC_WFD_WATCH, .events = POLLIN},
                           {.fd = NSC_WFD_WAKE, .events = POLLIN},
                           {.fd = NSC_WFD_AUX, .events = POLLIN}};
    for (int i = 0; i < 4; i++)
        if (fcntl(pf[i].fd, F_GETFD) < 0)
            pf[i].fd = -1;
    for (;;) {
        int gone = getppid() != parent;
        if (area && atomic_load_explicit(&area->state, memory_order_acquire) == NSC_CRASH_READY)
            write_crash(area);
        /* the suspect level's channel too: it removes its progress file last */
        if (gone || (pf[0].fd < 0 && pf[1].fd < 0 && pf[3].fd < 0))
            break;
        int n = poll(pf, 4, TICK_MS);
        if (n <= 0)
            continue;
        if (pf[2].fd >= 0 && pf[2].revents) { /* the doorbell: the area is looked at above */
            char b[64];
            if (recv(pf[2].fd, b, sizeof(b), MSG_DONTWAIT) == 0 || (pf[2].revents & (POLLHUP | POLLERR))) {
                close(pf[2].fd);
                pf[2].fd = -1;
            }
        }
        for (int i = 0; i < 4; i++)
            if (i != 2 && pf[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                one_request(pf[i].fd) != 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
            }
    }
    /* The plugin's process is gone (or its session is over): what the crash
     * area holds is all that is left of it. */
    if (area && atomic_load_explicit(&area->state, memory_order_acquire) != NSC_CRASH_IDLE)
        write_crash(area);
    for (unsigned i = 0; i < nfiles; i++)
        close(files[i]);
    return 0;
}
