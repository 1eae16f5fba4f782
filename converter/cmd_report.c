// SPDX-License-Identifier: Apache-2.0
/* cmd_report.c - `ncclscope report`: its options and driver (report.h
 * does the work). */
#include <stdio.h>
#include <stdlib.h>

#include "cli_align.h"
#include "cli_opts.h"
#include "cli_window.h"
#include "commands.h"
#include "inputs.h"
#include "report.h"

static const char help[] =
    "usage: ncclscope report <files or directories...> -o report.html [options]\n"
    "\n"
    "One self-contained HTML page (nothing fetched; a script only zooms): operations\n"
    "by GPU time (with its wait and transfer) then queue time, latency by size, GPU\n"
    "time per rank binned over the job with a zoomable window, who made whom wait\n"
    "(stragglers by GPU start). Operations with no completion recorded show none.\n"
    "\n"
    "options:\n"
    "  -o FILE                   where to write (required)\n"
    "  --skip-first N            leave out each rank's first N operations of every comm\n"
    "                            (warm-up: connection set-up)\n"
    "  --time FROM:TO            only what overlaps this window, seconds from the job's start\n"
    "  --align auto|realtime     clock alignment of files from several hosts\n"
    "  --max-uncertainty-us U    refuse an alignment less certain than U (1000)\n"
    "  -j N                      files read at once (default: one per processor; same output)\n"
    "  -v, --verbose             per-file diagnostics (alignment)\n"
    "  -h, --help                this text\n";

struct report_args {
    const char *out_path;
    struct nsc_window win;
    int skip_first;
    struct nsc_align_args al;
};

static const struct nsc_opt opts[] = {
    NSC_OPT_STR(NULL, 'o', struct report_args, out_path),
    NSC_OPT_WINDOW(struct report_args, win),
    NSC_OPT_INT("skip-first", 0, struct report_args, skip_first, 0, 2147483647,
                "a number of operations (0 or more)"),
    NSC_OPTS_ALIGN(struct report_args, al),
    NSC_OPTS_JOBS(struct report_args, al.jobs),
    NSC_OPTS_VERBOSE(struct report_args, al.verbose),
};

static int run(int argc, char **argv) {
    struct report_args a = {NULL, {NULL, 0, 0}, 0, NSC_ALIGN_ARGS_DEFAULT};
    char **inputs;
    int nin;
    if (nsc_opts_parse("report", argc, argv, opts, NSC_NOPTS(opts), &a, &inputs, &nin))
        return 1;
    if (!a.out_path || nin == 0) {
        fprintf(stderr, "ncclscope report: expected trace files or directories and -o report.html\n");
        free(inputs);
        return 1;
    }
    const char *out_path = a.out_path;
    char **files;
    int nfiles;
    int rc = nsc_inputs_expand("report", inputs, nin, &files, &nfiles);
    free(inputs);
    if (rc)
        return rc;
    struct nsc_align al;
    char *text = NULL;
    size_t tlen = 0;
    if (nsc_cli_align("report", files, nfiles, &a.al, &al) != 0) {
        rc = 2;
    } else {
        FILE *mem = open_memstream(&text, &tlen);
        if (mem) {
            nsc_align_print(&al, mem);
            fclose(mem);
        }
        struct nsc_report_window w = {(uint64_t)a.skip_first, a.win.arg != NULL, a.win.from,
                                      a.win.to, a.al.jobs};
        rc = nsc_report((const char *const *)files, nfiles, al.shift_ns, out_path, text, &w);
        if (rc != 3)
            fprintf(stderr, "ncclscope report: %d file(s) -> %s\n", nfiles, out_path);
    }
    free(text);
    nsc_inputs_free(files, nfiles);
    nsc_align_free(&al);
    return rc;
}

const struct nsc_command nsc_cmd_report = {"report", run, help};
