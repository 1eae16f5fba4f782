// SPDX-License-Identifier: Apache-2.0
/*
 * lib_pin.h - keeping the plugin mapped for the life of the process.
 *
 * NCCL unloads the plugin when its last communicator is destroyed. Where
 * something of ours must outlive that (a thread left behind in a write that
 * does not return, an application thread's signal stack in our memory),
 * the library is pinned: dlopen of itself with RTLD_NODELETE, so dlclose
 * never unmaps it. Idempotent; any thread; not async-signal-safe.
 */
#ifndef NSC_LIB_PIN_H
#define NSC_LIB_PIN_H

void nsc_pin_library(void);

#endif /* NSC_LIB_PIN_H */
