// SPDX-License-Identifier: Apache-2.0
/*
 * replay_into_plugin.c - plays a recorded trace into any NCCL profiler
 * plugin through the harness (harness/replay.h, nccl/host.h): the plugin is
 * loaded as NCCL loads it, every recorded thread becomes a thread, calls
 * keep their recorded order, descriptors their recorded fields, lowered to
 * the API version the plugin offers (or --version N).
 *
 *   replay_into_plugin [--version N] plugin.so trace.nsc
 *
 * Prints what was delivered; exit 1 on usage or load errors, 2 when the
 * trace was damaged (what was intact was replayed). `ncclscope replay` is
 * the same with the ncclscope plugin's replay marking added.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "replay.h"

int main(int argc, char **argv) {
    int version = 0, i = 1;
    if (argc > 2 && strcmp(argv[1], "--version") == 0) {
        version = atoi(argv[2]);
        i = 3;
    }
    if (argc - i != 2 || version < 0 || version > 7) {
        fprintf(stderr, "usage: replay_into_plugin [--version 1..7] plugin.so trace.nsc\n");
        return 1;
    }
    const char *plugin = argv[i], *trace = argv[i + 1];
    char err[1024] = "";
    struct nsc_script s;
    if (nsc_script_from_trace(&s, trace, err, sizeof(err)) != 0) {
        fprintf(stderr, "replay_into_plugin: %s\n", err);
        return 1;
    }
    int damaged = err[0] != '\0'; /* a damaged trace still gives what was intact */
    if (damaged)
        fprintf(stderr, "replay_into_plugin: %s (replaying what was intact)\n", err);
    struct nsc_host h;
    if (nsc_host_load(&h, plugin, version, err, sizeof(err)) != 0) {
        fprintf(stderr, "replay_into_plugin: %s\n", err);
        nsc_script_free(&s);
        return 1;
    }
    struct nsc_replay_stats st;
    int rc = nsc_replay_run(&h, &s, &st, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "replay_into_plugin: %s\n", err);
    else
        printf("plugin %s API v%d: %zu calls on %zu threads, %llu starts, %llu delivered, "
               "%llu not in this version, %llu not in the plugin's mask, %llu NULL handles\n",
               h.name ? h.name : "?", h.version, s.ncalls, s.nthreads,
               (unsigned long long)st.starts, (unsigned long long)st.delivered,
               (unsigned long long)st.skipped_by_version, (unsigned long long)st.skipped_by_mask,
               (unsigned long long)st.null_handles);
    nsc_host_unload(&h);
    nsc_script_free(&s);
    return rc != 0 ? 1 : damaged ? 2 : 0;
}
