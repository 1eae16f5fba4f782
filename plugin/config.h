// SPDX-License-Identifier: Apache-2.0
/*
 * config.h - ncclscope's settings, read from NCCLSCOPE_* environment
 * variables once per session (docs/config.md has the table).
 */
#ifndef NSC_CONFIG_H
#define NSC_CONFIG_H

#include <sched.h>
#include <stdint.h>

#define NSC_CONFIG_DIR_MAX 1023 /* bytes of NCCLSCOPE_DIR (the writer's buffers) */

struct nsc_config {
    int enabled;             /* NCCLSCOPE_ENABLE (default 1) */
    char dir[1024];          /* NCCLSCOPE_DIR (default ./ncclscope-trace) */
    uint32_t event_mask;     /* NCCLSCOPE_EVENTS (default NSC_MASK_DEFAULT) */
    uint32_t kernel_sample;  /* NCCLSCOPE_KERNEL_SAMPLE: KernelCh for one operation in N */
    uint32_t kernel_sample_ms; /* NCCLSCOPE_KERNEL_SAMPLE_MS: and one per period at least */
    uint32_t ring_records;   /* NCCLSCOPE_RING_KB * 1024 / 64: most records one thread may hold */
    uint32_t memory_mb;      /* NCCLSCOPE_MEMORY_MB: all record memory of the process (default 64) */
    uint32_t compress_threads; /* NCCLSCOPE_COMPRESS_THREADS: 0 = by the CPUs the process may use */
    uint32_t exit_wait_ms;   /* NCCLSCOPE_EXIT_WAIT_MS: longest finalize/exit waits for the disk */
    uint32_t max_threads;    /* NCCLSCOPE_MAX_THREADS */
    uint32_t flush_ms;       /* NCCLSCOPE_FLUSH_MS: longest a record waits for the disk */
    uint32_t drain_us;       /* NCCLSCOPE_DRAIN_US: how often the flusher empties rings */
    uint32_t chunk_records;  /* NCCLSCOPE_CHUNK_KB * 1024 / 64 */
    int zstd_level;          /* NCCLSCOPE_ZSTD_LEVEL */
    char clock[16];          /* NCCLSCOPE_CLOCK: auto, tsc, monotonic */
    char chain[1024];        /* NCCLSCOPE_CHAIN: a second profiler plugin to forward to ("": none) */
    char metrics_dir[1024];  /* NCCLSCOPE_METRICS_DIR: Prometheus text file directory ("": off) */
    uint32_t metrics_seconds; /* NCCLSCOPE_METRICS_SECONDS: how often the file is rewritten */
    int metrics_keep;        /* NCCLSCOPE_METRICS_KEEP: leave the file at the end */
    uint32_t max_mb;         /* NCCLSCOPE_MAX_MB: cap of the session's segment files (0: no cap) */
    int flight;              /* NCCLSCOPE_MODE=flight: keep the newest chunks in memory, dump on a trigger */
    uint32_t flight_mb;      /* NCCLSCOPE_FLIGHT_MB: the flight window's memory (default 32) */
    uint32_t hang_seconds;   /* NCCLSCOPE_HANG_SECONDS: the watchdog's stall limit (0: off) */
    uint32_t suspect_seconds; /* NCCLSCOPE_SUSPECT_SECONDS: the hang suspect level's (0: off) */
    int dump_signal;         /* NCCLSCOPE_DUMP_SIGNAL: a signal that dumps (0: none) */
    int cpus_set;            /* NCCLSCOPE_CPUS given: our threads run on cpus only */
    cpu_set_t cpus;          /* NCCLSCOPE_CPUS, a CPU list ("30-31", "0,8-11") */
};

/* Fills cfg from the environment. Returns 0, or -1 with a message in err
 * naming the setting, its value and what is accepted, for a malformed or
 * out-of-range number or a string that does not fit (the plugin then
 * disables itself and says why; nothing is cut or wrapped). */
int nsc_config_load(struct nsc_config *cfg, char *err, unsigned errlen);

#endif /* NSC_CONFIG_H */
