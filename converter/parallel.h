// SPDX-License-Identifier: Apache-2.0
/*
 * parallel.h - the files of a multi-file command, several at a time
 * (`-j N`), with results taken in file order so the output is the same as
 * with -j 1.
 *
 * work(ud, i) runs on a worker thread, for every i in 0..n-1 (each once);
 * in_order(ud, i) runs on the calling thread, for i = 0, 1, ... as soon as
 * work(i) and every earlier in_order are done. Workers start item i only
 * while i < (items taken in order) + 2 x jobs, so at most that many items'
 * results wait at once: memory is bounded per open file, not per file of
 * the job. jobs <= 1 runs everything on the calling thread, in order.
 *
 * A utility of every stage of the converter (job, model, reports), part of
 * none of them.
 */
#ifndef NSC_PARALLEL_H
#define NSC_PARALLEL_H

#include <stdio.h>

/* The default -j: what nsc_jobs_set_default set (the command line's -j),
 * else the processors online (at least 1). */
int nsc_jobs_default(void);
void nsc_jobs_set_default(int jobs);

/* Returns 0, or -1 when no thread could be started (then nothing ran and
 * the caller may run the same loop itself with jobs = 1). */
int nsc_parallel(int n, int jobs, void (*work)(void *ud, int i), void (*in_order)(void *ud, int i),
                 void *ud);

/* Each item's messages, printed in item order: a worker writes item i's to
 * nsc_msgs_open(m, i) (stderr itself when no memory is left for a buffer)
 * and ends with nsc_msgs_close; in_order prints them with nsc_msgs_flush. */
struct nsc_msgs {
    char **text;
    size_t *len;
};
int nsc_msgs_init(struct nsc_msgs *m, int n); /* 0, or -1 without memory */
void nsc_msgs_free(struct nsc_msgs *m);
FILE *nsc_msgs_open(struct nsc_msgs *m, int i);
void nsc_msgs_close(FILE *f);
void nsc_msgs_flush(struct nsc_msgs *m, int i, FILE *to);

#endif /* NSC_PARALLEL_H */
