// SPDX-License-Identifier: Apache-2.0
/*
 * test_config.c - NCCLSCOPE_* parsing: defaults, every accepted form, every
 * malformed form refused with a message naming the setting, its value and
 * the accepted range, and strings that do not fit refused instead of cut.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "event_types.h"

static const char *const all_settings[] = {
    "NCCLSCOPE_ENABLE",     "NCCLSCOPE_DIR",          "NCCLSCOPE_EVENTS",
    "NCCLSCOPE_MEMORY_MB",  "NCCLSCOPE_RING_KB",      "NCCLSCOPE_COMPRESS_THREADS",
    "NCCLSCOPE_EXIT_WAIT_MS", "NCCLSCOPE_MAX_THREADS", "NCCLSCOPE_FLUSH_MS",
    "NCCLSCOPE_DRAIN_US",   "NCCLSCOPE_CHUNK_KB",     "NCCLSCOPE_ZSTD_LEVEL",
    "NCCLSCOPE_CLOCK",      "NCCLSCOPE_CHAIN",        "NCCLSCOPE_METRICS_DIR",
    "NCCLSCOPE_METRICS_SECONDS", "NCCLSCOPE_METRICS_KEEP", "NCCLSCOPE_MAX_MB",
    "NCCLSCOPE_CPUS",       "NCCLSCOPE_HANG_SECONDS", "NCCLSCOPE_SUSPECT_SECONDS",
};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof(all_settings) / sizeof(all_settings[0]); i++)
        unsetenv(all_settings[i]);
}

static struct nsc_config cfg;
static char err[512];

/* Loads with only name=value set; returns nsc_config_load's result. */
static int load_with(const char *name, const char *value) {
    clear_env();
    if (name)
        setenv(name, value, 1);
    err[0] = '\0';
    return nsc_config_load(&cfg, err, sizeof(err));
}

static void test_defaults(void) {
    CHECK(load_with(NULL, NULL) == 0);
    CHECK(cfg.enabled == 1);
    CHECK(strcmp(cfg.dir, "./ncclscope-trace") == 0);
    CHECK(cfg.event_mask == NSC_MASK_DEFAULT);
    CHECK(cfg.memory_mb == 64);
    CHECK(cfg.ring_records == 64u * 1024 * 3 / 4 * 16); /* 3/4 of the budget, in records */
    CHECK(cfg.compress_threads == 0 && cfg.exit_wait_ms == 2000 && cfg.max_threads == 256);
    CHECK(cfg.flush_ms == 1000 && cfg.drain_us == 1000 && cfg.chunk_records == 1024 * 16);
    CHECK(cfg.zstd_level == 1 && strcmp(cfg.clock, "auto") == 0);
    CHECK(cfg.chain[0] == '\0' && cfg.metrics_dir[0] == '\0' && cfg.metrics_seconds == 15 &&
          cfg.metrics_keep == 0 && cfg.max_mb == 0);
    CHECK(cfg.hang_seconds == 300 && cfg.suspect_seconds == 15);
    /* an empty value means unset */
    CHECK(load_with("NCCLSCOPE_MAX_THREADS", "") == 0 && cfg.max_threads == 256);
}

struct numeric {
    const char *name;
    unsigned long long lo, hi;
};
static const struct numeric numerics[] = {
    {"NCCLSCOPE_ENABLE", 0, 1},
    {"NCCLSCOPE_MEMORY_MB", 4, 65536},
    {"NCCLSCOPE_RING_KB", 4, 49152}, /* 3/4 of the default 64 MiB */
    {"NCCLSCOPE_COMPRESS_THREADS", 0, 16},
    {"NCCLSCOPE_EXIT_WAIT_MS", 0, 600000},
    {"NCCLSCOPE_MAX_THREADS", 1, 4096},
    {"NCCLSCOPE_FLUSH_MS", 1, 3600000},
    {"NCCLSCOPE_DRAIN_US", 10, 3600000000ull},
    {"NCCLSCOPE_CHUNK_KB", 4, 16384},
    {"NCCLSCOPE_SUSPECT_SECONDS", 0, 604800},
    {"NCCLSCOPE_ZSTD_LEVEL", 1, 19},
    {"NCCLSCOPE_METRICS_SECONDS", 1, 86400},
    {"NCCLSCOPE_METRICS_KEEP", 0, 1},
    {"NCCLSCOPE_MAX_MB", 0, 16777216},
};
#define NNUM (sizeof(numerics) / sizeof(numerics[0]))

/* err names the setting, shows the value in quotes and the accepted range. */
static int names_all(const struct numeric *n, const char *shown) {
    char want[128];
    snprintf(want, sizeof(want), "accepted: %llu..%llu", n->lo, n->hi);
    char val[300];
    snprintf(val, sizeof(val), "%s=\"%s\"", n->name, shown);
    return strstr(err, val) != NULL && strstr(err, want) != NULL;
}

static void test_numbers_accepted(void) {
    for (size_t i = 0; i < NNUM; i++) {
        const struct numeric *n = &numerics[i];
        char v[32];
        snprintf(v, sizeof(v), "%llu", n->lo);
        CHECK(load_with(n->name, v) == 0);
        snprintf(v, sizeof(v), "%llu", n->hi);
        CHECK(load_with(n->name, v) == 0);
    }
    CHECK(load_with("NCCLSCOPE_MAX_THREADS", "7") == 0 && cfg.max_threads == 7);
    CHECK(load_with("NCCLSCOPE_ENABLE", "0") == 0 && cfg.enabled == 0);
    CHECK(load_with("NCCLSCOPE_ZSTD_LEVEL", "19") == 0 && cfg.zstd_level == 19);
    CHECK(load_with("NCCLSCOPE_DRAIN_US", "3600000000") == 0 && cfg.drain_us == 3600000000u);
    CHECK(load_with("NCCLSCOPE_CHUNK_KB", "16384") == 0 && cfg.chunk_records == 16384u * 16);
    /* the largest budget and ring: records computed without 32-bit overflow */
    clear_env();
    setenv("NCCLSCOPE_MEMORY_MB", "65536", 1);
    setenv("NCCLSCOPE_RING_KB", "50331648", 1);
    CHECK(nsc_config_load(&cfg, err, sizeof(err)) == 0 && cfg.ring_records == 50331648u * 16);
    /* RING_KB's range follows the budget */
    setenv("NCCLSCOPE_MEMORY_MB", "8", 1);
    setenv("NCCLSCOPE_RING_KB", "6145", 1);
    CHECK(nsc_config_load(&cfg, err, sizeof(err)) == -1 &&
          strstr(err, "accepted: 4..6144 KiB (3/4 of NCCLSCOPE_MEMORY_MB=8)"));
    setenv("NCCLSCOPE_RING_KB", "6144", 1);
    CHECK(nsc_config_load(&cfg, err, sizeof(err)) == 0 && cfg.ring_records == 6144u * 16);
}

static void test_numbers_refused(void) {
    /* every malformed form, for every numeric setting; each shown as the
     * message must show it */
    static const struct {
        const char *value, *shown;
    } bad[] = {
        {"-18446744073709551615", "-18446744073709551615"}, /* strtoull wrapped it to 1 */
        {"-1", "-1"},
        {"-0", "-0"},
        {"+5", "+5"},
        {"010", "010"}, /* strtoull(base 0): octal 8 */
        {"00", "00"},
        {"0x10", "0x10"},
        {"0X10", "0X10"},
        {"1e3", "1e3"},
        {"5k", "5k"},
        {"5.0", "5.0"},
        {"5,0", "5,0"},
        {" 5", " 5"},
        {"5 ", "5 "},
        {"\t5", "\\x095"},
        {"5\n", "5\\x0a"},
        {"5 5", "5 5"},
        {"five", "five"},
        {"-", "-"},
        {" ", " "},
        {"\xd9\xa3", "\\xd9\\xa3"}, /* ARABIC-INDIC DIGIT THREE */
    };
    for (size_t i = 0; i < NNUM; i++)
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
            int rc = load_with(numerics[i].name, bad[k].value);
            CHECK(rc == -1);
            CHECK(strstr(err, "not a plain decimal number") != NULL);
            if (!names_all(&numerics[i], bad[k].shown))
                fprintf(stderr, "  message: %s\n", err);
            CHECK(names_all(&numerics[i], bad[k].shown));
        }
    /* out of range: just outside each bound, and past 64 bits (never wrapped) */
    for (size_t i = 0; i < NNUM; i++) {
        const struct numeric *n = &numerics[i];
        char v[64];
        if (n->lo > 0) {
            snprintf(v, sizeof(v), "%llu", n->lo - 1);
            CHECK(load_with(n->name, v) == -1 && strstr(err, "out of range") && names_all(n, v));
        }
        snprintf(v, sizeof(v), "%llu", n->hi + 1);
        CHECK(load_with(n->name, v) == -1 && strstr(err, "out of range") && names_all(n, v));
        static const char *const huge[] = {"4294967296", "4294967297", "18446744073709551615",
                                           "18446744073709551616", "99999999999999999999999999"};
        for (size_t k = 0; k < sizeof(huge) / sizeof(huge[0]); k++)
            CHECK(load_with(n->name, huge[k]) == -1 && strstr(err, "out of range") &&
                  names_all(n, huge[k]));
    }
    /* RING_KB=1048576 under the default budget: refused, not a job OOM-killed */
    CHECK(load_with("NCCLSCOPE_RING_KB", "1048576") == -1 && strstr(err, "out of range"));
}

static void test_message_shape(void) {
    /* a long value is shown cut, marked, and the message stays bounded */
    char v[5000];
    memset(v, '7', sizeof(v) - 1);
    v[sizeof(v) - 1] = '\0';
    CHECK(load_with("NCCLSCOPE_FLUSH_MS", v) == -1);
    CHECK(strstr(err, "...\"") != NULL && strstr(err, "out of range") != NULL);
    CHECK(strlen(err) < 200);
    /* a quote and a backslash in the value are escaped, not shown raw */
    CHECK(load_with("NCCLSCOPE_FLUSH_MS", "1\"\\") == -1 && strstr(err, "=\"1\\x22\\x5c\""));
}

static void test_dir(void) {
    char d[1100];
    memset(d, 'd', sizeof(d));
    d[0] = '/';
    d[1023] = '\0'; /* 1,023 bytes: the most that fits */
    CHECK(load_with("NCCLSCOPE_DIR", d) == 0 && strcmp(cfg.dir, d) == 0);
    d[1023] = 'd';
    d[1024] = '\0'; /* 1,024 bytes: refused, not cut */
    CHECK(load_with("NCCLSCOPE_DIR", d) == -1);
    CHECK(strstr(err, "NCCLSCOPE_DIR=\"/ddd") && strstr(err, "is 1024 bytes long") &&
          strstr(err, "at most 1023 bytes"));
    d[1024] = 'd';
    d[1099] = '\0';
    CHECK(load_with("NCCLSCOPE_DIR", d) == -1 && strstr(err, "is 1099 bytes long"));
    CHECK(load_with("NCCLSCOPE_DIR", "") == 0 && strcmp(cfg.dir, "./ncclscope-trace") == 0);
}

/* NCCLSCOPE_CHAIN and NCCLSCOPE_METRICS_DIR: kept whole or refused. */
static void test_paths(void) {
    static const char *const names[] = {"NCCLSCOPE_CHAIN", "NCCLSCOPE_METRICS_DIR"};
    char v[1100];
    for (int i = 0; i < 2; i++) {
        memset(v, 'p', sizeof(v));
        v[0] = '/';
        v[1023] = '\0';
        CHECK(load_with(names[i], v) == 0);
        CHECK(strcmp(i ? cfg.metrics_dir : cfg.chain, v) == 0);
        v[1023] = 'p';
        v[1024] = '\0';
        CHECK(load_with(names[i], v) == -1 && strstr(err, names[i]) && strstr(err, "is 1024 bytes long"));
    }
}

static void test_events(void) {
    CHECK(load_with("NCCLSCOPE_EVENTS", "0x40") == 0 && cfg.event_mask == 0x40);
    CHECK(load_with("NCCLSCOPE_EVENTS", "0X4f") == 0 && cfg.event_mask == 0x4f);
    CHECK(load_with("NCCLSCOPE_EVENTS", "64") == 0 && cfg.event_mask == 64);
    CHECK(load_with("NCCLSCOPE_EVENTS", "0") == 0 && cfg.event_mask == 0);
    char v[32];
    snprintf(v, sizeof(v), "%u", (unsigned)NSC_MASK_ALL);
    CHECK(load_with("NCCLSCOPE_EVENTS", v) == 0 && cfg.event_mask == NSC_MASK_ALL);
    CHECK(load_with("NCCLSCOPE_EVENTS", "coll,p2p") == 0 &&
          cfg.event_mask == ((1u << NSC_ET_COLL) | (1u << NSC_ET_P2P)));
    CHECK(load_with("NCCLSCOPE_EVENTS", "all,-kernelch") == 0 &&
          cfg.event_mask == (NSC_MASK_ALL & ~(1u << NSC_ET_KERNEL_CH)));
    static const char *const bad_numbers[] = {"010", "0x", "0xg", "0x40 ", " 64", "64k",
                                              "0x1000000000000000000", "18446744073709551616"};
    for (size_t i = 0; i < sizeof(bad_numbers) / sizeof(bad_numbers[0]); i++) {
        CHECK(load_with("NCCLSCOPE_EVENTS", bad_numbers[i]) == -1);
        CHECK(strstr(err, "NCCLSCOPE_EVENTS=\"") && strstr(err, "accepted: event names, or a mask"));
    }
    snprintf(v, sizeof(v), "%u", (unsigned)NSC_MASK_ALL + 1);
    CHECK(load_with("NCCLSCOPE_EVENTS", v) == -1 && strstr(err, "out of range"));
    CHECK(load_with("NCCLSCOPE_EVENTS", "coll,bogus") == -1 &&
          strstr(err, "NCCLSCOPE_EVENTS=\"coll,bogus\"") && strstr(err, "bogus'"));
}

static void test_clock(void) {
    CHECK(load_with("NCCLSCOPE_CLOCK", "tsc") == 0 && strcmp(cfg.clock, "tsc") == 0);
    CHECK(load_with("NCCLSCOPE_CLOCK", "monotonic") == 0 && strcmp(cfg.clock, "monotonic") == 0);
    CHECK(load_with("NCCLSCOPE_CLOCK", "tsc ") == -1 &&
          strstr(err, "NCCLSCOPE_CLOCK=\"tsc \": accepted: auto, tsc or monotonic"));
    CHECK(load_with("NCCLSCOPE_CLOCK", "monotonic-and-a-long-tail-that-would-not-fit") == -1);
}

/* NCCLSCOPE_CPUS: the kernel's cpulist format (where the threads land:
 * tests/cli/test_cpus.py). */
static void test_cpus(void) {
    CHECK(load_with("NCCLSCOPE_CPUS", "") == 0 && !cfg.cpus_set);
    CHECK(load_with("NCCLSCOPE_CPUS", "3") == 0 && cfg.cpus_set && CPU_COUNT(&cfg.cpus) == 1 &&
          CPU_ISSET(3, &cfg.cpus));
    CHECK(load_with("NCCLSCOPE_CPUS", "0,8-11,20") == 0 && CPU_COUNT(&cfg.cpus) == 6 &&
          CPU_ISSET(0, &cfg.cpus) && CPU_ISSET(8, &cfg.cpus) && CPU_ISSET(11, &cfg.cpus) &&
          CPU_ISSET(20, &cfg.cpus) && !CPU_ISSET(12, &cfg.cpus));
    static const char *const bad[] = {"a", "1-", "-1", "3-1", "1,", "1,,2", " 1", "1 ", "0-99999", "1;2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(load_with("NCCLSCOPE_CPUS", bad[i]) == -1);
        CHECK(strstr(err, "NCCLSCOPE_CPUS=\"") && strstr(err, "accepted: a CPU list"));
    }
    CHECK(load_with("NCCLSCOPE_CPUS", "1,x") == -1 && strstr(err, "malformed at byte 2"));
    CHECK(load_with("NCCLSCOPE_CPUS", "1-") == -1 && strstr(err, "malformed at byte 2"));
    CHECK(load_with("NCCLSCOPE_CPUS", "5-x") == -1 && strstr(err, "malformed at byte 2"));
    CHECK(load_with("NCCLSCOPE_CPUS", "0-99999") == -1 && strstr(err, "out of range at byte 2"));
    CHECK(load_with("NCCLSCOPE_CPUS", "2,2000") == -1 && strstr(err, "out of range at byte 2"));
    CHECK(load_with("NCCLSCOPE_CPUS", "18446744073709551617") == -1 &&
          strstr(err, "out of range at byte 0"));
    CHECK(load_with("NCCLSCOPE_CPUS", "0,3-1") == -1 &&
          strstr(err, "a range that runs backwards at byte 4"));
    CHECK(load_with("NCCLSCOPE_CPUS", "0-7:2") == -1 && strstr(err, "malformed at byte 3"));
}

int main(void) {
    test_cpus();
    test_defaults();
    test_numbers_accepted();
    test_numbers_refused();
    test_message_shape();
    test_dir();
    test_paths();
    test_events();
    test_clock();
    return check_summary();
}
