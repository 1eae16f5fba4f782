// SPDX-License-Identifier: Apache-2.0
/* clock_align.c - placing hosts on one timeline. */
#include "clock_align.h"

#include <stdlib.h>
#include <string.h>

#include "coll_track.h"
#include "hash.h"
#include "ops.h"
#include "parallel.h"
#include "trace_decode.h"

/* Completions sampled per file: collectives whose (commHash, seq) hash is
 * below a fixed threshold, so every rank samples the same collectives. */
#define SAMPLE_MAX 8192
#define SAMPLE_EVERY 4

struct sample {
    uint64_t key;  /* hash of (commHash, seq) */
    uint64_t end;  /* completion, ns on the file's realtime-shifted clock */
};

struct file_samples {
    struct sample *s;
    size_t n;
};

static void on_op(void *ud, const struct nsc_op_done *op) {
    struct file_samples *fs = ud;
    if (op->is_p2p || !op->end_ns || fs->n >= SAMPLE_MAX)
        return;
    uint64_t key = nsc_mix64(op->comm_id ^ nsc_mix64(op->seq + 1));
    if (key % SAMPLE_EVERY)
        return;
    fs->s[fs->n++] = (struct sample){key, op->end_ns};
}


static int cmp_sample(const void *a, const void *b) {
    uint64_t x = ((const struct sample *)a)->key, y = ((const struct sample *)b)->key;
    return x < y ? -1 : x > y;
}

struct pass2 {
    const char *const *files;
    struct nsc_align *al;
    struct file_samples *fs;
};

static void sample_file(void *ud, int i) {
    struct pass2 *p = ud;
    if (p->al->host_of[i] < 0)
        return;
    struct file_samples *fs = &p->fs[i];
    fs->s = malloc(SAMPLE_MAX * sizeof(struct sample));
    if (!fs->s)
        return;
    struct nsc_ops_hooks h = {.op = on_op};
    nsc_ops_pass(p->files[i], p->al->shift_ns[i], &h, fs);
    qsort(fs->s, fs->n, sizeof(struct sample), cmp_sample);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int nsc_align_files(const char *const *files, int nfiles, int mode, double max_unc,
                    struct nsc_align *al, char *err, size_t errlen) {
    memset(al, 0, sizeof(*al));
    al->nfiles = nfiles;
    al->shift_ns = calloc((size_t)nfiles + 1, sizeof(int64_t));
    al->host_of = calloc((size_t)nfiles + 1, sizeof(int));
    al->hosts = calloc((size_t)nfiles + 1, sizeof(*al->hosts));
    al->no_session = calloc((size_t)nfiles + 1, 1);
    int64_t *real_minus_mono = calloc((size_t)nfiles + 1, sizeof(int64_t));
    struct file_samples *fs = calloc((size_t)nfiles + 1, sizeof(*fs));
    if (!al->shift_ns || !al->host_of || !al->hosts || !al->no_session || !real_minus_mono || !fs) {
        snprintf(err, errlen, "out of memory");
        free(real_minus_mono);
        free(fs);
        return -1;
    }
    int rc = 0;
    /* Pass 1: each file's host and realtime - monotonic (from its session
     * block's start anchor, read without decoding the rest). */
    for (int i = 0; i < nfiles && rc == 0; i++) {
        struct nsc_decoder d;
        if (nsc_decoder_open(&d, files[i]) != NSC_OK) {
            /* Unreadable: left at shift 0 for the commands to report, so
             * the job's other files are still aligned and converted. */
            al->host_of[i] = -1;
            continue;
        }
        static const struct nsc_decode_ops none;
        struct nsc_session ss;
        while (!nsc_decoder_session(&d) && nsc_decoder_step(&d, &none, NULL))
            ; /* blocks up to the SESSION block (the first, in an intact file) */
        int got = nsc_decoder_session(&d) != NULL;
        if (got)
            ss = *nsc_decoder_session(&d);
        nsc_decoder_close(&d);
        if (!got) {
            al->no_session[i] = 1; /* said by nsc_align_print_unaligned */
            al->host_of[i] = -1;
            continue;
        }
        ss.host[sizeof(ss.host) - 1] = '\0';
        real_minus_mono[i] = (int64_t)(ss.start.real_ns - ss.start.mono_ns);
        int h;
        for (h = 0; h < al->nhosts; h++)
            if (!strcmp(al->hosts[h].name, ss.host))
                break;
        if (h == al->nhosts) {
            snprintf(al->hosts[h].name, sizeof(al->hosts[h].name), "%s", ss.host);
            al->hosts[h].method = h == 0 ? NSC_ALIGN_SAME_HOST : NSC_ALIGN_REALTIME;
            al->nhosts++;
        }
        al->host_of[i] = h;
    }
    if (rc == 0 && al->nhosts > 1) {
        /* Realtime placement relative to host 0 (its first file). */
        int ref_file = 0;
        while (ref_file < nfiles && al->host_of[ref_file] != 0)
            ref_file++;
        for (int i = 0; i < nfiles; i++) {
            int h = al->host_of[i];
            if (h < 0)
                continue;
            /* a host's files share monotonic time: use the host's first
             * file's realtime offset for all of them */
            int first = i;
            for (int j = 0; j < i; j++)
                if (al->host_of[j] == h) {
                    first = j;
                    break;
                }
            /* wrapping: damaged anchors may hold any value */
            al->shift_ns[i] = h == 0 ? 0
                                     : (int64_t)((uint64_t)real_minus_mono[first] -
                                                 (uint64_t)real_minus_mono[ref_file]);
            al->hosts[h].realtime_shift_ns = al->shift_ns[i];
        }
        if (mode == 0) {
            /* Pass 2: sampled completions of every file, on the realtime
             * placement; files several at a time (-j), each into its own
             * samples. */
            struct pass2 p2 = {files, al, fs};
            if (nsc_parallel(nfiles, nsc_jobs_default(), sample_file, NULL, &p2) != 0)
                nsc_parallel(nfiles, 1, sample_file, NULL, &p2);
            /* Per host: differences against every reference-host file. */
            for (int h = 1; h < al->nhosts && rc == 0; h++) {
                size_t cap = 1 << 16, n = 0;
                int64_t *diff = malloc(cap * sizeof(*diff));
                for (int a = 0; diff && a < nfiles; a++) {
                    if (al->host_of[a] != 0)
                        continue;
                    for (int b = 0; b < nfiles; b++) {
                        if (al->host_of[b] != h)
                            continue;
                        size_t x = 0, y = 0;
                        while (x < fs[a].n && y < fs[b].n) {
                            if (fs[a].s[x].key < fs[b].s[y].key)
                                x++;
                            else if (fs[a].s[x].key > fs[b].s[y].key)
                                y++;
                            else {
                                if (n == cap) {
                                    int64_t *g = realloc(diff, (cap *= 2) * sizeof(*diff));
                                    if (!g)
                                        break;
                                    diff = g;
                                }
                                diff[n++] = (int64_t)(fs[a].s[x].end - fs[b].s[y].end);
                                x++;
                                y++;
                            }
                        }
                    }
                }
                if (n >= 3) {
                    qsort(diff, n, sizeof(*diff), cmp_i64);
                    int64_t med = diff[n / 2];
                    for (size_t k = 0; k < n; k++) {
                        uint64_t ad = diff[k] > med ? (uint64_t)diff[k] - (uint64_t)med
                                                    : (uint64_t)med - (uint64_t)diff[k];
                        diff[k] = ad > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ad;
                    }
                    qsort(diff, n, sizeof(*diff), cmp_i64);
                    double mad = (double)diff[n / 2];
                    struct nsc_align_host *H = &al->hosts[h];
                    H->refine_ns = med;
                    H->uncertainty_ns = mad;
                    H->shared = n;
                    H->method = NSC_ALIGN_COLLECTIVES;
                    if (mad > max_unc) {
                        int fh = 0, f0 = 0;
                        while (al->host_of[fh] != h)
                            fh++;
                        while (al->host_of[f0] != 0)
                            f0++;
                        snprintf(err, errlen,
                                 "cannot align host %s (%s): its %zu collectives shared with host "
                                 "%s (%s) disagree by +-%.1f us (limit %.1f us); use --align "
                                 "realtime to place it by CLOCK_REALTIME only",
                                 H->name, files[fh], n, al->hosts[0].name, files[f0], mad / 1e3,
                                 max_unc / 1e3);
                        rc = -1;
                    }
                    for (int i = 0; i < nfiles; i++)
                        if (al->host_of[i] == h)
                            al->shift_ns[i] = (int64_t)((uint64_t)al->shift_ns[i] + (uint64_t)med);
                }
                free(diff);
            }
        }
    }
    for (int i = 0; i < nfiles; i++)
        free(fs[i].s);
    free(fs);
    free(real_minus_mono);
    return rc;
}

void nsc_align_print_unaligned(const struct nsc_align *al, const char *const *files, FILE *f) {
    for (int i = 0; al->no_session && i < al->nfiles; i++)
        if (al->no_session[i])
            fprintf(f, "ncclscope: %s: no session block: its host and clock are unknown; "
                       "left unaligned\n", files[i]);
}

void nsc_align_print(const struct nsc_align *al, FILE *f) {
    if (al->nhosts <= 1)
        return;
    fprintf(f, "clock alignment (reference host %s):\n", al->hosts[0].name);
    for (int h = 1; h < al->nhosts; h++) {
        const struct nsc_align_host *H = &al->hosts[h];
        if (H->method == NSC_ALIGN_COLLECTIVES)
            fprintf(f,
                    "  %-20s realtime %+.3f ms, refined %+.3f us from %llu shared collectives, "
                    "uncertainty +-%.3f us\n",
                    H->name, (double)H->realtime_shift_ns / 1e6, (double)H->refine_ns / 1e3,
                    (unsigned long long)H->shared, H->uncertainty_ns / 1e3);
        else
            fprintf(f,
                    "  %-20s realtime %+.3f ms only (no shared completed collective: needs KernelCh "
                    "or ProxyOp events); uncertainty = the hosts' NTP accuracy\n",
                    H->name, (double)H->realtime_shift_ns / 1e6);
    }
}

void nsc_align_free(struct nsc_align *al) {
    free(al->shift_ns);
    free(al->host_of);
    free(al->hosts);
    free(al->no_session);
    memset(al, 0, sizeof(*al));
}
