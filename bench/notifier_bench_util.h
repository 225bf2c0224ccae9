// Small helpers shared by notifier_bench's modes (notifier_bench.cc and
// notifier_batch.cc).
#ifndef CHORUS_BENCH_NOTIFIER_BENCH_UTIL_H_
#define CHORUS_BENCH_NOTIFIER_BENCH_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "utils/cycle_clock.h"

namespace chorus {
namespace bench {

// Prints "notifier_bench: msg" and exits with status 1.
[[noreturn]] inline void Die(const std::string& msg) {
  std::fprintf(stderr, "notifier_bench: %s\n", msg.c_str());
  std::exit(1);
}

// Spins on `cond`, yielding now and then so an unpinned run on a busy
// machine cannot starve the thread it waits for.
template <typename Cond>
void SpinUntil(Cond cond) {
  for (int spins = 0; !cond(); spins++) {
    if (spins < 100) {
      CpuRelax();
    } else {
      std::this_thread::yield();
      spins = 0;
    }
  }
}

// The median of `v` (the upper one for an even count); 0 when empty.
inline uint64_t MedianOf(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_NOTIFIER_BENCH_UTIL_H_
