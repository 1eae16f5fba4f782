// SPDX-License-Identifier: Apache-2.0
/* writer_proc.c - the writer process's start and end, and the file
 * operations through it or, without one, in this process (writer_proc.h). */
#include "writer_proc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_loops.h"
#include "log.h"

extern char **environ;


static _Atomic int fallback_logged, gone_logged, fallback_seen;

int nsc_wproc_fallback_seen(void) { return atomic_load_explicit(&fallback_seen, memory_order_relaxed); }

/* ---- in this process (no writer) ---- */


static int local_append(int fd, uint64_t off, const void *p, size_t n) {
    if (nsc_io_write_all(fd, p, n) == 0)
        return 0;
    int e = errno;
    /* keep the file a sequence of whole blocks */
    if (ftruncate(fd, (off_t)off) == 0)
        lseek(fd, (off_t)off, SEEK_SET);
    errno = e;
    return -1;
}

/* ---- through the writer ---- */

static int send_all(int sock, struct iovec *iov, int n) {
    while (n) {
        struct msghdr m;
        memset(&m, 0, sizeof(m));
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        ssize_t k = sendmsg(sock, &m, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        while (n && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

static int recv_all(int sock, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t k = recv(sock, c, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One request, one answer. The wait is on a socket: interruptible. */
static int call(struct nsc_wchan *c, uint32_t op, int fd, uint64_t off, unsigned mode, const void *data,
                size_t len, struct nsc_wrep *r) {
    if (len > NSC_WRITER_MAX_DATA) {
        errno = EMSGSIZE;
        return -1;
    }
    struct nsc_wreq q = {.op = op, .fd = fd, .off = off, .len = (uint32_t)len, .mode = mode};
    struct iovec iov[2] = {{&q, sizeof(q)}, {(void *)data, len}};
    memset(r, 0, sizeof(*r));
    if (send_all(c->sock, iov, len ? 2 : 1) != 0 || recv_all(c->sock, r, sizeof(*r)) != 0) {
        if (!atomic_load_explicit(&c->closed, memory_order_relaxed) &&
            !atomic_exchange(&gone_logged, 1))
            nsc_log_warn("ncclscope: the writer process (%s) is gone: what is not written from "
                         "now on is counted as lost", NSC_WRITER_EXE);
        errno = EPIPE;
        return -1;
    }
    if (r->rc < 0) {
        errno = r->err ? r->err : EIO;
        return -1;
    }
    return r->rc;
}

static int path_call(struct nsc_wchan *c, uint32_t op, const char *path, unsigned mode,
                     struct nsc_wrep *r) {
    return call(c, op, -1, 0, mode, path, strlen(path) + 1, r);
}

/* A call whose answer brings bytes (READ, LIST): at most cap, into out. */
static long call_out(struct nsc_wchan *c, uint32_t op, const void *data, size_t len, void *out,
                     size_t cap, struct nsc_wrep *r) {
    if (cap > NSC_WRITER_MAX_REPLY)
        cap = NSC_WRITER_MAX_REPLY;
    int rc = call(c, op, -1, cap, 0, data, len, r);
    if (rc <= 0)
        return rc;
    if ((size_t)rc > cap || recv_all(c->sock, out, (size_t)rc) != 0) {
        errno = EPIPE; /* out of step with the writer: the channel is no longer usable */
        return -1;
    }
    return rc;
}

int nsc_wch_replace(struct nsc_wchan *c, const char *path, const void *data, size_t n,
                    unsigned mode) {
    size_t k = strlen(path) + 1;
    char *msg = malloc(k + n);
    if (!msg)
        return -1;
    memcpy(msg, path, k);
    memcpy(msg + k, data, n);
    struct nsc_wrep r;
    int rc = call(c, NSC_WOP_REPLACE, -1, 0, mode, msg, k + n, &r);
    free(msg);
    return rc < 0 ? -1 : 0;
}

long nsc_wch_read(struct nsc_wchan *c, const char *path, void *buf, size_t cap) {
    struct nsc_wrep r;
    return call_out(c, NSC_WOP_READ, path, strlen(path) + 1, buf, cap, &r);
}

long nsc_wch_list(struct nsc_wchan *c, const char *dir, const char *suffix, char *buf, size_t cap,
                  uint64_t *left) {
    size_t a = strlen(dir) + 1, b = strlen(suffix) + 1;
    char msg[2400];
    if (a + b > sizeof(msg)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(msg, dir, a);
    memcpy(msg + a, suffix, b);
    struct nsc_wrep r;
    long n = call_out(c, NSC_WOP_LIST, msg, a + b, buf, cap, &r);
    *left = n >= 0 && r.sec > 0 ? (uint64_t)r.sec : 0;
    return n;
}

int nsc_wch_mkdir(struct nsc_wchan *c, const char *dir) {
    struct nsc_wrep r;
    return c->sock < 0 ? nsc_io_mkdir_p(dir) : path_call(c, NSC_WOP_MKDIR, dir, 0, &r) < 0 ? -1 : 0;
}

int nsc_wch_create(struct nsc_wchan *c, const char *path, unsigned mode) {
    struct nsc_wrep r;
    if (c->sock < 0)
        return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    return path_call(c, NSC_WOP_CREATE, path, mode, &r);
}

int nsc_wch_append(struct nsc_wchan *c, int fd, uint64_t off, const void *data, size_t n) {
    struct nsc_wrep r;
    if (c->sock < 0)
        return local_append(fd, off, data, n);
    return call(c, NSC_WOP_APPEND, fd, off, 0, data, n, &r) < 0 ? -1 : 0;
}


int nsc_wch_pwrite(struct nsc_wchan *c, int fd, uint64_t off, const void *data, size_t n) {
    struct nsc_wrep r;
    if (c->sock < 0)
        return nsc_io_pwrite_all(fd, data, n, off);
    return call(c, NSC_WOP_PWRITE, fd, off, 0, data, n, &r) < 0 ? -1 : 0;
}

int nsc_wch_close(struct nsc_wchan *c, int fd) {
    struct nsc_wrep r;
    if (c->sock < 0)
        return close(fd);
    return call(c, NSC_WOP_CLOSE, fd, 0, 0, NULL, 0, &r) < 0 ? -1 : 0;
}

int nsc_wch_unlink(struct nsc_wchan *c, const char *path) {
    struct nsc_wrep r;
    return c->sock < 0 ? unlink(path) : path_call(c, NSC_WOP_UNLINK, path, 0, &r) < 0 ? -1 : 0;
}

int nsc_wch_mtime(struct nsc_wchan *c, const char *path, struct timespec *mtime) {
    if (c->sock < 0) {
        struct stat st;
        if (lstat(path, &st) != 0)
            return -1;
        if (!S_ISREG(st.st_mode)) {
            errno = EINVAL;
            return -1;
        }
        *mtime = st.st_mtim;
        return 0;
    }
    struct nsc_wrep r;
    if (path_call(c, NSC_WOP_MTIME, path, 0, &r) < 0)
        return -1;
    mtime->tv_sec = (time_t)r.sec;
    mtime->tv_nsec = (long)r.nsec;
    return 0;
}

int nsc_wch_touch(struct nsc_wchan *c, const char *path, unsigned mode, struct timespec *mtime) {
    if (c->sock < 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
        if (fd < 0)
            return -1;
        struct stat st;
        int rc = -1;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && futimens(fd, NULL) == 0 && fstat(fd, &st) == 0) {
            *mtime = st.st_mtim;
            rc = 0;
        } else
            errno = EINVAL;
        close(fd);
        return rc;
    }
    struct nsc_wrep r;
    if (path_call(c, NSC_WOP_TOUCH, path, mode, &r) < 0)
        return -1;
    mtime->tv_sec = (time_t)r.sec;
    mtime->tv_nsec = (long)r.nsec;
    return 0;
}

/* ---- start and end ---- */

/* A descriptor at 16 or above, so that the child's dup2 to 3..5 never
 * overwrites one of the others before it is moved. */
static int high_fd(int fd) {
    if (fd < 0 || fd >= 16)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 16);
    close(fd);
    return h;
}

/* The executable next to the plugin's shared object (where meson installs
 * both): beside the file itself, or else beside the name it was loaded by
 * (a link to the plugin elsewhere, with the writer next to the link). */
static int beside(const char *file, char *out, size_t n) {
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (!slash)
        return -1;
    int len = snprintf(out, n, "%.*s/%s", (int)(slash - file), file, NSC_WRITER_EXE);
    return len > 0 && (size_t)len < n && access(out, X_OK) == 0 ? 0 : -1;
}

static int writer_path(char *out, size_t n) {
    Dl_info info;
    if (!dladdr((void *)&nsc_wproc_start, &info) || !info.dli_fname)
        return -1;
    char *real = realpath(info.dli_fname, NULL);
    int rc = beside(real, out, n) == 0 || beside(info.dli_fname, out, n) == 0 ? 0 : -1;
    free(real);
    return rc;
}

static void fail(struct nsc_wproc *p, char *why, size_t whylen, const char *what, int e) {
    snprintf(why, whylen, "%s: %s", what, strerror(e));
    if (p->area)
        munmap(p->area, p->area_bytes);
    memset(p, 0, sizeof(*p));
    p->engine.sock = -1;
    p->watch_sock = -1;
    p->wake_sock = -1;
    p->aux_sock = -1;
    atomic_store_explicit(&fallback_seen, 1, memory_order_relaxed);
    if (!atomic_exchange(&fallback_logged, 1))
        nsc_log_warn("ncclscope: cannot start the writer process (%s); the trace is written by this "
                     "process's threads, so a stalled trace directory can hold the process's exit",
                     why);
}

int nsc_wproc_start(struct nsc_wproc *p, uint64_t crash_cap, char *why, size_t whylen) {
    nsc_wproc_reap_left();
    memset(p, 0, sizeof(*p));
    p->engine.sock = -1;
    p->watch_sock = -1;
    p->wake_sock = -1;
    p->aux_sock = -1;
    char exe[1280];
    if (writer_path(exe, sizeof(exe)) != 0) {
        fail(p, why, whylen, "not next to the plugin", ENOENT);
        return -1;
    }
    int es[2] = {-1, -1}, ws[2] = {-1, -1}, bs[2] = {-1, -1}, as[2] = {-1, -1}, mfd = -1;
    int rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, es) == 0 &&
                     socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ws) == 0 &&
                     socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, as) == 0 ? 0 : errno;
    if (rc == 0 && crash_cap) {
        p->area_bytes = sizeof(struct nsc_crash_area) + crash_cap;
        mfd = memfd_create("ncclscope-crash", MFD_CLOEXEC);
        /* sparse: its pages exist only once a dump is copied in */
        if (mfd < 0 || ftruncate(mfd, (off_t)p->area_bytes) != 0)
            rc = errno;
        void *m = rc ? MAP_FAILED : mmap(NULL, p->area_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        if (!rc && m == MAP_FAILED)
            rc = errno;
        if (!rc) {
            p->area = m;
            p->area->cap = crash_cap;
        }
        if (!rc && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, bs) != 0)
            rc = errno;
    }
    for (int i = 0; i < 2; i++) {
        es[i] = high_fd(es[i]);
        ws[i] = high_fd(ws[i]);
        bs[i] = high_fd(bs[i]);
        as[i] = high_fd(as[i]);
    }
    mfd = high_fd(mfd);
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    char *argv[] = {(char *)NSC_WRITER_EXE, pid, NULL};
    pid_t child = 0;
    if (rc == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        posix_spawn_file_actions_adddup2(&fa, es[1], NSC_WFD_ENGINE);
        posix_spawn_file_actions_adddup2(&fa, ws[1], NSC_WFD_WATCH);
        posix_spawn_file_actions_adddup2(&fa, as[1], NSC_WFD_AUX);
        if (mfd >= 0) {
            posix_spawn_file_actions_adddup2(&fa, mfd, NSC_WFD_CRASH);
            posix_spawn_file_actions_adddup2(&fa, bs[1], NSC_WFD_WAKE);
        }
        /* Not the application's stdin, stdout, stderr: a pipe we held open
         * would keep whoever reads the job's output waiting for a writer
         * stuck in a stalled directory. */
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &all);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        rc = posix_spawn(&child, exe, &fa, &at, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
    }
    if (es[1] >= 0)
        close(es[1]);
    if (ws[1] >= 0)
        close(ws[1]);
    if (bs[1] >= 0)
        close(bs[1]);
    if (as[1] >= 0)
        close(as[1]);
    if (mfd >= 0)
        close(mfd); /* the mapping stays */
    if (rc != 0) {
        if (es[0] >= 0)
            close(es[0]);
        if (ws[0] >= 0)
            close(ws[0]);
        if (bs[0] >= 0)
            close(bs[0]);
        if (as[0] >= 0)
            close(as[0]);
        fail(p, why, whylen, exe, rc);
        return -1;
    }
    p->pid = child;
    p->engine.sock = es[0];
    p->watch_sock = ws[0];
    p->wake_sock = bs[0];
    p->aux_sock = as[0];
    return 0;
}

/* Writers that had not left when their session ended (a channel still
 * open: the suspect thread's until it stops, a watcher left behind; a
 * stalled directory): reaped when they have, at the next session's end or
 * start, so that a process running many sessions keeps no zombie of ours.
 * Under the session mutex, as nsc_wproc_start and nsc_wproc_stop. */
#define UNREAPED_MAX 64
static pid_t unreaped[UNREAPED_MAX];
static int nunreaped;

void nsc_wproc_reap_left(void) {
    int n = 0;
    for (int i = 0; i < nunreaped; i++) {
        pid_t w = waitpid(unreaped[i], NULL, WNOHANG);
        if (w == 0 || (w < 0 && errno == EINTR))
            unreaped[n++] = unreaped[i]; /* still running: kept */
    }
    nunreaped = n;
}

static void left_to_reap(pid_t pid) {
    nsc_wproc_reap_left();
    if (nunreaped < UNREAPED_MAX)
        unreaped[nunreaped++] = pid; /* else reaped by init after we exit */
}

void nsc_wproc_abandon(struct nsc_wproc *p) {
    if (p->engine.sock < 0)
        return;
    atomic_store_explicit(&p->engine.closed, 1, memory_order_relaxed);
    /* Wakes the thread waiting for an answer (it sees EPIPE and leaves);
     * the writer sees the end once its call returns. The descriptor stays
     * open: that thread may still use it. */
    shutdown(p->engine.sock, SHUT_RDWR);
    if (p->pid)
        left_to_reap(p->pid); /* it leaves once its call returns and the channels close */
}

void nsc_wproc_stop(struct nsc_wproc *p) {
    if (!p->pid)
        return;
    if (p->engine.sock >= 0)
        close(p->engine.sock);
    if (p->watch_sock >= 0)
        close(p->watch_sock);
    if (p->wake_sock >= 0)
        close(p->wake_sock);
    if (p->aux_sock >= 0) /* not taken (no suspect level): the writer waits for it too */
        close(p->aux_sock);
    p->engine.sock = p->watch_sock = p->wake_sock = p->aux_sock = -1;
    /* The writer leaves once every channel is closed: reap it if it does so
     * at once (a watcher left behind keeps its channel; a stalled directory
     * keeps the writer: then it is reaped by whoever reaps our children, or
     * by init after we exit). */
    int reaped = 0;
    for (int i = 0; i < 50 && !reaped; i++) {
        pid_t w = waitpid(p->pid, NULL, WNOHANG);
        reaped = w == p->pid || (w < 0 && errno != EINTR);
        if (!reaped) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    if (!reaped)
        left_to_reap(p->pid);
    if (p->area)
        munmap(p->area, p->area_bytes);
    p->area = NULL;
    p->pid = 0;
}
