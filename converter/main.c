// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - the ncclscope command: a table of commands (commands.h), each
 * with its name, its function and its usage; `help` and `version` here.
 * Exit codes: commands.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli_opts.h"
#include "commands.h"
#include "trace_format.h"
#include "version.h"

static void usage(FILE *f) {
    fprintf(f,
            "ncclscope %s - NCCL profiler traces\n"
            "\n"
            "usage:\n"
            "  ncclscope convert <files or directories...> -o trace.json[.gz] | trace.pftrace\n"
            "      [--ranks 0,2-3] [--comm HEXPREFIX|NAME] [--time FROM:TO] [--events MASK]\n"
            "      [--split MB] [--no-flows]\n"
            "      Chrome trace JSON for Perfetto (ui.perfetto.dev) or chrome://tracing,\n"
            "      all files on one timeline. '-o -' writes to standard output; .gz\n"
            "      compresses; --split starts a new file every MB (trace-000.json, ...);\n"
            "      --time is in seconds from the job's start; .pftrace writes Perfetto's\n"
            "      protobuf format instead of JSON.\n"
            "  ncclscope stats <files or directories...> [--json] [--top N] [--by-caller] [-o FILE]\n"
            "      per (comm, operation, datatype, size): count, latency p50/p99/max,\n"
            "      algbw/busbw; and the straggler table (who entered each collective last).\n"
            "      --by-caller: operations by the Python code that issued them (py_caller),\n"
            "      with their share of the communication time (docs/python.md).\n"
            "  ncclscope report <files or directories...> -o report.html\n"
            "      one self-contained HTML page: GPU time tables, GPU time per rank over\n"
            "      the job, who made whom wait (nothing fetched; a script only zooms).\n"
            "  convert, stats and report take --align auto|realtime and --max-uncertainty-us U (default\n"
            "      1000) for files from several hosts (see docs/converter.md), and -j N:\n"
            "      files read at once (default: one per processor; the output is the same).\n"
            "  ncclscope export <files or directories...> -o DIR\n"
            "      the operations, kernel channels, proxy steps, comms and losses as CSV\n"
            "      files for SQL engines (DuckDB, ClickHouse, Spark; docs/analysis.md).\n"
            "  ncclscope hang <files or directories...> [--json]\n"
            "      where a hung (killed) job's ranks diverge: exit 4 when a hang is found.\n"
            "  ncclscope info <files or directories...>\n"
            "      header, comms, per-thread record and drop counts, per file.\n"
            "  ncclscope replay --plugin <profiler .so> [--version N] <trace.nsc | recording.tsv>\n"
            "      plays a recorded callback stream into any profiler plugin, with the\n"
            "      recorded threads, order, descriptors and parent links.\n"
            "  ncclscope version\n"
            "  ncclscope help <command>   (or ncclscope <command> --help): its options;\n"
            "      convert, stats and report print per-file diagnostics with -v.\n",
            NSC_VERSION);
}

static int cmd_version(int argc, char **argv) {
    (void)argc, (void)argv;
    printf("ncclscope %s (trace format %u)\n", NSC_VERSION, NSC_FORMAT_VERSION);
    return 0;
}

static const struct nsc_command cmd_version_entry = {"version", cmd_version,
    "usage: ncclscope version\n"
    "\n"
    "The tool's version and the trace format version it writes and reads.\n"};

static int cmd_help(int argc, char **argv);

static const struct nsc_command cmd_help_entry = {"help", cmd_help,
    "usage: ncclscope help [command]\n"
    "\n"
    "The commands, or one command's usage (same as ncclscope <command> --help).\n"};

/* The commands, in the order `ncclscope help` lists them. */
static const struct nsc_command *const commands[] = {
    &nsc_cmd_convert, &nsc_cmd_info,   &nsc_cmd_replay,  &nsc_cmd_stats,   &nsc_cmd_report,
    &nsc_cmd_hang,    &nsc_cmd_export, &cmd_version_entry, &cmd_help_entry,
};

static const struct nsc_command *command_of(const char *name) {
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(commands[i]->name, name))
            return commands[i];
    return NULL;
}

/* `ncclscope help [command]` */
static int cmd_help(int argc, char **argv) {
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    const struct nsc_command *c = command_of(argv[1]);
    if (!c) {
        fprintf(stderr, "ncclscope help: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 1;
    }
    fputs(c->help, stdout);
    return 0;
}

/* What was printed on standard output must have reached it (a full disk,
 * a closed pipe, > /dev/full): otherwise exit 3 with a message. Usage
 * errors keep their 1. */
static int close_stdout(const char *cmd, int rc) {
    int bad = ferror(stdout) != 0;
    errno = 0;
    if (fflush(stdout) != 0)
        bad = 1;
    int e = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad)
        return rc;
    if (rc == 3)
        return rc; /* the command said what failed (convert -o - reports its own writes) */
    fprintf(stderr, "ncclscope %s: standard output: write failed: %s\n", cmd,
            e ? strerror(e) : "I/O error");
    return rc == 1 ? 1 : 3;
}

static int dispatch(int argc, char **argv) {
    const char *name = argv[1];
    if (!strcmp(name, "--version"))
        name = "version";
    else if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        name = "help";
    const struct nsc_command *c = command_of(name);
    if (!c) {
        fprintf(stderr, "ncclscope: unknown command '%s'\n\n", name);
        usage(stderr);
        return 1;
    }
    /* `-h` or `--help` anywhere in a command's arguments: its usage, before
     * the arguments are read (so no other error wins) */
    if (nsc_opts_want_help(argc - 2, argv + 2)) {
        fputs(c->help, stdout);
        return 0;
    }
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    return close_stdout(argv[1], dispatch(argc, argv));
}
