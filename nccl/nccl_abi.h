// SPDX-License-Identifier: Apache-2.0
/*
 * nccl_abi.h - the NCCL profiler plugin ABI, versions 1 to 7, as ncclscope sees it.
 *
 * Written from the layout NCCL documents in plugins/profiler/README.md and
 * its profiler_v*.h headers (NCCL 2.23 = v1 ... NCCL 2.29/2.30 = v6, NCCL
 * 2.31 = v7; v7 read from NVIDIA/nccl commit 8898068360978085, where NCCL
 * first asks for ncclProfiler_v7, then v6 ... v1). This is our
 * own description of the binary interface, not a copy: names carry an
 * `nsc_abi_` prefix so the file can sit beside the real nccl.h in programs
 * that link NCCL (bench/gpu), and every struct's size and key offsets are
 * checked below with _Static_assert for LP64, so a layout mistake fails the
 * build instead of corrupting a training job.
 *
 * Who calls what: NCCL calls init/finalize once per communicator from the
 * thread creating/destroying it, and startEvent/stopEvent/recordEventState
 * from the application threads, the proxy progress thread and network
 * plugin helper threads, concurrently. From NCCL 2.31 on, KernelCh (and
 * v7's KernelPhase) come from a profiler thread NCCL starts per device
 * (shared by the communicators that share resources), no longer from the
 * proxy thread.
 */
#ifndef NSC_NCCL_ABI_H
#define NSC_NCCL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t is an int-sized enum; only ncclSuccess is ever returned by
 * callbacks, init may return an error to disable the plugin for that comm. */
typedef int nsc_abi_result;
enum { NSC_ABI_SUCCESS = 0, NSC_ABI_INTERNAL_ERROR = 3, NSC_ABI_INVALID_USAGE = 5 };

/* ncclDebugLogger_t and the levels/subsystems we use. */
enum { NSC_ABI_LOG_WARN = 2, NSC_ABI_LOG_INFO = 3 };
enum { NSC_ABI_LOG_SUBSYS_INIT = 0x1, NSC_ABI_LOG_SUBSYS_PROFILE = 0x4000 };
typedef void (*nsc_abi_logger)(int level, unsigned long flags, const char *file, int line,
                               const char *fmt, ...);

/* Event type bits (descriptor `type` and the activation mask). */
enum {
    NSC_ABI_GROUP = 1 << 0,
    NSC_ABI_COLL = 1 << 1,
    NSC_ABI_P2P = 1 << 2,
    NSC_ABI_PROXY_OP = 1 << 3,
    NSC_ABI_PROXY_STEP = 1 << 4,
    NSC_ABI_PROXY_CTRL = 1 << 5,
    NSC_ABI_KERNEL_CH = 1 << 6,
    NSC_ABI_NET_PLUGIN = 1 << 7,
    NSC_ABI_GROUP_API = 1 << 8,     /* v5 */
    NSC_ABI_COLL_API = 1 << 9,      /* v5 */
    NSC_ABI_P2P_API = 1 << 10,      /* v5 */
    NSC_ABI_KERNEL_LAUNCH = 1 << 11, /* v5 */
    NSC_ABI_CE_COLL = 1 << 12,      /* v6 */
    NSC_ABI_CE_SYNC = 1 << 13,      /* v6 */
    NSC_ABI_CE_BATCH = 1 << 14,     /* v6 */
    NSC_ABI_KERNEL_PHASE = 1 << 15, /* v7: needs KERNEL_CH, which NCCL then turns on itself */
};

/* ncclProfilerEventState_t: one numbering shared by all versions. */
enum {
    NSC_ABI_PROXY_OP_SEND_POSTED = 0, /* 0..7: ProxyOp states, deprecated in v4 */
    NSC_ABI_PROXY_OP_RECV_DONE = 7,
    NSC_ABI_PROXY_STEP_SEND_GPU_WAIT = 8,
    NSC_ABI_PROXY_STEP_SEND_WAIT = 9,
    NSC_ABI_PROXY_STEP_RECV_WAIT = 10,
    NSC_ABI_PROXY_STEP_RECV_FLUSH_WAIT = 11,
    NSC_ABI_PROXY_STEP_RECV_GPU_WAIT = 12,
    NSC_ABI_PROXY_CTRL_IDLE = 13,
    NSC_ABI_PROXY_CTRL_ACTIVE = 14,
    NSC_ABI_PROXY_CTRL_SLEEP = 15,
    NSC_ABI_PROXY_CTRL_WAKEUP = 16,
    NSC_ABI_PROXY_CTRL_APPEND = 17,
    NSC_ABI_PROXY_CTRL_APPEND_END = 18,
    NSC_ABI_PROXY_OP_IN_PROGRESS_V4 = 19,
    NSC_ABI_PROXY_STEP_SEND_PEER_WAIT_V4 = 20,
    NSC_ABI_NET_PLUGIN_UPDATE = 21,
    NSC_ABI_KERNEL_CH_STOP = 22,
    NSC_ABI_GROUP_START_API_STOP = 23,
    NSC_ABI_GROUP_END_API_START = 24,
    NSC_ABI_CE_COLL_START = 25, /* 25..30 are defined by v6 but never delivered */
    NSC_ABI_CE_BATCH_COMPLETE = 30,
    NSC_ABI_KERNEL_PHASE_STOP = 31, /* v7: args are kernelCh.pTimer, the phase's GPU end */
    NSC_ABI_STATE_COUNT = 32
};

/* Network plugin event identifiers (NetPlugin descriptor `id`): the low 16
 * bits are the plugin's event-struct version, the next 16 its type. */
#define NSC_ABI_NET_VER_MASK 0xffffu
#define NSC_ABI_NET_TYPE_IB (1u << 16)
#define NSC_ABI_NET_TYPE_SOCK (2u << 16)
#define NSC_ABI_NET_TYPE_MASK 0xffff0000u

typedef struct {
    uint8_t type; /* ncclProfileQp = 1 */
    union {
        struct {
            int device;
            uint64_t wr_id;
            int opcode;
            int qpNum;
            size_t length;
        } qp;
    };
} nsc_abi_net_ib_v1;

typedef struct {
    uint8_t type; /* ncclProfileSocket = 1 */
    union {
        struct {
            int fd;
            int op;
            size_t length;
        } sock;
    };
} nsc_abi_net_sock_v1;

/* ---- v1 (NCCL 2.23): enums instead of strings, 8-bit type ---- */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            uint8_t func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            uint8_t datatype;
            uint32_t op;
            size_t trafficBytes;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            uint8_t algo;
            uint8_t proto;
            int isCollnet;
            int isNvls;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            uint8_t func;
            void *buff;
            uint8_t datatype;
            size_t count;
            int peer;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer;
            int nSteps;
            int chunkSize;
            int isSend;
        } proxyOp;
        struct {
            int step;
        } proxyStep;
    };
} nsc_abi_descr_v1;

/* v1..v3 state arguments. */
typedef union {
    struct {
        size_t transSize;
        int steps;
    } proxyOp;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
} nsc_abi_state_args_v1;

/* ---- v2 (NCCL 2.24): strings ---- */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            size_t trafficBytes;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer;
            int nSteps;
            int chunkSize;
            int isSend;
        } proxyOp;
        struct {
            int step;
        } proxyStep;
    };
} nsc_abi_descr_v2;

/* ---- v3 (NCCL 2.25): KernelCh, NetPlugin ---- */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer;
            int nSteps;
            int chunkSize;
            int isSend;
        } proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
        } kernelCh;
        struct {
            int64_t id;
            void *data;
        } netPlugin;
    };
} nsc_abi_descr_v3;

/* ---- v4 (NCCL 2.26) ---- */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer;
            int nSteps;
            int chunkSize;
            int isSend;
        } proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct {
            int64_t id;
            void *data;
        } netPlugin;
    };
} nsc_abi_descr_v4;

/* v4..v7 state arguments. */
typedef union {
    struct {
        size_t transSize;
    } proxyStep;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
    struct {
        void *data;
    } netPlugin;
    struct {
        uint64_t pTimer;
    } kernelCh;
} nsc_abi_state_args_v4;

/* ---- v5 (NCCL 2.28): API events, 64-bit type ---- */
#define NSC_ABI_V5_COMMON_MEMBERS                                                              \
    struct {                                                                                   \
        bool graphCaptured;                                                                    \
        int groupDepth;                                                                        \
    } groupApi;                                                                                \
    struct {                                                                                   \
        const char *func;                                                                      \
        size_t count;                                                                          \
        const char *datatype;                                                                  \
        int root;                                                                              \
        void *stream;                                                                          \
        bool graphCaptured;                                                                    \
    } collApi;                                                                                 \
    struct {                                                                                   \
        const char *func;                                                                      \
        size_t count;                                                                          \
        const char *datatype;                                                                  \
        void *stream;                                                                          \
        bool graphCaptured;                                                                    \
    } p2pApi;                                                                                  \
    struct {                                                                                   \
        void *stream;                                                                          \
    } kernelLaunch;                                                                            \
    struct {                                                                                   \
        uint64_t seqNumber;                                                                    \
        const char *func;                                                                      \
        const void *sendBuff;                                                                  \
        void *recvBuff;                                                                        \
        size_t count;                                                                          \
        int root;                                                                              \
        const char *datatype;                                                                  \
        uint8_t nChannels;                                                                     \
        uint8_t nWarps;                                                                        \
        const char *algo;                                                                      \
        const char *proto;                                                                     \
        void *parentGroup;                                                                     \
    } coll;                                                                                    \
    struct {                                                                                   \
        const char *func;                                                                      \
        void *buff;                                                                            \
        const char *datatype;                                                                  \
        size_t count;                                                                          \
        int peer;                                                                              \
        uint8_t nChannels;                                                                     \
        void *parentGroup;                                                                     \
    } p2p;                                                                                     \
    struct {                                                                                   \
        pid_t pid;                                                                             \
        uint8_t channelId;                                                                     \
        int peer;                                                                              \
        int nSteps;                                                                            \
        int chunkSize;                                                                         \
        int isSend;                                                                            \
    } proxyOp;                                                                                 \
    struct {                                                                                   \
        int step;                                                                              \
    } proxyStep;                                                                               \
    struct {                                                                                   \
        uint8_t channelId;                                                                     \
        uint64_t pTimer;                                                                       \
    } kernelCh;                                                                                \
    struct {                                                                                   \
        int64_t id;                                                                            \
        void *data;                                                                            \
    } netPlugin

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        NSC_ABI_V5_COMMON_MEMBERS;
    };
} nsc_abi_descr_v5;

/* ---- v6 (NCCL 2.29): copy-engine events; state args as v5 ---- */
typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        NSC_ABI_V5_COMMON_MEMBERS;
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            const char *syncStrategy;
            bool intraBatchSync;
            uint32_t batchSize;
            uint32_t numBatches;
            uint32_t ceSeqNum;
            void *stream;
        } ceColl;
        struct {
            bool isComplete;
            int nRanks;
        } ceCollSync;
        struct {
            int numOps;
            size_t totalBytes;
            bool useIntraSync;
        } ceCollBatch;
    };
} nsc_abi_descr_v6;

/* ---- v7 (NCCL 2.31): user tags, kernel variants, KernelPhase ----
 * Every v6 member keeps its offset; v7 only appends to collApi, p2pApi,
 * coll, p2p and ceColl and adds kernelPhase (checked below), so a plugin of
 * an older version can read a v7 descriptor's v6 part where it lies. */
typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            bool graphCaptured;
            int groupDepth;
        } groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
            uint64_t userTag; /* the call's ncclCollConfig_t userProfilerTag; 0 = none */
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
            uint64_t userTag;
        } p2pApi;
        struct {
            void *stream;
        } kernelLaunch;
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
            void *parentGroup;
            const char *kernelVariant; /* symmetric kernels ("AGxLL_R"), else NULL */
            bool isSymColl;
            uint64_t userTag;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
            uint64_t userTag;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer;
            int nSteps;
            int chunkSize;
            int isSend;
        } proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct {
            int64_t id;
            void *data;
        } netPlugin;
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            const char *syncStrategy;
            bool intraBatchSync;
            uint32_t batchSize;
            uint32_t numBatches;
            uint32_t ceSeqNum;
            void *stream;
            uint64_t userTag;
        } ceColl;
        struct {
            bool isComplete;
            int nRanks;
        } ceCollSync;
        struct {
            int numOps;
            size_t totalBytes;
            bool useIntraSync;
        } ceCollBatch;
        struct {
            uint8_t channelId;
            uint8_t phaseId;       /* 0 initial_sync, 1 compute, 2 final_sync */
            const char *phaseName;
            uint64_t pTimer;       /* GPU %globaltimer at the phase's start */
        } kernelPhase;
    };
} nsc_abi_descr_v7;
/* v7 state arguments: the v4 union; KernelPhaseStop uses kernelCh.pTimer. */
typedef nsc_abi_state_args_v4 nsc_abi_state_args_v7;

/* ---- the exported tables ---- */
typedef struct {
    const char *name;
    nsc_abi_result (*init)(void **context, int *eActivationMask);
    nsc_abi_result (*startEvent)(void *context, void **eHandle, void *eDescr);
    nsc_abi_result (*stopEvent)(void *eHandle);
    nsc_abi_result (*recordEventState)(void *eHandle, int eState, void *eStateArgs);
    nsc_abi_result (*finalize)(void *context);
} nsc_abi_profiler_v1; /* same layout for v2 and v3 */

typedef struct {
    const char *name;
    nsc_abi_result (*init)(void **context, int *eActivationMask, const char *commName,
                           uint64_t commHash, int nNodes, int nranks, int rank,
                           nsc_abi_logger logfn);
    nsc_abi_result (*startEvent)(void *context, void **eHandle, void *eDescr);
    nsc_abi_result (*stopEvent)(void *eHandle);
    nsc_abi_result (*recordEventState)(void *eHandle, int eState, void *eStateArgs);
    nsc_abi_result (*finalize)(void *context);
} nsc_abi_profiler_v4;

typedef struct {
    const char *name;
    nsc_abi_result (*init)(void **context, uint64_t commId, int *eActivationMask,
                           const char *commName, int nNodes, int nranks, int rank,
                           nsc_abi_logger logfn);
    nsc_abi_result (*startEvent)(void *context, void **eHandle, void *eDescr);
    nsc_abi_result (*stopEvent)(void *eHandle);
    nsc_abi_result (*recordEventState)(void *eHandle, int eState, void *eStateArgs);
    nsc_abi_result (*finalize)(void *context);
} nsc_abi_profiler_v5; /* same layout for v6 and v7 */

/* v1 enum values for func, datatype, algo and proto (ncclFunc_t,
 * ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*). */
enum { NSC_ABI_V1_NFUNCS = 11, NSC_ABI_V1_NDTYPES = 12, NSC_ABI_V1_NALGOS = 7, NSC_ABI_V1_NPROTOS = 3 };

/* ---- layout checks (LP64) ---- */
#if defined(__LP64__)
_Static_assert(sizeof(nsc_abi_descr_v1) == 120, "v1 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v1, coll.func) == 48, "v1 coll.func");
_Static_assert(offsetof(nsc_abi_descr_v1, coll.nMaxChannels) == 104, "v1 coll.nMaxChannels");
_Static_assert(offsetof(nsc_abi_descr_v1, coll.isNvls) == 112, "v1 coll.isNvls");
_Static_assert(sizeof(nsc_abi_descr_v2) == 128, "v2 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v2, coll.proto) == 120, "v2 coll.proto");
_Static_assert(sizeof(nsc_abi_descr_v3) == 120, "v3 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v3, coll.algo) == 104, "v3 coll.algo");
_Static_assert(offsetof(nsc_abi_descr_v3, netPlugin.data) == 32, "v3 netPlugin.data");
_Static_assert(sizeof(nsc_abi_descr_v4) == 104, "v4 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v4, coll.nChannels) == 80, "v4 coll.nChannels");
_Static_assert(offsetof(nsc_abi_descr_v4, kernelCh.pTimer) == 32, "v4 kernelCh.pTimer");
_Static_assert(sizeof(nsc_abi_descr_v5) == 112, "v5 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v5, rank) == 16, "v5 rank");
_Static_assert(offsetof(nsc_abi_descr_v5, groupApi.groupDepth) == 28, "v5 groupApi.groupDepth");
_Static_assert(offsetof(nsc_abi_descr_v5, collApi.stream) == 56, "v5 collApi.stream");
_Static_assert(offsetof(nsc_abi_descr_v5, collApi.graphCaptured) == 64, "v5 collApi.graphCaptured");
_Static_assert(offsetof(nsc_abi_descr_v5, coll.nChannels) == 80, "v5 coll.nChannels");
_Static_assert(offsetof(nsc_abi_descr_v5, coll.parentGroup) == 104, "v5 coll.parentGroup");
_Static_assert(offsetof(nsc_abi_descr_v5, p2p.parentGroup) == 64, "v5 p2p.parentGroup");
_Static_assert(offsetof(nsc_abi_descr_v5, proxyOp.isSend) == 44, "v5 proxyOp.isSend");
_Static_assert(sizeof(nsc_abi_descr_v6) == 112, "v6 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v6, ceColl.syncStrategy) == 80, "v6 ceColl.syncStrategy");
_Static_assert(offsetof(nsc_abi_descr_v6, ceColl.intraBatchSync) == 88, "v6 ceColl.intraBatchSync");
_Static_assert(offsetof(nsc_abi_descr_v6, ceColl.stream) == 104, "v6 ceColl.stream");
_Static_assert(offsetof(nsc_abi_descr_v6, ceCollBatch.totalBytes) == 32, "v6 ceCollBatch.totalBytes");
_Static_assert(sizeof(nsc_abi_descr_v7) == 136, "v7 descriptor size");
_Static_assert(offsetof(nsc_abi_descr_v7, collApi.userTag) == 72, "v7 collApi.userTag");
_Static_assert(offsetof(nsc_abi_descr_v7, p2pApi.userTag) == 64, "v7 p2pApi.userTag");
_Static_assert(offsetof(nsc_abi_descr_v7, coll.kernelVariant) == 112, "v7 coll.kernelVariant");
_Static_assert(offsetof(nsc_abi_descr_v7, coll.isSymColl) == 120, "v7 coll.isSymColl");
_Static_assert(offsetof(nsc_abi_descr_v7, coll.userTag) == 128, "v7 coll.userTag");
_Static_assert(offsetof(nsc_abi_descr_v7, p2p.userTag) == 72, "v7 p2p.userTag");
_Static_assert(offsetof(nsc_abi_descr_v7, ceColl.userTag) == 112, "v7 ceColl.userTag");
_Static_assert(offsetof(nsc_abi_descr_v7, kernelPhase.channelId) == 24, "v7 kernelPhase.channelId");
_Static_assert(offsetof(nsc_abi_descr_v7, kernelPhase.phaseId) == 25, "v7 kernelPhase.phaseId");
_Static_assert(offsetof(nsc_abi_descr_v7, kernelPhase.phaseName) == 32, "v7 kernelPhase.phaseName");
_Static_assert(offsetof(nsc_abi_descr_v7, kernelPhase.pTimer) == 40, "v7 kernelPhase.pTimer");
/* v7 extends v6 in place: the v6 members a v7 descriptor shares sit where
 * v6 has them (host.c hands v7 descriptors to v5/v6 plugins as they are). */
#define NSC_ABI_SAME_V6(m)                                                                     \
    _Static_assert(offsetof(nsc_abi_descr_v7, m) == offsetof(nsc_abi_descr_v6, m), "v7/v6 " #m)
NSC_ABI_SAME_V6(groupApi.groupDepth);
NSC_ABI_SAME_V6(collApi.graphCaptured);
NSC_ABI_SAME_V6(p2pApi.graphCaptured);
NSC_ABI_SAME_V6(kernelLaunch.stream);
NSC_ABI_SAME_V6(coll.nWarps);
NSC_ABI_SAME_V6(coll.parentGroup);
NSC_ABI_SAME_V6(p2p.parentGroup);
NSC_ABI_SAME_V6(proxyOp.isSend);
NSC_ABI_SAME_V6(proxyStep.step);
NSC_ABI_SAME_V6(kernelCh.pTimer);
NSC_ABI_SAME_V6(netPlugin.data);
NSC_ABI_SAME_V6(ceColl.stream);
NSC_ABI_SAME_V6(ceCollSync.nRanks);
NSC_ABI_SAME_V6(ceCollBatch.useIntraSync);
#undef NSC_ABI_SAME_V6
_Static_assert(sizeof(nsc_abi_state_args_v1) == 16, "v1 state args");
_Static_assert(sizeof(nsc_abi_state_args_v4) == 8, "v4 state args");
_Static_assert(sizeof(nsc_abi_net_ib_v1) == 40, "IB v1 net descriptor");
_Static_assert(offsetof(nsc_abi_net_ib_v1, qp.length) == 32, "IB v1 length");
_Static_assert(sizeof(nsc_abi_net_sock_v1) == 24, "socket v1 net descriptor");
_Static_assert(sizeof(nsc_abi_profiler_v5) == 48, "profiler table");
#endif

#endif /* NSC_NCCL_ABI_H */
