// SPDX-License-Identifier: Apache-2.0
/*
 * trace_format.h - the ncclscope trace file, format version 3.
 * docs/format.md is the written specification with byte tables and the
 * changelog; this header is its C form and must agree with it.
 *
 *   file   := file_header block*
 *   block  := block_header payload            (payload: zstd frame with checksum
 *                                              when NSC_BLK_F_ZSTD, raw otherwise,
 *                                              then its FNV-1a when NSC_BLK_F_SUM)
 *
 * Every block is self-delimiting and independently decodable, and the
 * plugin writes each one with a single write(2), so a process killed at any
 * point leaves a file whose every complete block converts; a reader that
 * meets a damaged block reports its offset, resynchronises on the next
 * block magic, and carries on.
 *
 * All integers are little-endian. Records are fixed 64-byte units (one cache
 * line): a START record, optionally followed by one EXT record with the
 * descriptor fields that do not fit, STOP, STATE, and a few markers.
 */
#ifndef NSC_TRACE_FORMAT_H
#define NSC_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define NSC_FILE_MAGIC "NCCLSCP1" /* 8 bytes, no terminator on disk */
#define NSC_FORMAT_VERSION 4u     /* written */
#define NSC_FORMAT_VERSION_MIN 1u /* still read: v1 has no PACKED chunks */
#define NSC_BLOCK_MAGIC 0x4b4c4253u /* "SBLK" */
#define NSC_FILE_SUFFIX ".nsc"

struct nsc_file_header {
    char magic[8];
    uint32_t format_version;
    uint32_t header_size; /* sizeof(struct nsc_file_header) */
};
_Static_assert(sizeof(struct nsc_file_header) == 16, "file header");

enum nsc_block_type {
    NSC_BLK_SESSION = 1, /* struct nsc_session, first block */
    NSC_BLK_COMMS = 2,   /* struct nsc_comm_info[] */
    NSC_BLK_STRINGS = 3, /* (u32 id, u16 len, bytes)[] */
    NSC_BLK_ANCHOR = 4,  /* struct nsc_anchor */
    NSC_BLK_CHUNK = 5,   /* (struct nsc_segment, records)[] */
    NSC_BLK_STATS = 6,   /* struct nsc_stats_header, struct nsc_thread_stats[] */
    NSC_BLK_END = 7,     /* empty: the session ended cleanly */
    NSC_BLK_PACKED = 8,  /* (struct nsc_packed_segment, packed records)[] (v2) */
    NSC_BLK_HANG = 9,    /* v3: the hang watchdog's in-process state (struct nsc_hang_header ...) */
    NSC_BLK_TYPE_MAX = 9
};

#define NSC_BLK_F_ZSTD 0x1
/* The payload is stored raw and ends with 4 bytes more: FNV-1a 32
 * (nsc_payload_check) of the raw_len bytes before them, so stored_len is
 * raw_len + 4. For blocks that have no zstd frame (whose content checksum
 * protects the others): the crash dump's. Never with NSC_BLK_F_ZSTD. */
#define NSC_BLK_F_SUM 0x2
#define NSC_BLK_SUM_BYTES 4u

struct nsc_block_header {
    uint32_t magic;      /* NSC_BLOCK_MAGIC */
    uint16_t type;       /* enum nsc_block_type */
    uint16_t flags;      /* NSC_BLK_F_* */
    uint32_t stored_len; /* payload bytes following this header */
    uint32_t raw_len;    /* payload bytes after decompression */
    uint32_t seq;        /* 0, 1, 2, ... within the file: a gap means lost blocks */
    uint32_t check;      /* nsc_header_check() of the 20 bytes above */
};
_Static_assert(sizeof(struct nsc_block_header) == 24, "block header");

/* Upper bound a reader accepts for raw_len/stored_len (plugin chunks are far
 * smaller): a damaged length can never make a reader allocate more. */
#define NSC_BLOCK_MAX_RAW (64u << 20)

/* FNV-1a over the first 20 header bytes; catches torn and shifted headers. */
static inline uint32_t nsc_header_check(const struct nsc_block_header *h) {
    const unsigned char *p = (const unsigned char *)h;
    uint32_t x = 2166136261u;
    for (size_t i = 0; i < offsetof(struct nsc_block_header, check); i++)
        x = (x ^ p[i]) * 16777619u;
    return x;
}

/* FNV-1a 32 of a payload, in pieces: x starts at NSC_PAYLOAD_CHECK_SEED.
 * Each step is a bijection of the state for a given byte, so a change
 * confined to one byte (any single bit flip) always changes the result.
 * A pure function: a signal handler may call it. */
#define NSC_PAYLOAD_CHECK_SEED 2166136261u
static inline uint32_t nsc_payload_check(uint32_t x, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++)
        x = (x ^ p[i]) * 16777619u;
    return x;
}

enum nsc_clock_source { NSC_CLOCK_TSC = 1, NSC_CLOCK_MONOTONIC = 2 };

struct nsc_anchor {
    uint64_t ticks;   /* record clock */
    uint64_t mono_ns; /* CLOCK_MONOTONIC */
    uint64_t real_ns; /* CLOCK_REALTIME */
};
_Static_assert(sizeof(struct nsc_anchor) == 24, "anchor");

struct nsc_session {
    uint32_t format_version;
    uint32_t api_version;   /* profiler ABI version NCCL chose: 1..7; 0: none (below) */
    uint32_t pid;
    uint32_t clock_source;  /* enum nsc_clock_source */
    uint64_t ticks_per_sec; /* calibrated estimate; anchors refine it */
    struct nsc_anchor start;
    uint32_t event_mask;    /* what we asked NCCL for */
    uint32_t ring_records;  /* per-thread ring capacity */
    uint32_t max_threads;
    uint32_t flush_ms;
    char host[64];
    char plugin_version[32];
};
_Static_assert(sizeof(struct nsc_session) == 160, "session");

/* A session the Python package opened before any NCCL init (or in a
 * process without NCCL) does not know NCCL's profiler API version yet: its
 * SESSION block says api_version 0 and the configured event mask. When
 * NCCL's first init joins that session, the plugin rewrites the SESSION
 * payload in place (it is stored raw, at NSC_SESSION_PAYLOAD_OFF) with the
 * version NCCL loaded and the mask for it, before any chunk holding NCCL
 * records reaches the file; later files of the session (segments, flight
 * dumps) are written with them. So a file's api_version holds for every
 * NCCL record in it, and 0 means no NCCL communicator took part. */
#define NSC_SESSION_API_NONE 0u
#define NSC_SESSION_PAYLOAD_OFF 40u /* file header (16) + block header (24) */
_Static_assert(NSC_SESSION_PAYLOAD_OFF == sizeof(struct nsc_file_header) + sizeof(struct nsc_block_header),
               "the SESSION payload follows the file header and its block header");

/* A trace written while `ncclscope replay` drove the plugin: host calls were
 * re-timed by the replay, GPU timers (KernelCh/KernelPhase pTimer) are the
 * recorded ones, so host and GPU times do not relate. The plugin cannot know
 * it is replayed; the replay host marks the SESSION blocks of the files the
 * plugin wrote once it closed them, in plugin_version's zero tail (the
 * version text is shorter than NSC_SESSION_REPLAY_OFF). */
#define NSC_SESSION_REPLAY_OFF 24
#define NSC_SESSION_REPLAY_MARK "replay" /* with its NUL: 7 bytes, up to byte 30 */

static inline int nsc_session_replayed(const struct nsc_session *s) {
    const char *m = s->plugin_version + NSC_SESSION_REPLAY_OFF;
    return m[0] == 'r' && m[1] == 'e' && m[2] == 'p' && m[3] == 'l' && m[4] == 'a' && m[5] == 'y' &&
           m[6] == '\0';
}

struct nsc_comm_info {
    uint32_t serial;   /* what START records name in `aux` */
    int32_t rank;      /* from init; -1 when the API version does not say */
    int32_t nranks;
    int32_t nnodes;
    uint64_t comm_id;  /* commHash */
    uint64_t init_ticks;
    char name[96];     /* commName, truncated, NUL-terminated */
};
_Static_assert(sizeof(struct nsc_comm_info) == 128, "comm info");

struct nsc_segment {
    uint32_t thread;   /* writer thread index within the process */
    uint32_t nrecords; /* 64-byte records following */
};

/* A PACKED chunk's segment: nrecords records of one writer thread in
 * nbytes of record_pack.h's encoding. */
struct nsc_packed_segment {
    uint32_t thread;
    uint32_t nrecords;
    uint32_t nbytes;
};

struct nsc_stats_header {
    uint32_t nthreads;          /* struct nsc_thread_stats entries following */
    uint32_t header_size;       /* v3: bytes of this header; 0 in v1/v2 files, whose
                                 * header ends after string_overflow (40 bytes) */
    uint64_t drops_no_thread;   /* callbacks from threads beyond max_threads */
    uint64_t invalid_context;   /* startEvent with a context we did not create */
    uint64_t invalid_handle;    /* stop/state with a handle we did not return */
    uint64_t string_overflow;   /* strings past the intern table's capacity */
    /* ---- v3 ---- */
    uint64_t lost_write;        /* records drained but never written: write errors */
    uint64_t lost_exit;         /* records still in memory when finalize/exit stopped waiting */
    uint64_t comm_overflow;     /* comm descriptions that could not be kept */
    uint64_t memory_peak;       /* bytes of record memory in use at the peak */
    uint64_t memory_budget;     /* bytes of record memory allowed (NCCLSCOPE_MEMORY_MB) */
    int32_t write_errno;        /* errno of the most recent failed write (0: none ever) */
    uint32_t write_errors;      /* failed write(2) calls */
    /* ---- v3, header_size 120 (NCCLSCOPE_MAX_MB, NCCLSCOPE_CHAIN) ---- */
    uint32_t segment;           /* this file's segment number (0 without rotation) */
    uint32_t segments_deleted;  /* older segments of the session deleted to hold the cap */
    uint64_t bytes_deleted;     /* their bytes */
    uint64_t records_deleted;   /* records they held */
    uint64_t chain_lost;        /* calls the chained plugin got without its handle */
    /* ---- v3, header_size 128 (the writer process) ---- */
    uint32_t writer_fallback;   /* 1: the job's own threads wrote this file (the writer
                                 * process could not be started), so a stalled
                                 * directory could hold the job's exit; 0: the writer
                                 * process did (or an older plugin wrote it) */
    uint32_t reserved;
};
#define NSC_STATS_HEADER_V2 40u
#define NSC_STATS_HEADER_88 88u /* v3 before rotation and chaining */
#define NSC_STATS_HEADER_120 120u /* v3 before the writer process */
_Static_assert(sizeof(struct nsc_stats_header) == 128, "stats header");

/* HANG (v3): what the watchdog saw when it fired. Header, then ncomms
 * nsc_hang_comm, nops nsc_hang_op, nproxies nsc_hang_proxy (each array
 * its entry size times its count; sizes in the header, so entries may grow
 * at the end), then nsuspects nsc_hang_suspect (a block of the suspect
 * level; in bytes that were reserved, 0, so readers before it see a block
 * without suspects and skip the array after the others). Function names
 * are text: the block does not depend on the string table. */
struct nsc_hang_header {
    uint32_t header_size;   /* 64 */
    uint16_t comm_size, op_size, proxy_size; /* 96, 80, 48 */
    uint16_t suspect_size;  /* 96 in a suspect block, else 0 (was reserved) */
    uint32_t ncomms, nops, nproxies;
    uint32_t hang_seconds;  /* NCCLSCOPE_HANG_SECONDS */
    uint32_t left_out;      /* operations/ProxyOps in flight that did not fit */
    uint32_t nsuspects;     /* > 0: a suspect block (NCCLSCOPE_SUSPECT_SECONDS) */
    uint32_t suspect_seconds; /* NCCLSCOPE_SUSPECT_SECONDS of a suspect block */
    uint64_t ticks;         /* record clock when the watchdog fired */
    uint64_t slab_full;     /* events left record-only: the slab was full */
    uint64_t slab_orphans;  /* children whose parent's slot was gone */
};
_Static_assert(sizeof(struct nsc_hang_header) == 64, "hang header");

struct nsc_hang_comm {
    uint32_t serial;        /* the COMMS entry */
    int32_t rank;
    uint64_t comm_id;
    uint64_t enq_seq;       /* last enqueued: seqNumber (0 for p2p) */
    uint64_t done_seq;      /* last completed */
    uint64_t done_ticks;    /* when (0: nothing completed yet) */
    uint64_t started, completed; /* operations since init */
    uint32_t in_flight;
    uint8_t enq_etype, done_etype; /* 1 Coll, 2 P2p, 0 none */
    uint8_t stuck;          /* 1: this comm made the watchdog fire */
    uint8_t reserved;
    char enq_func[16], done_func[16];
};
_Static_assert(sizeof(struct nsc_hang_comm) == 96, "hang comm");

struct nsc_hang_op {
    uint64_t id;            /* event id of the Coll/P2p */
    uint64_t seq;           /* seqNumber (Coll) */
    uint64_t start_ticks;
    uint64_t ch_started, ch_done; /* KernelCh channel bitmasks */
    uint32_t serial;        /* comm */
    int32_t peer;           /* P2p peer (-1 for Coll) */
    uint32_t proxies, proxies_done; /* ProxyOps started and stopped */
    uint8_t etype, nch;
    uint8_t stopped;        /* the host-side stop came (enqueued) */
    uint8_t kernel_tracked; /* KernelCh was recorded: ch_done is meaningful */
    uint32_t reserved;
    char func[16];
};
_Static_assert(sizeof(struct nsc_hang_op) == 80, "hang op");

struct nsc_hang_proxy {
    uint64_t op_id;         /* its operation's id */
    int32_t peer, nsteps;
    uint32_t steps_open;    /* ProxySteps posted and not stopped */
    int32_t lowest_open_step; /* the lowest step number among them (-1: none) */
    uint8_t ch, is_send, done, reserved;
    uint16_t waiting[5];    /* open steps: posted, for the GPU, for the peer's receive,
                             * for the network, flushing (enum nsc_hang_wait) */
    uint16_t reserved2;
    uint32_t reserved3, reserved4;
};
_Static_assert(sizeof(struct nsc_hang_proxy) == 48, "hang proxy");

/* A suspect (the suspect level, docs/design.md "Hang suspects"): a rank of
 * this process entered a collective that other ranks of its comm had not
 * entered SUSPECT_SECONDS later, by their progress files. */
#define NSC_HANG_SUSPECT_RANKS 8
struct nsc_hang_suspect {
    uint32_t serial;        /* the COMMS entry */
    int32_t rank;
    uint64_t comm_id;
    uint64_t seq;           /* the first seqNumber of func a rank has not entered */
    uint64_t enq_ticks;     /* when this rank enqueued it, or (0) not kept: earlier */
    uint32_t nranks;        /* the comm's */
    uint32_t nmissing;      /* ranks known not to have entered it */
    uint32_t nknown;        /* ranks whose progress was known (this one included) */
    uint32_t waited_s;      /* seconds at least since this rank enqueued it */
    char func[16];
    int32_t missing[NSC_HANG_SUSPECT_RANKS]; /* the lowest of them, -1 padded */
};
_Static_assert(sizeof(struct nsc_hang_suspect) == 96, "hang suspect");

enum nsc_hang_wait { NSC_HANG_POSTED = 0, NSC_HANG_GPU = 1, NSC_HANG_PEER = 2, NSC_HANG_NET = 3,
                     NSC_HANG_FLUSH = 4 };

struct nsc_thread_stats {
    uint32_t thread;
    uint32_t tid;
    uint64_t records;       /* records written into the ring */
    uint64_t drops_ring;    /* records dropped: ring full */
    uint64_t drops_events;  /* events whose START was dropped (their STOP/STATE too) */
};

/* ---- records ---- */
#define NSC_REC_SIZE 64

enum nsc_rec_kind {
    /* v3: a user's marker (control API or file): aux = string id of its text,
     * payload word 0 = the process's mark number (1, 2, ...), id 0. Kind 0
     * is the one value the packed tag's 3 kind bits had left; older readers
     * skip it. */
    NSC_REC_MARK = 0,
    NSC_REC_START = 1,
    NSC_REC_EXT = 2,   /* continues the START right before it, same id */
    NSC_REC_STOP = 3,
    NSC_REC_STATE = 4,
    NSC_REC_THREAD = 5, /* first record of a writer thread: aux = tid, payload = name */
    NSC_REC_COMM_INIT = 6,     /* aux = comm serial */
    NSC_REC_COMM_FINALIZE = 7, /* aux = comm serial */
    /* v3: a Python event (python/, plugin/api/python_api.c): etype = enum
     * nsc_py_what, aux = location (string id), id 0, u.state.arg below.
     * Packed tags keep 3 bits of kind, where 0 (never written before)
     * stands for 8 (record_pack.h). */
    NSC_REC_PY = 8,
};
/* A MARK record's event type: packed records keep 3 bits of kind, where
 * MARK (0) and PY (8) are both 0; the event type tells them apart. */
#define NSC_MARK_ETYPE 15

/* What a PY record says (its etype field). Enters and exits pair up per
 * thread like a call stack; an exit names the location it leaves. */
enum nsc_py_what {
    NSC_PY_CALL = 0,     /* a Python function entered (or resumed: generators) */
    NSC_PY_RETURN = 1,   /* left (returned, yielded; arg 1: by an exception) */
    NSC_PY_C_CALL = 2,   /* a C function called from traced Python code */
    NSC_PY_C_RETURN = 3, /* it returned (arg 1: raised) */
    NSC_PY_SKIPPED = 4,  /* arg = calls of `aux` not recorded (per-function rate limit) */
};

/* START flags */
#define NSC_RF_FOREIGN_PARENT 0x1 /* PXN: parent belongs to process proxyOp.pid */
#define NSC_RF_HAS_EXT 0x2        /* an EXT record follows */
#define NSC_RF_BAD_PARENT 0x4     /* parentObj was not a handle we made */
#define NSC_RF_PY_PROCESS 0x8     /* v3: py_stack is the process's latest Python caller,
                                   * not this thread's (the thread runs no Python) */
/* v4, on a Coll or P2p START: NCCL's mask had KernelCh when it enqueued the
 * operation, so its KernelCh events (GPU times, completion) will come. With
 * KernelCh sampled (docs/config.md: NCCLSCOPE_KERNEL_SAMPLE) only some
 * operations carry it; the others have no GPU time and no completion of
 * their own. Files before v4 have no such flag: there every operation
 * expects KernelCh when the SESSION mask has KernelCh (nsc_op_sampled). */
#define NSC_RF_SAMPLED 0x10

struct nsc_rec_hdr {
    uint8_t kind;   /* enum nsc_rec_kind */
    uint8_t etype;  /* enum nsc_etype */
    uint16_t flags; /* NSC_RF_* */
    uint32_t aux;   /* START: comm serial; STATE: state; THREAD: tid */
    uint64_t ticks;
    uint64_t id;    /* event id, unique in the process, never 0 */
};

/* Descriptor payloads (32 bytes after the parent id). String fields are ids
 * from the file's string table (0 = NULL). */
union nsc_desc {
    /* py_stack (v3): the Python caller's stack, a string id (0 = none;
     * python_api.c); in bytes that were zero before */
    struct { int32_t depth; uint8_t graph; uint16_t py_stack; } group_api;
    /* a CollApi's user tag (v7) is in its EXT, present only when the tag is not 0 */
    struct { uint64_t count, stream; int32_t root; uint16_t func, dtype; uint8_t graph; uint16_t py_stack; } coll_api;
    struct { uint64_t count, stream; uint16_t func, dtype; uint8_t graph; uint16_t py_stack; uint64_t user_tag; } p2p_api;
    struct { uint64_t stream; } kernel_launch;
    struct { uint64_t seq, count; int32_t root; uint16_t func, dtype, algo, proto; uint8_t nch, nwarps; } coll;
    struct { uint64_t count; int32_t peer; uint16_t func, dtype; uint8_t nch; } p2p;
    struct { int32_t pid, peer, nsteps, chunk; uint8_t ch, is_send; } proxy_op;
    struct { int32_t step; } proxy_step;
    struct { uint64_t ptimer; uint8_t ch; } kernel_ch;
    /* net: kind 0 = unknown (raw data pointer in `a`), 1 = IB v1, 2 = socket v1 */
    struct { uint64_t plugin_id, length; int32_t a, b; uint8_t kind, ev_type; } net;
    /* user tag (v7): high half here, low half in the EXT (no 8 free bytes in either) */
    struct { uint64_t seq, count; int32_t root; uint16_t func, dtype, sync; uint8_t intra; uint32_t user_tag_hi; } ce_coll;
    struct { int32_t nranks; uint8_t complete; } ce_sync;
    struct { uint64_t total_bytes; int32_t num_ops; uint8_t intra; } ce_batch;
    /* v7; ptimer: GPU start (%globaltimer ns), the end is KernelPhaseStop's arg */
    struct { uint64_t ptimer; uint16_t name; uint8_t ch, phase; } kernel_phase;
    uint8_t raw[32];
};
_Static_assert(sizeof(union nsc_desc) == 32, "descriptor payload");
_Static_assert(offsetof(union nsc_desc, p2p_api.user_tag) == 24, "p2p_api.user_tag");
_Static_assert(offsetof(union nsc_desc, group_api.py_stack) == 6, "group_api.py_stack");
_Static_assert(offsetof(union nsc_desc, coll_api.py_stack) == 26, "coll_api.py_stack");
_Static_assert(offsetof(union nsc_desc, p2p_api.py_stack) == 22, "p2p_api.py_stack");
_Static_assert(offsetof(union nsc_desc, ce_coll.user_tag_hi) == 28, "ce_coll.user_tag_hi");
_Static_assert(offsetof(union nsc_desc, kernel_phase.name) == 8, "kernel_phase.name");
_Static_assert(offsetof(union nsc_desc, kernel_phase.phase) == 11, "kernel_phase.phase");

/* Fields added in format 3 (API v7) sit in bytes that were zero before, so
 * older files read as untagged, non-symmetric and without a variant. */
union nsc_ext {
    /* variant: string id of kernelVariant (0 = NULL) */
    struct { uint64_t parent_group, send_buff, recv_buff, user_tag; uint16_t variant; uint8_t is_sym; } coll;
    struct { uint64_t parent_group, buff, user_tag; } p2p;
    struct { uint64_t wr_id; int32_t qp; } net_ib;
    struct { uint64_t send_buff, recv_buff, stream; uint32_t batch_size, num_batches, ce_seq, user_tag_lo; } ce_coll;
    struct { uint64_t user_tag; } coll_api;
    uint8_t raw[40];
};
_Static_assert(sizeof(union nsc_ext) == 40, "ext payload");
_Static_assert(offsetof(union nsc_ext, coll.user_tag) == 24, "ext coll.user_tag");
_Static_assert(offsetof(union nsc_ext, coll.variant) == 32, "ext coll.variant");
_Static_assert(offsetof(union nsc_ext, coll.is_sym) == 34, "ext coll.is_sym");
_Static_assert(offsetof(union nsc_ext, p2p.user_tag) == 16, "ext p2p.user_tag");
_Static_assert(offsetof(union nsc_ext, ce_coll.user_tag_lo) == 36, "ext ce_coll.user_tag_lo");

/* A CeColl's user tag from its two halves (ext may be NULL: low half 0). */
static inline uint64_t nsc_ce_coll_user_tag(const union nsc_desc *d, const union nsc_ext *x) {
    return (uint64_t)d->ce_coll.user_tag_hi << 32 | (x ? x->ce_coll.user_tag_lo : 0u);
}

struct nsc_rec {
    struct nsc_rec_hdr h;
    union {
        struct {
            uint64_t parent; /* parent event id, 0 = none */
            union nsc_desc d;
        } start;
        struct {
            uint64_t arg; /* transSize, appendedProxyOps, pTimer (KernelChStop,
                           * KernelPhaseStop) or the net data pointer */
        } state;
        union nsc_ext ext;
        char thread_name[40];
    } u;
};
_Static_assert(sizeof(struct nsc_rec) == NSC_REC_SIZE, "record is one cache line");
_Static_assert(offsetof(struct nsc_rec, u) == 24, "record header");

/* Event ids are also the handles the plugin gives NCCL (see docs/design.md):
 * bits 0..55 the id, 56..59 the type index, 60 set on an API event (or, API
 * v1-v4, a Group) whose enqueue NCCL made with KernelCh in its mask (the
 * children's NSC_RF_SAMPLED), 63 set when the START record was dropped. */
#define NSC_ID_BITS 56
#define NSC_ID_MASK ((1ull << NSC_ID_BITS) - 1)
#define NSC_HANDLE_ETYPE_SHIFT 56
#define NSC_HANDLE_DROPPED (1ull << 63)
#define NSC_HANDLE_SAMPLED (1ull << 60)
/* Set on a handle of an event ncclscope did not record (its type is not in
 * the recorded mask, or recording is stopped) but handed to a chained
 * plugin (plugin/chain.h): its STOP/STATE are not recorded either, and as a
 * parentObj it reads as no parent, so the trace is what it would be without
 * the chained plugin. Handles never reach the file. */
#define NSC_HANDLE_UNRECORDED (1ull << 62)

/* Will this Coll's or P2p's KernelCh events come (as far as the mask goes:
 * nccl/op_rules.h says which operations NCCL gives none at all)? v4: the
 * START's flag; before: every operation when KernelCh was in the mask. */
static inline int nsc_op_sampled(uint32_t format_version, uint32_t session_mask,
                                 uint16_t start_flags) {
    if (format_version >= 4)
        return (start_flags & NSC_RF_SAMPLED) != 0;
    return (session_mask & (1u << 6)) != 0; /* KernelCh's type bit */
}

#endif /* NSC_TRACE_FORMAT_H */
