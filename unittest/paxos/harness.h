// A tiny hand-driven cluster for the paxos unit tests: N Cores over
// MemLogStorage, a FIFO "network" the test pumps explicitly, and the last
// timer of each kind per node so a test can fire it. Catch-up reads are
// served inline, right after their step's persist. Time (Core::SetNow) is
// the harness's clock, set by SetTime (a node's own clock may run ahead:
// SetNodeTime).
#ifndef CHORUS_UNITTEST_PAXOS_HARNESS_H_
#define CHORUS_UNITTEST_PAXOS_HARNESS_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "paxos/catchup.h"
#include "paxos/core.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace paxos {
namespace testing {

class Harness {
 public:
  struct Node {
    uint64_t id = 0;
    sim::MemLogStorage log;
    std::unique_ptr<Core> core;
    std::vector<ChosenValue> applied;
    std::vector<ProposalResult> finished;
    std::vector<Status> errors;
    std::map<TimerKind, TimerId> timers;
    std::map<TimerKind, uint64_t> due;  // when each of `timers` fires
    std::vector<BarrierResult> barriers;
    std::vector<MasterView> views;  // every Outputs::master reported
    std::vector<CheckpointNeeded> checkpoints_needed;  // every Outputs::checkpoint_needed
    size_t writes = 0;              // log writes (non-empty persists)
  };

  explicit Harness(int n, std::function<void(CoreOptions*)> tweak = nullptr) : tweak_(tweak) {
    for (int i = 0; i < n; ++i) {
      nodes_.emplace_back(new Node());
      nodes_.back()->id = static_cast<uint64_t>(i + 1);
    }
    for (int i = 0; i < n; ++i) Open(i);
  }

  CoreOptions Options(int i) const {
    CoreOptions o;
    o.cluster_id = 9;
    o.self = nodes_[i]->id;
    for (const auto& n : nodes_) o.members.push_back(n->id);
    o.seed = 100 + static_cast<uint64_t>(i);
    if (tweak_) tweak_(&o);
    return o;
  }

  void Open(int i) {
    Node& n = *nodes_[i];
    n.core.reset();
    ASSERT_TRUE(Core::Open(Options(i), &n.log, &n.core).ok());
    n.core->SetNow(now_);
    Outputs out;
    n.core->Start(&out);
    Exec(i, &out);
  }

  Node& node(int i) { return *nodes_[i]; }
  Core* core(int i) { return nodes_[i]->core.get(); }

  // Executes a step's outputs in the contract's order.
  void Exec(int i, Outputs* out) {
    Node& n = *nodes_[i];
    if (!out->persist.empty()) {
      EXPECT_TRUE(n.log.Write(out->persist, out->sync).ok());
      n.writes++;
    }
    for (auto& m : out->messages) Route(i, m);
    // Catch-up reads, after the persist (catchup.h): served at once here.
    for (const CatchupRead& read : out->catchup_reads) {
      CatchupReply reply;
      ReadCatchup(read, &n.log, &reply);
      if (!reply.bytes.empty()) Route(i, OutMessage{read.peer, std::move(reply.bytes)});
    }
    for (auto& c : out->checkpoint_needed) n.checkpoints_needed.push_back(c);
    for (auto& c : out->chosen) n.applied.push_back(c);
    for (auto& f : out->finished) n.finished.push_back(f);
    for (auto& e : out->errors) n.errors.push_back(e);
    for (auto& t : out->timers) {
      n.timers[t.id.kind] = t.id;
      n.due[t.id.kind] = now_ + t.delay_ms;
    }
    for (auto& b : out->barriers) n.barriers.push_back(b);
    if (out->master_changed) n.views.push_back(out->master);
  }

  // The harness clock: every core's time (a core ahead keeps its own).
  void SetTime(uint64_t now) {
    now_ = now;
    for (auto& n : nodes_) {
      if (n->core) n->core->SetNow(now);
    }
  }
  void SetNodeTime(int i, uint64_t now) { core(i)->SetNow(now); }
  uint64_t now() const { return now_; }

  Status Propose(int i, uint64_t token, const std::string& v) {
    Outputs out;
    Status s = core(i)->Propose(token, v, &out);
    Exec(i, &out);
    return s;
  }

  void Fire(int i, TimerKind kind) {
    Node& n = *nodes_[i];
    auto it = n.timers.find(kind);
    ASSERT_NE(it, n.timers.end());
    TimerId id = it->second;
    n.timers.erase(it);
    Outputs out;
    n.core->OnTimeout(id, &out);
    Exec(i, &out);
  }

  Status Deliver(int to, const std::string& bytes) {
    Outputs out;
    Status s = core(to)->OnMessage(bytes, &out);
    Exec(to, &out);
    return s;
  }

  // Node `to` handles (and persists) every queued message addressed to it,
  // but its replies are lost; messages to the other nodes are dropped.
  void DeliverOnlyTo(int to) {
    while (!net_.empty()) {
      auto m = std::move(net_.front());
      net_.pop_front();
      if (m.first != to) continue;
      Outputs out;
      EXPECT_TRUE(core(to)->OnMessage(m.second, &out).ok());
      if (!out.persist.empty()) {
        EXPECT_TRUE(node(to).log.Write(out.persist, out.sync).ok());
      }
    }
  }

  // Delivers queued messages until the network is empty (or `max` of them).
  void Pump(size_t max = 100000) {
    while (!net_.empty() && max-- > 0) {
      auto m = std::move(net_.front());
      net_.pop_front();
      if (isolated_.count(m.first)) continue;
      Deliver(m.first, m.second);
    }
  }

  // Queues message `m` of node i for its receivers (none across isolation).
  void Route(int i, const OutMessage& m) {
    for (size_t j = 0; j < nodes_.size(); ++j) {
      if (static_cast<int>(j) == i) continue;
      if (m.to == kBroadcast || m.to == nodes_[j]->id) {
        if (!isolated_.count(i) && !isolated_.count(static_cast<int>(j))) {
          net_.push_back({static_cast<int>(j), m.bytes});
        }
      }
    }
  }

  void Isolate(int i) { isolated_.insert(i); }
  void Heal(int i) { isolated_.erase(i); }
  std::deque<std::pair<int, std::string>>& net() { return net_; }
  size_t size() const { return nodes_.size(); }

 private:
  std::function<void(CoreOptions*)> tweak_;
  uint64_t now_ = 0;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::deque<std::pair<int, std::string>> net_;
  std::set<int> isolated_;
};

// A catch-up request (ASK_LEARN) of the harness's cluster from node `from`
// for the values from `instance` on.
inline PaxosMsg AskLearn(uint64_t from, uint64_t instance) {
  PaxosMsg m;
  m.set_type(ASK_LEARN);
  m.set_cluster_id(9);
  m.set_from(from);
  m.set_instance(instance);
  return m;
}

// The messages of one step, parsed, in order.
inline std::vector<PaxosMsg> ParseMessages(const Outputs& out) {
  std::vector<PaxosMsg> v;
  for (const OutMessage& m : out.messages) {
    PaxosMsg p;
    EXPECT_TRUE(p.ParseFromString(m.bytes));
    v.push_back(p);
  }
  return v;
}

}  // namespace testing
}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_UNITTEST_PAXOS_HARNESS_H_
