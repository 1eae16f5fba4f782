// SPDX-License-Identifier: Apache-2.0
/* cmd_stats.c - `ncclscope stats`: its options and driver (stats.h does
 * the work). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_align.h"
#include "cli_opts.h"
#include "cli_window.h"
#include "commands.h"
#include "inputs.h"
#include "out_file.h"
#include "stats.h"

static const char help[] =
    "usage: ncclscope stats <files or directories...> [options]\n"
    "\n"
    "Per (communicator, operation, datatype, size): count; GPU time (KernelCh\n"
    "%globaltimer, first GPU start to last GPU end) p50/p99/max, split into wait\n"
    "(for the last rank's GPU start) and transfer where every rank has GPU times,\n"
    "queue time (enqueue to GPU start) and host time (enqueue to completion);\n"
    "algbw/busbw (nccl-tests' formulas) from the transfer time, else the GPU time,\n"
    "else the host time. Operations with no completion recorded (no KernelCh or\n"
    "ProxyOp) get no time or bandwidth. Then the stragglers: per rank by GPU start\n"
    "(late on the host or on the GPU), and per collective by enqueue.\n"
    "\n"
    "options:\n"
    "  --json                    one JSON object (keys in docs/converter.md)\n"
    "  --top N                   straggler rows (20)\n"
    "  --by-caller               operations by the Python code that issued them (py_caller;\n"
    "                            docs/python.md)\n"
    "  --skip-first N            leave out each rank's first N operations of every comm\n"
    "                            (warm-up: connection set-up)\n"
    "  --time FROM:TO            only what overlaps this window, seconds from the job's start\n"
    "  -o FILE                   write there instead of standard output\n"
    "  --align auto|realtime     clock alignment of files from several hosts\n"
    "  --max-uncertainty-us U    refuse an alignment less certain than U (1000)\n"
    "  -j N                      files read at once (default: one per processor; same output)\n"
    "  -v, --verbose             per-file diagnostics (alignment)\n"
    "  -h, --help                this text\n";

struct stats_args {
    const char *out_path;
    int json, top, by_caller;
    struct nsc_window win;
    int skip_first;
    struct nsc_align_args al;
};

static const struct nsc_opt opts[] = {
    NSC_OPT_STR(NULL, 'o', struct stats_args, out_path),
    NSC_OPT_FLAG("json", 0, struct stats_args, json),
    NSC_OPT_FLAG("by-caller", 0, struct stats_args, by_caller),
    NSC_OPT_INT("top", 0, struct stats_args, top, 0, 1000000, "a number of rows (0-1000000)"),
    NSC_OPT_WINDOW(struct stats_args, win),
    NSC_OPT_INT("skip-first", 0, struct stats_args, skip_first, 0, 2147483647,
                "a number of operations (0 or more)"),
    NSC_OPTS_ALIGN(struct stats_args, al),
    NSC_OPTS_JOBS(struct stats_args, al.jobs),
    NSC_OPTS_VERBOSE(struct stats_args, al.verbose),
};

static int run(int argc, char **argv) {
    struct stats_args a = {NULL, 0, 20, 0, {NULL, 0, 0}, 0, NSC_ALIGN_ARGS_DEFAULT};
    char **inputs;
    int nin;
    if (nsc_opts_parse("stats", argc, argv, opts, NSC_NOPTS(opts), &a, &inputs, &nin))
        return 1;
    if (nin == 0) {
        fprintf(stderr, "ncclscope stats: expected trace files or directories\n");
        free(inputs);
        return 1;
    }
    const char *out_path = a.out_path;
    char **files;
    int nfiles;
    int rc = nsc_inputs_expand("stats", inputs, nin, &files, &nfiles);
    free(inputs);
    if (rc)
        return rc;
    struct nsc_align al;
    if (nsc_cli_align("stats", files, nfiles, &a.al, &al) != 0)
        rc = 2;
    FILE *out = stdout;
    struct nsc_out of;
    char err[1200];
    if (rc == 0 && out_path && strcmp(out_path, "-")) {
        if (nsc_out_open(&of, out_path, (const char *const *)files, nfiles, err, sizeof(err)) != 0) {
            fprintf(stderr, "ncclscope stats: cannot write %s\n", err);
            rc = 3;
        } else if (!(out = fdopen(of.fd, "w"))) {
            fprintf(stderr, "ncclscope stats: cannot write %s: %s\n", out_path, strerror(errno));
            close(of.fd);
            nsc_out_finish(&of, 0, err, sizeof(err));
            rc = 3;
        }
    }
    if (rc == 0) {
        struct nsc_stats_opts so = {(const char *const *)files, nfiles, al.shift_ns, a.json, a.top, out,
                                    a.by_caller};
        so.jobs = a.al.jobs;
        so.skip_first = (uint64_t)a.skip_first;
        so.window = a.win.arg != NULL;
        so.t_from = a.win.from;
        so.t_to = a.win.to;
        rc = nsc_stats(&so);
        if (out != stdout) {
            int werr = ferror(out) || fflush(out) != 0;
            int e = errno;
            if (fclose(out) != 0 && !werr) {
                werr = 1;
                e = errno;
            }
            if (werr) {
                fprintf(stderr, "ncclscope stats: %s: write failed: %s (nothing written there)\n",
                        out_path, strerror(e));
                rc = 3;
            }
            if (nsc_out_finish(&of, !werr, err, sizeof(err)) != 0) {
                fprintf(stderr, "ncclscope stats: %s\n", err);
                rc = 3;
            }
            if (rc != 3)
                fprintf(stderr, "ncclscope stats: %d file(s) -> %s\n", nfiles, out_path);
        }
    }
    nsc_inputs_free(files, nfiles);
    nsc_align_free(&al);
    return rc;
}

const struct nsc_command nsc_cmd_stats = {"stats", run, help};
