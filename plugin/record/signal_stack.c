// SPDX-License-Identifier: Apache-2.0
/* signal_stack.c - alternate signal stacks for threads that call us
 * (signal_stack.h). */
#include "signal_stack.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "lib_pin.h"

#define SIGSTACK_BYTES (64 * 1024)
#define SIGSTACK_STATES 4096 /* thread_state.h: NSC_MAX_THREADS_HARD */

static _Atomic int wanted;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* stacks[] */
static void *stacks[SIGSTACK_STATES];               /* by thread state, never unmapped */
static _Atomic int pinned;
static __thread void *tls_stack __attribute__((tls_model("initial-exec")));
static __thread uint32_t tls_index __attribute__((tls_model("initial-exec")));
static __thread int tls_attached __attribute__((tls_model("initial-exec")));

void nsc_sigstack_give(uint32_t index) {
    tls_index = index;
    tls_attached = 1;
    if (!atomic_load_explicit(&wanted, memory_order_relaxed) || tls_stack ||
        index >= SIGSTACK_STATES)
        return;
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return; /* its owner's stack, or none can be asked about */
    pthread_mutex_lock(&lock);
    void *sp = stacks[index];
    if (!sp) {
        sp = mmap(NULL, SIGSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (sp == MAP_FAILED)
            sp = NULL;
        stacks[index] = sp;
    }
    pthread_mutex_unlock(&lock);
    if (!sp)
        return;
    if (!atomic_exchange_explicit(&pinned, 1, memory_order_relaxed))
        nsc_pin_library(); /* before the first thread can hold our memory */
    stack_t ss = {.ss_sp = sp, .ss_size = SIGSTACK_BYTES, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) == 0)
        tls_stack = sp;
}

void nsc_sigstack_want(int on) {
    atomic_store_explicit(&wanted, on, memory_order_relaxed);
    if (on && tls_attached)
        nsc_sigstack_give(tls_index);
}

void nsc_sigstack_exit(void) {
    if (!tls_stack)
        return;
    stack_t cur;
    /* Only ours, and not while running on it (a handler that exits the
     * thread: the stack is left to the exit). */
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == tls_stack && !(cur.ss_flags & SS_ONSTACK)) {
        stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
        sigaltstack(&off, NULL);
    }
    tls_stack = NULL;
    tls_attached = 0;
}
