// SPDX-License-Identifier: Apache-2.0
/* segments.c - which segment files are kept (see segments.h). */
#include "segments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void nsc_segments_init(struct nsc_segments *s, uint64_t cap_bytes) {
    memset(s, 0, sizeof(*s));
    s->cap = cap_bytes;
    s->target = cap_bytes / 4;
}

void nsc_segments_free(struct nsc_segments *s) {
    for (unsigned i = 0; i < s->nold; i++)
        free(s->old[i].path);
    free(s->old);
    s->old = NULL;
    s->nold = s->old_cap = 0;
}

int nsc_segments_due(const struct nsc_segments *s, uint64_t cur_bytes, uint64_t next) {
    return s->cap && s->cur_chunks > 0 && cur_bytes + next > s->target;
}

void nsc_segments_closed(struct nsc_segments *s, const char *path, uint64_t bytes) {
    if (s->nold == s->old_cap) {
        unsigned cap = s->old_cap ? s->old_cap * 2 : 8;
        struct nsc_segment_file *o = realloc(s->old, cap * sizeof(*o));
        if (!o) { /* cannot remember it: it stays on disk, uncounted */
            s->cur_records = 0;
            s->cur_chunks = 0;
            return;
        }
        s->old = o;
        s->old_cap = cap;
    }
    s->old[s->nold].path = strdup(path);
    s->old[s->nold].bytes = bytes;
    s->old[s->nold].records = s->cur_records;
    if (s->old[s->nold].path)
        s->nold++;
    s->cur_records = 0;
    s->cur_chunks = 0;
}

unsigned nsc_segments_prune(struct nsc_segments *s, uint64_t cur_bytes, uint64_t margin) {
    if (!s->cap)
        return 0;
    uint64_t total = cur_bytes + margin;
    for (unsigned i = 0; i < s->nold; i++)
        total += s->old[i].bytes;
    unsigned gone = 0;
    while (gone < s->nold && total > s->cap) {
        struct nsc_segment_file *o = &s->old[gone];
        int rc = s->unlink ? s->unlink(s->unlink_ctx, o->path) : unlink(o->path);
        if (rc != 0 && errno != ENOENT)
            break; /* cannot delete (permissions): keep the rest, counted as kept */
        total -= o->bytes;
        s->deleted++;
        s->bytes_deleted += o->bytes;
        s->records_deleted += o->records;
        free(o->path);
        gone++;
    }
    if (gone) {
        memmove(s->old, s->old + gone, (s->nold - gone) * sizeof(*s->old));
        s->nold -= gone;
    }
    return gone;
}
