// SPDX-License-Identifier: Apache-2.0
/* drainer.c - the drainers: the rings' only consumers. Each packs the
 * rings whose index is its own modulo the number of drainers into chunk
 * jobs and seals a job when it is full or NCCLSCOPE_FLUSH_MS has passed
 * (engine.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "engine_int.h"
#include "event_types.h"
#include "page_pool.h"
#include "thread_state.h"


/* Opens a free job for drainer d. Returns it or NULL (all jobs are on
 * their way to the disk: leave the records in the rings). Under mu. */
static struct job *open_job(struct engine *f, struct drainer *d) {
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
    struct engine *f = d->f;
    struct job *j = d->cur;
    j->last = last;
    pthread_mutex_lock(&f->mu);
    j->state = J_QUEUED;
    pthread_cond_signal(&f->cv_work);
    pthread_mutex_unlock(&f->mu);
    d->cur = NULL;
    d->last_seal_ns = eng_now_ns();
}

static int ensure_job(struct drainer *d) {
    if (d->cur)
        return 1;
    pthread_mutex_lock(&d->f->mu);
    d->cur = open_job(d->f, d);
    pthread_mutex_unlock(&d->f->mu);
    return d->cur != NULL;
}

/* Packs what ring i holds into jobs, each record also shown to the
 * observer's record hook when its type is one it follows (`rec`, `types`:
 * taken once per pass), and each Coll START and comm finalize to the
 * progress hook (`prog`). Returns the records taken; *blocked is set when
 * no job was free for the rest. */

static uint64_t drain_ring(struct drainer *d, uint32_t i, struct nsc_thread *t, int *blocked,
                           void (*rec)(const struct nsc_rec *), uint32_t types,
                           void (*prog)(const struct nsc_rec *)) {
    struct engine *f = d->f;
    if (atomic_load_explicit(&eng_crash_dumping, memory_order_relaxed))
        return 0; /* the crash handler reads the rings now */
    uint64_t pos, n = ring_readable(&t->ring, &pos), total = 0;
    while (n > 0) {
        atomic_store(&d->in_segment, 1);
        if (atomic_load(&eng_crash_dumping)) { /* the rest is the crash handler's to read */
            atomic_store(&d->in_segment, 0);
            break;
        }
        if (!ensure_job(d)) {
            atomic_store(&d->in_segment, 0);
            *blocked = 1;
            break;
        }
        struct job *j = d->cur;
        size_t room = j->raw_cap - j->raw_len - sizeof(struct nsc_packed_segment);
        uint64_t fit = room / NSC_PACK_MAX;
        if (fit == 0 || j->raw_len >= (size_t)f->cfg.chunk_records * NSC_REC_SIZE) {
            atomic_store(&d->in_segment, 0);
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
            if (rec && ((((types >> r->h.etype) & 1) && r->h.kind >= NSC_REC_START &&
                         r->h.kind <= NSC_REC_STATE) ||
                        r->h.kind == NSC_REC_COMM_FINALIZE))
                rec(r); /* hook: an observer (live metrics) follows this type */
            if (prog && ((r->h.kind == NSC_REC_START && r->h.etype == NSC_ET_COLL) ||
                         r->h.kind == NSC_REC_COMM_FINALIZE))
                prog(r); /* hook: the suspect level's progress (watch/progress.h) */
        }
        /* Only read above; from here the producer may reuse the slots. */
        ring_consume(&t->ring, pos, take);
        struct nsc_packed_segment seg = {.thread = i, .nrecords = (uint32_t)take,
                                         .nbytes = (uint32_t)(p - seg_at - sizeof(seg))};
        memcpy(seg_at, &seg, sizeof(seg));
        j->raw_len = (size_t)(p - j->raw);
        atomic_fetch_add_explicit(&j->records, take, memory_order_relaxed);
        atomic_store(&d->in_segment, 0);
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
    /* RELAXED: the observer's hooks are set before the drainers start and
     * cleared after they are joined (engine.h). */
    void (*begin)(void) = atomic_load_explicit(&eng_hooks.pass_begin, memory_order_relaxed);
    void (*end)(void) = atomic_load_explicit(&eng_hooks.pass_end, memory_order_relaxed);
    void (*rec)(const struct nsc_rec *) = atomic_load_explicit(&eng_hooks.record, memory_order_relaxed);
    uint32_t types = atomic_load_explicit(&eng_hooks.record_types, memory_order_relaxed);
    /* ACQUIRE: set and cleared while drainers run (engine.h) */
    void (*prog)(const struct nsc_rec *) = atomic_load_explicit(&eng_hooks.progress, memory_order_acquire);
    if (begin)
        begin(); /* hook: the observer's state is this drainer's for the pass */
    for (uint32_t i = d->index; i < n && !*blocked; i += d->f->ndrainers)
        total += drain_ring(d, i, nsc_thread_at(i), blocked, rec, types, prog);
    if (end)
        end();
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
static uint64_t next_sleep_us(const struct engine *f, uint64_t got, int blocked) {
    if (blocked)
        return f->cfg.drain_us; /* woken early when a job frees */
    if ((uint64_t)page_pool_in_use() * 8 > page_pool_pages() || got > 8u * NSC_PAGE_RECORDS)
        return 0;
    return f->cfg.drain_us;
}

void *eng_drainer_main(void *arg) {
    struct drainer *d = arg;
    struct engine *f = d->f;
    d->last_seal_ns = eng_now_ns();
    uint64_t sleep_us = 0;
    pthread_mutex_lock(&f->mu);
    while (!f->stop && !f->abandoned) {
        if (sleep_us) {
            struct timespec dl;
            eng_deadline_after(&dl, sleep_us);
            pthread_cond_timedwait(&f->cv_drainer, &f->mu, &dl);
            if (f->stop || f->abandoned)
                break;
        }
        pthread_mutex_unlock(&f->mu);
        int blocked;
        uint64_t got = drain_all(d, &blocked);
        uint64_t now = eng_now_ns();
        /* At least once per flush interval: the records waiting, and from
         * drainer 0 also an empty job, which carries strings, comms and
         * STATS to the file when nothing else does. */
        int dump_now = 0;
        if (d->index == 0 && f->mode->poll)
            dump_now = f->mode->poll(f, now); /* the mode's triggers (flight: a dump) */
        if ((dump_now || now - d->last_seal_ns >= (uint64_t)f->cfg.flush_ms * 1000000ull) &&
            ((d->cur && d->cur->raw_len) || (d->index == 0 && ensure_job(d)))) {
            seal(d, 0);
            if (d->index == 0)
                nsc_thread_reclaim_idle();
        }
        sleep_us = next_sleep_us(f, got, blocked);
        /* a dump held by the gap between dumps (triggers.c) is served at
         * the gap's end, not after a long NCCLSCOPE_DRAIN_US */
        if (d->index == 0 && f->dump_pending && sleep_us > 100000)
            sleep_us = 100000;
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
