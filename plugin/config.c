/* config.c - NCCLSCOPE_* environment variables. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"

static int get_u32(const char *name, uint32_t def, uint32_t lo, uint32_t hi, uint32_t *out,
                   char *err, unsigned errlen) {
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 0);
    if (errno || *end || x < lo || x > hi) {
        snprintf(err, errlen, "%s=%s: expected an integer in [%u, %u]", name, v, lo, hi);
        return -1;
    }
    *out = (uint32_t)x;
    return 0;
}

int nsc_config_load(struct nsc_config *cfg, char *err, unsigned errlen) {
    memset(cfg, 0, sizeof(*cfg));
    uint32_t v;
    if (get_u32("NCCLSCOPE_ENABLE", 1, 0, 1, &v, err, errlen))
        return -1;
    cfg->enabled = (int)v;

    const char *dir = getenv("NCCLSCOPE_DIR");
    snprintf(cfg->dir, sizeof(cfg->dir), "%s", dir && *dir ? dir : "./ncclscope-trace");

    const char *ev = getenv("NCCLSCOPE_EVENTS");
    cfg->event_mask = NSC_MASK_DEFAULT;
    if (ev && *ev && nsc_mask_parse(ev, &cfg->event_mask, err, errlen))
        return -1;

    if (get_u32("NCCLSCOPE_MEMORY_MB", 64, 4, 65536, &cfg->memory_mb, err, errlen))
        return -1;
    /* A thread may hold up to 3/4 of the budget (a burst on one thread is
     * absorbed while the others keep a quarter). */
    uint32_t ring_max_kb = cfg->memory_mb * 1024u / 4u * 3u;
    if (get_u32("NCCLSCOPE_RING_KB", ring_max_kb, 4, ring_max_kb, &v, err, errlen))
        return -1;
    cfg->ring_records = v * 1024u / 64u;
    if (get_u32("NCCLSCOPE_COMPRESS_THREADS", 0, 0, 16, &cfg->compress_threads, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_EXIT_WAIT_MS", 2000, 0, 600000, &cfg->exit_wait_ms, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_MAX_THREADS", 32, 1, 4096, &cfg->max_threads, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_FLUSH_MS", 1000, 1, 3600000, &cfg->flush_ms, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_DRAIN_US", 1000, 10, 3600000000u, &cfg->drain_us, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_CHUNK_KB", 1024, 4, 16384, &v, err, errlen))
        return -1;
    cfg->chunk_records = v * 1024u / 64u;
    if (get_u32("NCCLSCOPE_ZSTD_LEVEL", 1, 1, 19, &v, err, errlen))
        return -1;
    cfg->zstd_level = (int)v;

    const char *clk = getenv("NCCLSCOPE_CLOCK");
    if (!clk || !*clk)
        clk = "auto";
    if (strcmp(clk, "auto") && strcmp(clk, "tsc") && strcmp(clk, "monotonic")) {
        snprintf(err, errlen, "NCCLSCOPE_CLOCK=%s: expected auto, tsc or monotonic", clk);
        return -1;
    }
    snprintf(cfg->clock, sizeof(cfg->clock), "%s", clk);
    return 0;
}
