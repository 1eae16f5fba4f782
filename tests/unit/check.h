// SPDX-License-Identifier: Apache-2.0
/*
 * check.h - the unit tests' CHECK: counts, prints the failed condition
 * with its line, and lets the test go on; main returns check_summary().
 */
#ifndef NSC_TEST_CHECK_H
#define NSC_TEST_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (c)                                                                                 \
            check_passed++;                                                                    \
        else {                                                                                 \
            check_failed++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);            \
        }                                                                                      \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}

#endif /* NSC_TEST_CHECK_H */
