// CycleClock: the cheapest monotonic-enough tick counter, for benchmarks.
// x86: the time-stamp counter (__rdtsc, CPU reference cycles). Elsewhere:
// steady_clock nanoseconds. CycleClockUnit() names which one it is.
// Not for timeouts or anything that must survive CPU migration exactly.

#ifndef CHORUS_UTILS_CYCLE_CLOCK_H_
#define CHORUS_UTILS_CYCLE_CLOCK_H_

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CHORUS_HAVE_RDTSC 1
#endif

namespace chorus {

inline uint64_t CycleClockNow() {
#ifdef CHORUS_HAVE_RDTSC
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
#endif
}

// "cycles" (rdtsc) or "ns" (steady_clock fallback).
inline const char* CycleClockUnit() {
#ifdef CHORUS_HAVE_RDTSC
  return "cycles";
#else
  return "ns";
#endif
}

// A polite busy-wait hint for spin loops.
inline void CpuRelax() {
#ifdef CHORUS_HAVE_RDTSC
  _mm_pause();
#endif
}

}  // namespace chorus

#endif  // CHORUS_UTILS_CYCLE_CLOCK_H_
