// SPDX-License-Identifier: Apache-2.0
/*
 * suspect_int.h - the hang suspect level's own state (suspect.h is the
 * API): suspect.c runs the thread, keeps what this process knows and fires;
 * suspect_peers.c reads the other processes' progress files and compares
 * them with this process's candidates. All of it on the suspect thread,
 * but `current` and the counters (under mu: the metrics thread).
 */
#ifndef NSC_SUSPECT_INT_H
#define NSC_SUSPECT_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "comm_table.h"
#include "config.h"
#include "op_state.h"
#include "progress.h"
#include "progress_file.h"
#include "suspect.h"
#include "trace_format.h"

#define PERIOD_MS 1000
/* A peer whose file changed within this many seconds is alive: its
 * writer runs every PERIOD_MS, and a shared file system may show a new
 * version a few seconds late. */
#define FRESH_S 5
/* A ring holding records the drainer has not taken for this long: what
 * this process knows lags what it enqueued (a frozen disk blocks the
 * drainer), so its file says ok 0 and its own ranks are not compared.
 * Plus twice NCCLSCOPE_DRAIN_US, the drainer's sleep. */
#define LAG_MS 1000
#define FILE_COMMS 1024   /* comms in this process's file (the first slots) */
#define STAGE_MAX 8192    /* lines of one progress file used */
#define MAX_CANDS 1024    /* this process's (rank, function) pairs checked per pass */
#define MAX_SUSPECTS 64   /* suspects held for the gauge and a block */
#define MAX_FIRED 1024    /* ranks whose last suspect is remembered (once per stall) */
#define NAMES_BYTES (64u << 10) /* a listing of the directory's progress files */

struct peer {
    char name[200];
    uint64_t gen;
    uint64_t seen;          /* ticks of our last read (0: never read) */
    uint64_t changed_after; /* ticks of the last read that showed another gen (0: none) */
    int listed;
};

/* One of this process's (rank, function) pairs that may wait for others. */
struct cand {
    const struct nsc_prog_pair *p;
    const struct nsc_comm_info *info;
    char func[32];
    uint64_t min_seq;       /* the lowest seqNumber a rank is missing (UINT64_MAX: none) */
    uint32_t nmissing, nknown;
    int32_t missing[NSC_HANG_SUSPECT_RANKS];
    struct nsc_opst_comm st;
    int have_st;
};

struct fired_key {
    uint32_t serial;
    uint16_t func;
    uint64_t seq;
};

struct suspect_state {
    pthread_t thread;
    int running, left_behind;
    pthread_mutex_t mu;     /* stop_req, done, current[], counters; running for the metrics thread */
    pthread_cond_t cv;      /* CLOCK_MONOTONIC */
    int stop_req, done;
    struct timespec stop_deadline; /* CLOCK_MONOTONIC, from the stop request */
    char dir[NSC_CONFIG_DIR_MAX + 1], name[200];
    uint32_t seconds, hang_seconds, exit_wait_ms, nrings;
    uint64_t tps, lag_ticks; /* lag_ticks: a ring waiting this long for the drainer lags */
    /* the thread's own memory, made at start */
    struct nsc_prog_pair *pairs;
    struct nsc_comm_info *infos;
    char *text, *rbuf, *names;
    /* the writer process's channel (engine.h), or -1: the calls are ours */
    int aux;
    struct peer *peers;
    uint32_t npeers;
    struct nsc_pf_entry *stage;
    uint32_t nstage;
    int stage_full;          /* the file had more lines than STAGE_MAX */
    struct cand *cands;
    uint32_t ncands;
    uint64_t *lag_tail, *lag_since;
    struct fired_key *fired_keys;
    uint32_t nfired_keys;
    /* certainty (suspect.c, check_certainty) */
    uint64_t gen, uncertain, drops_seen, unfollowed_seen;
    int write_failing, ok;
    /* under mu: what the metrics show */
    struct nsc_hang_suspect current[MAX_SUSPECTS];
    uint32_t ncurrent;
    uint64_t write_failures, read_failures, left_out;
};
extern struct suspect_state nsc_sus; /* the suspect thread's (suspect.c) */


/* suspect_peers.c: the file system, through the writer process when one
 * runs (nsc_sus.aux), else in this thread (progress_file.h) */
int sus_io_write(const char *name, const char *text, size_t len);
long sus_io_read(const char *name, char *buf, size_t cap);
long sus_io_list(char *buf, size_t cap, uint64_t *left);
int sus_io_unlink(const char *name);
void sus_stage_entry(void *ud, const struct nsc_pf_entry *e);
void sus_stage_trim(void);
/* The staged lines of one process, as of `obs` (ticks) or later, against
 * the candidates. */
void sus_compare(uint64_t obs);
/* Lists the directory's progress files (the first NSC_SUSPECT_PEERS other
 * than ours; the rest counted in *left_out), forgetting peers gone. */
void sus_list_peers(uint64_t *left_out, uint64_t *failures);
/* Reads each listed peer's file and compares the fresh ones. */
void sus_read_peers(uint64_t *failures);

#endif /* NSC_SUSPECT_INT_H */
