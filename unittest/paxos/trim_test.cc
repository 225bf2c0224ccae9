// Log trimming behind checkpoints (paxos/trim.h): the trim write, its
// bounds, recovery of a trimmed log, and the "use a checkpoint" answers.
#include <gtest/gtest.h>

#include "paxos/catchup.h"
#include "paxos/round.h"
#include "paxos/trim.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace trim_test {
namespace {

using testing::Harness;

// Node 0 of a 3-node harness with `keep` (log_keep_instances) proposes `n`
// values; every node chose them.
void ChooseValues(Harness* h, uint64_t first_token, uint64_t n) {
  for (uint64_t t = first_token; t < first_token + n; ++t) {
    ASSERT_TRUE(h->Propose(0, t, "v" + std::to_string(t)).ok());
    h->Pump();
  }
}

std::function<void(CoreOptions*)> Keep(uint64_t keep, size_t cache = 1024) {
  return [keep, cache](CoreOptions* o) {
    o->log_keep_instances = keep;
    o->chosen_cache_size = cache;
  };
}

// The chained checksum node i's log stores for `instance`.
uint32_t StoredChecksum(Harness* h, int i, uint64_t instance) {
  std::string bytes;
  EXPECT_TRUE(h->node(i).log.Get(instance, &bytes).ok());
  InstanceRecord rec;
  EXPECT_TRUE(rec.ParseFromString(bytes));
  EXPECT_TRUE(rec.chosen());
  return rec.checksum();
}

// The LogStartPb a batch writes, if any.
bool BatchLogStart(const LogWriteBatch& b, LogStartPb* pb) {
  for (const auto& v : b.variables) {
    if (v.first == kLogStartVariable) return pb->ParseFromString(v.second);
  }
  return false;
}

void OnCheckpoint(Harness* h, int i, uint64_t instance, uint64_t limit, Outputs* out) {
  h->core(i)->OnCheckpoint(instance, limit, out);
  Outputs copy = *out;
  h->Exec(i, &copy);
}

// Node 0 proposes values 1..n, then node i trims behind a checkpoint at n
// and restarts. Returns node i's chain checksum before the restart.
uint32_t TrimAtEndAndRestart(Harness* h, int i, uint64_t n) {
  ChooseValues(h, 1, n);
  const uint32_t chain = h->core(i)->chain_checksum();
  Outputs out;
  OnCheckpoint(h, i, n, UINT64_MAX, &out);
  h->Open(i);
  return chain;
}

TEST(TrimTest, OneSyncedBatchOfDeleteBelowAndLogStartKeepingTheMargin) {
  Harness h(3, Keep(3));
  ChooseValues(&h, 1, 10);
  ASSERT_EQ(h.core(0)->chosen_end(), 10u);
  const uint32_t checksum4 = StoredChecksum(&h, 0, 4);
  Outputs out;
  OnCheckpoint(&h, 0, 8, UINT64_MAX, &out);
  // T = 8 - 3: delete_below and the log start in one synced batch.
  EXPECT_EQ(out.persist.delete_below, 5u);
  EXPECT_TRUE(out.sync);
  LogStartPb pb;
  ASSERT_TRUE(BatchLogStart(out.persist, &pb));
  EXPECT_EQ(pb.instance(), 5u);
  EXPECT_EQ(pb.checksum(), checksum4);
  EXPECT_TRUE(out.messages.empty());
  EXPECT_TRUE(out.errors.empty());
  EXPECT_EQ(h.core(0)->log_start(), 5u);
  EXPECT_EQ(h.core(0)->stats().trims, 1u);
  uint64_t min = 0;
  ASSERT_TRUE(h.node(0).log.GetMinInstanceId(&min).ok());
  EXPECT_EQ(min, 5u);
  ChosenValue v;
  EXPECT_TRUE(h.core(0)->ReadChosen(4, &v).IsNotFound());
  EXPECT_TRUE(h.core(0)->ReadChosen(5, &v).ok());
  // The same checkpoint again, or an older one: nothing to write.
  OnCheckpoint(&h, 0, 8, UINT64_MAX, &out);
  EXPECT_TRUE(out.persist.empty());
  OnCheckpoint(&h, 0, 6, UINT64_MAX, &out);
  EXPECT_TRUE(out.persist.empty());
  EXPECT_EQ(h.core(0)->stats().trims, 1u);
}

TEST(TrimTest, TrimLimitAndTheMarginBoundTheTrim) {
  Harness h(3, Keep(0));
  ChooseValues(&h, 1, 10);
  Outputs out;
  OnCheckpoint(&h, 0, 9, /*trim_limit=*/3, &out);
  EXPECT_EQ(out.persist.delete_below, 3u);
  EXPECT_EQ(h.core(0)->log_start(), 3u);
  OnCheckpoint(&h, 0, 9, UINT64_MAX, &out);  // no margin: right at the checkpoint
  EXPECT_EQ(out.persist.delete_below, 9u);
  // A margin larger than the checkpoint trims nothing.
  Harness wide(3, Keep(50));
  ChooseValues(&wide, 1, 10);
  OnCheckpoint(&wide, 0, 10, UINT64_MAX, &out);
  EXPECT_TRUE(out.persist.empty());
  EXPECT_EQ(wide.core(0)->log_start(), 0u);
}

TEST(TrimTest, NeverBeyondTheCheckpointNorChosenEnd) {
  Harness h(3, Keep(2));
  ChooseValues(&h, 1, 10);
  Outputs out;
  OnCheckpoint(&h, 0, 25, UINT64_MAX, &out);  // a runtime bug: clamped, reported
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_TRUE(out.errors[0].IsInvalidArgument()) << out.errors[0].ToString();
  EXPECT_EQ(out.persist.delete_below, 8u);  // chosen_end 10 - keep 2
  EXPECT_LE(h.core(0)->log_start(), h.core(0)->chosen_end());
}

TEST(TrimTest, RecoveryRestartsTheChainAtTheLogStart) {
  Harness h(3, Keep(4));
  const uint32_t chain = TrimAtEndAndRestart(&h, 1, 10);
  EXPECT_EQ(h.core(1)->log_start(), 6u);
  EXPECT_EQ(h.core(1)->chosen_end(), 10u);
  EXPECT_EQ(h.core(1)->chain_checksum(), chain);
  ChosenValue v;
  EXPECT_TRUE(h.core(1)->ReadChosen(5, &v).IsNotFound());
  ASSERT_TRUE(h.core(1)->ReadChosen(6, &v).ok());
  EXPECT_EQ(v.value, "v7");
  // The restarted node goes on: its chain extends the peers'.
  ChooseValues(&h, 11, 3);
  EXPECT_EQ(h.core(1)->chosen_end(), 13u);
  EXPECT_TRUE(h.node(1).errors.empty());
  EXPECT_FALSE(h.core(1)->halted());
}

TEST(TrimTest, RecoveryOfALogTrimmedToItsEndHasNoRecordButAChosenEnd) {
  Harness h(3, Keep(0));
  const uint32_t chain = TrimAtEndAndRestart(&h, 2, 6);
  uint64_t min = 0;
  EXPECT_TRUE(h.node(2).log.GetMinInstanceId(&min).IsNotFound());
  EXPECT_EQ(h.core(2)->chosen_end(), 6u);
  EXPECT_EQ(h.core(2)->log_start(), 6u);
  EXPECT_EQ(h.core(2)->chain_checksum(), chain);
  ChooseValues(&h, 7, 2);
  EXPECT_EQ(h.core(2)->chosen_end(), 8u);
  EXPECT_TRUE(h.node(2).errors.empty());
}

TEST(TrimTest, ARecordBelowTheLogStartOrABadVariableIsCorruption) {
  Harness h(3, Keep(0));
  ChooseValues(&h, 1, 6);
  Outputs out;
  OnCheckpoint(&h, 0, 4, UINT64_MAX, &out);
  InstanceRecord rec;
  rec.set_value(std::string(16, 'x'));
  rec.set_chosen(true);
  h.node(0).log.OverwriteRecord(2, rec.SerializeAsString());
  std::unique_ptr<Core> core;
  Status s = Core::Open(h.Options(0), &h.node(0).log, &core);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("below the log start"), std::string::npos) << s.ToString();

  Harness g(3, Keep(0));
  ChooseValues(&g, 1, 6);
  OnCheckpoint(&g, 0, 4, UINT64_MAX, &out);
  g.node(0).log.CorruptVariable(kLogStartVariable);
  s = Core::Open(g.Options(0), &g.node(0).log, &core);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

using testing::AskLearn;

// The LEARN_VALUES messages of `out`, parsed.
std::vector<PaxosMsg> Batches(const Outputs& out) {
  std::vector<PaxosMsg> v;
  for (const PaxosMsg& m : testing::ParseMessages(out)) {
    if (m.type() == LEARN_VALUES) v.push_back(m);
  }
  return v;
}

TEST(TrimTest, BelowTheLogStartTheAnswerIsUseACheckpointWithinTheMarginValues) {
  Harness h(3, Keep(4));
  ChooseValues(&h, 1, 10);
  Outputs out;
  OnCheckpoint(&h, 0, 10, UINT64_MAX, &out);
  ASSERT_EQ(h.core(0)->log_start(), 6u);
  // Below the log start: "use a checkpoint", no entries.
  ASSERT_TRUE(h.core(0)->OnMessage(AskLearn(3, 2).SerializeAsString(), &out).ok());
  std::vector<PaxosMsg> b = Batches(out);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].log_start(), 6u);
  EXPECT_EQ(b[0].learned_size(), 0);
  EXPECT_EQ(b[0].instance(), 2u);
  EXPECT_TRUE(out.catchup_reads.empty());
  EXPECT_EQ(h.core(0)->stats().checkpoint_replies, 1u);
  // Within the margin: values, as before.
  ASSERT_TRUE(h.core(0)->OnMessage(AskLearn(3, 7).SerializeAsString(), &out).ok());
  b = Batches(out);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].log_start(), 0u);
  ASSERT_EQ(b[0].learned_size(), 3);
  EXPECT_EQ(b[0].learned(0).instance(), 7u);
  EXPECT_EQ(h.core(0)->stats().checkpoint_replies, 1u);
}

TEST(TrimTest, AReadPlannedBeforeATrimAnswersUseACheckpoint) {
  Harness h(3, Keep(0, /*cache=*/2));
  ChooseValues(&h, 1, 12);
  Outputs out;
  // Beyond the cache: the core plans a read ...
  ASSERT_TRUE(h.core(0)->OnMessage(AskLearn(3, 3).SerializeAsString(), &out).ok());
  ASSERT_EQ(out.catchup_reads.size(), 1u);
  const CatchupRead read = out.catchup_reads[0];
  // ... and a later round trims before the runtime serves it.
  Outputs trim;
  OnCheckpoint(&h, 0, 8, UINT64_MAX, &trim);
  CatchupReply reply;
  EXPECT_TRUE(ReadCatchup(read, &h.node(0).log, &reply).IsNotFound());
  EXPECT_EQ(reply.entries, 0u);
  EXPECT_EQ(reply.log_start, 8u);
  ASSERT_FALSE(reply.bytes.empty());
  PaxosMsg m;
  ASSERT_TRUE(m.ParseFromString(reply.bytes));
  EXPECT_EQ(m.type(), LEARN_VALUES);
  EXPECT_EQ(m.log_start(), 8u);
  EXPECT_EQ(m.instance(), 3u);
  EXPECT_EQ(m.from(), 1u);
  EXPECT_EQ(m.learned_size(), 0);
  // A read at or above the log start is served as before.
  CatchupRead above = read;
  above.first = 9;
  EXPECT_TRUE(ReadCatchup(above, &h.node(0).log, &reply).ok());
  EXPECT_EQ(reply.entries, 3u);
  EXPECT_EQ(reply.log_start, 0u);
}

TEST(TrimTest, TheAskerReportsCheckpointNeededAndAsksOnTicksOnly) {
  Harness h(3, Keep(0));
  h.Isolate(2);
  ChooseValues(&h, 1, 12);
  Outputs out;
  for (int i = 0; i < 2; ++i) OnCheckpoint(&h, i, 12, UINT64_MAX, &out);
  h.Heal(2);
  // Node 2 hears of chosen_end 12 and asks; the peers answer "use a
  // checkpoint": node 2 reports it once, naming the peer and its log start.
  ChooseValues(&h, 13, 1);
  ASSERT_FALSE(h.node(2).checkpoints_needed.empty());
  EXPECT_EQ(h.node(2).checkpoints_needed[0].log_start, 12u);
  EXPECT_TRUE(h.node(2).checkpoints_needed[0].peer == 1u ||
              h.node(2).checkpoints_needed[0].peer == 2u);
  const size_t reported = h.node(2).checkpoints_needed.size();
  EXPECT_EQ(h.core(2)->stats().checkpoints_needed, reported);
  EXPECT_EQ(h.core(2)->chosen_end(), 0u);
  // More traffic does not make it ask again (each answer would be the same) ...
  const uint64_t asked = h.core(2)->stats().catchup_requests;
  ChooseValues(&h, 14, 3);
  EXPECT_EQ(h.core(2)->stats().catchup_requests, asked);
  // ... its learn tick does (a lost answer or a failed transfer is retried).
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  EXPECT_GT(h.core(2)->stats().catchup_requests, asked);
  EXPECT_GT(h.node(2).checkpoints_needed.size(), reported);
  EXPECT_TRUE(h.node(2).errors.empty());
}

TEST(TrimTest, ALogStartAtTheCeilingIsMalformed) {
  Harness h(3);
  PaxosMsg m;
  m.set_type(LEARN_VALUES);
  m.set_cluster_id(9);
  m.set_from(2);
  m.set_log_start(kMaxInstanceId);
  Outputs out;
  EXPECT_TRUE(h.core(0)->OnMessage(m.SerializeAsString(), &out).IsCorruption());
  EXPECT_TRUE(out.checkpoint_needed.empty());
  EXPECT_EQ(h.core(0)->stats().garbage_messages, 1u);
}

TEST(TrimTest, ARoundMergesCheckpointNeeds) {
  Round round;
  Outputs step;
  EXPECT_TRUE(round.empty());
  step.checkpoint_needed.push_back({2, 40});
  round.Add(&step);
  EXPECT_FALSE(round.empty());
  step.checkpoint_needed.push_back({3, 50});
  round.Add(&step);
  Outputs merged;
  round.Take(&merged);
  ASSERT_EQ(merged.checkpoint_needed.size(), 2u);
  EXPECT_EQ(merged.checkpoint_needed[0].peer, 2u);
  EXPECT_EQ(merged.checkpoint_needed[1].log_start, 50u);
}

}  // namespace
}  // namespace trim_test
}  // namespace paxos
}  // namespace chorus
