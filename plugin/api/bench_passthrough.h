// SPDX-License-Identifier: Apache-2.0
/*
 * bench_passthrough.h - benchmarks only: ncclscope_bench_passthrough(on)
 * makes the plugin behave as the empty plugin (1) or the floor plugin (2)
 * for the starts that follow, so one process can measure ncclscope against
 * both in alternating blocks (bench/gpu/nccl_bench.c --ab).
 */
#ifndef NSC_BENCH_PASSTHROUGH_H
#define NSC_BENCH_PASSTHROUGH_H

#include <stdint.h>

/* ncclscope_bench_passthrough's handle. */
extern char nsc_passthrough_token __attribute__((visibility("hidden")));
/* ncclscope_bench_passthrough(2): one timestamp and one line per call into
 * a private ring, the floor plugin's work. */
void nsc_bench_floor(uint64_t kind, uint64_t what) __attribute__((visibility("hidden")));

#endif /* NSC_BENCH_PASSTHROUGH_H */
