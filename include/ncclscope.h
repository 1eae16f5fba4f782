// SPDX-License-Identifier: Apache-2.0
/*
 * ncclscope.h - run-time control of the ncclscope NCCL profiler plugin.
 *
 * NCCL loads the plugin with dlopen(RTLD_LOCAL), so its symbols are not
 * visible to the program by name: find them with dlsym on the loaded
 * library. ncclscope_control_open() below does that (it loads nothing: the
 * library must already be loaded, by NCCL or by you) and fills a table of
 * function pointers:
 *
 *     struct ncclscope_control c;
 *     if (ncclscope_control_open(&c, NULL) == 0) {   // NULL: $NCCL_PROFILER_PLUGIN or the default name
 *         c.mark("checkpoint 12");
 *         c.stop();                                  // record nothing ...
 *         c.start();                                 // ... until here
 *         c.set_mask(0x3ff);                         // NCCL event type bits (docs/config.md)
 *     }
 *
 * Every function may be called from any thread at any time, before the
 * first communicator exists, concurrently with NCCL's callbacks and with
 * other control calls. None of them blocks on NCCL or the disk; they take a
 * mutex of their own and return a status:
 *
 *   start()       record again after stop(). Events NCCL started while
 *                 stopped stay unrecorded (their stops too).
 *   stop()        record no new event until start(). Events already started
 *                 are completed (their stops and states are recorded). NCCL
 *                 is asked for no events we would drop (the mask it re-reads
 *                 is lowered), a chained plugin keeps its own.
 *   set_mask(m)   the NCCL event types to record from now on (bits as in
 *                 NCCL's ncclProfileEventType: 1 Group, 2 Coll, 4 P2p, ...,
 *                 or NCCLSCOPE_EVENTS's names through set_events). Written
 *                 to the mask NCCL re-reads for every live communicator,
 *                 limited to what the profiler API version delivers. Kept
 *                 across stop/start and for later sessions of the process.
 *   mark(text)    a MARK record with the text (its first 255 bytes) at this
 *                 moment, on the calling thread; shown by `ncclscope convert`
 *                 as an instant event. NCCLSCOPE_NO_SESSION before the first
 *                 communicator (nothing would write it).
 *   dump()        flight mode (NCCLSCOPE_MODE=flight): write the in-memory
 *                 window as a standalone trace, <host>-<pid>[-N].nsc in
 *                 NCCLSCOPE_DIR. Only asks for it: a background thread writes
 *                 it, the window stays and recording goes on. A streaming
 *                 process (or one with no communicator yet) returns
 *                 NCCLSCOPE_NOT_FLIGHT_MODE: everything is on disk already.
 *   mask()        the event types being recorded now (0 while stopped).
 *
 * The same commands reach a running job from a shell through the control
 * files (one command per line, appended; docs/config.md):
 *     echo stop >> $NCCLSCOPE_DIR/control                 # every process
 *     echo 'mark step 100' >> $NCCLSCOPE_DIR/host-1234.control   # one process
 */
#ifndef NCCLSCOPE_H
#define NCCLSCOPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLSCOPE_CONTROL_VERSION 1

enum ncclscope_status {
    NCCLSCOPE_OK = 0,
    NCCLSCOPE_INVALID = 1,          /* a NULL text, bits no NCCL event type has, an unknown name */
    NCCLSCOPE_NOT_FLIGHT_MODE = 2,  /* dump(): the process streams to disk, nothing to dump */
    NCCLSCOPE_NO_SESSION = 3,       /* mark(): no communicator is being profiled */
};

int ncclscope_control_start(void);
int ncclscope_control_stop(void);
/* Benchmarks only: 1 makes ncclscope behave as an empty plugin (every
 * start returns a token, nothing is recorded) until called with 0; 2 as
 * the floor plugin (the same, plus a timestamp and a 64-byte line written
 * per call into a private ring nothing reads); 3 records without the hang
 * watchdog's per-operation state (its operations are not watched); other
 * values: INVALID. Events
 * started under it are not in the trace, and an operation whose KernelCh
 * came under it may look in flight to the hang watchdog until a later one
 * of its communicator completes: not for production runs. */
int ncclscope_bench_passthrough(int on);
int ncclscope_control_dump(void);
int ncclscope_control_mark(const char *text);
int ncclscope_control_set_mask(uint32_t mask);
int ncclscope_control_set_events(const char *names); /* NCCLSCOPE_EVENTS syntax: "all,-kernelch" */
uint32_t ncclscope_control_mask(void);
const char *ncclscope_control_strerror(int status);

/* ---- finding the functions in the loaded plugin ---- */
#if !defined(NCCLSCOPE_NO_LOADER)
#include <dlfcn.h>
#include <stdlib.h>

struct ncclscope_control {
    void *lib;
    int (*start)(void);
    int (*stop)(void);
    int (*dump)(void);
    int (*mark)(const char *text);
    int (*set_mask)(uint32_t mask);
    int (*set_events)(const char *names);
    uint32_t (*mask)(void);
    const char *(*strerror)(int status);
};

/* Fills c from the already loaded plugin `path` (NULL: $NCCL_PROFILER_PLUGIN
 * when it names a file, else libnccl-profiler-ncclscope.so). Returns 0, or
 * -1 when the plugin is not loaded in this process or is not ncclscope.
 * Link with -ldl on old C libraries. */
static inline int ncclscope_control_open(struct ncclscope_control *c, const char *path) {
    const char *env = getenv("NCCL_PROFILER_PLUGIN");
    if (!path)
        path = env && *env && env[0] == '/' ? env : "libnccl-profiler-ncclscope.so";
    c->lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!c->lib)
        return -1;
#define NCCLSCOPE_SYM_(f, name) *(void **)(&c->f) = dlsym(c->lib, name)
    NCCLSCOPE_SYM_(start, "ncclscope_control_start");
    NCCLSCOPE_SYM_(stop, "ncclscope_control_stop");
    NCCLSCOPE_SYM_(dump, "ncclscope_control_dump");
    NCCLSCOPE_SYM_(mark, "ncclscope_control_mark");
    NCCLSCOPE_SYM_(set_mask, "ncclscope_control_set_mask");
    NCCLSCOPE_SYM_(set_events, "ncclscope_control_set_events");
    NCCLSCOPE_SYM_(mask, "ncclscope_control_mask");
    NCCLSCOPE_SYM_(strerror, "ncclscope_control_strerror");
#undef NCCLSCOPE_SYM_
    if (!c->start || !c->stop || !c->dump || !c->mark || !c->set_mask || !c->set_events ||
        !c->mask || !c->strerror) {
        dlclose(c->lib);
        c->lib = NULL;
        return -1;
    }
    return 0;
}

/* Drops the reference ncclscope_control_open took (the plugin stays loaded
 * for NCCL). */
static inline void ncclscope_control_close(struct ncclscope_control *c) {
    if (c->lib)
        dlclose(c->lib);
    c->lib = NULL;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_H */
