// SPDX-License-Identifier: Apache-2.0
/* bg_thread.c - background thread start (see bg_thread.h). */
#include "bg_thread.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "log.h"

static int start_on(pthread_t *t, const cpu_set_t *cpus, void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (cpus)
        pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus);
    int rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
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
