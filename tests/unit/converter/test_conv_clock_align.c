// SPDX-License-Identifier: Apache-2.0
/* test_conv_clock_align.c - one timeline for the files of several hosts
 * (converter/model/clock_align.h): files of one host are not moved; another
 * host is placed by CLOCK_REALTIME, then by the collectives both completed
 * (its residual offset recovered whatever the realtime error), or by
 * realtime only when asked; a host whose collectives disagree beyond the
 * limit is refused; a file without a session is left unaligned. */
#include "check.h"
#include "clock_align.h"
#include "conv_trace.h"

static const char *const strs[] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE", NULL};
#define MASK ((1u << NSC_ET_COLL) | (1u << NSC_ET_KERNEL_CH))
#define NCOLL 200

/* Completion of collective k on the reference host's clock. */
static uint64_t done_at(int k) { return 10000 + (uint64_t)k * 1000 + 500; }

/* A rank's file: host, realtime - monotonic, and where its clock is
 * against the reference (local = reference - behind + jitter(k)). */
static void rank_file(char *path, size_t n, const char *host, int rank, int64_t real_off,
                      int64_t behind, int64_t (*jitter)(int)) {
    struct ct_trace t;
    ct_begin(&t, MASK, host, 100 + (uint32_t)rank, real_off, strs, 0xfeed, rank, 4);
    for (int k = 0; k < NCOLL; k++) {
        uint64_t end = (uint64_t)((int64_t)done_at(k) - behind + (jitter ? jitter(k) : 0));
        uint64_t id = 100 + 2 * (uint64_t)k;
        ct_coll(&t, 0, id, end - 500, (uint64_t)k, 4, 1);
        ct_rec(&t, 0, NSC_REC_STOP, NSC_ET_COLL, id, end - 490);
        ct_kernel_ch(&t, 1, id + 1, id, 0, end - 480, 100 + (uint64_t)k * 1000,
                     300 + (uint64_t)k * 1000, end);
    }
    ct_finish(&t);
    CHECK(ct_write(&t, path, n) != NULL);
    free(t.b.p);
}

static int64_t small(int k) { return (k % 3) * 10; }
static int64_t wild(int k) { return k % 2 ? 60000 : -60000; }

int main(void) {
    char a[64], a2[64], b[64], c[64];
    rank_file(a, sizeof(a), "a", 0, 0, 0, NULL);
    rank_file(a2, sizeof(a2), "a", 1, 0, 0, NULL);
    /* host b: CLOCK_REALTIME says +5000 ns; the truth is +5300 */
    rank_file(b, sizeof(b), "b", 2, 5000, 5300, small);
    rank_file(c, sizeof(c), "c", 3, 0, 0, wild);
    char err[512];
    struct nsc_align al;

    const char *same[] = {a, a2};
    CHECK(nsc_align_files(same, 2, 0, 1e3, &al, err, sizeof(err)) == 0);
    CHECK(al.nhosts == 1 && al.shift_ns[0] == 0 && al.shift_ns[1] == 0);
    CHECK(al.hosts[0].method == NSC_ALIGN_SAME_HOST);
    nsc_align_free(&al);

    const char *two[] = {a, b, a2};
    CHECK(nsc_align_files(two, 3, 0, 1e3, &al, err, sizeof(err)) == 0);
    CHECK(al.nhosts == 2 && al.host_of[0] == 0 && al.host_of[1] == 1 && al.host_of[2] == 0);
    CHECK(al.shift_ns[0] == 0 && al.shift_ns[2] == 0);
    CHECK(al.hosts[1].method == NSC_ALIGN_COLLECTIVES);
    CHECK(al.hosts[1].realtime_shift_ns == 5000);
    /* b's collectives land where a's did, to within the jitter (0-20 ns) */
    CHECK(al.shift_ns[1] >= 5280 && al.shift_ns[1] <= 5300);
    CHECK(al.hosts[1].uncertainty_ns <= 10);
    CHECK(al.hosts[1].shared >= NCOLL / 8); /* a sample of the shared ones */
    nsc_align_free(&al);

    CHECK(nsc_align_files(two, 3, 1, 1e3, &al, err, sizeof(err)) == 0); /* realtime only */
    CHECK(al.hosts[1].method == NSC_ALIGN_REALTIME && al.shift_ns[1] == 5000);
    nsc_align_free(&al);

    const char *bad[] = {a, c};
    CHECK(nsc_align_files(bad, 2, 0, 1e3, &al, err, sizeof(err)) == -1);
    CHECK(strstr(err, "cannot align host c") != NULL);
    nsc_align_free(&al);
    CHECK(nsc_align_files(bad, 2, 0, 1e9, &al, err, sizeof(err)) == 0); /* a looser limit */
    nsc_align_free(&al);

    const char *missing[] = {a, "/nonexistent/x.nsc"};
    CHECK(nsc_align_files(missing, 2, 0, 1e3, &al, err, sizeof(err)) == 0);
    CHECK(al.host_of[1] == -1 && al.shift_ns[1] == 0);
    nsc_align_free(&al);

    unlink(a);
    unlink(a2);
    unlink(b);
    unlink(c);
    return check_summary();
}
