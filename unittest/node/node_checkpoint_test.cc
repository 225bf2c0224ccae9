// Checkpoints in a real 3-node cluster in one process (loopback TCP): they
// are made at the interval and the log is trimmed behind them while its
// size stays flat; a restart loads the newest one and replays only the log
// after it; several state machines; one without checkpoint support (never
// trimmed); failing PrepareCheckpoint / Write (retried); a checkpoint dir
// lost under a trimmed log (a clear error); a stored checkpoint loaded
// into a running node that fell behind every log; the options' checks.
// Tests wait for states (counters), never for a time.
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "chorus/node.h"
#include "node/checkpoint_store.h"
#include "node/checkpoint_worker.h"
#include "node/fs_util.h"
#include "node/node_impl.h"
#include "node/options_validation.h"
#include "unittest/node/checkpoint_cluster.h"
#include "unittest/node/checkpoint_machine.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace node_checkpoint_test {
namespace {

using testing::CheckpointMachine;
using testing::CkCluster;
using testing::CopyNewest;
using testing::DirBytes;
using testing::GroupOf;
using testing::RunWithoutNode0;
using testing::StatusOf;
using testing::TempDir;
using testing::WaitUntil;


TEST(NodeCheckpointTest, CheckpointsAreMadeAndTheLogStaysFlat) {
  CkCluster c;
  c.StartAll();
  constexpr int kRounds = 30;
  constexpr size_t kValueBytes = 2048;
  std::vector<uint64_t> records, bytes;
  for (int r = 0; r < kRounds; ++r) {
    c.ProposeMany(r % 3, static_cast<int>(c.interval), kValueBytes);
    ASSERT_TRUE(c.Converged({0, 1, 2}));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.Settled(i));
    records.push_back(c.Records(0));
    bytes.push_back(DirBytes(c.data_dir(0) + "/g0"));
  }
  for (int i = 0; i < 3; ++i) {
    GroupStatus st;
    ASSERT_TRUE(c.node(i)->GetGroupStatus(0, &st).ok());
    EXPECT_GE(st.checkpoints_made, static_cast<uint64_t>(kRounds / 2)) << "node " << i;
    EXPECT_GT(st.checkpoint_instance, 0u);
    EXPECT_GT(c.node(i)->GetMinChosenInstanceId(0), 0u) << "node " << i;
    EXPECT_EQ(st.log_start, c.node(i)->GetMinChosenInstanceId(0));
    // The log holds at least the margin below the newest checkpoint...
    EXPECT_LE(st.log_start + c.keep, st.checkpoint_instance) << "node " << i;
    EXPECT_EQ(c.machine(i)->violations(), 0u);
  }
  // ...and at most an interval, the margin and a pipeline's worth more:
  // the record count stays flat while the instances grow.
  const uint64_t bound = c.interval + c.keep + 2 * 64;
  for (size_t r = 0; r < records.size(); ++r) {
    EXPECT_LE(records[r], bound) << "after round " << r;
  }
  // The directory's size has a bound that depends on the settings, not on
  // how long the cluster ran: the live records, plus leveldb's memtable and
  // a dozen level-0 tables of that size before compaction (however leveldb
  // and the trims' compactions interleave). The run writes far more.
  const uint64_t written = kRounds * c.interval * kValueBytes;
  const uint64_t dir_bound = bound * kValueBytes + 13 * c.write_buffer_bytes;
  ASSERT_LT(2 * dir_bound, written + 0u);
  for (size_t r = 4; r < bytes.size(); ++r) {
    EXPECT_LE(bytes[r], dir_bound) << "after round " << r;
  }
  EXPECT_LT(bytes.back(), written / 2) << "the log keeps everything";
}

TEST(NodeCheckpointTest, RestartLoadsTheCheckpointAndReplaysOnlyTheLogAfterIt) {
  CkCluster c;
  c.StartAll();
  c.ProposeMany(0, static_cast<int>(5 * c.interval));
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  ASSERT_TRUE(c.Settled(0));
  // Some log after the newest checkpoint, so that the restart replays some,
  // and less than an interval of it: then no newer checkpoint is due before
  // the restart (one made at the end would leave nothing to replay).
  uint64_t checkpoint = StatusOf(c.node(0)).checkpoint_instance;
  ASSERT_GT(checkpoint, 0u);
  ASSERT_TRUE(c.ProposeUntil([&] {
    if (!c.Settled(0)) return false;
    const uint64_t newest = StatusOf(c.node(0)).checkpoint_instance;
    const uint64_t now = c.node(0)->GetNowInstanceId(0);
    return now > newest && now - newest < c.interval;
  }));
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  ASSERT_TRUE(c.Settled(0));
  checkpoint = StatusOf(c.node(0)).checkpoint_instance;
  const uint64_t end = c.node(0)->GetNowInstanceId(0);
  const CheckpointMachine::State before = c.machine(0)->state();
  ASSERT_LT(checkpoint, end);

  c.Stop(0);
  c.machine(0)->Reset();  // a new process: the state machine starts empty
  ASSERT_TRUE(c.Start(0).ok());
  // Open loaded the checkpoint and replayed the rest before it returned.
  EXPECT_EQ(c.machine(0)->loads(), std::vector<uint64_t>{checkpoint});
  EXPECT_EQ(c.machine(0)->executes(), end - checkpoint);
  EXPECT_EQ(c.machine(0)->state(), before);
  EXPECT_EQ(c.machine(0)->violations(), 0u);
  EXPECT_EQ(c.node(0)->GetNowInstanceId(0), end);
  EXPECT_EQ(StatusOf(c.node(0)).checkpoint_instance, checkpoint);
  EXPECT_GT(c.node(0)->GetMinChosenInstanceId(0), 0u);
  EXPECT_EQ(StatusOf(c.node(0)).checkpoints_loaded, 0u);  // from a peer: none
  // And it goes on with the others.
  c.ProposeMany(0, 20);
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  EXPECT_EQ(c.machine(0)->violations(), 0u);
}

TEST(NodeCheckpointTest, TheByteMarginKeepsThatManyBytesOfValues) {
  CkCluster c;
  c.keep = 0;                // the instance margin alone would trim at the checkpoint
  c.keep_bytes = 25 * 1024;  // ~25 of the 1 KiB values
  c.StartAll();
  for (int r = 0; r < 6; ++r) {
    c.ProposeMany(0, static_cast<int>(c.interval), 1024);
    ASSERT_TRUE(c.Converged({0, 1, 2}));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.Settled(i));
    for (int i = 0; i < 3; ++i) {
      // The trim follows the checkpoint a round of the group's loop later
      // (log_start is published at the end of that round): wait for it.
      const uint64_t most = 26u + c.interval / 16;
      GroupStatus st;
      WaitUntil([&] {
        st = StatusOf(c.node(i));
        return st.log_start == 0 || st.checkpoint_instance - st.log_start <= most;
      });
      if (st.log_start == 0) continue;
      // Each value is 1 KiB and a bit of envelope: 25 KiB take at most 25.
      EXPECT_GE(st.checkpoint_instance - st.log_start, 24u) << "node " << i << " round " << r;
      EXPECT_LE(st.checkpoint_instance - st.log_start, most) << "node " << i << " round " << r;
    }
  }
  // It did trim.
  for (int i = 0; i < 3; ++i) EXPECT_GT(c.node(i)->GetMinChosenInstanceId(0), 0u) << i;
}

TEST(NodeCheckpointTest, SeveralStateMachinesReplayFromTheSmallestCheckpoint) {
  CkCluster c(/*machines_per_node=*/2);
  c.StartAll();
  for (int k = 0; k < 6; ++k) c.ProposeMany(k % 3, static_cast<int>(c.interval / 2), 16, 1 + k % 2);
  ASSERT_TRUE(c.ProposeUntil(
      [&] {
        return c.Settled(0) &&
               c.node(0)->GetNowInstanceId(0) > StatusOf(c.node(0)).checkpoint_instance;
      },
      /*sm=*/2));
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  ASSERT_TRUE(c.Settled(0));
  const uint64_t checkpoint = StatusOf(c.node(0)).checkpoint_instance;
  const uint64_t end = c.node(0)->GetNowInstanceId(0);
  ASSERT_GT(checkpoint, 0u);
  CheckpointManifest m;
  ASSERT_TRUE(GroupOf(c.node(0))->checkpoint_store()->Newest(&m).ok());
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[0].path, "sm1/state");
  EXPECT_EQ(m.files[1].path, "sm2/state");
  const CheckpointMachine::State sm1 = c.machine(0, 0)->state();
  const CheckpointMachine::State sm2 = c.machine(0, 1)->state();

  c.Stop(0);
  // State machine 1 keeps its state durably (it reports [0, end) as its
  // own); state machine 2 is in memory and starts empty.
  c.machine(0, 0)->set_reported_checkpoint(end);
  const uint64_t sm1_executes = c.machine(0, 0)->executes();
  c.machine(0, 1)->Reset();
  ASSERT_TRUE(c.Start(0).ok());
  // The replay starts at the smaller of the two (the checkpoint loaded into
  // state machine 2), and state machine 1 skips what it reflects already.
  EXPECT_TRUE(c.machine(0, 0)->loads().empty());
  EXPECT_EQ(c.machine(0, 0)->executes(), sm1_executes);
  EXPECT_EQ(c.machine(0, 0)->state(), sm1);
  EXPECT_EQ(c.machine(0, 1)->loads(), std::vector<uint64_t>{checkpoint});
  EXPECT_EQ(c.machine(0, 1)->executes(), end - checkpoint);
  EXPECT_EQ(c.machine(0, 1)->state(), sm2);
  // Both go on with the others.
  c.ProposeMany(1, 10, 16, 1);
  c.ProposeMany(2, 10, 16, 2);
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  EXPECT_EQ(c.machine(0, 0)->violations() + c.machine(0, 1)->violations(), 0u);
}

TEST(NodeCheckpointTest, AStateMachineWithoutCheckpointsKeepsTheWholeLog) {
  CkCluster c(/*machines_per_node=*/2);
  for (int i = 0; i < 3; ++i) c.machine(i, 1)->set_supported(false);
  c.StartAll();
  c.ProposeMany(0, static_cast<int>(4 * c.interval), 16, 1);
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Settled(i));
    EXPECT_EQ(StatusOf(c.node(i)).checkpoints_made, 0u);
    EXPECT_EQ(StatusOf(c.node(i)).checkpoint_instance, 0u);
    EXPECT_EQ(c.node(i)->GetMinChosenInstanceId(0), 0u);
    // Asked once; its NotSupported is remembered.
    EXPECT_EQ(c.machine(i, 1)->prepares(), 1u);
    EXPECT_EQ(c.machine(i, 0)->writes(), 0u);
  }
  EXPECT_GE(c.Records(0), 4 * c.interval);
}

TEST(NodeCheckpointTest, AFailedPrepareOrWriteIsRetriedAtTheNextInterval) {
  CkCluster c;
  for (int i = 0; i < 3; ++i) {
    c.machine(i)->fail_prepares(1);
    c.machine(i)->fail_writes(1);
  }
  c.StartAll();
  // 1st try: PrepareCheckpoint fails.
  ASSERT_TRUE(c.ProposeUntil([&] { return c.machine(0)->prepares() >= 1; }));
  ASSERT_TRUE(c.Settled(0));
  EXPECT_EQ(StatusOf(c.node(0)).checkpoints_made, 0u);
  // 2nd try, an interval later: Write fails; the staging dir goes away.
  ASSERT_TRUE(c.ProposeUntil([&] { return c.machine(0)->prepares() >= 2; }));
  ASSERT_TRUE(c.Settled(0));
  EXPECT_EQ(StatusOf(c.node(0)).checkpoints_made, 0u);
  EXPECT_EQ(c.node(0)->GetMinChosenInstanceId(0), 0u);  // nothing durable: no trim
  std::vector<std::string> names;
  ASSERT_TRUE(ListDir(c.data_dir(0) + "/checkpoints/g0", &names).ok());
  EXPECT_TRUE(names.empty()) << names[0];
  // 3rd: made, and the log is trimmed behind it.
  ASSERT_TRUE(c.ProposeUntil([&] { return c.Settled(0) && StatusOf(c.node(0)).checkpoints_made >= 1; }));
  EXPECT_EQ(c.machine(0)->prepares(), 3u);
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  EXPECT_TRUE(WaitUntil([&] { return c.node(0)->GetMinChosenInstanceId(0) > 0; }));
}

TEST(NodeCheckpointTest, ALostCheckpointDirUnderATrimmedLogIsAClearError) {
  CkCluster c;
  c.StartAll();
  c.ProposeMany(0, static_cast<int>(3 * c.interval));
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  ASSERT_TRUE(c.Settled(0));
  ASSERT_TRUE(WaitUntil([&] { return c.node(0)->GetMinChosenInstanceId(0) > 0; }));
  c.Stop(0);
  ASSERT_TRUE(RemoveTree(c.data_dir(0) + "/checkpoints").ok());
  c.machine(0)->Reset();
  Status s = c.Start(0);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("checkpoint dir"), std::string::npos) << s.ToString();
}



// What the transfer does, by hand: node 0 starts after its peers
// trimmed past everything it has, gets their newest checkpoint committed
// into its store, and is told to load it; it then catches up by log.
TEST(NodeCheckpointTest, ANodeBehindEveryLogLoadsAStoredCheckpointAndCatchesUp) {
  CkCluster c;
  ASSERT_TRUE(RunWithoutNode0(&c, 4));
  // A transport keeps the frames it could not deliver (here: every message
  // for node 0) until the peer connects, which would hand node 0 the whole
  // history. Restarting its peers drops those queues: now it must ask.
  for (int i : {1, 2}) {
    c.Stop(i);
    c.machine(i)->Reset();
    ASSERT_TRUE(c.Start(i).ok());
  }
  c.machine(0)->fail_loads(1);  // the first load fails: the old state stays
  ASSERT_TRUE(c.Start(0).ok());

  const CheckpointManifest m = CopyNewest(GroupOf(c.node(1))->checkpoint_store(),
                                         GroupOf(c.node(0))->checkpoint_store());
  GroupOf(c.node(0))->PostLoadCheckpoint(m.instance);

  ASSERT_TRUE(c.Converged({0, 1, 2}));
  // The copied checkpoint is loaded first. A peer that replayed its log on
  // restart may make a newer checkpoint meanwhile, and a transfer of that
  // one (node 0 asks to learn below every peer's log) is a legitimate later
  // load: allowed, if newer.
  const std::vector<uint64_t> loads = c.machine(0)->loads();
  ASSERT_FALSE(loads.empty());
  EXPECT_EQ(loads[0], m.instance);
  for (size_t i = 1; i < loads.size(); ++i) EXPECT_GT(loads[i], loads[i - 1]);
  EXPECT_EQ(c.machine(0)->failed_loads(), 1u);  // retried from the store
  EXPECT_EQ(StatusOf(c.node(0)).checkpoints_loaded, loads.size());
  EXPECT_EQ(c.machine(0)->violations(), 0u);
  // The log below the installed checkpoint goes after the load, in the
  // background (a TSan run once read it first).
  EXPECT_TRUE(WaitUntil(
      [&] { return c.node(0)->GetMinChosenInstanceId(0) >= m.instance - c.keep; }))
      << c.node(0)->GetMinChosenInstanceId(0) << " vs " << m.instance - c.keep;
  // It takes part again, and a restart starts from what it installed.
  c.ProposeMany(0, 10);
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  const CheckpointMachine::State before = c.machine(0)->state();
  c.Stop(0);
  c.machine(0)->Reset();
  ASSERT_TRUE(c.Start(0).ok());
  EXPECT_EQ(c.machine(0)->state(), before);
  EXPECT_EQ(c.machine(0)->violations(), 0u);
}

// A crash after a received checkpoint was committed to the store and
// before the core installed it: the restart installs it (Open returns with
// the chosen prefix at the checkpoint), and the node catches up from there.
TEST(NodeCheckpointTest, ARestartInstallsAStoredCheckpointAheadOfTheLog) {
  CkCluster c;
  ASSERT_TRUE(RunWithoutNode0(&c, 3));
  Logger quiet(nullptr, LogLevel::kNone);
  std::unique_ptr<CheckpointStore> store;
  ASSERT_TRUE(CheckpointStore::Open(c.data_dir(0) + "/checkpoints/g0", 31, 0, &quiet, &store).ok());
  const CheckpointManifest m = CopyNewest(GroupOf(c.node(1))->checkpoint_store(), store.get());
  store.reset();
  ASSERT_TRUE(c.Start(0).ok());  // its log is empty: the checkpoint is ahead of it
  EXPECT_EQ(c.machine(0)->loads(), std::vector<uint64_t>{m.instance});
  EXPECT_GE(c.node(0)->GetNowInstanceId(0), m.instance);
  EXPECT_EQ(c.node(0)->GetMinChosenInstanceId(0), m.instance);
  c.ProposeMany(1, 10);
  ASSERT_TRUE(c.Converged({0, 1, 2}));
  EXPECT_EQ(c.machine(0)->violations(), 0u);
}

TEST(NodeCheckpointTest, TheWorkerRunsJobsInOrderAndDropsTheQueuedOnesAtStop) {
  CheckpointWorker worker(2);
  ASSERT_TRUE(worker.Start().ok());
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<int> ran;
  auto job = [&](int n, bool block) {
    return [&, n, block] {
      std::unique_lock<std::mutex> lock(mu);
      ran.push_back(n);
      cv.notify_all();
      if (block) cv.wait(lock, [&] { return release; });
    };
  };
  ASSERT_TRUE(worker.Submit(job(1, true)));
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !ran.empty(); });  // job 1 runs and blocks
  }
  ASSERT_TRUE(worker.Submit(job(2, false)));
  ASSERT_TRUE(worker.Submit(job(3, false)));
  EXPECT_FALSE(worker.Submit(job(4, false)));  // two already wait
  EXPECT_EQ(worker.dropped(), 1u);
  std::thread stopper([&] { worker.Stop(); });
  // Stop drops 2 and 3, then waits for 1.
  ASSERT_TRUE(WaitUntil([&] { return worker.dropped() == 3; }));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  stopper.join();
  EXPECT_EQ(ran, std::vector<int>{1});
  EXPECT_EQ(worker.completed(), 1u);
  EXPECT_FALSE(worker.Submit(job(5, false)));
}

TEST(NodeCheckpointTest, BadCheckpointOptionsAreRefused) {
  TempDir dir;
  auto valid = [&] {
    Options o;
    o.self = NodeInfo{"127.0.0.1", 7100};
    o.nodes = {o.self};
    o.data_dir = dir.path();
    o.create_if_missing = true;
    return o;
  };
  EXPECT_TRUE(ValidateNodeOptions(valid()).ok());
  Options o = valid();
  o.checkpoint_chunk_bytes = 4095;
  Status s = ValidateNodeOptions(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("checkpoint_chunk_bytes"), std::string::npos) << s.ToString();
  o = valid();
  o.checkpoint_chunk_bytes = o.max_frame_bytes / 2 + 1;
  EXPECT_TRUE(ValidateNodeOptions(o).IsInvalidArgument());
  o.checkpoint_chunk_bytes = o.max_frame_bytes / 2;
  EXPECT_TRUE(ValidateNodeOptions(o).ok());
  o = valid();
  o.checkpoint_send_bytes_per_sec = 100;
  s = ValidateNodeOptions(o);
  EXPECT_NE(s.ToString().find("checkpoint_send_bytes_per_sec"), std::string::npos) << s.ToString();
  o.checkpoint_send_bytes_per_sec = 0;  // unlimited
  EXPECT_TRUE(ValidateNodeOptions(o).ok());
  o = valid();
  o.checkpoint_dir = dir.path() + "/";
  s = ValidateNodeOptions(o);
  EXPECT_NE(s.ToString().find("checkpoint_dir"), std::string::npos) << s.ToString();
  o = valid();
  o.log_keep_instances = uint64_t{1} << 60;
  EXPECT_TRUE(ValidateNodeOptions(o).IsInvalidArgument());
  o = valid();
  o.checkpoint_interval_instances = ~uint64_t{0};
  EXPECT_TRUE(ValidateNodeOptions(o).IsInvalidArgument());
  // Off, and margins of any size below the bound, are fine.
  o = valid();
  o.checkpoint_interval_instances = 0;
  o.log_keep_instances = 0;
  o.log_keep_bytes = ~uint64_t{0};
  EXPECT_TRUE(ValidateNodeOptions(o).ok());
}

}  // namespace
}  // namespace node_checkpoint_test
}  // namespace chorus
