// SPDX-License-Identifier: Apache-2.0
/* control_api.c - the exported control API (include/ncclscope.h): each
 * call is one of control.c's commands. */
#include "control.h"
#include "hot_line.h"

#define NCCLSCOPE_NO_LOADER
#include "ncclscope.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int ncclscope_control_start(void) { return nsc_ctl_start(); }
EXPORT int ncclscope_control_stop(void) { return nsc_ctl_stop(); }
EXPORT int ncclscope_control_set_mask(uint32_t mask) { return nsc_ctl_set_mask(mask); }
EXPORT int ncclscope_control_set_events(const char *names) { return nsc_ctl_set_events(names); }
EXPORT uint32_t ncclscope_control_mask(void) { return nsc_ctl_recording(); }
/* Flight mode only: elsewhere every process streams, nothing to dump. */
EXPORT int ncclscope_control_dump(void) { return nsc_ctl_dump(); }
EXPORT int ncclscope_control_mark(const char *text) { return nsc_ctl_mark(text); }
EXPORT const char *ncclscope_control_strerror(int status) { return nsc_ctl_strerror(status); }
