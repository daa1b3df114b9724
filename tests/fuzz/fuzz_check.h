// FUZZ_CHECK / FUZZ_FAIL: an invariant of a fuzz target; prints file:line and why, then aborts.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

#define FUZZ_FAIL(why)                                                               \
  do {                                                                               \
    std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, why); \
    std::abort();                                                                    \
  } while (false)
