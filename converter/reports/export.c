// SPDX-License-Identifier: Apache-2.0
/* export.c - a job's tables as CSV files for SQL engines (export.h). */
#include "export.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops_table.h"

/* Tables written one file per trace file, and one file for the job. */
static const enum nsc_ot_table_id per_file[] = {NSC_OT_T_OPS, NSC_OT_T_KCH, NSC_OT_T_STEPS};
static const enum nsc_ot_table_id per_job[] = {NSC_OT_T_COMMS, NSC_OT_T_DROPS, NSC_OT_T_ERRORS};

static int mkdir_p(const char *path) {
    char b[4096];
    if (snprintf(b, sizeof(b), "%s", path) >= (int)sizeof(b))
        return -1;
    for (char *p = b + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(b, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(b, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* RFC 4180: strings always quoted, quotes doubled. */
static void csv_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_header(FILE *f, enum nsc_ot_table_id id) {
    unsigned n;
    const struct nsc_ot_colspec *s = nsc_ot_schema(id, &n);
    for (unsigned c = 0; c < n; c++)
        fprintf(f, "%s%s", c ? "," : "", s[c].name);
    fputc('\n', f);
}

static void csv_rows(FILE *f, const struct nsc_ot_file *of, enum nsc_ot_table_id id) {
    const struct nsc_ot_table *t = &of->t[id];
    for (size_t r = 0; r < t->nrows; r++) {
        for (unsigned c = 0; c < t->ncols; c++) {
            if (c)
                fputc(',', f);
            if (t->spec[c].type == NSC_OT_STR) {
                uint32_t k = ((const uint32_t *)t->col[c])[r];
                csv_string(f, k < of->nstr ? of->str[k] : "");
            } else {
                fprintf(f, "%" PRId64, ((const int64_t *)t->col[c])[r]);
            }
        }
        fputc('\n', f);
    }
}

/* The process's rank: its rank in its largest communicator (-1 unknown). */
static int64_t world_rank(const struct nsc_ot_file *of) {
    const struct nsc_ot_table *t = &of->t[NSC_OT_T_COMMS];
    unsigned n;
    const struct nsc_ot_colspec *s = nsc_ot_schema(NSC_OT_T_COMMS, &n);
    int rc = -1, nc = -1;
    for (unsigned c = 0; c < n; c++) {
        if (!strcmp(s[c].name, "rank"))
            rc = (int)c;
        if (!strcmp(s[c].name, "nranks"))
            nc = (int)c;
    }
    int64_t best = -1, best_n = 0;
    for (size_t r = 0; rc >= 0 && nc >= 0 && r < t->nrows; r++) {
        int64_t rk = ((const int64_t *)t->col[rc])[r], nr = ((const int64_t *)t->col[nc])[r];
        if (rk >= 0 && nr > best_n) {
            best = rk;
            best_n = nr;
        }
    }
    return best;
}

/* The first string cell of a table's column `name` (the file's host), or "". */
static const char *first_str(const struct nsc_ot_file *of, enum nsc_ot_table_id id, const char *name) {
    const struct nsc_ot_table *t = &of->t[id];
    for (unsigned c = 0; c < t->ncols; c++)
        if (!strcmp(t->spec[c].name, name) && t->nrows) {
            uint32_t k = ((const uint32_t *)t->col[c])[0];
            return k < of->nstr ? of->str[k] : "";
        }
    return "";
}

static int64_t first_i(const struct nsc_ot_file *of, enum nsc_ot_table_id id, const char *name) {
    const struct nsc_ot_table *t = &of->t[id];
    for (unsigned c = 0; c < t->ncols; c++)
        if (!strcmp(t->spec[c].name, name) && t->nrows)
            return ((const int64_t *)t->col[c])[0];
    return 0;
}

/* A host name as a directory name: nothing but [A-Za-z0-9._-], and never
 * "." or a name with ".." (the export's list refuses those: its files could
 * not be replaced by the next export). */
static void safe_name(char *out, size_t n, const char *s) {
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        out[k++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                           *s == '.' || *s == '-' || *s == '_'
                       ? *s
                       : '_';
    if (!k)
        out[k++] = '_';
    out[k] = '\0';
    if (!strcmp(out, ".") || strstr(out, ".."))
        for (size_t i = 0; i < k; i++)
            out[i] = out[i] == '.' ? '_' : out[i];
}

/* dir/rel's directories below dir are real directories, not links (a link
 * put in DIR must not make an export delete files elsewhere). */
static int no_link_below(const char *dir, const char *rel) {
    char p[8400];
    size_t base = (size_t)snprintf(p, sizeof(p), "%s/", dir);
    for (const char *sl = strchr(rel, '/'); sl; sl = strchr(sl + 1, '/')) {
        size_t len = (size_t)(sl - rel);
        if (base + len >= sizeof(p))
            return 0;
        memcpy(p + base, rel, len);
        p[base + len] = '\0';
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            return 0;
    }
    return 1;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* An export into a directory that holds an earlier one must not leave that
 * one's files behind (a glob over DIR/ops/<host>/rank-<R>.csv would read
 * two jobs' ranks as one job), and must not delete files it did not write. DIR/.ncclscope-export
 * lists, one per line, every file an export wrote, as it opens them (an
 * interrupted export is listed too). A new export removes the files listed
 * there (and the directories they leave empty), then writes its own; a
 * non-empty DIR without that list is refused: it holds somebody's files. */
#define MARKER ".ncclscope-export"

/* A listed name is removed only if it is one an export writes: relative,
 * no "..", ending in .csv (a hand-edited list cannot remove anything else). */
static int listed_name_ok(const char *rel) {
    return rel[0] && rel[0] != '/' && !strstr(rel, "..") && ends_with(rel, ".csv");
}

/* Returns 0 (DIR ready, *marker open for the new list), or -1 after a
 * message (rc 3). */
static int prepare_dir(const char *dir, FILE **marker) {
    char path[4200];
    *marker = NULL;
    if (mkdir_p(dir) != 0) {
        fprintf(stderr, "ncclscope export: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, MARKER);
    FILE *old = fopen(path, "r");
    if (!old) {
        DIR *d = opendir(dir);
        if (!d) {
            fprintf(stderr, "ncclscope export: %s: %s\n", dir, strerror(errno));
            return -1;
        }
        struct dirent *de;
        const char *other = NULL;
        while (!other && (de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                other = de->d_name;
        if (other)
            fprintf(stderr,
                    "ncclscope export: %s is not empty (%s) and holds no earlier export (no %s): "
                    "give a new or empty directory\n",
                    dir, other, MARKER);
        closedir(d);
        if (other)
            return -1;
    } else {
        char line[4200];
        int removed = 0;
        while (fgets(line, sizeof(line), old)) {
            if (!strchr(line, '\n') && !feof(old)) { /* longer than any name we write: skip it whole */
                int ch;
                while ((ch = fgetc(old)) != EOF && ch != '\n')
                    ;
                continue;
            }
            line[strcspn(line, "\n")] = '\0';
            if (!listed_name_ok(line) || !no_link_below(dir, line))
                continue;
            char f[8400];
            snprintf(f, sizeof(f), "%s/%s", dir, line);
            if (unlink(f) == 0)
                removed++;
            else if (errno != ENOENT) {
                fprintf(stderr, "ncclscope export: cannot remove %s of the earlier export: %s\n", f,
                        strerror(errno));
                fclose(old);
                return -1;
            }
            /* its directories, once empty (rmdir refuses others) */
            for (char *sl = strrchr(f, '/'); sl && sl > f + strlen(dir); sl = strrchr(f, '/')) {
                *sl = '\0';
                if (rmdir(f) != 0)
                    break;
            }
        }
        fclose(old);
        if (removed)
            fprintf(stderr, "ncclscope export: %s: %d file(s) of an earlier export replaced\n", dir,
                    removed);
    }
    if (!(*marker = fopen(path, "w"))) {
        fprintf(stderr, "ncclscope export: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Opens DIR/rel for writing, with its header; NULL after saying why. */
static FILE *open_csv(const char *dir, const char *rel, enum nsc_ot_table_id id, FILE *marker) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    if (mkdir_p(path) != 0) {
        fprintf(stderr, "ncclscope export: cannot create %s: %s\n", path, strerror(errno));
        return NULL;
    }
    *slash = '/';
    /* listed before it exists: a run cut short still leaves it listed */
    fprintf(marker, "%s\n", rel);
    if (fflush(marker) != 0) {
        fprintf(stderr, "ncclscope export: cannot write %s/%s: %s\n", dir, MARKER, strerror(errno));
        return NULL;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ncclscope export: cannot write %s: %s\n", path, strerror(errno));
        return NULL;
    }
    csv_header(f, id);
    return f;
}

static int close_csv(FILE *f, const char *dir, const char *rel) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "ncclscope export: %s/%s: write failed: %s\n", dir, rel, strerror(errno));
        return -1;
    }
    return 0;
}

int nsc_export(const char *const *files, int nfiles, const char *out, int mode, double max_unc) {
    int rc = 0;
    int64_t *shift = calloc((size_t)nfiles + 1, sizeof(*shift));
    char (*used)[160] = calloc((size_t)nfiles + 1, sizeof(*used));
    FILE *job[3] = {NULL, NULL, NULL};
    FILE *marker = NULL;
    char err[1024];
    if (!shift || !used) {
        rc = 3;
        goto done;
    }
    if (nsc_ot_job_shifts(files, nfiles, mode, max_unc, shift, err, sizeof(err)) != 0) {
        fprintf(stderr, "ncclscope export: %s\n", err);
        rc = 3;
        goto done;
    }
    if (prepare_dir(out, &marker) != 0) {
        rc = 3;
        goto done;
    }
    for (int j = 0; j < 3; j++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "%s.csv", nsc_ot_table_names[per_job[j]]);
        if (!(job[j] = open_csv(out, rel, per_job[j], marker))) {
            rc = 3;
            goto done;
        }
    }
    uint64_t rows[NSC_OT_NTABLES] = {0};
    for (int i = 0; i < nfiles && rc != 3; i++) {
        struct nsc_ot_file of;
        int r = nsc_ot_read(files[i], i, shift[i], (1u << NSC_OT_T_OPS) | (1u << NSC_OT_T_KCH) | (1u << NSC_OT_T_STEPS), &of);
        if (r < 0) {
            fprintf(stderr, "ncclscope export: %s: out of memory\n", files[i]);
            nsc_ot_free(&of);
            rc = 3;
            break;
        }
        if (r > 0) {
            const struct nsc_ot_table *e = &of.t[NSC_OT_T_ERRORS];
            for (size_t k = 0; k < e->nrows; k++) {
                uint32_t m = ((const uint32_t *)e->col[2])[k]; /* message */
                fprintf(stderr, "ncclscope export: %s\n", m < of.nstr ? of.str[m] : "?");
            }
            rc = 2;
        }
        /* DIR/<table>/<host>/rank-<R>.csv: one per process */
        char host[80], name[160];
        safe_name(host, sizeof(host), first_str(&of, NSC_OT_T_DROPS, "host"));
        int64_t wr = world_rank(&of);
        snprintf(name, sizeof(name), "%s/rank-%" PRId64 ".csv", host, wr);
        for (int j = 0; wr >= 0 && j < i; j++)
            if (!strcmp(used[j], name))
                wr = -1;
        if (wr < 0)
            snprintf(name, sizeof(name), "%s/pid-%" PRId64 "-%d.csv", host,
                     first_i(&of, NSC_OT_T_DROPS, "pid"), i);
        snprintf(used[i], sizeof(used[i]), "%s", name);
        for (size_t j = 0; j < sizeof(per_file) / sizeof(per_file[0]); j++) {
            char rel[256];
            snprintf(rel, sizeof(rel), "%s/%s", nsc_ot_table_names[per_file[j]], name);
            FILE *f = open_csv(out, rel, per_file[j], marker);
            if (!f) {
                rc = 3;
                break;
            }
            csv_rows(f, &of, per_file[j]);
            rows[per_file[j]] += of.t[per_file[j]].nrows;
            if (close_csv(f, out, rel) != 0)
                rc = 3;
        }
        for (int j = 0; j < 3; j++) {
            csv_rows(job[j], &of, per_job[j]);
            rows[per_job[j]] += of.t[per_job[j]].nrows;
        }
        nsc_ot_free(&of);
    }
    for (int j = 0; j < 3; j++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "%s.csv", nsc_ot_table_names[per_job[j]]);
        if (close_csv(job[j], out, rel) != 0)
            rc = 3;
        job[j] = NULL;
    }
    if (rc != 3)
        fprintf(stderr,
                "ncclscope export: %d file(s) -> %s: %" PRIu64 " operations, %" PRIu64
                " kernel channels, %" PRIu64 " proxy steps, %" PRIu64 " comms (docs/analysis.md)\n",
                nfiles, out, rows[NSC_OT_T_OPS], rows[NSC_OT_T_KCH], rows[NSC_OT_T_STEPS],
                rows[NSC_OT_T_COMMS]);
done:
    for (int j = 0; j < 3; j++)
        if (job[j])
            fclose(job[j]);
    if (marker && fclose(marker) != 0 && rc != 3) {
        fprintf(stderr, "ncclscope export: %s/%s: write failed: %s\n", out, MARKER, strerror(errno));
        rc = 3;
    }
    free(shift);
    free(used);
    return rc;
}
