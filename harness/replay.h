// SPDX-License-Identifier: Apache-2.0
/*
 * replay.h - a recorded NCCL callback stream ("script") and the engine that
 * plays it into a plugin through nsc_host: one thread per recorded thread,
 * the recorded global order kept exactly (each call runs only after the one
 * before it in the recording returned), descriptors as recorded, parentObj
 * set to the handle the plugin returned for the recorded parent.
 *
 * Scripts come from NCCL callback recordings (tsv_recording.h) or from
 * ncclscope traces (nsc_script_from_trace).
 */
#ifndef NSC_REPLAY_H
#define NSC_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "host.h"
#include "nccl_abi.h"

#define NSC_FOREIGN_PARENT UINT64_MAX

enum nsc_call_kind { NSC_CALL_INIT, NSC_CALL_START, NSC_CALL_STOP, NSC_CALL_STATE, NSC_CALL_FINALIZE };

struct nsc_call {
    uint8_t kind;
    uint32_t thread;      /* index into script threads */
    uint32_t comm;        /* index into script comms (INIT, START, FINALIZE) */
    int state;            /* STATE */
    uint64_t id;          /* recorded event id (START, STOP, STATE) */
    uint64_t parent;      /* recorded parent id, 0 none, NSC_FOREIGN_PARENT */
    uint64_t parent_group;/* recorded id of a Coll/P2p's Group, 0 none */
    uint64_t arg;         /* STATE argument */
    uint64_t t_ns;        /* when it happened (for pacing and ordering) */
    nsc_abi_descr_v7 d;   /* START: descriptor (NCCL 2.31's layout); pointers into the script's pools */
    union {
        nsc_abi_net_ib_v1 ib;
        nsc_abi_net_sock_v1 sock;
    } net;                /* START of a NetPlugin event: what d.netPlugin.data points to */
};

struct nsc_script_comm {
    uint64_t comm_id;
    char name[96];
    int nnodes, nranks, rank;
};

struct nsc_script_thread {
    uint32_t tid;         /* recorded thread id */
    char name[16];        /* name the replay thread takes */
};

struct nsc_script {
    struct nsc_call *calls;
    size_t ncalls, cap;
    struct nsc_script_comm *comms;
    size_t ncomms;
    struct nsc_script_thread *threads;
    size_t nthreads;
    char **strings;       /* interned: equal text, equal pointer, as in NCCL */
    size_t nstrings;
};

void nsc_script_free(struct nsc_script *s);
/* Interned copy of text (stable for the script's life). */
const char *nsc_script_intern(struct nsc_script *s, const char *text);
struct nsc_call *nsc_script_add(struct nsc_script *s);
uint32_t nsc_script_thread(struct nsc_script *s, uint32_t tid, const char *name);

/* Builds a script from an ncclscope trace file. Returns 0, or -1 with err. */
int nsc_script_from_trace(struct nsc_script *s, const char *path, char *err, size_t errlen);

struct nsc_replay_stats {
    uint64_t calls, starts, delivered, skipped_by_version, skipped_by_mask, null_handles;
};

/* Plays the script into the plugin. Returns 0, or -1 with err. */
int nsc_replay_run(const struct nsc_host *h, const struct nsc_script *s,
                   struct nsc_replay_stats *st, char *err, size_t errlen);

/* For the benchmark: times every start, stop and state call delivered to
 * the plugin. `clock` is read right before and right after the plugin call
 * (nothing else of the engine's work is inside), then `sample` gets the
 * difference, on the calling replay thread. */
struct nsc_replay_probe {
    uint64_t (*clock)(void);
    void (*sample)(void *ud, uint32_t thread, enum nsc_call_kind kind, uint64_t elapsed);
    void *ud;
};
int nsc_replay_run_probed(const struct nsc_host *h, const struct nsc_script *s,
                          const struct nsc_replay_probe *probe, struct nsc_replay_stats *st,
                          char *err, size_t errlen);

/* After a replay into the ncclscope plugin: marks the SESSION blocks of the
 * traces this process wrote in `dir` (*.nsc files modified at or after
 * `since` whose SESSION names `pid`) as replayed (trace_format.h), so that
 * readers know host and GPU times do not relate. Call it once the plugin
 * closed its files (nsc_host_unload). Returns the number of files marked
 * (0 when the directory cannot be read: the plugin may write elsewhere or
 * be another plugin), or -1 with err when a file could not be marked. */
int nsc_replay_mark_traces(const char *dir, uint32_t pid, time_t since, char *err, size_t errlen);

#endif /* NSC_REPLAY_H */
