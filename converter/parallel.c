// SPDX-License-Identifier: Apache-2.0
/* parallel.c - files several at a time, results in file order (parallel.h). */
#include "parallel.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* an item finished, or the window moved */
    int n, window;
    int next;               /* next item to hand out */
    int taken;              /* items passed to in_order */
    char *done;
    void (*work)(void *ud, int i);
    void *ud;
};

static int jobs_set; /* written once by main before any thread starts */

void nsc_jobs_set_default(int jobs) { jobs_set = jobs; }

int nsc_jobs_default(void) {
    if (jobs_set > 0)
        return jobs_set;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
}

static void *worker(void *arg) {
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->next < p->n && p->next >= p->taken + p->window)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->next >= p->n)
            break;
        int i = p->next++;
        pthread_mutex_unlock(&p->mu);
        p->work(p->ud, i);
        pthread_mutex_lock(&p->mu);
        p->done[i] = 1;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int nsc_parallel(int n, int jobs, void (*work)(void *ud, int i), void (*in_order)(void *ud, int i),
                 void *ud) {
    if (jobs > n)
        jobs = n;
    if (jobs <= 1) {
        for (int i = 0; i < n; i++) {
            work(ud, i);
            if (in_order)
                in_order(ud, i);
        }
        return 0;
    }
    struct pool p = {.n = n, .window = 2 * jobs, .work = work, .ud = ud};
    p.done = calloc((size_t)n, 1);
    pthread_t *th = calloc((size_t)jobs, sizeof(*th));
    if (!p.done || !th) {
        free(p.done);
        free(th);
        return -1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    int started = 0;
    while (started < jobs && pthread_create(&th[started], NULL, worker, &p) == 0)
        started++;
    if (!started) {
        pthread_mutex_destroy(&p.mu);
        pthread_cond_destroy(&p.cv);
        free(p.done);
        free(th);
        return -1;
    }
    /* The calling thread takes the results in order; workers fill the window. */
    pthread_mutex_lock(&p.mu);
    for (int i = 0; i < n; i++) {
        while (!p.done[i])
            pthread_cond_wait(&p.cv, &p.mu);
        pthread_mutex_unlock(&p.mu);
        if (in_order)
            in_order(ud, i);
        pthread_mutex_lock(&p.mu);
        p.taken = i + 1;
        pthread_cond_broadcast(&p.cv);
    }
    pthread_mutex_unlock(&p.mu);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    free(p.done);
    free(th);
    return 0;
}

int nsc_msgs_init(struct nsc_msgs *m, int n) {
    m->text = calloc((size_t)n + 1, sizeof(*m->text));
    m->len = calloc((size_t)n + 1, sizeof(*m->len));
    if (m->text && m->len)
        return 0;
    nsc_msgs_free(m);
    return -1;
}

void nsc_msgs_free(struct nsc_msgs *m) {
    free(m->text);
    free(m->len);
    m->text = NULL;
    m->len = NULL;
}

FILE *nsc_msgs_open(struct nsc_msgs *m, int i) {
    FILE *f = open_memstream(&m->text[i], &m->len[i]);
    return f ? f : stderr;
}

void nsc_msgs_close(FILE *f) {
    if (f != stderr)
        fclose(f);
}

void nsc_msgs_flush(struct nsc_msgs *m, int i, FILE *to) {
    if (m->text[i])
        fputs(m->text[i], to);
    free(m->text[i]);
    m->text[i] = NULL;
}
