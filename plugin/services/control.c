// SPDX-License-Identifier: Apache-2.0
/* control.c - start/stop, masks, marks; the exported control API and the
 * control files (see control.h and include/ncclscope.h). */
#include "control.h"
#include "hot_line.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chain.h"
#include "clock.h"
#include "event_types.h"
#include "intern.h"
#include "live_metrics.h"
#include "log.h"
#include "recorder.h"

#define NCCLSCOPE_NO_LOADER
#include "ncclscope.h"

#define EXPORT __attribute__((visibility("default")))

/* Everything below is under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int running = 1;          /* start()/stop(): process-wide, kept across sessions */
static int have_override;        /* set_mask() was called: it wins over NCCLSCOPE_EVENTS */
static uint32_t override_mask;
static uint32_t session_mask;    /* recorded while running, limited to the API version */
static int api_version = 7;
static int session_open;
static int *nccl_mask[NSC_MAX_COMMS]; /* where NCCL re-reads each live comm's mask */
static int written[NSC_MAX_COMMS];    /* what we last wrote there */
static _Atomic uint64_t marks;   /* marks written by this process */

/* Control files: commands appended after the session started are applied
 * once, in order (each process keeps its own read offset, so one shared
 * file reaches every process of the job). A file replaced (new inode) or
 * cut shorter is read again from its start. Ops thread only. */
struct cfile {
    char path[1200];
    dev_t dev;
    ino_t ino;
    off_t off;
};
static struct cfile files[2];

static void publish(void) {
    uint32_t m = running ? session_mask : 0;
    atomic_store_explicit(&nsc_ctl_record_mask, m, memory_order_relaxed);
    nsc_live_set_mask(m);
}

/* Writes every live comm's NCCL mask: what we record or'ed with what its
 * chained plugin asked for. Only a value that changed is stored, and the
 * word is neither read nor written otherwise: NCCL reads it all the time,
 * and it is NCCL's (a global there, valid for the life of the process; a
 * host that passes a temporary to init cannot use run-time control).
 * RELAXED: NCCL re-reads it without ordering, a new mask takes effect at its
 * next read. */
static void write_masks(void) {
    uint32_t ours = running ? session_mask : 0;
    for (unsigned i = 0; i < NSC_MAX_COMMS; i++) {
        if (!nccl_mask[i])
            continue;
        uint32_t chained = nsc_chain_active() ? nsc_chain_refresh_mask(i) : 0;
        int m = (int)nsc_mask_for_nccl(ours | chained, api_version);
        if (m != written[i]) {
            __atomic_store_n(nccl_mask[i], m, __ATOMIC_RELAXED);
            written[i] = m;
        }
    }
}

static void cfile_init(struct cfile *f, const char *dir, const char *name) {
    snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
    struct stat st;
    if (stat(f->path, &st) == 0) { /* what it holds now is history */
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->off = st.st_size;
    } else {
        f->dev = 0;
        f->ino = 0;
        f->off = 0;
    }
}

uint32_t nsc_ctl_session_open(uint32_t cfg_mask, int version, const char *dir, const char *stem) {
    char own[256];
    snprintf(own, sizeof(own), "%s.control", stem);
    pthread_mutex_lock(&lock);
    api_version = version;
    session_mask = nsc_mask_for_api(have_override ? override_mask : cfg_mask, version);
    session_open = 1;
    publish();
    cfile_init(&files[0], dir, "control");
    cfile_init(&files[1], dir, own);
    uint32_t m = session_mask;
    pthread_mutex_unlock(&lock);
    return m;
}

void nsc_ctl_session_close(void) {
    pthread_mutex_lock(&lock);
    session_open = 0;
    pthread_mutex_unlock(&lock);
}

void nsc_ctl_comm_open(const struct nsc_comm *c, int *mask) {
    pthread_mutex_lock(&lock);
    nccl_mask[c - nsc_comms] = mask;
    uint32_t chained = nsc_chain_active() ? nsc_chain_refresh_mask((unsigned)(c - nsc_comms)) : 0;
    *mask = written[c - nsc_comms] =
        (int)nsc_mask_for_nccl((running ? session_mask : 0) | chained, api_version);
    pthread_mutex_unlock(&lock);
}

void nsc_ctl_comm_close(const struct nsc_comm *c) {
    pthread_mutex_lock(&lock);
    nccl_mask[c - nsc_comms] = NULL;
    pthread_mutex_unlock(&lock);
}

/* ---- the exported API ---- */

EXPORT int ncclscope_control_start(void) {
    pthread_mutex_lock(&lock);
    running = 1;
    publish();
    write_masks();
    pthread_mutex_unlock(&lock);
    nsc_log_info("ncclscope: control: recording");
    return NCCLSCOPE_OK;
}

/* Benchmarks only: with `on` = 1, every startEvent returns a token and
 * does nothing else (what bench/empty_plugin.c does), stop and state of
 * that token return at once; with `on` = 2 each of those calls also takes
 * a timestamp and writes one 64-byte line into a private per-thread ring
 * nothing reads (what bench/floor_plugin.c does: the least that keeping an
 * event costs); with 3 events are recorded as usual but take no slab slot
 * (the watchdog's per-operation state: what that hook costs). Events
 * started before keep their full path. Lets one
 * process measure ncclscope against the empty plugin's and the floor's
 * behaviour in alternating blocks (bench/gpu/nccl_bench.c --ab), where
 * separate processes differ by more than the cost measured. Relaxed: a
 * start that reads the old value is served by the old behaviour. */
char nsc_passthrough_token;
EXPORT int ncclscope_bench_passthrough(int on) {
    if (on < 0 || on > 3)
        return NCCLSCOPE_INVALID;
    atomic_store_explicit(&nsc_hot.passthrough, on, memory_order_relaxed);
    return NCCLSCOPE_OK;
}

/* The floor arm's ring: 1024 lines per thread, allocated at the thread's
 * first floor call (benchmarks only; never freed, like the floor plugin's). */
#define FLOOR_LINES 1024
struct floor_line {
    uint64_t w[8];
};
static __thread struct floor_line *floor_ring __attribute__((tls_model("initial-exec")));
static __thread uint64_t floor_pos __attribute__((tls_model("initial-exec")));

void nsc_bench_floor(uint64_t kind, uint64_t what) {
    uint64_t ticks = nsc_clock_ticks();
    struct floor_line *ring = floor_ring;
    if (__builtin_expect(!ring, 0)) {
        ring = aligned_alloc(64, FLOOR_LINES * sizeof(*ring));
        if (!ring)
            return;
        floor_ring = ring;
    }
    struct floor_line *l = &ring[floor_pos++ & (FLOOR_LINES - 1)];
    l->w[0] = kind;
    l->w[1] = ticks;
    l->w[2] = what;
    for (int i = 3; i < 8; i++)
        l->w[i] = 0;
}

EXPORT int ncclscope_control_stop(void) {
    pthread_mutex_lock(&lock);
    running = 0;
    publish();
    write_masks();
    pthread_mutex_unlock(&lock);
    nsc_log_info("ncclscope: control: stopped (nothing recorded until start)");
    return NCCLSCOPE_OK;
}

EXPORT int ncclscope_control_set_mask(uint32_t mask) {
    if (mask & ~NSC_MASK_ALL)
        return NCCLSCOPE_INVALID;
    pthread_mutex_lock(&lock);
    have_override = 1;
    override_mask = mask;
    session_mask = nsc_mask_for_api(mask, api_version);
    publish();
    write_masks();
    pthread_mutex_unlock(&lock);
    char names[256];
    nsc_log_info("ncclscope: control: events %s", nsc_mask_format(mask, names, sizeof(names)));
    return NCCLSCOPE_OK;
}

EXPORT int ncclscope_control_set_events(const char *names) {
    uint32_t m;
    char why[256];
    if (!names || nsc_mask_parse(names, &m, why, sizeof(why)) != 0)
        return NCCLSCOPE_INVALID;
    return ncclscope_control_set_mask(m);
}

EXPORT uint32_t ncclscope_control_mask(void) { return nsc_ctl_recording(); }

/* A dump exists only in flight mode: a streaming process has nothing kept in memory to write. */
EXPORT int ncclscope_control_dump(void) {
    return nsc_session_request_dump() == 0 ? NCCLSCOPE_OK : NCCLSCOPE_NOT_FLIGHT_MODE;
}

EXPORT int ncclscope_control_mark(const char *text) {
    if (!text)
        return NCCLSCOPE_INVALID;
    pthread_mutex_lock(&lock);
    int open = session_open;
    pthread_mutex_unlock(&lock);
    if (!open)
        return NCCLSCOPE_NO_SESSION;
    uint64_t ticks = nsc_clock_ticks();
    /* By content, not through a thread's pointer-keyed cache: the caller's
     * buffer may hold another text next time. */
    struct nsc_intern_cache scratch;
    memset(&scratch, 0, sizeof(scratch));
    uint16_t id = nsc_intern_slow(&scratch, text);
    uint64_t n = atomic_fetch_add_explicit(&marks, 1, memory_order_relaxed) + 1;
    nsc_record_one(nsc_thread_get(), NSC_REC_MARK, (uint64_t)NSC_MARK_ETYPE << NSC_HANDLE_ETYPE_SHIFT,
                   id, n, ticks);
    return NCCLSCOPE_OK;
}

EXPORT const char *ncclscope_control_strerror(int status) {
    switch (status) {
    case NCCLSCOPE_OK:
        return "ok";
    case NCCLSCOPE_INVALID:
        return "invalid argument";
    case NCCLSCOPE_NOT_FLIGHT_MODE:
        return "not in flight mode (nothing is kept in memory to dump)";
    case NCCLSCOPE_NO_SESSION:
        return "no communicator is being profiled";
    default:
        return "unknown status";
    }
}

/* ---- control files ---- */

static void run_command(char *line, const char *from) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
        line[--n] = '\0';
    while (*line == ' ' || *line == '\t')
        line++;
    if (!*line || *line == '#')
        return;
    char *arg = line + strcspn(line, " \t");
    if (*arg) {
        *arg++ = '\0';
        arg += strspn(arg, " \t");
    }
    int rc;
    if (!strcmp(line, "start"))
        rc = ncclscope_control_start();
    else if (!strcmp(line, "stop"))
        rc = ncclscope_control_stop();
    else if (!strcmp(line, "dump"))
        rc = ncclscope_control_dump();
    else if (!strcmp(line, "mark"))
        rc = ncclscope_control_mark(arg);
    else if (!strcmp(line, "mask") || !strcmp(line, "events"))
        rc = ncclscope_control_set_events(arg);
    else {
        nsc_log_warn("ncclscope: %s: unknown command \"%.64s\" (start, stop, dump, mark TEXT, mask EVENTS)",
                     from, line);
        return;
    }
    if (rc != NCCLSCOPE_OK)
        nsc_log_warn("ncclscope: %s: %s: %s", from, line, ncclscope_control_strerror(rc));
}

static void poll_file(struct cfile *f) {
    struct stat st;
    if (stat(f->path, &st) != 0) {
        f->dev = 0;
        f->ino = 0;
        f->off = 0; /* a file that appears later is read from its start */
        return;
    }
    if (st.st_dev != f->dev || st.st_ino != f->ino || st.st_size < f->off) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->off = 0;
    }
    if (st.st_size == f->off)
        return;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    char buf[8192];
    ssize_t got = pread(fd, buf, sizeof(buf) - 1, f->off);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = '\0';
    /* Complete lines only: a command being appended waits for its newline.
     * A line longer than the buffer is skipped. */
    char *end = memrchr(buf, '\n', (size_t)got);
    if (!end) {
        if (got == (ssize_t)sizeof(buf) - 1)
            f->off += got;
        return;
    }
    f->off += end + 1 - buf;
    *end = '\0';
    for (char *line = buf, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        run_command(line, f->path);
    }
}

void nsc_ctl_poll(void) {
    for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (files[i].path[0])
            poll_file(&files[i]);
    pthread_mutex_lock(&lock);
    if (nsc_chain_active()) /* a chained plugin may have changed its mask */
        write_masks();
    pthread_mutex_unlock(&lock);
}
