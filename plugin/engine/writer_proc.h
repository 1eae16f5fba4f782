// SPDX-License-Identifier: Apache-2.0
/*
 * writer_proc.h - the session's writer process (writer_proto.h says why):
 * starting it, and the file operations the engine makes, each done by the
 * writer when one runs, in this process otherwise (the writer could not be
 * started: the fallback, logged once per process and shown by `info`).
 *
 * A channel is used by one thread at a time (its owner: the compressor
 * whose turn it is, or the flight watcher). A call waits on a socket for
 * the writer's answer: a stalled directory keeps the caller waiting there,
 * in an interruptible sleep that the process's exit ends. When the writer
 * is gone every call fails with EPIPE (the caller counts the loss) and the
 * first failure is logged.
 */
#ifndef NSC_WRITER_PROC_H
#define NSC_WRITER_PROC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "writer_proto.h"

struct nsc_wchan {
    int sock;           /* -1: calls are made in this process */
    _Atomic int closed; /* we shut it (finalize gave up): its failures are not news */
};

struct nsc_wproc {
    pid_t pid;                   /* 0: no writer (in-process writes) */
    struct nsc_wchan engine;     /* the compressors' and the session end's */
    int watch_sock;              /* the flight watcher's channel, until it takes it */
    int aux_sock;                /* the hang suspect level's, until it takes it */
    struct nsc_crash_area *area; /* flight mode: the crash dump's way out, or NULL */
    int wake_sock;               /* its doorbell (non-blocking), or -1 */
    size_t area_bytes;
};

/* Starts the writer with a crash area of crash_cap bytes (0: none). On
 * failure p->pid is 0 and every call runs in this process; why says what
 * failed. Returns 0 or -1. */
int nsc_wproc_start(struct nsc_wproc *p, uint64_t crash_cap, char *why, size_t whylen);

/* The session is over: the channels close, the writer writes what it holds
 * and leaves (reaped here if it has within a moment). */
void nsc_wproc_stop(struct nsc_wproc *p);
/* Writers of ended sessions that had not left at their end: reaped now if
 * they have (session end, after every channel is closed; session start). */
void nsc_wproc_reap_left(void);

/* Finalize gave up on a stalled writer: its channel is shut, so that it
 * leaves once the directory lets its last call return (the caller's thread
 * then sees EPIPE). Safe while another thread waits on the channel. */
void nsc_wproc_abandon(struct nsc_wproc *p);

/* The operations (writer_proto.h). Return -1 with errno on failure. */
int nsc_wch_mkdir(struct nsc_wchan *c, const char *dir);
int nsc_wch_create(struct nsc_wchan *c, const char *path, unsigned mode);
int nsc_wch_append(struct nsc_wchan *c, int fd, uint64_t off, const void *data, size_t n);
/* In place at `off` (the file's end does not move); -1 with errno. */
int nsc_wch_pwrite(struct nsc_wchan *c, int fd, uint64_t off, const void *data, size_t n);
int nsc_wch_close(struct nsc_wchan *c, int fd);
int nsc_wch_unlink(struct nsc_wchan *c, const char *path);
int nsc_wch_mtime(struct nsc_wchan *c, const char *path, struct timespec *mtime);
int nsc_wch_touch(struct nsc_wchan *c, const char *path, unsigned mode, struct timespec *mtime);

/* The hang suspect level's operations (writer_proto.h: REPLACE, READ, LIST),
 * each also in this process without a writer. READ and LIST return the
 * bytes put in buf (at most cap), LIST's left out in *left; -1 with errno. */
int nsc_wch_replace(struct nsc_wchan *c, const char *path, const void *data, size_t n,
                    unsigned mode);
long nsc_wch_read(struct nsc_wchan *c, const char *path, void *buf, size_t cap);
long nsc_wch_list(struct nsc_wchan *c, const char *dir, const char *suffix, char *buf, size_t cap,
                  uint64_t *left);

/* Whether this process's writes go through a writer (for the trace's STATS). */
int nsc_wproc_fallback_seen(void);

#endif /* NSC_WRITER_PROC_H */
