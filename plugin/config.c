// SPDX-License-Identifier: Apache-2.0
/* config.c - NCCLSCOPE_* environment variables.
 *
 * Parsing is strict, because a value read differently from what the user
 * meant silently changes what is recorded: numbers are plain decimal
 * digits (no sign, no blanks, no leading zero, no 0x: "010" would be 8 to
 * strtoul and 10 to a person; "-1" would wrap), within the setting's range;
 * strings must fit their buffer. Anything else is refused with a message
 * naming the setting, its value and what is accepted (docs/config.md). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "event_types.h"

/* Writes v for a message: in quotes, at most 64 bytes, bytes that are not
 * printable ASCII as \xNN, so a stray blank or control byte shows. */
static const char *quoted(const char *v, char *buf, size_t len) {
    size_t o = 0, i = 0;
    buf[o++] = '"';
    for (; v[i] && i < 64 && o + 8 < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
    }
    if (v[i] && o + 5 < len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

enum { NUM_OK, NUM_MALFORMED, NUM_TOO_BIG };

/* Plain decimal: one or more digits, no leading zero unless the value is
 * "0". Values above UINT64_MAX are NUM_TOO_BIG (never wrapped). */
static int parse_decimal(const char *v, uint64_t *out) {
    if (!*v || (v[0] == '0' && v[1]))
        return NUM_MALFORMED;
    uint64_t x = 0;
    int big = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            return NUM_MALFORMED;
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10)
            big = 1;
        else
            x = x * 10 + d;
    }
    *out = x;
    return big ? NUM_TOO_BIG : NUM_OK;
}

/* Hexadecimal digits (either case), at least one. */
static int parse_hex(const char *v, uint64_t *out) {
    if (!*v)
        return NUM_MALFORMED;
    uint64_t x = 0;
    int big = 0;
    for (const char *p = v; *p; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else if (*p >= 'A' && *p <= 'F')
            d = (unsigned)(*p - 'A' + 10);
        else
            return NUM_MALFORMED;
        if (x >> 60)
            big = 1;
        else
            x = x << 4 | d;
    }
    *out = x;
    return big ? NUM_TOO_BIG : NUM_OK;
}

/* Reads setting `name` into *out: unset or empty gives def; otherwise a
 * plain decimal number in [lo, hi]. `note` (may be "") follows the range
 * in messages, e.g. its unit. */
static int get_u32(const char *name, uint32_t def, uint32_t lo, uint32_t hi, const char *note,
                   uint32_t *out, char *err, unsigned errlen) {
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    uint64_t x = 0;
    int rc = parse_decimal(v, &x);
    if (rc == NUM_OK && x >= lo && x <= hi) {
        *out = (uint32_t)x;
        return 0;
    }
    char q[300];
    snprintf(err, errlen, "%s=%s: %s; accepted: %u..%u%s", name, quoted(v, q, sizeof(q)),
             rc == NUM_MALFORMED ? "not a plain decimal number (digits only: no sign, blank, "
                                   "leading zero or 0x)"
                                 : "out of range",
             lo, hi, note);
    return -1;
}

/* Does NCCLSCOPE_EVENTS ask for KernelCh by name or number (not only
 * through `default`)? */
static int kernel_named(void) {
    const char *v = getenv("NCCLSCOPE_EVENTS");
    if (!v || !*v)
        return 0;
    static const char *const names[] = {"kernelch", "kernel", "kernelphase", "all"};
    for (const char *p = v; *p;) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ' && *e != '\t')
            e++;
        if (e > p && *p >= '0' && *p <= '9')
            return 1;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if ((size_t)(e - p) == strlen(names[i]) && !strncasecmp(p, names[i], (size_t)(e - p)))
                return 1;
        p = e;
    }
    return 0;
}

/* NCCLSCOPE_EVENTS: names (event_types.c parses them), or a number in
 * plain decimal or 0x hexadecimal, parsed here with the same strictness
 * as the other settings. */
static int get_events(uint32_t *mask, char *err, unsigned errlen) {
    const char *v = getenv("NCCLSCOPE_EVENTS");
    *mask = NSC_MASK_DEFAULT;
    if (!v || !*v)
        return 0;
    char q[300];
    const char *s = v;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s >= '0' && *s <= '9') {
        uint64_t x = 0;
        int rc = NUM_MALFORMED; /* blanks before a number */
        if (s == v)
            rc = v[0] == '0' && (v[1] == 'x' || v[1] == 'X') ? parse_hex(v + 2, &x)
                                                             : parse_decimal(v, &x);
        if (rc == NUM_OK && x <= NSC_MASK_ALL) {
            *mask = (uint32_t)x;
            return 0;
        }
        snprintf(err, errlen,
                 "NCCLSCOPE_EVENTS=%s: %s; accepted: event names, or a mask 0..0x%x in plain "
                 "decimal or 0x hexadecimal",
                 quoted(v, q, sizeof(q)),
                 rc == NUM_MALFORMED ? "not a plain decimal or 0x hexadecimal number"
                                     : "out of range",
                 NSC_MASK_ALL);
        return -1;
    }
    char why[256];
    if (nsc_mask_parse(v, mask, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "NCCLSCOPE_EVENTS=%s: %s", quoted(v, q, sizeof(q)), why);
        return -1;
    }
    return 0;
}

/* A path setting: unset or empty gives "", longer than the buffer is refused. */
static int get_path(const char *name, char *out, size_t cap, char *err, unsigned errlen) {
    const char *v = getenv(name);
    out[0] = '\0';
    if (!v || !*v)
        return 0;
    size_t len = strlen(v);
    if (len >= cap) {
        char q[300];
        snprintf(err, errlen, "%s=%s is %zu bytes long; accepted: at most %zu bytes", name,
                 quoted(v, q, sizeof(q)), len, cap - 1);
        return -1;
    }
    memcpy(out, v, len + 1);
    return 0;
}

/* NCCLSCOPE_CPUS: a CPU list as the kernel's cpulist files write it ("3",
 * "0-3", "0,8-11"; not the stride form "0-7:2"); unset or empty: no
 * pinning. A refusal names the byte where the list went wrong. */
static int get_cpus(struct nsc_config *cfg, char *err, unsigned errlen) {
    const char *v = getenv("NCCLSCOPE_CPUS");
    CPU_ZERO(&cfg->cpus);
    cfg->cpus_set = 0;
    if (!v || !*v)
        return 0;
    const char *p = v, *why = "malformed";
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9')
            break;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (a >= CPU_SETSIZE) {
            why = "out of range";
            break;
        }
        if (*end == '-') {
            p = end + 1;
            if (*p < '0' || *p > '9')
                break;
            b = strtoul(p, &end, 10);
            if (b >= CPU_SETSIZE || b < a) {
                why = b < a ? "a range that runs backwards" : "out of range";
                break;
            }
        }
        for (unsigned long c = a; c <= b; c++)
            CPU_SET(c, &cfg->cpus);
        p = end;
        if (*p == '\0') {
            cfg->cpus_set = 1;
            return 0;
        }
        if (*p != ',')
            break;
        p++;
    }
    char q[300];
    snprintf(err, errlen,
             "NCCLSCOPE_CPUS=%s: %s at byte %u; accepted: a CPU list such as 30-31 or 0,8-11, "
             "CPUs 0..%d",
             quoted(v, q, sizeof(q)), why, (unsigned)(p - v), CPU_SETSIZE - 1);
    return -1;
}

int nsc_config_load(struct nsc_config *cfg, char *err, unsigned errlen) {
    memset(cfg, 0, sizeof(*cfg));
    uint32_t v;
    if (get_u32("NCCLSCOPE_ENABLE", 1, 0, 1, "", &v, err, errlen))
        return -1;
    cfg->enabled = (int)v;

    const char *dir = getenv("NCCLSCOPE_DIR");
    if (!dir || !*dir)
        dir = "./ncclscope-trace";
    size_t dlen = strlen(dir);
    if (dlen > NSC_CONFIG_DIR_MAX) {
        char q[300];
        snprintf(err, errlen, "NCCLSCOPE_DIR=%s is %zu bytes long; accepted: at most %u bytes",
                 quoted(dir, q, sizeof(q)), dlen, NSC_CONFIG_DIR_MAX);
        return -1;
    }
    memcpy(cfg->dir, dir, dlen + 1);

    if (get_events(&cfg->event_mask, err, errlen))
        return -1;
    /* KernelCh on a sample of the operations (record/kernel_sample.h) where
     * it comes from the default mask; a mask that names it (KernelCh,
     * kernel, KernelPhase, all, a number) asks for every operation. */
    if (get_u32("NCCLSCOPE_KERNEL_SAMPLE", kernel_named() ? 1 : 32, 0, 1u << 20,
                " (one operation in N gets KernelCh; 1: every one, 0: none)",
                &cfg->kernel_sample, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_KERNEL_SAMPLE_MS", 1, 0, 3600000,
                " ms (and at least one per period; 0: by count only)", &cfg->kernel_sample_ms,
                err, errlen))
        return -1;
    if (cfg->kernel_sample == 0)
        cfg->event_mask &= ~(1u << NSC_ET_KERNEL_CH);

    if (get_u32("NCCLSCOPE_MEMORY_MB", 64, 4, 65536, " MiB", &cfg->memory_mb, err, errlen))
        return -1;
    /* A thread may hold up to 3/4 of the budget (a burst on one thread is
     * absorbed while the others keep a quarter). */
    uint32_t ring_max_kb = cfg->memory_mb * 1024u / 4u * 3u;
    char note[96];
    snprintf(note, sizeof(note), " KiB (3/4 of NCCLSCOPE_MEMORY_MB=%u)", cfg->memory_mb);
    if (get_u32("NCCLSCOPE_RING_KB", ring_max_kb, 4, ring_max_kb, note, &v, err, errlen))
        return -1;
    cfg->ring_records = v * (1024u / 64u); /* v <= 48 Mi: no 32-bit overflow */
    if (get_u32("NCCLSCOPE_COMPRESS_THREADS", 0, 0, 16, "", &cfg->compress_threads, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_EXIT_WAIT_MS", 2000, 0, 600000, " ms", &cfg->exit_wait_ms, err,
                errlen))
        return -1;
    if (get_u32("NCCLSCOPE_MAX_THREADS", 256, 1, 4096, "", &cfg->max_threads, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_FLUSH_MS", 1000, 1, 3600000, " ms", &cfg->flush_ms, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_DRAIN_US", 1000, 10, 3600000000u, " us", &cfg->drain_us, err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_CHUNK_KB", 1024, 4, 16384, " KiB", &v, err, errlen))
        return -1;
    cfg->chunk_records = v * (1024u / 64u);
    if (get_u32("NCCLSCOPE_ZSTD_LEVEL", 1, 1, 19, "", &v, err, errlen))
        return -1;
    cfg->zstd_level = (int)v;

    const char *clk = getenv("NCCLSCOPE_CLOCK");
    if (!clk || !*clk)
        clk = "auto";
    if (strcmp(clk, "auto") && strcmp(clk, "tsc") && strcmp(clk, "monotonic")) {
        char q[300];
        snprintf(err, errlen, "NCCLSCOPE_CLOCK=%s: accepted: auto, tsc or monotonic",
                 quoted(clk, q, sizeof(q)));
        return -1;
    }
    snprintf(cfg->clock, sizeof(cfg->clock), "%s", clk);

    if (get_path("NCCLSCOPE_CHAIN", cfg->chain, sizeof(cfg->chain), err, errlen) ||
        get_path("NCCLSCOPE_METRICS_DIR", cfg->metrics_dir, sizeof(cfg->metrics_dir), err, errlen))
        return -1;
    if (get_u32("NCCLSCOPE_METRICS_SECONDS", 15, 1, 86400, " s", &cfg->metrics_seconds, err,
                errlen))
        return -1;
    if (get_u32("NCCLSCOPE_METRICS_KEEP", 0, 0, 1, "", &v, err, errlen))
        return -1;
    cfg->metrics_keep = (int)v;
    if (get_u32("NCCLSCOPE_MAX_MB", 0, 0, 16777216, " MiB (0: no cap)", &cfg->max_mb, err, errlen))
        return -1;

    const char *mode = getenv("NCCLSCOPE_MODE");
    if (mode && *mode && strcmp(mode, "stream") && strcmp(mode, "flight")) {
        char q[300];
        snprintf(err, errlen, "NCCLSCOPE_MODE=%s: accepted: stream or flight", quoted(mode, q, sizeof(q)));
        return -1;
    }
    cfg->flight = mode && !strcmp(mode, "flight");
    if (get_u32("NCCLSCOPE_FLIGHT_MB", 32, 1, 65536, " MiB", &cfg->flight_mb, err, errlen))
        return -1;
    /* docs/design.md "Hang watchdog" says why 300 */
    if (get_u32("NCCLSCOPE_HANG_SECONDS", 300, 0, 604800, " s (0: no watchdog, no slab)",
                &cfg->hang_seconds, err, errlen))
        return -1;
    /* docs/design.md "Hang suspects" says why 15 */
    if (get_u32("NCCLSCOPE_SUSPECT_SECONDS", 15, 0, 604800, " s (0: no suspects, no progress file)",
                &cfg->suspect_seconds, err, errlen))
        return -1;
    if (get_cpus(cfg, err, errlen))
        return -1;
    /* A signal only if the user names one: by name (USR1, SIGUSR2, ...) or
     * number. Fatal signals dump anyway in flight mode; SIGKILL and SIGSTOP
     * cannot be caught. */
    const char *sig = getenv("NCCLSCOPE_DUMP_SIGNAL");
    cfg->dump_signal = 0;
    if (sig && *sig) {
        static const struct { const char *name; int num; } names[] = {
            {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"INT", SIGINT},
            {"QUIT", SIGQUIT}, {"TERM", SIGTERM}, {"PWR", SIGPWR}, {"WINCH", SIGWINCH},
        };
        const char *n = strncmp(sig, "SIG", 3) ? sig : sig + 3;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (!strcmp(n, names[i].name))
                cfg->dump_signal = names[i].num;
        if (!cfg->dump_signal) {
            uint64_t num;
            const char *why = NULL;
            if (parse_decimal(sig, &num) != 0 || num < 1 || num > (uint64_t)SIGRTMAX)
                why = "not a signal";
            else if (num == SIGKILL || num == SIGSTOP)
                why = "it cannot be caught";
            else if (num == SIGSEGV || num == SIGBUS || num == SIGFPE || num == SIGILL ||
                     num == SIGABRT || num == SIGTRAP || num == SIGSYS)
                why = "a fatal signal (flight mode dumps on those anyway)";
            else if (num >= 32 && num < (uint64_t)SIGRTMIN)
                why = "the C library keeps it for its threads";
            else if (num == SIGCHLD || num == SIGCONT || num == SIGTSTP || num == SIGTTIN ||
                     num == SIGTTOU)
                why = "job control uses it";
            if (why) {
                char q[300];
                snprintf(err, errlen, "NCCLSCOPE_DUMP_SIGNAL=%s: %s; accepted: USR1, USR2, HUP, INT, "
                         "QUIT, TERM, PWR, WINCH or a number 1..%d other than KILL, STOP, the fatal "
                         "signals, job control's and %d..%d (the C library's)",
                         quoted(sig, q, sizeof(q)), why, SIGRTMAX, 32, SIGRTMIN - 1);
                return -1;
            }
            cfg->dump_signal = (int)num;
        }
    }
    return 0;
}
