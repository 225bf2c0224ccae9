// Stranded work: instances a quiet group would never decide. A node that
// installs a joiner's checkpoint keeps the configuration governing it
// (Membership::PrependOlder), so it can still run phase 1 there.
#include <gtest/gtest.h>

#include <string>

#include "unittest/paxos/harness.h"
#include "unittest/paxos/membership_helpers.h"

namespace chorus {
namespace paxos {
namespace stranded_test {
namespace {

using testing::Change;
using testing::Cluster;
using testing::Harness;
using testing::M;
using testing::ProposeChange;

// Node 3 installs a checkpoint at 4 made by joiner 4, whose history starts
// at the change (in force from 8): without node 3's own genesis it would
// not know At(4).
Membership InstalledFromAJoiner(TestMutation m) {
  Harness h(4, Cluster(3, m));
  h.Isolate(2);
  EXPECT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, false, 44)})).ok());
  h.Pump();
  h.Fire(3, TimerKind::kLearn);
  h.Pump();
  EXPECT_GE(h.core(3)->chosen_end(), 5u);
  const Membership at = h.core(3)->MembershipAt(4);
  EXPECT_EQ(at.At(4).VoterCount(), 0u);  // the joiner's view
  std::string bytes;
  EXPECT_TRUE(h.node(0).log.Get(3, &bytes).ok());
  InstanceRecord rec;
  EXPECT_TRUE(rec.ParseFromString(bytes));
  Outputs out;
  EXPECT_TRUE(h.core(2)->InstallCheckpoint(4, rec.checksum(), &at, &out).ok());
  h.Exec(2, &out);
  h.Open(2);  // and it was persisted
  h.Heal(2);
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(2)->chosen_end(), h.core(0)->chosen_end());  // the chain holds
  EXPECT_EQ(h.core(2)->membership().Latest(), h.core(0)->membership().Latest());
  return h.core(2)->membership();
}

TEST(StrandedTest, AnInstallOfAJoinersCheckpointKeepsTheConfigurationGoverningIt) {
  const Membership m = InstalledFromAJoiner(TestMutation::kNone);
  EXPECT_EQ(m.At(4).version, 0u);
  EXPECT_EQ(m.At(4).VoterCount(), 3u);
  EXPECT_EQ(InstalledFromAJoiner(TestMutation::kInstallDropsOlder).At(4).VoterCount(), 0u);
}

}  // namespace
}  // namespace stranded_test
}  // namespace paxos
}  // namespace chorus
