// SPDX-License-Identifier: Apache-2.0
/* lib_pin.c - the plugin pinned in memory (lib_pin.h). */
#include "lib_pin.h"

#include <dlfcn.h>

void nsc_pin_library(void) {
    Dl_info info;
    if (dladdr((void *)&nsc_pin_library, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}
