// Acceptor rules, driven through a Core with hand-made messages.
#include <gtest/gtest.h>

#include "paxos/acceptor.h"
#include "paxos/core.h"
#include "paxos/value.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace paxos {
namespace acceptor_test {
namespace {

class AcceptorTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(TestMutation::kNone); }

  void Reopen(TestMutation m) {
    CoreOptions o;
    o.cluster_id = 5;
    o.self = 1;
    o.members = {1, 2, 3};
    o.test_mutation = m;
    core_.reset();
    ASSERT_TRUE(Core::Open(o, &log_, &core_).ok());
  }

  PaxosMsg Msg(MsgType type, uint64_t instance, Ballot b, uint64_t from = 2) {
    PaxosMsg m;
    m.set_type(type);
    m.set_cluster_id(5);
    m.set_from(from);
    m.set_instance(instance);
    b.ToPb(m.mutable_ballot());
    return m;
  }

  // Delivers `m`, executes the persist part, returns the single reply.
  PaxosMsg Step(const PaxosMsg& m, Outputs* out) {
    EXPECT_TRUE(core_->OnMessage(m.SerializeAsString(), out).ok());
    if (!out->persist.empty()) log_.Write(out->persist, out->sync);
    PaxosMsg reply;
    EXPECT_EQ(out->messages.size(), 1u);
    if (!out->messages.empty()) {
      EXPECT_EQ(out->messages[0].to, m.from());
      EXPECT_TRUE(reply.ParseFromString(out->messages[0].bytes));
    }
    return reply;
  }

  sim::MemLogStorage log_;
  std::unique_ptr<Core> core_;
};

TEST_F(AcceptorTest, PromisesHigherBallotAndPersistsBeforeReplying) {
  Outputs out;
  PaxosMsg r = Step(Msg(PREPARE, 0, Ballot(3, 2)), &out);
  EXPECT_EQ(r.type(), PROMISE);
  EXPECT_EQ(Ballot::FromPb(r.ballot()), Ballot(3, 2));
  // The promise is in the same step's persist batch, synced: the runtime
  // writes it before it sends the reply.
  ASSERT_EQ(out.persist.variables.size(), 1u);
  EXPECT_EQ(out.persist.variables[0].first, kPromiseVariable);
  EXPECT_TRUE(out.sync);
  EXPECT_EQ(core_->promised(), Ballot(3, 2));
}

TEST_F(AcceptorTest, RejectsLowerPrepareWithItsPromise) {
  Outputs out;
  Step(Msg(PREPARE, 0, Ballot(3, 2)), &out);
  PaxosMsg r = Step(Msg(PREPARE, 0, Ballot(2, 3), 3), &out);
  EXPECT_EQ(r.type(), PREPARE_REJECT);
  EXPECT_EQ(Ballot::FromPb(r.promised()), Ballot(3, 2));
  EXPECT_TRUE(out.persist.empty());
  EXPECT_EQ(core_->promised(), Ballot(3, 2));
}

TEST_F(AcceptorTest, AcceptsAtOrAbovePromiseRejectsBelow) {
  Outputs out;
  Step(Msg(PREPARE, 0, Ballot(3, 2)), &out);
  PaxosMsg a = Msg(ACCEPT, 0, Ballot(2, 3), 3);
  a.set_value(EncodeValue(3, 1, "low"));
  PaxosMsg r = Step(a, &out);
  EXPECT_EQ(r.type(), ACCEPT_REJECT);
  EXPECT_TRUE(out.persist.empty());

  a = Msg(ACCEPT, 0, Ballot(3, 2));
  a.set_value(EncodeValue(2, 1, "v"));
  r = Step(a, &out);
  EXPECT_EQ(r.type(), ACCEPTED);
  ASSERT_EQ(out.persist.records.size(), 1u);
  EXPECT_EQ(out.persist.records[0].first, 0u);
  EXPECT_TRUE(out.sync);
  InstanceRecord rec;
  ASSERT_TRUE(rec.ParseFromString(out.persist.records[0].second));
  EXPECT_EQ(Ballot::FromPb(rec.accepted_ballot()), Ballot(3, 2));
  EXPECT_FALSE(rec.chosen());
}

TEST_F(AcceptorTest, PromiseCoversLaterInstancesAndReportsAcceptedValues) {
  Outputs out;
  Step(Msg(PREPARE, 0, Ballot(1, 2)), &out);
  for (uint64_t i : {0, 4}) {
    PaxosMsg a = Msg(ACCEPT, i, Ballot(1, 2));
    a.set_value(EncodeValue(2, i, "v" + std::to_string(i)));
    EXPECT_EQ(Step(a, &out).type(), ACCEPTED);
  }
  // A prepare for instance 2 covers 2 and later: it reports instance 4 only.
  PaxosMsg r = Step(Msg(PREPARE, 2, Ballot(2, 3), 3), &out);
  EXPECT_EQ(r.type(), PROMISE);
  ASSERT_EQ(r.accepted_size(), 1);
  EXPECT_EQ(r.accepted(0).instance(), 4u);
  EXPECT_EQ(Ballot::FromPb(r.accepted(0).ballot()), Ballot(1, 2));
  // The group promise now rejects the old ballot at any instance, even 0.
  PaxosMsg a = Msg(ACCEPT, 0, Ballot(1, 2));
  a.set_value(EncodeValue(2, 9, "again"));
  EXPECT_EQ(Step(a, &out).type(), ACCEPT_REJECT);
}

TEST_F(AcceptorTest, PromiseSurvivesRestart) {
  Outputs out;
  Step(Msg(PREPARE, 0, Ballot(4, 2)), &out);
  Reopen(TestMutation::kNone);
  EXPECT_EQ(core_->promised(), Ballot(4, 2));
  PaxosMsg a = Msg(ACCEPT, 0, Ballot(3, 3), 3);
  a.set_value(EncodeValue(3, 1, "x"));
  EXPECT_EQ(Step(a, &out).type(), ACCEPT_REJECT);
}

TEST_F(AcceptorTest, MutationsBreakTheRules) {
  Reopen(TestMutation::kForgetPromise);
  Outputs out;
  Step(Msg(PREPARE, 0, Ballot(4, 2)), &out);
  EXPECT_TRUE(out.persist.variables.empty());
  Reopen(TestMutation::kForgetPromise);
  EXPECT_TRUE(core_->promised().IsNull());

  Reopen(TestMutation::kAcceptLowerBallot);
  Step(Msg(PREPARE, 0, Ballot(9, 2)), &out);
  PaxosMsg a = Msg(ACCEPT, 0, Ballot(1, 3), 3);
  a.set_value(EncodeValue(3, 1, "x"));
  EXPECT_EQ(Step(a, &out).type(), ACCEPTED);
}

}  // namespace
}  // namespace acceptor_test
}  // namespace paxos
}  // namespace chorus
