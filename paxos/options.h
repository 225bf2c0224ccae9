// CoreOptions: the configuration of one group's protocol core.
#ifndef CHORUS_PAXOS_OPTIONS_H_
#define CHORUS_PAXOS_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace paxos {

// Rule breakers for tests only. They are compiled in so the simulation can
// prove that its checker catches a broken acceptor; never set one in
// production.
enum class TestMutation {
  kNone = 0,
  // The acceptor never persists its promise: after a restart it has forgotten
  // every promise it made (accepted values are still persisted).
  kForgetPromise = 1,
  // The acceptor accepts a ballot lower than the one it promised.
  kAcceptLowerBallot = 2,
};

struct CoreOptions {
  // Identity of the cluster; messages of another cluster are dropped. Default 0.
  uint64_t cluster_id = 0;
  // Index of this paxos group; messages of another group are dropped. Default 0.
  uint32_t group = 0;
  // This node's id. REQUIRES: non-zero and in `members`. Default 0 (invalid).
  uint64_t self = 0;
  // Ids of every member, self included. REQUIRES: non-empty, non-zero, no
  // duplicates. A majority is members.size() / 2 + 1. Default empty (invalid).
  std::vector<uint64_t> members;

  // How many of this node's proposals may be in phase 2 at once (pipelining).
  // 1 behaves like PhxPaxos (one instance at a time). Default 8. REQUIRES >= 1.
  size_t max_inflight = 8;
  // Phase 1 without a majority of promises for this long: retry with a higher
  // ballot after a random backoff. Default 1000 ms. REQUIRES >= 1.
  uint64_t prepare_timeout_ms = 1000;
  // Phase 2 of the oldest in-flight instance without a majority for this
  // long: start phase 1 again (higher ballot). Default 1000 ms. REQUIRES >= 1.
  uint64_t accept_timeout_ms = 1000;
  // Period of the learn timer: a learner that made no progress while a peer
  // is ahead asks that peer for the missing values. Default 1000 ms.
  // REQUIRES >= 1.
  uint64_t learn_interval_ms = 1000;
  // Largest value Propose() takes; larger ones fail with TooLarge.
  // Default 4 MiB. REQUIRES >= 1.
  size_t max_value_bytes = 4 << 20;
  // Catch-up: at most this many chosen values per LEARN_VALUES message.
  // Default 64. REQUIRES >= 1.
  size_t catchup_batch_count = 64;
  // Catch-up: a LEARN_VALUES message stops growing once it holds this many
  // value bytes (it always holds at least one value). Default 1 MiB.
  size_t catchup_batch_bytes = 1 << 20;
  // How many recently chosen values stay in memory to serve catch-up and
  // Read(); older ones are read back from the LogStorage. Default 1024.
  size_t chosen_cache_size = 1024;
  // Seed of the core's PRNG (backoff jitter, proposal ids). Two starts of the
  // same node must use different seeds (the runtime draws one from the OS;
  // the simulation from its own seed). Default 1.
  uint64_t seed = 1;
  // Test only. Default kNone.
  TestMutation test_mutation = TestMutation::kNone;

  // Returns OK, or InvalidArgument naming the first bad field.
  Status Validate() const;
  // A majority of members.
  size_t Majority() const { return members.size() / 2 + 1; }
  bool IsMember(uint64_t id) const;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_OPTIONS_H_
