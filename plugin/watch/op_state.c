// SPDX-License-Identifier: Apache-2.0
/* op_state.c - per-operation and per-communicator state in slab slots
 * (op_state.h has the contract; slab.h the slot layout and reuse rule). */
#include "op_state.h"

#include <stdalign.h>
#include <string.h>

#include "clock.h"
#include "event_types.h"
#include "intern.h"
#include "op_rules.h"
#include "thread_state.h"

/* Payload words per kind (every one an atomic word of the slot, so the
 * watchdog may read while NCCL's threads write):
 *
 *   all     w0  comm serial << 32 | comm index
 *   OP      w1  start ticks     w2  peer | nch << 32 | kernel_tracked << 40 | etype << 48
 *           w3  seqNumber (Coll; 0 for P2p; 48 bits) << 16 | func (string id)
 *           w4  ProxyOps << 32 | ProxyOps done    w5 channels done (bits)
 *           w7  stop ticks    w11 last child gone (without KernelCh); neither reset
 *               at the start: a former occupant's is older than this start
 *   PROXY   w1  parent slot   w2 parent id   w3 peer | ch << 32 | is_send << 40
 *           w4  nSteps        w5 last ProxyOp state + 1 (v1-v3)
 *   STEP    w1  parent slot   w2 parent id   w3 step   w4 last state + 1 (0: none yet)
 *           (no reference on its ProxyOp: the scan checks the id)
 *   KCH     w1  parent slot   w2 parent id   w3 channel
 *           (no reference on its operation either: below, "KernelCh")
 *
 * w10 and w12 are the slab's (NSC_SLAB_W_BATCH*: a free slot's batch).
 * The start writes exactly these words of its kind; the others hold a
 * former occupant's values and nothing reads them.
 *
 * Lines: `life`, `kind`, w0..w5 on the slot's first, w6..w13 on its second.
 * A child's words are all on the first (its callbacks touch one line); an
 * operation's start writes the first alone, and what its children write
 * into it from the proxy thread (channels, ProxyOps, `life`) is there too,
 * so the second (stop time; last child gone, only without KernelCh) stays
 * the issuing thread's. The watchdog's closed-comm mark is its own array.
 */
enum { W_COMM = 0, W_PSLOT = 1, W_PID = 2 };
#define OP_SEQ_BITS 48
#define OP_SEQ(s) (LD(s, 3) >> 16)
#define OP_FUNC(s) (LD(s, 3) & 0xffff)

#define RLX memory_order_relaxed

/* Callers pass ticks 0 when they did not read the clock: it is read only
 * where a time is kept (an operation's stop, its last child, a completion),
 * so a ProxyStep's stop costs no rdtsc. */
static inline uint64_t now_or(uint64_t t) { return t ? t : nsc_clock_ticks(); }
#define LD(s, k) atomic_load_explicit(&(s)->w[k], RLX)
#define ST(s, k, v) atomic_store_explicit(&(s)->w[k], (uint64_t)(v), RLX)

/* ---- per communicator ----
 * One entry per comm table slot, static: nothing is ever freed, so a reader
 * (the watchdog) can never touch reclaimed memory. A reader takes a
 * consistent snapshot the seqlock way: `serial` (ACQUIRE), the fields,
 * an ACQUIRE fence, `serial` again; the opener zeroes `serial`, issues a
 * RELEASE fence, resets the fields and stores the new serial (RELEASE). Every
 * field is an atomic, so a reader racing with a writer reads some value,
 * never undefined bytes (and TSan has nothing to report). */
/* Two lines: the thread that issues a comm's operations writes the first at
 * every start; completions (the proxy or watchdog thread) write the
 * second. On one line they took it from each other at every operation. */
struct watch {
    alignas(64) _Atomic uint32_t enq_meta; /* func << 8 | etype */
    _Atomic uint64_t enq_seq, started;
    alignas(64) _Atomic uint32_t serial; /* 0 while the slot is being reset */
    _Atomic uint32_t busy;   /* completions writing now (complete_op) */
    _Atomic uint32_t done_meta; /* func << 8 | etype */
    _Atomic uint64_t done_seq, done_ticks, completed;
    /* The last completed as one word, seq (40 bits) << 24 | etype << 16 |
     * func: overtaken() must not pair one completion's function with
     * another's seqNumber (two words stored one after the other could). */
    _Atomic uint64_t done_key;
    _Atomic uint64_t done_launch; /* start of the latest seen done on the GPU */
};
static struct watch watch[NSC_MAX_COMMS];

void nsc_opst_comm_open(uint32_t ci, uint32_t serial) {
    struct watch *w = &watch[ci];
    /* A completion may still be writing the previous comm's entry (the
     * watchdog finished an operation of it late). SEQ_CST here and in
     * complete_op (Dekker): either it sees serial 0 and writes nothing, or
     * we see its busy count and wait (a few stores) for it to leave. */
    atomic_store_explicit(&w->serial, 0, memory_order_seq_cst);
    while (atomic_load_explicit(&w->busy, memory_order_seq_cst))
        ; /* ACQUIRE enough: its stores happen before our resets below */
    /* RELEASE fence: a reader that sees any of the resets below also sees
     * serial 0 (or the new serial) on its re-check, so it discards a mix. */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&w->enq_meta, 0, RLX);
    atomic_store_explicit(&w->done_meta, 0, RLX);
    atomic_store_explicit(&w->enq_seq, 0, RLX);
    atomic_store_explicit(&w->done_seq, 0, RLX);
    atomic_store_explicit(&w->done_key, 0, RLX);
    atomic_store_explicit(&w->done_launch, 0, RLX);
    atomic_store_explicit(&w->done_ticks, 0, RLX);
    atomic_store_explicit(&w->started, 0, RLX);
    atomic_store_explicit(&w->completed, 0, RLX);
    /* RELEASE: pairs with nsc_opst_comm_read's ACQUIRE of serial. */
    atomic_store_explicit(&w->serial, serial, memory_order_release);
}

static int comm_open(uint32_t ci, uint32_t serial) {
    /* ACQUIRE on gen: pairs with nsc_comm_open's RELEASE (comm_table.h). */
    return ci < NSC_MAX_COMMS && serial &&
           atomic_load_explicit(&watch[ci].serial, memory_order_acquire) == serial &&
           (atomic_load_explicit(&nsc_comms[ci].gen, memory_order_acquire) & 1);
}

int nsc_opst_comm_read(uint32_t ci, struct nsc_opst_comm *o) {
    if (ci >= NSC_MAX_COMMS)
        return 0;
    struct watch *w = &watch[ci];
    uint32_t s1 = atomic_load_explicit(&w->serial, memory_order_acquire);
    if (!s1 || !(atomic_load_explicit(&nsc_comms[ci].gen, memory_order_acquire) & 1))
        return 0;
    /* The counts first (completed, then started), ACQUIRE: pairs with the RELEASE increments made
     * after the operation's fields, so a count of n comes with the fields of
     * the n-th operation or a later one (never "1 started, none enqueued"). */
    o->completed = atomic_load_explicit(&w->completed, memory_order_acquire);
    o->started = atomic_load_explicit(&w->started, memory_order_acquire); /* after: >= completed */
    uint32_t em = atomic_load_explicit(&w->enq_meta, RLX);
    uint32_t dm = atomic_load_explicit(&w->done_meta, RLX);
    o->serial = s1;
    o->comm_index = ci;
    o->enq_seq = atomic_load_explicit(&w->enq_seq, RLX);
    o->done_seq = atomic_load_explicit(&w->done_seq, RLX);
    o->done_ticks = atomic_load_explicit(&w->done_ticks, RLX);
    /* ACQUIRE fence: the loads above stay before the re-check (pairs with
     * the RELEASE fence in nsc_opst_comm_open). */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&w->serial, RLX) != s1)
        return 0;
    o->enq_func = (uint16_t)(em >> 8);
    o->enq_etype = (uint8_t)em;
    o->done_func = (uint16_t)(dm >> 8);
    o->done_etype = (uint8_t)dm;
    o->any_done = dm != 0;
    return 1;
}

/* ---- references ---- */

/* Takes a reference on slot i if its occupant is event `id` (one CAS that
 * checks both). ACQ_REL: the occupant's payload (published with the
 * RELEASE store of life) is visible to us; our reference is ordered before
 * our updates. Returns 0, or -1 when the slot holds someone else. */
static int attach(uint32_t i, uint64_t id) {
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    uint64_t l = atomic_load_explicit(&s->life, memory_order_acquire);
    for (;;) {
        if ((l >> NSC_LIFE_ID_SHIFT) != id || (l & NSC_LIFE_REFS) == NSC_LIFE_REFS)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&s->life, &l, l + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return 0;
    }
}

static void try_finish(uint32_t i, uint64_t id, uint64_t ticks);

/* Drops a reference (our updates before it; the last one sees everybody's).
 * The last reference of a finished slot finishes it. */
static void detach(uint32_t i, uint64_t id, uint64_t ticks, int touch) {
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    /* a child went: the grace without KernelCh starts again (with
     * KernelCh there is no grace, and the word's line stays the issuing
     * thread's) */
    if (touch && atomic_load_explicit(&s->kind, RLX) == NSC_OPST_OP && !((LD(s, 2) >> 40) & 1))
        ST(s, 11, ticks = now_or(ticks));
    /* SEQ_CST: a KernelCh's stop that saw our reference and left the
     * finishing to us set its bit before (kch_done); try_finish's read of
     * the bits comes after this in the single total order. */
    uint64_t l = atomic_fetch_sub_explicit(&s->life, 1, memory_order_seq_cst) - 1;
    if ((l & NSC_LIFE_REFS) == 0 && (l & NSC_LIFE_DONE))
        try_finish(i, id, ticks);
}

/* Channels done >= nch (SEQ_CST: the other half of kch_done's Dekker
 * pair). Reads only w5, which stays readable in a freed slot (slab.c). */
static int channels_done(const struct nsc_slab_slot *s, unsigned nch) {
    /* stopped with no child open: what the callers' `life` word says */
    return nsc_op_complete(1, 0, (int)nch,
                           (unsigned)__builtin_popcountll(
                               atomic_load_explicit(&s->w[5], memory_order_seq_cst)),
                           0);
}

/* The channels an operation waits for, or -1 when KernelCh is not recorded
 * (the watchdog then decides, after a grace). */
static int kernel_channels(const struct nsc_slab_slot *s) {
    uint64_t w2 = LD(s, 2);
    return (w2 >> 40) & 1 ? (int)((w2 >> 32) & 0xff) : -1;
}

/* The comm's last completed collective as one word (watch.done_key). */
#define KEY_SEQ_MASK ((UINT64_C(1) << 40) - 1)
static inline uint64_t done_key(uint64_t seq, uint64_t etype, uint64_t func) {
    return (seq & KEY_SEQ_MASK) << 24 | (etype & 0xff) << 16 | (func & 0xffff);
}

/* How a slot ends (finish): its event completed; its operation completed
 * but a later one of its comm already did (the watchdog retired it as
 * overtaken: counted, but "last completed" stays the later one); or it was
 * reclaimed with its finalized comm (nothing counted). */
enum fin { FIN_RECLAIMED = 0, FIN_COMPLETED = 1, FIN_OVERTAKEN = 2 };

static void complete_op(struct nsc_slab_slot *s, uint64_t ticks, enum fin how) {
    uint64_t c = LD(s, W_COMM);
    uint32_t ci = (uint32_t)c & 0xffff, serial = (uint32_t)(c >> 32);
    if (ci >= NSC_MAX_COMMS)
        return;
    struct watch *w = &watch[ci];
    /* The comm may have been finalized and its entry handed to the next
     * comm meanwhile (the watchdog finishes operations late): announce
     * ourselves, then check the serial (nsc_opst_comm_open's other half). */
    atomic_fetch_add_explicit(&w->busy, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&w->serial, memory_order_seq_cst) == serial) {
        /* Relaxed: completions of one comm are normally finished by one
         * thread (its proxy thread); two finishing at once may leave
         * either as the last, which is what "last completed" means then. */
        if (how == FIN_COMPLETED) {
            atomic_store_explicit(&w->done_seq, OP_SEQ(s), RLX);
            atomic_store_explicit(&w->done_meta,
                                  (uint32_t)(OP_FUNC(s) << 8 | (LD(s, 2) >> 48 & 0xff)), RLX);
            atomic_store_explicit(&w->done_key, done_key(OP_SEQ(s), LD(s, 2) >> 48, OP_FUNC(s)),
                                  RLX);
            atomic_store_explicit(&w->done_ticks, now_or(ticks), RLX);
            /* seen on the GPU: the stream passed its launch (a race: a later verdict) */
            if (kernel_channels(s) >= 0 && LD(s, 1) > atomic_load_explicit(&w->done_launch, RLX))
                atomic_store_explicit(&w->done_launch, LD(s, 1), RLX);
        }
        atomic_fetch_add_explicit(&w->completed, 1, memory_order_release); /* after the fields */
    }
    /* RELEASE: our stores before the opener's resets (it waits for 0). */
    atomic_fetch_sub_explicit(&w->busy, 1, memory_order_release);
}

/* KernelCh. A KernelCh holds no reference on its operation: an operation
 * with KernelCh recorded cannot complete before every one of its channels
 * is done, and a reference would cost a KernelCh two more locked
 * instructions (an attach CAS at its start, a release at its stop; with the
 * bit below, five per KernelCh, the slab's largest cost on the 64 B path).
 * What the reference protected against: the operation's slot taken by
 * another operation while a KernelCh is open. That happens only when the
 * watchdog retires the operation early (overtaken, or its comm finalized: a
 * KernelCh stop that never came, or one that comes after); a stop then
 * finds another id in the parent's `life` and sets nothing. The window
 * left, the parent retired and its slot taken by a new operation between
 * that check and the fetch_or, sets one channel bit of the new operation:
 * it may then complete one channel early (its last KernelCh's stop finds
 * the bit set and still finishes it; its later KernelCh count as orphans).
 * The watchdog's view of one operation, never the trace.
 *
 * Completion is a Dekker pair with the operation's stop: we set our bit,
 * then read DONE; the stop sets DONE, then (try_finish) reads the bits.
 * SEQ_CST on both sides, so at least one of them sees both and tries to
 * finish (try_finish may run twice; one CAS wins). */
static void kch_done(uint32_t p, uint64_t pid, uint64_t ch, uint64_t ticks) {
    struct nsc_slab_slot *ps = &nsc_slab_slots[p];
    if ((atomic_load_explicit(&ps->life, memory_order_acquire) >> NSC_LIFE_ID_SHIFT) != pid) {
        nsc_slab_count_orphan(); /* retired (and maybe reused) while we ran */
        return;
    }
    /* No early return when the bit was set already (a second KernelCh of
     * the channel, or a stray bit, below): whoever sets the last bit must
     * also look at DONE, and try_finish is harmless to call twice. */
    atomic_fetch_or_explicit(&ps->w[5], UINT64_C(1) << (ch & 63), memory_order_seq_cst);
    uint64_t l = atomic_load_explicit(&ps->life, memory_order_seq_cst);
    if ((l >> NSC_LIFE_ID_SHIFT) == pid && (l & NSC_LIFE_DONE) && !(l & NSC_LIFE_REFS))
        try_finish(p, pid, ticks);
}

/* Where a freed slot goes: the calling thread's slab cache; on the
 * watchdog's thread, which has no thread state, the scan's own (flushed at
 * the scan's end), so that its frees, one per operation completed without
 * KernelCh, reach the shared lists a batch at a time, as a thread's do. */
static struct nsc_slab_cache scan_cache;
static __thread int in_scan __attribute__((tls_model("initial-exec")));
static void free_slot(uint32_t i) {
    struct nsc_slab_cache *c = nsc_thread_slab_cache();
    nsc_slab_free(c ? c : in_scan ? &scan_cache : NULL, i);
}

/* We own slot i (our CAS moved its life to 0): account for it, release
 * its parent, give it back. */
static void finish(uint32_t i, uint64_t ticks, enum fin how) {
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    uint32_t kind = atomic_load_explicit(&s->kind, RLX);
    if (kind == NSC_OPST_OP) {
        if (how != FIN_RECLAIMED)
            complete_op(s, ticks, how);
    } else if (kind == NSC_OPST_PROXY) {
        uint32_t p = (uint32_t)LD(s, W_PSLOT);
        uint64_t pid = LD(s, W_PID);
        /* We still hold the reference taken at start: the parent is ours.
         * A child reclaimed with its finalized comm did not finish: its
         * parent makes no progress from it. */
        if (how != FIN_RECLAIMED)
            atomic_fetch_add_explicit(&nsc_slab_slots[p].w[4], 1, RLX); /* one more done */
        free_slot(i);
        detach(p, pid, ticks, 1);
        return;
    } else if (kind == NSC_OPST_KCH) {
        uint32_t p = (uint32_t)LD(s, W_PSLOT);
        uint64_t pid = LD(s, W_PID), ch = LD(s, 3);
        free_slot(i);
        if (how != FIN_RECLAIMED)
            kch_done(p, pid, ch, ticks);
        return;
    }
    free_slot(i);
}

static void try_finish(uint32_t i, uint64_t id, uint64_t ticks) {
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    const uint64_t l = NSC_LIFE(id) | NSC_LIFE_DONE;
    uint64_t exp = l;
    if (atomic_load_explicit(&s->kind, RLX) != NSC_OPST_OP) {
        /* ACQ_REL: the winner sees every update made before the references
         * were dropped; exactly one thread wins. */
        if (atomic_compare_exchange_strong_explicit(&s->life, &exp, 0, memory_order_acq_rel,
                                                    memory_order_relaxed))
            finish(i, ticks, FIN_COMPLETED);
        return;
    }
    /* An operation also needs its channels done, which is in its payload:
     * read it holding a reference (a late child attaching and finishing it
     * meanwhile must not free the slot under our reads). */
    for (;;) {
        exp = l;
        if (!atomic_compare_exchange_strong_explicit(&s->life, &exp, l + 1, memory_order_acq_rel,
                                                     memory_order_relaxed))
            return; /* someone holds it (their detach re-checks) or it is gone */
        int nch = kernel_channels(s);
        int done = nch >= 0 && channels_done(s, (unsigned)nch);
        exp = l + 1;
        if (done && atomic_compare_exchange_strong_explicit(&s->life, &exp, 0,
                                                            memory_order_acq_rel,
                                                            memory_order_relaxed)) {
            finish(i, ticks, FIN_COMPLETED);
            return;
        }
        /* Not done, or a child came and went while we held it: its own
         * check failed on our reference, so we check again if we are the
         * last. A KernelCh's stop that set the last bit after our read saw
         * our reference and left the finishing to us (kch_done), so "not
         * done" is read again after the release: a Dekker pair (we release,
         * then read the bits; it sets its bit, then reads `life`; SEQ_CST
         * both), so either we see its bit or it sees no reference and
         * finishes. Reading after the release is safe: the slot's memory
         * is never unmapped, and if it was finished and reused meanwhile,
         * the CAS at the top fails on the id. */
        if (atomic_fetch_sub_explicit(&s->life, 1, memory_order_seq_cst) - 1 != l)
            return;
        if (!done && (nch < 0 || !channels_done(s, (unsigned)nch)))
            return; /* the missing channel's stop finds no reference: it finishes */
    }
}

/* ---- callbacks ---- */

/* 0 for API v1-v3 (nsc_opst_set_api). RELAXED: set before any context is
 * handed out, and the same value in every session of a process. */
static _Atomic int channels_known = 1;

void nsc_opst_set_api(int api_version) {
    atomic_store_explicit(&channels_known, nsc_op_channels_known(api_version),
                          memory_order_relaxed);
}

void nsc_opst_set_tracking(int on) {
    /* RELEASE: the slab's creation before any start sees tracking on */
    atomic_store_explicit(&nsc_hot.opst_tracking, on && nsc_slab_on(), memory_order_release);
}

uint64_t nsc_opst_start_slow(struct nsc_comm *c, unsigned et, const nsc_abi_descr_v7 *d,
                             uint64_t h, uint64_t ticks, const char *func) {
    if (h & NSC_HANDLE_UNRECORDED)
        return h;
    uint64_t id = h & NSC_ID_MASK;
    if (id > NSC_SLAB_ID_MASK) {
        nsc_slab_count_untracked();
        return h;
    }
    uint32_t kind = et == NSC_ET_COLL || et == NSC_ET_P2P ? NSC_OPST_OP
                    : et == NSC_ET_PROXY_OP                ? NSC_OPST_PROXY
                    : et == NSC_ET_PROXY_STEP              ? NSC_OPST_STEP
                                                           : NSC_OPST_KCH;
    uint32_t pslot = 0;
    uint64_t pid = 0;
    if (kind != NSC_OPST_OP) {
        uint64_t p = (uint64_t)(uintptr_t)d->parentObj;
        if (kind == NSC_OPST_PROXY && d->proxyOp.pid != nsc_session_pid)
            return h; /* PXN: the parent's state is in another process */
        if (!nsc_handle_is_slab(p) || (p & NSC_HANDLE_UNRECORDED)) {
            /* A ProxyOp under an operation without a slot: the comm's
             * operations have ProxyOps, so from now on they take slots
             * (nsc_opst_start). One store, once per comm. */
            if (kind == NSC_OPST_PROXY && p &&
                !atomic_load_explicit(&c->proxied, memory_order_relaxed))
                atomic_store_explicit(&c->proxied, 1, memory_order_relaxed);
            return h; /* the parent is record-only (or none): so is the child */
        }
        pslot = nsc_handle_slot(p);
        pid = p & NSC_SLAB_ID_MASK;
        /* A ProxyStep takes no reference: it only names its ProxyOp (slot
         * and id), which the watchdog compares when it tallies steps. Steps
         * are most of the network path's callbacks; a reference would cost
         * two more atomic RMWs each. */
        /* A KernelCh takes none either (kch_done says why), nor reads its
         * operation's slot (the issuing thread's line, which would move to
         * this core for nothing): its stop (kch_done) and the scan check
         * the id it names. */
        if (kind == NSC_OPST_PROXY && attach(pslot, pid) != 0) {
            nsc_slab_count_orphan(); /* its slot completed (and maybe reused) */
            return h;
        }
    }
    int32_t i = nsc_slab_alloc(nsc_thread_slab_cache());
    if (i < 0) {
        if (kind == NSC_OPST_PROXY)
            detach(pslot, pid, ticks, 1);
        return h; /* full: record-only (counted) */
    }
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    uint32_t ci = (uint32_t)(c - nsc_comms);
    struct nsc_slab_slot *ps = &nsc_slab_slots[pslot];
    /* Every payload word this kind reads is written here (a freed slot
     * keeps its last occupant's words: slab.h), and no other: each store
     * is paid again at the next locked instruction, which waits for the
     * store buffer to drain (zeroing all 14 words was a third of a
     * KernelCh's start). The table at the top says which words a kind
     * reads. */
    atomic_store_explicit(&s->kind, kind, RLX);
    ST(s, W_COMM, (uint64_t)c->serial << 32 | ci);
    switch (kind) {
    case NSC_OPST_OP: {
        int coll = et == NSC_ET_COLL;
        /* v1-v3: no channel count (nsc_opst_set_api); the HANG block then
         * shows the channels started and not done. A Send or Recv to its
         * own rank, or of zero bytes, has no proxy work and NCCL gives it
         * no KernelCh at all (2.28: only proxy ops with steps get a
         * profiler op): it is completed as without KernelCh, else it would
         * stay in flight and fire at the comm's next quiet period. */
        int expects = coll || nsc_op_expects_kernel_ch(
                                  1, d->p2p.count, d->p2p.peer,
                                  atomic_load_explicit(&c->rank, memory_order_relaxed));
        int chk = atomic_load_explicit(&channels_known, memory_order_relaxed);
        unsigned nch = !(chk && expects) ? 0 : coll ? d->coll.nChannels : d->p2p.nChannels;
        int kt = nsc_op_kernel_channels((h & NSC_HANDLE_SAMPLED) != 0, chk,
                                        expects, nch) >= 0;
        uint16_t fid = func ? nsc_intern(&nsc_thread_get()->strings, func) : 0;
        uint64_t seq = coll ? d->coll.seqNumber : 0;
        ST(s, 1, ticks);
        ST(s, 2, (uint64_t)(uint32_t)(coll ? -1 : d->p2p.peer) | (uint64_t)(nch & 0xff) << 32 |
                     (uint64_t)kt << 40 | (uint64_t)et << 48);
        ST(s, 3, (seq & ((UINT64_C(1) << OP_SEQ_BITS) - 1)) << 16 | fid);
        ST(s, 4, 0); /* ProxyOps started and done; channels done */
        ST(s, 5, 0);
        /* not w7, w11: the second line (the table at the top) */
        struct watch *wa = &watch[ci];
        atomic_store_explicit(&wa->enq_seq, seq, RLX);
        atomic_store_explicit(&wa->enq_meta, (uint32_t)fid << 8 | et, RLX);
        /* after the fields (the slot's: `life` below). A comm's operations
         * come from one thread at a time, so a load and a store count
         * exactly without a locked add (which waits for the stores above). */
        atomic_store_explicit(&wa->started, atomic_load_explicit(&wa->started, RLX) + 1,
                              memory_order_release);
        break;
    }
    case NSC_OPST_PROXY:
        ST(s, 3, (uint64_t)(uint32_t)d->proxyOp.peer | (uint64_t)(d->proxyOp.channelId & 0xff) << 32 |
                     (uint64_t)(d->proxyOp.isSend != 0) << 40);
        ST(s, 4, (uint64_t)(uint32_t)d->proxyOp.nSteps);
        ST(s, 5, 0); /* no state yet */
        atomic_fetch_add_explicit(&ps->w[4], UINT64_C(1) << 32, RLX); /* one more started */
        break;
    case NSC_OPST_STEP:
        ST(s, 3, (uint64_t)(uint32_t)d->proxyStep.step);
        ST(s, 4, 0); /* no state yet */
        break;
    default: /* KCH: its channel counts as started through its slot (the scan) */
        ST(s, 3, d->kernelCh.channelId & 63);
        break;
    }
    if (kind != NSC_OPST_OP) {
        ST(s, W_PSLOT, pslot);
        ST(s, W_PID, pid);
    }
    /* RELEASE: the payload before the occupant's id; pairs with attach's
     * and the watchdog's ACQUIRE. */
    atomic_store_explicit(&s->life, NSC_LIFE(id), memory_order_release);
    return nsc_handle_make_slab(h, (uint32_t)i);
}

void nsc_opst_stop(uint64_t h, uint64_t ticks) {
    if (!nsc_handle_is_slab(h) || !nsc_slab_on())
        return;
    uint32_t i = nsc_handle_slot(h);
    uint64_t id = h & NSC_SLAB_ID_MASK;
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    uint64_t l = atomic_load_explicit(&s->life, memory_order_acquire);
    if ((l >> NSC_LIFE_ID_SHIFT) != id)
        return; /* reclaimed with its finalized comm, or a second stop */
    int op = atomic_load_explicit(&s->kind, RLX) == NSC_OPST_OP;
    if (op) {
        /* DONE and a reference in one CAS (SEQ_CST: the other half of
         * kch_done's Dekker pair), so the stop time is written into a slot
         * that is still this operation's (the watchdog may retire an
         * operation before its own stop); with KernelCh recorded, the
         * release finishes it if it is the last (without, the watchdog
         * does, below). */
        for (;;) {
            if ((l >> NSC_LIFE_ID_SHIFT) != id || (l & NSC_LIFE_DONE))
                return;
            int ref = (l & NSC_LIFE_REFS) != NSC_LIFE_REFS; /* saturated: no stop time */
            if (atomic_compare_exchange_weak_explicit(&s->life, &l, (l | NSC_LIFE_DONE) + ref,
                                                      memory_order_seq_cst,
                                                      memory_order_acquire)) {
                if (!ref)
                    return;
                ST(s, 7, ticks = now_or(ticks));
                if (kernel_channels(s) < 0) {
                    /* Without KernelCh only the watchdog completes it
                     * (after its grace): no try_finish, whose reference
                     * taken and dropped would be two more locked
                     * instructions on the issuing thread for nothing.
                     * RELEASE: the stop time before the reference goes;
                     * pairs with the scan's ACQUIRE load of `life`, after
                     * which it reads w7 and decides. */
                    atomic_fetch_sub_explicit(&s->life, 1, memory_order_release);
                    return;
                }
                detach(i, id, ticks, 0);
                return;
            }
        }
    }
    /* A child nobody references is finished by this one CAS (the common
     * case: ProxySteps, KernelCh), without passing through DONE; one the
     * scan holds gets DONE, and the scan's release finishes it. */
    for (;;) {
        if ((l >> NSC_LIFE_ID_SHIFT) != id || (l & NSC_LIFE_DONE))
            return;
        int alone = (l & NSC_LIFE_REFS) == 0;
        if (atomic_compare_exchange_weak_explicit(&s->life, &l, alone ? 0 : l | NSC_LIFE_DONE,
                                                  memory_order_seq_cst, memory_order_acquire)) {
            if (alone)
                finish(i, ticks, FIN_COMPLETED);
            return;
        }
    }
}

void nsc_opst_state(uint64_t h, int state, uint64_t arg, uint64_t ticks) {
    (void)arg;
    (void)ticks;
    if (!nsc_handle_is_slab(h) || !nsc_slab_on())
        return;
    uint32_t i = nsc_handle_slot(h);
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    /* NCCL serialises an event's states with its stop, and the watchdog
     * reclaims a slot only a second after its comm was finalized, so a slot
     * that is ours at this load stays ours for the store below. */
    if ((atomic_load_explicit(&s->life, memory_order_acquire) >> NSC_LIFE_ID_SHIFT) !=
        (h & NSC_SLAB_ID_MASK))
        return;
    uint32_t kind = atomic_load_explicit(&s->kind, RLX);
    if (kind == NSC_OPST_STEP)
        ST(s, 4, (uint64_t)state + 1);
    else if (kind == NSC_OPST_PROXY)
        ST(s, 5, (uint64_t)state + 1);
}

/* ---- the watchdog's scan ---- */

/* The scan holds a reference on slot i: when it is the only one (no child
 * holds the slot), the occupant goes for good (`how`: reclaimed with its
 * finalized comm, or overtaken); otherwise the reference is dropped and a
 * later scan looks again. */
static int reclaim_alone(uint32_t i, uint64_t id, uint64_t now, enum fin how) {
    struct nsc_slab_slot *s = &nsc_slab_slots[i];
    uint64_t cur = atomic_load_explicit(&s->life, memory_order_acquire);
    if ((cur & ~NSC_LIFE_DONE) == (NSC_LIFE(id) | 1) &&
        atomic_compare_exchange_strong_explicit(&s->life, &cur, 0, memory_order_acq_rel, RLX)) {
        finish(i, now, how);
        return 1;
    }
    detach(i, id, now, 0);
    return 0;
}

/* An operation overtaken by its comm. A collective: NCCL runs a comm's
 * collectives in order on one stream and numbers them per function, so one
 * older than the comm's last completed one of its function completed too,
 * whatever child stop we missed (NCCL 2.28.9 delivers about one KernelCh
 * stop in 10,000 twice; one missing kept an operation "in flight" for ever:
 * on 2 x H200, a watchdog fired on a rank whose operation 370 of 999 had 21
 * of 22 channels done). A Send or Recv: once an operation of a later launch
 * finished on the GPU (op_rules.h, nsc_op_p2p_overtaken). `l`: its life as
 * the scan read it. Hints read without the comm's seqlock: a stale read
 * only delays the verdict to the next scan. */
static int overtaken(const struct nsc_slab_slot *s, uint64_t l) {
    uint64_t c = LD(s, W_COMM), w2 = LD(s, 2);
    uint32_t ci = (uint32_t)c & 0xffff, serial = (uint32_t)(c >> 32);
    unsigned et = (unsigned)(w2 >> 48 & 0xff);
    if ((et != NSC_ET_COLL && et != NSC_ET_P2P) || ci >= NSC_MAX_COMMS)
        return 0;
    const struct watch *w = &watch[ci];
    if (et == NSC_ET_P2P) /* w7 follows DONE: one before the start is a former occupant's */
        return (l & NSC_LIFE_DONE) && LD(s, 7) >= LD(s, 1) &&
               atomic_load_explicit(&w->serial, memory_order_acquire) == serial &&
               nsc_op_p2p_overtaken(LD(s, 7), atomic_load_explicit(&w->done_launch, RLX));
    uint64_t k = atomic_load_explicit(&w->done_key, RLX); /* one completion's */
    return atomic_load_explicit(&w->serial, memory_order_acquire) == serial &&
           (k & 0xffffff) == (done_key(0, NSC_ET_COLL, OP_FUNC(s)) & 0xffffff) &&
           (k >> 24) > (OP_SEQ(s) & KEY_SEQ_MASK);
}

/* The watchdog's scratch (one scan at a time, op_state.h). */
static uint32_t proxy_at[NSC_SLAB_SLOTS]; /* slot -> index in proxies + 1 */
static uint32_t op_at[NSC_SLAB_SLOTS];    /* slot -> index in ops + 1 */
static uint64_t scan_no;
/* Per slot, the occupant a sweep found with its comm closed and that sweep's
 * number (reclaimed ten scans later); here, so no start has to reset it. */
static struct { uint64_t id, scan; } closed[NSC_SLAB_SLOTS];

/* light: nothing collected, only operations without KernelCh completed
 * (the watchdog's pressed pace between its full scans): no sweep, no
 * reclaiming, and the scan count, which times those, stays. */
static uint32_t scan(uint64_t now, uint64_t grace, struct nsc_opst_op *ops, uint32_t *nops,
                 uint32_t ops_cap, struct nsc_opst_proxy *proxies, uint32_t *nproxies,
                 uint32_t proxies_cap, uint32_t *left_out, int light) {
    uint32_t no = 0, np = 0, lo = 0, retired = 0;
    if (!nsc_slab_on())
        goto out;
    in_scan = 1; /* one scan at a time (op_state.h): scan_cache is ours */
    if (!light)
        scan_no++;
    if (proxies)
        memset(proxy_at, 0, sizeof(proxy_at));
    if (ops)
        memset(op_at, 0, sizeof(op_at));
    uint32_t high = atomic_load_explicit(&nsc_slab_high, RLX);
    /* Two passes: operations and ProxyOps first, then the steps tallied
     * into their ProxyOp and the open KernelCh into their operation's
     * channels started (a KernelCh's start touches only its own slot). */
    /* Pass 0 visits ProxyOps when they are collected and every child only
     * every tenth scan (to reclaim finalized comms' slots); pass 1 visits
     * ProxySteps and KernelCh whenever operations or ProxyOps are collected,
     * which the watchdog asks for at every scan (watchdog.c): one reference
     * taken and dropped per open child every 100 ms. */
    int sweep = !light && scan_no % 10 == 0;
    for (int pass = 0; pass < (proxies || ops ? 2 : 1); pass++)
        for (uint32_t i = 0; i < high; i++) {
            struct nsc_slab_slot *s = &nsc_slab_slots[i];
            /* Relaxed: a hint (attach below checks the occupant). */
            uint32_t k0 = atomic_load_explicit(&s->kind, RLX);
            if (pass == 0 ? k0 != NSC_OPST_OP && !sweep && !(proxies && k0 == NSC_OPST_PROXY)
                          : k0 != NSC_OPST_STEP && k0 != NSC_OPST_KCH)
                continue;
            uint64_t l = atomic_load_explicit(&s->life, memory_order_acquire);
            if (!l)
                continue;
            uint64_t id = l >> NSC_LIFE_ID_SHIFT;
            if (attach(i, id) != 0) /* a reference: the slot stays this event's while we read */
                continue;
            uint32_t kind = atomic_load_explicit(&s->kind, RLX);
            uint64_t c = LD(s, W_COMM);
            if (pass == 0 && !comm_open((uint32_t)c & 0xffff, (uint32_t)(c >> 32))) {
                /* Finalized comm: its events will never finish. Reclaim
                 * ten full scans (a second) after a sweep first saw it
                 * closed, once no child holds it; a light scan leaves it. */
                if (!light && closed[i].id != id) {
                    closed[i].id = id;
                    closed[i].scan = scan_no;
                }
                if (!light && closed[i].id == id && scan_no - closed[i].scan >= 10)
                    reclaim_alone(i, id, now, FIN_RECLAIMED);
                else
                    detach(i, id, now, 0);
                continue;
            }
            if (pass == 0 && kind == NSC_OPST_OP && overtaken(s, l)) { /* l: DONE stays */
                /* Not in flight: it completed (counted as such; the comm's
                 * last completed stays the later one), retired when only
                 * we hold it (a child that never stopped keeps it,
                 * unreported, until its comm is finalized). Also what a
                 * completion looks like when our reference delayed it: its
                 * last child's stop left the finishing to our detach, and
                 * a later operation completed meanwhile. */
                retired += (uint32_t)reclaim_alone(i, id, now, FIN_OVERTAKEN);
                continue;
            }
            if (pass == 0 && kind == NSC_OPST_OP) {
                uint64_t w2 = LD(s, 2);
                uint64_t cur = atomic_load_explicit(&s->life, memory_order_acquire);
                uint64_t last = LD(s, 11) > LD(s, 7) ? LD(s, 11) : LD(s, 7);
                /* `last < now`: a stop (or a child's) that came during
                 * this scan, after `now` was read, is not a long-ago one */
                int quiet = last < now && now - last > grace;
                /* cur: stopped (DONE) and no child open (our reference only) */
                if (!((w2 >> 40) & 1) && cur == (NSC_LIFE(id) | NSC_LIFE_DONE | 1) &&
                    nsc_op_complete(1, 0, -1, 0, quiet) &&
                    atomic_compare_exchange_strong_explicit(&s->life, &cur, 0,
                                                            memory_order_acq_rel, RLX)) {
                    finish(i, now, FIN_COMPLETED); /* no KernelCh: quiet after its stop */
                    retired++; /* as an overtaken one above */
                    continue;
                }
                if (ops) {
                    if (no < ops_cap) {
                        struct nsc_opst_op *o = &ops[no++];
                        memset(o, 0, sizeof(*o));
                        o->id = id;
                        o->serial = (uint32_t)(c >> 32);
                        o->comm_index = (uint32_t)c & 0xffff;
                        o->seq = OP_SEQ(s);
                        o->peer = (int32_t)(uint32_t)w2;
                        o->nch = (uint8_t)(w2 >> 32);
                        o->kernel_tracked = (uint8_t)(w2 >> 40 & 1);
                        o->etype = (uint8_t)(w2 >> 48);
                        o->func = (uint16_t)OP_FUNC(s);
                        o->ch_done = LD(s, 5);
                        o->ch_started = o->ch_done; /* and the open ones: pass 1 */
                        o->start_ticks = LD(s, 1);
                        /* a stop time before the start is a former occupant's */
                        o->stop_ticks = LD(s, 7) >= o->start_ticks ? LD(s, 7) : 0;
                        o->stopped = (cur & NSC_LIFE_DONE) != 0;
                        uint64_t w4 = LD(s, 4);
                        o->proxies = (uint32_t)(w4 >> 32);
                        o->proxies_done = (uint32_t)w4;
                        op_at[i] = no;
                    } else
                        lo++;
                }
            } else if (pass == 0 && kind == NSC_OPST_PROXY) {
                if (proxies) {
                    if (np < proxies_cap) {
                        struct nsc_opst_proxy *p = &proxies[np++];
                        memset(p, 0, sizeof(*p));
                        uint64_t w3 = LD(s, 3);
                        p->op_id = LD(s, W_PID);
                        p->peer = (int32_t)(uint32_t)w3;
                        p->ch = (uint8_t)(w3 >> 32);
                        p->is_send = (uint8_t)(w3 >> 40 & 1);
                        p->nsteps = (int32_t)(uint32_t)LD(s, 4);
                        p->self_id = id;
                        p->lowest_open = -1;
                        p->done = (atomic_load_explicit(&s->life, RLX) & NSC_LIFE_DONE) != 0;
                        proxy_at[i] = np;
                    } else
                        lo++;
                }
            } else if (pass == 1 && kind == NSC_OPST_KCH && ops) {
                uint32_t p = (uint32_t)LD(s, W_PSLOT);
                if (p < NSC_SLAB_SLOTS && op_at[p] && ops[op_at[p] - 1].id == LD(s, W_PID))
                    ops[op_at[p] - 1].ch_started |= UINT64_C(1) << (LD(s, 3) & 63);
            } else if (pass == 1 && kind == NSC_OPST_STEP && proxies) {
                uint32_t p = (uint32_t)LD(s, W_PSLOT);
                /* its ProxyOp, if that is still the occupant the step names */
                if (p < NSC_SLAB_SLOTS && proxy_at[p] &&
                    proxies[proxy_at[p] - 1].self_id == LD(s, W_PID)) {
                    struct nsc_opst_proxy *px = &proxies[proxy_at[p] - 1];
                    int32_t step = (int32_t)(uint32_t)LD(s, 3);
                    px->waiting[nsc_step_wait_of(LD(s, 4))]++;
                    px->steps_open++;
                    if (px->lowest_open < 0 || step < px->lowest_open)
                        px->lowest_open = step;
                }
            }
            detach(i, id, now, 0);
        }
    nsc_slab_cache_flush(&scan_cache);
    in_scan = 0;
out:
    if (nops)
        *nops = no;
    if (nproxies)
        *nproxies = np;
    if (left_out)
        *left_out = lo;
    return retired;
}

uint32_t nsc_opst_scan(uint64_t now, uint64_t grace, struct nsc_opst_op *ops, uint32_t *nops,
                   uint32_t ops_cap, struct nsc_opst_proxy *proxies, uint32_t *nproxies,
                   uint32_t proxies_cap, uint32_t *left_out) {
    return scan(now, grace, ops, nops, ops_cap, proxies, nproxies, proxies_cap, left_out, 0);
}

uint32_t nsc_opst_scan_light(uint64_t now, uint64_t grace) {
    return scan(now, grace, NULL, NULL, 0, NULL, NULL, 0, NULL, 1);
}
