// SPDX-License-Identifier: Apache-2.0
/*
 * writer_proto.h - what the plugin and its writer process (ncclscope-writer,
 * plugin/writer/) say to each other (docs/design.md, "The writer process").
 *
 * Why a process: a thread that enters a file system which stalls (fsfreeze,
 * a hard NFS mount whose server is gone) sleeps uninterruptibly, and one
 * such thread keeps its whole process from exiting. So once a session is
 * up, no thread of the application's process makes a file-system call on
 * the trace directory: the writer does, and the plugin's threads only wait
 * on a socket, which an exit ends at once.
 *
 * Channels, each a stream socket used by one thread at a time:
 *   fd 3: the engine's (the compressor whose turn it is; the session's end);
 *   fd 4: the flight watcher's (dump-now, dump-all);
 *   fd 5: the crash area, a memfd shared with the plugin (below), or none;
 *   fd 6: the crash area's doorbell: a byte says a dump is READY;
 *   fd 7: the hang suspect level's (its progress files: REPLACE, READ,
 *         LIST, UNLINK), so that its reads never wait behind a chunk.
 * A request is struct nsc_wreq followed by len bytes (a NUL-terminated path,
 * or the data to append); every request gets one struct nsc_wrep, READ's
 * and LIST's followed by rc bytes. The
 * writer's descriptors are numbers in its own process: the plugin only
 * passes them back.
 *
 * The crash area: a fatal signal's handler copies its dump into data[]
 * (memcpy and atomic stores: async-signal-safe, no file system), and the
 * writer writes it to `path` once `state` is READY (the handler rings the
 * doorbell, then waits up to NCCLSCOPE_EXIT_WAIT_MS for `state` to be IDLE
 * again, so that the dump is on disk when the process ends unless the
 * directory stalls), or with whatever whole blocks `len` covers when the
 * plugin's process is gone first.
 */
#ifndef NSC_WRITER_PROTO_H
#define NSC_WRITER_PROTO_H

#include <stdatomic.h>
#include <stdint.h>

/* Shared between two processes: only lock-free atomics work there. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2, "lock-free atomics");

#define NSC_WRITER_EXE "ncclscope-writer"
#define NSC_WFD_ENGINE 3
#define NSC_WFD_WATCH 4
#define NSC_WFD_CRASH 5
#define NSC_WFD_WAKE 6
#define NSC_WFD_AUX 7
#define NSC_WRITER_MAX_DATA (256u << 20) /* the largest append the writer accepts */
#define NSC_WRITER_MAX_REPLY (1u << 20)  /* the most READ and LIST return */

enum nsc_wop {
    NSC_WOP_MKDIR = 1, /* mkdir -p path (mode 0750 before the umask) */
    NSC_WOP_CREATE,    /* open(path, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW, mode): rc = its fd */
    NSC_WOP_APPEND,    /* write the data to fd; on failure cut the file back to `off` bytes */
    NSC_WOP_CLOSE,     /* close fd */
    NSC_WOP_UNLINK,    /* unlink path */
    NSC_WOP_MTIME,     /* lstat path: a regular file's mtime in sec/nsec, else rc -1 */
    NSC_WOP_TOUCH,     /* open path (O_CREAT|O_NOFOLLOW|O_NONBLOCK), a regular file only:
                          set its mtime to now and return it */
    NSC_WOP_PWRITE,    /* write the data to fd at `off`, in place (the SESSION header
                          NCCL's first init rewrites); the file's end does not move */
    NSC_WOP_REPLACE,   /* data: path, NUL, the file's bytes: written to a new temporary
                          of an unpredictable name beside it (".name.XXXXXX", O_EXCL),
                          chmod `mode`, renamed over path (a link there is replaced,
                          never followed) */
    NSC_WOP_READ,      /* path, opened O_NOFOLLOW|O_NONBLOCK: a regular file of at most
                          `off` bytes (EFBIG past it, EINVAL not regular, ELOOP a link);
                          rc its length, its bytes after the reply */
    NSC_WOP_LIST,      /* data: dir, NUL, suffix: the names in dir that end with suffix
                          and do not start with '.', each NUL-terminated, at most `off`
                          bytes of them (rc; after the reply); sec: names left out */
};

struct nsc_wreq {
    uint32_t op;
    int32_t fd;
    uint64_t off;
    uint32_t len;  /* bytes that follow */
    uint32_t mode;
};

struct nsc_wrep {
    int32_t rc;    /* -1 on failure */
    int32_t err;   /* errno on failure */
    int64_t sec, nsec;
};

enum nsc_crash_state { NSC_CRASH_IDLE, NSC_CRASH_FILLING, NSC_CRASH_READY };

struct nsc_crash_area {
    _Atomic uint32_t state;
    uint32_t mode;          /* the dump file's mode */
    char dir[1024];         /* made first (mkdir -p) */
    char path[1280];        /* created with O_EXCL|O_NOFOLLOW */
    /* bytes of data[] that hold whole blocks: RELEASE after each block (the
     * handler), ACQUIRE by the writer */
    _Atomic uint64_t len;
    uint64_t cap;           /* bytes of data[] */
    _Atomic uint64_t dumps_written; /* the writer's count, for the plugin's tests */
    unsigned char data[] __attribute__((aligned(64)));
};

#endif /* NSC_WRITER_PROTO_H */
