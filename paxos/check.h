// CHORUS_CHECK: an invariant of the protocol core. A broken invariant means a
// bug; the process aborts loudly instead of continuing with corrupt state.
// Not for errors a caller or a peer can cause (those return a Status).
#ifndef CHORUS_PAXOS_CHECK_H_
#define CHORUS_PAXOS_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define CHORUS_CHECK(cond)                                                       \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: CHORUS_CHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                       \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

#endif  // CHORUS_PAXOS_CHECK_H_
