// SPDX-License-Identifier: Apache-2.0
/* log.c - logging through NCCL's logger. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Written in init (under the session mutex), read by any thread later: an
 * atomic pointer keeps the read well-defined without a lock. */
static _Atomic(nsc_abi_logger) logger;

void nsc_log_set_logger(nsc_abi_logger fn) {
    if (fn)
        __atomic_store_n(&logger, fn, __ATOMIC_RELEASE);
}

/* Control bytes (a newline or an escape sequence from an environment
 * value, a control file, a mark) are written as \xNN: one log line stays
 * one line and cannot drive the terminal. */
static void escape(const char *in, char *out, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (; *in && o + 5 < n; in++) {
        unsigned char c = (unsigned char)*in;
        if (c < 0x20 || c == 0x7f) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

static void emit(int level, const char *fmt, va_list ap) {
    char raw[1024], msg[1024];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    escape(raw, msg, sizeof(msg));
    nsc_abi_logger fn = __atomic_load_n(&logger, __ATOMIC_ACQUIRE);
    if (fn) {
        fn(level, NSC_ABI_LOG_SUBSYS_INIT | NSC_ABI_LOG_SUBSYS_PROFILE, __FILE__, __LINE__,
           "%s", msg);
        return;
    }
    const char *dbg = getenv("NCCLSCOPE_DEBUG");
    if (level == NSC_ABI_LOG_WARN || (dbg && *dbg == '1'))
        fprintf(stderr, "ncclscope %s: %s\n", level == NSC_ABI_LOG_WARN ? "WARN" : "INFO", msg);
}

void nsc_log_info(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(NSC_ABI_LOG_INFO, fmt, ap);
    va_end(ap);
}

void nsc_log_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(NSC_ABI_LOG_WARN, fmt, ap);
    va_end(ap);
}
