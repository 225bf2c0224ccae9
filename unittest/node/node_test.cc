// A real 3-node cluster in one process over loopback TCP: proposals from
// every node, stops, restarts and catch-up, quorum loss and recovery, batch
// propose from many threads, garbage on the wire, and every invalid option.
// Where a test needs events in an order it waits for that state (a counter
// of the group, a gate in Execute, hand-fired timers), never for a time.
#include "chorus/node.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "node/node_impl.h"
#include "unittest/support/runtime_fakes.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace node_test {
namespace {

using testing::FreePort;
using testing::TempDir;
using testing::WaitUntil;

// Group `g` of a node opened in this process (every Node is a NodeImpl).
Group* GroupOf(Node* node, uint32_t g = 0) {
  return static_cast<NodeImpl*>(node)->group_for_testing(g);
}

// A clock and timers that move only by hand: no timeout event enters a
// group's queue behind the test's back. Must outlive the node using it.
struct ManualTime {
  testing::ManualClock clock;
  testing::ManualTimerScheduler timers{&clock};
  RuntimeHooks hooks() {
    RuntimeHooks h;
    h.clock = &clock;
    h.timers = &timers;
    return h;
  }
};

// Records what it executes (and the noop instances); answers the proposer
// with "ok:<value>"; values starting with "reject" are refused
// (deterministically) with Conflict, and values starting with "busy" /
// "timeout" get those codes, which are also chorus's own.
class RecordingStateMachine : public StateMachine {
 public:
  explicit RecordingStateMachine(int id = 1) : id_(id) {}
  int id() const override { return id_; }
  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back({info.group, info.instance, value, info.batch_index, info.batch_size,
                    info.proposal_id});
    if (ctx != nullptr) ctx->output = "ok:" + value;
    if (value.rfind("reject", 0) == 0) return Status::Conflict("rejected by the state machine");
    if (value.rfind("busy", 0) == 0) return Status::Busy("the application is busy");
    if (value.rfind("timeout", 0) == 0) return Status::Timeout("the application timed out");
    return Status::OK();
  }
  void ExecuteNoop(uint32_t group, uint64_t instance) override {
    std::lock_guard<std::mutex> lock(mu_);
    noops_.push_back({group, instance, "", 0, 0, 0});
  }
  struct Entry {
    uint32_t group;
    uint64_t instance;
    std::string value;
    uint32_t batch_index;
    uint32_t batch_size;
    uint64_t proposal_id;
    bool operator==(const Entry& o) const {
      return group == o.group && instance == o.instance && value == o.value &&
             batch_index == o.batch_index && batch_size == o.batch_size &&
             proposal_id == o.proposal_id;
    }
  };
  std::vector<Entry> noops() const {
    std::lock_guard<std::mutex> lock(mu_);
    return noops_;
  }
  std::vector<Entry> log() const {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  std::vector<std::string> values() const {
    std::vector<std::string> v;
    for (const Entry& e : log()) v.push_back(e.value);
    return v;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return log_.size();
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    log_.clear();
    noops_.clear();
  }

 private:
  const int id_;
  mutable std::mutex mu_;
  std::vector<Entry> log_;    // GUARDED_BY(mu_)
  std::vector<Entry> noops_;  // GUARDED_BY(mu_)
};

class Cluster {
 public:
  explicit Cluster(int n, int groups = 1) : groups_(groups) {
    for (int i = 0; i < n; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
    for (int i = 0; i < n; ++i) machines_.push_back(std::make_unique<RecordingStateMachine>());
    running_.resize(n);
    started_.resize(n, false);
  }
  ~Cluster() {
    for (auto& node : running_) node.reset();
  }

  Options OptionsFor(int i) const {
    Options o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = 77;
    o.group_count = groups_;
    o.data_dir = dir_.path() + "/n" + std::to_string(i);
    o.create_if_missing = true;
    for (int g = 0; g < groups_; ++g) {
      o.state_machines.push_back({static_cast<uint32_t>(g), machines_[i].get()});
    }
    o.propose_timeout_ms = propose_timeout_ms;
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 100;
    o.chosen_cache_size = chosen_cache_size;
    o.log_level = LogLevel::kNone;
    return o;
  }

  Status Start(int i) {
    // A restarted node replays its log into a fresh (in-memory) state machine.
    machines_[i]->Clear();
    Options o = OptionsFor(i);
    // Only the first start creates the log: a restart must find it.
    o.create_if_missing = !started_[i];
    started_[i] = true;
    return Node::Open(o, &running_[i]);
  }
  void StartAll() {
    for (size_t i = 0; i < nodes_.size(); ++i) ASSERT_TRUE(Start(static_cast<int>(i)).ok());
  }
  void Stop(int i) { running_[i].reset(); }
  Node* node(int i) { return running_[i].get(); }
  // Used by nodes started from now on.
  int propose_timeout_ms = 10000;
  size_t chosen_cache_size = Options().chosen_cache_size;
  RecordingStateMachine* machine(int i) { return machines_[i].get(); }
  const NodeInfo& info(int i) const { return nodes_[i]; }

 private:
  const int groups_;
  TempDir dir_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::unique_ptr<RecordingStateMachine>> machines_;
  std::vector<std::unique_ptr<Node>> running_;
  std::vector<bool> started_;  // Start(i) was called before
};

bool AllExecutedSame(Cluster* c, const std::vector<int>& members, size_t count) {
  return WaitUntil([&] {
    for (int i : members) {
      if (c->machine(i)->size() < count) return false;
    }
    return true;
  }) && [&] {
    auto first = c->machine(members[0])->log();
    for (int i : members) {
      if (!(c->machine(i)->log() == first)) return false;
    }
    return true;
  }();
}

TEST(NodeTest, ProposalsFromEveryNodeExecuteInTheSameOrderEverywhere) {
  Cluster c(3);
  c.StartAll();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 20; ++k) {
        uint64_t instance = 0;
        ExecuteContext ctx;
        std::string v = "n" + std::to_string(i) + "-" + std::to_string(k);
        Status s = c.node(i)->Propose(0, v, &instance, &ctx);
        if (!s.ok() || ctx.output != "ok:" + v) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, 60));
  auto log = c.machine(0)->log();
  std::set<std::string> distinct;
  for (size_t i = 0; i < log.size(); ++i) {
    distinct.insert(log[i].value);
    if (i > 0) {
      EXPECT_LT(log[i - 1].instance, log[i].instance);
    }
  }
  EXPECT_EQ(distinct.size(), 60u);
  EXPECT_GE(c.node(0)->GetNowInstanceId(0), 60u);
}

TEST(NodeTest, ProposeReportsTheInstanceAndTheStateMachineResult) {
  Cluster c(3);
  c.StartAll();
  uint64_t instance = 0;
  ExecuteContext ctx;
  ASSERT_TRUE(c.node(1)->Propose(0, "hello", &instance, &ctx).ok());
  EXPECT_EQ(ctx.output, "ok:hello");
  ASSERT_TRUE(WaitUntil([&] { return c.machine(1)->size() >= 1; }));
  auto log = c.machine(1)->log();
  bool found = false;
  for (const auto& e : log) found = found || (e.value == "hello" && e.instance == instance);
  EXPECT_TRUE(found);
  EXPECT_TRUE(ctx.result.ok()) << ctx.result.ToString();
  // The state machine's own refusal comes back in ctx->result; Propose says
  // only that the value was chosen and executed.
  const uint64_t before = instance;
  Status s = c.node(1)->Propose(0, "reject-me", &instance, &ctx);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(ctx.result.IsConflict()) << ctx.result.ToString();
  EXPECT_GT(instance, before);
  // Without a ctx the application's result is not reported, and Propose is
  // still ok.
  s = c.node(1)->Propose(0, "reject-me-too", &instance, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // A reused ctx does not keep the previous call's result.
  ASSERT_TRUE(c.node(1)->Propose(0, "fine", &instance, &ctx).ok());
  EXPECT_TRUE(ctx.result.ok()) << ctx.result.ToString();
}

TEST(NodeTest, ExecuteResultsThatLookLikeChorusCodesAreNotPropose) {
  // A caller that retries on Busy or Timeout must never see those codes for
  // a value that was chosen and executed: it would propose it again.
  Cluster c(3);
  c.StartAll();
  for (const std::string v : {"busy-1", "timeout-1"}) {
    uint64_t instance = 0;
    ExecuteContext ctx;
    Status s = c.node(0)->Propose(0, v, &instance, &ctx);
    EXPECT_TRUE(s.ok()) << v << ": " << s.ToString();
    EXPECT_TRUE(v[0] == 'b' ? ctx.result.IsBusy() : ctx.result.IsTimeout()) << ctx.result.ToString();
    uint32_t index = 0;
    s = c.node(1)->BatchPropose(0, v + "-batched", &instance, &index, &ctx);
    EXPECT_TRUE(s.ok()) << v << ": " << s.ToString();
    EXPECT_TRUE(v[0] == 'b' ? ctx.result.IsBusy() : ctx.result.IsTimeout()) << ctx.result.ToString();
  }
  // Each value was executed exactly once on every replica.
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, 4));
  EXPECT_EQ(c.machine(2)->size(), 4u);
}

TEST(NodeTest, StoppedNodeCatchesUpAfterRestart) {
  Cluster c(3);
  c.StartAll();
  uint64_t instance = 0;
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(c.node(0)->Propose(0, "a" + std::to_string(k), &instance).ok());
  c.Stop(2);
  // The other two go on without it.
  for (int k = 0; k < 20; ++k) {
    ASSERT_TRUE(c.node(k % 2)->Propose(0, "b" + std::to_string(k), &instance).ok());
  }
  ASSERT_TRUE(c.Start(2).ok());
  // It replays its own log and learns what it missed from its peers.
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, 25));
  // And it takes part again.
  ASSERT_TRUE(c.node(2)->Propose(0, "after-restart", &instance).ok());
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, 26));
}

TEST(NodeTest, LaggingNodeCatchesUpFromPeersWhoseCacheIsSmall) {
  Cluster c(3);
  c.chosen_cache_size = 2;
  c.StartAll();
  c.Stop(2);
  uint64_t instance = 0;
  for (int k = 0; k < 40; ++k) {
    ASSERT_TRUE(c.node(0)->Propose(0, "c" + std::to_string(k), &instance).ok());
  }
  // A transport keeps the frames it could not deliver across reconnects, so
  // node 2 could receive every ACCEPT and CHOSEN it missed and never need to
  // catch up. Restarting its peers drops those queues: now it must ask.
  for (int i : {0, 1}) {
    c.Stop(i);
    ASSERT_TRUE(c.Start(i).ok());
  }
  ASSERT_TRUE(c.Start(2).ok());
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, 40));
  // All but the last two values came from a peer's log, read by its
  // catch-up reader thread, not by its group's loop. (The reader counts a
  // reply once the transport took it, which may be after node 2 applied it.)
  EXPECT_TRUE(WaitUntil([&] {
    uint64_t served = 0;
    for (int i : {0, 1}) {
      served += static_cast<NodeImpl*>(c.node(i))->catchup_reader_for_testing().served();
    }
    return served > 0;
  }));
}

TEST(NodeTest, QuorumLossTimesOutAndRecovers) {
  Cluster c(3);
  c.propose_timeout_ms = 5000;
  c.StartAll();
  uint64_t instance = 0;
  ASSERT_TRUE(c.node(0)->Propose(0, "before", &instance).ok());
  c.Stop(1);
  c.Stop(2);
  // Node 0 alone has no majority: its proposal must time out.
  Status s = c.node(0)->Propose(0, "alone", &instance);
  EXPECT_TRUE(s.IsTimeout()) << s.ToString();
  ASSERT_TRUE(c.Start(1).ok());
  s = c.node(0)->Propose(0, "back", &instance);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // "back" and the values before it are executed by both live nodes, in one order.
  ASSERT_TRUE(WaitUntil([&] {
    auto v = c.machine(1)->values();
    return std::find(v.begin(), v.end(), "back") != v.end();
  }));
  EXPECT_EQ(c.machine(0)->values().front(), "before");
}

TEST(NodeTest, BatchProposeFrom32ThreadsGivesEachItsOwnResult) {
  Cluster c(3);
  c.StartAll();
  constexpr int kThreads = 32, kEach = 10;
  struct Result {
    Status status;
    uint64_t instance = 0;
    uint32_t index = 0;
    std::string output;
  };
  std::vector<std::vector<Result>> results(kThreads, std::vector<Result>(kEach));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kEach; ++k) {
        ExecuteContext ctx;
        Result& r = results[t][k];
        r.status = c.node(t % 3)->BatchPropose(0, "t" + std::to_string(t) + "-" + std::to_string(k),
                                               &r.instance, &r.index, &ctx);
        r.output = ctx.output;
      }
    });
  }
  for (auto& t : threads) t.join();
  // Rebuild (instance, index) -> value from what node 0 executed.
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, kThreads * kEach));
  std::map<std::pair<uint64_t, uint32_t>, std::string> executed;
  uint64_t last_instance = UINT64_MAX;
  uint32_t index = 0;
  for (const auto& e : c.machine(0)->log()) {
    index = (e.instance == last_instance) ? index + 1 : 0;
    last_instance = e.instance;
    executed[{e.instance, index}] = e.value;
  }
  size_t batched = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int k = 0; k < kEach; ++k) {
      const Result& r = results[t][k];
      const std::string v = "t" + std::to_string(t) + "-" + std::to_string(k);
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_EQ(r.output, "ok:" + v);
      EXPECT_EQ(executed[std::make_pair(r.instance, r.index)], v);
      if (r.index > 0) ++batched;
    }
  }
  // With 32 concurrent proposers, some values must have shared an instance.
  EXPECT_GT(batched, 0u);
}

TEST(NodeTest, GarbageOnTheWireDoesNotDisturbANode) {
  Cluster c(3);
  c.StartAll();
  for (int round = 0; round < 5; ++round) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(c.info(0).port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(0, connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    std::string junk(4096, '\0');
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 131 + round) & 0xff);
    ASSERT_GT(write(fd, junk.data(), junk.size()), 0);
    close(fd);
  }
  uint64_t instance = 0;
  for (int k = 0; k < 10; ++k) {
    Status s = c.node(0)->Propose(0, "still-fine-" + std::to_string(k), &instance);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(AllExecutedSame(&c, {0, 1, 2}, 10));
}

TEST(NodeTest, ProposeRejectsBadInput) {
  Cluster c(1, 2);
  c.StartAll();
  uint64_t instance = 0;
  EXPECT_TRUE(c.node(0)->Propose(7, "x", &instance).IsInvalidArgument());
  Options o = c.OptionsFor(0);
  std::string big(o.max_value_bytes + 1, 'x');
  EXPECT_TRUE(c.node(0)->Propose(0, big, &instance).IsTooLarge());
  ExecuteContext ctx;
  ctx.state_machine_id = 42;
  EXPECT_TRUE(c.node(0)->Propose(0, "x", &instance, &ctx).IsInvalidArgument());
  // A single node is its own majority: both groups work independently.
  EXPECT_TRUE(c.node(0)->Propose(0, "g0", &instance).ok());
  EXPECT_TRUE(c.node(0)->Propose(1, "g1", &instance).ok());
  EXPECT_EQ(c.node(0)->GetNowInstanceId(1), 1u);
  EXPECT_EQ(c.node(0)->node_id(), c.info(0).id());
}

TEST(NodeTest, StopAnswersWaitersWithStopped) {
  Cluster c(3);
  c.StartAll();
  c.Stop(1);
  c.Stop(2);
  std::atomic<int> stopped{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      uint64_t instance = 0;
      Status s = c.node(0)->Propose(0, "never", &instance);
      (s.IsStopped() ? stopped : other)++;
    });
  }
  // All four are inside Propose (node 0 alone can choose nothing).
  ASSERT_TRUE(WaitUntil([&] { return GroupOf(c.node(0))->waiting_proposals() == 4; }));
  c.node(0)->Stop();
  for (auto& t : threads) t.join();
  EXPECT_EQ(stopped.load(), 4);
  EXPECT_EQ(other.load(), 0);
  uint64_t instance = 0;
  EXPECT_TRUE(c.node(0)->Propose(0, "late", &instance).IsStopped());
}

TEST(NodeTest, OverloadIsRejectedWithBusy) {
  Cluster c(3);
  c.StartAll();
  c.Stop(1);
  c.Stop(2);
  Options o = c.OptionsFor(0);
  o.max_waiting_proposals = 2;
  o.propose_timeout_ms = 500;
  c.Stop(0);
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  // Two proposers keep the group's two waiting slots taken (node 0 has no
  // majority, so each call waits until its deadline and they call again).
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      uint64_t instance = 0;
      while (!done.load()) node->Propose(0, "stuck", &instance);
    });
  }
  // A third proposer is refused at once with Busy (it may slip in while one
  // of the two is between calls: then it waits its deadline and tries again).
  Status last;
  EXPECT_TRUE(WaitUntil([&] {
    uint64_t instance = 0;
    last = node->Propose(0, "one-too-many", &instance);
    return last.IsBusy() && last.message().find("overloaded") != std::string::npos;
  })) << last.ToString();
  done = true;
  node->Stop();
  for (auto& t : threads) t.join();
}

class OptionsTest : public ::testing::Test {
 protected:
  Options Valid() {
    Options o;
    o.self = NodeInfo{"127.0.0.1", port_};
    o.nodes = {o.self};
    o.data_dir = dir_.path() + "/data";
    o.create_if_missing = true;
    o.state_machines = {{0, &sm1_}};
    o.log_level = LogLevel::kNone;
    return o;
  }
  Status Open(const Options& o) {
    std::unique_ptr<Node> node;
    return Node::Open(o, &node);
  }
  TempDir dir_;
  uint16_t port_ = FreePort();
  RecordingStateMachine sm1_{1}, sm1b_{1}, sm2_{2};
};

TEST_F(OptionsTest, ValidOptionsOpen) { EXPECT_TRUE(Open(Valid()).ok()); }

TEST_F(OptionsTest, EveryInvalidOptionGetsItsStatus) {
  Options o = Valid();
  o.nodes.clear();
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.self = NodeInfo{"127.0.0.1", static_cast<uint16_t>(port_ + 1)};
  Status s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("not in nodes"), std::string::npos) << s.ToString();

  o = Valid();
  o.nodes.push_back(o.self);
  s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("twice"), std::string::npos) << s.ToString();

  o = Valid();
  o.group_count = 0;
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.state_machines = {{0, &sm1_}, {0, &sm1b_}};
  s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("two state machines with id 1"), std::string::npos) << s.ToString();

  o = Valid();
  o.state_machines = {{0, &sm1_}, {1, &sm2_}};  // group 1 does not exist
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.data_dir = "";
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.propose_timeout_ms = 0;
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.max_value_bytes = o.max_frame_bytes;
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  // The frame must carry the largest protocol message (a full PROMISE or a
  // catch-up batch), not just one value.
  o = Valid();
  o.max_frame_bytes = 16u << 20;
  s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("max_frame_bytes"), std::string::npos) << s.ToString();

  o = Valid();
  o.max_inflight = 1 << 21;  // beyond what the acceptance window may hold
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.max_inbound_queue_bytes = o.max_frame_bytes - 1;
  EXPECT_TRUE(Open(o).IsInvalidArgument());

  o = Valid();
  o.batch_max_inflight = -1;
  s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("batch_max_inflight"), std::string::npos) << s.ToString();
}

TEST_F(OptionsTest, UnwritableDataDirIsRefused) {
  // A path below a regular file can never be created, even by root.
  std::string file = dir_.path() + "/plain-file";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  Options o = Valid();
  o.data_dir = file + "/data";
  Status s = Open(o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("plain-file"), std::string::npos) << s.ToString();
}

TEST_F(OptionsTest, ForeignDataDirIsRefused) {
  Options o = Valid();
  ASSERT_TRUE(Open(o).ok());  // creates the logs of cluster 1
  o.cluster_id = 2;
  Status s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("cluster"), std::string::npos) << s.ToString();
}

TEST_F(OptionsTest, MissingOrEmptyDataDirNeedsCreateIfMissing) {
  Options o = Valid();
  o.create_if_missing = false;
  Status s = Open(o);  // the data dir does not exist
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(o.data_dir), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("create_if_missing"), std::string::npos) << s.ToString();
  struct stat st;
  EXPECT_NE(0, stat(o.data_dir.c_str(), &st)) << "a refused Open created the data dir";
  ASSERT_EQ(0, mkdir(o.data_dir.c_str(), 0755));  // empty, like an unmounted volume
  s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  // The first start creates it; later starts reopen it without the option.
  o.create_if_missing = true;
  ASSERT_TRUE(Open(o).ok());
  o.create_if_missing = false;
  s = Open(o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // A group whose own directory went missing is refused too.
  o.group_count = 2;
  s = Open(o);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(o.data_dir + "/g1"), std::string::npos) << s.ToString();
}

TEST_F(OptionsTest, DataDirOfAnotherNodeIsRefused) {
  Options o = Valid();
  ASSERT_TRUE(Open(o).ok());
  // The same data dir under another node's address (copied or swapped).
  Options other = o;
  other.self = NodeInfo{"127.0.0.1", FreePort()};
  other.nodes = {other.self};
  other.create_if_missing = false;
  Status s = Open(other);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(o.self.ToString()), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(other.self.ToString()), std::string::npos) << s.ToString();
  EXPECT_TRUE(Open(o).ok());  // its own node still opens it
}

TEST_F(OptionsTest, StateMachinesOfSeveralGroups) {
  Options o = Valid();
  o.group_count = 2;
  o.state_machines = {{0, &sm1_}, {0, &sm2_}, {1, &sm1b_}};
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  uint64_t instance = 0;
  // Group 0 has two state machines: the proposer must pick one.
  EXPECT_TRUE(node->Propose(0, "which?", &instance).IsInvalidArgument());
  ExecuteContext ctx;
  ctx.state_machine_id = 2;
  ASSERT_TRUE(node->Propose(0, "for-2", &instance, &ctx).ok());
  ASSERT_TRUE(node->Propose(1, "for-g1", &instance).ok());
  EXPECT_EQ(sm2_.values(), std::vector<std::string>{"for-2"});
  EXPECT_TRUE(sm1_.values().empty());
  EXPECT_EQ(sm1b_.values(), std::vector<std::string>{"for-g1"});
}

// ---- Stop, batch sizes and replay: edge cases ----

// Options of a one-node cluster on a free port with its log under `dir`
// and `sm` (if any) as group 0's state machine.
Options SingleNodeOptions(const TempDir& dir, StateMachine* sm) {
  Options o;
  o.self = NodeInfo{"127.0.0.1", FreePort()};
  o.nodes = {o.self};
  o.data_dir = dir.path() + "/d";
  o.create_if_missing = true;
  if (sm != nullptr) o.state_machines = {{0, sm}};
  o.log_level = LogLevel::kNone;
  return o;
}

// Blocks Execute of values starting with "block" until released.
class GateStateMachine : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo&, const std::string& value, ExecuteContext*) override {
    if (value.rfind("block", 0) == 0) {
      std::unique_lock<std::mutex> l(mu_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait(l, [&] { return open_; });
    }
    return Status::OK();
  }
  void WaitEntered() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return entered_; });
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false, open_ = false;
};

TEST(NodeEdgeTest, StopAnswersProposalsStillQueued) {
  TempDir dir;
  GateStateMachine sm;
  ManualTime time;  // no timer event: only b's proposal can be queued
  Options o = SingleNodeOptions(dir, &sm);
  o.propose_timeout_ms = 1000;
  std::unique_ptr<Node> node;
  ASSERT_TRUE(NodeImpl::OpenWithHooks(o, time.hooks(), &node).ok());
  Group* group = GroupOf(node.get());
  std::thread a([&] { uint64_t i; node->Propose(0, "block", &i); });
  sm.WaitEntered();  // the loop is busy executing "block"
  Status queued;
  std::thread b([&] { uint64_t i; queued = node->Propose(0, "queued", &i); });
  ASSERT_TRUE(WaitUntil([&] { return group->queued_events() == 1; }));  // b's event
  std::thread stopper([&] { node->Stop(); });
  ASSERT_TRUE(WaitUntil([&] { return group->queue_closed(); }));
  sm.Open();
  stopper.join();
  a.join();
  b.join();
  EXPECT_TRUE(queued.IsStopped()) << queued.ToString();
}

TEST(NodeEdgeTest, TwoValidValuesInOneBatchAreNotTooLarge) {
  TempDir dir;
  RecordingStateMachine sm;
  ManualTime time;  // the batch delay passes only when the test says so
  Options o = SingleNodeOptions(dir, &sm);
  o.batch_delay_ms = 300;  // both values go to one pending batch
  std::unique_ptr<Node> node;
  ASSERT_TRUE(NodeImpl::OpenWithHooks(o, time.hooks(), &node).ok());
  Group* group = GroupOf(node.get());
  Status s1, s2;
  std::thread t1([&] { uint64_t i; uint32_t b; s1 = node->BatchPropose(0, std::string(900 << 10, 'a'), &i, &b); });
  ASSERT_TRUE(WaitUntil([&] { return group->batch_pending() == 1; }));
  // Together they pass batch_max_bytes: the first leaves alone at once, and
  // the second (max_value_bytes >= batch_max_bytes) fills a batch of its own.
  ASSERT_GE(o.max_value_bytes, o.batch_max_bytes);
  std::thread t2([&] { uint64_t i; uint32_t b; s2 = node->BatchPropose(0, std::string(o.max_value_bytes, 'b'), &i, &b); });
  t1.join();
  t2.join();
  EXPECT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_TRUE(s2.ok()) << s2.ToString();
}

class CheckpointStateMachine : public RecordingStateMachine {
 public:
  CheckpointStateMachine(int id, uint64_t checkpoint) : RecordingStateMachine(id), checkpoint_(checkpoint) {}
  uint64_t GetCheckpointInstanceId(uint32_t) const override { return checkpoint_; }
 private:
  uint64_t checkpoint_;
};

TEST(NodeEdgeTest, ReplayHonoursEachStateMachinesCheckpoint) {
  TempDir dir;
  Options o = SingleNodeOptions(dir, nullptr);
  {
    RecordingStateMachine sm1(1), sm2(2);
    o.state_machines = {{0, &sm1}, {0, &sm2}};
    std::unique_ptr<Node> node;
    ASSERT_TRUE(Node::Open(o, &node).ok());
    ExecuteContext c1, c2;
    c1.state_machine_id = 1;
    c2.state_machine_id = 2;
    uint64_t i;
    for (int k = 0; k < 4; ++k) ASSERT_TRUE(node->Propose(0, "sm1-" + std::to_string(k), &i, &c1).ok());
    ASSERT_TRUE(node->Propose(0, "sm2", &i, &c2).ok());
  }
  // sm1 durably reflects instances 0..3; sm2 is in-memory (checkpoint 0).
  CheckpointStateMachine sm1(1, 4), sm2(2, 0);
  o.state_machines = {{0, &sm1}, {0, &sm2}};
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  EXPECT_EQ(sm2.values(), std::vector<std::string>{"sm2"});
  EXPECT_TRUE(sm1.values().empty()) << "sm1 re-executed " << sm1.values().size()
                                    << " values below its checkpoint";
}

TEST(NodeEdgeTest, DestroyAfterStopWhileAProposalWasQueued) {
  TempDir dir;
  GateStateMachine sm;
  ManualTime time;  // no timer event: only b's proposal can be queued
  Options o = SingleNodeOptions(dir, &sm);
  o.propose_timeout_ms = 300;
  std::unique_ptr<Node> node;
  ASSERT_TRUE(NodeImpl::OpenWithHooks(o, time.hooks(), &node).ok());
  Node* raw = node.get();
  Group* group = GroupOf(raw);
  std::thread a([&] { uint64_t i; raw->Propose(0, "block", &i); });
  sm.WaitEntered();
  std::thread b([&] { uint64_t i; raw->Propose(0, "queued", &i); });
  ASSERT_TRUE(WaitUntil([&] { return group->queued_events() == 1; }));  // b's event
  std::thread stopper([&] { raw->Stop(); });
  ASSERT_TRUE(WaitUntil([&] { return group->queue_closed(); }));
  sm.Open();
  stopper.join();
  a.join();
  // b may still be on its way out of Propose: destroying the node must wait for it.
  node.reset();
  b.join();
}
}  // namespace
}  // namespace node_test
}  // namespace chorus

namespace chorus {
namespace node_test {
namespace {

// A LogStorage whose writes can be made to fail, over the leveldb one.
class FailingLogStorage : public LogStorage {
 public:
  FailingLogStorage(std::unique_ptr<LogStorage> base, std::atomic<bool>* fail)
      : base_(std::move(base)), fail_(fail) {}
  Status Write(const LogWriteBatch& batch, bool sync) override {
    if (fail_->load()) return Status::IOError("injected: disk full");
    return base_->Write(batch, sync);
  }
  Status Get(uint64_t instance, std::string* record) override { return base_->Get(instance, record); }
  Status GetMaxInstanceId(uint64_t* i) override { return base_->GetMaxInstanceId(i); }
  Status GetMinInstanceId(uint64_t* i) override { return base_->GetMinInstanceId(i); }
  Status GetVariable(const std::string& n, std::string* v) override { return base_->GetVariable(n, v); }

 private:
  std::unique_ptr<LogStorage> base_;
  std::atomic<bool>* fail_;
};

TEST(NodeEdgeTest, FailedLogWriteHaltsTheGroupWithIOError) {
  TempDir dir;
  RecordingStateMachine sm;
  std::atomic<bool> fail{false};
  Options o = SingleNodeOptions(dir, &sm);
  o.data_dir.clear();  // the log comes from log_storage_factory
  o.log_storage_factory = [&](uint32_t group, std::unique_ptr<LogStorage>* out) {
    LevelDbLogOptions lo;
    lo.group = group;
    lo.create_if_missing = true;
    std::unique_ptr<LogStorage> base;
    Status s = OpenLevelDbLogStorage(dir.path() + "/g" + std::to_string(group), lo, &base);
    if (s.ok()) out->reset(new FailingLogStorage(std::move(base), &fail));
    return s;
  };
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  uint64_t instance = 0;
  ASSERT_TRUE(node->Propose(0, "before", &instance).ok());
  EXPECT_TRUE(node->GetGroupStatus(0).ok());
  fail = true;
  Status s = node->Propose(0, "lost", &instance);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(node->GetGroupStatus(0).IsIOError());
  // Halted: nothing more is applied, later proposals fail at once.
  fail = false;
  EXPECT_TRUE(node->Propose(0, "after", &instance).IsIOError());
  EXPECT_EQ(sm.values(), std::vector<std::string>{"before"});
  EXPECT_TRUE(node->GetGroupStatus(5).IsInvalidArgument());
  node->Stop();
  EXPECT_TRUE(node->GetGroupStatus(0).IsStopped());
}

// Proposes to its own group from inside Execute.
class ReentrantStateMachine : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext*) override {
    if (value == "reenter") {
      uint64_t instance = 0;
      inner = node->Propose(info.group, "inner", &instance);
    }
    return Status::OK();
  }
  Node* node = nullptr;
  Status inner;
};

TEST(NodeEdgeTest, ProposeFromExecuteIsRefusedNotDeadlocked) {
  TempDir dir;
  ReentrantStateMachine sm;
  Options o = SingleNodeOptions(dir, &sm);
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  sm.node = node.get();
  uint64_t instance = 0;
  ASSERT_TRUE(node->Propose(0, "reenter", &instance).ok());
  EXPECT_TRUE(sm.inner.IsInvalidArgument()) << sm.inner.ToString();
}

}  // namespace
}  // namespace node_test
}  // namespace chorus

namespace chorus {
namespace node_test {
namespace {

TEST(NodeEdgeTest, ProposalsWaitingTooLongForTheGroupGetBusy) {
  // Node 0 alone (no majority) and max_inflight 1: the group hands the core
  // 2 x max_inflight proposals, which hold it until their deadline (Timeout);
  // the two others of four concurrent proposals wait in the group's backlog
  // and are refused with Busy once they waited max_queue_wait_ms.
  Cluster c(3);
  Options o = c.OptionsFor(0);
  o.max_inflight = 1;
  o.max_queue_wait_ms = 200;
  o.propose_timeout_ms = 3000;
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  std::atomic<int> busy{0}, timeout{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      uint64_t instance = 0;
      Status s = node->Propose(0, "p" + std::to_string(t), &instance);
      const bool overloaded = s.IsBusy() && s.message().find("overloaded") != std::string::npos;
      (overloaded ? busy : s.IsTimeout() ? timeout : other)++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(busy.load(), 2);
  EXPECT_EQ(timeout.load(), 2);
  EXPECT_EQ(other.load(), 0);
}

}  // namespace
}  // namespace node_test
}  // namespace chorus
