#include "unittest/sim/sim.h"

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

TEST(SimTest, CleanRunsChooseValuesAndInjectFaults) {
  for (int nodes : {3, 5}) {
    SimOptions o;
    o.nodes = nodes;
    uint64_t chosen = 0, ok = 0, faults = 0, crashes = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      o.seed = seed;
      SimResult r = RunSim(o);
      ASSERT_FALSE(r.violation) << "seed " << seed << " nodes " << nodes << ": " << r.what;
      chosen += r.chosen;
      ok += r.proposals_ok;
      faults += r.faults;
      crashes += r.crashes;
    }
    // The runs are not vacuous: values got chosen under faults and crashes.
    EXPECT_GT(chosen, 0u);
    EXPECT_GT(ok, 0u);
    EXPECT_GT(faults, 0u);
    EXPECT_GT(crashes, 0u);
  }
}

// Returns the first seed in [1, max_seeds] whose run reports a violation, 0 if none.
uint64_t FirstViolatingSeed(paxos::TestMutation m, int nodes, uint64_t max_seeds) {
  SimOptions o;
  o.mutation = m;
  o.nodes = nodes;
  for (uint64_t seed = 1; seed <= max_seeds; ++seed) {
    o.seed = seed;
    if (RunSim(o).violation) return seed;
  }
  return 0;
}

TEST(SimTest, ForgetPromiseIsCaught) {
  EXPECT_NE(FirstViolatingSeed(paxos::TestMutation::kForgetPromise, 3, 300), 0u);
}

TEST(SimTest, AcceptLowerBallotIsCaught) {
  EXPECT_NE(FirstViolatingSeed(paxos::TestMutation::kAcceptLowerBallot, 3, 300), 0u);
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

TEST(SimTest, RoundKeepsFirstIsCaught) {
  EXPECT_NE(FirstViolatingSeed(paxos::TestMutation::kRoundKeepsFirst, 3, 300), 0u);
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
