/* flusher.c - draining rings, building chunks, writing blocks. */
#include "flusher.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "comm_table.h"
#include "intern.h"
#include "log.h"
#include "thread_state.h"
#include "trace_writer.h"

static struct {
    struct nsc_config cfg;
    struct nsc_writer w;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int running;
    /* chunk under construction: segments of (header, records) */
    unsigned char *chunk;
    size_t chunk_len, chunk_cap;
    uint32_t strings_written;                       /* intern ids already in the file */
    uint32_t announced[NSC_MAX_THREADS_HARD];       /* incarnation announced per thread */
    uint64_t last_flush_ns;
    struct nsc_comm_info comm_buf[256];
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic uint64_t invalid_context, invalid_handle;

void nsc_flusher_count_invalid_context(void) {
    atomic_fetch_add_explicit(&invalid_context, 1, memory_order_relaxed);
}
void nsc_flusher_count_invalid_handle(void) {
    atomic_fetch_add_explicit(&invalid_handle, 1, memory_order_relaxed);
}

const char *nsc_flusher_path(void) { return F.running ? F.w.path : ""; }

static void write_strings(void) {
    uint32_t n = nsc_intern_count();
    if (F.strings_written >= n)
        return;
    /* Entries below n are immutable (intern.h): no lock needed. */
    unsigned char buf[65536];
    size_t len = 0;
    while (F.strings_written < n) {
        uint32_t id = F.strings_written;
        const char *s = nsc_intern_text(id);
        uint16_t sl = s ? (uint16_t)strlen(s) : 0;
        if (len + 6 + sl > sizeof(buf)) {
            nsc_writer_block(&F.w, NSC_BLK_STRINGS, buf, len, 1);
            len = 0;
        }
        if (id >= 1) {
            memcpy(buf + len, &id, 4);
            memcpy(buf + len + 4, &sl, 2);
            memcpy(buf + len + 6, s, sl);
            len += 6 + (size_t)sl;
        }
        F.strings_written++;
    }
    if (len)
        nsc_writer_block(&F.w, NSC_BLK_STRINGS, buf, len, 1);
}

static void write_comms(void) {
    unsigned n;
    while ((n = nsc_comm_take_pending(F.comm_buf, 256)) > 0)
        nsc_writer_block(&F.w, NSC_BLK_COMMS, F.comm_buf, n * sizeof(F.comm_buf[0]), 1);
}

static void write_anchor(void) {
    struct nsc_anchor a;
    nsc_clock_anchor(&a);
    nsc_writer_block(&F.w, NSC_BLK_ANCHOR, &a, sizeof(a), 0);
}

static void emit_chunk(void) {
    if (F.chunk_len == 0)
        return;
    /* Order matters for readers: everything a record refers to (strings,
     * comms) precedes it, and the anchor taken now bounds the chunk's
     * timestamps from above. */
    write_strings();
    write_comms();
    write_anchor();
    nsc_writer_block(&F.w, NSC_BLK_CHUNK, F.chunk, F.chunk_len, 1);
    F.chunk_len = 0;
}

static void write_stats(void) {
    uint32_t n = nsc_thread_count();
    size_t len = sizeof(struct nsc_stats_header) + (size_t)(n + 1) * sizeof(struct nsc_thread_stats);
    unsigned char *buf = calloc(1, len);
    if (!buf)
        return;
    struct nsc_stats_header *sh = (struct nsc_stats_header *)buf;
    struct nsc_thread_stats *ts = (struct nsc_thread_stats *)(sh + 1);
    struct nsc_thread *sent = nsc_thread_sentinel();
    sh->nthreads = n;
    sh->drops_no_thread = atomic_load_explicit(&sent->drops_ring, memory_order_relaxed);
    sh->invalid_context = atomic_load_explicit(&invalid_context, memory_order_relaxed);
    sh->invalid_handle = atomic_load_explicit(&invalid_handle, memory_order_relaxed);
    sh->string_overflow = nsc_intern_overflows();
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        ts[i].thread = i;
        ts[i].tid = t->tid;
        ts[i].records = atomic_load_explicit(&t->ring.head, memory_order_relaxed);
        ts[i].drops_ring = atomic_load_explicit(&t->drops_ring, memory_order_relaxed);
        ts[i].drops_events = atomic_load_explicit(&t->drops_events, memory_order_relaxed);
    }
    nsc_writer_block(&F.w, NSC_BLK_STATS, buf,
                     sizeof(*sh) + (size_t)n * sizeof(struct nsc_thread_stats), 1);
    free(buf);
}

static size_t chunk_space_records(void) {
    size_t free_bytes = F.chunk_cap - F.chunk_len;
    return free_bytes > sizeof(struct nsc_segment) ? (free_bytes - sizeof(struct nsc_segment)) / NSC_REC_SIZE : 0;
}

static void drain_thread(uint32_t i, struct nsc_thread *t) {
    uint64_t pos;
    uint64_t n = ring_readable(&t->ring, &pos);
    /* Loaded after head (ACQUIRE above): an owner change that precedes the
     * records we are about to copy is visible here. */
    uint32_t inc = atomic_load_explicit(&t->incarnation, memory_order_acquire);
    int announce = inc != F.announced[i];
    while (n > 0 || announce) {
        size_t space = chunk_space_records();
        if (space < 2) {
            emit_chunk();
            continue;
        }
        struct nsc_segment seg = {.thread = i, .nrecords = 0};
        size_t seg_off = F.chunk_len;
        F.chunk_len += sizeof(seg);
        struct nsc_rec *dst = (struct nsc_rec *)(F.chunk + F.chunk_len);
        if (announce) {
            struct nsc_rec r;
            memset(&r, 0, sizeof(r));
            r.h.kind = NSC_REC_THREAD;
            r.h.aux = t->tid;
            r.h.ticks = nsc_clock_ticks();
            memcpy(r.u.thread_name, t->name, sizeof(t->name));
            memcpy(dst, &r, sizeof(r));
            dst++;
            seg.nrecords++;
            space--;
            F.announced[i] = inc;
            announce = 0;
        }
        uint64_t take = n < space ? n : space;
        if (take) {
            ring_copy_out(&t->ring, pos, take, dst);
            ring_consume(&t->ring, pos, take);
            pos += take;
            n -= take;
            seg.nrecords += (uint32_t)take;
        }
        memcpy(F.chunk + seg_off, &seg, sizeof(seg));
        F.chunk_len += (size_t)seg.nrecords * NSC_REC_SIZE;
    }
}

static void drain_all(void) {
    uint32_t n = nsc_thread_count();
    for (uint32_t i = 0; i < n; i++)
        drain_thread(i, nsc_thread_at(i));
}

static void deadline_after(struct timespec *ts, uint64_t us) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + us * 1000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *flusher_main(void *arg) {
    (void)arg;
    F.last_flush_ns = nsc_clock_monotonic_ns();
    pthread_mutex_lock(&F.mu);
    while (!F.stop) {
        struct timespec dl;
        deadline_after(&dl, F.cfg.drain_us);
        while (!F.stop) {
            int rc = pthread_cond_timedwait(&F.cv, &F.mu, &dl);
            if (rc == ETIMEDOUT)
                break;
        }
        if (F.stop)
            break;
        pthread_mutex_unlock(&F.mu);
        drain_all();
        uint64_t now = nsc_clock_monotonic_ns();
        if (now - F.last_flush_ns >= (uint64_t)F.cfg.flush_ms * 1000000ull) {
            emit_chunk();
            write_stats();
            F.last_flush_ns = now;
        }
        pthread_mutex_lock(&F.mu);
    }
    pthread_mutex_unlock(&F.mu);
    drain_all();
    emit_chunk();
    write_strings();
    write_comms();
    write_anchor();
    write_stats();
    nsc_writer_block(&F.w, NSC_BLK_END, "", 0, 0);
    return NULL;
}

int nsc_flusher_start(const struct nsc_config *cfg, const struct nsc_session *session, char *err,
                      unsigned errlen) {
    F.cfg = *cfg;
    F.chunk_cap = (size_t)cfg->chunk_records * NSC_REC_SIZE + 64 * sizeof(struct nsc_segment);
    F.chunk = malloc(F.chunk_cap);
    if (!F.chunk) {
        snprintf(err, errlen, "out of memory for the flusher's chunk buffer");
        return -1;
    }
    F.chunk_len = 0;
    F.strings_written = 0;
    memset(F.announced, 0, sizeof(F.announced));
    if (nsc_writer_open(&F.w, cfg->dir, session->host, (int)session->pid, cfg->zstd_level,
                        F.chunk_cap, err, errlen) != 0) {
        free(F.chunk);
        F.chunk = NULL;
        return -1;
    }
    nsc_writer_block(&F.w, NSC_BLK_SESSION, session, sizeof(*session), 0);

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&F.cv, &ca);
    pthread_condattr_destroy(&ca);
    F.stop = 0;

    /* The flusher must not run the application's signal handlers. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&F.thread, NULL, flusher_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the flusher thread: %s", strerror(rc));
        nsc_writer_close(&F.w);
        free(F.chunk);
        F.chunk = NULL;
        pthread_cond_destroy(&F.cv);
        return -1;
    }
    pthread_setname_np(F.thread, "ncclscope-flush");
    F.running = 1;
    return 0;
}

void nsc_flusher_stop(void) {
    if (!F.running)
        return;
    pthread_mutex_lock(&F.mu);
    F.stop = 1;
    pthread_cond_signal(&F.cv);
    pthread_mutex_unlock(&F.mu);
    pthread_join(F.thread, NULL);
    if (F.w.failed)
        nsc_log_warn("writing %s failed; the trace is incomplete", F.w.path);
    nsc_log_info("ncclscope: wrote %llu bytes to %s", (unsigned long long)F.w.bytes, F.w.path);
    nsc_writer_close(&F.w);
    pthread_cond_destroy(&F.cv);
    free(F.chunk);
    F.chunk = NULL;
    F.running = 0;
}
