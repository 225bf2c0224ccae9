// NodeClock: one simulated node's monotonic clock, as a function of the
// simulation's virtual time (ms):
//
//   local(t) = offset + floor(t * (1e6 + rate_ppm) / 1e6)
//
// rate_ppm is the node's rate drift, fixed per node per seed, in
// [-drift_ppm, +drift_ppm] (CoreOptions::max_clock_drift_ppm bounds it: the
// lease rule is only safe for drifts within it). The clock is the machine's,
// not the process's: it keeps running while the node is crashed or paused
// (a SIGSTOP, a VM pause), as CLOCK_MONOTONIC does across a process restart.
// Non-decreasing in t (the rate is positive: |rate_ppm| < 1e6).
#ifndef CHORUS_UNITTEST_SIM_CLOCK_H_
#define CHORUS_UNITTEST_SIM_CLOCK_H_

#include <cstdint>

namespace chorus {
namespace sim {

class NodeClock {
 public:
  NodeClock() = default;
  // REQUIRES: -1e6 < rate_ppm < 1e6.
  NodeClock(uint64_t offset, int64_t rate_ppm) : offset_(offset), rate_ppm_(rate_ppm) {}

  // The node's local time (ms) at virtual time `t`.
  uint64_t Local(uint64_t t) const {
    const uint64_t scaled = t * static_cast<uint64_t>(kMillion + rate_ppm_);
    return offset_ + scaled / kMillion;
  }

  // The first virtual time >= `t` at which the local clock reads at least
  // `local`: when a timer the node started for that local time fires.
  uint64_t VirtualAt(uint64_t t, uint64_t local) const {
    if (Local(t) >= local) return t;
    // local(v) >= local  <=>  v * (1e6 + rate) >= (local - offset) * 1e6.
    const uint64_t need = (local - offset_) * kMillion;
    const uint64_t rate = static_cast<uint64_t>(kMillion + rate_ppm_);
    uint64_t v = (need + rate - 1) / rate;
    if (v < t) v = t;
    return v;
  }

  int64_t rate_ppm() const { return rate_ppm_; }

 private:
  static constexpr int64_t kMillion = 1000000;
  uint64_t offset_ = 0;
  int64_t rate_ppm_ = 0;
};

}  // namespace sim
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SIM_CLOCK_H_
