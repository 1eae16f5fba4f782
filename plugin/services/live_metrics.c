// SPDX-License-Identifier: Apache-2.0
/* live_metrics.c - live metrics' life cycle (live_metrics.h): made before
 * the engine starts, observing it through its hooks, freed after it
 * stopped. live_ops.c follows the records, prometheus.c writes the file. */
#include "live_metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "live_metrics_int.h"
#include "op_rules.h"

struct nsc_live *_Atomic nsc_live_on;
/* What is recorded now (control.h tells us): KernelCh in it makes new ops
 * GPU-timed; 0 is a stop. RELAXED: a statistic's mode. */
_Atomic uint32_t live_recorded_mask;

void nsc_live_set_mask(uint32_t mask) {
    atomic_store_explicit(&live_recorded_mask, mask, memory_order_relaxed);
}


static struct nsc_live *L; /* session mutex */

/* ---- life cycle ---- */

static void free_live(struct nsc_live *m) {
    nsc_id_map_destroy(&m->ops);
    nsc_id_map_destroy(&m->kids);
    free(m->fifo);
    free(m->orphans);
    free(m->series);
    free(m->comms);
    free(m);
}

/* The engine's observer hooks (engine.h): the drainers show us the records
 * of the types we follow, and the writing compressor the comm descriptions. */
static const struct nsc_engine_hooks live_hooks = {
    .record_types = NSC_LIVE_TYPES,
    .pass_begin = nsc_live_pass_begin,
    .record = live_record,
    .pass_end = nsc_live_pass_end,
    .comms = nsc_live_comms,
};

int nsc_live_create(const struct nsc_config *cfg, const struct nsc_session *s, char *err,
                    unsigned errlen) {
    if (!cfg->metrics_dir[0])
        return 0;
    struct nsc_live *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "NCCLSCOPE_METRICS_DIR: out of memory for the metrics");
        return -1;
    }
    int ops_ok = nsc_id_map_init(&m->ops, NSC_LIVE_OPS, sizeof(struct op), NSC_ID_MAP_FIXED) == 0;
    int kids_ok = nsc_id_map_init(&m->kids, NSC_LIVE_KIDS, sizeof(struct kid), NSC_ID_MAP_FIXED) == 0;
    m->fifo = calloc(NSC_LIVE_OPS, sizeof(*m->fifo));
    m->orphans = calloc(NSC_LIVE_KIDS, sizeof(*m->orphans));
    m->series = calloc(SERIES_CAP, sizeof(*m->series));
    m->comms = calloc(COMMS_CAP, sizeof(*m->comms));
    if (!ops_ok || !kids_ok || !m->fifo || !m->orphans || !m->series || !m->comms) {
        free_live(m);
        snprintf(err, errlen, "NCCLSCOPE_METRICS_DIR: out of memory for the metrics");
        return -1;
    }
    int n = snprintf(m->path, sizeof(m->path), "%s/%s-%u.prom", cfg->metrics_dir, s->host, s->pid);
    if (n < 0 || n >= (int)sizeof(m->path)) {
        free_live(m);
        snprintf(err, errlen, "NCCLSCOPE_METRICS_DIR: path too long");
        return -1;
    }
    /* mkostemp's template: node-exporter reads *.prom only, and
     * <host>-<pid>.prom.XXXXXX never matches. */
    snprintf(m->tmp, sizeof(m->tmp), "%s.XXXXXX", m->path);
    snprintf(m->host, sizeof(m->host), "%s", s->host);
    m->pid = (int)s->pid;
    m->ticks_per_sec = s->ticks_per_sec ? s->ticks_per_sec : 1000000000ull;
    atomic_store_explicit(&m->channels_known, nsc_op_channels_known((int)s->api_version),
                          memory_order_relaxed);
    /* A finalized comm's last counts stay in the file for two periods and
     * at least a minute: a collector scraping less often than we write
     * still sees them once (a short-lived comm could otherwise be shown in
     * one file only, between two scrapes, and never reach Prometheus). */
    uint64_t two = 2ull * cfg->metrics_seconds * 1000000000ull;
    m->retain_ns = two > RETAIN_MIN_NS ? two : RETAIN_MIN_NS;
    pthread_mutex_init(&m->mu, NULL);
    L = m;
    atomic_store_explicit(&nsc_live_on, m, memory_order_relaxed);
    nsc_engine_observe(&live_hooks); /* before the engine's threads start */
    return 0;
}

void nsc_live_set_api(int api_version) {
    struct nsc_live *m = L; /* under the session mutex, as create and destroy */
    if (m)
        atomic_store_explicit(&m->channels_known, nsc_op_channels_known(api_version),
                              memory_order_relaxed);
}

void nsc_live_destroy(void) {
    struct nsc_live *m = L;
    if (!m)
        return;
    L = NULL;
    nsc_engine_unobserve(&live_hooks); /* the engine's threads were joined */
    atomic_store_explicit(&nsc_live_on, NULL, memory_order_relaxed);
    pthread_mutex_destroy(&m->mu);
    free_live(m);
}

