// SPDX-License-Identifier: Apache-2.0
/* bg_thread.c - background thread start (see bg_thread.h). */
#include "bg_thread.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

/* What a thread of ours runs first: an alternate signal stack, so that a
 * fault in it (a stack overflow included) reaches flight mode's crash
 * handler (SA_ONSTACK) instead of killing the process with no dump; and
 * the fault signals unblocked (they are synchronous: delivered to the
 * faulting thread only, never an application signal landing here; a
 * blocked one would kill the process without running any handler). */
#define ALT_STACK_BYTES (64 * 1024)
struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_start(void *p) {
    struct start s = *(struct start *)p;
    free(p);
    stack_t ss = {.ss_sp = malloc(ALT_STACK_BYTES), .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
    int alt = ss.ss_sp && sigaltstack(&ss, NULL) == 0;
    sigset_t faults;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    sigaddset(&faults, SIGFPE);
    sigaddset(&faults, SIGILL);
    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
    void *r = s.fn(s.arg);
    if (alt) {
        stack_t off = {.ss_flags = SS_DISABLE};
        sigaltstack(&off, NULL);
    }
    free(ss.ss_sp);
    return r;
}

static int start_on(pthread_t *t, const cpu_set_t *cpus, void *(*fn)(void *), void *arg) {
    struct start *s = malloc(sizeof(*s));
    if (!s)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (cpus)
        pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus);
    int rc = pthread_create(t, &attr, thread_start, s);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        free(s);
    return rc;
}

/* the kernel refused NCCLSCOPE_CPUS once: not again */
static atomic_int refused;

int nsc_bg_thread_ncpus(const struct nsc_config *cfg) {
    cpu_set_t cpus;
    if (sched_getaffinity(getpid(), sizeof(cpus), &cpus) != 0)
        return 2;
    if (cfg && cfg->cpus_set && !atomic_load(&refused)) {
        cpu_set_t both;
        CPU_AND(&both, &cpus, &cfg->cpus);
        if (CPU_COUNT(&both) > 0)
            return CPU_COUNT(&both);
    }
    return CPU_COUNT(&cpus);
}

int nsc_bg_thread_start(pthread_t *t, const struct nsc_config *cfg, void *(*fn)(void *), void *arg,
                        const char *name) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits this mask */
    int rc = EINVAL;
    if (cfg && cfg->cpus_set && !atomic_load(&refused)) {
        rc = start_on(t, &cfg->cpus, fn, arg);
        if (rc == EINVAL && !atomic_exchange(&refused, 1))
            nsc_log_warn("ncclscope: the kernel refuses NCCLSCOPE_CPUS for our threads (none of its "
                         "CPUs is online and allowed here); they run on the process's CPUs");
    }
    if (rc == EINVAL) {
        cpu_set_t proc;
        int have_proc = sched_getaffinity(getpid(), sizeof(proc), &proc) == 0;
        rc = start_on(t, have_proc ? &proc : NULL, fn, arg);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        pthread_setname_np(*t, name);
    return rc;
}
