// SPDX-License-Identifier: Apache-2.0
/*
 * watchdog_driver.c - drives the plugin (loaded as NCCL loads it) through
 * the hang watchdog's cases; tests/cli/test_watchdog.py checks the trace and
 * the log lines. Run with NCCLSCOPE_HANG_SECONDS=1.
 *
 *   watchdog_driver --plugin SO --mode rearm|full|orphan|sessions|fork|learn|metrics|busy|p2p-lost|p2p-group
 *
 * rearm:  AllReduce 0 stays in flight (channel 0 never stops) for a stall,
 *         then completes; AllReduce 1 the same; then a Send to its own rank
 *         and a Recv of zero bytes, which NCCL gives no KernelCh (no proxy
 *         work), and 1.5 s with nothing else in flight. The watchdog must
 *         fire twice (once per stall), not while idle.
 * full:   20,000 AllReduces enqueued whose kernels never finish: more than
 *         the slab's 16,384 slots. The rest are record-only (counted); the
 *         trace holds every event; then a stall: one HANG block.
 * orphan: AllReduce 0 completes (its slot is freed), AllReduce 1 starts
 *         (and takes that slot), then a late ProxyOp of AllReduce 0 comes:
 *         it must be counted as an orphan, not attached to AllReduce 1, and
 *         still name AllReduce 0 as its parent in the trace; then a stall.
 * sessions: a session with the watchdog (NCCLSCOPE_HANG_SECONDS as given)
 *         ends, and a second one starts in the same process with
 *         NCCLSCOPE_HANG_SECONDS=0; prints "slab handles: N M", how many of
 *         each session's 100 AllReduces (never completed) got a slab handle
 *         (bit 61, slab.h), then "recorded: N M", how many were recorded
 *         (bits 62 and 63 clear). Without a watchdog there is no scanner:
 *         the second must give no slab handle, and still record.
 * fork:   forks; the child starts 100 AllReduces and prints "child slab
 *         handles: N" (it has no watchdog thread: N must be 0), then the
 *         parent one, "parent slab handle: 1".
 * learn:  10 AllReduces without children; one whose ProxyOp comes from
 *         another process (PXN: it says nothing of this comm) and 10 more;
 *         one with a ProxyOp of ours (started after its stop, as NCCL
 *         does) and 10 more; 10 on a second communicator of one node; 1 on
 *         a third across 2 nodes; prints "learn slab handles: A B C D E F",
 *         how many of each group (10, 10, 1, 10, 10, 1) got a slab handle.
 *         Without KernelCh in the mask only a comm whose ProxyOps were seen,
 *         or that spans nodes, takes slots: 0 0 0 10 0 1; with it, every
 *         operation does: 10 10 1 10 10 1.
 * metrics: for live metrics (test_live_metrics.py, KernelCh recorded): a
 *         Send to its own rank, a Recv of zero bytes from another, a Send
 *         of zero bytes to itself (NCCL gives these no KernelCh), then 50
 *         AllReduces (seqNumber 0..49) whose two channels both stop; prints
 *         "waiting" and waits for a line on stdin (3 s when stdin ends),
 *         while the test reads the metrics file.
 * busy:   a busy comm keeps 4,200 AllReduces in flight and completes the
 *         oldest (and starts another) every 10 ms: it progresses; beside
 *         it a second comm (id 0x5744000b) has one AllReduce whose channel
 *         never stops. Prints "stalled" after both started, then goes on
 *         completing until a line on stdin (3 s when stdin ends). The
 *         watchdog must report the second comm, and only it.
 * p2p-lost: four Sends to peer 1 (two channels each), one after the other
 *         (each starts after the previous one stopped: later launches);
 *         Send 0's channel 0 KernelCh stop never comes, the others all do;
 *         then 2.5 s with nothing in flight. Send 0 completed (the comm's
 *         kernels run in order): the watchdog must stay silent.
 * p2p-group: two Sends that start together (one launch, as in a group)
 *         before either stops, Send 0's channel 0 stop lost: Send 1
 *         finishing proves nothing about Send 0 (a launch's channels run
 *         independently), which stays in flight: a stall.
 * two-ranks: one process holding two ranks of a comm, as a process that
 *         drives several GPUs (nccl-tests -g 2): comm 0x5744000c, rank 0
 *         enqueues AllReduce 0..4, rank 1 only 0..3 (they complete, but
 *         rank 0's 4, whose kernel waits for rank 1); comm 0x5744000d,
 *         both ranks 0..4, all complete. Prints "stalled" and
 *         waits for a line on stdin (3 s when stdin ends). The suspect level
 *         must name rank 1 for comm 0x5744000c's AllReduce 4, from this
 *         process's own table (no other process), and nothing else.
 * A stall: prints "stalled" and waits for a line on stdin, which the test
 * sends once the watchdog's log line is out (how long a firing takes on a
 * loaded machine is not ours to guess); when stdin ends, it sleeps the
 * stall's nominal length instead (2 s for rearm, 1.5 s otherwise).
 * Prints "done" before finalizing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"

static struct nsc_host host;
static void *ctx;

static void *start(nsc_abi_descr_v7 *d) {
    void *h = NULL;
    nsc_host_start(&host, ctx, &h, d);
    return h;
}

static void *coll(uint64_t seq, int nch) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_COLL;
    d.coll.seqNumber = seq;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.count = 1024;
    d.coll.nChannels = (uint8_t)nch;
    void *op = start(&d);
    nsc_host_stop(&host, op);
    return op;
}

static void *kch(void *op, int ch) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_KERNEL_CH;
    d.parentObj = op;
    d.kernelCh.channelId = (uint8_t)ch;
    d.kernelCh.pTimer = 1000;
    return start(&d);
}

static void kch_stop(void *k) {
    nsc_host_state(&host, k, NSC_ABI_KERNEL_CH_STOP, 2000);
    nsc_host_stop(&host, k);
}

static void *send_start(void) {
    nsc_abi_descr_v7 d;
    memset(&d, 0, sizeof(d));
    d.type = NSC_ABI_P2P;
    d.rank = 0;
    d.p2p.func = "Send";
    d.p2p.datatype = "ncclInt8";
    d.p2p.count = 4096;
    d.p2p.peer = 1;
    d.p2p.nChannels = 2;
    return start(&d);
}

/* Operations in flight, nothing completing: until the test says go on. */
static void stall(useconds_t nominal_us) {
    char line[16];
    printf("stalled\n");
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
        usleep(nominal_us); /* stdin ended: no one to wait for */
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *mode = "rearm";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else {
            fprintf(stderr, "watchdog_driver: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    char err[1024];
    if (!plugin || nsc_host_load(&host, plugin, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "watchdog_driver: %s\n", plugin ? err : "--plugin is required");
        return 1;
    }
    int mask = 0;
    if (nsc_host_init(&host, &ctx, 0x57440001ull, &mask, "watchdog", 1, 1, 0) != 0 || !ctx) {
        fprintf(stderr, "watchdog_driver: init failed\n");
        return 1;
    }
    if (!strcmp(mode, "rearm")) {
        for (uint64_t s = 0; s < 2; s++) {
            void *op = coll(s, 2);
            kch_stop(kch(op, 1));
            void *k0 = kch(op, 0);
            stall(2000000);
            kch_stop(k0);
        }
        for (int i = 0; i < 2; i++) {
            nsc_abi_descr_v7 d;
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_P2P;
            d.rank = 0;
            d.p2p.func = i ? "Recv" : "Send";
            d.p2p.datatype = "ncclInt8";
            d.p2p.count = i ? 0 : 4096;
            d.p2p.peer = i ? 1 : 0; /* itself; zero bytes from another */
            d.p2p.nChannels = 1;
            nsc_host_stop(&host, start(&d));
        }
        usleep(1500000);
    } else if (!strcmp(mode, "full")) {
        for (uint64_t s = 0; s < 20000; s++)
            kch(coll(s, 1), 0); /* the channel never stops */
        stall(1500000);
    } else if (!strcmp(mode, "orphan")) {
        void *op0 = coll(0, 1);
        kch_stop(kch(op0, 0)); /* complete: its slot goes back */
        void *op1 = coll(1, 1); /* in flight: takes the slot */
        (void)op1;
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_PROXY_OP;
        d.parentObj = op0; /* a late child of AllReduce 0 */
        d.proxyOp.pid = getpid();
        d.proxyOp.peer = 1;
        d.proxyOp.nSteps = 1;
        d.proxyOp.isSend = 1;
        void *pop = start(&d);
        nsc_host_stop(&host, pop);
        stall(1500000);
    } else if (!strcmp(mode, "sessions")) {
        int n[2] = {0, 0}, rec[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            if (k == 1) {
                nsc_host_finalize(&host, ctx); /* the last comm: the session ends */
                setenv("NCCLSCOPE_HANG_SECONDS", "0", 1);
                if (nsc_host_init(&host, &ctx, 0x57440002ull, &mask, "watchdog", 1, 1, 0) != 0 ||
                    !ctx) {
                    fprintf(stderr, "watchdog_driver: second init failed\n");
                    return 1;
                }
            }
            for (uint64_t s = 0; s < 100; s++) {
                uintptr_t h = (uintptr_t)coll(s, 1);
                n[k] += (int)(h >> 61 & 1);
                rec[k] += h && !(h >> 62); /* recorded: neither dropped nor unrecorded */
            }
        }
        printf("slab handles: %d %d\nrecorded: %d %d\n", n[0], n[1], rec[0], rec[1]);
    } else if (!strcmp(mode, "fork")) {
        /* the child of a fork has no watchdog thread: its operations take
         * no slots (nobody would ever free them) */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int n = 0;
            for (uint64_t s = 0; s < 100; s++)
                n += (int)((uintptr_t)coll(s, 1) >> 61 & 1);
            printf("child slab handles: %d\n", n);
            fflush(stdout);
            _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
            fprintf(stderr, "watchdog_driver: fork child failed\n");
            return 1;
        }
        printf("parent slab handle: %d\n", (int)((uintptr_t)coll(0, 1) >> 61 & 1));
    } else if (!strcmp(mode, "learn")) {
        int n[6] = {0, 0, 0, 0, 0, 0};
        uint64_t s = 0;
        for (int k = 0; k < 10; k++)
            n[0] += (int)((uintptr_t)coll(s++, 1) >> 61 & 1);
        for (int pxn = 1; pxn >= 0; pxn--) {
            void *op = coll(s++, 1);
            n[2] += pxn ? 0 : (int)((uintptr_t)op >> 61 & 1);
            nsc_abi_descr_v7 d;
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_PROXY_OP;
            d.parentObj = op;
            d.proxyOp.pid = pxn ? getpid() + 1 : getpid(); /* PXN: another process's */
            d.proxyOp.peer = 1;
            d.proxyOp.nSteps = 1;
            d.proxyOp.isSend = 1;
            nsc_host_stop(&host, start(&d));
            for (int k = 0; k < 10; k++)
                n[pxn ? 1 : 3] += (int)((uintptr_t)coll(s++, 1) >> 61 & 1);
        }
        void *first = ctx;
        for (int c = 0; c < 2; c++) {
            if (nsc_host_init(&host, &ctx, 0x57440003ull + (uint64_t)c, &mask, "watchdog2", c + 1,
                              2, 0) != 0 ||
                !ctx) {
                fprintf(stderr, "watchdog_driver: comm %d's init failed\n", c + 2);
                return 1;
            }
            for (int k = 0; k < (c ? 1 : 10); k++)
                n[4 + c] += (int)((uintptr_t)coll(k, 1) >> 61 & 1);
            nsc_host_finalize(&host, ctx);
        }
        ctx = first;
        printf("learn slab handles: %d %d %d %d %d %d\n", n[0], n[1], n[2], n[3], n[4], n[5]);
    } else if (!strcmp(mode, "metrics")) {
        for (int i = 0; i < 3; i++) {
            nsc_abi_descr_v7 d;
            memset(&d, 0, sizeof(d));
            d.type = NSC_ABI_P2P;
            d.rank = 0;
            d.p2p.func = i == 1 ? "Recv" : "Send";
            d.p2p.datatype = "ncclInt8";
            d.p2p.count = i ? 0 : 4096;
            d.p2p.peer = i == 1 ? 1 : 0; /* itself; zero bytes from another; zero to itself */
            d.p2p.nChannels = 2;
            nsc_host_stop(&host, start(&d));
        }
        for (uint64_t s = 0; s < 50; s++) {
            void *op = coll(s, 2);
            kch_stop(kch(op, 0));
            kch_stop(kch(op, 1));
        }
        char line[16];
        printf("waiting\n");
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
            usleep(3000000);
    } else if (!strcmp(mode, "p2p-lost") || !strcmp(mode, "p2p-group")) {
        int group = !strcmp(mode, "p2p-group");
        int n = group ? 2 : 4;
        void *op[4];
        for (int i = 0; i < n; i++) {
            op[i] = send_start();
            if (group && i == 0)
                continue; /* Send 1 joins its launch */
            if (group && i == 1)
                nsc_host_stop(&host, op[0]);
            nsc_host_stop(&host, op[i]);
            usleep(1000); /* the next launch starts strictly later */
        }
        for (int i = 0; i < n; i++) {
            void *k0 = kch(op[i], 0);
            kch_stop(kch(op[i], 1));
            if (i)
                kch_stop(k0); /* Send 0's channel 0 stop is lost */
        }
        if (group)
            stall(1500000);
        else
            usleep(2500000); /* idle: longer than NCCLSCOPE_HANG_SECONDS */
    } else if (!strcmp(mode, "busy")) {
        enum { BUSY = 4200 };
        static void *open_ch[BUSY]; /* the busy comm's open channels, a ring */
        uint64_t next = 0, oldest = 0;
        for (; next < BUSY; next++)
            open_ch[next % BUSY] = kch(coll(next, 1), 0);
        void *busy_ctx = ctx;
        if (nsc_host_init(&host, &ctx, 0x5744000bull, &mask, "watchdog-hung", 1, 1, 0) != 0 ||
            !ctx) {
            fprintf(stderr, "watchdog_driver: the hung comm's init failed\n");
            return 1;
        }
        void *hung_ctx = ctx;
        kch(coll(0, 1), 0); /* the hung comm's one operation: its channel never stops */
        ctx = busy_ctx;
        printf("stalled\n");
        fflush(stdout);
        int stdin_open = 1;
        for (int tick = 0;; tick++) {
            struct pollfd pfd = {.fd = 0, .events = POLLIN};
            if (stdin_open && poll(&pfd, 1, 10) > 0) {
                char line[16];
                if (fgets(line, sizeof(line), stdin))
                    break;
                stdin_open = 0; /* ended: run for the nominal 3 s */
            }
            if (!stdin_open) {
                if (tick > 300)
                    break;
                usleep(10000);
            }
            /* the busy comm progresses: its oldest completes, one more starts */
            kch_stop(open_ch[oldest++ % BUSY]);
            open_ch[next % BUSY] = kch(coll(next, 1), 0);
            next++;
        }
        printf("done\n");
        fflush(stdout);
        nsc_host_finalize(&host, hung_ctx);
        nsc_host_finalize(&host, busy_ctx);
        nsc_host_unload(&host);
        return 0;
    } else if (!strcmp(mode, "two-ranks")) {
        void *c[2][2], *first = ctx;
        int m[2][2];
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < 2; r++)
                if (nsc_host_init(&host, &c[k][r], 0x5744000cull + (uint64_t)k, &m[k][r],
                                  k ? "two-ranks-ok" : "two-ranks", 1, 2, r) != 0 || !c[k][r]) {
                    fprintf(stderr, "watchdog_driver: two-ranks init failed\n");
                    return 1;
                }
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < 2; r++)
                for (uint64_t s = 0; s < (k == 0 && r == 1 ? 4u : 5u); s++) {
                    ctx = c[k][r];
                    void *op = coll(s, 1);
                    void *ch = kch(op, 0);
                    if (k || r || s < 4) /* rank 0's AllReduce 4 waits for rank 1 */
                        kch_stop(ch);
                }
        stall(3000000);
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < 2; r++)
                nsc_host_finalize(&host, c[k][r]);
        ctx = first;
    } else {
        fprintf(stderr, "watchdog_driver: --mode rearm|full|orphan|sessions|fork|learn|metrics|busy|"
                        "p2p-lost|p2p-group|two-ranks\n");
        return 1;
    }
    printf("done\n");
    fflush(stdout);
    nsc_host_finalize(&host, ctx);
    nsc_host_unload(&host);
    return 0;
}
