/* block_payload.c - encoders and decoders of the small blocks' payloads. */
#include "block_payload.h"

#include <string.h>

size_t nsc_strings_encode(unsigned char *buf, size_t cap, uint32_t *id, uint32_t upto,
                          const char *(*text)(uint32_t id)) {
    size_t len = 0;
    while (*id < upto) {
        if (*id == 0) { /* id 0 is NULL: never written */
            (*id)++;
            continue;
        }
        const char *s = text(*id);
        size_t sl = s ? strlen(s) : 0;
        if (sl > UINT16_MAX)
            sl = UINT16_MAX;
        if (len + 6 + sl > cap)
            break;
        uint16_t l16 = (uint16_t)sl;
        memcpy(buf + len, id, 4);
        memcpy(buf + len + 4, &l16, 2);
        if (sl)
            memcpy(buf + len + 6, s, sl);
        len += 6 + sl;
        (*id)++;
    }
    return len;
}

int nsc_strings_next(const unsigned char **p, const unsigned char *end, uint32_t *id,
                     const char **text, uint16_t *len) {
    if (end - *p < 6)
        return 0;
    memcpy(id, *p, 4);
    memcpy(len, *p + 4, 2);
    if ((size_t)(end - *p - 6) < *len || *id >= 65536)
        return 0;
    *text = (const char *)*p + 6;
    *p += 6 + (size_t)*len;
    return 1;
}

int nsc_stats_decode(const void *data, size_t len, struct nsc_stats_header *h,
                     const unsigned char **threads, const char **why) {
    /* v1/v2 headers are 40 bytes with header_size 0; v3 says its size, so a
     * later version may append fields this reader skips. */
    memset(h, 0, sizeof(*h));
    if (len < NSC_STATS_HEADER_V2) {
        *why = "stats block too short";
        return -1;
    }
    memcpy(h, data, NSC_STATS_HEADER_V2);
    size_t hsize = h->header_size ? h->header_size : NSC_STATS_HEADER_V2;
    if (hsize < NSC_STATS_HEADER_V2 || hsize > len) {
        *why = "stats header size out of range";
        return -1;
    }
    memcpy(h, data, hsize < sizeof(*h) ? hsize : sizeof(*h));
    h->header_size = (uint32_t)hsize;
    if ((len - hsize) / sizeof(struct nsc_thread_stats) < h->nthreads) {
        *why = "stats block shorter than its thread count";
        return -1;
    }
    *threads = (const unsigned char *)data + hsize;
    return 0;
}
