// Learner: catch-up streaming, chained checksums, in-order delivery.
#include <gtest/gtest.h>

#include "paxos/value.h"
#include "unittest/paxos/harness.h"
#include "utils/crc32c.h"

namespace chorus {
namespace paxos {
namespace learner_test {
namespace {

using testing::Harness;

void Tweak(CoreOptions* o) {
  o->catchup_batch_count = 3;
  o->chosen_cache_size = 4;  // older values are served from the log
}

TEST(LearnerTest, LaggingNodeCatchesUpInBatchesFromTheLearnTimer) {
  Harness h(3, Tweak);
  h.Isolate(2);
  for (uint64_t t = 1; t <= 10; ++t) {
    ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
    h.Pump();
  }
  ASSERT_EQ(h.node(0).applied.size(), 10u);
  EXPECT_TRUE(h.node(2).applied.empty());
  h.Heal(2);
  // A learn tick without progress asks a peer; the stream continues with
  // CONFIRM_LEARN until node 2 has everything.
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  ASSERT_EQ(h.node(2).applied.size(), 10u);
  for (size_t k = 0; k < 10; ++k) {
    EXPECT_EQ(h.node(2).applied[k].instance, k);
    EXPECT_EQ(h.node(2).applied[k].value, h.node(0).applied[k].value);
  }
  EXPECT_EQ(h.core(2)->chosen_end(), 10u);
  EXPECT_GE(h.core(2)->stats().catchup_requests, 4u);  // 10 values, batches of 3
  EXPECT_TRUE(h.node(2).errors.empty());
}

TEST(LearnerTest, OutOfOrderChosenNoticesApplyInOrder) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "warmup").ok());
  h.Pump();
  // Deliver chosen notices for instances 2 then 1 by hand to node 2.
  auto notice = [](uint64_t inst, const std::string& v) {
    PaxosMsg m;
    m.set_type(CHOSEN);
    m.set_cluster_id(9);
    m.set_from(1);
    m.set_instance(inst);
    m.set_value(EncodeValue(1, 100 + inst, v));
    return m.SerializeAsString();
  };
  ASSERT_TRUE(h.Deliver(2, notice(2, "two")).ok());
  EXPECT_EQ(h.node(2).applied.size(), 1u);  // 2 waits for 1
  ASSERT_TRUE(h.Deliver(2, notice(1, "one")).ok());
  ASSERT_EQ(h.node(2).applied.size(), 3u);
  EXPECT_EQ(h.node(2).applied[1].value, "one");
  EXPECT_EQ(h.node(2).applied[2].value, "two");
  // A duplicate notice is not applied twice.
  ASSERT_TRUE(h.Deliver(2, notice(2, "two")).ok());
  EXPECT_EQ(h.node(2).applied.size(), 3u);
}

TEST(LearnerTest, ChecksumMismatchHaltsInsteadOfApplying) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  ASSERT_EQ(h.node(2).applied.size(), 1u);
  const std::string v = EncodeValue(1, 55, "b");
  PaxosMsg m;
  m.set_type(LEARN_VALUES);
  m.set_cluster_id(9);
  m.set_from(1);
  m.set_chosen_end(2);
  LearnedEntry* e = m.add_learned();
  e->set_instance(1);
  e->set_value(v);
  e->set_checksum(12345);  // not the chain of node 2
  h.Deliver(2, m.SerializeAsString());
  EXPECT_TRUE(h.core(2)->halted());
  EXPECT_EQ(h.node(2).applied.size(), 1u);
  ASSERT_EQ(h.node(2).errors.size(), 1u);
  EXPECT_TRUE(h.node(2).errors[0].IsCorruption());
  // A halted core refuses further input.
  EXPECT_TRUE(h.Propose(2, 9, "x").IsStopped());
}

TEST(LearnerTest, MatchingChainedChecksumIsAccepted) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  // The chain: checksum(1) extends checksum(0), which extends 0.
  std::string rec0;
  ASSERT_TRUE(h.node(0).log.Get(0, &rec0).ok());
  InstanceRecord r0;
  ASSERT_TRUE(r0.ParseFromString(rec0));
  EXPECT_EQ(r0.checksum(), crc32c::Value(r0.value()));
  const std::string v1 = EncodeValue(1, 56, "b");
  PaxosMsg m;
  m.set_type(LEARN_VALUES);
  m.set_cluster_id(9);
  m.set_from(1);
  m.set_chosen_end(2);
  LearnedEntry* e = m.add_learned();
  e->set_instance(1);
  e->set_value(v1);
  e->set_checksum(crc32c::Extend(r0.checksum(), v1.data(), v1.size()));
  h.Deliver(2, m.SerializeAsString());
  EXPECT_FALSE(h.core(2)->halted());
  ASSERT_EQ(h.node(2).applied.size(), 2u);
  EXPECT_EQ(h.node(2).applied[1].value, "b");
}

}  // namespace
}  // namespace learner_test
}  // namespace paxos
}  // namespace chorus
