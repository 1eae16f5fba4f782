// SPDX-License-Identifier: Apache-2.0
/*
 * signal_stack.h - an alternate signal stack for the application's threads
 * that call us, so that a stack overflow there reaches flight mode's crash
 * handler.
 *
 * Why. The fatal-signal handler (engine/crash_dump.c) is installed with
 * SA_ONSTACK; a thread that overflows its stack can run a handler only on
 * an alternate stack. Our own threads make theirs (bg_thread.c); NCCL's and
 * the application's threads have none unless their owner made one. So a
 * thread that has none gets ours when it first records (thread_state.c's
 * attach, the slow path: a system call or two, once per thread), while a
 * crash handler is installed. A thread that already has one keeps its
 * owner's; one whose owner installs another later keeps that.
 *
 * Memory. One 64 KiB mapping per thread state (NCCLSCOPE_MAX_THREADS at
 * most), made once and reused by the threads that adopt the state; never
 * unmapped: a live thread may keep it after our handler is gone, and the
 * library is pinned (lib_pin.h) once the first one is given, so that the
 * mapping and the code stay while any thread may use them. A thread that
 * exits gives its stack back (sigaltstack SS_DISABLE) before its state can
 * be adopted.
 */
#ifndef NSC_SIGNAL_STACK_H
#define NSC_SIGNAL_STACK_H

#include <stdint.h>

/* Crash handler installed (1) or removed (0): threads that attach from now
 * on get a stack; on 1 the calling thread gets one at once. */
void nsc_sigstack_want(int on);
/* The calling thread, attaching to state `index`. */
void nsc_sigstack_give(uint32_t index);
/* The calling thread exits: its stack is given back if it is still ours. */
void nsc_sigstack_exit(void);

#endif /* NSC_SIGNAL_STACK_H */
