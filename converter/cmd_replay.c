// SPDX-License-Identifier: Apache-2.0
/* cmd_replay.c - `ncclscope replay`: a recorded callback stream (a trace
 * or a .tsv recording) played into a profiler plugin (replay.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_opts.h"
#include "commands.h"
#include "inputs.h"
#include "replay.h"
#include "trace_reader.h"
#include "tsv_recording.h"

static const char help[] =
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
    "  -h, --help                this text\n";

struct replay_args {
    const char *plugin;
    int version;
};

/* 1..7, or v1..v7 as the API's names say */
static int opt_version(const struct nsc_opt *o, const char *cmd, const char *v, void *args) {
    long n;
    if (nsc_opt_long(cmd, "--version", v[0] == 'v' ? v + 1 : v, 1, 7, "1..7 (or v1..v7)", &n) != 0)
        return -1;
    *(int *)((char *)args + o->off) = (int)n;
    return 0;
}

static const struct nsc_opt opts[] = {
    NSC_OPT_STR("plugin", 0, struct replay_args, plugin),
    NSC_OPT_FN("version", 0, struct replay_args, version, opt_version),
};

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int run(int argc, char **argv) {
    struct replay_args a = {NULL, 0};
    char **inputs;
    int nin;
    if (nsc_opts_parse("replay", argc, argv, opts, NSC_NOPTS(opts), &a, &inputs, &nin))
        return 1;
    const char *plugin = a.plugin, *input = nin ? inputs[0] : NULL;
    int version = a.version;
    if (nin > 1) {
        /* one stream is replayed: a second input was silently the only one */
        fprintf(stderr, "ncclscope replay: expected one input file, not %s and %s\n", inputs[0],
                inputs[1]);
        free(inputs);
        return 1;
    }
    free(inputs);
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
    if (!ends_with(input, ".tsv") && nsc_inputs_check_trace("replay", input))
        return 3;
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

const struct nsc_command nsc_cmd_replay = {"replay", run, help};
