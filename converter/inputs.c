// SPDX-License-Identifier: Apache-2.0
/* inputs.c - directories expanded into their trace files, duplicates
 * dropped (inputs.h). */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_format.h"
#include "trace_reader.h"

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void nsc_inputs_free(char **files, int n) {
    for (int i = 0; files && i < n; i++)
        free(files[i]);
    free(files);
}

int nsc_inputs_check_trace(const char *cmd, const char *path) {
    struct nsc_reader r;
    enum nsc_result rc = nsc_reader_open(&r, path);
    if (rc == NSC_OK)
        nsc_reader_close(&r);
    if (rc != NSC_E_NOT_TRACE)
        return 0;
    fprintf(stderr, "ncclscope %s: not an ncclscope trace: %s\n", cmd, path);
    return 3;
}

/* A directory's entry: kept when it is a regular file, else a note. */
static int dir_entry_is_file(const char *cmd, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        fprintf(stderr, "ncclscope %s: %s: skipped: %s%s\n", cmd, path,
                lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? "a symlink to nothing readable: " : "",
                strerror(e));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "ncclscope %s: %s: skipped: %s, not a trace file\n", cmd, path,
                nsc_file_kind(st.st_mode));
        return 0;
    }
    return 1;
}

struct list {
    char **v;
    int n, cap;
};

static int push(struct list *l, char *s) {
    if (!s)
        return -1;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, (size_t)cap * sizeof(*v));
        if (!v) {
            free(s);
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

/* A directory's *.nsc files, sorted, onto l. Returns 0, or 3 after a
 * message. */
static int add_dir(const char *cmd, const char *dir, struct list *l) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "ncclscope %s: %s: %s\n", cmd, dir, strerror(errno));
        return 3;
    }
    int start = l->n;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!ends_with(de->d_name, NSC_FILE_SUFFIX))
            continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(len);
        if (p)
            snprintf(p, len, "%s/%s", dir, de->d_name);
        if (p && !dir_entry_is_file(cmd, p)) {
            free(p);
            continue;
        }
        if (push(l, p) != 0) {
            closedir(d);
            fprintf(stderr, "ncclscope %s: out of memory\n", cmd);
            return 3;
        }
    }
    closedir(d);
    qsort(l->v + start, (size_t)(l->n - start), sizeof(*l->v), cmp_str);
    if (l->n == start)
        fprintf(stderr, "ncclscope %s: %s: no %s files in this directory\n", cmd, dir,
                NSC_FILE_SUFFIX);
    return 0;
}

int nsc_inputs_expand(const char *cmd, char *const *in, int n, char ***files, int *nfiles) {
    struct list l = {NULL, 0, 0};
    int rc = 0;
    *files = NULL;
    *nfiles = 0;
    for (int i = 0; i < n && !rc; i++) {
        struct stat st;
        if (stat(in[i], &st) != 0) {
            fprintf(stderr, "ncclscope %s: %s: %s\n", cmd, in[i], strerror(errno));
            rc = 3;
        } else if (S_ISDIR(st.st_mode)) {
            rc = add_dir(cmd, in[i], &l);
        } else if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "ncclscope %s: %s: expected a trace file or a directory, found %s\n", cmd,
                    in[i], nsc_file_kind(st.st_mode));
            rc = 3;
        } else if (push(&l, strdup(in[i])) != 0) {
            fprintf(stderr, "ncclscope %s: out of memory\n", cmd);
            rc = 3;
        }
    }
    if (!rc && l.n == 0) {
        fprintf(stderr, "ncclscope %s: no trace files\n", cmd);
        rc = 1;
    }
    if (rc) {
        nsc_inputs_free(l.v, l.n);
        return rc;
    }
    for (int i = 0; i < l.n; i++) /* each one named */
        if (nsc_inputs_check_trace(cmd, l.v[i]))
            rc = 3;
    if (rc) {
        nsc_inputs_free(l.v, l.n);
        return rc;
    }
    int twice = nsc_inputs_dedupe(l.v, &l.n);
    if (twice)
        fprintf(stderr, "ncclscope %s: %d input(s) named twice, read once\n", cmd, twice);
    *files = l.v;
    *nfiles = l.n;
    return 0;
}

int nsc_inputs_dedupe(char **files, int *n) {
    struct id {
        dev_t dev;
        ino_t ino;
        int ok;
    } *ids = calloc((size_t)*n + 1, sizeof(*ids));
    if (!ids)
        return 0; /* out of memory: read them as given rather than fail */
    int k = 0, dropped = 0;
    for (int i = 0; i < *n; i++) {
        struct stat st;
        int ok = stat(files[i], &st) == 0; /* one that fails says so when read */
        int dup = 0;
        for (int j = 0; ok && j < k && !dup; j++)
            dup = ids[j].ok && ids[j].dev == st.st_dev && ids[j].ino == st.st_ino;
        if (dup) {
            free(files[i]);
            dropped++;
            continue;
        }
        ids[k].ok = ok;
        if (ok) {
            ids[k].dev = st.st_dev;
            ids[k].ino = st.st_ino;
        }
        files[k++] = files[i];
    }
    *n = k;
    free(ids);
    return dropped;
}
