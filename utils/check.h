// CHORUS_CHECK: an invariant that must hold in every build type. A broken
// invariant means a bug in chorus, so it aborts loudly with the location;
// it is never used for bad input (that gets a Status).
#ifndef CHORUS_UTILS_CHECK_H_
#define CHORUS_UTILS_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define CHORUS_CHECK(cond)                                                          \
  do {                                                                              \
    if (__builtin_expect(!(cond), 0)) {                                             \
      fprintf(stderr, "chorus: invariant broken at %s:%d: %s\n", __FILE__, __LINE__, \
              #cond);                                                               \
      abort();                                                                      \
    }                                                                               \
  } while (0)

#endif  // CHORUS_UTILS_CHECK_H_
