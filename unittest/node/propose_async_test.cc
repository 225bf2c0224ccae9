// Node::ProposeAsync / BatchProposeAsync on a real 3-node cluster over
// loopback TCP: values chosen in call order with their instance and output;
// exactly one done per call for OK, Timeout (quorum lost), Busy (over
// max_async_proposals) and Stopped (Stop, the destructor, calls after
// Stop); chaining from done; many calls in flight from one thread; async
// mixed with blocking Propose. Tests wait for states, never for a time.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/node.h"
#include "node/node_impl.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace propose_async_test {
namespace {

using testing::FreePort;
using testing::TempDir;
using testing::WaitUntil;

// Records (instance, value) and answers "ok:<value>" in ctx->output; the
// thread Execute runs on (the group's loop) is remembered.
class Recorder : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back({info.instance, value});
    loop_ = std::this_thread::get_id();
    if (ctx != nullptr) {
      ctx->output = "ok:" + value;
      if (ctx->user != nullptr) ctx->output += "+user";
    }
    return value == "refuse" ? Status::Conflict("refused by the state machine") : Status::OK();
  }
  std::vector<std::pair<uint64_t, std::string>> log() const {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  std::thread::id loop() const {
    std::lock_guard<std::mutex> lock(mu_);
    return loop_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> log_;  // guarded by mu_
  std::thread::id loop_;                               // guarded by mu_
};

// What the dones of a test saw, by call number. Thread-safe.
class Outcomes {
 public:
  struct One {
    Status status;
    uint64_t instance = 0;
    uint32_t batch_index = 0;
    std::string output;
    Status result;
    uint64_t proposal_id = 0;
    std::thread::id thread;
  };
  // A done for call `i`.
  ProposeCallback Done(int i) {
    return [this, i](const Status& s, ProposeResult* r) {
      std::lock_guard<std::mutex> lock(mu_);
      calls_[i]++;
      One& o = seen_[i];
      o.status = s;
      o.instance = r->instance;
      o.batch_index = r->batch_index;
      o.output = std::move(r->output);
      o.result = r->result;
      o.proposal_id = r->proposal_id;
      o.thread = std::this_thread::get_id();
    };
  }
  size_t answered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }
  bool WaitFor(size_t n) {
    return WaitUntil([&] { return answered() >= n; });
  }
  // Every call in [0, n) had exactly one done.
  bool ExactlyOnce(int n) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (calls_.size() != static_cast<size_t>(n)) return false;
    for (int i = 0; i < n; ++i) {
      auto it = calls_.find(i);
      if (it == calls_.end() || it->second != 1) return false;
    }
    return true;
  }
  One Get(int i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.at(i);
  }

 private:
  mutable std::mutex mu_;
  std::map<int, int> calls_;  // guarded by mu_
  std::map<int, One> seen_;   // guarded by mu_
};

class ProposeAsyncTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 3;
  ProposeAsyncTest() {
    for (int i = 0; i < kNodes; ++i) infos_.push_back(NodeInfo{"127.0.0.1", FreePort()});
  }
  ~ProposeAsyncTest() override {
    for (auto& n : nodes_) n.reset();
  }
  Options OptionsFor(int i) {
    Options o;
    o.self = infos_[i];
    o.nodes = infos_;
    o.cluster_id = 91;
    o.data_dir = dir_.path() + "/n" + std::to_string(i);
    o.create_if_missing = true;
    o.state_machines = {{0, &machines_[i]}};
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 100;
    o.log_level = LogLevel::kNone;
    // Calls that must stay outstanding (quorum lost) wait for the test, not
    // for a deadline; the Timeout test sets its own.
    o.propose_timeout_ms = 60000;
    o.max_queue_wait_ms = 60000;
    return o;
  }
  void StartAll(int max_async = Options().max_async_proposals) {
    for (int i = 0; i < kNodes; ++i) {
      Options o = OptionsFor(i);
      o.max_async_proposals = max_async;
      ASSERT_TRUE(Node::Open(o, &nodes_[i]).ok());
    }
  }
  // Nodes 1 and 2 stop: node 0 alone can choose nothing.
  void LoseQuorum() {
    nodes_[1].reset();
    nodes_[2].reset();
  }
  Node* node(int i) { return nodes_[i].get(); }
  int Outstanding() {
    return static_cast<NodeImpl*>(node(0))->group_for_testing(0)->async_outstanding();
  }

  TempDir dir_;
  std::vector<NodeInfo> infos_;
  Recorder machines_[kNodes];
  // What the dones saw; outlives the nodes, whose threads run the dones.
  Outcomes out;
  std::unique_ptr<Node> nodes_[kNodes];
};

TEST_F(ProposeAsyncTest, ValuesAreChosenInCallOrderWithTheirInstanceAndOutput) {
  StartAll();
  const int n = 300;
  // All submitted from this thread without waiting: many in flight at once.
  for (int i = 0; i < n; ++i) node(0)->ProposeAsync(0, "v" + std::to_string(i), out.Done(i));
  ASSERT_TRUE(out.WaitFor(n));
  EXPECT_TRUE(out.ExactlyOnce(n));
  std::map<uint64_t, std::string> executed;
  for (const auto& [instance, value] : machines_[0].log()) executed[instance] = value;
  uint64_t previous = 0;
  std::set<uint64_t> ids;
  for (int i = 0; i < n; ++i) {
    const Outcomes::One o = out.Get(i);
    ASSERT_TRUE(o.status.ok()) << i << ": " << o.status.ToString();
    EXPECT_TRUE(o.result.ok());
    EXPECT_EQ(o.output, "ok:v" + std::to_string(i));
    EXPECT_EQ(executed[o.instance], "v" + std::to_string(i)) << "instance " << o.instance;
    if (i > 0) {
      EXPECT_GT(o.instance, previous) << "call " << i << " chosen before call " << i - 1;
    }
    previous = o.instance;
    EXPECT_NE(o.proposal_id, 0u);
    ids.insert(o.proposal_id);
    // done ran on the group's loop, the thread that ran Execute.
    EXPECT_EQ(o.thread, machines_[0].loop());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));
  EXPECT_EQ(Outstanding(), 0);
}

TEST_F(ProposeAsyncTest, BatchedCallsShareInstancesAndKeepTheirOwnResults) {
  StartAll();
  const int n = 2000;
  int marker = 0;
  ExecuteContext ctx;
  ctx.user = &marker;
  for (int i = 0; i < n; ++i) {
    const std::string v = i == 7 ? "refuse" : "b" + std::to_string(i);
    node(0)->BatchProposeAsync(0, v, out.Done(i), &ctx);
  }
  ASSERT_TRUE(out.WaitFor(n));
  EXPECT_TRUE(out.ExactlyOnce(n));
  std::set<std::pair<uint64_t, uint32_t>> slots;
  std::set<uint64_t> instances;
  for (int i = 0; i < n; ++i) {
    const Outcomes::One o = out.Get(i);
    ASSERT_TRUE(o.status.ok()) << i << ": " << o.status.ToString();
    const std::string v = i == 7 ? "refuse" : "b" + std::to_string(i);
    EXPECT_EQ(o.output, "ok:" + v + "+user");
    // Execute's own result comes in result, never in chorus's Status.
    EXPECT_EQ(o.result.IsConflict(), i == 7);
    slots.insert({o.instance, o.batch_index});
    instances.insert(o.instance);
  }
  EXPECT_EQ(slots.size(), static_cast<size_t>(n));  // each its own position
  EXPECT_LT(instances.size(), static_cast<size_t>(n));  // and some share an instance
}

TEST_F(ProposeAsyncTest, QuorumLostGivesTimeoutOnce) {
  StartAll();
  LoseQuorum();
  ExecuteContext ctx;
  ctx.timeout_ms = 200;
  node(0)->ProposeAsync(0, "alone", out.Done(0), &ctx);
  node(0)->BatchProposeAsync(0, "alone-batched", out.Done(1), &ctx);
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_TRUE(out.Get(0).status.IsTimeout()) << out.Get(0).status.ToString();
  EXPECT_TRUE(out.Get(1).status.IsTimeout()) << out.Get(1).status.ToString();
  EXPECT_EQ(out.Get(0).instance, 0u);
  EXPECT_NE(out.Get(0).proposal_id, 0u);  // to look the value up later
  EXPECT_EQ(Outstanding(), 0);
  nodes_[0].reset();
  EXPECT_TRUE(out.ExactlyOnce(2));  // the destructor answers nothing twice
}

TEST_F(ProposeAsyncTest, OverTheBoundIsBusyAtOnceAndTheRestStopAtShutdown) {
  StartAll(/*max_async=*/3);
  LoseQuorum();
  for (int i = 0; i < 3; ++i) node(0)->ProposeAsync(0, "stuck", out.Done(i));
  EXPECT_EQ(out.answered(), 0u);
  EXPECT_EQ(Outstanding(), 3);
  // The fourth is refused before the call returns, on this thread.
  node(0)->ProposeAsync(0, "one-too-many", out.Done(3));
  ASSERT_EQ(out.answered(), 1u);
  const Outcomes::One busy = out.Get(3);
  EXPECT_TRUE(busy.status.IsBusy()) << busy.status.ToString();
  EXPECT_NE(busy.status.message().find("max_async_proposals"), std::string::npos);
  EXPECT_EQ(busy.thread, std::this_thread::get_id());
  EXPECT_EQ(busy.proposal_id, 0u);  // never queued
  // So is a bad group, and a value over max_value_bytes.
  node(0)->ProposeAsync(9, "x", out.Done(4));
  node(0)->ProposeAsync(0, std::string(Options().max_value_bytes + 1, 'x'), out.Done(5));
  ASSERT_EQ(out.answered(), 3u);
  EXPECT_TRUE(out.Get(4).status.IsInvalidArgument());
  EXPECT_TRUE(out.Get(5).status.IsTooLarge());
  // Destroying the node answers the three in flight, before it returns.
  nodes_[0].reset();
  EXPECT_TRUE(out.ExactlyOnce(6));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(out.Get(i).status.IsStopped()) << i;
}

TEST_F(ProposeAsyncTest, TheDestructorAnswersEveryOutstandingCallWithStopped) {
  StartAll();
  LoseQuorum();
  const int n = 400;  // queued, in the core, in the backlog and in a pending batch
  for (int i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      node(0)->ProposeAsync(0, "s" + std::to_string(i), out.Done(i));
    } else {
      node(0)->BatchProposeAsync(0, "b" + std::to_string(i), out.Done(i));
    }
  }
  nodes_[0].reset();
  EXPECT_TRUE(out.ExactlyOnce(n));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(out.Get(i).status.IsStopped()) << i;
}

TEST_F(ProposeAsyncTest, CallsAfterStopGetStoppedAtOnce) {
  StartAll();
  node(0)->Stop();
  node(0)->ProposeAsync(0, "late", out.Done(0));
  node(0)->BatchProposeAsync(0, "late", out.Done(1));
  ASSERT_EQ(out.answered(), 2u);
  EXPECT_TRUE(out.Get(0).status.IsStopped());
  EXPECT_TRUE(out.Get(1).status.IsStopped());
  node(0)->ProposeAsync(0, "fire and forget", nullptr);  // an empty done is allowed
}

TEST_F(ProposeAsyncTest, ADoneThatProposesAgainChains) {
  StartAll();
  const int n = 200;
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::string>> chosen;  // guarded by mu
  std::atomic<int> failures{0};
  Node* proposer = node(0);
  // Each done proposes the next value: from the loop thread, one at a time.
  std::function<void(int)> next = [&](int i) {
    if (i == n) return;
    const std::string v = "c" + std::to_string(i);
    proposer->ProposeAsync(0, v, [&, i, v](const Status& s, ProposeResult* r) {
      if (!s.ok()) {
        failures++;
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        chosen.push_back({r->instance, v});
      }
      next(i + 1);
    });
  };
  next(0);
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return chosen.size() == static_cast<size_t>(n) || failures > 0;
  }));
  // The last done may still be returning: join the loops before the
  // locals it uses go.
  for (auto& n : nodes_) n.reset();
  EXPECT_EQ(failures.load(), 0);
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 1; i < n; ++i) EXPECT_GT(chosen[i].first, chosen[i - 1].first);
  EXPECT_EQ(chosen.back().second, "c" + std::to_string(n - 1));
}

TEST_F(ProposeAsyncTest, MixedWithBlockingProposeAndBatchPropose) {
  StartAll();
  const int async_n = 600, threads_n = 4, blocking_n = 40;
  std::atomic<int> blocking_ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < blocking_n; ++i) {
        uint64_t instance = 0;
        uint32_t index = 0;
        ExecuteContext ctx;
        const std::string v = "p" + std::to_string(t) + "." + std::to_string(i);
        Status s = t % 2 == 0 ? node(0)->Propose(0, v, &instance, &ctx)
                              : node(0)->BatchPropose(0, v, &instance, &index, &ctx);
        if (s.ok() && ctx.output == "ok:" + v) blocking_ok++;
      }
    });
  }
  for (int i = 0; i < async_n; ++i) {
    const std::string v = "a" + std::to_string(i);
    if (i % 3 == 0) {
      node(0)->BatchProposeAsync(0, v, out.Done(i));
    } else {
      node(0)->ProposeAsync(0, v, out.Done(i));
    }
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(out.WaitFor(async_n));
  EXPECT_TRUE(out.ExactlyOnce(async_n));
  EXPECT_EQ(blocking_ok.load(), threads_n * blocking_n);
  for (int i = 0; i < async_n; ++i) {
    const Outcomes::One o = out.Get(i);
    ASSERT_TRUE(o.status.ok()) << i << ": " << o.status.ToString();
    EXPECT_EQ(o.output, "ok:a" + std::to_string(i));
  }
  // Every value executed once, on every node alike.
  const size_t total = static_cast<size_t>(async_n + threads_n * blocking_n);
  ASSERT_TRUE(WaitUntil([&] {
    return machines_[1].log().size() >= total && machines_[2].log().size() >= total;
  }));
  EXPECT_EQ(machines_[0].log().size(), total);
  EXPECT_EQ(machines_[1].log(), machines_[0].log());
  EXPECT_EQ(machines_[2].log(), machines_[0].log());
}

}  // namespace
}  // namespace propose_async_test
}  // namespace chorus
