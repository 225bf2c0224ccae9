// Catch-up reads: ReadCatchup (the LEARN_VALUES reply built from the log
// alone) and the core planning a CatchupRead, instead of reading its log in
// the step, for values beyond its cache.
#include "paxos/catchup.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "paxos/core.h"
#include "paxos/round.h"
#include "paxos/value.h"
#include "unittest/paxos/harness.h"
#include "unittest/support/chosen_records.h"
#include "unittest/support/counting_log_storage.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace paxos {
namespace catchup_test {
namespace {

using testing::AskLearn;

using chorus::testing::ChosenRecord;
using chorus::testing::CountingLogStorage;
using chorus::testing::MemLogStorage;

std::string ValueAt(uint64_t i) { return EncodeValue(1, 100 + i, "value-" + std::to_string(i)); }

// A log whose instances [from, to) are chosen with ValueAt(i), chained from
// `seed`; returns each instance's checksum.
std::vector<uint32_t> WriteChosen(MemLogStorage* log, uint64_t from, uint64_t to,
                                  uint32_t seed = 0) {
  return chorus::testing::WriteChosenRecords(log, from, to, ValueAt, seed);
}

CatchupRead Read(uint64_t first, uint64_t chosen_end, size_t count = 64, size_t bytes = 1 << 20) {
  CatchupRead r;
  r.peer = 2;
  r.first = first;
  r.chosen_end = chosen_end;
  r.max_count = count;
  r.max_bytes = bytes;
  r.cluster_id = 9;
  r.group = 4;
  r.from = 1;
  return r;
}

std::string DecodedData(const std::string& envelope) {
  uint64_t proposer = 0, id = 0;
  std::string data;
  EXPECT_TRUE(DecodeValue(envelope, &proposer, &id, &data));
  return data;
}

PaxosMsg Parsed(const CatchupReply& reply) {
  PaxosMsg m;
  EXPECT_TRUE(m.ParseFromString(reply.bytes));
  return m;
}

TEST(ReadCatchupTest, ServesChosenRecordsWithTheHeaderTheCoreWouldSend) {
  MemLogStorage log;
  const std::vector<uint32_t> sums = WriteChosen(&log, 0, 10);
  CatchupReply reply;
  ASSERT_TRUE(ReadCatchup(Read(3, 10), &log, &reply).ok());
  EXPECT_EQ(reply.entries, 7u);
  EXPECT_EQ(reply.end, 10u);
  const PaxosMsg m = Parsed(reply);
  EXPECT_EQ(m.type(), LEARN_VALUES);
  EXPECT_EQ(m.cluster_id(), 9u);
  EXPECT_EQ(m.group(), 4u);
  EXPECT_EQ(m.from(), 1u);
  EXPECT_EQ(m.chosen_end(), 10u);
  EXPECT_EQ(m.instance(), 3u);
  ASSERT_EQ(m.learned_size(), 7);
  for (int k = 0; k < 7; ++k) {
    EXPECT_EQ(m.learned(k).instance(), 3u + k);
    EXPECT_EQ(m.learned(k).value(), ValueAt(3 + k));
    EXPECT_EQ(m.learned(k).checksum(), sums[3 + k]);  // the stored chain
  }
}

TEST(ReadCatchupTest, StopsAtTheCountTheBytesAndChosenEnd) {
  MemLogStorage log;
  WriteChosen(&log, 0, 10);
  // A record beyond chosen_end (an accepted value, say) is never read.
  CountingLogStorage counting(&log);
  CatchupReply reply;
  ASSERT_TRUE(ReadCatchup(Read(0, 5), &counting, &reply).ok());
  EXPECT_EQ(reply.entries, 5u);
  EXPECT_EQ(counting.gets, 5u);
  ASSERT_TRUE(ReadCatchup(Read(2, 10, /*count=*/3), &log, &reply).ok());
  EXPECT_EQ(reply.entries, 3u);
  EXPECT_EQ(reply.end, 5u);
  // The batch stops growing once its values hold max_bytes: two values of
  // this size reach 1.5 of them.
  const size_t one = ValueAt(0).size();
  ASSERT_TRUE(ReadCatchup(Read(0, 10, 64, one + one / 2), &log, &reply).ok());
  EXPECT_EQ(reply.entries, 2u);
  // The first value goes in whatever its size.
  ASSERT_TRUE(ReadCatchup(Read(0, 10, 64, 1), &log, &reply).ok());
  EXPECT_EQ(reply.entries, 1u);
  // Nothing asked for below chosen_end: an empty reply, nothing read.
  counting.gets = 0;
  EXPECT_TRUE(ReadCatchup(Read(10, 10), &counting, &reply).ok());
  EXPECT_EQ(reply.entries, 0u);
  EXPECT_TRUE(reply.bytes.empty());
  EXPECT_EQ(reply.end, 10u);
  EXPECT_EQ(counting.gets, 0u);
}

TEST(ReadCatchupTest, StopsAtATrimmedRecord) {
  MemLogStorage log;
  const std::vector<uint32_t> sums = WriteChosen(&log, 0, 4);
  WriteChosen(&log, 6, 8, sums.back() + 1);  // 4 and 5 missing
  CatchupReply reply;
  Status s = ReadCatchup(Read(2, 8), &log, &reply);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_EQ(reply.entries, 2u);  // 2 and 3 are still good to send
  EXPECT_EQ(Parsed(reply).learned_size(), 2);
  // Trimmed below the first instance asked for: nothing to send.
  LogWriteBatch trim;
  trim.delete_below = 3;
  ASSERT_TRUE(log.Write(trim, true).ok());
  s = ReadCatchup(Read(1, 8), &log, &reply);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_EQ(reply.entries, 0u);
  EXPECT_TRUE(reply.bytes.empty());
  EXPECT_EQ(reply.end, 1u);
}

TEST(ReadCatchupTest, ABadRecordIsNeverSentNorAnythingAfterIt) {
  struct Case {
    const char* what;
    std::function<void(MemLogStorage*)> damage;  // to instance 3
  };
  const std::vector<Case> cases = {
      {"storage checksum", [](MemLogStorage* l) { l->CorruptRecord(3); }},
      {"does not parse", [](MemLogStorage* l) { l->OverwriteRecord(3, "\xff\xff garbage"); }},
      {"not chosen",
       [](MemLogStorage* l) {
         InstanceRecord rec;
         Ballot(2, 1).ToPb(rec.mutable_accepted_ballot());
         rec.set_value(ValueAt(3));
         l->OverwriteRecord(3, rec.SerializeAsString());
       }},
      {"chain broken", [](MemLogStorage* l) { l->OverwriteRecord(3, ChosenRecord(ValueAt(3), 7)); }},
      {"other value",
       [](MemLogStorage* l) {
         std::string r;
         ASSERT_TRUE(l->Get(3, &r).ok());
         InstanceRecord rec;
         ASSERT_TRUE(rec.ParseFromString(r));
         l->OverwriteRecord(3, ChosenRecord(EncodeValue(1, 1, "forged"), rec.checksum()));
       }},
  };
  for (const Case& c : cases) {
    MemLogStorage log;
    WriteChosen(&log, 0, 8);
    c.damage(&log);
    CatchupReply reply;
    Status s = ReadCatchup(Read(1, 8), &log, &reply);
    EXPECT_TRUE(s.IsCorruption()) << c.what << ": " << s.ToString();
    ASSERT_EQ(reply.entries, 2u) << c.what;  // 1 and 2
    const PaxosMsg m = Parsed(reply);
    EXPECT_EQ(m.learned(m.learned_size() - 1).instance(), 2u) << c.what;
    EXPECT_EQ(reply.end, 3u) << c.what;
  }
}

// ---- The core plans the read instead of doing it ----

void SmallCache(CoreOptions* o) {
  o->catchup_batch_count = 3;
  o->chosen_cache_size = 4;
}

// Node 0 of a 3-node harness has chosen `n` values; a fresh core with node
// 3's options over `log` learns all of them in one batch (so its cache holds
// the last 4).
std::unique_ptr<Core> LearnedCore(testing::Harness* h, uint64_t n, LogStorage* log) {
  for (uint64_t t = 1; t <= n; ++t) {
    EXPECT_TRUE(h->Propose(0, t, "v" + std::to_string(t)).ok());
    h->Pump();
  }
  std::unique_ptr<Core> core;
  EXPECT_TRUE(Core::Open(h->Options(2), log, &core).ok());
  Outputs out;
  core->Start(&out);
  CatchupRead all = Read(0, n, n);
  all.cluster_id = 9;
  all.group = 0;
  all.from = 1;
  CatchupReply reply;
  EXPECT_TRUE(ReadCatchup(all, &h->node(0).log, &reply).ok());
  EXPECT_TRUE(core->OnMessage(reply.bytes, &out).ok());
  EXPECT_TRUE(log->Write(out.persist, out.sync).ok());
  EXPECT_EQ(core->chosen_end(), n);
  return core;
}

// The LEARN_VALUES messages of a step, parsed, with their receivers.
std::vector<std::pair<uint64_t, PaxosMsg>> Batches(const Outputs& out) {
  std::vector<std::pair<uint64_t, PaxosMsg>> v;
  for (const OutMessage& m : out.messages) {
    PaxosMsg p;
    EXPECT_TRUE(p.ParseFromString(m.bytes));
    if (p.type() == LEARN_VALUES) v.emplace_back(m.to, p);
  }
  return v;
}

// A core (node 3) that learned 10 values; its cache holds the last 4; every
// record it reads goes through log_.
class CoreCatchupTest : public ::testing::Test {
 protected:
  CoreCatchupTest() : h_(3, SmallCache), log_(&mem_) {
    core_ = LearnedCore(&h_, 10, &log_);
    log_.gets = 0;
  }

  testing::Harness h_;
  MemLogStorage mem_;
  CountingLogStorage log_;
  std::unique_ptr<Core> core_;
};

TEST_F(CoreCatchupTest, BeyondTheCacheTheCorePlansAReadAndReadsNothing) {
  Outputs out;
  ASSERT_TRUE(core_->OnMessage(AskLearn(1, 2).SerializeAsString(), &out).ok());
  EXPECT_EQ(log_.gets, 0u);  // the step did not touch the log
  EXPECT_TRUE(Batches(out).empty());
  ASSERT_EQ(out.catchup_reads.size(), 1u);
  const CatchupRead& read = out.catchup_reads[0];
  EXPECT_EQ(read.peer, 1u);
  EXPECT_EQ(read.first, 2u);
  EXPECT_EQ(read.chosen_end, 10u);
  EXPECT_EQ(read.max_count, 3u);
  EXPECT_EQ(read.from, 3u);
  EXPECT_EQ(read.cluster_id, 9u);
  EXPECT_EQ(core_->stats().catchup_reads, 1u);

  // Served (off the core), it reads the batch and nothing more.
  CatchupReply reply;
  ASSERT_TRUE(ReadCatchup(read, &log_, &reply).ok());
  EXPECT_EQ(log_.gets, 3u);
  ASSERT_EQ(reply.entries, 3u);
  const PaxosMsg m = Parsed(reply);
  EXPECT_EQ(m.from(), 3u);
  EXPECT_EQ(m.chosen_end(), 10u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(m.learned(k).instance(), 2u + k);
    EXPECT_EQ(DecodedData(m.learned(k).value()), h_.node(0).applied[2 + k].value);
  }
}

TEST_F(CoreCatchupTest, WithinTheCacheTheCoreStillAnswersAtOnce) {
  Outputs out;
  ASSERT_TRUE(core_->OnMessage(AskLearn(1, 7).SerializeAsString(), &out).ok());
  EXPECT_EQ(log_.gets, 0u);
  EXPECT_TRUE(out.catchup_reads.empty());
  const auto batches = Batches(out);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].first, 1u);
  ASSERT_EQ(batches[0].second.learned_size(), 3);  // 7, 8, 9 from the cache
  EXPECT_EQ(batches[0].second.learned(0).instance(), 7u);
  EXPECT_EQ(core_->stats().catchup_reads, 0u);
}

// Why a read waits for its round's persist: it may cover values chosen in
// the same round, whose chosen records that round writes.
TEST(CatchupRoundTest, AReadServedBeforeItsRoundsPersistComesUpShort) {
  testing::Harness h(3, [](CoreOptions* o) {
    o->catchup_batch_count = 8;
    o->chosen_cache_size = 0;  // every batch is read from the log
  });
  for (uint64_t t = 1; t <= 5; ++t) {
    ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
    h.Pump();
  }
  MemLogStorage log;
  std::unique_ptr<Core> core;
  ASSERT_TRUE(Core::Open(h.Options(2), &log, &core).ok());
  Round round;
  Outputs step;
  core->Start(&step);
  round.Add(&step);
  // One round: learn 0..4 from node 1, then node 2 asks for them.
  CatchupRead all = Read(0, 5, 5);
  all.group = 0;
  CatchupReply batch;
  ASSERT_TRUE(ReadCatchup(all, &h.node(0).log, &batch).ok());
  ASSERT_TRUE(core->OnMessage(batch.bytes, &step).ok());
  round.Add(&step);
  ASSERT_TRUE(core->OnMessage(AskLearn(2, 0).SerializeAsString(), &step).ok());
  round.Add(&step);
  Outputs out;
  round.Take(&out);
  ASSERT_EQ(out.catchup_reads.size(), 1u);
  CatchupReply reply;
  EXPECT_TRUE(ReadCatchup(out.catchup_reads[0], &log, &reply).IsNotFound());
  EXPECT_EQ(reply.entries, 0u);  // before the persist: nothing to send
  ASSERT_TRUE(log.Write(out.persist, out.sync).ok());
  EXPECT_TRUE(ReadCatchup(out.catchup_reads[0], &log, &reply).ok());
  EXPECT_EQ(reply.entries, 5u);  // after it: the whole batch
}

// End to end in the harness (reads served after each step's persist): a
// lagging node streams everything from a peer whose cache holds almost none.
TEST(CatchupRoundTest, LaggingNodeCatchesUpFromThePeersLog) {
  testing::Harness h(3, SmallCache);
  h.Isolate(2);
  for (uint64_t t = 1; t <= 20; ++t) {
    ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
    h.Pump();
  }
  h.Heal(2);
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  ASSERT_EQ(h.core(2)->chosen_end(), 20u);
  for (size_t k = 0; k < 20; ++k) EXPECT_EQ(h.node(2).applied[k].value, h.node(0).applied[k].value);
  EXPECT_TRUE(h.node(2).errors.empty());
  // Its peers served the batches below their caches from their logs.
  EXPECT_GT(h.core(0)->stats().catchup_reads + h.core(1)->stats().catchup_reads, 0u);
}

}  // namespace
}  // namespace catchup_test
}  // namespace paxos
}  // namespace chorus
