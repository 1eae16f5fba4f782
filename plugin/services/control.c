// SPDX-License-Identifier: Apache-2.0
/* control.c - what ncclscope records now and the mask NCCL re-reads (see
 * control.h); the commands' effects, for the exported API
 * (api/control_api.c) and the control files (control_files.c). */
#include "control.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "chain.h"
#include "clock.h"
#include "event_types.h"
#include "hot_line.h"
#include "intern.h"
#include "kernel_sample.h"
#include "live_metrics.h"
#include "log.h"
#include "recorder.h"

#define NCCLSCOPE_NO_LOADER
#include "ncclscope.h"

/* Everything below is under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int running = 1;          /* start()/stop(): process-wide, kept across sessions */
static int have_override;        /* set_mask() was called: it wins over NCCLSCOPE_EVENTS */
static uint32_t override_mask;
static uint32_t session_mask;    /* recorded while running, limited to the API version */
static int api_version = 7;
static int session_open;
static int *nccl_mask[NSC_MAX_COMMS]; /* where NCCL re-reads each live comm's mask */
static _Atomic uint64_t marks;   /* marks written by this process */

static int (*dump_fn)(void); /* the session's (nsc_ctl_set_dump) */

/* fork(): held across it by the forking thread, so the child's copy is
 * never locked by a thread that does not exist there (session.c registers
 * these, in the lock order session, control, strings). */
void nsc_ctl_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void nsc_ctl_atfork_parent(void) { pthread_mutex_unlock(&lock); }
void nsc_ctl_atfork_child(void) { pthread_mutex_init(&lock, NULL); }

static void publish(void) {
    uint32_t m = running ? session_mask : 0;
    atomic_store_explicit(&nsc_ctl_record_mask, m, memory_order_relaxed);
    nsc_live_set_mask(m);
}

/* The word NCCL should read for comm slot i: what we record or'ed with what
 * its chained plugin asked for, limited to the API version; with KernelCh
 * sampled (record/kernel_sample.h) its bit is the sampler's, unless the
 * chained plugin wants every operation's. */
static int nccl_word(unsigned i) {
    uint32_t ours = running ? session_mask : 0;
    uint32_t chained = nsc_chain_active() ? nsc_chain_refresh_mask(i) : 0;
    uint32_t sampled = 0;
    if (nsc_ksample_on() && (ours & NSC_KSAMPLE_BIT) && !(chained & NSC_KSAMPLE_BIT)) {
        ours &= ~(uint32_t)NSC_KSAMPLE_BIT;
        sampled = (uint32_t)nsc_ksample_wanted_bit();
    }
    uint32_t m = nsc_mask_for_nccl(ours | chained, api_version);
    return (int)(m | (m & (1u << NSC_ET_KERNEL_PHASE) ? 0 : sampled));
}

/* Writes every live comm's NCCL mask (nccl_word). Only a value that
 * changed is stored: NCCL reads the word all the time, and it is NCCL's (a
 * global there, valid for the life of the process; a host that passes a
 * temporary to init cannot use run-time control or sampling). RELAXED:
 * NCCL re-reads it without ordering, a new mask takes effect at its next
 * read; the sampler's own stores of the KernelCh bit race with these only
 * as its stores race with each other (kernel_sample.h). */
static void write_masks(void) {
    for (unsigned i = 0; i < NSC_MAX_COMMS; i++) {
        if (!nccl_mask[i])
            continue;
        int m = nccl_word(i);
        if (m != __atomic_load_n(nccl_mask[i], __ATOMIC_RELAXED))
            __atomic_store_n(nccl_mask[i], m, __ATOMIC_RELAXED);
    }
}

uint32_t nsc_ctl_session_open(uint32_t cfg_mask, int version) {
    pthread_mutex_lock(&lock);
    api_version = version;
    session_mask = nsc_mask_for_api(have_override ? override_mask : cfg_mask, version);
    session_open = 1;
    publish();
    uint32_t m = session_mask;
    pthread_mutex_unlock(&lock);
    return m;
}

void nsc_ctl_set_dump(int (*fn)(void)) {
    pthread_mutex_lock(&lock);
    dump_fn = fn;
    pthread_mutex_unlock(&lock);
}

void nsc_ctl_session_close(void) {
    pthread_mutex_lock(&lock);
    session_open = 0;
    pthread_mutex_unlock(&lock);
}

void nsc_ctl_comm_open(struct nsc_comm *c, int *mask) {
    pthread_mutex_lock(&lock);
    nccl_mask[c - nsc_comms] = mask;
    nsc_ksample_comm_open(c, mask); /* its first operation is sampled */
    *mask = nccl_word((unsigned)(c - nsc_comms));
    pthread_mutex_unlock(&lock);
}

void nsc_ctl_comm_close(struct nsc_comm *c) {
    pthread_mutex_lock(&lock);
    nsc_ksample_comm_close(c);
    nccl_mask[c - nsc_comms] = NULL;
    pthread_mutex_unlock(&lock);
}

/* ---- the commands (api/control_api.c, control_files.c) ---- */

int nsc_ctl_start(void) {
    pthread_mutex_lock(&lock);
    running = 1;
    publish();
    write_masks();
    pthread_mutex_unlock(&lock);
    nsc_log_info("ncclscope: control: recording");
    return NCCLSCOPE_OK;
}

int nsc_ctl_stop(void) {
    pthread_mutex_lock(&lock);
    running = 0;
    publish();
    write_masks();
    pthread_mutex_unlock(&lock);
    nsc_log_info("ncclscope: control: stopped (nothing recorded until start)");
    return NCCLSCOPE_OK;
}

int nsc_ctl_set_mask(uint32_t mask) {
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

int nsc_ctl_set_events(const char *names) {
    uint32_t m;
    char why[256];
    if (!names || nsc_mask_parse(names, &m, why, sizeof(why)) != 0)
        return NCCLSCOPE_INVALID;
    return nsc_ctl_set_mask(m);
}

/* A flight-mode dump through the session's function (it takes the session
 * mutex: never called under `lock`). */
int nsc_ctl_dump(void) {
    pthread_mutex_lock(&lock);
    int (*fn)(void) = dump_fn;
    pthread_mutex_unlock(&lock);
    return fn && fn() == 0 ? NCCLSCOPE_OK : NCCLSCOPE_NOT_FLIGHT_MODE;
}

uint16_t nsc_ctl_intern_user(const char *text) {
    int first = 0;
    uint16_t id = nsc_intern_user(text, &first);
    if (first)
        nsc_log_warn("ncclscope: the string table's room for marks and Python names is full "
                     "(%u ids and %u KiB are kept for NCCL's own names); new ones read \"?\" "
                     "from now on, each counted in the trace's string_overflow",
                     NSC_INTERN_NCCL_IDS, NSC_INTERN_NCCL_TEXT >> 10);
    return id;
}

int nsc_ctl_mark(const char *text) {
    if (!text)
        return NCCLSCOPE_INVALID;
    pthread_mutex_lock(&lock);
    int open = session_open;
    pthread_mutex_unlock(&lock);
    if (!open)
        return NCCLSCOPE_NO_SESSION;
    uint64_t ticks = nsc_clock_ticks();
    uint16_t id = nsc_ctl_intern_user(text);
    uint64_t n = atomic_fetch_add_explicit(&marks, 1, memory_order_relaxed) + 1;
    nsc_record_one(nsc_thread_get(), NSC_REC_MARK, (uint64_t)NSC_MARK_ETYPE << NSC_HANDLE_ETYPE_SHIFT,
                   id, n, ticks);
    return NCCLSCOPE_OK;
}

const char *nsc_ctl_strerror(int status) {
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

void nsc_ctl_refresh_chained(void) {
    pthread_mutex_lock(&lock);
    if (nsc_chain_active()) /* a chained plugin may have changed its mask */
        write_masks();
    pthread_mutex_unlock(&lock);
}
