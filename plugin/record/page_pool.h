// SPDX-License-Identifier: Apache-2.0
/*
 * page_pool.h - the process's record memory: one budget (NCCLSCOPE_MEMORY_MB)
 * cut into fixed pages that every writer thread's ring borrows and the
 * flusher gives back.
 *
 * Layout (one anonymous mapping, reserved at the first session, touched only
 * where pages are used, so resident memory follows the backlog):
 *
 *   base ─► [ page 0 | page 1 | ... | page n-1 ]   each NSC_PAGE_RECORDS records
 *   free stack: top = (tag << 32 | page), next[page] = page below it
 *
 * Contract:
 *   - any thread may call page_pool_get (a writer whose page is full: slow
 *     path, once per NSC_PAGE_RECORDS records) and page_pool_put (the flusher
 *     returning drained pages; the thread registry reclaiming a dead
 *     thread's last page); all are lock-free and wait-free but for CAS retries;
 *   - a page belongs to exactly one ring between get and put; nothing here
 *     reads page contents;
 *   - the pool is never unmapped while a session may run (library unload
 *     only), so a page address stays valid for every reader.
 *
 * ABA: the stack head carries a 32-bit tag bumped by every successful CAS,
 * so a pop that read a stale `next` fails instead of corrupting the stack.
 *
 * Memory ordering: put is a RELEASE CAS (the flusher's reads of the page
 * happen before any new owner's writes), get an ACQUIRE CAS (pairs with it).
 */
#ifndef NSC_PAGE_POOL_H
#define NSC_PAGE_POOL_H

#include <stdint.h>

#include "trace_format.h"

#define NSC_PAGE_SHIFT 10u /* 1024 records = 64 KiB per page */
#define NSC_PAGE_RECORDS (1u << NSC_PAGE_SHIFT)
#define NSC_PAGE_BYTES ((uint64_t)NSC_PAGE_RECORDS * NSC_REC_SIZE)
#define NSC_PAGE_NONE UINT32_MAX

/* Reserves `bytes` (rounded down to whole pages, at least 2) the first time;
 * later calls keep the existing pool (its size is reported). Returns 0, or
 * -1 when the mapping fails. Slow path (init). */
int page_pool_create(uint64_t bytes);

/* Takes a free page; NSC_PAGE_NONE when the budget is spent. */
uint32_t page_pool_get(void);
/* Returns a page. */
void page_pool_put(uint32_t page);

/* Address of the first record of a page. */
extern struct nsc_rec *nsc_pool_base;
static inline struct nsc_rec *page_pool_records(uint32_t page) {
    return nsc_pool_base + ((uint64_t)page << NSC_PAGE_SHIFT);
}

/* Statistics (relaxed): pages in the pool, in use now, and at the peak. */
uint32_t page_pool_pages(void);
uint32_t page_pool_in_use(void);
uint32_t page_pool_peak(void);

/* Library unload, when no ring holds a page any more. */
void page_pool_destroy(void);

#endif /* NSC_PAGE_POOL_H */
