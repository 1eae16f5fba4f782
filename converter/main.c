// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - the ncclscope command: convert, info, replay.
 * Exit codes: 0 ok, 1 usage, 2 damaged input (everything intact was still
 * converted), 3 output error (including an output that is an input, and
 * standard output that cannot be written), an input that cannot be read
 * (missing, unreadable, not a regular file), or a plugin error; 4 `hang`
 * found a hang; 5 `hang` found none stuck but ranks that diverge where
 * completion was not recorded.
 */
#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_opts.h"
#include "clock_align.h"
#include "convert.h"
#include "parallel.h"
#include "hang.h"
#include "event_types.h"
#include "report.h"
#include "export.h"
#include "stats.h"
#include "info.h"
#include "out_file.h"
#include "replay.h"
#include "sink.h"
#include "trace_format.h"
#include "trace_reader.h"
#include "tsv_recording.h"
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

/* Each command's own usage, for `ncclscope <command> --help` and
 * `ncclscope help <command>` (tests/cli/expected/ holds what they print). */
static const struct cmd_help {
    const char *name, *text;
} cmd_help[] = {
    {"convert",
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
     "Exit: 0 ok, 1 usage, 2 damaged input (the intact parts converted), 3 output\n"
     "or unreadable input.\n"},
    {"stats",
     "usage: ncclscope stats <files or directories...> [options]\n"
     "\n"
     "Per (communicator, operation, datatype, size): count; GPU time (first KernelCh\n"
     "GPU start to last GPU end) p50/p99/max, queue time (enqueue to GPU start) and\n"
     "host time (enqueue to completion); algbw/busbw (nccl-tests' formulas) from the\n"
     "GPU time, or from the host time where no KernelCh was recorded (host-only).\n"
     "Then the stragglers: per rank by GPU start (late on the host or on the GPU),\n"
     "and per collective by enqueue.\n"
     "\n"
     "options:\n"
     "  --json                    one JSON object (keys in docs/converter.md)\n"
     "  --top N                   straggler rows (20)\n"
     "  --by-caller               operations by the Python code that issued them (py_caller;\n"
     "                            docs/python.md)\n"
     "  -o FILE                   write there instead of standard output\n"
     "  --align auto|realtime     clock alignment of files from several hosts\n"
     "  --max-uncertainty-us U    refuse an alignment less certain than U (1000)\n"
     "  -j N                      files read at once (default: one per processor; same output)\n"
     "  -v, --verbose             per-file diagnostics (alignment)\n"
     "  -h, --help                this text\n"},
    {"report",
     "usage: ncclscope report <files or directories...> -o report.html [options]\n"
     "\n"
     "One self-contained HTML page (nothing fetched; a script only zooms): operations\n"
     "by GPU time then queue time, latency by size, GPU time per rank binned over the\n"
     "job with a zoomable window, who made whom wait (stragglers by GPU start).\n"
     "\n"
     "options:\n"
     "  -o FILE                   where to write (required)\n"
     "  --align auto|realtime     clock alignment of files from several hosts\n"
     "  --max-uncertainty-us U    refuse an alignment less certain than U (1000)\n"
     "  -j N                      files read at once (default: one per processor; same output)\n"
     "  -v, --verbose             per-file diagnostics (alignment)\n"
     "  -h, --help                this text\n"},
    {"export",
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
     "input or a failed write.\n"},
    {"hang",
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
     "Exit: 0 no hang, 1 usage, 2 damaged input and no hang, 3 unreadable input,\n"
     "4 a hang was found, 5 none seen stuck but the ranks diverge where completion\n"
     "was not recorded.\n"},
    {"info",
     "usage: ncclscope info <files or directories...>\n"
     "\n"
     "The file's header, session, communicators, per-thread record and drop counts\n"
     "and what the plugin lost, on standard output. Several files: each in turn\n"
     "after a line '==> FILE <=='.\n"
     "\n"
     "Exit: 0, 1 usage, 2 damaged input, 3 unreadable input (the worst of the files).\n"
     "\n"
     "options:\n"
     "  -h, --help                this text\n"},
    {"replay",
     "usage: ncclscope replay --plugin <profiler .so> [--version N] <trace.nsc | recording.tsv>\n"
     "\n"
     "Plays a recorded callback stream into any NCCL profiler plugin, with the\n"
     "recorded threads, order, descriptors and parent links. Host calls happen\n"
     "now; GPU timers keep their recorded values. One input file.\n"
     "\n"
     "options:\n"
     "  --plugin FILE             the plugin to load (required)\n"
     "  --version N               the profiler API version to use, 1..7 (default: the\n"
     "                            newest the plugin exports)\n"
     "  -h, --help                this text\n"},
    {"version",
     "usage: ncclscope version\n"
     "\n"
     "The tool's version and the trace format version it writes and reads.\n"},
    {"help",
     "usage: ncclscope help [command]\n"
     "\n"
     "The commands, or one command's usage (same as ncclscope <command> --help).\n"},
};

static const struct cmd_help *help_of(const char *name) {
    for (size_t i = 0; i < sizeof(cmd_help) / sizeof(cmd_help[0]); i++)
        if (!strcmp(cmd_help[i].name, name))
            return &cmd_help[i];
    return NULL;
}

/* A command asked for its usage: `-h` or `--help` anywhere in its
 * arguments (before the arguments are read, so no other error wins). */
static int wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

static int verbose_option(const char *a) {
    return !strcmp(a, "-v") || !strcmp(a, "--verbose");
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* A directory's *.nsc entry that is not a regular file (a dangling link, a
 * FIFO, a socket, a subdirectory named x.nsc) is nothing the user named and
 * nothing a trace could be: skipped with a note, the exit status unchanged
 * (docs/converter.md, "Outputs and exit codes"). The same named on the
 * command line is refused (exit 3). A regular file that cannot be read is
 * the reader's error, wherever it was found. */
static int dir_entry_is_file(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        fprintf(stderr, "ncclscope: %s: skipped: %s%s\n", path,
                lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? "a symlink to nothing readable: " : "",
                strerror(e));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "ncclscope: %s: skipped: %s, not a trace file\n", path,
                nsc_file_kind(st.st_mode));
        return 0;
    }
    return 1;
}

/* Expands directories into their *.nsc files (sorted). */
static int expand(char **in, int n, char ***out, int *nout) {
    int cap = 16, k = 0;
    char **v = malloc((size_t)cap * sizeof(*v));
    if (!v)
        return -1;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(in[i], &st) != 0) {
            fprintf(stderr, "ncclscope: %s: %s\n", in[i], strerror(errno));
            free_list(v, k);
            return -1;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            /* A FIFO or a device could block or never end: refused. */
            fprintf(stderr, "ncclscope: %s: expected a trace file or a directory, found %s\n",
                    in[i], nsc_file_kind(st.st_mode));
            free_list(v, k);
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (k == cap && !(v = realloc(v, (size_t)(cap *= 2) * sizeof(*v))))
                return -1;
            v[k++] = strdup(in[i]);
            continue;
        }
        DIR *d = opendir(in[i]);
        if (!d) {
            fprintf(stderr, "ncclscope: %s: %s\n", in[i], strerror(errno));
            free_list(v, k);
            return -1;
        }
        int start = k;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!ends_with(de->d_name, NSC_FILE_SUFFIX))
                continue;
            if (k == cap && !(v = realloc(v, (size_t)(cap *= 2) * sizeof(*v))))
                return -1;
            size_t len = strlen(in[i]) + strlen(de->d_name) + 2;
            v[k] = malloc(len);
            snprintf(v[k], len, "%s/%s", in[i], de->d_name);
            if (!dir_entry_is_file(v[k])) {
                free(v[k]);
                continue;
            }
            k++;
        }
        closedir(d);
        qsort(v + start, (size_t)(k - start), sizeof(*v), cmp_str);
        if (k == start)
            fprintf(stderr, "ncclscope: %s: no %s files in this directory\n", in[i],
                    NSC_FILE_SUFFIX);
    }
    int twice = nsc_inputs_dedupe(v, &k);
    if (twice)
        fprintf(stderr, "ncclscope: %d input(s) named twice, read once\n", twice);
    *out = v;
    *nout = k;
    return 0;
}

/* Options every multi-file command shares. Returns 1 when argv[*i] was one. */
struct align_opts {
    int mode;          /* 0 auto, 1 realtime */
    double max_unc_ns;
    int verbose;       /* -v: per-file and per-host diagnostics */
    int jobs;          /* -j N: files read at once (0: one per processor) */
};

/* -j N or -jN: the output is the same whatever N (parallel.h). Returns 1
 * when argv[*i] was one. */
static int jobs_option(const char *cmd, int argc, char **argv, int *i, int *jobs, int *bad) {
    if (strncmp(argv[*i], "-j", 2) != 0)
        return 0;
    if (!argv[*i][2] && *i + 1 >= argc) {
        fprintf(stderr, "ncclscope %s: -j needs a value\n", cmd);
        *bad = 1;
        return 1;
    }
    const char *v = argv[*i][2] ? argv[*i] + 2 : argv[++*i];
    long n;
    if (nsc_opt_long(cmd, "-j", v, 1, 1024, "a number of files at once (1-1024)", &n) != 0) {
        *bad = 1;
    } else {
        *jobs = (int)n;
        nsc_jobs_set_default(*jobs);
    }
    return 1;
}

static int align_option(const char *cmd, int argc, char **argv, int *i, struct align_opts *a,
                        int *bad) {
    static const char *const valued[] = {"--align", "--max-uncertainty-us", NULL};
    if (verbose_option(argv[*i])) {
        a->verbose = 1;
        return 1;
    }
    if (nsc_opt_missing(cmd, argc, argv, *i, valued)) {
        *bad = 1;
        return 1;
    }
    if (strcmp(argv[*i], "--align") == 0) {
        const char *v = argv[++*i];
        if (!strcmp(v, "auto"))
            a->mode = 0;
        else if (!strcmp(v, "realtime"))
            a->mode = 1;
        else {
            fprintf(stderr, "ncclscope %s: --align takes auto or realtime, not '%s'\n", cmd, v);
            *bad = 1;
        }
        return 1;
    }
    if (strcmp(argv[*i], "--max-uncertainty-us") == 0) {
        double us;
        /* 0 would refuse every alignment of several hosts; a negative one
         * or "abc" (atof: 0) was taken silently */
        if (nsc_opt_double(cmd, "--max-uncertainty-us", argv[++*i], 1e-9, 1e12,
                           "a number of microseconds > 0", &us) != 0)
            *bad = 1;
        else
            a->max_unc_ns = us * 1e3;
        return 1;
    }
    return jobs_option(cmd, argc, argv, i, &a->jobs, bad);
}

/* Aligns the files' clocks; prints the per-host result on stderr with -v,
 * else one line when there are several hosts. */
static int align(char **files, int nfiles, const struct align_opts *ao, struct nsc_align *al,
                 const char *cmd) {
    char err[1024];
    int rc = nsc_align_files((const char *const *)files, nfiles, ao->mode, ao->max_unc_ns, al,
                             err, sizeof(err));
    nsc_align_print_unaligned(al, (const char *const *)files, stderr);
    if (rc != 0) {
        fprintf(stderr, "ncclscope %s: %s\n", cmd, err);
        nsc_align_free(al);
        return -1;
    }
    if (ao->verbose) {
        nsc_align_print(al, stderr);
    } else if (al->nhosts > 1) {
        /* A host placed by CLOCK_REALTIME alone has no measured uncertainty
         * (its 0 is "not measured", not "exact"): it is said apart, else
         * "uncertainty up to +-0.000 us" claimed a precision nobody had. */
        double worst = 0;
        int realtime_only = 0;
        for (int h = 1; h < al->nhosts; h++) {
            if (al->hosts[h].method != NSC_ALIGN_COLLECTIVES)
                realtime_only++;
            else if (al->hosts[h].uncertainty_ns > worst)
                worst = al->hosts[h].uncertainty_ns;
        }
        int refined = al->nhosts - 1 - realtime_only;
        if (!realtime_only)
            fprintf(stderr, "ncclscope %s: %d hosts aligned, uncertainty up to +-%.3f us (-v: per host)\n",
                    cmd, al->nhosts, worst / 1e3);
        else if (!refined)
            fprintf(stderr, "ncclscope %s: %d hosts placed by their realtime clocks only "
                            "(uncertainty: their NTP accuracy; -v: per host)\n",
                    cmd, al->nhosts);
        else
            fprintf(stderr, "ncclscope %s: %d hosts: %d aligned to the first by shared collectives, "
                            "uncertainty up to +-%.3f us; %d placed by the hosts' realtime clocks only "
                            "(uncertainty: their NTP accuracy; -v: per host)\n",
                    cmd, al->nhosts, refined, worst / 1e3, realtime_only);
    }
    return 0;
}

/* The job's trace files from the command line's inputs (directories
 * expanded). Returns 0, 1 (none: usage error) or 3 (unreadable input);
 * consumes `inputs`. */
static int job_files(const char *cmd, char **inputs, int nin, char ***files, int *nfiles) {
    int rc = expand(inputs, nin, files, nfiles);
    free(inputs);
    if (rc != 0)
        return 3;
    if (*nfiles == 0) {
        fprintf(stderr, "ncclscope %s: no trace files\n", cmd);
        free(*files);
        return 1;
    }
    return 0;
}

static void free_files(char **files, int n) {
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
}

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

static int cmd_convert(int argc, char **argv) {
    const char *out_path = NULL;
    char **inputs = malloc((size_t)argc * sizeof(*inputs) + 1);
    int nin = 0, bad = 0, flows = 1;
    static int ranks[4096];
    const char *ranks_arg = "";
    struct nsc_convert_opts o;
    memset(&o, 0, sizeof(o));
    struct align_opts ao = {0, 1e6, 0};
    static const char *const valued[] = {"-o", "--ranks", "--comm", "--time", "--events", "--split",
                                         NULL};
    for (int i = 0; i < argc && !bad; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (nsc_opt_missing("convert", argc, argv, i, valued))
            bad = 1;
        else if (!strcmp(a, "-o"))
            out_path = argv[++i];
        else if (!strcmp(a, "--no-flows"))
            flows = 0;
        else if (!strcmp(a, "--ranks") && v) {
            i++;
            ranks_arg = v;
            if ((o.nranks = parse_ranks(v, ranks, 4096)) == -2) {
                fprintf(stderr, "ncclscope convert: --ranks keeps at most 4096 ranks, not '%s'\n", v);
                bad = 1;
            } else if (o.nranks <= 0) {
                fprintf(stderr, "ncclscope convert: --ranks takes a list like 0,2,4-7 of ranks 0-2147483647, not '%s'\n", v);
                bad = 1;
            }
            o.ranks = ranks;
        } else if (!strcmp(a, "--comm") && v) {
            o.comm = argv[++i];
        } else if (!strcmp(a, "--time") && v) {
            i++;
            /* strict: sscanf took "1:2junk", "nan:inf" */
            const char *colon = strchr(v, ':');
            char *e1 = NULL, *e2 = NULL;
            if (colon) {
                o.t_from = strtod(v, &e1);
                o.t_to = strtod(colon + 1, &e2);
            }
            if (!colon || e1 != colon || e1 == v || *e2 || e2 == colon + 1 || !isfinite(o.t_from) ||
                !isfinite(o.t_to) || o.t_to <= o.t_from) {
                fprintf(stderr, "ncclscope convert: --time takes FROM:TO in seconds from the job's "
                                "start, TO > FROM, not %s\n", v);
                bad = 1;
            }
        } else if (!strcmp(a, "--events") && v) {
            char err[256];
            i++;
            if (nsc_mask_parse(v, &o.event_mask, err, sizeof(err)) != 0) {
                fprintf(stderr, "ncclscope convert: --events: %s\n", err);
                bad = 1;
            }
        } else if (!strcmp(a, "--split") && v) {
            i++;
            double mb;
            /* at most 1e9 MB (a petabyte): mb * 1e6 fits a uint64_t */
            if (nsc_opt_double("convert", "--split", v, 1, 1e9, "a size in MB (1 to 1e9)", &mb) != 0)
                bad = 1;
            else
                o.split_bytes = (uint64_t)(mb * 1e6);
        } else if (align_option("convert", argc, argv, &i, &ao, &bad)) {
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ncclscope convert: unknown option %s\n", a);
            bad = 1;
        } else
            inputs[nin++] = argv[i];
    }
    if (bad) {
        free(inputs);
        return 1;
    }
    if (!out_path || nin == 0) {
        fprintf(stderr, "ncclscope convert: expected input files and -o <output.json>\n");
        free(inputs);
        return 1;
    }
    if (o.split_bytes && !strcmp(out_path, "-")) {
        fprintf(stderr, "ncclscope convert: --split needs a file name, not standard output\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int jr = job_files("convert", inputs, nin, &files, &nfiles);
    if (jr)
        return jr;
    struct nsc_align al;
    if (align(files, nfiles, &ao, &al, "convert") != 0) {
        free_files(files, nfiles);
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
    o.flows = flows;
    o.verbose = ao.verbose;
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
                        "inputs\n", ranks_arg);
    if (rc != 3 && o.comm && !res.comm_matched)
        fprintf(stderr, "ncclscope convert: warning: --comm %s matches no communicator in the inputs "
                        "(a commId prefix, 0x optional, or a name)\n", o.comm);
    free_files(files, nfiles);
    nsc_align_free(&al);
    return rc;
}

static int cmd_stats(int argc, char **argv) {
    const char *out_path = NULL;
    char **inputs = malloc((size_t)argc * sizeof(*inputs) + 1);
    int nin = 0, json = 0, top = 20, bad = 0, by_caller = 0;
    struct align_opts ao = {0, 1e6, 0};
    static const char *const valued[] = {"-o", "--top", NULL};
    for (int i = 0; i < argc; i++) {
        if (nsc_opt_missing("stats", argc, argv, i, valued)) {
            bad = 1;
            break;
        } else if (strcmp(argv[i], "-o") == 0)
            out_path = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--by-caller") == 0)
            by_caller = 1;
        else if (strcmp(argv[i], "--top") == 0) {
            long n;
            if (nsc_opt_long("stats", "--top", argv[++i], 0, 1000000, "a number of rows (0-1000000)",
                             &n) != 0) {
                bad = 1;
                break;
            }
            top = (int)n;
        } else if (align_option("stats", argc, argv, &i, &ao, &bad)) {
            if (bad)
                break;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ncclscope stats: unknown option %s\n", argv[i]);
            bad = 1;
            break;
        } else
            inputs[nin++] = argv[i];
    }
    if (bad || nin == 0) {
        if (!bad)
            fprintf(stderr, "ncclscope stats: expected trace files or directories\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = job_files("stats", inputs, nin, &files, &nfiles);
    if (rc)
        return rc;
    struct nsc_align al;
    if (align(files, nfiles, &ao, &al, "stats") != 0)
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
        struct nsc_stats_opts so = {(const char *const *)files, nfiles, al.shift_ns, json, top, out,
                                    by_caller};
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
    free_files(files, nfiles);
    nsc_align_free(&al);
    return rc;
}

static int cmd_report(int argc, char **argv) {
    const char *out_path = NULL;
    char **inputs = malloc((size_t)argc * sizeof(*inputs) + 1);
    int nin = 0, bad = 0;
    struct align_opts ao = {0, 1e6, 0};
    static const char *const valued[] = {"-o", NULL};
    for (int i = 0; i < argc && !bad; i++) {
        if (nsc_opt_missing("report", argc, argv, i, valued))
            bad = 1;
        else if (strcmp(argv[i], "-o") == 0)
            out_path = argv[++i];
        else if (align_option("report", argc, argv, &i, &ao, &bad)) {
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ncclscope report: unknown option %s\n", argv[i]);
            bad = 1;
        } else
            inputs[nin++] = argv[i];
    }
    if (bad || !out_path || nin == 0) {
        if (!bad)
            fprintf(stderr, "ncclscope report: expected trace files or directories and -o report.html\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = job_files("report", inputs, nin, &files, &nfiles);
    if (rc)
        return rc;
    struct nsc_align al;
    char *text = NULL;
    size_t tlen = 0;
    if (align(files, nfiles, &ao, &al, "report") != 0) {
        rc = 2;
    } else {
        FILE *mem = open_memstream(&text, &tlen);
        if (mem) {
            nsc_align_print(&al, mem);
            fclose(mem);
        }
        rc = nsc_report((const char *const *)files, nfiles, al.shift_ns, out_path, text);
        if (rc != 3)
            fprintf(stderr, "ncclscope report: %d file(s) -> %s\n", nfiles, out_path);
    }
    free(text);
    free_files(files, nfiles);
    nsc_align_free(&al);
    return rc;
}

/* `ncclscope hang`: 0 no hang, 1 usage, 2 damaged input and no hang,
 * 3 unreadable input, 4 a hang found, 5 ranks that diverge where
 * completion was not recorded (hang.h). */
static int cmd_hang(int argc, char **argv) {
    char **inputs = malloc((size_t)argc * sizeof(*inputs) + 1);
    int nin = 0, json = 0, jobs = 0, bad = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (jobs_option("hang", argc, argv, &i, &jobs, &bad))
            ;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ncclscope hang: unknown option %s\n", argv[i]);
            free(inputs);
            return 1;
        } else
            inputs[nin++] = argv[i];
    }
    if (bad) {
        free(inputs);
        return 1;
    }
    if (nin == 0) {
        fprintf(stderr, "ncclscope hang: expected trace files or directories\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = job_files("hang", inputs, nin, &files, &nfiles);
    if (rc)
        return rc;
    rc = nsc_hang((const char *const *)files, nfiles, json, jobs, stdout, stderr);
    free_files(files, nfiles);
    return rc;
}

/* `ncclscope info`: each file in turn (the README's example names a job's
 * files with a glob, or its directory); with several, a header line names each (as head(1) does)
 * and the exit status is the worst of them (3 unreadable > 2 damaged > 0).
 * One file prints what it always printed, no header. */
static int cmd_info(int argc, char **argv) {
    char **inputs = malloc((size_t)argc * sizeof(*inputs) + 1);
    int nin = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ncclscope info: unknown option %s\n", argv[i]);
            free(inputs);
            return 1;
        }
        inputs[nin++] = argv[i];
    }
    if (nin == 0) {
        fprintf(stderr, "ncclscope info: expected trace files or directories\n");
        free(inputs);
        return 1;
    }
    char **files;
    int nfiles;
    int rc = job_files("info", inputs, nin, &files, &nfiles);
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
    free_files(files, nfiles);
    return rc;
}

static int cmd_replay(int argc, char **argv) {
    const char *plugin = NULL, *input = NULL;
    int version = 0;
    static const char *const valued[] = {"--plugin", "--version", NULL};
    for (int i = 0; i < argc; i++) {
        if (nsc_opt_missing("replay", argc, argv, i, valued))
            return 1;
        if (strcmp(argv[i], "--plugin") == 0)
            plugin = argv[++i];
        else if (strcmp(argv[i], "--version") == 0) {
            const char *v = argv[++i];
            long n;
            if (nsc_opt_long("replay", "--version", v[0] == 'v' ? v + 1 : v, 1, 7, "1..7 (or v1..v7)",
                             &n) != 0)
                return 1;
            version = (int)n;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "ncclscope replay: unknown option %s\n", argv[i]);
            return 1;
        } else if (input) {
            /* one stream is replayed: a second input was silently the only one */
            fprintf(stderr, "ncclscope replay: expected one input file, not %s and %s\n", input,
                    argv[i]);
            return 1;
        } else
            input = argv[i];
    }
    if (!plugin || !input) {
        fprintf(stderr, "ncclscope replay: expected --plugin <so> and one input file\n");
        return 1;
    }
    /* as the other commands: an input that cannot be read is exit 3 (a
     * missing one or a directory was 2, "damaged") */
    struct stat ist;
    if (stat(input, &ist) != 0) {
        fprintf(stderr, "ncclscope replay: %s: %s\n", input, strerror(errno));
        return 3;
    }
    if (!S_ISREG(ist.st_mode)) {
        fprintf(stderr, "ncclscope replay: %s: expected a trace file or a recording, found %s\n",
                input, nsc_file_kind(ist.st_mode));
        return 3;
    }
    char err[1024] = "";
    struct nsc_script s;
    int rc = ends_with(input, ".tsv") ? nsc_script_from_tsv(&s, input, err, sizeof(err))
                                      : nsc_script_from_trace(&s, input, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "ncclscope replay: %s\n", err);
        return 2;
    }
    int damaged = err[0] != '\0';
    if (damaged)
        fprintf(stderr, "ncclscope replay: %s (replaying what was intact)\n", err);
    struct nsc_host h;
    time_t t0 = time(NULL);
    if (nsc_host_load(&h, plugin, version, err, sizeof(err)) != 0) {
        fprintf(stderr, "ncclscope replay: %s\n", err);
        nsc_script_free(&s);
        return 3;
    }
    struct nsc_replay_stats st;
    rc = nsc_replay_run(&h, &s, &st, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "ncclscope replay: %s\n", err);
    else
        fprintf(stderr,
                "ncclscope replay: %zu calls on %zu threads into %s (API v%d): %llu events "
                "started, %llu delivered, %llu not in this API version, %llu not in the "
                "plugin's mask, %llu NULL handles\n",
                s.ncalls, s.nthreads, plugin, h.version, (unsigned long long)st.starts,
                (unsigned long long)st.delivered, (unsigned long long)st.skipped_by_version,
                (unsigned long long)st.skipped_by_mask, (unsigned long long)st.null_handles);
    nsc_host_unload(&h);
    nsc_script_free(&s);
    /* The ncclscope plugin's traces of this replay (now closed) say they are
     * one: the replay re-timed the host calls, not the recorded GPU timers. */
    const char *dir = getenv("NCCLSCOPE_DIR");
    if (!dir || !*dir)
        dir = "./ncclscope-trace"; /* the plugin's default (docs/config.md) */
    int marked = nsc_replay_mark_traces(dir, (uint32_t)getpid(), t0, err, sizeof(err));
    if (marked < 0)
        fprintf(stderr, "ncclscope replay: %s\n", err);
    else if (marked > 0)
        fprintf(stderr, "ncclscope replay: %d trace file(s) in %s marked as replayed\n", marked, dir);
    return rc != 0 ? 3 : damaged ? 2 : 0;
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

static int dispatch(int argc, char **argv);

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    return close_stdout(argv[1], dispatch(argc, argv));
}

static int dispatch(int argc, char **argv) {
    const char *cmd = argv[1];
    const struct cmd_help *ch = help_of(cmd);
    if (ch && wants_help(argc - 2, argv + 2)) {
        fputs(ch->text, stdout);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 && argc >= 3) {
        if (!(ch = help_of(argv[2]))) {
            fprintf(stderr, "ncclscope help: unknown command '%s'\n\n", argv[2]);
            usage(stderr);
            return 1;
        }
        fputs(ch->text, stdout);
        return 0;
    }
    if (strcmp(cmd, "convert") == 0)
        return cmd_convert(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "replay") == 0)
        return cmd_replay(argc - 2, argv + 2);
    if (strcmp(cmd, "stats") == 0)
        return cmd_stats(argc - 2, argv + 2);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "hang") == 0)
        return cmd_hang(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0)
        return nsc_export_main(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("ncclscope %s (trace format %u)\n", NSC_VERSION, NSC_FORMAT_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "ncclscope: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 1;
}
