// SPDX-License-Identifier: Apache-2.0
/* cmd_export.c - `ncclscope export`: its options and driver (export.h
 * does the work). */
#include <stdio.h>
#include <stdlib.h>

#include "cli_align.h"
#include "cli_opts.h"
#include "commands.h"
#include "export.h"
#include "inputs.h"

static const char help[] =
    "usage: ncclscope export <files or directories...> -o DIR [options]\n"
    "\n"
    "The job's tables as CSV files with a header, for SQL engines (DuckDB,\n"
    "ClickHouse, Spark): per trace file (one process: a host and a rank)\n"
    "DIR/ops/<host>/rank-<R>.csv (one row per operation, the numbers of stats),\n"
    "DIR/kernel_channels/..., DIR/proxy_steps/...; for the job DIR/comms.csv,\n"
    "DIR/drops.csv (what the plugin lost, per file) and DIR/errors.csv (damage:\n"
    "file, offset). Times are ns on the job's aligned clock. Schema and queries:\n"
    "docs/analysis.md.\n"
    "\n"
    "options:\n"
    "  -o DIR                    where the files go (created; an earlier export there is\n"
    "                            replaced, a non-empty DIR without one refused)\n"
    "  --align auto|realtime     clock alignment of files from several hosts\n"
    "  --max-uncertainty-us U    refuse an alignment less certain than U (1000)\n"
    "  -h, --help                this text\n"
    "\n"
    "Exit: 0, 1 usage, 2 damaged input (the intact part is exported), 3 unreadable\n"
    "input, an input that is not a trace, or a failed write.\n";

struct export_args {
    const char *out;
    struct nsc_align_args al;
};

static const struct nsc_opt opts[] = {
    NSC_OPT_STR(NULL, 'o', struct export_args, out),
    NSC_OPTS_ALIGN(struct export_args, al),
};

static int run(int argc, char **argv) {
    struct export_args a = {NULL, NSC_ALIGN_ARGS_DEFAULT};
    char **inputs;
    int nin;
    if (nsc_opts_parse("export", argc, argv, opts, NSC_NOPTS(opts), &a, &inputs, &nin))
        return 1;
    if (!nin || !a.out) {
        fprintf(stderr, "ncclscope export: expected trace files or directories and -o DIR\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = nsc_inputs_expand("export", inputs, nin, &files, &nfiles);
    free(inputs);
    if (rc)
        return rc;
    rc = nsc_export((const char *const *)files, nfiles, a.out, a.al.mode, a.al.max_unc_us * 1e3);
    nsc_inputs_free(files, nfiles);
    return rc;
}

const struct nsc_command nsc_cmd_export = {"export", run, help};
