// SPDX-License-Identifier: Apache-2.0
/* cmd_convert.c - `ncclscope convert`: its options and driver (convert.h
 * does the work). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_align.h"
#include "cli_opts.h"
#include "cli_window.h"
#include "commands.h"
#include "convert.h"
#include "event_types.h"
#include "inputs.h"
#include "sink.h"

static const char help[] =
    "usage: ncclscope convert <files or directories...> -o OUTPUT [options]\n"
    "\n"
    "All files on one timeline, for Perfetto (ui.perfetto.dev) or chrome://tracing.\n"
    "OUTPUT: trace.json, trace.json.gz (gzip), trace.pftrace (Perfetto's protobuf)\n"
    "or '-' (JSON on standard output). Directories give their *.nsc files.\n"
    "\n"
    "options:\n"
    "  -o OUTPUT                 where to write (required)\n"
    "  --ranks 0,2-3             keep these communicator ranks\n"
    "  --comm HEXPREFIX|NAME     keep one communicator (commHash prefix or name)\n"
    "  --time FROM:TO            keep this window, seconds from the job's start\n"
    "  --events MASK             keep these event types (NCCLSCOPE_EVENTS syntax)\n"
    "  --split MB                a new file every MB (trace-000.json, trace-000.pftrace, ...)\n"
    "  --no-flows                no flow arrows (parent -> child, across ranks)\n"
    "  --align auto|realtime     clock alignment of files from several hosts\n"
    "  --max-uncertainty-us U    refuse an alignment less certain than U (1000)\n"
    "  -j N                      files read at once (default: one per processor; same output)\n"
    "  -v, --verbose             per-file diagnostics (GPU clock mapping, alignment)\n"
    "  -h, --help                this text\n"
    "\n"
    "Exit: 0 ok, 1 usage, 2 damaged input (the intact parts converted), 3 output,\n"
    "unreadable input or an input that is not a trace (nothing written).\n";

#define MAX_RANKS 4096

struct convert_args {
    const char *out_path;
    int flows;
    const char *ranks_arg;
    int ranks[MAX_RANKS];
    int nranks;
    const char *comm;
    struct nsc_window time;
    uint32_t event_mask;
    double split_mb;
    struct nsc_align_args al;
};

/* "0,2,5-7" -> ranks. Returns the count, -1 (not such a list: a rank is
 * 0..INT_MAX, a range ascends) or -2 (more than cap ranks). */
static int parse_ranks(const char *s, int *out, int cap) {
    int n = 0;
    while (*s) {
        char *end;
        if (*s < '0' || *s > '9') /* strtol would take " 3" and "+3" */
            return -1;
        errno = 0;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0 || a > INT_MAX || errno == ERANGE)
            return -1;
        if (*end == '-') {
            s = end + 1;
            if (*s < '0' || *s > '9')
                return -1;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b > INT_MAX || errno == ERANGE)
                return -1;
        }
        for (long r = a; r <= b; r++) {
            if (n == cap)
                return -2;
            out[n++] = (int)r;
        }
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

static int opt_ranks(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    (void)o;
    struct convert_args *a = args;
    a->ranks_arg = v;
    a->nranks = parse_ranks(v, a->ranks, MAX_RANKS);
    if (a->nranks == -2) {
        fprintf(stderr, "ncclscope %s: --ranks keeps at most %d ranks, not '%s'\n", cmd, MAX_RANKS, v);
        return -1;
    }
    if (a->nranks <= 0) {
        fprintf(stderr, "ncclscope %s: --ranks takes a list like 0,2,4-7 of ranks 0-2147483647, not '%s'\n",
                cmd, v);
        return -1;
    }
    return 0;
}

static int opt_events(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    char err[256];
    if (nsc_mask_parse(v, (uint32_t *)((char *)args + o->off), err, sizeof(err)) != 0) {
        fprintf(stderr, "ncclscope %s: --events: %s\n", cmd, err);
        return -1;
    }
    return 0;
}

static const struct nsc_opt opts[] = {
    NSC_OPT_STR(NULL, 'o', struct convert_args, out_path),
    NSC_OPT_UNSET("no-flows", 0, struct convert_args, flows),
    NSC_OPT_FN("ranks", 0, struct convert_args, ranks_arg, opt_ranks),
    NSC_OPT_STR("comm", 0, struct convert_args, comm),
    NSC_OPT_WINDOW(struct convert_args, time),
    NSC_OPT_FN("events", 0, struct convert_args, event_mask, opt_events),
    /* at most 1e9 MB (a petabyte): mb * 1e6 fits a uint64_t */
    NSC_OPT_NUM("split", 0, struct convert_args, split_mb, 1, 1e9, "a size in MB (1 to 1e9)"),
    NSC_OPTS_ALIGN(struct convert_args, al),
    NSC_OPTS_JOBS(struct convert_args, al.jobs),
    NSC_OPTS_VERBOSE(struct convert_args, al.verbose),
};

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int run(int argc, char **argv) {
    static struct convert_args a; /* static: 16 KiB of ranks */
    memset(&a, 0, sizeof(a));
    a.flows = 1;
    a.ranks_arg = "";
    a.al = (struct nsc_align_args)NSC_ALIGN_ARGS_DEFAULT;
    char **inputs;
    int nin;
    if (nsc_opts_parse("convert", argc, argv, opts, NSC_NOPTS(opts), &a, &inputs, &nin))
        return 1;
    if (!a.out_path || nin == 0) {
        fprintf(stderr, "ncclscope convert: expected input files and -o <output.json>\n");
        free(inputs);
        return 1;
    }
    if (a.split_mb && !strcmp(a.out_path, "-")) {
        fprintf(stderr, "ncclscope convert: --split needs a file name, not standard output\n");
        free(inputs);
        return 1;
    }
    const char *out_path = a.out_path;
    struct nsc_convert_opts o;
    memset(&o, 0, sizeof(o));
    o.ranks = a.nranks ? a.ranks : NULL;
    o.nranks = a.nranks;
    o.comm = a.comm;
    if (a.time.arg) {
        o.t_from = a.time.from;
        o.t_to = a.time.to;
        /* The timeline takes t_to <= 0 for "no window": a window that ends
         * at or before the job's start selects nothing (no event ends
         * after 1e300 s) and is warned about below. */
        if (o.t_to <= 0)
            o.t_from = 1e300, o.t_to = 2e300;
    }
    o.event_mask = a.event_mask;
    o.split_bytes = (uint64_t)(a.split_mb * 1e6);
    char **files;
    int nfiles;
    int jr = nsc_inputs_expand("convert", inputs, nin, &files, &nfiles);
    free(inputs);
    if (jr)
        return jr;
    struct nsc_align al;
    if (nsc_cli_align("convert", files, nfiles, &a.al, &al) != 0) {
        nsc_inputs_free(files, nfiles);
        return 2;
    }
    o.files = (const char *const *)files;
    o.nfiles = nfiles;
    o.out_path = out_path;
    o.format = ends_with(out_path, ".pftrace") || ends_with(out_path, ".pftrace.gz") ||
                       ends_with(out_path, ".pb")
                   ? NSC_OUT_PERFETTO
                   : NSC_OUT_JSON;
    o.shift_ns = al.shift_ns;
    o.flows = a.flows;
    o.verbose = a.al.verbose;
    struct nsc_convert_result res;
    int rc = nsc_convert(&o, &res);
    char lost[200] = "";
    if (res.lost != res.drops)
        snprintf(lost, sizeof(lost),
                 ", %llu records lost by the plugin in all (%llu to write errors, %llu at exit)",
                 res.lost, res.lost_write, res.lost_exit);
    /* --split: the names written (one part is t-000.json, not t.json) */
    char where[9000];
    snprintf(where, sizeof(where), "%s", out_path);
    if (o.split_bytes && res.parts >= 1) {
        struct nsc_sink_opts so = {0};
        so.path = out_path;
        so.split_bytes = o.split_bytes;
        char first[4200], last[4200];
        nsc_sink_part_path(&so, 0, first, sizeof(first));
        nsc_sink_part_path(&so, (int)res.parts - 1, last, sizeof(last));
        if (res.parts == 1)
            snprintf(where, sizeof(where), "%s (1 part)", first);
        else
            snprintf(where, sizeof(where), "%s ... %s (%llu parts)", first, last, res.parts);
        /* Parts past ours with the same name are an earlier run's: a reader
         * of t-*.json would mix the two jobs. They are the user's files, so
         * they are named, not deleted. */
        int stale = 0;
        char p[4200], p0[4200] = "", plast[4200] = "";
        for (int k = (int)res.parts; k < 100000; k++) {
            struct stat st;
            nsc_sink_part_path(&so, k, p, sizeof(p));
            if (lstat(p, &st) != 0)
                break;
            if (!stale++)
                snprintf(p0, sizeof(p0), "%s", p);
            snprintf(plast, sizeof(plast), "%s", p);
        }
        if (stale && rc != 3)
            fprintf(stderr, "ncclscope convert: warning: %s%s%s (%d file(s)) left from an earlier run, "
                            "not written by this one: remove them before opening the parts\n",
                    p0, stale > 1 ? " ... " : "", stale > 1 ? plast : "", stale);
    }
    if (rc != 3) /* on an output error, the message said what and nothing was written */
        fprintf(stderr,
                "ncclscope convert: %d file(s), %llu events (%llu unfinished, %llu filtered out), "
                "%llu records dropped by the plugin%s%s -> %s\n",
                nfiles, res.events, res.unfinished, res.filtered, res.drops, lost,
                rc == 2 ? ", DAMAGED input (intact parts converted)" : "", where);
    /* A filter that matches nothing gives an empty trace and exit 0: say
     * which one, not only "N filtered out" */
    if (rc != 3 && o.nranks && !res.ranks_matched)
        fprintf(stderr, "ncclscope convert: warning: --ranks %s matches no communicator rank in the "
                        "inputs\n", a.ranks_arg);
    if (rc != 3)
        nsc_window_warn("convert", &a.time, res.span_s);
    if (rc != 3 && o.comm && !res.comm_matched)
        fprintf(stderr, "ncclscope convert: warning: --comm %s matches no communicator in the inputs "
                        "(a commId prefix, 0x optional, or a name)\n", o.comm);
    nsc_inputs_free(files, nfiles);
    nsc_align_free(&al);
    return rc;
}

const struct nsc_command nsc_cmd_convert = {"convert", run, help};
