// SPDX-License-Identifier: Apache-2.0
/*
 * ops_table.h - one trace file as column tables: the operations exactly as
 * `ncclscope stats` derives them (coll_track.h, gpu_clock.h, the file's
 * shift onto the job's aligned clock), kernel channels, proxy steps, comms,
 * what the plugin lost, and the damage found. The rows of the intact part
 * of a damaged file are still returned.
 *
 * Columns, not rows: ncclscope.analysis hands each column to NumPy as one
 * buffer (np.frombuffer) and `ncclscope export` prints them; nothing goes
 * through text on the way to a DataFrame. Every column is int64 or a string
 * (a uint32 index into the file's string pool; index 0 is ""). The schema
 * (names, types, meaning) is the table below and docs/analysis.md.
 *
 * No Python and no printing here: a library (the reader library's future
 * home), errors come back as data.
 */
#ifndef NSC_OPS_TABLE_H
#define NSC_OPS_TABLE_H

#include <stddef.h>
#include <stdint.h>

enum nsc_ot_type { NSC_OT_I64 = 0, NSC_OT_STR = 1 };

/* X(column, type): one list per table, in output order. Times are ns on the
 * job's aligned clock (the file's CLOCK_MONOTONIC + its shift); 0 means
 * "none" for times, -1 for durations and mapped values. */
#define NSC_OT_OPS(X)                                                                              \
    X(host, STR)         /* the recording host */                                                  \
    X(pid, I64)                                                                                    \
    X(file, STR)         /* the trace file */                                                      \
    X(rank, I64)         /* rank in its communicator (-1: unknown) */                              \
    X(nranks, I64)                                                                                 \
    X(comm, STR)         /* commHash, 16 hex digits */                                             \
    X(comm_name, STR)                                                                              \
    X(op, STR)           /* AllReduce, Send, ... */                                                \
    X(p2p, I64)          /* 1: point-to-point */                                                   \
    X(seq, I64)          /* Coll seqNumber (p2p: 0) */                                             \
    X(dtype, STR)                                                                                  \
    X(count, I64)                                                                                  \
    X(bytes, I64)        /* nccl-tests' size: count x dtype, x nranks for AllGather/ReduceScatter */ \
    X(peer, I64)         /* p2p peer (collectives: -1) */                                          \
    X(algo, STR)                                                                                   \
    X(proto, STR)                                                                                  \
    X(channels, I64)     /* nChannels */                                                           \
    X(enqueue_ns, I64)   /* Coll/P2p START */                                                      \
    X(stop_ns, I64)      /* Coll/P2p STOP (0: never) */                                            \
    X(end_ns, I64)       /* completion: the last KernelCh/ProxyOp child's stop (0: no child) */    \
    X(gpu_start_ns, I64) /* first KernelCh GPU start mapped to the host clock (0: none) */         \
    X(gpu_end_ns, I64)   /* last KernelCh GPU end mapped (0: none) */                              \
    X(gpu_ns, I64)       /* GPU time: last GPU end - first GPU start, GPU clock (-1: none) */      \
    X(queue_ns, I64)     /* enqueue to mapped GPU start, 0 when mapped earlier (-1: none) */       \
    X(host_ns, I64)      /* enqueue to completion (end, else stop; -1: neither) */                 \
    X(enqueue_only, I64) /* 1: no completion child */                                              \
    X(at_end, I64)       /* 1: still in flight when the file ended */                              \
    X(stuck, I64)        /* 1: in flight at the end and never completed (hang.h's rule) */         \
    X(kernel_ch_recorded, I64) /* 1: the file records KernelCh (without it, completion is unseen) */ \
    X(sampled, I64)      /* 1: KernelCh asked for it (GPU time, completion); 0 with KernelCh sampled */ \
    X(completion_inferred, I64) /* 1: not sampled, completed as a later op of its comm did */    \
    X(maybe_stuck, I64)  /* 1: not sampled, in flight at the end, a later sampled op of its comm stuck */ \
    X(channels_done, I64) /* its KernelCh that stopped */                                          \
    X(open_children, I64) /* KernelCh/ProxyOp started and never stopped (at_end only) */           \
    X(caller, STR)       /* Python caller "file:line function" ("" none) */                        \
    X(thread, I64)       /* writer thread index in the file */                                     \
    X(event_id, I64)     /* the Coll/P2p id in its file */                                         \
    X(file_index, I64)   /* order of the file in the job (ties: first file wins) */                \
    X(row, I64)          /* order of the row in its file */

#define NSC_OT_KCH(X)                                                                              \
    X(host, STR) X(pid, I64) X(file, STR) X(rank, I64) X(comm, STR)                                \
    X(op_id, I64)        /* event_id of its operation */                                           \
    X(event_id, I64)                                                                               \
    X(channel, I64)                                                                                \
    X(start_ns, I64)     /* KernelCh START on the host */                                          \
    X(stop_ns, I64)      /* KernelCh STOP on the host (0: never) */                                \
    X(gpu_start_raw, I64) /* %globaltimer at start (GPU ns) */                                     \
    X(gpu_end_raw, I64)  /* %globaltimer at KernelChStop (0: none) */                              \
    X(gpu_start_ns, I64) /* mapped to the host clock (0: no mapping) */                            \
    X(gpu_end_ns, I64)                                                                             \
    X(file_index, I64)

#define NSC_OT_STEPS(X)                                                                            \
    X(host, STR) X(pid, I64) X(file, STR) X(rank, I64) X(comm, STR)                                \
    X(op_id, I64)        /* its operation (0: unknown) */                                          \
    X(proxy_op_id, I64)                                                                            \
    X(event_id, I64)                                                                               \
    X(channel, I64) X(peer, I64) X(is_send, I64)                                                   \
    X(step, I64)                                                                                   \
    X(start_ns, I64) X(stop_ns, I64)                                                               \
    X(last_state, I64)   /* NCCL's ProxyStep state number (-1: none) */                            \
    X(file_index, I64)

#define NSC_OT_COMMS(X)                                                                            \
    X(host, STR) X(pid, I64) X(file, STR)                                                          \
    X(serial, I64)       /* the comm's number in its file */                                       \
    X(comm, STR) X(comm_name, STR) X(rank, I64) X(nranks, I64) X(nnodes, I64)                      \
    X(gpu_offset_ns, I64) /* host ns = GPU ns + this (gpu_clock.h) */                              \
    X(gpu_mapped, I64)   /* 1: the offset was measured */                                          \
    X(file_index, I64)

/* One row per file: the STATS block's counts (docs/format.md) and damage. */
#define NSC_OT_DROPS(X)                                                                            \
    X(host, STR) X(pid, I64) X(file, STR)                                                          \
    X(records_lost, I64) /* dropped + write + exit */                                              \
    X(dropped, I64) X(ring_full, I64) X(no_thread, I64) X(write_lost, I64) X(exit_lost, I64)       \
    X(events_dropped, I64) X(failed_writes, I64) X(write_errno, I64)                               \
    X(string_overflow, I64) X(unnamed_events, I64) X(comm_overflow, I64)                           \
    X(memory_peak, I64) X(memory_budget, I64)                                                      \
    X(ended, I64)        /* 1: END block (the session closed cleanly) */                           \
    X(damaged, I64)      /* damage reports */                                                      \
    X(replayed, I64)     /* a trace written by `ncclscope replay` */                               \
    X(shift_ns, I64)     /* the file's shift onto the job's clock */                               \
    X(file_index, I64)

#define NSC_OT_ERRORS(X)                                                                           \
    X(file, STR)                                                                                   \
    X(offset, I64)       /* byte offset of the damage (-1: not known) */                           \
    X(message, STR)      /* "<file>: offset N: what" */                                            \
    X(file_index, I64)

enum nsc_ot_table_id {
    NSC_OT_T_OPS,
    NSC_OT_T_KCH,
    NSC_OT_T_STEPS,
    NSC_OT_T_COMMS,
    NSC_OT_T_DROPS,
    NSC_OT_T_ERRORS,
    NSC_OT_NTABLES
};

/* The tables' names: "ops", "kernel_channels", "proxy_steps", "comms",
 * "drops", "errors". */
extern const char *const nsc_ot_table_names[NSC_OT_NTABLES];

struct nsc_ot_colspec {
    const char *name;
    enum nsc_ot_type type;
};

struct nsc_ot_table {
    const struct nsc_ot_colspec *spec;
    unsigned ncols;
    size_t nrows, cap;
    void **col;          /* per column: int64_t[] or uint32_t[] (string pool index) */
};

struct nsc_ot_file {
    struct nsc_ot_table t[NSC_OT_NTABLES];
    char **str;          /* the string pool: str[0] = "" */
    uint32_t nstr, str_cap;
    uint32_t *str_hash;  /* open addressing: pool index + 1, 0 free */
    uint32_t str_hash_cap;
    int oom;             /* out of memory: the tables stop growing */
    int damaged;         /* damage reports (rows in the errors table) */
};

/* Schema of a table (valid for the program's life). */
const struct nsc_ot_colspec *nsc_ot_schema(enum nsc_ot_table_id t, unsigned *ncols);

/* Reads `path` (file_index: its place in the job) with times shifted by
 * shift_ns onto the job's clock. want: a mask of (1 << enum nsc_ot_table_id)
 * (comms, drops and errors are always made). Returns 0 (intact), 1 (damage:
 * the errors table says where; the intact part's rows are there) or -1 (out
 * of memory). Free with nsc_ot_free whatever it returned. */
int nsc_ot_read(const char *path, int file_index, int64_t shift_ns, unsigned want,
                struct nsc_ot_file *out);
void nsc_ot_free(struct nsc_ot_file *f);

/* The job's clock shifts (clock_align.h, the converter's method and
 * numbers): shift_ns[i] for files[i]. mode 0 automatic, 1 realtime only.
 * Returns 0, or -1 with a message in err (the files cannot be put on one
 * timeline). */
int nsc_ot_job_shifts(const char *const *files, int nfiles, int mode, double max_uncertainty_ns,
                      int64_t *shift_ns, char *err, size_t errlen);

#endif /* NSC_OPS_TABLE_H */
