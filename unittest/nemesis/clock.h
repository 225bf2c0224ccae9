// Copyright (c) chorus authors.
//
// The one monotonic clock of a nemesis run (history.h's invoke_ns and
// complete_ns, and every deadline of the harness).

#ifndef CHORUS_UNITTEST_NEMESIS_CLOCK_H_
#define CHORUS_UNITTEST_NEMESIS_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace chorus {
namespace nemesis {

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_CLOCK_H_
