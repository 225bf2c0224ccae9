// GroupRig: one Group (the runtime's event loop) on fakes, for deterministic
// tests of the loop: a manual clock and hand-fired timers (RuntimeHooks), a
// recording transport that delivers nothing (the test plays the peers by
// posting their messages), and a recording log over a real leveldb log in a
// temp dir. Nothing fires unless the test fires it.
#ifndef CHORUS_UNITTEST_NODE_GROUP_RIG_H_
#define CHORUS_UNITTEST_NODE_GROUP_RIG_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/leveldb_log_storage.h"
#include "chorus/log_storage.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "node/group.h"
#include "node/runtime_env.h"
#include "paxos/value.h"
#include "unittest/support/runtime_fakes.h"
#include "unittest/support/test_util.h"
#include "utils/logging.h"
#include "utils/notifier_pool.h"

namespace chorus {
namespace testing {

// Records the values it executes; thread-safe.
class ValueLog : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext*) override {
    const uint64_t instance = info.instance;
    std::lock_guard<std::mutex> lock(mu_);
    executed_.emplace_back(instance, value);
    return Status::OK();
  }
  std::vector<std::pair<uint64_t, std::string>> executed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return executed_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> executed_;  // GUARDED_BY(mu_)
};

class GroupRig {
 public:
  static constexpr uint64_t kCluster = 9;

  // A cluster of `members` nodes; this group's node is the first. `tweak`
  // may change the options before the group opens.
  explicit GroupRig(int members, const std::function<void(Options*)>& tweak = nullptr) {
    for (int i = 0; i < members; ++i) {
      options_.nodes.push_back(NodeInfo{"127.0.0.1", static_cast<uint16_t>(7001 + i)});
    }
    options_.self = options_.nodes[0];
    options_.cluster_id = kCluster;
    options_.log_level = LogLevel::kNone;
    // The proposer's own give-up (deadline + grace) runs on the real clock:
    // keep it out of reach, the manual clock decides every timeout here.
    options_.propose_timeout_ms = 600000;
    options_.max_queue_wait_ms = 600000;
    if (tweak) tweak(&options_);
  }

  ~GroupRig() {
    if (group_) group_->Stop();
  }

  // The cores' seed (RuntimeHooks::fixed_seed); set before Start.
  uint64_t seed = 42;

  // Opens and starts the group. Returns its status.
  Status Start() {
    RuntimeHooks hooks;
    hooks.clock = &clock_;
    hooks.timers = &timers_;
    hooks.fixed_seed = true;
    hooks.seed = seed;
    runtime_ = std::make_unique<RuntimeEnv>(nullptr, hooks);
    std::unique_ptr<LogStorage> base;
    LevelDbLogOptions lo;
    lo.cluster_id = kCluster;
    lo.create_if_missing = true;  // a fresh temp dir
    Status s = OpenLevelDbLogStorage(dir_.path() + "/g0", lo, &base);
    if (!s.ok()) return s;
    auto log = std::make_unique<RecordingLogStorage>(std::move(base), &order_);
    log_ = log.get();
    GroupEnv env;
    env.options = &options_;
    env.transport = &transport_;
    env.runtime = runtime_.get();
    env.notifier_pool = NotifierPool::Default();
    env.logger = &logger_;
    s = Group::Open(env, 0, std::move(log), {&sm_}, &group_);
    if (!s.ok()) return s;
    return group_->Start();
  }

  uint64_t self() const { return options_.nodes[0].id(); }
  uint64_t peer(int i) const { return options_.nodes[i].id(); }

  // A message from peer `from` as the group's core expects it.
  std::string Message(paxos::MsgType type, uint64_t from, uint64_t ballot_number,
                      uint64_t instance, const std::string& data = std::string()) const {
    paxos::PaxosMsg m;
    m.set_type(type);
    m.set_cluster_id(kCluster);
    m.set_group(0);
    m.set_from(from);
    m.set_instance(instance);
    m.mutable_ballot()->set_number(ballot_number);
    m.mutable_ballot()->set_node_id(from);
    if (!data.empty()) m.set_value(paxos::EncodeValue(from, instance + 1, data));
    return m.SerializeAsString();
  }

  Group* group() { return group_.get(); }
  const Options& options() const { return options_; }
  ManualClock* clock() { return &clock_; }
  ManualTimerScheduler* timers() { return &timers_; }
  RecordingTransport* transport() { return &transport_; }
  RecordingLogStorage* log() { return log_; }
  ValueLog* sm() { return &sm_; }

 private:
  Options options_;
  TempDir dir_;
  EventOrder order_;
  ManualClock clock_;
  ManualTimerScheduler timers_{&clock_};
  std::unique_ptr<RuntimeEnv> runtime_;
  RecordingTransport transport_{nullptr, &order_};
  Logger logger_{nullptr, LogLevel::kNone};
  ValueLog sm_;
  RecordingLogStorage* log_ = nullptr;  // owned by group_
  std::unique_ptr<Group> group_;
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_GROUP_RIG_H_
