// SPDX-License-Identifier: Apache-2.0
/*
 * signal_driver.c - a job through a profiler plugin loaded as NCCL loads it
 * (nccl/host.c), for the signal and fork cases of flight mode:
 *
 *   signal_driver --plugin SO --two-faults
 *       4 threads record for 0.3 s, then two of them fault at the same
 *       moment (a store to a PROT_NONE page): one readable crash dump.
 *   signal_driver --plugin SO --busy-crash
 *       3 threads record (500 events every 5 ms each); after 0.5 s the main thread prints
 *       how many events were finished ("events N") and faults while the
 *       others record on: the dump must hold at least N (chunks being
 *       compressed at the fault included).
 *   signal_driver --plugin SO --fork-control
 *       2 threads call the control API (mark, set_events) without a pause
 *       while the main thread forks 20 children, each calling it too under
 *       alarm(5). Prints "deadlocked N" (children killed by the alarm).
 *   signal_driver --plugin SO --fork-crash
 *       records, forks; the child faults (its parent's window is not its
 *       own), the parent waits for it, finalizes and exits 0.
 *   signal_driver --plugin SO --chain SIG
 *       the application's own handler for SIG is installed before init;
 *       SIG is raised once during the session (the plugin's handler runs
 *       and must call the application's), then after finalize and after
 *       the plugin is unloaded. Prints "app handler N" (3 when every raise
 *       reached it) and exits 0.
 *   signal_driver --plugin SO --overflow
 *       an application thread (not one of ours) records 2,000 events, then
 *       overflows its stack: the crash handler runs on the signal stack the
 *       plugin gave the thread, and the dump holds them.
 *   signal_driver --plugin SO --term-app
 *       the application's SIGTERM handler is installed before init; after
 *       SIGTERM it records on and finalizes. Prints "app term N".
 * Prints "events N" before any fault.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host.h"

static struct nsc_host host;
static void *ctx;
static pthread_barrier_t go;
static volatile int *nowhere;
static _Atomic long recorded;
static volatile sig_atomic_t app_calls;

static void some_events(long n) {
    for (long i = 0; i < n; i++) {
        nsc_abi_descr_v7 d;
        memset(&d, 0, sizeof(d));
        d.type = NSC_ABI_GROUP_API;
        d.groupApi.groupDepth = 1;
        void *h = NULL;
        nsc_host_start(&host, ctx, &h, &d);
        nsc_host_stop(&host, h);
    }
    atomic_fetch_add(&recorded, n);
}

/* Deeper and deeper until the stack's guard page: a volatile frame the
 * compiler cannot turn into a loop. */
static volatile long depth_limit = 1L << 40; /* never reached: the stack ends first */
static long recurse(long depth) {
    volatile char frame[512];
    frame[0] = (char)depth;
    if (depth >= depth_limit)
        return frame[0];
    return recurse(depth + 1) + frame[0];
}

static void *overflower(void *arg) {
    (void)arg;
    some_events(2000);
    printf("events %ld\n", atomic_load(&recorded));
    fflush(stdout);
    usleep(300000); /* the flight window takes them */
    return (void *)recurse(0);
}

static void *faulter(void *arg) {
    long which = (long)arg;
    for (int i = 0; i < 30; i++) {
        some_events(1000);
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    pthread_barrier_wait(&go);
    if (which < 2) {
        if (which == 0) {
            printf("events %ld\n", atomic_load(&recorded));
            fflush(stdout);
        }
        pthread_barrier_wait(&go); /* the count is out: both fault now */
        *nowhere = 1;
    }
    pthread_barrier_wait(&go);
    return NULL;
}

/* 500 events every 5 ms per thread: busy enough that chunks are being
 * packed, compressed and kept at the fault, slow enough that the drainer
 * keeps up on a small machine under a sanitizer (a ring that overflows
 * drops records, counted in STATS, which a crash dump does not carry). */
static void *busy(void *arg) {
    (void)arg;
    struct timespec nap = {0, 5000000};
    for (;;) {
        some_events(500);
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static int (*ctl_mark)(const char *);
static int (*ctl_set_events)(const char *);

static void *control_loop(void *arg) {
    (void)arg;
    for (;;) {
        ctl_mark("busy mark");
        ctl_set_events("all");
    }
    return NULL;
}

static void on_app_signal(int sig) {
    (void)sig;
    app_calls++;
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *mode = NULL, *sig_name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--chain") && i + 1 < argc) {
            mode = "chain";
            sig_name = argv[++i];
        } else if (!strcmp(argv[i], "--two-faults") || !strcmp(argv[i], "--overflow") ||
                   !strcmp(argv[i], "--fork-crash") || !strcmp(argv[i], "--busy-crash") ||
                   !strcmp(argv[i], "--fork-control") ||
                   !strcmp(argv[i], "--term-app"))
            mode = argv[i] + 2;
        else {
            fprintf(stderr, "signal_driver: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    char err[1024];
    if (!plugin || !mode || nsc_host_load(&host, plugin, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "signal_driver: %s\n", plugin && mode ? err : "--plugin and a mode are required");
        return 1;
    }
    int sig = sig_name ? atoi(sig_name) : 0;
    if (sig || !strcmp(mode, "term-app")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_app_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sig ? sig : SIGTERM, &sa, NULL);
    }
    int mask = 0;
    if (nsc_host_init(&host, &ctx, 0x5157, &mask, "signals", 1, 1, 0) != 0) {
        fprintf(stderr, "signal_driver: init failed\n");
        return 1;
    }
    nowhere = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!strcmp(mode, "overflow")) {
        /* an application thread of its own (none of ours made it) that
         * records, then overflows its stack */
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 * 1024);
        pthread_create(&t, &a, overflower, NULL);
        pthread_join(t, NULL);
        return 3; /* not reached: the overflow ends the process */
    }
    if (!strcmp(mode, "two-faults")) {
        pthread_barrier_init(&go, NULL, 5);
        pthread_t t[4];
        for (long i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, faulter, (void *)i);
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&go);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        return 3; /* not reached: the faults end the process */
    }
    if (!strcmp(mode, "busy-crash")) {
        pthread_t t[3];
        for (int i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, busy, NULL);
        /* 0.5 s: what 3 busy threads record then fits the test's flight
         * window, so every event is kept, none pushed out by newer ones */
        struct timespec nap = {0, 500000000};
        nanosleep(&nap, NULL);
        printf("events %ld\n", atomic_load(&recorded));
        fflush(stdout);
        *nowhere = 1;
        return 3;
    }
    if (!strcmp(mode, "fork-control")) {
        ctl_mark = (int (*)(const char *))dlsym(host.lib, "ncclscope_control_mark");
        ctl_set_events = (int (*)(const char *))dlsym(host.lib, "ncclscope_control_set_events");
        if (!ctl_mark || !ctl_set_events) {
            fprintf(stderr, "signal_driver: no control API in %s\n", plugin);
            return 1;
        }
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, control_loop, NULL);
        int stuck = 0;
        for (int i = 0; i < 20; i++) {
            pid_t c = fork();
            if (c == 0) {
                alarm(5);
                ctl_mark("child mark");
                ctl_set_events("all");
                _exit(0);
            }
            int st = 0;
            waitpid(c, &st, 0);
            stuck += WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM;
        }
        printf("deadlocked %d\n", stuck);
        fflush(stdout);
        _exit(0); /* the control threads never end */
    }
    if (!strcmp(mode, "fork-crash")) {
        some_events(20000);
        pid_t c = fork();
        if (c == 0) {
            *nowhere = 1;
            _exit(0);
        }
        int st = 0;
        waitpid(c, &st, 0);
        printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        nsc_host_finalize(&host, ctx);
        nsc_host_unload(&host);
        return 0;
    }
    if (!strcmp(mode, "term-app")) {
        some_events(20000);
        printf("events %ld\n", atomic_load(&recorded));
        fflush(stdout);
        while (!app_calls) { /* the test sends SIGTERM */
            struct timespec nap = {0, 10000000};
            nanosleep(&nap, NULL);
        }
        some_events(1000);
        nsc_host_finalize(&host, ctx);
        nsc_host_unload(&host);
        printf("app term %d\n", (int)app_calls);
        return 0;
    }
    /* chain */
    some_events(100);
    raise(sig);
    nsc_host_finalize(&host, ctx);
    raise(sig);
    nsc_host_unload(&host);
    raise(sig);
    printf("app handler %d\n", (int)app_calls);
    return 0;
}
