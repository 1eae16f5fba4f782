// SPDX-License-Identifier: Apache-2.0
/*
 * test_progress_file.c - the hang suspect level's files and table
 * (plugin/watch/progress_file.h, progress.h): a file written is read back
 * whole; a link, a FIFO, a directory, a file over the bound, one cut short
 * or malformed are refused (none followed, none blocking); a link planted
 * at the file's name is replaced, its target untouched; the table keeps the
 * highest seqNumber and bounds when an older one was entered from above.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "event_types.h"
#include "progress.h"
#include "progress_file.h"

static struct nsc_pf_entry got[16];
static int ngot;

static void take(void *ud, const struct nsc_pf_entry *e) {
    (void)ud;
    if (ngot < 16)
        got[ngot++] = *e;
}

static int parse(const char *text, struct nsc_pf_head *h) {
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", text);
    ngot = 0;
    return nsc_pf_parse(buf, h, take, NULL);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static const char *GOOD = "ncclscope-progress 1\ngen 7\nok 1\nc 0000004a4e470003 2 4 1\n"
                          "f AllReduce 9\nf AllGather 8\nc 00000000000000ab 0 2 0\nend\n";

static void test_parse(void) {
    struct nsc_pf_head h;
    CHECK(parse(GOOD, &h) == 0 && h.gen == 7 && h.ok == 1 && ngot == 4);
    CHECK(got[0].comm_id == 0x4a4e470003ull && got[0].rank == 2 && got[0].nranks == 4 &&
          got[0].complete == 1 && got[0].func[0] == 0);
    CHECK(!strcmp(got[1].func, "AllReduce") && got[1].seq == 9 && got[1].comm_id == 0x4a4e470003ull);
    CHECK(!strcmp(got[2].func, "AllGather") && got[2].seq == 8);
    CHECK(got[3].comm_id == 0xab && got[3].rank == 0 && got[3].complete == 0 && !got[3].func[0]);
    /* refused: cut short (no end line, a last line without newline), a
     * function before any comm, a rank out of range, junk, a version 2 */
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 1\nc 0000004a4e470003 2 4 1\nf AllReduce 9\n", &h) == -1);
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 1\nend", &h) == -1);
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 1\nf AllReduce 9\nend\n", &h) == -1);
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 1\nc 4a 4 4 1\nend\n", &h) == -1);
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 1\nc zz 0 4 1\nend\n", &h) == -1);
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 2\nend\n", &h) == -1);
    CHECK(parse("ncclscope-progress 2\ngen 7\nok 1\nend\n", &h) == -1);
    CHECK(parse("ncclscope-progress 1\ngen 7\nok 1\nf AllReduce 9 extra\nend\n", &h) == -1);
    CHECK(parse("", &h) == -1);
    CHECK(nsc_pf_is_name("vm-12.progress") && !nsc_pf_is_name(".vm-12.progress.Ab12Cd") &&
          !nsc_pf_is_name("vm-12.nsc") && !nsc_pf_is_name(".progress"));
}

static void test_files(void) {
    char dir[] = "/tmp/nsc-progress-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[300], path[400], target[400];
    /* written into a directory that does not exist yet: made */
    snprintf(sub, sizeof(sub), "%s/a/b", dir);
    CHECK(nsc_pf_write(sub, "vm-1.progress", GOOD, strlen(GOOD)) == 0);
    char buf[NSC_PF_MAX];
    ssize_t n = nsc_pf_read(sub, "vm-1.progress", buf, sizeof(buf));
    CHECK(n == (ssize_t)strlen(GOOD) && !strcmp(buf, GOOD));
    snprintf(path, sizeof(path), "%s/vm-1.progress", sub);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
    /* a link planted at the name: replaced by the rename, target intact */
    snprintf(target, sizeof(target), "%s/target", dir);
    write_file(target, "precious\n");
    snprintf(path, sizeof(path), "%s/vm-2.progress", dir);
    CHECK(symlink(target, path) == 0);
    errno = 0;
    CHECK(nsc_pf_read(dir, "vm-2.progress", buf, sizeof(buf)) == -1 && errno == ELOOP);
    CHECK(nsc_pf_write(dir, "vm-2.progress", GOOD, strlen(GOOD)) == 0);
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
    CHECK(nsc_pf_read(dir, "target", buf, sizeof(buf)) == 9 && !strcmp(buf, "precious\n"));
    /* a FIFO: refused at once (O_NONBLOCK, not a regular file) */
    snprintf(path, sizeof(path), "%s/vm-3.progress", dir);
    CHECK(mkfifo(path, 0600) == 0);
    errno = 0;
    CHECK(nsc_pf_read(dir, "vm-3.progress", buf, sizeof(buf)) == -1 && errno == EINVAL);
    /* a directory */
    snprintf(path, sizeof(path), "%s/vm-4.progress", dir);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(nsc_pf_read(dir, "vm-4.progress", buf, sizeof(buf)) == -1);
    /* over the bound */
    snprintf(path, sizeof(path), "%s/vm-5.progress", dir);
    FILE *f = fopen(path, "w");
    for (unsigned i = 0; i < NSC_PF_MAX; i++)
        fputc('x', f);
    fclose(f);
    errno = 0;
    CHECK(nsc_pf_read(dir, "vm-5.progress", buf, sizeof(buf)) == -1 && errno == EFBIG);
    CHECK(nsc_pf_read(dir, "vm-6.progress", buf, sizeof(buf)) == -1 && errno == ENOENT);
    /* no temporary left behind (names starting with a dot) */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "test -z \"$(find %s -name '.*' -print)\"", dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static void coll(uint32_t serial, uint16_t func, uint64_t seq, uint64_t ticks) {
    struct nsc_rec r;
    memset(&r, 0, sizeof(r));
    r.h.kind = NSC_REC_START;
    r.h.etype = NSC_ET_COLL;
    r.h.aux = serial;
    r.h.ticks = ticks;
    r.h.id = ticks;
    r.u.start.d.coll.func = func;
    r.u.start.d.coll.seq = seq;
    nsc_prog_record(&r);
}

static const struct nsc_prog_pair *pair_of(struct nsc_prog_pair *v, uint32_t n, uint32_t serial,
                                           uint16_t func) {
    for (uint32_t i = 0; i < n; i++)
        if (v[i].serial == serial && v[i].func == func)
            return &v[i];
    return NULL;
}

static void test_table(void) {
    static struct nsc_prog_pair v[NSC_PROG_PAIRS];
    for (uint64_t s = 0; s < 20; s++)
        coll(1, 5, s, 1000 + 10 * s); /* AllReduce 0..19 of comm 1 */
    coll(1, 6, 0, 5000);
    coll(2, 5, 3, 7000);
    coll(2, 5, 2, 6900); /* out of order: the highest stays */
    uint32_t n = nsc_prog_snapshot(v, NSC_PROG_PAIRS);
    CHECK(n == 3);
    const struct nsc_prog_pair *p = pair_of(v, n, 1, 5);
    CHECK(p && p->seq == 19 && p->ticks == 1190 && p->first_seq == 0 && p->first_ticks == 1000);
    CHECK(p && nsc_prog_entered_by(p, 19) == 1190 && nsc_prog_entered_by(p, 15) == 1150);
    /* older than the kept ones: bounded by the earliest kept above it */
    CHECK(p && nsc_prog_entered_by(p, 3) == 1000 + 10 * (20 - NSC_PROG_HIST));
    CHECK(p && nsc_prog_entered_by(p, 20) == 0);
    const struct nsc_prog_pair *q = pair_of(v, n, 2, 5);
    CHECK(q && q->seq == 3 && q->ticks == 7000 && nsc_prog_entered_by(q, 2) == 6900);
    /* a finalize drops the comm's pairs, the others stay */
    struct nsc_rec r;
    memset(&r, 0, sizeof(r));
    r.h.kind = NSC_REC_COMM_FINALIZE;
    r.h.aux = 1;
    nsc_prog_record(&r);
    n = nsc_prog_snapshot(v, NSC_PROG_PAIRS);
    CHECK(n == 1 && pair_of(v, n, 2, 5) != NULL);
    /* the table's bound: pairs past it are counted, not followed */
    for (uint32_t s = 0; s < NSC_PROG_PAIRS + 10; s++)
        coll(100 + s, 5, 0, 9000);
    n = nsc_prog_snapshot(v, NSC_PROG_PAIRS);
    CHECK(n == NSC_PROG_PAIRS && nsc_prog_unfollowed() == 11);
}

int main(void) {
    test_parse();
    test_files();
    test_table();
    return check_summary();
}
