// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_reader.c - the trace reader and decoder on arbitrary bytes.
 * Built two ways: with -Dfuzz=true (clang) as a libFuzzer target, and always
 * as a self-contained mutation runner (`fuzz_reader_runner FILE N`) that
 * applies N deterministic mutations (bit flips, truncations, splices,
 * length-field edits) to a valid trace; the test suite runs it under
 * ASan/UBSan in CI. `fuzz_reader_runner FILE N --sum` first stores every
 * block of FILE as a crash dump does (uncompressed, ending with its
 * payload's checksum: NSC_BLK_F_SUM), so the mutations meet that path.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_decode.h"

static void on_record(void *ud, struct nsc_decoder *d, uint32_t t, const struct nsc_rec *r,
                      const struct nsc_rec *e) {
    (void)d;
    (void)t;
    (void)e;
    *(uint64_t *)ud += r->h.id;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct nsc_decoder d;
    uint64_t sum = 0;
    if (nsc_decoder_open_memory(&d, data, size, "fuzz") == NSC_OK) {
        struct nsc_decode_ops ops = {.record = on_record};
        nsc_decoder_run(&d, &ops, &sum);
        for (uint32_t i = 0; i < 64; i++)
            (void)nsc_decoder_str(&d, i);
        nsc_decoder_close(&d);
    }
    return 0;
}

#ifndef NSC_LIBFUZZER
/* FILE's blocks again, each stored raw with its payload checksum; NULL
 * when FILE has damage (the runner wants a valid trace to start from). */
static uint8_t *with_sums(const uint8_t *data, size_t n, size_t *out_len) {
    struct nsc_reader r;
    if (nsc_reader_open_memory(&r, data, n, "seed") != NSC_OK)
        return NULL;
    size_t cap = 2 * n + 65536, len = sizeof(struct nsc_file_header);
    uint8_t *out = malloc(cap);
    struct nsc_block b;
    int rc = 0;
    if (out)
        memcpy(out, data, len);
    while (out && (rc = nsc_reader_next(&r, &b)) == 1) {
        size_t need = len + sizeof(struct nsc_block_header) + b.len + NSC_BLK_SUM_BYTES;
        if (need > cap) {
            uint8_t *q = realloc(out, cap = 2 * need);
            if (!q) {
                free(out);
                out = NULL;
                break;
            }
            out = q;
        }
        struct nsc_block_header h = {.magic = NSC_BLOCK_MAGIC, .type = b.type,
                                     .flags = NSC_BLK_F_SUM,
                                     .stored_len = (uint32_t)(b.len + NSC_BLK_SUM_BYTES),
                                     .raw_len = (uint32_t)b.len, .seq = b.seq};
        h.check = nsc_header_check(&h);
        uint32_t sum = nsc_payload_check(NSC_PAYLOAD_CHECK_SEED, b.data, b.len);
        memcpy(out + len, &h, sizeof(h));
        memcpy(out + len + sizeof(h), b.data, b.len);
        memcpy(out + len + sizeof(h) + b.len, &sum, sizeof(sum));
        len = need;
    }
    if (out && (rc != 0 || r.errors)) {
        fprintf(stderr, "%s\n", r.err);
        free(out);
        out = NULL;
    }
    nsc_reader_close(&r);
    *out_len = len;
    return out;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    if (argc < 3 || (argc > 3 && strcmp(argv[3], "--sum") != 0)) {
        fprintf(stderr, "usage: %s TRACE ITERATIONS [--sum]\n", argv[0]);
        return 1;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    rewind(f);
    uint8_t *orig = malloc(n), *buf = malloc(n + 4096);
    if (fread(orig, 1, n, f) != n)
        return 1;
    fclose(f);
    if (argc > 3) {
        uint8_t *s = with_sums(orig, n, &n);
        if (!s) {
            fprintf(stderr, "%s: cannot store its blocks with checksums\n", argv[1]);
            return 1;
        }
        free(orig);
        free(buf);
        orig = s;
        buf = malloc(n + 4096);
        /* the unmutated file reads clean: every checksum is right */
        struct nsc_decoder d;
        struct nsc_decode_ops none = {0};
        if (nsc_decoder_open_memory(&d, orig, n, "sums") != NSC_OK ||
            nsc_decoder_run(&d, &none, NULL) != 0) {
            fprintf(stderr, "%s stored with checksums does not read clean\n", argv[1]);
            return 1;
        }
        nsc_decoder_close(&d);
    }
    long iters = atol(argv[2]);
    for (long i = 0; i < iters; i++) {
        size_t len = n;
        memcpy(buf, orig, n);
        int muts = 1 + (int)(next() % 4);
        for (int m = 0; m < muts; m++) {
            switch (next() % 5) {
            case 0: buf[next() % len] ^= (uint8_t)(1u << (next() % 8)); break;
            case 1: len = next() % (len + 1); break;
            case 2: { /* overwrite a 32-bit field with an extreme value */
                if (len >= 4) {
                    uint32_t v = (next() & 1) ? 0xffffffffu : (uint32_t)next();
                    memcpy(buf + next() % (len - 3), &v, 4);
                }
                break;
            }
            case 3: { /* splice: duplicate a region */
                if (len > 64 && len + 1024 <= n + 4096) {
                    size_t a = next() % (len - 64), k = 1 + next() % 1024;
                    if (a + k > len) k = len - a;
                    memmove(buf + a + k, buf + a, len - a);
                    len += k;
                }
                break;
            }
            default: buf[next() % (len ? len : 1)] = (uint8_t)next(); break;
            }
            if (len == 0)
                break;
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    free(orig);
    free(buf);
    printf("%ld mutated inputs decoded without a crash\n1 passed, 0 failed\n", iters);
    return 0;
}
#endif
