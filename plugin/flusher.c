/* flusher.c - draining rings, building chunks, writing blocks. */
#include "flusher.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm_table.h"
#include "intern.h"
#include "log.h"
#include "record_pack.h"
#include "thread_state.h"
#include "trace_writer.h"

/* Records per segment: bounds the staging buffer and how long one ring
 * waits while another is drained. */
#define SEG_RECORDS 512u

static struct {
    struct nsc_config cfg;
    struct nsc_writer w;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int running;
    /* the PACKED chunk being streamed into the writer's compressor */
    int chunk_open;
    size_t chunk_raw, chunk_max;
    unsigned char *stage; /* one segment: header + packed records */
    struct nsc_pack_state pack;
    int pressure;       /* the last pass found a ring over a quarter full */
    uint32_t strings_written;                       /* intern ids already in the file */
    uint32_t announced[NSC_MAX_THREADS_HARD];       /* incarnation announced per thread */
    uint64_t last_flush_ns;
    struct nsc_comm_info comm_buf[256];
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define STAGE_BYTES (sizeof(struct nsc_packed_segment) + (size_t)(SEG_RECORDS + 1) * NSC_PACK_MAX)

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
    if (!F.chunk_open)
        return;
    /* Order matters for readers: everything a record refers to (strings,
     * comms) precedes it, and the anchor taken now bounds the chunk's
     * timestamps from above. The strings and comms were registered before
     * the records naming them were committed, so writing them now covers
     * every record in the chunk. */
    write_strings();
    write_comms();
    write_anchor();
    nsc_writer_stream_end(&F.w);
    F.chunk_open = 0;
    F.chunk_raw = 0;
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
    sh->header_size = sizeof(*sh);
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

/* Packs up to SEG_RECORDS records of ring t (after its THREAD record when
 * the owner changed) into one segment and feeds it to the compressor.
 * Returns the number of ring records taken. */
static uint64_t drain_segment(uint32_t i, struct nsc_thread *t, uint64_t pos, uint64_t n,
                              int announce) {
    const size_t min_room = sizeof(struct nsc_packed_segment) + 2 * NSC_PACK_MAX;
    if (F.chunk_open && F.chunk_max - F.chunk_raw < min_room)
        emit_chunk();
    if (!F.chunk_open) {
        /* Compression adapts to pressure: a chunk begun while some ring is
         * over a quarter full uses zstd's fastest level (about 1.8x faster
         * on packed records, about 2x larger), so the flusher catches up
         * instead of letting rings overflow; otherwise the configured level. */
        nsc_writer_stream_begin(&F.w, NSC_BLK_PACKED, F.pressure ? -10 : F.cfg.zstd_level);
        F.chunk_open = 1;
    }
    /* As many records as surely fit in what is left of the chunk. */
    uint64_t fit = (F.chunk_max - F.chunk_raw - sizeof(struct nsc_packed_segment)) / NSC_PACK_MAX -
                   (announce ? 1 : 0);
    struct nsc_packed_segment seg = {.thread = i, .nrecords = 0, .nbytes = 0};
    unsigned char *p = F.stage + sizeof(seg);
    struct nsc_pack_state *ps = &F.pack;
    nsc_pack_reset(ps);
    if (announce) {
        struct nsc_rec r;
        memset(&r, 0, sizeof(r));
        r.h.kind = NSC_REC_THREAD;
        r.h.aux = t->tid;
        r.h.ticks = nsc_clock_ticks();
        memcpy(r.u.thread_name, t->name, sizeof(t->name));
        p = nsc_pack_record(ps, &r, p);
        seg.nrecords++;
    }
    uint64_t take = n < SEG_RECORDS ? n : SEG_RECORDS;
    if (take > fit)
        take = fit;
    for (uint64_t k = 0; k < take; k++) {
        /* The lines were written by another core: ask for them ahead of use. */
        __builtin_prefetch(ring_slot(&t->ring, pos + k + 8), 0, 0);
        p = nsc_pack_record(ps, ring_slot(&t->ring, pos + k), p);
    }
    /* The slots were only read above; from here the producer may reuse them
     * (ring_consume's RELEASE orders our reads before its store). */
    if (take)
        ring_consume(&t->ring, pos, take);
    seg.nrecords += (uint32_t)take;
    seg.nbytes = (uint32_t)(p - F.stage - sizeof(seg));
    memcpy(F.stage, &seg, sizeof(seg));
    size_t len = (size_t)(p - F.stage);
    nsc_writer_stream_feed(&F.w, F.stage, len);
    F.chunk_raw += len;
    return take;
}

static uint64_t drain_thread(uint32_t i, struct nsc_thread *t) {
    uint64_t pos;
    uint64_t n = ring_readable(&t->ring, &pos);
    /* Loaded after head (ACQUIRE above): an owner change that precedes the
     * records we are about to copy is visible here. */
    uint32_t inc = atomic_load_explicit(&t->incarnation, memory_order_acquire);
    int announce = inc != F.announced[i];
    uint64_t total = 0;
    while (n > 0 || announce) {
        uint64_t took = drain_segment(i, t, pos, n, announce);
        if (announce) {
            F.announced[i] = inc;
            announce = 0;
        }
        pos += took;
        n -= took;
        total += took;
    }
    return total;
}

/* Drains every ring; returns the largest number of records found in one
 * (how close the fullest ring came to dropping). */
static uint64_t drain_all(void) {
    uint32_t n = nsc_thread_count();
    uint64_t fullest = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = drain_thread(i, nsc_thread_at(i));
        if (k > fullest)
            fullest = k;
    }
    return fullest;
}

/* How long to sleep before the next pass. The flusher tracks the fastest
 * recent fill rate of any ring (records per microsecond, a maximum that
 * decays by 5 % per pass, because applications write in bursts and a pass
 * that found little says nothing about the next burst) and wakes before
 * that rate could fill an eighth of a ring: a burst or a late wake-up,
 * which virtual machines make common, then has seven eighths of headroom.
 * Idle rings cost one wake-up per drain_us; a ring filling fast is drained
 * back to back. */
static uint64_t next_sleep_us(uint64_t fullest, uint64_t cycle_ns, double *peak_rate) {
    double rate = cycle_ns ? (double)fullest * 1000.0 / (double)cycle_ns : 0.0;
    *peak_rate = rate > *peak_rate * 0.95 ? rate : *peak_rate * 0.95;
    double budget = (double)(F.cfg.ring_records / 8);
    if (*peak_rate <= 0.0 || budget / *peak_rate >= (double)F.cfg.drain_us)
        return F.cfg.drain_us;
    uint64_t us = (uint64_t)(budget / *peak_rate);
    return us < 20 ? 0 : us;
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
    uint64_t sleep_us = F.cfg.drain_us, last_pass_ns = nsc_clock_monotonic_ns();
    double peak_rate = 0.0;
    pthread_mutex_lock(&F.mu);
    while (!F.stop) {
        if (sleep_us) {
            struct timespec dl;
            deadline_after(&dl, sleep_us);
            while (!F.stop) {
                int rc = pthread_cond_timedwait(&F.cv, &F.mu, &dl);
                if (rc == ETIMEDOUT)
                    break;
            }
        }
        if (F.stop)
            break;
        pthread_mutex_unlock(&F.mu);
        uint64_t now_ns = nsc_clock_monotonic_ns();
        uint64_t fullest = drain_all();
        F.pressure = fullest * 4 > F.cfg.ring_records;
        sleep_us = next_sleep_us(fullest, now_ns - last_pass_ns, &peak_rate);
        last_pass_ns = now_ns;
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
    /* NCCLSCOPE_CHUNK_KB bounds a chunk's packed (uncompressed) size. */
    F.chunk_max = (size_t)cfg->chunk_records * NSC_REC_SIZE;
    F.stage = malloc(STAGE_BYTES);
    if (!F.stage) {
        snprintf(err, errlen, "out of memory for the flusher's staging buffer");
        return -1;
    }
    F.chunk_open = 0;
    F.chunk_raw = 0;
    F.strings_written = 0;
    memset(F.announced, 0, sizeof(F.announced));
    if (nsc_writer_open(&F.w, cfg->dir, session->host, (int)session->pid, cfg->zstd_level,
                        F.chunk_max, err, errlen) != 0) {
        free(F.stage);
        F.stage = NULL;
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
        free(F.stage);
        F.stage = NULL;
        pthread_cond_destroy(&F.cv);
        return -1;
    }
    pthread_setname_np(F.thread, "ncclscope-flush");
    /* A new thread inherits the affinity of the thread that called init,
     * which NCCL and training frameworks often pin to one core: the flusher
     * would then steal that core from the application and fall behind.
     * It takes the process's main-thread mask instead (the CPUs the job was
     * given), so the scheduler can put it anywhere the job may run. */
    cpu_set_t cpus;
    if (sched_getaffinity(getpid(), sizeof(cpus), &cpus) == 0)
        pthread_setaffinity_np(F.thread, sizeof(cpus), &cpus);
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
    free(F.stage);
    F.stage = NULL;
    F.running = 0;
}
