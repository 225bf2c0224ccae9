// CatchupReader: serves catch-up reads on its own thread, framed for their
// group; its queue is bounded (drops are counted); Stop drops what waits.
// A gated log holds the reader inside a read, so each test knows where the
// thread is by waiting for events, never for time.
#include "node/catchup_reader.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "paxos.pb.h"
#include "unittest/support/chosen_records.h"
#include "unittest/support/gated_log_storage.h"
#include "unittest/support/test_util.h"
#include "utils/coding.h"

namespace chorus {
namespace catchup_reader_test {
namespace {

using testing::GatedLogStorage;
using testing::TempDir;
using testing::WaitUntil;

// Records every frame sent.
class RecordingTransport : public Transport {
 public:
  Status Start(Receiver) override { return Status::OK(); }
  Status Send(uint64_t to, std::string message) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back({to, std::move(message)});
    return Status::OK();
  }
  void Stop() override {}
  std::vector<std::pair<uint64_t, std::string>> sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> sent_;  // GUARDED_BY(mu_)
};

class CatchupReaderTest : public ::testing::Test {
 protected:
  CatchupReaderTest() {
    std::unique_ptr<LogStorage> base;
    LevelDbLogOptions lo;
    lo.create_if_missing = true;  // a fresh temp dir
    EXPECT_TRUE(OpenLevelDbLogStorage(dir_.path() + "/log", lo, &base).ok());
    testing::WriteChosenRecords(base.get(), 0, 10,
                                [](uint64_t i) { return "value-" + std::to_string(i); });
    log_ = std::make_unique<GatedLogStorage>(std::move(base));
  }

  static paxos::CatchupRead Read(uint64_t peer, uint64_t first) {
    paxos::CatchupRead r;
    r.peer = peer;
    r.first = first;
    r.chosen_end = 10;
    r.max_count = 4;
    r.max_bytes = 1 << 20;
    r.cluster_id = 5;
    r.from = 1;
    return r;
  }

  TempDir dir_;
  std::unique_ptr<GatedLogStorage> log_;
  RecordingTransport transport_;
};

TEST_F(CatchupReaderTest, ServesEachReadFramedForItsGroup) {
  CatchupReader reader(&transport_, nullptr, 4);
  ASSERT_TRUE(reader.Start().ok());
  ASSERT_TRUE(reader.Submit(3, log_.get(), Read(2, 0)));
  ASSERT_TRUE(reader.Submit(7, log_.get(), Read(3, 8)));
  ASSERT_TRUE(WaitUntil([&] { return reader.served() == 2; }));
  const auto sent = transport_.sent();
  ASSERT_EQ(sent.size(), 2u);
  // In the order handed over: group 3's read for node 2, then group 7's.
  const uint32_t groups[] = {3, 7};
  const uint64_t peers[] = {2, 3};
  const int entries[] = {4, 2};  // the count bound; then chosen_end
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(sent[k].first, peers[k]);
    ASSERT_GT(sent[k].second.size(), 4u);
    EXPECT_EQ(DecodeFixed32(sent[k].second.data()), groups[k]);
    paxos::PaxosMsg m;
    ASSERT_TRUE(m.ParseFromString(sent[k].second.substr(4)));
    EXPECT_EQ(m.type(), paxos::LEARN_VALUES);
    EXPECT_EQ(m.learned_size(), entries[k]);
    EXPECT_EQ(m.chosen_end(), 10u);
  }
  EXPECT_EQ(reader.dropped(), 0u);
}

TEST_F(CatchupReaderTest, AFullQueueDropsAndCountsNewReads) {
  CatchupReader reader(&transport_, nullptr, 2);
  ASSERT_TRUE(reader.Start().ok());
  log_->Close();
  ASSERT_TRUE(reader.Submit(0, log_.get(), Read(2, 0)));
  // The thread took that one and is stuck in the log: the queue is empty.
  ASSERT_TRUE(WaitUntil([&] { return log_->held() == 1; }));
  EXPECT_TRUE(reader.Submit(0, log_.get(), Read(2, 1)));
  EXPECT_TRUE(reader.Submit(0, log_.get(), Read(2, 2)));
  EXPECT_FALSE(reader.Submit(0, log_.get(), Read(2, 3)));  // 2 wait already
  EXPECT_EQ(reader.dropped(), 1u);
  log_->Open();
  ASSERT_TRUE(WaitUntil([&] { return reader.served() == 3; }));
  const auto sent = transport_.sent();
  ASSERT_EQ(sent.size(), 3u);
  for (uint64_t k = 0; k < 3; ++k) {
    paxos::PaxosMsg m;
    ASSERT_TRUE(m.ParseFromString(sent[k].second.substr(4)));
    EXPECT_EQ(m.instance(), k);  // the dropped read (3) never ran
  }
  EXPECT_EQ(reader.dropped(), 1u);
}

TEST_F(CatchupReaderTest, StopDropsWhatWaitsAndFinishesTheReadInProgress) {
  auto reader = std::make_unique<CatchupReader>(&transport_, nullptr, 4);
  ASSERT_TRUE(reader->Start().ok());
  log_->Close();
  ASSERT_TRUE(reader->Submit(0, log_.get(), Read(2, 0)));
  ASSERT_TRUE(WaitUntil([&] { return log_->held() == 1; }));
  ASSERT_TRUE(reader->Submit(0, log_.get(), Read(2, 5)));
  // Stop from another thread; it cannot return while the read is held.
  std::thread stopper([&] { reader->Stop(); });
  ASSERT_TRUE(WaitUntil([&] { return reader->dropped() == 1; }));  // the queued one
  log_->Open();
  stopper.join();
  // The read in progress completed; nothing more is read or sent.
  EXPECT_EQ(reader->served(), 1u);
  const uint64_t gets = log_->gets();
  EXPECT_FALSE(reader->Submit(0, log_.get(), Read(2, 0)));
  EXPECT_EQ(reader->dropped(), 2u);
  reader->Stop();  // idempotent
  reader.reset();
  EXPECT_EQ(log_->gets(), gets);
  EXPECT_EQ(transport_.sent().size(), 1u);
}

TEST_F(CatchupReaderTest, ABadRecordIsCountedAndTheGoodOnesBeforeItSent) {
  LogWriteBatch bad;
  bad.records.emplace_back(2, "not a record");
  ASSERT_TRUE(log_->Write(bad, true).ok());
  CatchupReader reader(&transport_, nullptr, 4);
  ASSERT_TRUE(reader.Start().ok());
  ASSERT_TRUE(reader.Submit(0, log_.get(), Read(2, 0)));
  ASSERT_TRUE(reader.Submit(0, log_.get(), Read(2, 2)));  // nothing good to send
  ASSERT_TRUE(WaitUntil([&] { return reader.bad_records() == 2; }));
  reader.Stop();
  const auto sent = transport_.sent();
  ASSERT_EQ(sent.size(), 1u);
  paxos::PaxosMsg m;
  ASSERT_TRUE(m.ParseFromString(sent[0].second.substr(4)));
  EXPECT_EQ(m.learned_size(), 2);  // 0 and 1
  EXPECT_EQ(reader.served(), 1u);
}

}  // namespace
}  // namespace catchup_reader_test
}  // namespace chorus
