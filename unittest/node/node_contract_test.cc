// The contracts of Propose / BatchPropose and StateMachine that an
// application relies on: Execute once per value with its batch index and
// proposal id, ExecuteNoop for every other instance, per-call deadlines, and
// learning the outcome of a proposal after a Timeout.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/node.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace node_contract_test {
namespace {

using testing::FreePort;
using testing::TempDir;
using testing::WaitUntil;

// Remembers every ExecuteInfo it gets and every noop instance.
class InfoStateMachine : public StateMachine {
 public:
  explicit InfoStateMachine(int id = 1) : id_(id) {}
  int id() const override { return id_; }
  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back({info, value, ctx != nullptr});
    if (ctx != nullptr) ctx->output = "done:" + value;
    return Status::OK();
  }
  void ExecuteNoop(uint32_t /*group*/, uint64_t instance) override {
    std::lock_guard<std::mutex> lock(mu_);
    noops_.push_back(instance);
  }

  struct Executed {
    ExecuteInfo info;
    std::string value;
    bool had_ctx;
  };
  std::vector<Executed> values() const {
    std::lock_guard<std::mutex> lock(mu_);
    return values_;
  }
  std::vector<uint64_t> noops() const {
    std::lock_guard<std::mutex> lock(mu_);
    return noops_;
  }
  // The executed value `value`, if any (*found says).
  Executed Find(const std::string& value, bool* found) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Executed& e : values_) {
      if (e.value == value) {
        *found = true;
        return e;
      }
    }
    *found = false;
    return Executed{};
  }
  bool Has(const std::string& value) const {
    bool found = false;
    Find(value, &found);
    return found;
  }

 private:
  const int id_;
  mutable std::mutex mu_;
  std::vector<Executed> values_;  // GUARDED_BY(mu_)
  std::vector<uint64_t> noops_;   // GUARDED_BY(mu_)
};

// A cluster of `n` nodes in this process, each with one InfoStateMachine.
class Replicas {
 public:
  explicit Replicas(int n) {
    for (int i = 0; i < n; ++i) {
      members_.push_back(NodeInfo{"127.0.0.1", FreePort()});
      machines_.push_back(std::make_unique<InfoStateMachine>());
    }
    nodes_.resize(n);
    created_.resize(n, false);
  }
  Options For(int i) {
    Options o;
    o.self = members_[i];
    o.nodes = members_;
    o.data_dir = dir_.path() + "/node" + std::to_string(i);
    o.create_if_missing = !created_[i];
    o.state_machines = {{0, machines_[i].get()}};
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 100;
    o.log_level = LogLevel::kNone;
    return o;
  }
  void Start(int i, const Options& o) {
    Status s = Node::Open(o, &nodes_[i]);
    ASSERT_TRUE(s.ok()) << s.ToString();
    created_[i] = true;
  }
  void Start(int i) { Start(i, For(i)); }
  void Stop(int i) { nodes_[i].reset(); }
  Node* node(int i) { return nodes_[i].get(); }
  InfoStateMachine* machine(int i) { return machines_[i].get(); }
  int size() const { return static_cast<int>(members_.size()); }

 private:
  TempDir dir_;
  std::vector<NodeInfo> members_;
  std::vector<std::unique_ptr<InfoStateMachine>> machines_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<bool> created_;
};

TEST(NodeContractTest, ABatchedInstanceExecutesEachValueOnceWithItsIndexAndProposalId) {
  Replicas r(3);
  for (int i = 0; i < 3; ++i) {
    Options o = r.For(i);
    // A batch leaves when it holds 4 values (the delay is far away): the 4
    // calls below share one instance whatever the timing.
    o.batch_max_count = 4;
    o.batch_delay_ms = 50000;
    o.propose_timeout_ms = 60000;
    ASSERT_NO_FATAL_FAILURE(r.Start(i, o));
  }
  struct Call {
    Status status;
    uint64_t instance = 0;
    uint32_t index = 0;
    ExecuteContext ctx;
  };
  std::vector<Call> calls(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Call& c = calls[t];
      c.status = r.node(0)->BatchPropose(0, "v" + std::to_string(t), &c.instance, &c.index, &c.ctx);
    });
  }
  for (auto& t : threads) t.join();
  std::set<uint64_t> ids;
  for (int t = 0; t < 4; ++t) {
    ASSERT_TRUE(calls[t].status.ok()) << calls[t].status.ToString();
    EXPECT_EQ(calls[t].instance, calls[0].instance);
    EXPECT_EQ(calls[t].ctx.output, "done:v" + std::to_string(t));
    EXPECT_NE(calls[t].ctx.proposal_id, 0u);
    ids.insert(calls[t].ctx.proposal_id);
  }
  EXPECT_EQ(ids.size(), 4u) << "proposal ids must be distinct";
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WaitUntil([&] { return r.machine(i)->values().size() >= 4; })) << "replica " << i;
    std::set<uint32_t> indexes;
    for (int t = 0; t < 4; ++t) {
      bool found = false;
      const auto e = r.machine(i)->Find("v" + std::to_string(t), &found);
      ASSERT_TRUE(found) << "replica " << i << " value " << t;
      EXPECT_EQ(e.info.group, 0u);
      EXPECT_EQ(e.info.instance, calls[t].instance);
      EXPECT_EQ(e.info.batch_index, calls[t].index);
      EXPECT_EQ(e.info.batch_size, 4u);
      EXPECT_EQ(e.info.proposal_id, calls[t].ctx.proposal_id) << "replica " << i;
      EXPECT_EQ(e.had_ctx, i == 0) << "ctx only on the proposing node";
      indexes.insert(e.info.batch_index);
    }
    EXPECT_EQ(indexes, (std::set<uint32_t>{0, 1, 2, 3}));
    // Once per value: no value twice.
    EXPECT_EQ(r.machine(i)->values().size(), 4u);
  }
}

TEST(NodeContractTest, EveryInstanceIsExecutedOrReportedAsANoopExactlyOnce) {
  // Group 0 has two state machines; values for one are noops for the other.
  TempDir dir;
  InfoStateMachine sm1(1), sm2(2);
  Options o;
  o.self = NodeInfo{"127.0.0.1", FreePort()};
  o.nodes = {o.self};
  o.data_dir = dir.path() + "/d";
  o.create_if_missing = true;
  o.state_machines = {{0, &sm1}, {0, &sm2}};
  o.log_level = LogLevel::kNone;
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  ExecuteContext to1, to2;
  to1.state_machine_id = 1;
  to2.state_machine_id = 2;
  uint64_t instance = 0;
  std::set<uint64_t> for1, for2;
  for (int k = 0; k < 6; ++k) {
    ExecuteContext* ctx = k % 3 == 0 ? &to2 : &to1;
    ASSERT_TRUE(node->Propose(0, "x" + std::to_string(k), &instance, ctx).ok());
    (ctx == &to1 ? for1 : for2).insert(instance);
  }
  const uint64_t end = node->GetNowInstanceId(0);
  node.reset();
  for (InfoStateMachine* sm : {&sm1, &sm2}) {
    std::multiset<uint64_t> seen;
    std::set<uint64_t> executed;
    for (const auto& e : sm->values()) {
      seen.insert(e.info.instance);
      executed.insert(e.info.instance);
    }
    for (uint64_t i : sm->noops()) seen.insert(i);
    EXPECT_EQ(executed, sm == &sm1 ? for1 : for2);
    // Every instance of the log, exactly once, in one of the two calls.
    std::multiset<uint64_t> all;
    for (uint64_t i = 0; i < end; ++i) all.insert(i);
    EXPECT_EQ(seen, all) << "state machine " << sm->id();
  }
}

TEST(NodeContractTest, APerCallDeadlineEndsOnlyItsOwnCall) {
  Replicas r(3);
  Options o = r.For(0);
  // Far beyond any test's run: only the per-call deadline can end a call.
  o.propose_timeout_ms = 3600 * 1000;
  o.max_queue_wait_ms = 3600 * 1000;
  ASSERT_NO_FATAL_FAILURE(r.Start(0, o));
  ASSERT_NO_FATAL_FAILURE(r.Start(1));
  uint64_t instance = 0;
  ASSERT_TRUE(r.node(0)->Propose(0, "warm", &instance).ok());
  r.Stop(1);  // node 0 alone has no majority
  std::atomic<bool> long_done{false};
  Status long_status;
  ExecuteContext long_ctx;
  std::thread long_call([&] {
    uint64_t i = 0;
    long_status = r.node(0)->Propose(0, "long", &i, &long_ctx);
    long_done = true;
  });
  ExecuteContext short_ctx;
  short_ctx.timeout_ms = 100;
  Status s = r.node(0)->Propose(0, "short", &instance, &short_ctx);
  EXPECT_TRUE(s.IsTimeout()) << s.ToString();
  EXPECT_NE(short_ctx.proposal_id, 0u);
  EXPECT_FALSE(long_done.load()) << "the call without a deadline of its own ended too";
  // A majority again: the long call goes through.
  ASSERT_NO_FATAL_FAILURE(r.Start(1));
  long_call.join();
  EXPECT_TRUE(long_status.ok()) << long_status.ToString();

  ExecuteContext bad;
  bad.timeout_ms = -1;
  s = r.node(0)->Propose(0, "bad", &instance, &bad);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(bad.proposal_id, 0u);
  EXPECT_FALSE(r.machine(0)->Has("bad"));
}

TEST(NodeContractTest, AfterATimeoutTheProposalIdTellsWhetherTheValueWasChosen) {
  Replicas r(3);
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(r.Start(i));
  uint64_t instance = 0;
  ASSERT_TRUE(r.node(0)->Propose(0, "warm", &instance).ok());
  r.Stop(1);
  r.Stop(2);
  // No majority: the call times out, its value already in the log of node 0.
  ExecuteContext ctx;
  ctx.timeout_ms = 200;
  Status s = r.node(0)->Propose(0, "maybe", &instance, &ctx);
  ASSERT_TRUE(s.IsTimeout()) << s.ToString();
  ASSERT_NE(ctx.proposal_id, 0u);
  // The caller does not know the outcome; the replicas will. With node 1
  // back, node 0 completes the instance its value was being voted on (no
  // other proposer competes), so the value is chosen after all.
  ASSERT_NO_FATAL_FAILURE(r.Start(1));
  ASSERT_NO_FATAL_FAILURE(r.Start(2));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WaitUntil([&] { return r.machine(i)->Has("maybe"); })) << "replica " << i;
    bool found = false;
    const auto e = r.machine(i)->Find("maybe", &found);
    EXPECT_EQ(e.info.proposal_id, ctx.proposal_id) << "replica " << i;
    EXPECT_FALSE(e.had_ctx) << "the caller had returned: its ctx is no longer used";
  }
  EXPECT_EQ(ctx.output, "");
}


TEST(NodeContractTest, ARestartAfterATornLogTailStartsAndLogsWhatItCut) {
  TempDir dir;
  InfoStateMachine sm;
  Options o;
  o.self = NodeInfo{"127.0.0.1", FreePort()};
  o.nodes = {o.self};
  o.data_dir = dir.path() + "/d";
  o.create_if_missing = true;
  o.state_machines = {{0, &sm}};
  std::mutex mu;
  std::vector<std::string> warnings;  // GUARDED_BY(mu)
  o.log_level = LogLevel::kWarning;
  o.log_hook = [&](LogLevel level, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    if (level == LogLevel::kWarning) warnings.push_back(line);
  };
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  uint64_t instance = 0;
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(node->Propose(0, "v" + std::to_string(k), &instance).ok());
  node.reset();
  // Power loss in the middle of the last write: its bytes never landed.
  const std::string wal = testing::NewestLevelDbLog(o.data_dir + "/g0");
  ASSERT_FALSE(wal.empty());
  struct stat st;
  ASSERT_EQ(0, stat(wal.c_str(), &st));
  ASSERT_GT(st.st_size, 16);
  const int fd = open(wal.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::string zeros(8, '\0');
  ASSERT_EQ(8, pwrite(fd, zeros.data(), zeros.size(), st.st_size - 8));
  close(fd);

  o.create_if_missing = false;  // a restart: the log must be found, not made
  Status s = Node::Open(o, &node);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::lock_guard<std::mutex> lock(mu);
  bool reported = false;
  for (const std::string& w : warnings) reported = reported || w.find("torn tail") != std::string::npos;
  EXPECT_TRUE(reported) << "no warning says what was cut";
}

}  // namespace
}  // namespace node_contract_test
}  // namespace chorus
