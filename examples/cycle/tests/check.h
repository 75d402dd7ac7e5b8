/* check.h — the one check the tests use: CHECK(expression, wanted value).
 * A test's main returns check_result(): 0 when every check held, else 1. */
#ifndef CYCLE_CHECK_H
#define CYCLE_CHECK_H

#include <stdio.h>

static int check_failures = 0;

#define CHECK(expr, want)                                                          \
  do {                                                                             \
    long got_ = (long)(expr), want_ = (long)(want);                                \
    if (got_ != want_) {                                                           \
      fprintf(stderr, "%s:%d: %s is %ld, want %ld\n", __FILE__, __LINE__, #expr,   \
              got_, want_);                                                        \
      check_failures++;                                                            \
    }                                                                              \
  } while (0)

static int check_result(void) { return check_failures == 0 ? 0 : 1; }

#endif
