// Rng: a small deterministic PRNG (splitmix64). Same seed, same sequence, on
// every platform and standard library (no std distributions).
#ifndef CHORUS_PAXOS_RANDOM_H_
#define CHORUS_PAXOS_RANDOM_H_

#include <cstdint>

namespace chorus {
namespace paxos {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); 0 when n == 0. (Modulo bias is irrelevant here.)
  uint64_t Uniform(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  // True with probability per_million / 1e6.
  bool OneIn(uint64_t per_million) { return Uniform(1000000) < per_million; }

 private:
  uint64_t state_;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_RANDOM_H_
