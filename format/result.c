// SPDX-License-Identifier: Apache-2.0
/* result.c - names of results. */
#include "result.h"

#include <errno.h>
#include <stddef.h>

static const char *const names[NSC_E_COUNT] = {
    [NSC_OK] = "ok",
    [NSC_E_IO] = "I/O error",
    [NSC_E_NOT_TRACE] = "not an ncclscope trace",
    [NSC_E_VERSION] = "unsupported format version",
    [NSC_E_TRUNCATED] = "truncated",
    [NSC_E_BAD_BLOCK] = "damaged block header",
    [NSC_E_DECOMPRESS] = "damaged compressed data",
    [NSC_E_BAD_PAYLOAD] = "malformed block payload",
    [NSC_E_SEQUENCE] = "blocks missing",
    [NSC_E_USAGE] = "usage error",
    [NSC_E_NOMEM] = "out of memory",
    [NSC_E_PLUGIN] = "plugin error",
    [NSC_E_CHECKSUM] = "damaged block payload",
};

const char *nsc_result_str(enum nsc_result r) {
    return (unsigned)r < NSC_E_COUNT && names[r] ? names[r] : "unknown error";
}

const char *nsc_errno_name(int e) {
    switch (e) {
#define N(x) case x: return #x
        N(EPERM); N(ENOENT); N(EINTR); N(EIO); N(ENXIO); N(EBADF); N(EAGAIN); N(ENOMEM);
        N(EACCES); N(EFAULT); N(EBUSY); N(EEXIST); N(ENODEV); N(EISDIR); N(EINVAL); N(ENFILE);
        N(EMFILE); N(EFBIG); N(ENOSPC); N(ESPIPE); N(EROFS); N(EPIPE); N(ENOLCK); N(ENOSYS);
        N(EDQUOT); N(ESTALE); N(ETIMEDOUT); N(ECONNRESET); N(ENOTCONN); N(EOVERFLOW);
        N(ECANCELED); N(ENAMETOOLONG); N(ELOOP); N(ENOTDIR); N(EDESTADDRREQ);
#undef N
    default: return NULL;
    }
}
