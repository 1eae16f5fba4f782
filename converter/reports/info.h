// SPDX-License-Identifier: Apache-2.0
/* info.h - `ncclscope info`: what a trace file holds, in text. */
#ifndef NSC_INFO_H
#define NSC_INFO_H
#include <stdio.h>
/* Returns 0 for an intact file, 2 when damage was found. */
int nsc_info(const char *path, FILE *out);
#endif
