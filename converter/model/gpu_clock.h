// SPDX-License-Identifier: Apache-2.0
/*
 * gpu_clock.h - mapping KernelCh %globaltimer values (GPU ns, which NCCL
 * never converts) to the host clock of the process that recorded them.
 *
 * Method: NCCL's proxy thread notices a channel's kernel work finished and
 * then stops the KernelCh event, so for every KernelCh
 *     host time of its STOP record  >=  GPU end (KernelChStop pTimer) + offset.
 * The offset estimate is the minimum of (host stop - GPU end) over all
 * KernelCh of one communicator rank (each rank drives one GPU): the event
 * the proxy noticed fastest (a file's first 50,000 KernelCh). The check against
 * the CPU timestamps is the
 * distribution of the remaining delays (host stop - mapped GPU end), whose
 * median is reported, and the count of mapped GPU starts earlier than their
 * Coll's enqueue on the host (which is impossible and would show a bad
 * mapping).
 */
#ifndef NSC_GPU_CLOCK_H
#define NSC_GPU_CLOCK_H

#include <stdint.h>

struct nsc_gpu_clock {
    uint32_t serial;        /* comm serial in its file */
    int have;
    int64_t offset_ns;      /* host ns (merged timeline) = GPU ns + offset */
    uint64_t kernels;       /* KernelCh used */
    uint64_t median_delay_ns;
    uint64_t impossible;    /* end <= start, or a zero timer */
};

/* Reads a file once and fills one entry per comm serial (index = serial,
 * *n entries). shift_ns places the file on the merged timeline. Returns 0
 * or -1 (out of memory / unreadable). */
int nsc_gpu_clock_scan(const char *path, int64_t shift_ns, struct nsc_gpu_clock **out, uint32_t *n);

#endif /* NSC_GPU_CLOCK_H */
