// SPDX-License-Identifier: Apache-2.0
/* hang.c - `ncclscope hang`'s text and JSON (hang.h): what hang_model.h
 * found, printed. */
#include "hang.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "hang_model.h"
#include "json_writer.h"

/* What a ProxyOp/ProxyStep state says the proxy waits for. */
static const char *waiting_for(int state) {
    switch (state) {
    case 0: case 4: return "posted";
    case 1: case 20: return "waiting for the peer's receive";
    case 8: case 12: case 5: case 6: return "waiting for GPU";
    case 2: case 9: case 10: case 11: return "waiting for the network";
    case 3: case 7: return "done";
    case 19: return "in progress";
    default: return "no state recorded";
    }
}

static void print_ranks(FILE *f, const int *v, int n, int json) {
    if (json)
        fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, i ? (json ? ",%d" : ", %d") : "%d", v[i]);
    if (json)
        fputc(']', f);
}

static int cmp_int(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

static const char *const wait_names[5] = {"posted", "waiting for GPU", "waiting for the peer's receive",
                                          "waiting for the network", "flushing"};
static const char *const wait_keys[5] = {"posted", "gpu", "peer", "network", "flush"};

/* What most of a ProxyOp's open steps wait for ("done" when none is open). */
static const char *wd_waiting(const struct nsc_hm_proxy *p) {
    int best = -1;
    for (int k = 0; k < 5; k++)
        if (p->waiting[k] && (best < 0 || p->waiting[k] > p->waiting[best]))
            best = k;
    if (best >= 0)
        return wait_names[best];
    return p->done ? "done" : p->steps_open ? "posted" : "no step open";
}

/* The same, from a HANG block: the watchdog's in-process view. */
/* A stuck rank's first text line: where it is, its open channels and the
 * peers it waits on (source: " (watchdog)" for a HANG block's view). */
static void print_rank_line(FILE *f, const struct nsc_hm_stuck *s, const char *source, int show_channels,
                            const int *ch, int nch, const int *peers, int npeers) {
    fprintf(f, "    rank %d%s: %s", s->rank, source,
            s->stopped ? "enqueued" : "still enqueuing (Coll/P2p never stopped)");
    if (s->maybe) /* its channels say nothing: KernelCh was not asked for it */
        show_channels = 0, fputs(", not sampled (may be stuck: a later sampled one is)", f);
    if (show_channels) {
        fprintf(f, ", %u of %d channel(s) done", s->kch_done, s->nch);
        if (nch) {
            fputs(", open: ", f);
            print_ranks(f, ch, nch, 0);
        }
    }
    if (npeers) {
        fputs("; peers ", f);
        print_ranks(f, peers, npeers, 0);
    }
    fputc('\n', f);
}

static void print_watchdog_rank(FILE *f, const struct nsc_hm_stuck *s, int json) {
    int ch[64], nch = 0, peers[256], npeers = 0;
    for (int c = 0; c < 64 && c < (s->nch ? s->nch : 64); c++)
        if (!((s->ch_done >> c) & 1) && (s->nch || ((s->ch_started >> c) & 1)))
            ch[nch++] = c;
    for (uint32_t i = 0; i < s->nproxies; i++) {
        if (s->proxies[i].done)
            continue;
        int seen = 0;
        for (int k = 0; k < npeers; k++)
            seen |= peers[k] == s->proxies[i].peer;
        if (!seen && npeers < 256)
            peers[npeers++] = s->proxies[i].peer;
    }
    qsort(peers, (size_t)npeers, sizeof(int), cmp_int);
    if (json) {
        fprintf(f, "{\"rank\":%d,\"source\":\"watchdog\",\"enqueued\":%s,\"nch\":%d,"
                   "\"channels_done\":%u,\"channels\":",
                s->rank, s->stopped ? "true" : "false", s->nch, s->kch_done);
        print_ranks(f, ch, nch, 1);
        fputs(",\"peers\":", f);
        print_ranks(f, peers, npeers, 1);
        fputs(",\"proxy_ops\":[", f);
        for (uint32_t i = 0; i < s->nproxies; i++) {
            const struct nsc_hm_proxy *p = &s->proxies[i];
            fprintf(f, "%s{\"channel\":%u,\"peer\":%d,\"send\":%s,\"done\":%s,\"nsteps\":%d,"
                       "\"steps_open\":%u,\"lowest_open_step\":%d,\"steps_waiting\":{",
                    i ? "," : "", p->ch, p->peer, p->is_send ? "true" : "false",
                    p->done ? "true" : "false", p->nsteps, p->steps_open, p->lowest_open);
            for (int k = 0; k < 5; k++)
                fprintf(f, "%s\"%s\":%u", k ? "," : "", wait_keys[k], p->waiting[k]);
            fputs("},\"waiting\":", f);
            jw_print_string(f, wd_waiting(p));
            fputc('}', f);
        }
        fputs("]}", f);
        return;
    }
    print_rank_line(f, s, " (watchdog)", s->nch && s->kernel_tracked, ch, nch, peers, npeers);
    for (uint32_t i = 0; i < s->nproxies; i++) {
        const struct nsc_hm_proxy *p = &s->proxies[i];
        if (p->done)
            continue;
        fprintf(f, "      proxy ch %u %s peer %d: %s (%u step(s) open", p->ch,
                p->is_send ? "send to" : "recv from", p->peer, wd_waiting(p), p->steps_open);
        if (p->lowest_open >= 0)
            fprintf(f, ", lowest step %d", p->lowest_open);
        fprintf(f, " of %d)\n", p->nsteps);
    }
}

/* One stuck rank inside a collective: its channels, peers and proxy. */
static void print_stuck_rank(FILE *f, const struct nsc_hm_stuck *s, int json) {
    if (s->watchdog) {
        print_watchdog_rank(f, s, json);
        return;
    }
    int ch[256], nch = 0, peers[256], npeers = 0;
    for (uint32_t i = 0; i < s->nopen; i++) {
        const struct nsc_track_child *c = &s->open[i];
        if (c->etype == NSC_ET_KERNEL_CH && nch < 256)
            ch[nch++] = c->ch;
        if (c->etype == NSC_ET_PROXY_OP) {
            int seen = 0;
            for (int k = 0; k < npeers; k++)
                seen |= peers[k] == c->peer;
            if (!seen && npeers < 256)
                peers[npeers++] = c->peer;
        }
    }
    qsort(ch, (size_t)nch, sizeof(int), cmp_int);
    qsort(peers, (size_t)npeers, sizeof(int), cmp_int);
    if (json) {
        fprintf(f, "{\"rank\":%d,\"enqueued\":%s,", s->rank, s->stopped ? "true" : "false");
        if (s->maybe)
            fputs("\"sampled\":false,\"maybe_stuck\":true,", f);
        fprintf(f, "\"nch\":%d,\"channels_done\":%u,\"channels\":", s->nch, s->kch_done);
        print_ranks(f, ch, nch, 1);
        fputs(",\"peers\":", f);
        print_ranks(f, peers, npeers, 1);
        fputs(",\"proxy_ops\":[", f);
        int first = 1;
        for (uint32_t i = 0; i < s->nopen; i++) {
            const struct nsc_track_child *c = &s->open[i];
            if (c->etype != NSC_ET_PROXY_OP)
                continue;
            const char *st = c->state >= 0 ? nsc_state_name((unsigned)c->state) : NULL;
            const char *sst = c->step_state >= 0 ? nsc_state_name((unsigned)c->step_state) : NULL;
            fprintf(f, "%s{\"channel\":%u,\"peer\":%d,\"send\":%s,\"state\":", first ? "" : ",",
                    c->ch, c->peer, c->is_send ? "true" : "false");
            if (st)
                jw_print_string(f, st);
            else
                fputs("null", f);
            fprintf(f, ",\"step\":%d,\"steps_open\":%u,\"step_state\":", c->step, c->steps_open);
            if (sst)
                jw_print_string(f, sst);
            else
                fputs("null", f);
            fputs(",\"waiting\":", f);
            jw_print_string(f, waiting_for(c->step_state >= 0 ? c->step_state : c->state));
            fputc('}', f);
            first = 0;
        }
        fputs("]}", f);
        return;
    }
    print_rank_line(f, s, "", s->nch != 0, ch, nch, peers, npeers);
    for (uint32_t i = 0; i < s->nopen; i++) {
        const struct nsc_track_child *c = &s->open[i];
        if (c->etype != NSC_ET_PROXY_OP)
            continue;
        const char *sst = c->step_state >= 0 ? nsc_state_name((unsigned)c->step_state) : NULL;
        const char *st = c->state >= 0 ? nsc_state_name((unsigned)c->state) : NULL;
        fprintf(f, "      proxy ch %u %s peer %d: %s (%s", c->ch, c->is_send ? "send to" : "recv from",
                c->peer, waiting_for(c->step_state >= 0 ? c->step_state : c->state),
                sst ? sst : st ? st : "no state");
        if (c->step >= 0)
            fprintf(f, ", step %d", c->step);
        fputs(")\n", f);
    }
}


static const char *matching(const char *func) {
    return !strcmp(func, "Send") ? "Recv" : !strcmp(func, "Recv") ? "Send" : func;
}

/* What an entry waits behind (a root of the same list): JSON members after
 * the entry's others, or the text's clause. */
static void print_cause_json(FILE *f, const struct nsc_hm_cause *c, uint64_t comm, const char *name,
                             const char *func, long long seq) {
    if (c->behind < 0) {
        fputs(",\"cause\":\"root\"", f);
        return;
    }
    fprintf(f, ",\"cause\":\"behind\",\"behind\":{\"comm\":\"0x%016llx\",\"name\":",
            (unsigned long long)comm);
    jw_print_string(f, name);
    fputs(",\"op\":", f);
    jw_print_string(f, func);
    fprintf(f, seq < 0 ? ",\"seq\":null" : ",\"seq\":%lld", seq);
    fputs(",\"ranks\":", f);
    print_ranks(f, c->ranks, c->nranks, 1);
    fputc('}', f);
}

static void print_cause_text(FILE *f, const struct nsc_hm_cause *c, uint64_t comm, const char *func,
                             long long seq) {
    fprintf(f, "waiting behind comm 0x%016llx %s", (unsigned long long)comm, func);
    if (seq >= 0)
        fprintf(f, " seqNumber %lld", seq);
    fputs(c->nranks > 1 ? " on ranks " : " on rank ", f);
    print_ranks(f, c->ranks, c->nranks, 0);
}

/* The root an entry names: its comm, operation and seqNumber (-1: p2p). */
static void entry_op(const struct nsc_hm_entry *e, const char **func, long long *seq) {
    *func = e->target ? e->target->func : e->first ? e->first->func : "?";
    *seq = e->target ? (long long)e->target->seq : -1;
}

/* One stuck communicator: a JSON object (after a comma unless first) or text. */
static void report_comm(FILE *f, const struct nsc_hm_job *j, const struct nsc_hm_entry *list,
                        size_t idx, int json) {
    const struct nsc_hm_entry *e = &list[idx];
    const struct nsc_hm_entry *root = e->cause.behind >= 0 ? &list[e->cause.behind] : NULL;
    const char *rfunc = NULL;
    long long rseq = -1;
    if (root)
        entry_op(root, &rfunc, &rseq);
    uint64_t comm = e->comm;
    int nranks = e->nranks;
    if (json)
        fprintf(f, "%s{\"comm\":\"0x%016llx\",\"name\":", idx == 0 ? "" : ",", (unsigned long long)comm);
    else if (nranks > 0)
        fprintf(f, "comm 0x%016llx \"%s\" (%d ranks): ", (unsigned long long)comm, e->name, nranks);
    else
        fprintf(f, "comm 0x%016llx \"%s\" (size not recorded): ", (unsigned long long)comm, e->name);
    if (json)
        jw_print_string(f, e->name);
    const struct nsc_hm_stuck *target = e->target;
    if (target) {
        if (json) {
            fprintf(f, ",\"nranks\":%d,\"op\":", nranks);
            jw_print_string(f, target->func);
            fprintf(f, ",\"seq\":%llu,\"missing_ranks\":", (unsigned long long)target->seq);
            print_ranks(f, e->missing, e->nmissing, 1);
            fputs(",\"missing_last_seq\":[", f);
            for (int q = 0; q < e->nmissing; q++) {
                long long l = nsc_hm_last_entered(j, comm, e->missing[q], target->func);
                fprintf(f, l < 0 ? "%snull" : "%s%lld", q ? "," : "", l);
            }
            fprintf(f, "],\"all_inside\":%s,",
                    e->nmissing || e->ndone || e->nunknown ? "false" : "true");
            if (e->inferred)
                fputs("\"inferred\":true,\"completion\":\"inferred from sampled completion\",", f);
            if (e->nmaybe)
                fprintf(f, "\"maybe_stuck_ops\":%zu,", e->nmaybe);
            fputs("\"stuck_ranks\":[", f);
        } else {
            fprintf(f, "hang at %s seqNumber %llu", target->func, (unsigned long long)target->seq);
            if (root) {
                fputs(", ", f);
                print_cause_text(f, &e->cause, root->comm, rfunc, rseq);
            }
            if (e->inferred)
                fputs("\n  inferred from sampled completion: KernelCh was not sampled for it; a "
                      "later sampled collective of this comm on the stuck ranks never completed, "
                      "and some rank never entered this one",
                      f);
            else if (e->nmaybe)
                fprintf(f,
                        "\n  KernelCh sampled: %zu collective(s) of this comm enqueued since its "
                        "last completed one were not sampled and may be stuck before it",
                        e->nmaybe);
            fputs("\n  never entered it: ", f);
            for (int q = 0; q < e->nmissing; q++) {
                long long l = nsc_hm_last_entered(j, comm, e->missing[q], target->func);
                if (l < 0)
                    fprintf(f, "%srank %d (no %s at all)", q ? ", " : "", e->missing[q], target->func);
                else
                    fprintf(f, "%srank %d (last entered seqNumber %lld)", q ? ", " : "", e->missing[q], l);
            }
            if (!e->nmissing && (e->ndone || e->nunknown || root))
                fputs("none", f);
            else if (!e->nmissing)
                fputs("none (every traced rank is inside it: a transport that stopped moving, or a "
                      "job killed in the middle of it)", f);
            fputs("\n  stuck inside it:\n", f);
        }
        int k = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct nsc_hm_stuck *s = &j->stuck.v[i];
            if (s->comm != comm || s->is_p2p || s->seq != target->seq || strcmp(s->func, target->func))
                continue;
            if (json && k++)
                fputc(',', f);
            print_stuck_rank(f, s, json);
        }
    } else {
        /* Point-to-point only: who waits for whom. */
        if (json) {
            fprintf(f, ",\"nranks\":%d,\"op\":", nranks);
            jw_print_string(f, e->first ? e->first->func : "?");
            fputs(",\"seq\":null,\"missing_ranks\":", f);
            print_ranks(f, e->missing, e->nmissing, 1);
            fputs(",\"stuck_ranks\":[", f);
        } else {
            fputs("point-to-point hang", f);
            if (root) {
                fputs(", ", f);
                print_cause_text(f, &e->cause, root->comm, rfunc, rseq);
            }
            fputc('\n', f);
        }
        int k = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct nsc_hm_stuck *s = &j->stuck.v[i];
            if (s->comm != comm || s->maybe)
                continue;
            if (json && k++)
                fputc(',', f);
            print_stuck_rank(f, s, json);
        }
        if (json)
            fputs("],\"waits\":[", f);
        k = 0;
        for (size_t i = 0; i < j->stuck.n; i++) {
            const struct nsc_hm_stuck *s = &j->stuck.v[i];
            if (s->comm != comm || !s->is_p2p)
                continue;
            int posted = nsc_hm_pair_count(j, comm, s->peer, matching(s->func), s->rank) >=
                         nsc_hm_pair_count(j, comm, s->rank, s->func, s->peer);
            const char *why = !nsc_hm_traced(j, comm, s->peer) ? "the peer left no trace"
                              : posted ? "the peer posted the matching operation (both in flight)"
                                       : "the peer never posted the matching operation";
            if (json) {
                fprintf(f, "%s{\"rank\":%d,\"op\":", k++ ? "," : "", s->rank);
                jw_print_string(f, s->func);
                fprintf(f, ",\"peer\":%d,\"waits_for\":%d,\"peer_posted\":%s,\"why\":", s->peer,
                        s->peer, posted ? "true" : "false");
                jw_print_string(f, why);
                fputc('}', f);
            } else
                fprintf(f, "  rank %d %s %s %d waits for rank %d: %s %s\n", s->rank, s->func,
                        !strcmp(s->func, "Send") ? "to" : "from", s->peer, s->peer, why,
                        posted ? "" : matching(s->func));
        }
        if (!json) {
            fputs("  never posted: ", f);
            if (e->nmissing)
                print_ranks(f, e->missing, e->nmissing, 0);
            else
                fputs("none", f);
            fputc('\n', f);
        }
    }
    if (json) {
        fputs("],\"completed_ranks\":", f);
        print_ranks(f, e->done, e->ndone, 1);
        if (e->nunknown) { /* KernelCh sampled: said only then */
            fputs(",\"unknown_ranks\":", f);
            print_ranks(f, e->unknown, e->nunknown, 1);
        }
        fputs(",\"untraced_ranks\":", f);
        print_ranks(f, e->untraced, e->nuntraced, 1);
        print_cause_json(f, &e->cause, root ? root->comm : 0, root ? root->name : "", rfunc, rseq);
        fputc('}', f);
    } else {
        if (e->ndone) {
            fputs("  completed it: ", f);
            print_ranks(f, e->done, e->ndone, 0);
            fputc('\n', f);
        }
        if (e->nunknown) {
            fputs("  entered it, completion not known (KernelCh not sampled for it): ", f);
            print_ranks(f, e->unknown, e->nunknown, 0);
            fputc('\n', f);
        }
        if (e->nuntraced) {
            fputs("  ranks without a trace: ", f);
            print_ranks(f, e->untraced, e->nuntraced, 0);
            fputc('\n', f);
        }
    }
}

/* The divergences, roots first (nsc_hm_divergences): JSON array members or
 * text lines. */
static void print_divergences(FILE *f, const struct nsc_hm_div *dv, size_t n, int json) {
    for (size_t i = 0; i < n; i++) {
        const struct nsc_hm_div *d = &dv[i];
        const struct nsc_hm_div *root = d->cause.behind >= 0 ? &dv[d->cause.behind] : NULL;
        if (json) {
            fprintf(f, "%s{\"comm\":\"0x%016llx\",\"name\":", i ? "," : "",
                    (unsigned long long)d->comm);
            jw_print_string(f, d->name);
            fprintf(f, ",\"nranks\":%d,\"op\":", d->nranks);
            jw_print_string(f, d->func);
            fprintf(f, ",\"seq\":%lld,\"entered_ranks\":", d->seq);
            print_ranks(f, d->in, d->nin, 1);
            fputs(",\"missing_ranks\":", f);
            print_ranks(f, d->out, d->nout, 1);
            fputs(",\"missing_last_seq\":[", f);
            for (int q = 0; q < d->nout; q++)
                fprintf(f, d->out_last[q] < 0 ? "%snull" : "%s%lld", q ? "," : "", d->out_last[q]);
            fputc(']', f);
            print_cause_json(f, &d->cause, root ? root->comm : 0, root ? root->name : "",
                             root ? root->func : NULL, root ? root->seq : -1);
            fputc('}', f);
            continue;
        }
        char size[32];
        snprintf(size, sizeof(size), d->nranks > 0 ? "%d ranks" : "size not recorded", d->nranks);
        fprintf(f, "  comm 0x%016llx \"%s\" (%s): %s seqNumber %lld entered by %s",
                (unsigned long long)d->comm, d->name, size, d->func, d->seq,
                d->nin > 1 ? "ranks " : "rank ");
        print_ranks(f, d->in, d->nin, 0);
        fputs("; never entered by ", f);
        for (int q = 0; q < d->nout; q++) {
            if (d->out_last[q] < 0)
                fprintf(f, "%srank %d (no %s at all)", q ? ", " : "", d->out[q], d->func);
            else
                fprintf(f, "%srank %d (last entered seqNumber %lld)", q ? ", " : "", d->out[q],
                        d->out_last[q]);
        }
        if (root) {
            fputs("; ", f);
            print_cause_text(f, &d->cause, root->comm, root->func, root->seq);
        }
        fputc('\n', f);
    }
}

/* What the ranks' own suspect level reported while the job ran (HANG
 * blocks with suspects): the latest per (comm, rank), with the comm's name
 * where a file describes it. */
static void print_suspects(FILE *f, const struct nsc_hm_job *j, int json) {
    for (size_t i = 0; i < j->suspects.n; i++) {
        const struct nsc_hm_suspect *s = &j->suspects.v[i];
        const char *name = "";
        for (size_t m = 0; m < j->members.n; m++)
            if (j->members.v[m].comm == s->comm)
                name = j->members.v[m].name;
        int shown = s->nmissing < 8 ? (int)s->nmissing : 8;
        if (json) {
            fprintf(f, "%s{\"comm\":\"0x%016llx\",\"name\":", i ? "," : "",
                    (unsigned long long)s->comm);
            jw_print_string(f, name);
            fprintf(f, ",\"rank\":%d,\"nranks\":%d,\"op\":", s->rank, s->nranks);
            jw_print_string(f, s->func);
            fprintf(f, ",\"seq\":%llu,\"missing_ranks\":", (unsigned long long)s->seq);
            print_ranks(f, s->missing, shown, 1);
            fprintf(f, ",\"missing\":%u,\"known_ranks\":%u,\"waited_s\":%u,"
                       "\"suspect_seconds\":%u}",
                    s->nmissing, s->nknown, s->waited_s, s->suspect_seconds);
            continue;
        }
        if (!i)
            fprintf(f, "suspected while the job ran (each rank's own suspect level, "
                       "NCCLSCOPE_SUSPECT_SECONDS=%u; the latest per rank):\n",
                    s->suspect_seconds);
        fprintf(f, "  comm 0x%016llx \"%s\" rank %d: %s seqNumber %llu entered, not entered by "
                   "%s",
                (unsigned long long)s->comm, name, s->rank, s->func, (unsigned long long)s->seq,
                s->nmissing > 1 ? "ranks " : "rank ");
        print_ranks(f, s->missing, shown, 0);
        if (s->nmissing > (uint32_t)shown)
            fprintf(f, " and %u more", s->nmissing - (uint32_t)shown);
        fprintf(f, " %u s later (%u of %d ranks known)\n", s->waited_s, s->nknown, s->nranks);
    }
}

int nsc_hang(const char *const *files, int nfiles, int json, int jobs, FILE *out, FILE *err) {
    struct nsc_hm_job j;
    nsc_hm_read(&j, files, nfiles, jobs, err);
    struct nsc_hm_entry *ent = NULL;
    size_t ncomms = 0;
    if (nsc_hm_entries(&j, &ent, &ncomms) != 0) {
        /* not "no hang": said, and the input counts as not read whole */
        fprintf(err, "ncclscope hang: out of memory: stuck operations not reported\n");
        j.damaged = 1;
        ncomms = 0;
    }
    if (json)
        fputs("{\"hangs\":[", out);
    for (size_t k = 0; k < ncomms; k++)
        report_comm(out, &j, ent, k, json);
    /* Nothing seen stuck: where completion was not recorded, the ranks'
     * last collectives may still diverge (nsc_hm_divergences). */
    struct nsc_hm_div *dv = NULL;
    size_t ndiv = 0;
    if (!ncomms && (json || j.unrecorded_files || j.unknown_ops) &&
        nsc_hm_divergences(&j, &dv, &ndiv) != 0) {
        fprintf(err, "ncclscope hang: out of memory: divergences not looked for\n");
        j.damaged = 1;
        ndiv = 0;
    }
    if (json) {
        fputs("],\"divergences\":[", out);
        print_divergences(out, dv, ndiv, 1);
        fprintf(out, "],\"completion_unrecorded_files\":%d", j.unrecorded_files);
        if (j.suspects.n) { /* only where a rank's suspect level named one, as kernel_sampled */
            fputs(",\"suspects\":[", out);
            print_suspects(out, &j, 1);
            fputc(']', out);
        }
        if (j.sampled_ops < j.kernel_ops)
            fprintf(out,
                    ",\"kernel_sampled\":{\"sampled\":%llu,\"operations\":%llu,"
                    "\"unknown_at_end\":%llu,\"setting\":\"NCCLSCOPE_KERNEL_SAMPLE\"}",
                    (unsigned long long)j.sampled_ops, (unsigned long long)j.kernel_ops,
                    (unsigned long long)j.unknown_ops);
    } else if (!ncomms && ndiv && !j.unrecorded_files) {
        fprintf(out,
                "possible hang: no sampled operation is seen stuck, but the ranks diverge where "
                "completion is not known (KernelCh sampled: %llu of %llu operations; %llu not "
                "sampled were in flight at the end)\n",
                (unsigned long long)j.sampled_ops, (unsigned long long)j.kernel_ops,
                (unsigned long long)j.unknown_ops);
        print_divergences(out, dv, ndiv, 0);
        fputs("if the job hung, it hung at one of these (per communicator, the first "
              "collective some ranks never entered); record KernelCh for every operation "
              "(NCCLSCOPE_KERNEL_SAMPLE=1) to see whether the ranks that entered it are stuck "
              "inside it\n",
              out);
    } else if (!ncomms && j.unrecorded_files) {
        if (ndiv) {
            fprintf(out,
                    "possible hang: no operation is seen stuck, but the ranks diverge where "
                    "completion is not recorded (%d of %d file(s) record no KernelCh: there an "
                    "operation counts as completed once enqueued, unless a ProxyOp of it is "
                    "still open)\n",
                    j.unrecorded_files, nfiles);
            print_divergences(out, dv, ndiv, 0);
            fputs("if the job hung, it hung at one of these (per communicator, the first "
                  "collective some ranks never entered; those waiting behind another were "
                  "enqueued after it on the same ranks); record KernelCh "
                  "(NCCLSCOPE_EVENTS=default,kernelch) to see whether the ranks that entered "
                  "it are stuck inside it\n",
                  out);
        } else {
            fprintf(out,
                    "no hang found: no operation of %d file(s) is seen stuck (%llu operations) "
                    "and the traced ranks' collectives do not diverge; %d file(s) record no "
                    "KernelCh, where an operation counts as completed once enqueued unless a "
                    "ProxyOp of it is still open\n",
                    nfiles, (unsigned long long)j.ops, j.unrecorded_files);
        }
    }
    if (json) {
        if (j.hang_files)
            fprintf(out, ",\"watchdog\":{\"files\":%d,\"unwatched_events\":%llu,\"orphan_events\":%llu}",
                    j.hang_files, (unsigned long long)j.unwatched, (unsigned long long)j.orphans);
        fprintf(out, ",\"files\":%d,\"operations\":%llu,\"overtaken\":%llu,\"damaged\":%s}\n",
                nfiles, (unsigned long long)j.ops, (unsigned long long)j.overtaken,
                j.damaged ? "true" : "false");
    } else if (!ncomms && !j.unrecorded_files && !ndiv && j.unknown_ops) {
        fprintf(out,
                "no hang found: no sampled operation of %d file(s) is stuck (%llu operations); "
                "%llu not sampled were in flight at the end, their completion not known\n",
                nfiles, (unsigned long long)j.ops, (unsigned long long)j.unknown_ops);
    } else if (!ncomms && !j.unrecorded_files && !ndiv) {
        fprintf(out, "no hang found: every operation of %d file(s) completed (%llu operations)\n",
                nfiles, (unsigned long long)j.ops);
    }
    if (!json && j.sampled_ops < j.kernel_ops)
        fprintf(out,
                "KernelCh sampled (NCCLSCOPE_KERNEL_SAMPLE): %llu of %llu operations asked for "
                "KernelCh (GPU times and a completion of their own); the others complete when a "
                "later one of their comm does\n",
                (unsigned long long)j.sampled_ops, (unsigned long long)j.kernel_ops);
    if (!json)
        print_suspects(out, &j, 0);
    /* What the watchdogs could not see: operations that found the slab full
     * are in the records but not in the HANG blocks (hang_files: files with
     * one). */
    if (!json && j.hang_files && (j.unwatched || j.orphans))
        fprintf(out,
                "watchdog: %llu event(s) recorded but not watched (its slab was full) and %llu "
                "orphan(s) (children of operations it had retired), in the HANG blocks of %d "
                "file(s); what they did comes from the records\n",
                (unsigned long long)j.unwatched, (unsigned long long)j.orphans, j.hang_files);
    if (!json && j.overtaken)
        fprintf(out,
                "%llu operation(s) left open below a later one their rank completed (a "
                "collective: same communicator and function; a Send or Recv: a later launch of "
                "its communicator) are not counted as stuck: a lost child record (a flight "
                "window that began inside it, a KernelCh stop never delivered)\n",
                (unsigned long long)j.overtaken);
    int rc = ncomms ? 4 : ndiv ? 5 : j.damaged ? 2 : 0;
    nsc_hm_entries_free(ent, ncomms);
    nsc_hm_divergences_free(dv, ndiv);
    nsc_hm_free(&j);
    return rc;
}
