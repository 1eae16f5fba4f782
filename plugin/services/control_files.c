// SPDX-License-Identifier: Apache-2.0
/* control_files.c - the control files (<dir>/control, <dir>/<stem>.control):
 * commands appended to them become control.c's commands. Ops thread only,
 * besides nsc_ctl_files_open (the session, before the ops thread starts). */
#include "control.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define NCCLSCOPE_NO_LOADER
#include "ncclscope.h"

/* Control files: commands appended after the session started are applied
 * once, in order (each process keeps its own read offset, so one shared
 * file reaches every process of the job). A file replaced (new inode) or
 * cut shorter is read again from its start. Ops thread only. */
struct cfile {
    char path[1200];
    dev_t dev;
    ino_t ino;
    off_t off;
    int skipping; /* inside a line longer than the buffer: skipped up to its newline */
};
/* A junk control file must not flood the log: at most WARN_BURST
 * complaints, then one line saying the rest are counted only. */
#define WARN_BURST 20
static unsigned warned, unwarned;
static struct cfile files[2];

static void cfile_init(struct cfile *f, const char *dir, const char *name) {
    snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
    struct stat st;
    if (stat(f->path, &st) == 0) { /* what it holds now is history */
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->off = st.st_size;
    } else {
        f->dev = 0;
        f->ino = 0;
        f->off = 0;
    }
    f->skipping = 0;
}

void nsc_ctl_files_open(const char *dir, const char *stem) {
    char own[256];
    snprintf(own, sizeof(own), "%s.control", stem);
    cfile_init(&files[0], dir, "control");
    cfile_init(&files[1], dir, own);
}

static void run_command(char *line, const char *from) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
        line[--n] = '\0';
    while (*line == ' ' || *line == '\t')
        line++;
    if (!*line || *line == '#')
        return;
    char *arg = line + strcspn(line, " \t");
    if (*arg) {
        *arg++ = '\0';
        arg += strspn(arg, " \t");
    }
    int rc;
    if (!strcmp(line, "start"))
        rc = nsc_ctl_start();
    else if (!strcmp(line, "stop"))
        rc = nsc_ctl_stop();
    else if (!strcmp(line, "dump"))
        rc = nsc_ctl_dump();
    else if (!strcmp(line, "mark"))
        rc = nsc_ctl_mark(arg);
    else if (!strcmp(line, "mask") || !strcmp(line, "events"))
        rc = nsc_ctl_set_events(arg);
    else
        rc = -1;
    if (rc == NCCLSCOPE_OK)
        return;
    if (warned >= WARN_BURST) {
        if (!unwarned++)
            nsc_log_warn("ncclscope: %s: more bad commands; not logged from now on", from);
        return;
    }
    warned++;
    if (rc == -1) /* the log escapes control bytes (log.c) */
        nsc_log_warn("ncclscope: %s: unknown command \"%.64s\" (start, stop, dump, mark TEXT, mask EVENTS)",
                     from, line);
    else
        nsc_log_warn("ncclscope: %s: %.64s: %s", from, line, nsc_ctl_strerror(rc));
}

static void poll_file(struct cfile *f) {
    struct stat st;
    if (stat(f->path, &st) != 0) {
        f->dev = 0;
        f->ino = 0;
        f->off = 0; /* a file that appears later is read from its start */
        return;
    }
    if (st.st_dev != f->dev || st.st_ino != f->ino || st.st_size < f->off) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->off = 0;
        f->skipping = 0;
    }
    if (st.st_size == f->off)
        return;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    char buf[8192];
    ssize_t got = pread(fd, buf, sizeof(buf) - 1, f->off);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = '\0';
    char *start = buf;
    if (f->skipping) { /* the rest of an over-long line: never a command */
        char *nl = memchr(buf, '\n', (size_t)got);
        if (!nl) {
            f->off += got;
            return;
        }
        f->skipping = 0;
        f->off += nl + 1 - buf;
        start = nl + 1;
    }
    /* Complete lines only: a command being appended waits for its newline.
     * A line longer than the buffer is skipped whole, up to its newline. */
    char *end = memrchr(start, '\n', (size_t)(buf + got - start));
    if (!end) {
        if (start == buf && got == (ssize_t)sizeof(buf) - 1) {
            f->off += got;
            f->skipping = 1;
            if (warned < WARN_BURST) {
                warned++;
                nsc_log_warn("ncclscope: %s: a line over %zu bytes; skipped", f->path, sizeof(buf) - 2);
            }
        }
        return;
    }
    f->off += end + 1 - start;
    *end = '\0';
    char *buf_start = start;
    for (char *line = buf_start, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        run_command(line, f->path);
    }
}

void nsc_ctl_poll(void) {
    for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (files[i].path[0])
            poll_file(&files[i]);
    nsc_ctl_refresh_chained();
}
