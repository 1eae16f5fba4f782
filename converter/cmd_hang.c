// SPDX-License-Identifier: Apache-2.0
/* cmd_hang.c - `ncclscope hang`: its options and driver (hang.h does the
 * work). Exit: 0 no hang, 1 usage, 2 damaged input and no hang, 3
 * unreadable input, 4 a hang found, 5 ranks that diverge where completion
 * was not recorded. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_align.h"
#include "cli_opts.h"
#include "commands.h"
#include "hang.h"
#include "inputs.h"

static const char help[] =
    "usage: ncclscope hang <files or directories...> [--json] [-j N]\n"
    "\n"
    "Where the ranks of a hung (killed) job diverge, from its traces alone (files\n"
    "cut by SIGKILL, flight-mode dumps): per stuck communicator, the first\n"
    "(operation, seqNumber) in flight, the ranks that never entered it, the ranks\n"
    "stuck inside with their open channels, peers and proxy steps, and for p2p who\n"
    "waits for whom (docs/converter.md, \"Finding a hang\"). Where completion was\n"
    "not recorded (no KernelCh) and nothing is seen stuck: the collectives some\n"
    "ranks entered and others never did.\n"
    "\n"
    "options:\n"
    "  --json                    {\"hangs\": [{\"comm\", \"op\", \"seq\", \"missing_ranks\",\n"
    "                            \"stuck_ranks\", ...}], \"divergences\": [...], ...}\n"
    "  -j N                      files read at once (default: one per processor;\n"
    "                            the output does not depend on it)\n"
    "  -h, --help                this text\n"
    "\n"
    "Exit: 0 no hang, 1 usage, 2 damaged input and no hang, 3 unreadable input or\n"
    "not a trace, 4 a hang was found, 5 none seen stuck but the ranks diverge where\n"
    "completion was not recorded.\n";

struct hang_args {
    int json, jobs;
};

static const struct nsc_opt opts[] = {
    NSC_OPT_FLAG("json", 0, struct hang_args, json),
    NSC_OPTS_JOBS(struct hang_args, jobs),
};

static int run(int argc, char **argv) {
    struct hang_args a = {0, 0};
    char **inputs;
    int nin;
    if (nsc_opts_parse("hang", argc, argv, opts, NSC_NOPTS(opts), &a, &inputs, &nin))
        return 1;
    if (nin == 0) {
        fprintf(stderr, "ncclscope hang: expected trace files or directories\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = nsc_inputs_expand("hang", inputs, nin, &files, &nfiles);
    free(inputs);
    if (rc)
        return rc;
    rc = nsc_hang((const char *const *)files, nfiles, a.json, a.jobs, stdout, stderr);
    nsc_inputs_free(files, nfiles);
    return rc;
}

const struct nsc_command nsc_cmd_hang = {"hang", run, help};
