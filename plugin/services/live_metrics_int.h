// SPDX-License-Identifier: Apache-2.0
/*
 * live_metrics_int.h - live metrics' own structures (live_metrics.h is the API):
 * the operations and children in flight, the series and the comms they are
 * counted in. live_ops.c follows the records into them (the drainer, under
 * mu); prometheus.c copies them under mu and writes the file (the ops
 * thread); live_metrics.c makes and frees them.
 */
#ifndef NSC_LIVE_METRICS_INT_H
#define NSC_LIVE_METRICS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "id_map.h"
#include "live_metrics.h"

/* What is recorded now (control.h tells us): KernelCh in it makes new ops
 * GPU-timed; 0 is a stop. RELAXED: a statistic's mode. */
extern _Atomic uint32_t live_recorded_mask;

#define GRACE_NS 100000000ull /* host timing: quiet this long after the last stop */
#define ORPHAN_PASSES 64      /* a child whose parent never shows up is forgotten */
#define NLAT 22               /* latency buckets besides +Inf */
#define NSIZE 7               /* size buckets */
#define MAX_COMMS_KNOWN 4096
#define RETAIN_MIN_NS 60000000000ull /* a finalized comm stays in the files a minute at least */

#define NFSEQ 12              /* functions whose seqNumber a comm follows */
/* From 1 us: a small NCCL operation on NVLink takes a few microseconds on
 * the GPU, and a first bucket of 10 us would hold all of them. */
static const double lat_le[NLAT] = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4,
                                    5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,
                                    0.25, 0.5, 1, 2.5, 5, 10};
/* Per-rank message bytes (count x datatype size), upper bounds: powers of 16. */
static const char *const size_name[NSIZE] = {"0-1KiB", "1KiB-16KiB", "16KiB-256KiB",
                                              "256KiB-4MiB", "4MiB-64MiB", "64MiB-1GiB",
                                              "1GiB+"};
enum { T_GPU, T_HOST };
static const char *const timing_name[2] = {"gpu", "host"};

struct lat {
    uint64_t b[NLAT + 1]; /* not cumulative; the last is +Inf */
    uint64_t count;
    double sum;           /* seconds */
};

/* One (comm, operation, size bucket). */
struct series {
    uint32_t serial;      /* 0: free slot */
    uint16_t func;        /* string id of the operation's name */
    uint8_t size, p2p;
    uint64_t ops, bytes;  /* counted at START */
    struct lat lat[2];    /* by timing */
    double gpu_bytes;     /* bytes (count x datatype size) of those with a GPU latency */
};

/* A collective function's seqNumbers on one comm (NCCL numbers them per
 * function): the highest enqueued and the highest completed. */
struct fseq {
    uint16_t func;        /* string id; 0: free */
    uint8_t any_done;
    uint64_t enq, done;
};

struct comm {
    uint32_t serial;      /* 0: free slot */
    int described, finalized;
    struct nsc_comm_info info;
    uint64_t in_flight;
    uint64_t first_ticks, last_done_ticks;
    uint64_t first_unix_ns, last_done_unix_ns; /* the same two instants, Unix time */
    struct fseq fseq[NFSEQ];
    uint64_t gone_ns;     /* the first file that showed it finalized and idle (0: none yet) */
};

struct op {
    uint64_t id;          /* 0: free */
    uint32_t serial;      /* its series: (serial, func, size) */
    uint16_t func;
    uint8_t size, p2p;
    uint64_t start_ticks, end_ticks, gpu_start, gpu_end, touched_ns;
    uint64_t bytes, count, seq;
    int32_t peer;         /* P2p */
    uint16_t nch, kch_done, live_kids;
    uint8_t kernel, stopped, coll; /* kernel: KernelCh recorded at its start; coll: seq is its */
    uint8_t proxied;      /* a ProxyOp attached: its stop ends the operation on the host's clock */
};

struct kid {
    uint64_t id;          /* 0: free */
    uint64_t parent;
    uint64_t gpu_start, gpu_end, stop_ticks;
    uint64_t orphan_pass; /* 1 + the pass it was orphaned in; 0: attached */
    uint8_t kch, stopped;
};

struct nsc_live {
    pthread_mutex_t mu;
    char path[1400], tmp[1500];
    char host[64];
    int pid;
    uint64_t ticks_per_sec;
    uint64_t pass, now_ns;
    uint64_t now_ticks, now_unix_ns; /* read with now_ns: record ticks -> Unix time */
    /* op_rules.h: the API version gives the channels KernelCh come on; set
     * again when NCCL's first init joins a session the Python package
     * opened (nsc_live_set_api, another thread): relaxed, a flag */
    _Atomic int channels_known;
    int failing;          /* the last write failed (logged once) */

    struct nsc_id_map ops;  /* id -> struct op, at most NSC_LIVE_OPS */
    uint64_t *fifo;       /* op ids in start order */
    uint32_t fifo_head, fifo_len;
    struct nsc_id_map kids; /* id -> struct kid, at most NSC_LIVE_KIDS */
    uint64_t *orphans;    /* kid ids waiting for their parent's START */
    uint32_t norphans;
    struct series *series; /* open addressing, 2 x NSC_LIVE_SERIES */
    uint32_t nseries;
    struct comm *comms;   /* open addressing, 2 x MAX_COMMS_KNOWN */
    uint32_t ncomms;
    uint8_t dsize[65536]; /* datatype size by string id, 0: not looked up */
    uint64_t overflow;    /* ops not timed or series not created: a bound was hit */
    uint64_t retain_ns;   /* how long a finalized comm stays in the files (nsc_live_create) */
    int compacted;        /* comm_get made room once since the last file */
    uint64_t done_total;
};

/* Set on the drainer while it holds mu for a pass: a hook called from
 * inside the pass (a chunk sealed, comms taken) must not lock again; any
 * other thread locks. */
extern __thread int live_in_pass;

static inline uint64_t live_mix(uint64_t k) { return k * 0x9e3779b97f4a7c15ull; }


#define SERIES_CAP (2u * NSC_LIVE_SERIES)
#define COMMS_CAP (2u * MAX_COMMS_KNOWN)

/* live_ops.c, for prometheus.c (under mu) */
/* Both tables again from src[0..n) without the comms drop() names, nor
 * their series. */
void live_rebuild(struct nsc_live *m, const struct comm *src, uint32_t n,
                  int (*drop)(const struct nsc_live *, const struct comm *));
void live_settle(struct nsc_live *m, uint64_t grace_ns);
/* Reads the clocks now_ns, now_ticks and now_unix_ns (under mu). */
void live_now(struct nsc_live *m);
/* the drainer's record hook (live_metrics.c sets it) */
void live_record(const struct nsc_rec *r);

#endif /* NSC_LIVE_METRICS_INT_H */
