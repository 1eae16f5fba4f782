// SPDX-License-Identifier: Apache-2.0
/*
 * read_trace.c - prints an ncclscope trace's records with the reader
 * library, as a user's program would: only <ncclscope/reader.h> and
 * libncclscope (cc read_trace.c $(pkg-config --cflags --libs ncclscope)).
 *
 *   read_trace [-q] trace.nsc
 *
 * One line per record (START lines carry NCCL's descriptor fields), then a
 * summary in `ncclscope info`'s words: records by kind, events by type,
 * losses, damage. -q prints the summary only. Exit 1 when the file cannot
 * be opened, 2 when it is damaged (what is intact is still printed).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <ncclscope/reader.h>

static void print_field(const struct ncclscope_field *f) {
    switch (f->kind) {
    case NCCLSCOPE_FIELD_U64:
        printf(" %s=%" PRIu64, f->name, f->u);
        break;
    case NCCLSCOPE_FIELD_I64:
        printf(" %s=%" PRId64, f->name, f->i);
        break;
    case NCCLSCOPE_FIELD_STRING:
        printf(" %s=%s", f->name, f->s ? f->s : "(null)");
        break;
    case NCCLSCOPE_FIELD_POINTER:
        printf(" %s=0x%" PRIx64, f->name, f->u);
        break;
    case NCCLSCOPE_FIELD_EVENT_ID:
        printf(" %s=#%" PRIu64, f->name, f->u);
        break;
    }
}

int main(int argc, char **argv) {
    int quiet = argc == 3 && strcmp(argv[1], "-q") == 0;
    if (argc != 2 + quiet) {
        fprintf(stderr, "usage: read_trace [-q] trace.nsc\n");
        return 1;
    }
    char err[512];
    ncclscope_trace *t = ncclscope_open(argv[1 + quiet], err, sizeof(err));
    if (!t) {
        fprintf(stderr, "read_trace: %s\n", err);
        return 1;
    }
    const struct ncclscope_session *s = ncclscope_session(t);
    if (s)
        printf("session host %s pid %u API v%u format %u plugin %s%s\n", s->host, s->pid,
               s->api_version, s->format_version, s->plugin_version,
               s->replayed ? " (replayed)" : "");

    uint64_t records = 0, starts = 0, stops = 0, states = 0, by_type[16] = {0};
    const char *type_name[16] = {0};
    const struct ncclscope_record *r;
    while ((r = ncclscope_next(t)) != NULL) {
        if (r->kind == NCCLSCOPE_REC_DAMAGE) {
            printf("DAMAGE %s\n", r->text);
            continue;
        }
        if (r->kind == NCCLSCOPE_REC_COMM_INFO) {
            const struct ncclscope_comm *c = ncclscope_comm(t, r->comm);
            if (c && !quiet)
                printf("comm #%u rank %d of %d hash %016" PRIx64 " name \"%s\"\n", c->serial,
                       c->rank, c->nranks, c->comm_hash, c->name);
            continue;
        }
        records++;
        if (quiet) {
            starts += r->kind == NCCLSCOPE_REC_START;
            stops += r->kind == NCCLSCOPE_REC_STOP;
            states += r->kind == NCCLSCOPE_REC_STATE;
            if (r->kind == NCCLSCOPE_REC_START && r->etype < 16) {
                by_type[r->etype]++;
                type_name[r->etype] = r->etype_name;
            }
            continue;
        }
        printf("%" PRIu64 " t%u ", r->time_ns, r->thread);
        switch (r->kind) {
        case NCCLSCOPE_REC_START:
            starts++;
            if (r->etype < 16) {
                by_type[r->etype]++;
                type_name[r->etype] = r->etype_name;
            }
            printf("START %s #%" PRIu64 " parent #%" PRIu64 " comm %u", r->etype_name, r->id,
                   r->parent, r->comm);
            for (unsigned i = 0; i < r->nfields; i++)
                print_field(&r->fields[i]);
            break;
        case NCCLSCOPE_REC_STOP:
            stops++;
            printf("STOP %s #%" PRIu64, r->etype_name, r->id);
            break;
        case NCCLSCOPE_REC_STATE:
            states++;
            printf("STATE %s #%" PRIu64 " %s %" PRIu64, r->etype_name, r->id,
                   r->state_name ? r->state_name : "?", r->arg);
            break;
        case NCCLSCOPE_REC_THREAD:
            printf("THREAD tid %u \"%s\"", r->tid, r->text);
            break;
        case NCCLSCOPE_REC_COMM_INIT:
            printf("COMM_INIT %u", r->comm);
            break;
        case NCCLSCOPE_REC_COMM_FINALIZE:
            printf("COMM_FINALIZE %u", r->comm);
            break;
        case NCCLSCOPE_REC_MARK:
            printf("MARK %" PRIu64 " \"%s\"", r->arg, r->text ? r->text : "");
            break;
        case NCCLSCOPE_REC_PY:
            printf("PY %u %s %" PRIu64, r->etype, r->text ? r->text : "?", r->arg);
            break;
        default:
            printf("kind %d", r->kind);
            break;
        }
        printf("\n");
    }

    printf("records %" PRIu64 " (start %" PRIu64 ", stop %" PRIu64 ", state %" PRIu64 ")\n",
           records, starts, stops, states);
    printf("events by type");
    for (int i = 0; i < 16; i++)
        if (by_type[i])
            printf(" %s=%" PRIu64, type_name[i], by_type[i]);
    printf("\n");
    struct ncclscope_losses l;
    if (ncclscope_losses(t, &l))
        printf("lost %" PRIu64 " records (%" PRIu64 " dropped), %" PRIu64 " events\n", l.total,
               l.dropped, l.events);
    else
        printf("lost unknown (no STATS block)\n");
    unsigned damage = ncclscope_damage_count(t);
    printf("damage %u%s%s\n", damage, damage ? ", last: " : "", damage ? ncclscope_last_error(t) : "");
    printf("closed cleanly %s\n", ncclscope_complete(t) ? "yes" : "no");
    ncclscope_close(t);
    return damage ? 2 : 0;
}
