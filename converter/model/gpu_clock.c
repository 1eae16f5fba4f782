// SPDX-License-Identifier: Apache-2.0
/* gpu_clock.c - the per-rank GPU clock offset, from one pass over a file. */
#include "gpu_clock.h"

#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "id_map.h"
#include "nccl_abi.h"
#include "trace_decode.h"

/* The estimate uses the first KernelCh of a file: enough for the minimum
 * notice delay to be reached many times over, and the pre-pass then stops
 * reading instead of decoding the whole file twice. */
#define KERNELS_USED 50000
#define DELAY_SAMPLES 4096

struct kch { /* a KernelCh in flight, by id */
    uint64_t gpu_start, gpu_end;
    uint32_t serial;
};

struct scan {
    int64_t shift;
    struct nsc_id_map k; /* id -> struct kch: KernelCh started and not stopped */
    struct nsc_gpu_clock *c;
    uint32_t n;
    /* per serial: (host stop, gpu end) samples for the delay median */
    struct sample { uint64_t host, gpu; uint32_t serial; } *s;
    size_t ns;
    uint64_t total;
    int oom;
};

static struct nsc_gpu_clock *clock_of(struct scan *sc, uint32_t serial) {
    if (serial >= 1u << 20)
        return NULL;
    if (serial >= sc->n) {
        uint32_t n = serial + 16;
        if (n < sc->n * 2) /* a damaged serial far out costs one allocation, not many */
            n = sc->n * 2;
        struct nsc_gpu_clock *c = realloc(sc->c, n * sizeof(*c));
        if (!c) {
            sc->oom = 1;
            return NULL;
        }
        memset(c + sc->n, 0, (n - sc->n) * sizeof(*c));
        for (uint32_t i = sc->n; i < n; i++)
            c[i].serial = i;
        sc->c = c;
        sc->n = n;
    }
    return &sc->c[serial];
}

static void on_record(void *ud, struct nsc_decoder *d, uint32_t thread, const struct nsc_rec *r,
                      const struct nsc_rec *ext) {
    (void)thread, (void)ext;
    struct scan *sc = ud;
    if (r->h.etype != NSC_ET_KERNEL_CH)
        return;
    struct kch *k;
    switch (r->h.kind) {
    case NSC_REC_START:
        if ((k = nsc_id_map_insert(&sc->k, r->h.id, NULL)))
            *k = (struct kch){r->u.start.d.kernel_ch.ptimer, 0, r->h.aux};
        break;
    case NSC_REC_STATE:
        if ((k = nsc_id_map_find(&sc->k, r->h.id)) && r->h.aux == NSC_ABI_KERNEL_CH_STOP)
            k->gpu_end = r->u.state.arg;
        break;
    case NSC_REC_STOP: {
        struct kch *found = nsc_id_map_find(&sc->k, r->h.id);
        if (!found)
            break;
        struct kch kc = *found;
        k = &kc;
        nsc_id_map_remove_value(&sc->k, found);
        struct nsc_gpu_clock *c = clock_of(sc, k->serial);
        if (!c)
            break;
        if (!k->gpu_start || !k->gpu_end)
            break; /* a timer NCCL did not fill: unknown, not wrong */
        if (k->gpu_end <= k->gpu_start) {
            c->impossible++;
            break;
        }
        uint64_t host = nsc_shift_ns(nsc_decoder_mono_ns(d, r->h.ticks), sc->shift);
        int64_t off = (int64_t)(host - k->gpu_end);
        if (!c->have || off < c->offset_ns)
            c->offset_ns = off;
        c->have = 1;
        c->kernels++;
        if (++sc->total >= KERNELS_USED)
            nsc_decoder_request_stop(d);
        if (sc->ns < DELAY_SAMPLES)
            sc->s[sc->ns++] = (struct sample){host, k->gpu_end, k->serial};
        break;
    }
    default:
        break;
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_serial(const void *a, const void *b) {
    uint32_t x = ((const struct sample *)a)->serial, y = ((const struct sample *)b)->serial;
    return x < y ? -1 : x > y;
}

int nsc_gpu_clock_scan(const char *path, int64_t shift_ns, struct nsc_gpu_clock **out, uint32_t *n) {
    *out = NULL;
    *n = 0;
    struct scan sc;
    memset(&sc, 0, sizeof(sc));
    sc.shift = shift_ns;
    int ok = nsc_id_map_init(&sc.k, 1024, sizeof(struct kch), NSC_ID_MAP_GROW) == 0;
    sc.s = malloc(DELAY_SAMPLES * sizeof(*sc.s));
    struct nsc_decoder d;
    if (!ok || !sc.s || nsc_decoder_open(&d, path) != NSC_OK) {
        nsc_id_map_destroy(&sc.k);
        free(sc.s);
        return -1;
    }
    struct nsc_decode_ops ops = {.record = on_record};
    nsc_decoder_run(&d, &ops, &sc);
    nsc_decoder_close(&d);
    /* Median delay per serial, from the samples grouped by serial (one
     * pass: serials may be many and far apart in a damaged file). Unsigned
     * arithmetic: a damaged timer may put the difference anywhere. */
    uint64_t *tmp = malloc((sc.ns + 1) * sizeof(*tmp));
    qsort(sc.s, sc.ns, sizeof(*sc.s), cmp_serial);
    for (size_t i = 0; tmp && i < sc.ns;) {
        uint32_t s = sc.s[i].serial;
        size_t m = 0;
        for (; i < sc.ns && sc.s[i].serial == s; i++)
            tmp[m++] = sc.s[i].host - sc.s[i].gpu - (uint64_t)sc.c[s].offset_ns;
        qsort(tmp, m, sizeof(*tmp), cmp_u64);
        sc.c[s].median_delay_ns = tmp[m / 2];
    }
    free(tmp);
    nsc_id_map_destroy(&sc.k);
    free(sc.s);
    if (sc.oom) {
        free(sc.c);
        return -1;
    }
    *out = sc.c;
    *n = sc.n;
    return 0;
}
