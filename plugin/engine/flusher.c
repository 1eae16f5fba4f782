// SPDX-License-Identifier: Apache-2.0
/* flusher.c - drainer, compressors and I/O thread (see flusher.h). */
#include "flusher.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "bg_thread.h"
#include "block_payload.h"
#include "clock.h"
#include "comm_table.h"
#include "flight.h"
#include "counters.h"
#include "intern.h"
#include "live_metrics.h"
#include "log.h"
#include "page_pool.h"
#include "record_pack.h"
#include "segments.h"
#include "thread_state.h"
#include "trace_writer.h"

struct nsc_counters nsc_counters;

/* Records per segment: bounds how long one ring waits while another is
 * drained, and the packer's context. */
#define SEG_RECORDS 512u
#define MAX_COMPRESSORS 16
#define MAX_DRAINERS 8
#define FAST_LEVEL (-10) /* zstd's fast levels: about twice the speed of level 1 */
#define RECENT_COMMS 1024 /* descriptions a new segment repeats besides the open comms' */

enum job_state { J_FREE, J_FILLING, J_QUEUED, J_COMPRESSING };

struct flusher;

/* One drainer: the rings whose index is `index` modulo the number of
 * drainers, so each thread's records always take the same drainer and stay
 * in order; several drainers pack in parallel. Fields are its own. */
struct drainer {
    struct flusher *f;
    unsigned index;
    pthread_t thread;
    struct job *cur;
    uint64_t next_dseq;
    uint64_t last_seal_ns;
    struct nsc_pack_state pack;
};

/* One chunk on its way to the file: packed records and what they refer
 * to. Owned by the drainer while FILLING, by one compressor from
 * COMPRESSING until it is written and FREE again; state changes under
 * f->mu, which orders the buffers' hand-over between threads. */
struct job {
    enum job_state state;
    int last;                /* its drainer's final job: END follows the last of these */
    _Atomic int kept;        /* flight mode: its chunk is in the window (a crash dump skips it) */
    uint64_t seq;            /* global order of opening: compressors take the oldest */
    unsigned drainer;        /* who filled it */
    uint64_t dseq;           /* its drainer's job number: written in this order */
    unsigned char *raw;      /* packed segments */
    size_t raw_len, raw_cap;
    /* Added to by its drainer without mu while FILLING; an abandoning
     * finalize sums it under mu while that drainer may still run: atomic
     * (relaxed: a count, no data hangs off it). */
    _Atomic uint64_t records;
    struct nsc_anchor anchor;
};

struct flusher {
    struct nsc_config cfg;
    struct nsc_session session;
    struct nsc_writer w;
    pthread_mutex_t mu;
    pthread_cond_t cv_drainer, cv_work, cv_turn, cv_done;
    pthread_t workers[MAX_COMPRESSORS];
    unsigned nworkers;
    struct drainer drainers[MAX_DRAINERS];
    unsigned ndrainers, drainers_done, finals_written;
    struct job *jobs;
    unsigned njobs;
    uint64_t seq_next;  /* next job a drainer opens */
    uint64_t written_dseq[MAX_DRAINERS]; /* next job of each drainer to reach the file */
    int writing;        /* a compressor is writing: the file has one writer at a time */
    unsigned busy_jobs; /* jobs not FREE */
    /* Written under mu, but threads also test them in loops without it (a
     * drainer between passes, a compressor deciding to give up): atomic so
     * those unlocked reads are defined; seq_cst, they are read rarely. */
    _Atomic int stop, abandoned;
    int io_done;

    /* used only by the compressor whose turn it is to write */
    uint32_t strings_written;
    struct nsc_comm_info *pending_comms; /* taken from jobs, not yet in the file */
    unsigned npending, pending_cap;
    uint64_t next_open_try_ns;
    int in_error;
    /* bounded disk (NCCLSCOPE_MAX_MB, segments.h): the writing compressor's */
    struct nsc_segments segs;
    struct nsc_comm_info *recent; /* ring of the last RECENT_COMMS descriptions written */
    unsigned nrecent;
    int threads_due;              /* a new segment still lacks its THREAD records */

    /* flight mode (NCCLSCOPE_MODE=flight): chunks kept here, not written,
     * until a trigger sets dump_req (any thread); the writing compressor
     * dumps them */
    struct nsc_flight *flight;
    _Atomic int dump_req;
    unsigned dumps;

    /* loss accounting (the writing compressor adds, anyone reads) */
    _Atomic uint64_t lost_write, lost_exit;
    _Atomic uint32_t write_errors;
    _Atomic int32_t write_errno;
};

static struct flusher *F; /* the running session's; NULL between sessions */

/* The hang watchdog's hooks (watchdog.c sets them; NULL without one). The
 * RELEASE in nsc_flusher_set_hang_hooks pairs with the ACQUIREs here. */
static _Atomic(nsc_hang_emit_fn) hang_emit;
static _Atomic(nsc_hang_dump_fn) hang_dump;

void nsc_flusher_set_hang_hooks(nsc_hang_emit_fn emit, nsc_hang_dump_fn dump) {
    atomic_store_explicit(&hang_emit, emit, memory_order_release);
    atomic_store_explicit(&hang_dump, dump, memory_order_release);
}

static void hang_emit_now(struct nsc_writer *w, int dump) {
    nsc_hang_emit_fn fn = atomic_load_explicit(&hang_emit, memory_order_acquire);
    if (fn)
        fn(w, dump);
}
/* Set by the NCCLSCOPE_DUMP_SIGNAL handler (async-signal-safe: a lock-free
 * atomic store), turned into a dump request by a drainer. */
static volatile _Atomic int dump_signalled;
static struct sigaction old_dump_action;
static int dump_signal_installed;
/* Where the trace goes, for init's log line: written before the flusher
 * thread starts (under the session mutex) and only read after. The thread
 * once rewrote it with the file's name when it opened the file, which raced
 * with that log line (TSan, 1,100 init/finalize cycles). */
static char path_shown[1280];

const char *nsc_flusher_path(void) { return path_shown; }

int nsc_flusher_request_dump(void) {
    struct flusher *f = F; /* read under the session mutex by the caller */
    if (!f || !f->flight)
        return -1;
    atomic_store_explicit(&f->dump_req, 1, memory_order_release);
    return 0;
}

static uint64_t now_ns(void) { return nsc_clock_monotonic_ns(); }

static void deadline_after(struct timespec *ts, uint64_t us) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + us * 1000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* ------------------------------------------------------------------ drainer */

/* Opens a free job for drainer d. Returns it or NULL (all jobs are on
 * their way to the disk: leave the records in the rings). Under mu. */
static struct job *open_job(struct flusher *f, struct drainer *d) {
    struct job *j = NULL;
    for (unsigned i = 0; i < f->njobs && !j; i++)
        if (f->jobs[i].state == J_FREE)
            j = &f->jobs[i];
    if (!j)
        return NULL;
    f->busy_jobs++;
    j->state = J_FILLING;
    j->drainer = d->index;
    j->dseq = d->next_dseq++;
    j->seq = f->seq_next++;
    j->last = 0;
    j->raw_len = 0;
    j->records = 0;
    atomic_store_explicit(&j->kept, 0, memory_order_relaxed);
    return j;
}

/* Hands the job being filled to the compressors. Its clock anchor, strings
 * and comm descriptions are taken when the job is written: everything the
 * chunk's records name was registered before they were committed, so it is
 * registered by then, whichever drainer sealed which job first. */
static void seal(struct drainer *d, int last) {
    struct flusher *f = d->f;
    struct job *j = d->cur;
    j->last = last;
    pthread_mutex_lock(&f->mu);
    j->state = J_QUEUED;
    pthread_cond_signal(&f->cv_work);
    pthread_mutex_unlock(&f->mu);
    d->cur = NULL;
    d->last_seal_ns = now_ns();
}

static int ensure_job(struct drainer *d) {
    if (d->cur)
        return 1;
    pthread_mutex_lock(&d->f->mu);
    d->cur = open_job(d->f, d);
    pthread_mutex_unlock(&d->f->mu);
    return d->cur != NULL;
}

/* Packs what ring i holds into jobs. Returns the records taken; *blocked is
 * set when no job was free for the rest. */
static _Atomic int crash_dumping; /* a fatal signal's handler is dumping (flight mode) */

static uint64_t drain_ring(struct drainer *d, uint32_t i, struct nsc_thread *t, int *blocked) {
    struct flusher *f = d->f;
    if (atomic_load_explicit(&crash_dumping, memory_order_relaxed))
        return 0; /* the crash handler reads the rings now */
    uint64_t pos, n = ring_readable(&t->ring, &pos), total = 0;
    while (n > 0) {
        if (!ensure_job(d)) {
            *blocked = 1;
            break;
        }
        struct job *j = d->cur;
        size_t room = j->raw_cap - j->raw_len - sizeof(struct nsc_packed_segment);
        uint64_t fit = room / NSC_PACK_MAX;
        if (fit == 0 || j->raw_len >= (size_t)f->cfg.chunk_records * NSC_REC_SIZE) {
            seal(d, 0);
            continue;
        }
        uint64_t take = n < SEG_RECORDS ? n : SEG_RECORDS;
        if (take > fit)
            take = fit;
        unsigned char *seg_at = j->raw + j->raw_len;
        unsigned char *p = seg_at + sizeof(struct nsc_packed_segment);
        nsc_pack_reset(&d->pack);
        /* The page table is read once per page, not per record. */
        const struct nsc_rec *page = NULL;
        uint64_t page_end = 0;
        for (uint64_t k = 0; k < take; k++) {
            uint64_t q = pos + k;
            if (q >= page_end) {
                page = ring_slot(&t->ring, q) - (q & (NSC_PAGE_RECORDS - 1));
                page_end = (q | (NSC_PAGE_RECORDS - 1)) + 1;
            }
            /* The lines were written by another core: ask for them ahead. */
            if (k + 8 < take)
                __builtin_prefetch(q + 8 < page_end ? page + ((q + 8) & (NSC_PAGE_RECORDS - 1))
                                                    : ring_slot(&t->ring, q + 8),
                                   0, 0);
            const struct nsc_rec *r = page + (q & (NSC_PAGE_RECORDS - 1));
            p = nsc_pack_record(&d->pack, r, p);
            nsc_live_observe(r); /* hook: live metrics (one relaxed load when off) */
        }
        /* Only read above; from here the producer may reuse the slots. */
        ring_consume(&t->ring, pos, take);
        struct nsc_packed_segment seg = {.thread = i, .nrecords = (uint32_t)take,
                                         .nbytes = (uint32_t)(p - seg_at - sizeof(seg))};
        memcpy(seg_at, &seg, sizeof(seg));
        j->raw_len = (size_t)(p - j->raw);
        atomic_fetch_add_explicit(&j->records, take, memory_order_relaxed);
        pos += take;
        n -= take;
        total += take;
    }
    return total;
}

static uint64_t drain_all(struct drainer *d, int *blocked) {
    uint32_t n = nsc_thread_count();
    uint64_t total = 0;
    *blocked = 0;
    nsc_live_pass_begin(); /* hook: the metrics' state is this drainer's for the pass */
    for (uint32_t i = d->index; i < n && !*blocked; i += d->f->ndrainers)
        total += drain_ring(d, i, nsc_thread_at(i), blocked);
    nsc_live_pass_end();
    return total;
}

/* How long to sleep after a pass. Sleeping is what keeps the drainer off
 * the application's cores and its threads' cache lines: every pass reads
 * each ring's head, which the writer must then fetch back. The rings'
 * pages absorb what arrives meanwhile (1 ms at 20 M records/s is 20 pages
 * of a budget's ~780). So it sleeps NCCLSCOPE_DRAIN_US unless the rings are
 * getting full: more than an eighth of the pages held, or a pass that found
 * more than 8 pages' worth (a burst in progress) -> no sleep. Blocked (no
 * free job): it waits for a compressor to free one. */
static uint64_t next_sleep_us(const struct flusher *f, uint64_t got, int blocked) {
    if (blocked)
        return f->cfg.drain_us; /* woken early when a job frees */
    if ((uint64_t)page_pool_in_use() * 8 > page_pool_pages() || got > 8u * NSC_PAGE_RECORDS)
        return 0;
    return f->cfg.drain_us;
}

/* Flight mode, drainer 0: the triggers that need a thread of ours to look
 * (the dump signal's flag, $NCCLSCOPE_DIR/dump-now, checked once per flush
 * interval) become a dump request; the job sealed next carries it to a
 * compressor. Returns 1 when a dump was requested now. */
static uint64_t next_file_check_ns;
/* $NCCLSCOPE_DIR/dump-all: the job's trigger. Never removed: every process
 * writing into the directory (a job's ranks on this host; on a shared
 * filesystem, every host) dumps once each time its modification time
 * changes. A file already there when we first look is an earlier job's and
 * only sets the baseline. */
static struct timespec dump_all_seen;
static int dump_all_looked;
static uint64_t dump_last_ns; /* when a dump was last requested here */

static int dump_all_path(const struct flusher *f, char *p, size_t n) {
    return snprintf(p, n, "%s/dump-all", f->cfg.dir) < (int)n;
}

static int dump_all_changed(const struct flusher *f) {
    char p[1100];
    struct stat st;
    struct timespec m = {0, 0};
    if (!dump_all_path(f, p, sizeof(p)))
        return 0;
    if (stat(p, &st) == 0)
        m = st.st_mtim;
    int changed = dump_all_looked && (m.tv_sec != dump_all_seen.tv_sec ||
                                      m.tv_nsec != dump_all_seen.tv_nsec) && m.tv_sec;
    dump_all_seen = m;
    dump_all_looked = 1;
    return changed;
}

/* The hang watchdog fired here: the other ranks' windows matter as much
 * as ours (the rank that skipped a collective has nothing in flight and
 * would never dump). Touch dump-all and take its new time as seen. */
static void dump_all_touch(const struct flusher *f) {
    char p[1100];
    if (!dump_all_path(f, p, sizeof(p)) || nsc_writer_mkdir(f->cfg.dir) != 0)
        return;
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return;
    futimens(fd, NULL);
    struct stat st;
    if (fstat(fd, &st) == 0) {
        dump_all_seen = st.st_mtim;
        dump_all_looked = 1;
    }
    close(fd);
}

static int flight_triggers(struct flusher *f, uint64_t now) {
    int req = 0;
    if (atomic_exchange_explicit(&dump_signalled, 0, memory_order_relaxed))
        req = 1;
    nsc_hang_dump_fn hd = atomic_load_explicit(&hang_dump, memory_order_acquire);
    if (hd && hd()) { /* hook: the hang watchdog fired */
        req = 1;
        dump_all_touch(f);
    }
    if (now >= next_file_check_ns) {
        next_file_check_ns = now + (uint64_t)f->cfg.flush_ms * 1000000ull;
        char p[1100];
        /* unlink is the check: one dump per file that appears */
        if (snprintf(p, sizeof(p), "%s/dump-now", f->cfg.dir) < (int)sizeof(p) && unlink(p) == 0)
            req = 1;
        /* Ranks fire a moment apart, each touching dump-all: a change
         * within 10 s of a dump of ours belongs to the same episode. */
        if (dump_all_changed(f) && (!dump_last_ns || now - dump_last_ns > 10000000000ull))
            req = 1;
    }
    if (req)
        dump_last_ns = now;
    if (req)
        atomic_store_explicit(&f->dump_req, 1, memory_order_release);
    return req || atomic_load_explicit(&f->dump_req, memory_order_acquire);
}

static void *drainer_main(void *arg) {
    struct drainer *d = arg;
    struct flusher *f = d->f;
    d->last_seal_ns = now_ns();
    uint64_t sleep_us = 0;
    pthread_mutex_lock(&f->mu);
    while (!f->stop && !f->abandoned) {
        if (sleep_us) {
            struct timespec dl;
            deadline_after(&dl, sleep_us);
            pthread_cond_timedwait(&f->cv_drainer, &f->mu, &dl);
            if (f->stop || f->abandoned)
                break;
        }
        pthread_mutex_unlock(&f->mu);
        int blocked;
        uint64_t got = drain_all(d, &blocked);
        uint64_t now = now_ns();
        /* At least once per flush interval: the records waiting, and from
         * drainer 0 also an empty job, which carries strings, comms and
         * STATS to the file when nothing else does. */
        int dump_now = 0;
        if (f->flight && d->index == 0)
            dump_now = flight_triggers(f, now);
        if ((dump_now || now - d->last_seal_ns >= (uint64_t)f->cfg.flush_ms * 1000000ull) &&
            ((d->cur && d->cur->raw_len) || (d->index == 0 && ensure_job(d)))) {
            seal(d, 0);
            if (d->index == 0)
                nsc_thread_reclaim_idle();
        }
        sleep_us = next_sleep_us(f, got, blocked);
        pthread_mutex_lock(&f->mu);
    }
    /* Stop: drain until the rings are empty, waiting for free jobs, then
     * seal the last job (END follows the last drainer's). Abandoned: leave
     * at once. */
    while (!f->abandoned) {
        pthread_mutex_unlock(&f->mu);
        int blocked;
        uint64_t got = drain_all(d, &blocked);
        pthread_mutex_lock(&f->mu);
        if (blocked || (!d->cur && (d->cur = open_job(f, d)) == NULL)) {
            pthread_cond_wait(&f->cv_drainer, &f->mu);
            continue;
        }
        if (got == 0)
            break;
    }
    if (!f->abandoned) {
        pthread_mutex_unlock(&f->mu);
        seal(d, 1);
        pthread_mutex_lock(&f->mu);
    }
    f->drainers_done++;
    pthread_cond_broadcast(&f->cv_done);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---------------------------------------------------- writing, in seq order */

static void stats_block(struct flusher *f) {
    uint32_t n = nsc_thread_count();
    size_t len = nsc_stats_size(n);
    unsigned char *buf = calloc(1, len);
    if (!buf)
        return;
    struct nsc_stats_header *sh = (struct nsc_stats_header *)buf;
    struct nsc_thread_stats *ts = (struct nsc_thread_stats *)(sh + 1);
    struct nsc_thread *sent = nsc_thread_sentinel();
    sh->nthreads = n;
    sh->header_size = sizeof(*sh);
    sh->drops_no_thread = atomic_load_explicit(&sent->drops_ring, memory_order_relaxed);
    sh->invalid_context = atomic_load_explicit(&nsc_counters.invalid_context, memory_order_relaxed);
    sh->invalid_handle = atomic_load_explicit(&nsc_counters.invalid_handle, memory_order_relaxed);
    sh->string_overflow = nsc_intern_overflows();
    sh->lost_write = atomic_load_explicit(&f->lost_write, memory_order_relaxed);
    sh->lost_exit = atomic_load_explicit(&f->lost_exit, memory_order_relaxed);
    sh->comm_overflow = nsc_comm_overflows();
    sh->memory_peak = (uint64_t)page_pool_peak() * NSC_PAGE_BYTES +
                      (uint64_t)f->njobs * 0; /* pages; job buffers are fixed (memory_budget) */
    sh->memory_budget = (uint64_t)f->cfg.memory_mb << 20;
    sh->write_errno = atomic_load_explicit(&f->write_errno, memory_order_relaxed);
    sh->write_errors = atomic_load_explicit(&f->write_errors, memory_order_relaxed);
    sh->chain_lost = atomic_load_explicit(&nsc_counters.chain_lost, memory_order_relaxed);
    sh->segment = f->w.rotate ? f->w.segment : 0;
    sh->segments_deleted = f->segs.deleted;
    sh->bytes_deleted = f->segs.bytes_deleted;
    sh->records_deleted = f->segs.records_deleted;
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        ts[i].thread = i;
        ts[i].tid = atomic_load_explicit(&t->tid, memory_order_relaxed);
        ts[i].records = atomic_load_explicit(&t->ring.head, memory_order_relaxed);
        ts[i].drops_ring = atomic_load_explicit(&t->drops_ring, memory_order_relaxed);
        ts[i].drops_events = atomic_load_explicit(&t->drops_events, memory_order_relaxed);
    }
    nsc_writer_block(&f->w, NSC_BLK_STATS, buf, len, 1);
    free(buf);
}

static int write_strings(struct flusher *f, uint32_t upto) {
    unsigned char buf[65536];
    /* Entries below nsc_intern_count() are immutable (intern.h): no lock. */
    while (f->strings_written < upto) {
        uint32_t id = f->strings_written;
        size_t len = nsc_strings_encode(buf, sizeof(buf), &id, upto, nsc_intern_text);
        if (len && nsc_writer_block(&f->w, NSC_BLK_STRINGS, buf, len, 1) != 0)
            return -1;
        f->strings_written = id;
    }
    return 0;
}

/* Takes the comm descriptions registered so far into the pending list,
 * where they stay until a COMMS block reaches the file: a description is
 * never lost with a failed write. Only the compressor whose turn it is calls
 * this (the comm table's single taker). */
static void take_comms(struct flusher *f) {
    for (;;) {
        if (f->pending_cap - f->npending < 256) {
            unsigned cap = f->pending_cap ? f->pending_cap * 2 : 256;
            struct nsc_comm_info *c = realloc(f->pending_comms, cap * sizeof(*c));
            if (!c)
                return; /* they stay in the comm table until the next job */
            f->pending_comms = c;
            f->pending_cap = cap;
        }
        unsigned n = nsc_comm_take_pending(f->pending_comms + f->npending, f->pending_cap - f->npending);
        nsc_live_comms(f->pending_comms + f->npending, n); /* hook: the metrics' comm labels */
        f->npending += n;
        if (n == 0)
            return;
    }
}

static int write_comms(struct flusher *f) {
    unsigned done = 0;
    while (done < f->npending) {
        unsigned k = f->npending - done < 1024 ? f->npending - done : 1024;
        if (nsc_writer_block(&f->w, NSC_BLK_COMMS, f->pending_comms + done, k * sizeof(struct nsc_comm_info), 1) != 0) {
            memmove(f->pending_comms, f->pending_comms + done, (f->npending - done) * sizeof(struct nsc_comm_info));
            f->npending -= done;
            return -1;
        }
        done += k;
    }
    if (f->recent) /* hook: rotation repeats them in the next segment */
        for (unsigned i = 0; i < f->npending; i++)
            f->recent[f->nrecent++ % RECENT_COMMS] = f->pending_comms[i];
    f->npending = 0;
    return 0;
}

/* ---- rotation (NCCLSCOPE_MAX_MB, segments.h): hooks of write_job ---- */

/* Closes the segment being written (END: it is whole) so that the next
 * write opens the next one. */
static void next_segment(struct flusher *f) {
    nsc_writer_block(&f->w, NSC_BLK_END, "", 0, 0);
    nsc_segments_closed(&f->segs, f->w.path, f->w.bytes);
    nsc_writer_close(&f->w);
    f->w.segment++;
}

/* A new segment repeats what its records may refer to: the descriptions
 * written recently and those of every open comm (strings are written again
 * from id 1 by write_job, threads by write_threads). */
static void describe_again(struct flusher *f) {
    unsigned n = f->nrecent < RECENT_COMMS ? f->nrecent : RECENT_COMMS;
    unsigned need = f->npending + n + NSC_MAX_COMMS;
    if (f->pending_cap < need) {
        struct nsc_comm_info *c = realloc(f->pending_comms, need * sizeof(*c));
        if (!c)
            return;
        f->pending_comms = c;
        f->pending_cap = need;
    }
    /* oldest first: a later entry with the same serial replaces an earlier one */
    for (unsigned i = 0; i < n; i++)
        f->pending_comms[f->npending++] = f->recent[(f->nrecent - n + i) % RECENT_COMMS];
    f->npending += nsc_comm_describe_open(f->pending_comms + f->npending, NSC_MAX_COMMS);
    f->threads_due = 1;
}

/* Every live writer thread's THREAD record (tid, name), at the segment's
 * start, so its records are named without the segment that held the
 * thread's first record. */
static void write_threads(struct flusher *f, uint64_t ticks) {
    uint32_t n = nsc_thread_count();
    size_t cap = (size_t)n * (sizeof(struct nsc_packed_segment) + NSC_PACK_MAX);
    unsigned char *buf = n ? malloc(cap) : NULL;
    if (!buf)
        return;
    unsigned char *p = buf;
    for (uint32_t i = 0; i < n; i++) {
        struct nsc_rec r;
        memset(&r, 0, sizeof(r));
        r.h.kind = NSC_REC_THREAD;
        r.h.ticks = ticks;
        if (!nsc_thread_describe(i, &r.h.aux, r.u.thread_name))
            continue;
        struct nsc_pack_state st;
        nsc_pack_reset(&st);
        unsigned char *q = nsc_pack_record(&st, &r, p + sizeof(struct nsc_packed_segment));
        struct nsc_packed_segment seg = {.thread = i, .nrecords = 1,
                                         .nbytes = (uint32_t)(q - p - sizeof(seg))};
        memcpy(p, &seg, sizeof(seg));
        p = q;
    }
    if (p > buf && (size_t)(p - buf) <= NSC_WRITER_SMALL_MAX)
        nsc_writer_block(&f->w, NSC_BLK_PACKED, buf, (size_t)(p - buf), 1);
    free(buf);
}

/* Everything a job carries, in the order readers need. Returns 0 when its
 * chunk reached the file. */
static int write_job(struct flusher *f, struct job *j, unsigned char *out, uint16_t flags,
                     size_t stored) {
    take_comms(f);
    if (f->flight) {
        /* Flight mode: nothing reaches the disk until a dump. Comm
         * descriptions go to the recent ring a dump repeats (with every
         * open comm's); the chunk to the window. */
        for (unsigned i = 0; i < f->npending; i++)
            f->recent[f->nrecent++ % RECENT_COMMS] = f->pending_comms[i];
        f->npending = 0;
        nsc_clock_anchor(&j->anchor);
        if (j->raw_len)
            nsc_flight_keep(f->flight, &j->anchor, out + sizeof(struct nsc_block_header), stored,
                            j->raw_len, flags, j->records);
        atomic_store_explicit(&j->kept, 1, memory_order_release);
        return 0;
    }
    uint32_t strings = nsc_intern_count();
    /* hook: rotation closes a segment this chunk would take past its size */
    if (f->w.fd >= 0 && nsc_segments_due(&f->segs, f->w.bytes, stored + 4096))
        next_segment(f);
    if (f->w.fd < 0) {
        uint64_t now = now_ns();
        if (now < f->next_open_try_ns)
            return -1;
        if (nsc_writer_open(&f->w, &f->session) != 0) {
            f->next_open_try_ns = now + 1000000000ull; /* retry once a second */
            return -1;
        }
        f->strings_written = 0;
        if (f->w.rotate && f->w.segment > 0)
            describe_again(f); /* hook: each segment stands alone */
    }
    if (f->w.rotate) /* hook: room for what follows before it is written */
        nsc_segments_prune(&f->segs, f->w.bytes, stored + (64u << 10));
    if (write_strings(f, strings) != 0 || write_comms(f) != 0)
        return -1;
    /* The anchor is taken now, not at sealing: it bounds every record
     * written so far from above, and anchors stay in file order when
     * several drainers' jobs are written in another order than sealed. */
    nsc_clock_anchor(&j->anchor);
    if (nsc_writer_block(&f->w, NSC_BLK_ANCHOR, &j->anchor, sizeof(j->anchor), 0) != 0)
        return -1;
    if (f->threads_due) {
        write_threads(f, j->anchor.ticks);
        f->threads_due = 0;
    }
    /* hook: rotation makes room for the chunk, STATS and END first, so the
     * files never exceed the cap, even for a moment */
    uint64_t tail = 4096 + 32ull * nsc_thread_count();
    if (f->w.rotate)
        nsc_segments_prune(&f->segs, f->w.bytes, stored + sizeof(struct nsc_block_header) + tail);
    if (j->raw_len &&
        nsc_writer_prepared(&f->w, out, NSC_BLK_PACKED, flags, stored, j->raw_len) != 0)
        return -1;
    f->segs.cur_records += j->records;
    f->segs.cur_chunks++;
    return 0;
}

static void account(struct flusher *f, struct job *j, int ok) {
    if (ok) {
        if (f->in_error) {
            nsc_log_warn("ncclscope: writing %s works again; %llu records were lost (counted in the trace)",
                         f->w.path, (unsigned long long)atomic_load(&f->lost_write));
            f->in_error = 0;
        }
        return;
    }
    int e = f->w.last_errno;
    atomic_fetch_add_explicit(&f->lost_write, j->records, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->write_errors, 1, memory_order_relaxed);
    atomic_store_explicit(&f->write_errno, e, memory_order_relaxed);
    if (!f->in_error) {
        nsc_log_warn("ncclscope: cannot write the trace %s: %s (errno %d); counting lost records and retrying",
                     f->w.fd >= 0 ? f->w.path : f->cfg.dir, strerror(e), e);
        f->in_error = 1;
    }
}

/* ------------------------------------------------------------ flight dump */

struct dump_ctx {
    struct flusher *f;
    uint64_t chunks;
};

static int dump_chunk(void *ud, const struct nsc_anchor *a, unsigned char *block, uint16_t flags,
                      size_t stored, size_t raw_len) {
    struct dump_ctx *d = ud;
    struct flusher *f = d->f;
    if (nsc_writer_block(&f->w, NSC_BLK_ANCHOR, a, sizeof(*a), 0) != 0)
        return -1;
    if (f->threads_due) { /* names for every thread, before its first records */
        write_threads(f, a->ticks);
        f->threads_due = 0;
    }
    if (nsc_writer_prepared(&f->w, block, NSC_BLK_PACKED, flags, stored, raw_len) != 0)
        return -1;
    d->chunks++;
    return 0;
}

/* Writes the flight window as a standalone trace file (a new file each
 * time: <host>-<pid>[-N].nsc): strings, the recent and open comm
 * descriptions, every thread's name, the kept chunks, STATS, END. The window
 * stays: recording goes on, and a later dump covers it again. Called by the
 * compressor whose turn it is to write. */
static void flight_dump(struct flusher *f, const char *why) {
    if (nsc_writer_open(&f->w, &f->session) != 0) {
        nsc_log_warn("ncclscope: flight recorder: cannot write a dump in %s: %s", f->cfg.dir,
                     strerror(f->w.last_errno));
        return;
    }
    f->strings_written = 0;
    describe_again(f);
    struct dump_ctx d = {.f = f};
    int rc = write_strings(f, nsc_intern_count()) == 0 && write_comms(f) == 0
                 ? nsc_flight_each(f->flight, dump_chunk, &d) : -1;
    if (f->threads_due) {
        struct nsc_anchor a;
        nsc_clock_anchor(&a);
        nsc_writer_block(&f->w, NSC_BLK_ANCHOR, &a, sizeof(a), 0);
        write_threads(f, a.ticks);
        f->threads_due = 0;
    }
    hang_emit_now(&f->w, 1); /* hook: the latest HANG block */
    stats_block(f);
    nsc_writer_block(&f->w, NSC_BLK_END, "", 0, 0);
    f->dumps++;
    if (rc == 0)
        nsc_log_info("ncclscope: flight recorder (%s): %llu records in %llu chunks -> %s", why,
                     (unsigned long long)nsc_flight_records(f->flight), (unsigned long long)d.chunks,
                     f->w.path);
    else
        nsc_log_warn("ncclscope: flight recorder (%s): writing %s failed: %s", why, f->w.path,
                     strerror(f->w.last_errno));
    nsc_writer_close(&f->w);
}

static void on_dump_signal(int sig) {
    (void)sig;
    atomic_store_explicit(&dump_signalled, 1, memory_order_relaxed);
}

/* ------------------------------------------------- crash dump (flight mode) */

/* On SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT, flight mode writes the
 * window to <dir>/<host>-<pid>-crash.nsc from the signal handler, then hands
 * the signal to the handler that was there before (or the default action).
 * Only async-signal-safe calls: mkdir, open, write, close, sigaction, raise,
 * clock_gettime (the anchor), lock-free atomics, and memcpy/strlen, which
 * POSIX.1-2017 lists as safe; no malloc, no lock, no stdio. Blocks go out
 * uncompressed (the chunks stay the zstd frames they are): STRINGS, COMMS
 * (the recent descriptions), the kept chunks with their anchors, the chunk
 * jobs not kept yet (their packed bytes), the records still in the rings (packed by the handler: nsc_pack_record is a
 * pure function), END. The
 * path is prepared at session start. Checked by reading every function the
 * handler reaches (crash_*, nsc_strings_encode, nsc_intern_text,
 * nsc_flight_each/freeze, nsc_header_check, nsc_clock_anchor,
 * nsc_thread_count/at, ring_readable/slot, nsc_pack_reset/record) and by
 * tests/cli/test_flight.py, which crashes a process with SIGSEGV. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction old_fatal[NFATAL];
static int fatal_installed;
static char crash_dir[1024], crash_path[1280];
static unsigned char crash_buf[65536];
static struct nsc_pack_state crash_pack;

static int crash_write(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int crash_block(int fd, uint32_t *seq, uint16_t type, uint16_t flags, const void *payload,
                       size_t stored, size_t raw_len) {
    struct nsc_block_header h;
    h.magic = NSC_BLOCK_MAGIC;
    h.type = type;
    h.flags = flags;
    h.stored_len = (uint32_t)stored;
    h.raw_len = (uint32_t)raw_len;
    h.seq = (*seq)++;
    h.check = nsc_header_check(&h);
    return crash_write(fd, &h, sizeof(h)) || (stored && crash_write(fd, payload, stored)) ? -1 : 0;
}

struct crash_ctx {
    int fd;
    uint32_t seq;
};

static int crash_chunk(void *ud, const struct nsc_anchor *a, unsigned char *block, uint16_t flags,
                       size_t stored, size_t raw_len) {
    struct crash_ctx *c = ud;
    /* the chunk's own header room is left alone: a dump by a compressor may
     * be using it */
    if (crash_block(c->fd, &c->seq, NSC_BLK_ANCHOR, 0, a, sizeof(*a), sizeof(*a)) != 0)
        return -1;
    return crash_block(c->fd, &c->seq, NSC_BLK_PACKED, flags, block + sizeof(struct nsc_block_header),
                       stored, raw_len);
}

static void crash_dump(struct flusher *f) {
    nsc_flight_freeze(f->flight);
    mkdir(crash_dir, 0750);
    int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return;
    struct nsc_file_header fh;
    memcpy(fh.magic, NSC_FILE_MAGIC, 8);
    fh.format_version = NSC_FORMAT_VERSION;
    fh.header_size = sizeof(fh);
    struct crash_ctx c = {.fd = fd, .seq = 0};
    if (crash_write(fd, &fh, sizeof(fh)) != 0 ||
        crash_block(fd, &c.seq, NSC_BLK_SESSION, 0, &f->session, sizeof(f->session), sizeof(f->session)) != 0)
        goto out;
    uint32_t n = nsc_intern_count(), id = 1;
    while (id < n) {
        uint32_t before = id;
        size_t len = nsc_strings_encode(crash_buf, sizeof(crash_buf), &id, n, nsc_intern_text);
        if (id == before || crash_block(fd, &c.seq, NSC_BLK_STRINGS, 0, crash_buf, len, len) != 0)
            break;
    }
    unsigned nr = f->nrecent < RECENT_COMMS ? f->nrecent : RECENT_COMMS;
    for (unsigned i = 0; i < nr; i++) { /* one block per description: no buffer to fill */
        const struct nsc_comm_info *ci = &f->recent[(f->nrecent - nr + i) % RECENT_COMMS];
        crash_block(fd, &c.seq, NSC_BLK_COMMS, 0, ci, sizeof(*ci), sizeof(*ci));
    }
    nsc_flight_each(f->flight, crash_chunk, &c);
    /* Then the chunk jobs not in the window yet (sealed, being compressed or
     * still filling: their packed bytes up to raw_len, which a drainer moves
     * only after a whole segment), each drainer's in its order, stored raw. */
    struct job *order[64];
    unsigned nord = 0;
    for (unsigned i = 0; i < f->njobs && nord < 64; i++) {
        struct job *j = &f->jobs[i];
        if (j->state != J_FREE && !atomic_load_explicit(&j->kept, memory_order_acquire) && j->raw_len)
            order[nord++] = j;
    }
    for (unsigned i = 1; i < nord; i++) /* by (drainer, its job number): insertion sort */
        for (unsigned k = i; k > 0 && (order[k - 1]->drainer > order[k]->drainer ||
                                       (order[k - 1]->drainer == order[k]->drainer &&
                                        order[k - 1]->dseq > order[k]->dseq)); k--) {
            struct job *t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (unsigned i = 0; i < nord; i++)
        if (crash_block(fd, &c.seq, NSC_BLK_PACKED, 0, order[i]->raw, order[i]->raw_len,
                        order[i]->raw_len) != 0)
            goto out;
    /* The newest records, still in the rings: packed here, stored raw. The
     * drainers stop taking records once crash_dumping is set; one caught
     * mid-segment may still consume a few, which then are missing. */
    struct nsc_anchor a;
    nsc_clock_anchor(&a);
    crash_block(fd, &c.seq, NSC_BLK_ANCHOR, 0, &a, sizeof(a), sizeof(a));
    uint32_t nt = nsc_thread_count();
    for (uint32_t i = 0; i < nt; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        uint64_t pos, left = ring_readable(&t->ring, &pos);
        while (left) {
            uint64_t take = left < SEG_RECORDS ? left : SEG_RECORDS;
            const size_t room = sizeof(crash_buf) - sizeof(struct nsc_packed_segment);
            if (take * NSC_PACK_MAX > room)
                take = room / NSC_PACK_MAX;
            unsigned char *p = crash_buf + sizeof(struct nsc_packed_segment);
            struct nsc_pack_state *ps = &crash_pack;
            nsc_pack_reset(ps);
            for (uint64_t k = 0; k < take; k++)
                p = nsc_pack_record(ps, ring_slot(&t->ring, pos + k), p);
            struct nsc_packed_segment seg = {.thread = i, .nrecords = (uint32_t)take,
                                             .nbytes = (uint32_t)(p - crash_buf - sizeof(seg))};
            memcpy(crash_buf, &seg, sizeof(seg));
            size_t len = (size_t)(p - crash_buf);
            if (crash_block(fd, &c.seq, NSC_BLK_PACKED, 0, crash_buf, len, len) != 0)
                goto out;
            pos += take;
            left -= take;
        }
    }
    crash_block(fd, &c.seq, NSC_BLK_END, 0, "", 0, 0);
out:
    close(fd);
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    struct flusher *f = F;
    if (f && f->flight && !atomic_exchange_explicit(&crash_dumping, 1, memory_order_acq_rel))
        crash_dump(f);
    /* The handler that was there before takes it from here: a fault
     * re-executes and meets it; a sent signal (abort, kill) is raised again
     * once we return. */
    for (size_t i = 0; i < NFATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &old_fatal[i], NULL);
    if (si->si_code <= 0)
        raise(sig);
}

static void fatal_install(const struct flusher *f, const char *host, int pid) {
    if (fatal_installed)
        return;
    snprintf(crash_dir, sizeof(crash_dir), "%s", f->cfg.dir);
    snprintf(crash_path, sizeof(crash_path), "%s/%s-%d-crash%s", f->cfg.dir, host, pid, NSC_FILE_SUFFIX);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NFATAL; i++)
        sigaction(fatal_signals[i], &sa, &old_fatal[i]);
    fatal_installed = 1;
}

/* Session end: the handlers that were there before come back (only ours
 * are replaced; a handler installed after ours stays). */
static void fatal_uninstall(void) {
    if (!fatal_installed)
        return;
    for (size_t i = 0; i < NFATAL; i++) {
        struct sigaction cur;
        if (sigaction(fatal_signals[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_fatal)
            sigaction(fatal_signals[i], &old_fatal[i], NULL);
    }
    fatal_installed = 0;
}

/* -------------------------------------------------------------- compressors */

/* A compressor takes the oldest sealed job, compresses it into its own
 * buffer (several compressors work on consecutive jobs at once), then waits
 * for its turn (its drainer's jobs in order, one writer at a time) and
 * writes the job's blocks: the file receives
 * jobs in the order the drainer sealed them, which keeps every thread's
 * records in order and strings and comms ahead of their users. Only the
 * compressor whose turn it is touches the writer, so the file needs no
 * lock of its own; a frozen disk stops that one in write(2), the others at
 * their turn, and the drainer when every job is taken. */
static void *compressor_main(void *arg) {
    struct flusher *f = arg;
    ZSTD_CCtx *cctx = NULL;
    size_t hdr = sizeof(struct nsc_block_header);
    size_t out_cap = hdr + ZSTD_compressBound(f->jobs[0].raw_cap);
    unsigned char *out = malloc(out_cap);
    pthread_mutex_lock(&f->mu);
    for (;;) {
        struct job *j = NULL;
        while (!f->abandoned && !f->io_done) {
            for (unsigned i = 0; i < f->njobs; i++)
                if (f->jobs[i].state == J_QUEUED && (!j || f->jobs[i].seq < j->seq))
                    j = &f->jobs[i];
            if (j)
                break;
            pthread_cond_wait(&f->cv_work, &f->mu);
        }
        if (!j)
            break;
        j->state = J_COMPRESSING;
        /* Pressure: most jobs are already sealed and waiting, so this one
         * takes zstd's fastest level. */
        int level = f->busy_jobs * 2 > f->njobs ? FAST_LEVEL : f->cfg.zstd_level;
        pthread_mutex_unlock(&f->mu);

        uint16_t flags = 0;
        size_t stored = 0;
        if (j->raw_len && out) {
            size_t n = 0;
            if (!cctx && (cctx = ZSTD_createCCtx()) != NULL)
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
            if (cctx) {
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
                n = ZSTD_compress2(cctx, out + hdr, out_cap - hdr, j->raw, j->raw_len);
            }
            if (cctx && !ZSTD_isError(n)) {
                stored = n;
                flags = NSC_BLK_F_ZSTD;
            } else { /* no memory for a context: store the packed bytes */
                memcpy(out + hdr, j->raw, j->raw_len);
                stored = j->raw_len;
            }
        }

        pthread_mutex_lock(&f->mu);
        while (!f->abandoned && (f->writing || f->written_dseq[j->drainer] != j->dseq))
            pthread_cond_wait(&f->cv_turn, &f->mu);
        if (f->abandoned)
            break;
        f->writing = 1;
        pthread_mutex_unlock(&f->mu);
        int ok = out && write_job(f, j, out, flags, stored) == 0;
        account(f, j, ok);
        /* The last drainer's final job ends the file (each drainer's
         * final job is its last, so every other job is in by then). */
        int last = j->last && f->finals_written + 1 == f->ndrainers;
        if (f->flight) {
            /* a trigger, or the end of the session: dump the window */
            if (atomic_exchange_explicit(&f->dump_req, 0, memory_order_acq_rel) || last)
                flight_dump(f, last ? "end of the session" : "trigger");
        } else if (f->w.fd >= 0) {
            hang_emit_now(&f->w, 0); /* hook: a HANG block not written yet */
            stats_block(f);
            if (last)
                nsc_writer_block(&f->w, NSC_BLK_END, "", 0, 0);
        }
        pthread_mutex_lock(&f->mu);
        if (f->abandoned)
            break; /* finalize gave up on us while we wrote: touch nothing more */
        f->finals_written += j->last;
        f->writing = 0;
        f->written_dseq[j->drainer]++;
        f->busy_jobs--;
        j->state = J_FREE;
        pthread_cond_broadcast(&f->cv_turn);
        pthread_cond_broadcast(&f->cv_drainer);
        if (last) {
            f->io_done = 1;
            pthread_cond_broadcast(&f->cv_work);
            pthread_cond_broadcast(&f->cv_done);
        }
    }
    pthread_mutex_unlock(&f->mu);
    ZSTD_freeCCtx(cctx);
    free(out);
    return NULL;
}

/* -------------------------------------------------------------- lifecycle */

static unsigned compressors_for(const struct nsc_config *cfg) {
    if (cfg->compress_threads)
        return cfg->compress_threads < MAX_COMPRESSORS ? cfg->compress_threads : MAX_COMPRESSORS;
    int ncpu = nsc_bg_thread_ncpus(cfg);
    return ncpu <= 4 ? 1 : ncpu <= 16 ? 2 : 4;
}

/* One drainer keeps up with ~14 M records/s from one writer; more writers
 * on a large machine need more. Few CPUs: one (each drainer is a thread
 * that competes with the application when it runs). */
static unsigned drainers_for(const struct nsc_config *cfg) {
    int ncpu = nsc_bg_thread_ncpus(cfg);
    return ncpu <= 8 ? 1 : ncpu <= 32 ? 2 : 4;
}

static void free_flusher(struct flusher *f) {
    for (unsigned i = 0; i < f->njobs; i++)
        free(f->jobs[i].raw);
    free(f->jobs);
    free(f->pending_comms);
    free(f->recent);
    nsc_flight_destroy(f->flight);
    nsc_segments_free(&f->segs);
    nsc_writer_close(&f->w);
    pthread_cond_destroy(&f->cv_drainer);
    pthread_cond_destroy(&f->cv_work);
    pthread_cond_destroy(&f->cv_turn);
    pthread_cond_destroy(&f->cv_done);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

int nsc_flusher_start(const struct nsc_config *cfg, const struct nsc_session *session,
                      unsigned session_index, char *err, unsigned errlen) {
    /* The budget: a quarter for chunk jobs (packed bytes and their
     * compressed form), the rest for the rings' pages. */
    uint64_t budget = (uint64_t)cfg->memory_mb << 20;
    size_t chunk = (size_t)cfg->chunk_records * NSC_REC_SIZE;
    size_t raw_cap = chunk + sizeof(struct nsc_packed_segment) + (SEG_RECORDS + 1) * NSC_PACK_MAX;
    size_t out_cap = sizeof(struct nsc_block_header) + ZSTD_compressBound(raw_cap);
    unsigned nw = compressors_for(cfg);
    uint64_t njobs = (budget / 4 - (uint64_t)nw * out_cap) / raw_cap;
    if (njobs < 3)
        njobs = 3;
    if (njobs > 64)
        njobs = 64;
    uint64_t job_bytes = njobs * raw_cap + (uint64_t)nw * out_cap;
    uint64_t pages = budget > job_bytes + 2 * NSC_PAGE_BYTES ? budget - job_bytes : 2 * NSC_PAGE_BYTES;
    if (page_pool_create(pages) != 0) {
        snprintf(err, errlen, "cannot reserve %llu MiB for records", (unsigned long long)(pages >> 20));
        return -1;
    }
    struct flusher *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "out of memory for the flusher");
        return -1;
    }
    f->cfg = *cfg;
    f->session = *session;
    nsc_writer_init(&f->w, cfg->dir, session->host, (int)session->pid, session_index,
                    cfg->zstd_level);
    snprintf(path_shown, sizeof(path_shown), "%s/%s*%s", cfg->dir, f->w.stem, NSC_FILE_SUFFIX);
    nsc_segments_init(&f->segs, (uint64_t)cfg->max_mb << 20);
    if (cfg->max_mb && !cfg->flight) { /* rotation: numbered segment files (segments.h) */
        f->w.rotate = 1;
        f->recent = calloc(RECENT_COMMS, sizeof(*f->recent));
    }
    if (cfg->flight) {
        f->flight = nsc_flight_create((uint64_t)cfg->flight_mb << 20);
        f->recent = calloc(RECENT_COMMS, sizeof(*f->recent));
        if (!f->flight || !f->recent) {
            nsc_flight_destroy(f->flight);
            free(f->recent);
            free(f);
            snprintf(err, errlen, "out of memory for the flight recorder");
            return -1;
        }
        fatal_install(f, session->host, (int)session->pid);
        if (cfg->dump_signal && !dump_signal_installed) {
            struct sigaction sa;
            memset(&sa, 0, sizeof(sa));
            sa.sa_handler = on_dump_signal;
            sa.sa_flags = SA_RESTART;
            sigemptyset(&sa.sa_mask);
            dump_signal_installed = sigaction(cfg->dump_signal, &sa, &old_dump_action) == 0;
        }
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv_drainer, &ca);
    pthread_cond_init(&f->cv_done, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&f->cv_work, NULL);
    pthread_cond_init(&f->cv_turn, NULL);
    f->njobs = (unsigned)njobs;
    f->jobs = calloc(njobs, sizeof(*f->jobs));
    int ok = f->jobs != NULL;
    /* malloc'd but untouched: pages of these buffers become resident only
     * when a chunk is that large. */
    for (unsigned i = 0; ok && i < f->njobs; i++) {
        f->jobs[i].raw = malloc(raw_cap);
        f->jobs[i].raw_cap = raw_cap;
        ok = f->jobs[i].raw != NULL;
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory for the flusher's chunk buffers");
        free_flusher(f);
        return -1;
    }

    int rc = 0;
    for (f->nworkers = 0; f->nworkers < nw; f->nworkers++)
        if (nsc_bg_thread_start(&f->workers[f->nworkers], cfg, compressor_main, f, "ncclscope-zstd"))
            break;
    if (f->nworkers == 0)
        rc = EAGAIN;
    f->ndrainers = drainers_for(cfg);
    if (f->njobs < 2 * f->ndrainers + 1)
        f->ndrainers = f->njobs > 3 ? (f->njobs - 1) / 2 : 1; /* each holds a job while filling */
    unsigned started = 0;
    while (rc == 0 && started < f->ndrainers) {
        f->drainers[started].f = f;
        f->drainers[started].index = started;
        rc = nsc_bg_thread_start(&f->drainers[started].thread, cfg, drainer_main, &f->drainers[started],
                                 "ncclscope-drain");
        if (rc == 0)
            started++;
    }
    if (rc != 0) {
        /* Whatever started stops at once (drainers cover rings by index
         * modulo their planned number: fewer cannot run). */
        pthread_mutex_lock(&f->mu);
        f->abandoned = 1;
        pthread_cond_broadcast(&f->cv_drainer);
        pthread_cond_broadcast(&f->cv_turn);
        pthread_cond_broadcast(&f->cv_work);
        pthread_mutex_unlock(&f->mu);
        for (unsigned i = 0; i < started; i++)
            pthread_join(f->drainers[i].thread, NULL);
        for (unsigned i = 0; i < f->nworkers; i++)
            pthread_join(f->workers[i], NULL);
        free_flusher(f);
        snprintf(err, errlen, "cannot start the flusher threads: %s", strerror(rc));
        return -1;
    }
    F = f;
    return 0;
}

/* Keeps the library mapped for threads left behind (dlclose would unmap
 * the code they run). */
static void pin_library(void) {
    Dl_info info;
    if (dladdr((void *)&pin_library, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

int nsc_flusher_stop(void) {
    struct flusher *f = F;
    if (!f)
        return 1;
    fatal_uninstall();
    F = NULL;
    struct timespec dl;
    deadline_after(&dl, (uint64_t)f->cfg.exit_wait_ms * 1000ull);
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->cv_drainer);
    while (!f->io_done)
        if (pthread_cond_timedwait(&f->cv_done, &f->mu, &dl) == ETIMEDOUT)
            break;
    if (f->io_done) {
        pthread_mutex_unlock(&f->mu);
        for (unsigned i = 0; i < f->ndrainers; i++)
            pthread_join(f->drainers[i].thread, NULL);
        for (unsigned i = 0; i < f->nworkers; i++)
            pthread_join(f->workers[i], NULL);
        uint64_t lost = atomic_load(&f->lost_write);
        if (lost)
            nsc_log_warn("ncclscope: %llu records could not be written to %s (last error: %s)",
                         (unsigned long long)lost, f->w.fd >= 0 ? f->w.path : f->cfg.dir,
                         strerror(atomic_load(&f->write_errno)));
        nsc_log_info("ncclscope: wrote %llu bytes to %s", (unsigned long long)f->w.bytes,
                     f->w.fd >= 0 ? f->w.path : f->cfg.dir);
        free_flusher(f);
        return 1;
    }
    /* The disk did not let us finish in time. Leave: the drainers exit at
     * once, compressors when they next look (the one in write(2) when the
     * disk lets it return); what the jobs and the rings still hold is
     * counted as lost. */
    f->abandoned = 1;
    pthread_cond_broadcast(&f->cv_drainer);
    pthread_cond_broadcast(&f->cv_work);
    pthread_cond_broadcast(&f->cv_turn);
    struct timespec dl2;
    deadline_after(&dl2, 200000);
    while (f->drainers_done < f->ndrainers)
        if (pthread_cond_timedwait(&f->cv_done, &f->mu, &dl2) == ETIMEDOUT)
            break;
    uint64_t lost = 0; /* jobs sealed, filling or being written */
    for (unsigned i = 0; i < f->njobs; i++)
        if (f->jobs[i].state != J_FREE)
            lost += f->jobs[i].records;
    int drainers_gone = f->drainers_done == f->ndrainers;
    pthread_mutex_unlock(&f->mu);
    if (drainers_gone) {
        /* We are the rings' only consumer now: empty them, so a later
         * session starts clean. */
        for (unsigned i = 0; i < f->ndrainers; i++)
            pthread_join(f->drainers[i].thread, NULL);
        uint32_t n = nsc_thread_count();
        for (uint32_t i = 0; i < n; i++) {
            struct nsc_thread *t = nsc_thread_at(i);
            uint64_t pos, k = ring_readable(&t->ring, &pos);
            if (k)
                ring_consume(&t->ring, pos, k);
            lost += k;
        }
    }
    atomic_fetch_add(&f->lost_exit, lost);
    pin_library();
    nsc_log_warn("ncclscope: the trace in %s did not finish within NCCLSCOPE_EXIT_WAIT_MS=%u ms "
                 "(disk stalled?); %llu records not written, %llu lost to write errors",
                 f->cfg.dir, f->cfg.exit_wait_ms, (unsigned long long)lost,
                 (unsigned long long)atomic_load(&f->lost_write));
    /* f is left allocated: the threads still running read it. */
    return 0;
}
