// SPDX-License-Identifier: Apache-2.0
/* test_conv_gpu_clock.c - the GPU clock mapping (converter/model/gpu_clock.h):
 * the offset is the smallest (host STOP - GPU end) over a rank's KernelCh,
 * the median notice delay is measured from it, impossible intervals are
 * counted and not used, unfilled timers are ignored, the shift moves the
 * offset, and each comm gets its own. */
#include "check.h"
#include "conv_trace.h"
#include "gpu_clock.h"

static const char *const strs[] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE", NULL};
#define MASK ((1u << NSC_ET_COLL) | (1u << NSC_ET_KERNEL_CH))

static void one_comm(void) {
    struct ct_trace t;
    ct_begin(&t, MASK, "h", 1, 0, strs, 7, 0, 2);
    ct_coll(&t, 0, 10, 1900, 1, 4, 4);
    /* notice delays over host = GPU + 1000: 10, 0, 20 */
    ct_kernel_ch(&t, 1, 11, 10, 0, 1960, 1050, 1150, 2160);
    ct_kernel_ch(&t, 1, 12, 10, 1, 1970, 1000, 1200, 2200);
    ct_kernel_ch(&t, 1, 13, 10, 2, 1980, 1100, 1250, 2270);
    ct_kernel_ch(&t, 1, 14, 10, 3, 1990, 1300, 1290, 2300); /* end before start */
    ct_kernel_ch(&t, 1, 15, 10, 4, 1995, 0, 1290, 2310);    /* no start timer: unknown */
    ct_finish(&t);
    char path[64];
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    struct nsc_gpu_clock *g = NULL;
    uint32_t n = 0;
    CHECK(nsc_gpu_clock_scan(path, 0, &g, &n) == 0);
    CHECK(g && n >= 2 && g[1].have && !g[0].have);
    if (g && n >= 2) {
        CHECK(g[1].offset_ns == 1000);
        CHECK(g[1].kernels == 3);
        CHECK(g[1].median_delay_ns == 10);
        CHECK(g[1].impossible == 1);
    }
    free(g);
    /* onto a merged timeline 500 ns later: host times move, GPU timers do not */
    CHECK(nsc_gpu_clock_scan(path, 500, &g, &n) == 0);
    CHECK(g && n >= 2 && g[1].offset_ns == 1500 && g[1].median_delay_ns == 10);
    free(g);
    CHECK(nsc_gpu_clock_scan("/nonexistent/x.nsc", 0, &g, &n) == -1);
    unlink(path);
    free(t.b.p);
}

/* Two ranks (two GPUs) in one process: one offset each. */
static void two_comms(void) {
    struct ct_trace t;
    ct_begin(&t, MASK, "h", 1, 0, strs, 7, 0, 2);
    /* a second comm, serial 2 */
    struct nsc_comm_info c;
    memset(&c, 0, sizeof(c));
    c.serial = 2;
    c.rank = 1;
    c.nranks = 2;
    c.comm_id = 8;
    ct_block(&t.b, NSC_BLK_COMMS, &c, sizeof(c));
    ct_coll(&t, 0, 10, 1900, 1, 4, 1);
    ct_kernel_ch(&t, 1, 11, 10, 0, 1960, 1000, 1100, 2100); /* comm 1: +1000 */
    struct nsc_rec *r = ct_coll(&t, 0, 20, 1900, 1, 4, 1);
    r->h.aux = 2;
    ct_kernel_ch(&t, 1, 21, 20, 0, 1960, 100, 200, 2200); /* comm 2: +2000 */
    t.r[t.n - 3].h.aux = 2;                                /* its START */
    ct_finish(&t);
    char path[64];
    CHECK(ct_write(&t, path, sizeof(path)) != NULL);
    struct nsc_gpu_clock *g = NULL;
    uint32_t n = 0;
    CHECK(nsc_gpu_clock_scan(path, 0, &g, &n) == 0);
    CHECK(g && n >= 3 && g[1].have && g[2].have && g[1].offset_ns == 1000 &&
          g[2].offset_ns == 2000 && g[1].kernels == 1 && g[2].kernels == 1);
    free(g);
    unlink(path);
    free(t.b.p);
}

int main(void) {
    one_comm();
    two_comms();
    return check_summary();
}
