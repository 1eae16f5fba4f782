// SPDX-License-Identifier: Apache-2.0
/*
 * prefetch.h - asking for a line this thread is about to write, before it
 * writes it: the ring's records (ring.h) and the slab's next slot (slab.c),
 * both last touched by a thread on another core.
 */
#ifndef NSC_PREFETCH_H
#define NSC_PREFETCH_H

/* Asks for the line at p in a state this core may write (x86: PREFETCHW,
 * CPUID PRFCHW: AMD since K8, Intel since Broadwell; Intel cores before it
 * decode the opcode as a hint that does nothing, which Windows 8.1 relies
 * on). gcc's __builtin_prefetch(p, 1) emits a plain read prefetch
 * unless -mprfchw is given: the line then arrives shared and the store
 * still waits for the other core (the drainer, which read it last) to let
 * go of it. */
static inline void nsc_prefetch_write(const void *p) {
#if defined(__x86_64__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

#endif /* NSC_PREFETCH_H */
