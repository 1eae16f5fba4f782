// SPDX-License-Identifier: Apache-2.0
/* cmd_info.c - `ncclscope info`: each file in turn (the README's example
 * names a job's files with a glob, or its directory); with several, a
 * header line names each (as head(1) does) and the exit status is the worst
 * of them (3 unreadable > 2 damaged > 0). One file prints what it always
 * printed, no header. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_opts.h"
#include "commands.h"
#include "info.h"
#include "inputs.h"

static const char help[] =
    "usage: ncclscope info <files or directories...>\n"
    "\n"
    "The file's header, session, communicators, per-thread record and drop counts\n"
    "and what the plugin lost, on standard output. Several files: each in turn\n"
    "after a line '==> FILE <=='.\n"
    "\n"
    "Exit: 0, 1 usage, 2 damaged input, 3 unreadable input or not a trace (the worst\n"
    "of the files).\n"
    "\n"
    "options:\n"
    "  -h, --help                this text\n";

static int run(int argc, char **argv) {
    char **inputs;
    int nin;
    if (nsc_opts_parse("info", argc, argv, NULL, 0, NULL, &inputs, &nin))
        return 1;
    if (nin == 0) {
        fprintf(stderr, "ncclscope info: expected trace files or directories\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = nsc_inputs_expand("info", inputs, nin, &files, &nfiles);
    free(inputs);
    if (rc)
        return rc;
    for (int i = 0; i < nfiles; i++) {
        if (nfiles > 1)
            printf("%s==> %s <==\n", i ? "\n" : "", files[i]);
        /* stderr's messages name the file; keep them after its header */
        fflush(stdout);
        int r = nsc_info(files[i], stdout);
        if (r > rc)
            rc = r;
    }
    nsc_inputs_free(files, nfiles);
    return rc;
}

const struct nsc_command nsc_cmd_info = {"info", run, help};
