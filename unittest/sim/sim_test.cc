#include "unittest/sim/sim.h"

#include <cstdio>
#include <regex>
#include <string>

#include <gtest/gtest.h>

namespace chorus {
namespace sim {
namespace {

TEST(SimTest, SameSeedSameRun) {
  SimOptions o;
  o.seed = 42;
  SimResult a = RunSim(o);
  SimResult b = RunSim(o);
  EXPECT_FALSE(a.violation) << a.what;
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.chosen, b.chosen);
}

TEST(SimTest, DifferentSeedsDiffer) {
  SimOptions o;
  o.seed = 1;
  SimResult a = RunSim(o);
  o.seed = 2;
  SimResult b = RunSim(o);
  EXPECT_NE(a.hash, b.hash);
}

// Runs seeds 1..20 of `o`, expecting no violation, and returns the sums of
// the counters the tests look at.
SimResult CleanRuns(SimOptions o) {
  SimResult sum;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    o.seed = seed;
    SimResult r = RunSim(o);
    EXPECT_FALSE(r.violation) << "seed " << seed << " nodes " << o.nodes << ": " << r.what;
    sum.violation = sum.violation || r.violation;
    sum.chosen += r.chosen;
    sum.proposals_ok += r.proposals_ok;
    sum.faults += r.faults;
    sum.crashes += r.crashes;
    sum.catchup_reads += r.catchup_reads;
    sum.behind += r.behind;
  }
  return sum;
}

TEST(SimTest, CleanRunsChooseValuesAndInjectFaults) {
  for (int nodes : {3, 5}) {
    SimOptions o;
    o.nodes = nodes;
    const SimResult r = CleanRuns(o);
    ASSERT_FALSE(r.violation);
    const uint64_t chosen = r.chosen, ok = r.proposals_ok, faults = r.faults,
                   crashes = r.crashes, catchup_reads = r.catchup_reads;
    // The runs are not vacuous: values got chosen under faults and crashes,
    // and lagging nodes caught up from their peers' logs (the reads the
    // runtime serves off its loop), not only from their caches.
    EXPECT_GT(chosen, 0u);
    EXPECT_GT(ok, 0u);
    EXPECT_GT(faults, 0u);
    EXPECT_GT(crashes, 0u);
    EXPECT_GT(catchup_reads, 0u);
  }
}

// What a mutation's first violation must say: the checker saw the broken
// rule's consequence, not some unrelated failure (a crash in recovery, a
// liveness timeout).
constexpr char kBrokePromise[] = "it broke a promise";
constexpr char kDiverged[] =
    "(conflicting chosen values|but another node learned|changed across a restart: it learned)";
// A node restarts from a log that lacks what it had promised, accepted or learned.
constexpr char kRecovery[] = "(failed to recover|changed across a restart|cannot replay)";

struct MutationCase {
  paxos::TestMutation mutation;
  const char* expect;  // regex the first violation's message must match
  bool mixed_options;  // only reachable when members' options differ
};

// Every mutation, and what catches it. A mutation added to paxos/options.h
// without a line here fails EveryMutationHasACase.
const MutationCase kCases[] = {
    {paxos::TestMutation::kForgetPromise, kBrokePromise, false},
    {paxos::TestMutation::kAcceptLowerBallot, kBrokePromise, false},
    {paxos::TestMutation::kAcceptNotPersisted, kDiverged, false},
    {paxos::TestMutation::kAcceptedNotRecovered, kDiverged, false},
    {paxos::TestMutation::kPromiseDropsFar, kDiverged, false},
    {paxos::TestMutation::kPromiseDropsLast, kDiverged, false},
    {paxos::TestMutation::kPromiseDropsChosen, kDiverged, false},
    {paxos::TestMutation::kUnsyncedWrites, kBrokePromise, false},
    {paxos::TestMutation::kIgnoreReportedEnd, kDiverged, false},
    {paxos::TestMutation::kAdoptFirstOnly, kDiverged, false},
    {paxos::TestMutation::kAdoptLowestBallot, kDiverged, false},
    {paxos::TestMutation::kFastPathWhilePreparing, kDiverged, false},
    {paxos::TestMutation::kAcceptPromiseNotPersisted, kBrokePromise, false},
    {paxos::TestMutation::kFarChosenUnbounded, kDiverged, true},
    {paxos::TestMutation::kRoundKeepsFirst, kRecovery, false},
};

void PrintTo(const MutationCase& c, std::ostream* os) { *os << MutationName(c.mutation); }

// The bound: each caught within 500 seeds x 2000 steps on 3 nodes.
constexpr uint64_t kMaxSeeds = 500;

class MutationTest : public ::testing::TestWithParam<MutationCase> {};

TEST_P(MutationTest, IsCaughtWithItsViolation) {
  const MutationCase& c = GetParam();
  SimOptions o;
  o.mutation = c.mutation;
  o.nodes = 3;
  o.steps = 2000;
  o.mixed_options = c.mixed_options;
  SimResult r;
  uint64_t seed = 1;
  for (; seed <= kMaxSeeds; ++seed) {
    o.seed = seed;
    r = RunSim(o);
    if (r.violation) break;
  }
  ASSERT_TRUE(r.violation) << MutationName(c.mutation) << " survived " << kMaxSeeds << " seeds";
  EXPECT_TRUE(std::regex_search(r.what, std::regex(c.expect)))
      << MutationName(c.mutation) << " seed " << seed << ": " << r.what;
  std::printf("%s: first caught at seed %llu: %s\n", MutationName(c.mutation),
              static_cast<unsigned long long>(seed), r.what.c_str());
}

INSTANTIATE_TEST_SUITE_P(Sim, MutationTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<MutationCase>& info) {
                           return std::string(MutationName(info.param.mutation));
                         });

TEST(MutationTest, EveryMutationHasACase) {
  for (paxos::TestMutation m : AllMutations()) {
    bool found = false;
    for (const auto& c : kCases) found = found || c.mutation == m;
    EXPECT_TRUE(found) << MutationName(m) << " has no MutationCase";
  }
}

TEST(MutationTest, NamesRoundTrip) {
  for (paxos::TestMutation m : AllMutations()) {
    paxos::TestMutation parsed = paxos::TestMutation::kNone;
    ASSERT_TRUE(ParseMutation(MutationName(m), &parsed)) << MutationName(m);
    EXPECT_EQ(parsed, m);
  }
  paxos::TestMutation m;
  EXPECT_FALSE(ParseMutation("no_such_mutation", &m));
}

// Mixed per-node options (windows, pipeline depths, PROMISE budgets that
// differ between members and across restarts) stay safe and live.
TEST(SimTest, MixedOptionsRunsAreClean) {
  for (int nodes : {3, 5}) {
    SimOptions o;
    o.nodes = nodes;
    o.mixed_options = true;
    const SimResult r = CleanRuns(o);
    ASSERT_FALSE(r.violation);
    const uint64_t ok = r.proposals_ok, behind = r.behind;
    EXPECT_GT(ok, 0u);
    EXPECT_GT(behind, 0u);  // the differing windows were exercised
  }
}

// Group commit runs in the simulation: rounds merge several core steps
// (and with max_round_steps = 1 none do), and a run stays reproducible.
TEST(SimTest, NodesExecuteMergedRounds) {
  SimOptions o;
  uint64_t merged = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    o.seed = seed;
    SimResult r = RunSim(o);
    ASSERT_FALSE(r.violation) << "seed " << seed << ": " << r.what;
    merged += r.merged_rounds;
  }
  EXPECT_GT(merged, 0u);
  o.max_round_steps = 1;
  SimResult single = RunSim(o);
  EXPECT_FALSE(single.violation) << single.what;
  EXPECT_EQ(single.merged_rounds, 0u);
}

// The mutation only breaks rounds that hold two states of one key: with one
// step per round the run is the unmutated one, event for event.
TEST(SimTest, RoundKeepsFirstNeedsMergedRounds) {
  SimOptions o;
  o.seed = 4;
  o.max_round_steps = 1;
  SimResult clean = RunSim(o);
  o.mutation = paxos::TestMutation::kRoundKeepsFirst;
  SimResult mutated = RunSim(o);
  EXPECT_FALSE(mutated.violation) << mutated.what;
  EXPECT_EQ(clean.hash, mutated.hash);
}

}  // namespace
}  // namespace sim
}  // namespace chorus
