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
  // Group commit (round.h) keeps the FIRST record / variable a round holds
  // for a key instead of the last: a node that promised or accepted twice in
  // one round persists the older state. Numbered apart from the role
  // mutations above so that lists growing on both sides do not collide.
  kRoundKeepsFirst = 32,
};

// Ballot numbers above this are never used: a message carrying one is
// malformed (dropped and counted as garbage), and a proposer's next ballot
// number saturates here instead of wrapping to 0.
constexpr uint64_t kMaxBallotNumber = uint64_t{1} << 62;
// Instance ids at or above this are never used: a message about one is
// malformed (dropped), a log record at one is Corruption at Open. Together
// with the acceptance window it keeps chosen_end + window from overflowing.
constexpr uint64_t kMaxInstanceId = uint64_t{1} << 62;
// A value envelope (value.h) is the application's bytes plus this header.
constexpr size_t kEnvelopeOverhead = 16;
// Bytes a PaxosMsg may take beyond its value bytes: the header fields, and
// per reported entry (AcceptedEntry / LearnedEntry) its instance, ballot,
// checksum, flags and length prefixes. Generous upper bounds (protobuf
// varints take at most 10 bytes each).
constexpr size_t kMessageHeaderBytes = 256;
constexpr size_t kEntryOverheadBytes = 64;

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
  // The acceptance window. A node takes part in instances below its own
  // chosen_end + window only: its acceptor refuses an ACCEPT at or above it
  // with ACCEPT_BEHIND (the proposer keeps its ballot; this node catches up
  // through its learner), its learner ignores chosen values at or above it,
  // and its proposer never proposes (values, noop fillers) at or above it.
  // So an acceptor holds accepted-but-unapplied values for at most `window`
  // instances, which bounds a PROMISE to `window` entries and recovery to the
  // log's records plus `window` ids. Should be equal on every member.
  // Default 256. REQUIRES max_inflight <= window <= 2^20.
  size_t window = 256;
  // Largest value Propose() takes; larger ones fail with TooLarge. Replicated
  // values (envelopes: max_value_bytes + kEnvelopeOverhead) larger than that,
  // or that are not envelopes, are dropped as garbage wherever they arrive.
  // Default 4 MiB. REQUIRES 1 <= max_value_bytes <= 2^31.
  size_t max_value_bytes = 4 << 20;
  // A PROMISE carries at most this many value bytes. When the accepted and
  // chosen-but-unapplied values it must report do not fit, it reports those
  // below some instance t (at least one value) and says so (reported_end =
  // t); the proposer then uses its ballot only below t and runs phase 1
  // again (higher ballot) to go beyond. Default 32 MiB.
  // REQUIRES >= max_value_bytes + kEnvelopeOverhead.
  size_t promise_budget_bytes = 32u << 20;
  // Catch-up: at most this many chosen values per LEARN_VALUES message.
  // Default 64. REQUIRES 1 <= catchup_batch_count <= 2^20.
  size_t catchup_batch_count = 64;
  // Catch-up: a LEARN_VALUES message stops growing once it holds this many
  // value bytes (it always holds at least one value). Default 1 MiB.
  // REQUIRES <= 2^31.
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
  // The largest envelope this core replicates.
  size_t MaxEnvelopeBytes() const { return max_value_bytes + kEnvelopeOverhead; }
  // An upper bound on the size of every message this core sends, given that
  // every chosen value it serves obeys max_value_bytes:
  //   max( MaxEnvelopeBytes() + kMessageHeaderBytes,                 ACCEPT, CHOSEN
  //        promise_budget_bytes + window * kEntryOverheadBytes
  //          + kMessageHeaderBytes,                                  PROMISE
  //        catchup_batch_bytes + MaxEnvelopeBytes()
  //          + catchup_batch_count * kEntryOverheadBytes
  //          + kMessageHeaderBytes )                                 LEARN_VALUES
  // A transport must carry frames of at least this size (node/ validates it).
  size_t MaxMessageBytes() const;
  // A majority of members.
  size_t Majority() const { return members.size() / 2 + 1; }
  bool IsMember(uint64_t id) const;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_OPTIONS_H_
