// The --mutation names of paxos::TestMutation (sim.h).
#include "unittest/sim/sim.h"

#include <string>
#include <vector>

namespace chorus {
namespace sim {

namespace {

struct MutationEntry {
  paxos::TestMutation mutation;
  const char* name;
};

// Every TestMutation, with its --mutation name.
constexpr MutationEntry kMutations[] = {
    {paxos::TestMutation::kNone, "none"},
    {paxos::TestMutation::kForgetPromise, "forget_promise"},
    {paxos::TestMutation::kAcceptLowerBallot, "accept_lower_ballot"},
    {paxos::TestMutation::kAcceptNotPersisted, "accept_not_persisted"},
    {paxos::TestMutation::kAcceptedNotRecovered, "accepted_not_recovered"},
    {paxos::TestMutation::kPromiseDropsFar, "promise_drops_far"},
    {paxos::TestMutation::kPromiseDropsLast, "promise_drops_last"},
    {paxos::TestMutation::kPromiseDropsChosen, "promise_drops_chosen"},
    {paxos::TestMutation::kUnsyncedWrites, "unsynced_writes"},
    {paxos::TestMutation::kIgnoreReportedEnd, "ignore_reported_end"},
    {paxos::TestMutation::kAdoptFirstOnly, "adopt_first_only"},
    {paxos::TestMutation::kAdoptLowestBallot, "adopt_lowest_ballot"},
    {paxos::TestMutation::kFastPathWhilePreparing, "fast_path_while_preparing"},
    {paxos::TestMutation::kAcceptPromiseNotPersisted, "accept_promise_not_persisted"},
    {paxos::TestMutation::kFarChosenUnbounded, "far_chosen_unbounded"},
    {paxos::TestMutation::kRoundKeepsFirst, "round_keeps_first"},
    {paxos::TestMutation::kVoteBeforePersist, "vote_before_persist"},
    {paxos::TestMutation::kLeaseIgnoresDrift, "lease_ignores_drift"},
    {paxos::TestMutation::kReadBeforeNoopCommit, "read_before_noop_commit"},
    {paxos::TestMutation::kPrepareIgnoresGrant, "prepare_ignores_grant"},
    {paxos::TestMutation::kNoStartupHold, "no_startup_hold"},
    {paxos::TestMutation::kTransferKeepsLease, "transfer_keeps_lease"},
    {paxos::TestMutation::kTrimIgnoresCheckpoint, "trim_ignores_checkpoint"},
    {paxos::TestMutation::kTrimIgnoresMargin, "trim_ignores_margin"},
    {paxos::TestMutation::kActivateAtOnce, "activate_at_once"},
    {paxos::TestMutation::kFollowerVotes, "follower_votes"},
    {paxos::TestMutation::kQuorumOfCurrentOnly, "quorum_of_current_only"},
    {paxos::TestMutation::kInstallDropsOlder, "install_drops_older"},
    {paxos::TestMutation::kNoFillRequest, "no_fill_request"},
    {paxos::TestMutation::kNoVoteRecovery, "no_vote_recovery"},
};

}  // namespace

const char* MutationName(paxos::TestMutation m) {
  for (const auto& e : kMutations) {
    if (e.mutation == m) return e.name;
  }
  return "?";
}

bool ParseMutation(const std::string& name, paxos::TestMutation* m) {
  for (const auto& e : kMutations) {
    if (name == e.name) {
      *m = e.mutation;
      return true;
    }
  }
  return false;
}

std::vector<paxos::TestMutation> AllMutations() {
  std::vector<paxos::TestMutation> all;
  for (const auto& e : kMutations) {
    if (e.mutation != paxos::TestMutation::kNone) all.push_back(e.mutation);
  }
  return all;
}

}  // namespace sim
}  // namespace chorus
