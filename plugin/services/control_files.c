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
};
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
    else {
        nsc_log_warn("ncclscope: %s: unknown command \"%.64s\" (start, stop, dump, mark TEXT, mask EVENTS)",
                     from, line);
        return;
    }
    if (rc != NCCLSCOPE_OK)
        nsc_log_warn("ncclscope: %s: %s: %s", from, line, nsc_ctl_strerror(rc));
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
    /* Complete lines only: a command being appended waits for its newline.
     * A line longer than the buffer is skipped. */
    char *end = memrchr(buf, '\n', (size_t)got);
    if (!end) {
        if (got == (ssize_t)sizeof(buf) - 1)
            f->off += got;
        return;
    }
    f->off += end + 1 - buf;
    *end = '\0';
    for (char *line = buf, *next; line; line = next) {
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
