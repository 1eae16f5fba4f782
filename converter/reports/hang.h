// SPDX-License-Identifier: Apache-2.0
/*
 * hang.h - `ncclscope hang`: where a job hangs, from the traces of all its
 * ranks alone (dumps, streaming traces of killed jobs, files cut by SIGKILL).
 *
 * Each file is read through coll_track.h; what is still in flight when a
 * file ends comes back with its open children. An operation is stuck when
 * it never completed: a child of it (KernelCh, ProxyOp) started and never
 * stopped, or its Coll/P2p never stopped (not by counting channels: NCCL
 * gives no KernelCh where a channel has no proxy work; hang_model.h). Ranks of a
 * communicator are joined by commHash across files. Per stuck communicator:
 *   - collectives: the stuck collective its stuck ranks enqueued first
 *     (hang_model.h: seqNumbers count per function, so the number does not
 *     order them); the ranks that never entered it (missing), the ranks stuck
 *     inside it (their open channels, ProxyOps: peer, direction, last
 *     state, newest ProxyStep's state), those that completed it, and the
 *     ranks of the communicator that left no trace;
 *   - point-to-point (when no collective is stuck): each stuck Send/Recv,
 *     the peer it waits for, and whether that peer ever posted the matching
 *     Recv/Send (counted per pair: fewer matching operations = never posted).
 * When nothing is seen stuck and some files record no KernelCh (where an
 * intra-node collective counts as completed once enqueued): per (comm,
 * collective), the first seqNumber some traced ranks entered and others
 * never did, when no rank that entered it recorded its completion (a
 * "divergence": a possible hang, exit 5).
 * Each entry (and divergence) is a root, or waits behind one: an entry
 * whose operation a process enqueued after that process's root operation,
 * which never completed (the same GPU, often the same stream). Roots come
 * first. The analysis is hang_model.h's; this file prints it.
 */
#ifndef NSC_HANG_H
#define NSC_HANG_H

#include <stdio.h>

/* Returns 0 (no hang), 2 (no hang found, some input damaged), 4 (a hang
 * found, whatever the damage: files cut by SIGKILL are the normal case) or
 * 5 (none seen stuck, but a divergence where completion was not recorded).
 * jobs: files read at once (0: parallel.h's default); the output does not
 * depend on it. The report goes to out, messages (damage, files cut short)
 * to err: the CLI's stdout and stderr, or the Python package's buffers
 * (ncclscope.analysis.hang). */
int nsc_hang(const char *const *files, int nfiles, int json, int jobs, FILE *out, FILE *err);

#endif /* NSC_HANG_H */
