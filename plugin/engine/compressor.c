// SPDX-License-Identifier: Apache-2.0
/* compressor.c - the compressor threads: zstd for sealed chunk jobs, then,
 * in sequence order and one at a time, the job handed to the output mode. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine_int.h"


/* A compressor takes the oldest sealed job, compresses it into its own
 * buffer (several compressors work on consecutive jobs at once), then waits
 * for its turn (its drainer's jobs in order, one writer at a time) and
 * writes the job's blocks: the file receives
 * jobs in the order the drainer sealed them, which keeps every thread's
 * records in order and strings and comms ahead of their users. Only the
 * compressor whose turn it is touches the writer, so the file needs no
 * lock of its own; a frozen disk stops that one in write(2), the others at
 * their turn, and the drainer when every job is taken. */
void *eng_compressor_main(void *arg) {
    struct engine *f = arg;
    ZSTD_CCtx *cctx = NULL;
    size_t hdr = sizeof(struct nsc_block_header);
    size_t out_cap = hdr + ZSTD_compressBound(f->jobs[0].raw_cap);
    unsigned char *out = malloc(out_cap);
    pthread_mutex_lock(&f->mu);
    for (;;) {
        struct job *j = NULL;
        while (!f->abandoned && !f->io_done) {
            for (unsigned i = 0; i < f->njobs; i++)
                if (f->jobs[i].state == J_QUEUED && (!j || f->jobs[i].seq < j->seq))
                    j = &f->jobs[i];
            if (j)
                break;
            pthread_cond_wait(&f->cv_work, &f->mu);
        }
        if (!j)
            break;
        j->state = J_COMPRESSING;
        /* Pressure: most jobs are already sealed and waiting, so this one
         * takes zstd's fastest level. */
        int level = f->busy_jobs * 2 > f->njobs ? FAST_LEVEL : f->cfg.zstd_level;
        pthread_mutex_unlock(&f->mu);

        uint16_t flags = 0;
        size_t stored = 0;
        if (j->raw_len && out) {
            size_t n = 0;
            if (!cctx && (cctx = ZSTD_createCCtx()) != NULL)
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
            if (cctx) {
                ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
                n = ZSTD_compress2(cctx, out + hdr, out_cap - hdr, j->raw, j->raw_len);
            }
            if (cctx && !ZSTD_isError(n)) {
                stored = n;
                flags = NSC_BLK_F_ZSTD;
            } else { /* no memory for a context: store the packed bytes */
                memcpy(out + hdr, j->raw, j->raw_len);
                stored = j->raw_len;
            }
        }

        pthread_mutex_lock(&f->mu);
        while (!f->abandoned && (f->writing || f->written_dseq[j->drainer] != j->dseq))
            pthread_cond_wait(&f->cv_turn, &f->mu);
        if (f->abandoned)
            break;
        f->writing = 1;
        pthread_mutex_unlock(&f->mu);
        int ok = out && f->mode->chunk(f, j, out, flags, stored) == 0;
        /* Finalize gave up on us while we waited for the writer (it let us
         * go: writer_proc.h): the job is counted in lost_exit already, and
         * nothing more reaches the file. */
        if (f->abandoned) {
            pthread_mutex_lock(&f->mu);
            break;
        }
        eng_account(f, j, ok);
        /* The last drainer's final job ends the file (each drainer's
         * final job is its last, so every other job is in by then). */
        int last = j->last && f->finals_written + 1 == f->ndrainers;
        f->mode->after_chunk(f, last);
        pthread_mutex_lock(&f->mu);
        if (f->abandoned)
            break; /* finalize gave up on us while we wrote: touch nothing more */
        f->finals_written += j->last;
        f->writing = 0;
        f->written_dseq[j->drainer]++;
        f->busy_jobs--;
        j->state = J_FREE;
        pthread_cond_broadcast(&f->cv_turn);
        pthread_cond_broadcast(&f->cv_drainer);
        if (last) {
            f->io_done = 1;
            pthread_cond_broadcast(&f->cv_work);
            pthread_cond_broadcast(&f->cv_done);
        }
    }
    pthread_mutex_unlock(&f->mu);
    ZSTD_freeCCtx(cctx);
    free(out);
    return NULL;
}
