// SPDX-License-Identifier: Apache-2.0
/*
 * engine_int.h - the engine's own structures (engine.h is its API): chunk
 * jobs, drainers, the engine, and the output-mode interface its two modes
 * implement (out_stream.c, out_flight.c). Only engine/ includes this.
 *
 * Who owns what: a job belongs to its drainer while FILLING and to one
 * compressor from COMPRESSING until it is FREE again; state changes under
 * engine->mu. Only the compressor whose turn it is (engine->writing) calls
 * the output mode and touches the writer, strings_written, pending_comms,
 * recent and segs, so they need no lock of their own.
 */
#ifndef NSC_ENGINE_INT_H
#define NSC_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "engine.h"
#include "flight.h"
#include "record_pack.h"
#include "segments.h"
#include "trace_writer.h"
#include "writer_proc.h"


/* Records per segment: bounds how long one ring waits while another is
 * drained, and the packer's context. */
#define SEG_RECORDS 512u
#define MAX_COMPRESSORS 16
#define MAX_DRAINERS 8
#define FAST_LEVEL (-10) /* zstd's fast levels: about twice the speed of level 1 */
#define RECENT_COMMS 1024 /* descriptions a new segment repeats besides the open comms' */

enum job_state { J_FREE, J_FILLING, J_QUEUED, J_COMPRESSING };

struct engine;

/* One drainer: the rings whose index is `index` modulo the number of
 * drainers, so each thread's records always take the same drainer and stay
 * in order; several drainers pack in parallel. Fields are its own. */
struct drainer {
    struct engine *f;
    unsigned index;
    pthread_t thread;
    struct job *cur;
    uint64_t next_dseq;
    uint64_t last_seal_ns;
    struct nsc_pack_state pack;
    /* 1 while it moves a segment from a ring into its job: a crash dump
     * waits for 0 before it reads the jobs and the rings, so no record is
     * between the two (seq_cst with eng_crash_dumping: each side stores its
     * flag, then loads the other's) */
    _Atomic int in_segment;
};

/* One chunk on its way to the file: packed records and what they refer
 * to. Owned by the drainer while FILLING, by one compressor from
 * COMPRESSING until it is written and FREE again; state changes under
 * f->mu, which orders the buffers' hand-over between threads. */
struct job {
    enum job_state state;
    int last;                /* its drainer's final job: END follows the last of these */
    _Atomic int kept;        /* flight mode: its chunk is in the window (a crash dump skips it) */
    uint64_t seq;            /* global order of opening: compressors take the oldest */
    unsigned drainer;        /* who filled it */
    uint64_t dseq;           /* its drainer's job number: written in this order */
    unsigned char *raw;      /* packed segments */
    size_t raw_len, raw_cap;
    /* Added to by its drainer without mu while FILLING; an abandoning
     * finalize sums it under mu while that drainer may still run: atomic
     * (relaxed: a count, no data hangs off it). */
    _Atomic uint64_t records;
    struct nsc_anchor anchor;
};

struct engine {
    struct nsc_config cfg;
    struct nsc_session session; /* as opened; never written after the threads start */
    /* NCCL's API version and the mask for it, once NCCL's first init joined
     * a session the Python package opened (0 before; trace_format.h):
     * stored by that init (nsc_engine_nccl_joined), read by the writing
     * compressor and the crash handler through eng_session_now. */
    _Atomic uint32_t nccl_api, nccl_mask;
    uint32_t file_api; /* the writing compressor's: api_version in the open file's SESSION */
    struct nsc_writer w;
    /* the writer process that makes the file-system calls (writer_proc.h);
     * pid 0: this process makes them */
    struct nsc_wproc wp;
    pthread_mutex_t mu;
    pthread_cond_t cv_drainer, cv_work, cv_turn, cv_done;
    pthread_t workers[MAX_COMPRESSORS];
    unsigned nworkers;
    struct drainer drainers[MAX_DRAINERS];
    unsigned ndrainers, drainers_done, finals_written;
    struct job *jobs;
    unsigned njobs;
    uint64_t seq_next;  /* next job a drainer opens */
    uint64_t written_dseq[MAX_DRAINERS]; /* next job of each drainer to reach the file */
    int writing;        /* a compressor is writing: the file has one writer at a time */
    unsigned busy_jobs; /* jobs not FREE */
    /* Written under mu, but threads also test them in loops without it (a
     * drainer between passes, a compressor deciding to give up): atomic so
     * those unlocked reads are defined; seq_cst, they are read rarely. */
    _Atomic int stop, abandoned;
    int io_done;
    /* finalize gave up (abandoned) and then counted lost_exit (under mu,
     * cv_done); one compressor claimed writing the last STATS with it */
    int exit_counted, final_claimed;

    /* used only by the compressor whose turn it is to write */
    uint32_t strings_written;
    struct nsc_comm_info *pending_comms; /* taken from jobs, not yet in the file */
    unsigned npending, pending_cap;
    uint64_t next_open_try_ns;
    int in_error;
    /* bounded disk (NCCLSCOPE_MAX_MB, segments.h): the writing compressor's */
    struct nsc_segments segs;
    struct nsc_comm_info *recent; /* ring of the last RECENT_COMMS descriptions written */
    unsigned nrecent;
    int threads_due;              /* a new segment still lacks its THREAD records */
    int full_disk_said;           /* the full disk under rotation was logged (out_stream.c) */

    /* the output mode (stream or flight) and its state */
    const struct eng_mode *mode;
    /* flight mode (NCCLSCOPE_MODE=flight): chunks kept here, not written,
     * until drainer 0 sets dump_req for a trigger (triggers.c); the
     * writing compressor dumps them */
    struct nsc_flight *flight;
    _Atomic int dump_req;
    unsigned dumps;
    /* Dump requests (triggers.c): asked by any thread (the control API),
     * turned into dump_req by drainer 0 at most once per DUMP_GAP; the
     * ones that came meanwhile merged into the next (counted for its log
     * line). Drainer 0's: dump_pending, dump_served_ns, merging. */
    _Atomic uint32_t dump_asks;
    _Atomic uint64_t dumps_merged;
    int dump_pending;
    uint64_t dump_served_ns, merging;
    /* NCCLSCOPE_MAX_MB in flight mode (out_flight.c, the writing
     * compressor): bytes the dumps wrote, the last one's, dumps refused. */
    uint64_t dumped_bytes, last_dump_bytes, dumps_refused;

    /* loss accounting (the writing compressor adds, anyone reads) */
    _Atomic uint64_t lost_write, lost_exit;
    _Atomic uint32_t write_errors;
    _Atomic int32_t write_errno;
};


/* The output mode: what becomes of a chunk once compressed, one set of
 * functions per mode, so no shared path asks which mode runs.
 *   chunk:       the job's chunk (out: block header room + stored bytes),
 *                in sequence order; returns 0 when it was kept (the file or
 *                the window), -1 when lost (counted by the caller);
 *   after_chunk: what follows a chunk (stream: a due HANG block, STATS, END
 *                after the last; flight: a dump if one was asked or `last`);
 *   poll:        drainer 0, once per pass: 1 when the job being filled
 *                should be sealed now (a dump was asked), or NULL;
 *   close:       the session's end, after the threads were joined. */
struct eng_mode {
    const char *name;
    int (*chunk)(struct engine *e, struct job *j, unsigned char *out, uint16_t flags,
                 size_t stored);
    void (*after_chunk)(struct engine *e, int last);
    int (*poll)(struct engine *e, uint64_t now);
    void (*close)(struct engine *e);
};
extern const struct eng_mode eng_stream_mode, eng_flight_mode;

/* engine.c: the running session's engine (NULL between sessions) and the
 * observers' slot (engine.h). */
extern struct engine *eng_running;
struct eng_hooks {
    _Atomic uint32_t record_types;
    _Atomic(void (*)(void)) pass_begin, pass_end;
    _Atomic(void (*)(const struct nsc_rec *)) record;
    _Atomic(void (*)(const struct nsc_comm_info *, unsigned)) comms;
    _Atomic(unsigned char *(*)(int, size_t *)) hang_take;
    _Atomic(int (*)(void)) hang_dump;
    _Atomic(void (*)(const struct nsc_rec *)) progress;
};
extern struct eng_hooks eng_hooks;
uint64_t eng_now_ns(void);
void eng_deadline_after(struct timespec *ts, uint64_t us);

/* drainer.c */
void *eng_drainer_main(void *arg);

/* compressor.c */
void *eng_compressor_main(void *arg);

/* file_out.c: the session as it stands now (the opened one with NCCL's
 * version once known; async-signal-safe); a new file with it; a SESSION
 * rewritten in place when NCCL's version came after the file was opened. */
void eng_session_now(const struct engine *e, struct nsc_session *s);
int eng_open_file(struct engine *e);
void eng_session_refresh(struct engine *e);
/* file_out.c: blocks both modes write (the writing compressor only). */
void eng_stats_block(struct engine *e);
/* file_out.c: STATS' header for n threads and thread i's entry, as the
 * counters stand (async-signal-safe: the crash dump's STATS). */
void eng_stats_header(const struct engine *e, struct nsc_stats_header *sh, uint32_t n);
void eng_thread_stats(uint32_t i, struct nsc_thread_stats *ts);
int eng_write_strings(struct engine *e, uint32_t upto);
void eng_take_comms(struct engine *e);
int eng_write_comms(struct engine *e);
void eng_describe_again(struct engine *e);
void eng_write_threads(struct engine *e, uint64_t ticks);
void eng_hang_block(struct engine *e, int dump);
void eng_account(struct engine *e, struct job *j, int ok);

/* triggers.c: flight mode's triggers (the dump signal, dump-now, dump-all,
 * the watchdog's request): drainer 0's poll (atomics only), the watcher
 * thread that looks at the files, the dump signal's handler. */
int eng_flight_triggers(struct engine *e, uint64_t now);
void eng_dump_signal_install(const struct nsc_config *cfg);
void eng_dump_signal_uninstall(void);
/* The watcher wakes drainer 0 of `e` when a dump is asked for (it sleeps
 * NCCLSCOPE_DRAIN_US between passes, up to an hour): e stays valid until
 * eng_watch_stop, after which the watcher never touches it. `sock`: the
 * watcher's channel to the writer process, taken (-1: none). */
int eng_watch_start(struct engine *e, const struct nsc_config *cfg, int sock);
void eng_watch_stop(unsigned wait_ms);
/* engine.c: keeps the library mapped for a thread left behind */
void eng_pin_library(void);

/* crash_dump.c: the fatal signals' handlers (flight mode). crash_dumping is
 * set while one writes the rings: the drainers take nothing then. */
extern _Atomic int eng_crash_dumping;
void eng_fatal_install(const struct engine *e, const char *host, int pid);
void eng_fatal_uninstall(void);

#endif /* NSC_ENGINE_INT_H */
