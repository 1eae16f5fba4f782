// SPDX-License-Identifier: Apache-2.0
/* crash_dump.c - flight mode's dump from a fatal signal's handler: the
 * async-signal-safe code alone (what it may call is listed below). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "block_payload.h"
#include "clock.h"
#include "engine_int.h"
#include "intern.h"
#include "io_loops.h"
#include "signal_stack.h"
#include "thread_state.h"

_Atomic int eng_crash_dumping; /* a fatal signal's handler is dumping (flight mode) */


/* On SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT, flight mode writes the
 * window to <dir>/<host>-<pid>-crash-<random>.nsc from the signal handler
 * (into the writer process's crash area, which the writer writes to that
 * file: the handler makes no file-system call, so a stalled directory
 * cannot hold the process in it; writer_proto.h. Without a writer, to the
 * file itself),
 * then hands the signal to the handler that was there before (or the
 * default action). SIGTERM writes <host>-<pid>-term-<random>.nsc the same
 * way, then does what it would have done without us (the previous handler,
 * or the default action: the process ends). The random part is read at
 * session start (no random source in a handler): another user cannot plant
 * a link at a name they cannot predict, and two processes with the same
 * host and pid (containers) do not share one; the file is created with
 * O_EXCL|O_NOFOLLOW all the same. Only async-signal-safe calls: poll and
 * send (the writer's doorbell), mkdir, open, write, close (no writer), sigaction,
 * raise, getpid, gettid, nanosleep,
 * clock_gettime (the anchor), lock-free atomics, and memcpy/strlen, which
 * POSIX.1-2017 lists as safe; no malloc, no lock, no stdio. Blocks go out
 * uncompressed, each with its payload's checksum (the chunks stay the zstd
 * frames they are): STRINGS, COMMS
 * (the recent descriptions), the kept chunks with their anchors, the chunk
 * jobs not kept yet (their packed bytes), the records still in the rings
 * (packed by the handler: nsc_pack_record is a pure function), STATS
 * (the counters as they stand: atomics), END.
 * One dump per process: a second thread that faults while the first dumps
 * waits for it (at most CRASH_WAIT_MS) and then meets its previous
 * handler, so the process does not end with the dump cut mid-block; a
 * fault inside the dump itself goes straight to the previous handler. A
 * forked child (its pid is not the session's) writes nothing: the window
 * is its parent's. Checked by reading every function the handler reaches
 * (crash_*, nsc_strings_encode, nsc_intern_text, nsc_flight_each/freeze,
 * nsc_header_check, nsc_payload_check, nsc_clock_anchor, nsc_thread_count/at,
 * ring_readable/slot, nsc_pack_reset/record, eng_stats_header,
 * eng_thread_stats, nsc_intern_overflows, nsc_comm_overflows,
 * page_pool_peak, nsc_thread_sentinel) and by tests/cli/test_flight.py
 * and test_crash_dump.py. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
#define CRASH_WAIT_MS 30000
static struct sigaction old_fatal[NFATAL];
static int fatal_installed, term_installed;
static int crash_pid;
static char crash_dir[1024], crash_path[1280], term_path[1280];
static size_t term_stem_len; /* term_path up to its suffix: later dumps add -N */
static unsigned term_dumps;
static _Alignas(8) unsigned char crash_buf[65536]; /* aligned: STATS entries are filled in place */
static struct nsc_pack_state crash_pack;
static _Atomic int crash_done;    /* the dump in progress is finished */
static _Atomic long crash_tid;    /* the thread writing it */


/* Where the dump goes: the writer's crash area (memcpy, no file system),
 * or, without a writer, a file this handler writes itself. */
struct crash_out {
    int fd;
    struct nsc_crash_area *a;
    uint64_t pos;
};

static int out_bytes(struct crash_out *o, const void *p, size_t n) {
    if (!o->a)
        return nsc_io_write_all(o->fd, p, n);
    if (n > o->a->cap - o->pos)
        return -1; /* the area is full: the dump ends with the last whole block */
    memcpy(o->a->data + o->pos, p, n);
    o->pos += n;
    return 0;
}

/* One block, its payload in pieces. A payload stored raw (every one but
 * the kept chunks, whose zstd frames carry their own checksum) ends with
 * its FNV-1a (NSC_BLK_F_SUM): a flipped bit in a dump's records is damage
 * the reader reports, not an event that changed. */
struct crash_blk {
    struct crash_out *o;
    int sum;
    uint32_t check;
};

static int blk_begin(struct crash_blk *b, struct crash_out *o, uint32_t *seq, uint16_t type,
                     uint16_t flags, size_t stored, size_t raw_len) {
    b->o = o;
    b->sum = !(flags & NSC_BLK_F_ZSTD);
    b->check = NSC_PAYLOAD_CHECK_SEED;
    struct nsc_block_header h;
    h.magic = NSC_BLOCK_MAGIC;
    h.type = type;
    h.flags = (uint16_t)(flags | (b->sum ? NSC_BLK_F_SUM : 0));
    h.stored_len = (uint32_t)(stored + (b->sum ? NSC_BLK_SUM_BYTES : 0));
    h.raw_len = (uint32_t)raw_len;
    h.seq = (*seq)++;
    h.check = nsc_header_check(&h);
    return out_bytes(o, &h, sizeof(h));
}

static int blk_piece(struct crash_blk *b, const void *p, size_t n) {
    if (!n)
        return 0;
    if (b->sum)
        b->check = nsc_payload_check(b->check, p, n);
    return out_bytes(b->o, p, n);
}

static int blk_end(struct crash_blk *b) {
    if (b->sum && out_bytes(b->o, &b->check, sizeof(b->check)))
        return -1;
    /* RELEASE: the block's bytes before the length that lets the writer
     * take them (it writes whole blocks only, should we never finish) */
    if (b->o->a)
        atomic_store_explicit(&b->o->a->len, b->o->pos, memory_order_release);
    return 0;
}

static int crash_block(struct crash_out *o, uint32_t *seq, uint16_t type, uint16_t flags,
                       const void *payload, size_t stored, size_t raw_len) {
    struct crash_blk b;
    if (blk_begin(&b, o, seq, type, flags, stored, raw_len) || blk_piece(&b, payload, stored))
        return -1;
    return blk_end(&b);
}

/* STATS as the counters stand, written in pieces through crash_buf (no
 * allocation: eng_stats_header and eng_thread_stats read atomics only).
 * segment 0: a dump is a file of its own; writer_fallback as in the
 * session's files (the writer could not be started). */
static int crash_stats(struct engine *f, struct crash_out *o, uint32_t *seq) {
    uint32_t nt = nsc_thread_count();
    struct nsc_stats_header sh;
    eng_stats_header(f, &sh, nt);
    sh.segment = 0;
    sh.segments_deleted = 0;
    sh.bytes_deleted = sh.records_deleted = 0;
    struct crash_blk b;
    if (blk_begin(&b, o, seq, NSC_BLK_STATS, 0, nsc_stats_size(nt), nsc_stats_size(nt)) ||
        blk_piece(&b, &sh, sizeof(sh)))
        return -1;
    struct nsc_thread_stats *ts = (struct nsc_thread_stats *)(void *)crash_buf;
    const uint32_t per = sizeof(crash_buf) / sizeof(*ts);
    for (uint32_t i = 0; i < nt; i += per) {
        uint32_t k = nt - i < per ? nt - i : per;
        for (uint32_t j = 0; j < k; j++)
            eng_thread_stats(i + j, &ts[j]);
        if (blk_piece(&b, ts, k * sizeof(*ts)))
            return -1;
    }
    return blk_end(&b);
}

struct crash_ctx {
    struct crash_out *o;
    uint32_t seq;
};

static int crash_chunk(void *ud, const struct nsc_anchor *a, unsigned char *block, uint16_t flags,
                       size_t stored, size_t raw_len) {
    struct crash_ctx *c = ud;
    /* the chunk's own header room is left alone: a dump by a compressor may
     * be using it */
    if (crash_block(c->o, &c->seq, NSC_BLK_ANCHOR, 0, a, sizeof(*a), sizeof(*a)) != 0)
        return -1;
    return crash_block(c->o, &c->seq, NSC_BLK_PACKED, flags, block + sizeof(struct nsc_block_header),
                       stored, raw_len);
}

/* Takes the crash area for a dump to path: free at once after a fatal
 * signal; after a SIGTERM dump the process survived, the writer may still
 * be writing the previous one (waited for up to NCCLSCOPE_EXIT_WAIT_MS). */
static int area_take(struct nsc_crash_area *a, const char *path, unsigned wait_ms) {
    for (unsigned waited = 0;
         atomic_load_explicit(&a->state, memory_order_acquire) != NSC_CRASH_IDLE; waited++) {
        if (waited >= wait_ms)
            return -1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    size_t n = strlen(crash_dir);
    memcpy(a->dir, crash_dir, n + 1);
    n = strlen(path);
    memcpy(a->path, path, n < sizeof(a->path) ? n + 1 : sizeof(a->path));
    a->path[sizeof(a->path) - 1] = '\0';
    a->mode = 0640;
    atomic_store_explicit(&a->len, 0, memory_order_relaxed);
    atomic_store_explicit(&a->state, NSC_CRASH_FILLING, memory_order_release);
    return 0;
}

/* The writer still there to take the dump: its end of the doorbell is
 * open (poll is async-signal-safe). A writer that died leaves the handler
 * to write the file itself, as without one. */
static int writer_alive(const struct engine *f) {
    if (!f->wp.area || f->wp.wake_sock < 0)
        return 0;
    struct pollfd pf = {.fd = f->wp.wake_sock, .events = POLLOUT};
    return poll(&pf, 1, 0) == 1 && !(pf.revents & (POLLHUP | POLLERR | POLLNVAL));
}

static void crash_dump(struct engine *f, const char *path) {
    nsc_flight_freeze(f->flight);
    /* A drainer moving a segment finishes it first (at most 100 ms: the
     * faulting thread may be a drainer itself), so every record is in a job
     * or still in its ring when the two are read below. */
    for (int waited = 0; waited < 100; waited++) {
        int busy = 0;
        for (unsigned i = 0; i < f->ndrainers; i++)
            busy |= atomic_load(&f->drainers[i].in_segment);
        if (!busy)
            break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    struct crash_out o = {.fd = -1, .a = writer_alive(f) ? f->wp.area : NULL};
    if (o.a) {
        if (area_take(o.a, path, f->cfg.exit_wait_ms) != 0)
            return;
    } else {
        mkdir(crash_dir, 0750);
        /* a new file, never one that is there (a planted link, an earlier dump) */
        o.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
        if (o.fd < 0)
            return;
    }
    struct nsc_file_header fh;
    memcpy(fh.magic, NSC_FILE_MAGIC, 8);
    fh.format_version = NSC_FORMAT_VERSION;
    fh.header_size = sizeof(fh);
    struct crash_ctx c = {.o = &o, .seq = 0};
    struct nsc_session ses; /* with NCCL's API version once known (atomics only) */
    eng_session_now(f, &ses);
    if (out_bytes(&o, &fh, sizeof(fh)) != 0)
        goto out;
    if (o.a) /* the file header is whole too */
        atomic_store_explicit(&o.a->len, o.pos, memory_order_release);
    if (crash_block(&o, &c.seq, NSC_BLK_SESSION, 0, &ses, sizeof(ses), sizeof(ses)) != 0)
        goto out;
    uint32_t n = nsc_intern_count(), id = 1;
    while (id < n) {
        uint32_t before = id;
        size_t len = nsc_strings_encode(crash_buf, sizeof(crash_buf), &id, n, nsc_intern_text);
        if (id == before || crash_block(&o, &c.seq, NSC_BLK_STRINGS, 0, crash_buf, len, len) != 0)
            break;
    }
    unsigned nr = f->nrecent < RECENT_COMMS ? f->nrecent : RECENT_COMMS;
    for (unsigned i = 0; i < nr; i++) { /* one block per description: no buffer to fill */
        const struct nsc_comm_info *ci = &f->recent[(f->nrecent - nr + i) % RECENT_COMMS];
        crash_block(&o, &c.seq, NSC_BLK_COMMS, 0, ci, sizeof(*ci), sizeof(*ci));
    }
    nsc_flight_each(f->flight, crash_chunk, &c);
    /* Then the chunk jobs not in the window yet (sealed, being compressed or
     * still filling: their packed bytes up to raw_len, which a drainer moves
     * only after a whole segment), each drainer's in its order, stored raw. */
    struct job *order[64];
    unsigned nord = 0;
    for (unsigned i = 0; i < f->njobs && nord < 64; i++) {
        struct job *j = &f->jobs[i];
        if (j->state != J_FREE && !atomic_load_explicit(&j->kept, memory_order_acquire) && j->raw_len)
            order[nord++] = j;
    }
    for (unsigned i = 1; i < nord; i++) /* by (drainer, its job number): insertion sort */
        for (unsigned k = i; k > 0 && (order[k - 1]->drainer > order[k]->drainer ||
                                       (order[k - 1]->drainer == order[k]->drainer &&
                                        order[k - 1]->dseq > order[k]->dseq)); k--) {
            struct job *t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (unsigned i = 0; i < nord; i++)
        if (crash_block(&o, &c.seq, NSC_BLK_PACKED, 0, order[i]->raw, order[i]->raw_len,
                        order[i]->raw_len) != 0)
            goto out;
    /* The newest records, still in the rings: packed here, stored raw. The
     * drainers stop taking records once crash_dumping is set; one caught
     * mid-segment may still consume a few, which then are missing. */
    struct nsc_anchor a;
    nsc_clock_anchor(&a);
    crash_block(&o, &c.seq, NSC_BLK_ANCHOR, 0, &a, sizeof(a), sizeof(a));
    uint32_t nt = nsc_thread_count();
    for (uint32_t i = 0; i < nt; i++) {
        struct nsc_thread *t = nsc_thread_at(i);
        uint64_t pos, left = ring_readable(&t->ring, &pos);
        while (left) {
            uint64_t take = left < SEG_RECORDS ? left : SEG_RECORDS;
            const size_t room = sizeof(crash_buf) - sizeof(struct nsc_packed_segment);
            if (take * NSC_PACK_MAX > room)
                take = room / NSC_PACK_MAX;
            unsigned char *p = crash_buf + sizeof(struct nsc_packed_segment);
            struct nsc_pack_state *ps = &crash_pack;
            nsc_pack_reset(ps);
            for (uint64_t k = 0; k < take; k++)
                p = nsc_pack_record(ps, ring_slot(&t->ring, pos + k), p);
            struct nsc_packed_segment seg = {.thread = i, .nrecords = (uint32_t)take,
                                             .nbytes = (uint32_t)(p - crash_buf - sizeof(seg))};
            memcpy(crash_buf, &seg, sizeof(seg));
            size_t len = (size_t)(p - crash_buf);
            if (crash_block(&o, &c.seq, NSC_BLK_PACKED, 0, crash_buf, len, len) != 0)
                goto out;
            pos += take;
            left -= take;
        }
    }
    /* the counters, after the records they count */
    if (crash_stats(f, &o, &c.seq) != 0)
        goto out;
    crash_block(&o, &c.seq, NSC_BLK_END, 0, "", 0, 0);
out:
    if (!o.a) {
        close(o.fd);
        return;
    }
    /* RELEASE: every block before the writer takes the dump */
    atomic_store_explicit(&o.a->state, NSC_CRASH_READY, memory_order_release);
    /* The doorbell (send is async-signal-safe; non-blocking, and no SIGPIPE
     * should the writer be gone), then the writer's answer: the area free
     * again means the file is written. A stalled directory costs at most
     * NCCLSCOPE_EXIT_WAIT_MS here; the writer writes the dump when it can. */
    int rang = send(f->wp.wake_sock, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 || errno == EAGAIN;
    for (unsigned waited = 0; rang && waited < f->cfg.exit_wait_ms &&
                              atomic_load_explicit(&o.a->state, memory_order_acquire) != NSC_CRASH_IDLE;
         waited++) {
        if (waited % 10 == 9 && !writer_alive(f))
            rang = 0;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!rang && atomic_load_explicit(&o.a->state, memory_order_acquire) == NSC_CRASH_READY) {
        /* the writer died meanwhile: the dump from the area, here (a file it
         * had begun is left as it is: O_EXCL) */
        mkdir(crash_dir, 0750);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
        if (fd >= 0) {
            nsc_io_write_all(fd, o.a->data, o.pos);
            close(fd);
        }
        atomic_store_explicit(&o.a->state, NSC_CRASH_IDLE, memory_order_release);
    }
}

/* "-N" before the suffix of term_path, for the Nth SIGTERM dump of a
 * process whose own handler let it live on (no snprintf in a handler). */
static void term_name(unsigned n) {
    size_t at = term_stem_len;
    if (n) {
        char digits[12];
        int k = 0;
        while (n && k < 11) {
            digits[k++] = (char)('0' + n % 10);
            n /= 10;
        }
        term_path[at++] = '-';
        while (k)
            term_path[at++] = digits[--k];
    }
    memcpy(term_path + at, NSC_FILE_SUFFIX, sizeof(NSC_FILE_SUFFIX));
}

/* The dump, once per process (resume: the process lives on after it, so
 * recording resumes and a later signal dumps again). */
static void dump_once(int sig, int resume) {
    struct engine *f = eng_running;
    if (!f || !f->flight || getpid() != crash_pid) /* a forked child: not its window */
        return;
    long me = (long)syscall(SYS_gettid);
    int expect = 0;
    if (atomic_compare_exchange_strong_explicit(&eng_crash_dumping, &expect, 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
        atomic_store_explicit(&crash_tid, me, memory_order_relaxed);
        if (sig == SIGTERM) {
            term_name(term_dumps++);
            crash_dump(f, term_path);
        } else
            crash_dump(f, crash_path);
        if (resume) {
            nsc_flight_thaw(f->flight);
            atomic_store_explicit(&eng_crash_dumping, 0, memory_order_release);
        } else
            atomic_store_explicit(&crash_done, 1, memory_order_release);
        return;
    }
    if (atomic_load_explicit(&crash_tid, memory_order_relaxed) == me)
        return; /* a fault inside our own dump */
    /* Another thread is writing the dump: let it finish before this signal
     * ends the process. */
    for (int waited = 0; waited < CRASH_WAIT_MS &&
                         !atomic_load_explicit(&crash_done, memory_order_acquire); waited++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

static size_t slot_of(int sig) {
    for (size_t i = 0; i < NFATAL; i++)
        if (fatal_signals[i] == sig)
            return i;
    return 0;
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    int saved_errno = errno;
    struct sigaction *old = &old_fatal[slot_of(sig)];
    int app_handler = old->sa_handler != SIG_IGN && old->sa_handler != SIG_DFL;
    dump_once(sig, sig == SIGTERM && app_handler);
    if (sig == SIGTERM) {
        /* SIGTERM: what it would have done. The application's handler runs
         * and the process may live on: recording resumes and a later
         * SIGTERM dumps again. */
        if (old->sa_handler == SIG_IGN) {
        } else if (old->sa_handler == SIG_DFL) {
            sigaction(sig, old, NULL);
            raise(sig); /* blocked here: delivered when we return */
        } else {
            if (old->sa_flags & SA_SIGINFO)
                old->sa_sigaction(sig, si, uc);
            else
                old->sa_handler(sig);
        }
        errno = saved_errno;
        return;
    }
    /* The handler that was there before takes it from here: a fault
     * re-executes and meets it; a sent signal (abort, kill) is raised again
     * once we return. */
    sigaction(sig, old, NULL);
    if (si->si_code <= 0)
        raise(sig);
    errno = saved_errno;
}

static void random_tag(char *out, size_t n) {
    unsigned char r[8];
    if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        /* no entropy yet (early boot): still unlike any other process's */
        uint64_t x = nsc_clock_monotonic_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&r;
        memcpy(r, &x, sizeof(r));
    }
    for (size_t i = 0; i < sizeof(r) && 2 * i + 2 < n; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
}

void eng_fatal_install(const struct engine *f, const char *host, int pid) {
    if (fatal_installed)
        return;
    char tag[17] = "";
    random_tag(tag, sizeof(tag));
    crash_pid = pid;
    snprintf(crash_dir, sizeof(crash_dir), "%s", f->cfg.dir);
    snprintf(crash_path, sizeof(crash_path), "%s/%s-%d-crash-%s%s", f->cfg.dir, host, pid, tag,
             NSC_FILE_SUFFIX);
    int n = snprintf(term_path, sizeof(term_path) - 16, "%s/%s-%d-term-%s", f->cfg.dir, host, pid, tag);
    term_stem_len = n > 0 && (size_t)n < sizeof(term_path) - 16 ? (size_t)n : 0;
    term_dumps = 0;
    atomic_store(&crash_done, 0);
    atomic_store(&crash_tid, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    /* SIGTERM unless it is the dump signal (then it asks for a dump and the
     * process goes on) */
    term_installed = f->cfg.dump_signal != SIGTERM && term_stem_len;
    for (size_t i = 0; i < NFATAL; i++)
        if (fatal_signals[i] != SIGTERM || term_installed)
            sigaction(fatal_signals[i], &sa, &old_fatal[i]);
    fatal_installed = 1;
    nsc_sigstack_want(1); /* threads that call us get a stack to overflow into */
}

/* Session end: the handlers that were there before come back (only ours
 * are replaced; a handler installed after ours stays). */
void eng_fatal_uninstall(void) {
    if (!fatal_installed)
        return;
    for (size_t i = 0; i < NFATAL; i++) {
        struct sigaction cur;
        if (fatal_signals[i] == SIGTERM && !term_installed)
            continue;
        if (sigaction(fatal_signals[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_fatal)
            sigaction(fatal_signals[i], &old_fatal[i], NULL);
    }
    fatal_installed = 0;
    nsc_sigstack_want(0);
}
