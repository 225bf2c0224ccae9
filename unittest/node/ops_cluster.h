// OpsCluster: an in-process cluster over loopback TCP for the metrics,
// logging and tooling tests. Every node's log lines are collected
// (Options::log_hook at info level) so a test can assert what was logged.
#ifndef CHORUS_UNITTEST_NODE_OPS_CLUSTER_H_
#define CHORUS_UNITTEST_NODE_OPS_CLUSTER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "chorus/node.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace testing {

// Counts what it executes (any value).
class CountingMachine : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo&, const std::string& value, ExecuteContext* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (ctx != nullptr) ctx->output = value;
    return Status::OK();
  }
  uint64_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  mutable std::mutex mu_;
  uint64_t count_ = 0;  // GUARDED_BY(mu_)
};

// Every log line of every node, with its level and node index.
class LogLines {
 public:
  struct Line {
    int node;
    LogLevel level;
    std::string text;
  };
  void Add(int node, LogLevel level, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back({node, level, text});
  }
  std::vector<Line> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // Lines at `level` or above.
  std::vector<Line> AtLeast(LogLevel level) const {
    std::vector<Line> out;
    for (const Line& l : lines()) {
      if (l.level >= level) out.push_back(l);
    }
    return out;
  }
  // Whether node `node` (-1: any) logged a line containing `needle`.
  bool Has(int node, const std::string& needle) const {
    for (const Line& l : lines()) {
      if ((node < 0 || l.node == node) && l.text.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  std::string Dump() const {
    std::string out;
    for (const Line& l : lines()) {
      out += "  [" + std::to_string(l.node) + " " + std::to_string(static_cast<int>(l.level)) +
             "] " + l.text + "\n";
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Line> lines_;  // GUARDED_BY(mu_)
};

class OpsCluster {
 public:
  OpsCluster(int n, bool election) : election_(election) {
    for (int i = 0; i < n; ++i) {
      nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
      machines_.push_back(std::make_unique<CountingMachine>());
    }
    running_.resize(n);
    started_.resize(n, false);
  }
  ~OpsCluster() {
    for (auto& node : running_) node.reset();
  }

  Options OptionsFor(int i) {
    Options o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = 91;
    o.data_dir = dir_.path() + "/n" + std::to_string(i);
    o.create_if_missing = !started_[i];
    o.state_machines.push_back({0, machines_[i].get()});
    o.propose_timeout_ms = 20000;
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 100;
    o.master_election = election_;
    o.log_level = LogLevel::kInfo;
    LogLines* lines = &lines_;
    o.log_hook = [lines, i](LogLevel level, const std::string& text) { lines->Add(i, level, text); };
    return o;
  }
  Status Start(int i) {
    Options o = OptionsFor(i);
    if (options_hook) options_hook(i, &o);
    started_[i] = true;
    return Node::Open(o, &running_[i]);
  }
  Status StartAll() {
    for (int i = 0; i < size(); ++i) {
      Status s = Start(i);
      if (!s.ok()) return s;
    }
    return Status::OK();
  }
  void Stop(int i) { running_[i].reset(); }
  Node* node(int i) { return running_[i].get(); }
  int size() const { return static_cast<int>(nodes_.size()); }
  const NodeInfo& info(int i) const { return nodes_[i]; }
  std::string data_dir(int i) const { return dir_.path() + "/n" + std::to_string(i); }
  const LogLines& log() const { return lines_; }

  // The index of the node every running node names as master, and which
  // says IsMaster; -1 until then.
  int AgreedMaster() {
    int master = -1;
    uint64_t id = 0;
    for (int i = 0; i < size(); ++i) {
      if (!running_[i]) continue;
      MasterInfo m;
      if (!running_[i]->GetMaster(0, &m).ok()) return -1;
      if (id != 0 && m.node.id() != id) return -1;
      id = m.node.id();
    }
    for (int i = 0; i < size(); ++i) {
      if (running_[i] && nodes_[i].id() == id) master = i;
    }
    return master >= 0 && running_[master]->IsMaster(0) ? master : -1;
  }
  int WaitForMaster() {
    int m = -1;
    WaitUntil([&] { return (m = AgreedMaster()) >= 0; }, std::chrono::seconds(60));
    return m;
  }

  // Optional: adjusts a node's options before it opens.
  std::function<void(int, Options*)> options_hook;

 private:
  const bool election_;
  TempDir dir_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::unique_ptr<CountingMachine>> machines_;
  std::vector<std::unique_ptr<Node>> running_;
  std::vector<bool> started_;
  LogLines lines_;
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_OPS_CLUSTER_H_
