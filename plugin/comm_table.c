/* comm_table.c - communicator slots and their descriptions for the trace. */
#include "comm_table.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct nsc_comm nsc_comms[NSC_MAX_COMMS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_serial = 1;
static unsigned active_count;
/* Descriptions waiting for the flusher. Bounded: at most one per open and
 * one per rank update, and the flusher empties it at least every flush. */
#define PENDING_MAX (2 * NSC_MAX_COMMS)
static struct nsc_comm_info pending[PENDING_MAX];
static unsigned npending;

static void publish(const struct nsc_comm_info *info) {
    if (npending < PENDING_MAX)
        pending[npending++] = *info;
}

struct nsc_comm *nsc_comm_open(uint64_t comm_id, const char *name, int nnodes, int nranks,
                               int rank, uint64_t init_ticks) {
    pthread_mutex_lock(&lock);
    struct nsc_comm *c = NULL;
    for (unsigned i = 0; i < NSC_MAX_COMMS; i++)
        if (!atomic_load_explicit(&nsc_comms[i].active, memory_order_relaxed)) {
            c = &nsc_comms[i];
            break;
        }
    if (c) {
        c->serial = next_serial++;
        atomic_store_explicit(&c->rank, rank, memory_order_relaxed);
        memset(&c->info, 0, sizeof(c->info));
        c->info.serial = c->serial;
        c->info.rank = rank;
        c->info.nranks = nranks;
        c->info.nnodes = nnodes;
        c->info.comm_id = comm_id;
        c->info.init_ticks = init_ticks;
        snprintf(c->info.name, sizeof(c->info.name), "%s", name ? name : "");
        publish(&c->info);
        active_count++;
        /* RELEASE: pairs with nsc_comm_from_context's ACQUIRE. */
        atomic_store_explicit(&c->active, 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return c;
}

void nsc_comm_close(struct nsc_comm *c) {
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&c->active, memory_order_relaxed)) {
        atomic_store_explicit(&c->active, 0, memory_order_release);
        active_count--;
    }
    pthread_mutex_unlock(&lock);
}

unsigned nsc_comm_active_count(void) {
    pthread_mutex_lock(&lock);
    unsigned n = active_count;
    pthread_mutex_unlock(&lock);
    return n;
}

void nsc_comm_learn_rank_slow(struct nsc_comm *c, int rank) {
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&c->rank, memory_order_relaxed) < 0 && rank >= 0) {
        atomic_store_explicit(&c->rank, rank, memory_order_relaxed);
        c->info.rank = rank;
        publish(&c->info);
    }
    pthread_mutex_unlock(&lock);
}

unsigned nsc_comm_take_pending(struct nsc_comm_info *out, unsigned max) {
    pthread_mutex_lock(&lock);
    unsigned n = npending < max ? npending : max;
    memcpy(out, pending, n * sizeof(*out));
    memmove(pending, pending + n, (npending - n) * sizeof(*out));
    npending -= n;
    pthread_mutex_unlock(&lock);
    return n;
}

void nsc_comm_reset_pending(void) {
    pthread_mutex_lock(&lock);
    npending = 0;
    pthread_mutex_unlock(&lock);
}
