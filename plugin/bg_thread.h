// SPDX-License-Identifier: Apache-2.0
/*
 * bg_thread.h - starting ncclscope's background threads (drainers,
 * compressors, the ops thread, the hang watchdog) the one way they must
 * start inside someone else's process.
 */
#ifndef NSC_BG_THREAD_H
#define NSC_BG_THREAD_H

#include <pthread.h>

#include "config.h"

/* Starts fn(arg) on a new thread named name (at most 15 bytes). The thread
 * starts with every signal blocked (the application's handlers must not run
 * on our threads, and a signal meant for the application must not land
 * here) and on NCCLSCOPE_CPUS where given, else on the process's CPU mask
 * (Linux keeps one per thread: "the process's" is the main thread's, which
 * is the one a launcher's taskset or numactl set): not the calling
 * thread's, which NCCL or the application may have pinned to one core.
 * CPUs the kernel refuses (all of NCCLSCOPE_CPUS outside the cgroup's
 * cpuset or offline) fall back to the process's mask, logged once, and
 * later starts do not try them again.
 * Returns pthread_create's result. */
int nsc_bg_thread_start(pthread_t *t, const struct nsc_config *cfg, void *(*fn)(void *), void *arg,
                        const char *name);

/* How many CPUs those threads share (NCCLSCOPE_CPUS within the process's
 * mask, else the process's mask): what sizes their numbers. */
int nsc_bg_thread_ncpus(const struct nsc_config *cfg);

#endif /* NSC_BG_THREAD_H */
