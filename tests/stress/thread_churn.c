// SPDX-License-Identifier: Apache-2.0
/*
 * thread_churn.c - writer threads that come and go, through the real plugin
 * loaded the way NCCL loads it (nccl/host.h).
 *
 *   thread_churn --plugin SO [--churn N] [--events E]
 *
 * Phase 1: N threads one after another (one alive at a time), each starting
 * and stopping E GroupApi events: a thread pool that spawns a thread per
 * step. Every record must be kept (dead threads' states are adopted at once).
 * Phase 2 (run with NCCLSCOPE_MAX_THREADS=4): the main thread and three
 * sleepers hold every state; a late thread's first calls are dropped
 * (counted); once a sleeper exits, the late thread must attach and its next
 * E events be kept. Prints "late_tid T" for the test to look up.
 * --stream S instead: one thread records 10,000 events every 10 ms for S
 * seconds (a job that keeps running while its disk fills or freezes), then
 * finalizes and prints "finalized after X s" (the disk tests time it).
 * --trickle S instead: 1,000 events, "ready", then one event every 50 ms for
 *   S seconds (a quiet job: the drainer sleeps its NCCLSCOPE_DRAIN_US), then
 *   finalizes and prints "finalized".
 * --linger with --stream: after finalizing, waits for a line on stdin before
 *   leaving (a process that goes on after its session: what its engine's
 *   threads left behind still do).
 * --crash with --stream: writes to a PROT_NONE page instead of finalizing (SIGSEGV
 * inside the job: the flight recorder's crash dump).
 * --cycles N instead: N sessions one after another in one process (init,
 * one event, finalize: elastic restarts), each its own trace file.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host.h"

static struct nsc_host host;
static void *ctx;
static long events = 10;
static pthread_barrier_t hold, release_one, release_rest, late_tried, late_go;

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
}

static void *churner(void *arg) {
    (void)arg;
    some_events(events);
    return NULL;
}

static void *sleeper(void *arg) {
    long which = (long)arg;
    some_events(1);
    pthread_barrier_wait(&hold);
    if (which == 0) {
        pthread_barrier_wait(&release_one);
        return NULL; /* the first to leave */
    }
    pthread_barrier_wait(&release_rest);
    return NULL;
}

static void *late(void *arg) {
    (void)arg;
    some_events(5); /* every state is taken: dropped and counted */
    pthread_barrier_wait(&late_tried);
    pthread_barrier_wait(&late_go); /* a sleeper has exited by now */
    some_events(events);
    printf("late_tid %ld\n", (long)syscall(SYS_gettid));
    return NULL;
}

int main(int argc, char **argv) {
    const char *plugin = NULL;
    long churn = 10000;
    double stream = 0, trickle = 0;
    int crash = 0, linger = 0;
    long cycles = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            plugin = argv[++i];
        else if (!strcmp(argv[i], "--churn") && i + 1 < argc)
            churn = atol(argv[++i]);
        else if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
            cycles = atol(argv[++i]);
        else if (!strcmp(argv[i], "--trickle") && i + 1 < argc)
            trickle = atof(argv[++i]);
        else if (!strcmp(argv[i], "--linger"))
            linger = 1;
        else if (!strcmp(argv[i], "--crash"))
            crash = 1;
        else if (!strcmp(argv[i], "--stream") && i + 1 < argc)
            stream = atof(argv[++i]);
        else if (!strcmp(argv[i], "--events") && i + 1 < argc)
            events = atol(argv[++i]);
        else {
            fprintf(stderr, "thread_churn: unknown argument %s\n", argv[i]);
            return 1;
        }
    }
    char err[1024];
    if (!plugin || nsc_host_load(&host, plugin, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "thread_churn: %s\n", plugin ? err : "--plugin is required");
        return 1;
    }
    int mask = 0;
    if (cycles > 0) {
        long ok = 0;
        for (long i = 0; i < cycles; i++) {
            if (nsc_host_init(&host, &ctx, 0x1000 + (uint64_t)i, &mask, "cycle", 1, 1, 0) != 0)
                continue;
            some_events(1);
            nsc_host_finalize(&host, ctx);
            ok++;
        }
        printf("cycles %ld initialised %ld\n", cycles, ok);
        nsc_host_unload(&host);
        return ok == cycles ? 0 : 1;
    }
    if (nsc_host_init(&host, &ctx, 0x1234, &mask, "churn", 1, 1, 0) != 0) {
        fprintf(stderr, "thread_churn: init failed\n");
        return 1;
    }
    if (trickle > 0) {
        some_events(1000);
        printf("ready\n");
        fflush(stdout);
        struct timespec nap = {0, 50000000};
        for (long k = 0; k < (long)(trickle * 20); k++) {
            some_events(1);
            nanosleep(&nap, NULL);
        }
        nsc_host_finalize(&host, ctx);
        printf("finalized\n");
        fflush(stdout);
        nsc_host_unload(&host);
        return 0;
    }
    if (stream > 0) {
        struct timespec t0, t1, t2;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long done = 0;
        do {
            some_events(10000);
            done += 10000;
            struct timespec nap = {0, 10000000};
            nanosleep(&nap, NULL);
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 < stream);
        if (crash) {
            printf("events %ld\ncrashing\n", done);
            fflush(stdout);
            /* a real fault (not raise()): a store to a page with no access */
            volatile int *nowhere = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            *nowhere = 1; /* SIGSEGV */
        }
        nsc_host_finalize(&host, ctx);
        clock_gettime(CLOCK_MONOTONIC, &t2);
        printf("events %ld\nfinalized after %.3f s\n", done,
               (double)(t2.tv_sec - t1.tv_sec) + (double)(t2.tv_nsec - t1.tv_nsec) * 1e-9);
        fflush(stdout);
        char line[16];
        if (linger && !fgets(line, sizeof(line), stdin))
            line[0] = 0; /* stdin ended: leave */
        nsc_host_unload(&host);
        return 0;
    }
    for (long i = 0; i < churn; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, churner, NULL) != 0)
            return 1;
        pthread_join(t, NULL);
    }
    /* phase 2: three sleepers + main hold the 4 states */
    pthread_barrier_init(&hold, NULL, 4);
    pthread_barrier_init(&release_one, NULL, 2);
    pthread_barrier_init(&release_rest, NULL, 3);
    pthread_barrier_init(&late_tried, NULL, 2);
    pthread_barrier_init(&late_go, NULL, 2);
    pthread_t s[3], l;
    for (long i = 0; i < 3; i++)
        pthread_create(&s[i], NULL, sleeper, (void *)i);
    pthread_barrier_wait(&hold); /* all sleepers attached and recorded */
    pthread_create(&l, NULL, late, NULL);
    pthread_barrier_wait(&late_tried);
    pthread_barrier_wait(&release_one);
    pthread_join(s[0], NULL); /* one state is free again from here on */
    pthread_barrier_wait(&late_go);
    pthread_join(l, NULL);
    printf("churned %ld threads x %ld events\n", churn, events);
    fflush(stdout);
    nsc_host_finalize(&host, ctx);
    pthread_barrier_wait(&release_rest);
    for (long i = 1; i < 3; i++)
        pthread_join(s[i], NULL);
    nsc_host_unload(&host);
    return 0;
}
