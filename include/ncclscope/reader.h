// SPDX-License-Identifier: Apache-2.0
/*
 * ncclscope/reader.h - read ncclscope trace files (.nsc) from C, or from
 * any language that can call C (the Python package binds this library).
 *
 * Link with libncclscope (pkg-config --cflags --libs ncclscope). The API is
 * small on purpose: open a trace, pull its records one at a time with their
 * NCCL descriptor fields already decoded, look up communicators, read what
 * the plugin says it lost, close. Everything else (pairing STARTs with
 * STOPs, timelines, statistics) is the caller's, or the ncclscope tool's.
 *
 * Stability: functions are only added; structs the library hands out are
 * owned by the library and only grow at their end, so a program built
 * against an older header keeps working (the soname's major version changes
 * otherwise). NCCLSCOPE_READER_API says which additions a header has.
 *
 * Damage: a trace written by a process that was killed, or damaged on
 * disk, is still read: what is intact comes out, and each damaged place is
 * one NCCLSCOPE_REC_DAMAGE record whose text names the file and the byte
 * offset. The library never prints and never exits.
 *
 * Threads: one handle per thread at a time; different handles are
 * independent.
 */
#ifndef NCCLSCOPE_READER_H
#define NCCLSCOPE_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLSCOPE_READER_API 1

#if defined(NCCLSCOPE_BUILDING_READER)
#define NCCLSCOPE_API __attribute__((visibility("default")))
#else
#define NCCLSCOPE_API
#endif

typedef struct ncclscope_trace ncclscope_trace; /* opaque */

/* What a record is. START, STOP and STATE are NCCL profiler callbacks
 * (startEvent, stopEvent, recordEventState); the others are ncclscope's. */
enum ncclscope_rec_kind {
    NCCLSCOPE_REC_MARK = 0,          /* a user's marker: text, arg = its number */
    NCCLSCOPE_REC_START = 1,         /* an event began: etype, id, parent, comm, fields */
    NCCLSCOPE_REC_STOP = 3,          /* event id ended */
    NCCLSCOPE_REC_STATE = 4,         /* event id changed state: state, state_name, arg */
    NCCLSCOPE_REC_THREAD = 5,        /* a writer thread's first record: tid, text = its name */
    NCCLSCOPE_REC_COMM_INIT = 6,     /* comm (a serial) was initialised */
    NCCLSCOPE_REC_COMM_FINALIZE = 7, /* comm was finalised */
    NCCLSCOPE_REC_PY = 8,            /* a Python call event: etype = what, text = location */
    NCCLSCOPE_REC_COMM_INFO = 100,   /* comm was described (again): see ncclscope_comm() */
    NCCLSCOPE_REC_DAMAGE = 101,      /* damage: text says where and what; reading goes on */
};

/* A descriptor field's value type. */
enum ncclscope_field_kind {
    NCCLSCOPE_FIELD_U64 = 0,      /* u */
    NCCLSCOPE_FIELD_I64 = 1,      /* i */
    NCCLSCOPE_FIELD_STRING = 2,   /* s (NULL when NCCL passed NULL) */
    NCCLSCOPE_FIELD_POINTER = 3,  /* u: a pointer's value, for identity only */
    NCCLSCOPE_FIELD_EVENT_ID = 4, /* u: the id of another event of this file */
};

/* One field of an NCCL event descriptor, named as NCCL names it
 * ("seqNumber", "func", "count", "algo", ...: the names `ncclscope convert`
 * gives the event's arguments; nccl/event_schema.def in the source lists
 * them per event type). Fields NCCL added in API v7 (userTag,
 * kernelVariant, isSymColl) appear only when set. */
struct ncclscope_field {
    const char *name;
    int kind;          /* enum ncclscope_field_kind */
    uint64_t u;
    int64_t i;
    const char *s;
};

/* One record, valid until the next ncclscope_next() or ncclscope_close().
 * Fields a kind does not use are 0 / NULL. */
struct ncclscope_record {
    int kind;                  /* enum ncclscope_rec_kind */
    uint32_t thread;           /* writer thread index in the file */
    uint32_t tid;              /* its OS thread id (0 while unknown) */
    uint64_t ticks;            /* the record clock as written */
    uint64_t time_ns;          /* CLOCK_MONOTONIC ns, from the anchors read so far */
    unsigned etype;            /* START/STOP/STATE: NCCL event type index (0 Group .. 15 KernelPhase) */
    const char *etype_name;    /* "Coll", "ProxyStep", ... */
    uint64_t id;               /* event id, unique in the file's process */
    uint64_t parent;           /* START: parent event id, 0 = none */
    uint32_t comm;             /* START, COMM_*: comm serial (ncclscope_comm) */
    uint32_t flags;            /* START: trace_format's NSC_RF_* bits */
    int state;                 /* STATE: NCCL's state number */
    const char *state_name;    /* STATE: "KernelChStop", ... */
    uint64_t arg;              /* STATE: its argument; MARK: its number; PY: its argument */
    const char *text;          /* MARK, THREAD, PY, DAMAGE */
    unsigned nfields;          /* START: descriptor fields */
    const struct ncclscope_field *fields;
};

/* A communicator as the plugin described it. */
struct ncclscope_comm {
    uint32_t serial;
    int32_t rank;              /* -1 when the API version did not say */
    int32_t nranks, nnodes;
    uint64_t comm_hash;
    const char *name;
};

/* The recording process and plugin (the file's SESSION block). */
struct ncclscope_session {
    uint32_t format_version;
    uint32_t api_version;      /* the profiler API version NCCL chose; 0: no NCCL
                                * communicator (a session the Python package opened) */
    uint32_t pid;
    uint32_t event_mask;       /* NCCL event types asked for */
    const char *host;
    const char *plugin_version;
    int replayed;              /* written under `ncclscope replay` */
};

/* What the plugin could not keep, from the last STATS block read so far
 * (the last one of a file is the final word). In records. */
struct ncclscope_losses {
    uint64_t dropped;          /* ring full or too many threads */
    uint64_t write;            /* lost to write errors */
    uint64_t exit;             /* still in memory when the process ended */
    uint64_t total;            /* all of the above */
    uint64_t events;           /* events whose START was dropped */
};

/* The library's version text ("0.1.0"): which build a program runs with. */
NCCLSCOPE_API const char *ncclscope_version(void);

/* Opens a trace file and reads its first block. Returns a handle, or NULL
 * with the reason (file, offset, what was expected) in err (errlen bytes;
 * err may be NULL). A file that is not a regular file is refused unread. */
NCCLSCOPE_API ncclscope_trace *ncclscope_open(const char *path, char *err, size_t errlen);

/* The same for a trace in memory (a download, a test); `data` must stay
 * valid until ncclscope_close. `name` stands for the file in messages. */
NCCLSCOPE_API ncclscope_trace *ncclscope_open_memory(const void *data, size_t len,
                                                     const char *name, char *err,
                                                     size_t errlen);

/* The next record in file order, or NULL at the end. Reads one block at a
 * time: memory stays small whatever the file's length. */
NCCLSCOPE_API const struct ncclscope_record *ncclscope_next(ncclscope_trace *t);

/* A comm by serial as described so far, or NULL. Valid until the next
 * call on t. */
NCCLSCOPE_API const struct ncclscope_comm *ncclscope_comm(ncclscope_trace *t, uint32_t serial);

/* The SESSION block, or NULL when the file has none (damaged). */
NCCLSCOPE_API const struct ncclscope_session *ncclscope_session(ncclscope_trace *t);

/* Fills *out and returns 1 when a STATS block has been read, else 0. */
NCCLSCOPE_API int ncclscope_losses(const ncclscope_trace *t, struct ncclscope_losses *out);

/* Damaged places met so far, and the last one's text ("" when none). */
NCCLSCOPE_API unsigned ncclscope_damage_count(const ncclscope_trace *t);
NCCLSCOPE_API const char *ncclscope_last_error(const ncclscope_trace *t);

/* Whether the file ended with its END block: the session closed cleanly
 * (meaningful after the last record). */
NCCLSCOPE_API int ncclscope_complete(const ncclscope_trace *t);

NCCLSCOPE_API void ncclscope_close(ncclscope_trace *t);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_READER_H */
