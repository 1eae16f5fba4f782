// SPDX-License-Identifier: Apache-2.0
/* engine.c - the engine's life cycle (engine.h): the memory budget's split
 * between chunk jobs and ring pages, starting the drainers and compressors,
 * and stopping them within NCCLSCOPE_EXIT_WAIT_MS; the observers' slot. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "bg_thread.h"
#include "clock.h"
#include "counters.h"
#include "engine_int.h"
#include "lib_pin.h"
#include "log.h"
#include "page_pool.h"
#include "thread_state.h"

struct nsc_counters nsc_counters;

struct engine *eng_running; /* the running session's; NULL between sessions */
struct eng_hooks eng_hooks;

/* Each member set only where *h has one: live metrics and the watchdog fill
 * their own. RELEASE: pairs with the hang members' ACQUIRE loads (the
 * others are set before the threads that read them start). */
void nsc_engine_observe(const struct nsc_engine_hooks *h) {
    if (h->record) {
        atomic_store_explicit(&eng_hooks.record_types, h->record_types, memory_order_relaxed);
        atomic_store_explicit(&eng_hooks.record, h->record, memory_order_relaxed);
    }
    if (h->pass_begin)
        atomic_store_explicit(&eng_hooks.pass_begin, h->pass_begin, memory_order_relaxed);
    if (h->pass_end)
        atomic_store_explicit(&eng_hooks.pass_end, h->pass_end, memory_order_relaxed);
    if (h->comms)
        atomic_store_explicit(&eng_hooks.comms, h->comms, memory_order_relaxed);
    if (h->hang_take)
        atomic_store_explicit(&eng_hooks.hang_take, h->hang_take, memory_order_release);
    if (h->hang_dump)
        atomic_store_explicit(&eng_hooks.hang_dump, h->hang_dump, memory_order_release);
    if (h->progress)
        atomic_store_explicit(&eng_hooks.progress, h->progress, memory_order_release);
}

void nsc_engine_unobserve(const struct nsc_engine_hooks *h) {
    if (h->record) {
        atomic_store_explicit(&eng_hooks.record, NULL, memory_order_relaxed);
        atomic_store_explicit(&eng_hooks.record_types, 0, memory_order_relaxed);
    }
    if (h->pass_begin)
        atomic_store_explicit(&eng_hooks.pass_begin, NULL, memory_order_relaxed);
    if (h->pass_end)
        atomic_store_explicit(&eng_hooks.pass_end, NULL, memory_order_relaxed);
    if (h->comms)
        atomic_store_explicit(&eng_hooks.comms, NULL, memory_order_relaxed);
    if (h->hang_take)
        atomic_store_explicit(&eng_hooks.hang_take, NULL, memory_order_release);
    if (h->hang_dump)
        atomic_store_explicit(&eng_hooks.hang_dump, NULL, memory_order_release);
    if (h->progress)
        atomic_store_explicit(&eng_hooks.progress, NULL, memory_order_release);
}

/* Where the trace goes, for init's log line: written before the engine's
 * threads start (under the session mutex) and only read after. A thread
 * once rewrote it with the file's name when it opened the file, which raced
 * with that log line (TSan, 1,100 init/finalize cycles). */
static char path_shown[1280];

const char *nsc_engine_path(void) { return path_shown; }

int nsc_engine_request_dump(void) {
    struct engine *f = eng_running; /* read under the session mutex by the caller */
    if (!f || !f->flight)
        return -1;
    /* drainer 0 turns it into a dump (triggers.c: at most one per gap) */
    atomic_fetch_add_explicit(&f->dump_asks, 1, memory_order_release);
    nsc_engine_poke();
    return 0;
}

void nsc_engine_nccl_joined(uint32_t api_version, uint32_t event_mask) {
    struct engine *f = eng_running; /* read under the session mutex by the caller */
    if (!f)
        return;
    atomic_store_explicit(&f->nccl_mask, event_mask, memory_order_relaxed);
    /* RELEASE: eng_session_now reads the mask after seeing the version */
    atomic_store_explicit(&f->nccl_api, api_version, memory_order_release);
}

uint64_t eng_now_ns(void) { return nsc_clock_monotonic_ns(); }

void eng_deadline_after(struct timespec *ts, uint64_t us) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + us * 1000ull;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}


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

static void free_engine(struct engine *f) {
    for (unsigned i = 0; i < f->njobs; i++)
        free(f->jobs[i].raw);
    free(f->jobs);
    free(f->pending_comms);
    free(f->recent);
    nsc_flight_destroy(f->flight);
    nsc_segments_free(&f->segs);
    nsc_writer_close(&f->w);
    nsc_wproc_stop(&f->wp);
    pthread_cond_destroy(&f->cv_drainer);
    pthread_cond_destroy(&f->cv_work);
    pthread_cond_destroy(&f->cv_turn);
    pthread_cond_destroy(&f->cv_done);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static int seg_unlink(void *ctx, const char *path) { return nsc_wch_unlink(ctx, path); }

int nsc_engine_start(const struct nsc_config *cfg, const struct nsc_session *session,
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
    struct engine *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "out of memory for the engine");
        return -1;
    }
    f->cfg = *cfg;
    f->session = *session;
    nsc_writer_init(&f->w, cfg->dir, session->host, (int)session->pid, session_index,
                    cfg->zstd_level);
    snprintf(path_shown, sizeof(path_shown), "%s/%s*%s", cfg->dir, f->w.stem, NSC_FILE_SUFFIX);
    nsc_segments_init(&f->segs, (uint64_t)cfg->max_mb << 20);
    /* The writer process: from here on no thread of ours makes a
     * file-system call on the directory (writer_proto.h says why). Flight
     * mode gives it a crash area that holds a whole dump: the window, the
     * jobs and the rings, all within the memory budgets, plus the strings
     * and descriptions (virtual memory: its pages exist only in a dump). */
    char why[1400];
    uint64_t crash_cap = cfg->flight ? ((uint64_t)cfg->flight_mb + cfg->memory_mb + 64) << 20 : 0;
    if (nsc_wproc_start(&f->wp, crash_cap, why, sizeof(why)) == 0) {
        f->w.io = &f->wp.engine;
        f->segs.unlink = seg_unlink;
        f->segs.unlink_ctx = &f->wp.engine;
    }
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
            nsc_wproc_stop(&f->wp);
            free(f);
            snprintf(err, errlen, "out of memory for the flight recorder");
            return -1;
        }
        eng_fatal_install(f, session->host, (int)session->pid);
        eng_dump_signal_install(cfg);
    }
    f->mode = cfg->flight ? &eng_flight_mode : &eng_stream_mode;
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
        free_engine(f);
        return -1;
    }

    int rc = 0;
    for (f->nworkers = 0; f->nworkers < nw; f->nworkers++)
        if (nsc_bg_thread_start(&f->workers[f->nworkers], cfg, eng_compressor_main, f, "ncclscope-zstd"))
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
        rc = nsc_bg_thread_start(&f->drainers[started].thread, cfg, eng_drainer_main, &f->drainers[started],
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
        free_engine(f);
        snprintf(err, errlen, "cannot start the flusher threads: %s", strerror(rc));
        return -1;
    }
    eng_running = f;
    /* flight mode: the watcher creates the directory and looks for the
     * trigger files (triggers.c); without it only the signal, the control
     * API and the watchdog can ask for a dump */
    int wsock = f->wp.watch_sock;
    f->wp.watch_sock = -1; /* the watcher's now (which closes it), or nobody's */
    if (!f->flight && wsock >= 0)
        close(wsock);
    if (f->flight && eng_watch_start(f, cfg, wsock) != 0)
        nsc_log_warn("ncclscope: flight recorder: cannot start the thread that watches %s: dump-now "
                     "and dump-all are not served", cfg->dir);
    return 0;
}

/* Keeps the library mapped for threads left behind (dlclose would unmap
 * the code they run). */
void eng_pin_library(void) { nsc_pin_library(); }

void nsc_engine_reap_writers(void) { nsc_wproc_reap_left(); }

int nsc_engine_stop(void) {
    struct engine *f = eng_running;
    if (!f)
        return 1;
    eng_fatal_uninstall();
    eng_dump_signal_uninstall();
    eng_running = NULL;
    if (f->flight) /* the watcher first: it may still be asking for a dump */
        eng_watch_stop(f->cfg.exit_wait_ms < 1000 ? f->cfg.exit_wait_ms : 1000);
    struct timespec dl;
    eng_deadline_after(&dl, (uint64_t)f->cfg.exit_wait_ms * 1000ull);
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
        free_engine(f);
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
    eng_deadline_after(&dl2, 200000);
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
    /* the compressor waiting for the writer's answer leaves; the writer
     * does once its call returns */
    nsc_wproc_abandon(&f->wp);
    /* without a writer process, a compressor still writing puts the count
     * in the file when the disk lets it return (compressor.c, final_stats) */
    pthread_mutex_lock(&f->mu);
    f->exit_counted = 1;
    pthread_cond_broadcast(&f->cv_done);
    pthread_mutex_unlock(&f->mu);
    eng_pin_library();
    nsc_log_warn("ncclscope: the trace in %s did not finish within NCCLSCOPE_EXIT_WAIT_MS=%u ms "
                 "(disk stalled?); %llu records not written, %llu lost to write errors",
                 f->cfg.dir, f->cfg.exit_wait_ms, (unsigned long long)lost,
                 (unsigned long long)atomic_load(&f->lost_write));
    /* f is left allocated: the threads still running read it. */
    return 0;
}

/* ---- the hang suspect level's channel (engine.h) ---- */

int nsc_engine_aux_take(void) {
    struct engine *f = eng_running;
    if (!f)
        return -1;
    int ch = f->wp.aux_sock;
    f->wp.aux_sock = -1; /* the taker's now (which closes it) */
    return ch;
}

int nsc_engine_aux_replace(int ch, const char *path, const void *data, size_t n, unsigned mode) {
    struct nsc_wchan c = {.sock = ch};
    return nsc_wch_replace(&c, path, data, n, mode);
}

long nsc_engine_aux_read(int ch, const char *path, void *buf, size_t cap) {
    struct nsc_wchan c = {.sock = ch};
    return nsc_wch_read(&c, path, buf, cap);
}

long nsc_engine_aux_list(int ch, const char *dir, const char *suffix, char *buf, size_t cap,
                         uint64_t *left) {
    struct nsc_wchan c = {.sock = ch};
    return nsc_wch_list(&c, dir, suffix, buf, cap, left);
}

int nsc_engine_aux_unlink(int ch, const char *path) {
    struct nsc_wchan c = {.sock = ch};
    return nsc_wch_unlink(&c, path);
}

int nsc_engine_aux_mkdir(int ch, const char *dir) {
    struct nsc_wchan c = {.sock = ch};
    return nsc_wch_mkdir(&c, dir);
}
