// SPDX-License-Identifier: Apache-2.0
/* suspect_peers.c - the other processes' progress files against this
 * process's candidates (suspect_int.h). The suspect thread only. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "suspect_int.h"

/* ---- the file system: through the writer process when one runs ---- */

static void path_of(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", nsc_sus.dir, name);
}

int sus_io_write(const char *name, const char *text, size_t len) {
    if (nsc_sus.aux < 0)
        return nsc_pf_write(nsc_sus.dir, name, text, len);
    char path[sizeof(nsc_sus.dir) + sizeof(nsc_sus.name) + 2];
    path_of(path, sizeof(path), name);
    int rc = nsc_engine_aux_replace(nsc_sus.aux, path, text, len, 0644);
    if (rc != 0 && errno == ENOENT && nsc_engine_aux_mkdir(nsc_sus.aux, nsc_sus.dir) == 0)
        rc = nsc_engine_aux_replace(nsc_sus.aux, path, text, len, 0644);
    return rc;
}

long sus_io_read(const char *name, char *buf, size_t cap) {
    if (nsc_sus.aux < 0)
        return nsc_pf_read(nsc_sus.dir, name, buf, cap);
    char path[sizeof(nsc_sus.dir) + 256];
    path_of(path, sizeof(path), name);
    long n = nsc_engine_aux_read(nsc_sus.aux, path, buf, cap - 1);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

long sus_io_list(char *buf, size_t cap, uint64_t *left) {
    if (nsc_sus.aux < 0)
        return nsc_pf_list(nsc_sus.dir, buf, cap, left);
    return nsc_engine_aux_list(nsc_sus.aux, nsc_sus.dir, NSC_PF_SUFFIX, buf, cap, left);
}

int sus_io_unlink(const char *name) {
    char path[sizeof(nsc_sus.dir) + sizeof(nsc_sus.name) + 2];
    path_of(path, sizeof(path), name);
    return nsc_sus.aux < 0 ? unlink(path) : nsc_engine_aux_unlink(nsc_sus.aux, path);
}

/* ---- the others' files ---- */

void sus_stage_entry(void *ud, const struct nsc_pf_entry *e) {
    (void)ud;
    if (nsc_sus.nstage < STAGE_MAX)
        nsc_sus.stage[nsc_sus.nstage++] = *e;
    else
        nsc_sus.stage_full = 1;
}

/* A file longer than the stage: its last comm staged may lack lines (a
 * function missing would read as never entered), so it goes. */
void sus_stage_trim(void) {
    if (!nsc_sus.stage_full)
        return;
    while (nsc_sus.nstage && nsc_sus.stage[nsc_sus.nstage - 1].func[0])
        nsc_sus.nstage--;
    if (nsc_sus.nstage)
        nsc_sus.nstage--;
}

static void add_missing(struct cand *c, int32_t rank, uint64_t seq) {
    if (seq < c->min_seq) {
        c->min_seq = seq;
        c->nmissing = 0;
    }
    if (seq != c->min_seq)
        return; /* it entered the lower one some other rank is missing */
    /* the lowest ranks kept, ascending */
    uint32_t k = c->nmissing < NSC_HANG_SUSPECT_RANKS ? c->nmissing : NSC_HANG_SUSPECT_RANKS;
    uint32_t at = 0;
    while (at < k && c->missing[at] < rank)
        at++;
    if (at < NSC_HANG_SUSPECT_RANKS) {
        uint32_t last = k < NSC_HANG_SUSPECT_RANKS ? k : NSC_HANG_SUSPECT_RANKS - 1;
        memmove(&c->missing[at + 1], &c->missing[at], (last - at) * sizeof(c->missing[0]));
        c->missing[at] = rank;
    }
    c->nmissing++;
}

/* The staged lines of one process, whose state is as of `obs` (ticks) or
 * later: each candidate's comm members among them entered its seqNumbers,
 * or have not, SUSPECT_SECONDS after this rank did. */
void sus_compare(uint64_t obs) {
    uint64_t limit = (uint64_t)nsc_sus.seconds * nsc_sus.tps;
    for (uint32_t i = 0; i < nsc_sus.nstage; i++) {
        const struct nsc_pf_entry *e = &nsc_sus.stage[i];
        if (e->func[0])
            continue;
        for (uint32_t k = 0; k < nsc_sus.ncands; k++) {
            struct cand *c = &nsc_sus.cands[k];
            if (c->info->comm_id != e->comm_id || c->info->rank == e->rank ||
                c->info->nranks != e->nranks)
                continue;
            /* its line for this function, after the comm line */
            const struct nsc_pf_entry *f = NULL;
            for (uint32_t j = i + 1; j < nsc_sus.nstage && nsc_sus.stage[j].func[0]; j++)
                if (!strcmp(nsc_sus.stage[j].func, c->func))
                    f = &nsc_sus.stage[j];
            if (!f && !e->complete)
                continue; /* not known */
            c->nknown++;
            if (f && f->seq >= c->p->seq)
                continue; /* entered all this rank did */
            uint64_t m = f ? f->seq + 1 : c->p->first_seq;
            if (m < c->p->first_seq)
                m = c->p->first_seq;
            uint64_t t = nsc_prog_entered_by(c->p, m);
            if (t && t + limit <= obs)
                add_missing(c, e->rank, m);
        }
    }
}

static struct peer *peer_of(const char *name) {
    for (uint32_t i = 0; i < nsc_sus.npeers; i++)
        if (!strcmp(nsc_sus.peers[i].name, name))
            return &nsc_sus.peers[i];
    if (nsc_sus.npeers >= NSC_SUSPECT_PEERS)
        return NULL;
    struct peer *p = &nsc_sus.peers[nsc_sus.npeers++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    return p;
}

/* Lists the directory's progress files (the first NSC_SUSPECT_PEERS other
 * than ours; the rest counted as left out), forgetting peers gone. */
void sus_list_peers(uint64_t *left_out, uint64_t *failures) {
    for (uint32_t i = 0; i < nsc_sus.npeers; i++)
        nsc_sus.peers[i].listed = 0;
    uint64_t left = 0;
    long n = sus_io_list(nsc_sus.names, NAMES_BYTES, &left);
    if (n < 0) {
        (*failures)++;
        return;
    }
    *left_out += left;
    for (long at = 0; at < n;) {
        const char *name = nsc_sus.names + at;
        size_t len = strnlen(name, (size_t)(n - at));
        at += (long)len + 1;
        if (!nsc_pf_is_name(name) || !strcmp(name, nsc_sus.name) || len >= sizeof(nsc_sus.peers[0].name))
            continue;
        struct peer *p = peer_of(name);
        if (p)
            p->listed = 1;
        else
            (*left_out)++;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < nsc_sus.npeers; i++)
        if (nsc_sus.peers[i].listed)
            nsc_sus.peers[k++] = nsc_sus.peers[i];
    nsc_sus.npeers = k;
}

void sus_read_peers(uint64_t *failures) {
    uint64_t fresh = (uint64_t)FRESH_S * nsc_sus.tps;
    for (uint32_t i = 0; i < nsc_sus.npeers; i++) {
        struct peer *p = &nsc_sus.peers[i];
        long n = sus_io_read(p->name, nsc_sus.rbuf, NSC_PF_MAX);
        uint64_t now = nsc_clock_ticks();
        struct nsc_pf_head h;
        nsc_sus.nstage = 0;
        nsc_sus.stage_full = 0;
        if (n < 0 || nsc_pf_parse(nsc_sus.rbuf, &h, sus_stage_entry, NULL) != 0) {
            /* ENOENT: its process ended between the listing and the read */
            if (n >= 0 || errno != ENOENT)
                (*failures)++;
            continue;
        }
        if (p->seen && h.gen != p->gen)
            p->changed_after = p->seen; /* this version was written after that read */
        p->gen = h.gen;
        p->seen = now;
        sus_stage_trim();
        if (h.ok && p->changed_after && now - p->changed_after <= fresh)
            sus_compare(p->changed_after);
    }
}

