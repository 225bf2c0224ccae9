#include "unittest/sim/checker.h"

#include <algorithm>
#include <utility>

namespace chorus {
namespace sim {

SafetyChecker::SafetyChecker(std::vector<uint64_t> ids, Report report)
    : report_(std::move(report)), nodes_(ids.size()) {
  for (size_t i = 0; i < ids.size(); ++i) nodes_[i].id = ids[i];
}

std::string SafetyChecker::Key(const paxos::ChosenValue& v) {
  return std::to_string(v.proposer) + "/" + std::to_string(v.proposal_id) + "/" + v.value;
}

bool SafetyChecker::Recovered(int i, paxos::Core* core) {
  NodeView& n = nodes_[i];
  const uint64_t end = core->chosen_end();
  for (uint64_t k = core->log_start(); k < end; ++k) {
    paxos::ChosenValue v;
    Status s = core->ReadChosen(k, &v);
    if (!s.ok()) {
      report_("node " + std::to_string(n.id) + " cannot replay instance " + std::to_string(k) +
              ": " + s.ToString());
      return false;
    }
    if (k < n.history.size() && !n.history[k].empty()) {
      if (Key(v) != n.history[k]) {
        report_("node " + std::to_string(n.id) + " instance " + std::to_string(k) +
                " changed across a restart");
        return false;
      }
    } else {
      n.applied = k;
      if (!Learned(i, v)) return false;
    }
  }
  n.applied = end;
  return true;
}

void SafetyChecker::Installed(int i, uint64_t instance) {
  NodeView& n = nodes_[i];
  n.applied = instance;
  if (n.history.size() < instance) n.history.resize(instance);
}

void SafetyChecker::Failed(const std::string& data) {
  failed_.insert(data);
  auto it = chosen_at_.find(data);
  if (it != chosen_at_.end()) {
    report_("proposal " + data + " was reported failed but is chosen at instance " +
            std::to_string(it->second));
  }
}

void SafetyChecker::DiskLost(int i) {
  nodes_[i].applied = 0;
  nodes_[i].acknowledged = paxos::Ballot();
}

bool SafetyChecker::Learned(int i, const paxos::ChosenValue& v) {
  NodeView& n = nodes_[i];
  const std::string key = Key(v);
  if (v.instance != n.applied) {
    report_("node " + std::to_string(n.id) + " applied instance " + std::to_string(v.instance) +
            " when " + std::to_string(n.applied) + " was next");
    return false;
  }
  n.applied++;
  if (v.instance < n.history.size() && n.history[v.instance].empty()) {
    n.history[v.instance] = key;  // below a checkpoint it installed: news to us
  } else if (v.instance < n.history.size()) {
    // Learned again after a crash lost its unsynced chosen record.
    if (n.history[v.instance] != key) {
      report_("node " + std::to_string(n.id) + " instance " + std::to_string(v.instance) +
              " changed across a restart: it learned " + key + " after " +
              n.history[v.instance]);
    }
    return false;
  } else {
    n.history.resize(v.instance);  // (a no-op unless it skipped: reported above)
    n.history.push_back(key);
  }
  auto g = global_.find(v.instance);
  if (g != global_.end()) {
    if (g->second != key) {
      report_("instance " + std::to_string(v.instance) + ": node " + std::to_string(n.id) +
              " learned " + key + " but another node learned " + g->second);
    }
    return true;
  }
  global_[v.instance] = key;
  if (!v.noop) {
    if (proposed_.count(v.value) == 0) {
      report_("instance " + std::to_string(v.instance) + " chose a value nobody proposed: " +
              v.value);
      return true;
    }
    if (failed_.count(v.value) != 0) {
      report_("proposal " + v.value + " was reported failed but is chosen at instance " +
              std::to_string(v.instance));
    }
    if (!chosen_at_.emplace(v.value, v.instance).second) {
      report_("value " + v.value + " chosen twice: at instance " +
              std::to_string(chosen_at_[v.value]) + " and " + std::to_string(v.instance));
    }
  }
  return true;
}

void SafetyChecker::Sent(int i, const std::string& bytes) {
  paxos::PaxosMsg m;
  if (!m.ParseFromString(bytes) || (m.type() != paxos::PROMISE && m.type() != paxos::ACCEPTED)) {
    return;
  }
  NodeView& n = nodes_[i];
  const paxos::Ballot b = paxos::Ballot::FromPb(m.ballot());
  if (b < n.acknowledged) {
    report_("node " + std::to_string(n.id) + " sent " + paxos::MsgType_Name(m.type()) +
            " for ballot " + b.ToString() + " after acknowledging ballot " +
            n.acknowledged.ToString() + ": it broke a promise");
    return;
  }
  n.acknowledged = b;
}

bool SafetyChecker::ChosenIs(uint64_t instance, const std::string& data) const {
  auto g = global_.find(instance);
  return g != global_.end() && g->second.substr(g->second.rfind('/') + 1) == data;
}

MasterChecker::MasterChecker(std::vector<uint64_t> ids, Report report)
    : report_(std::move(report)), ids_(std::move(ids)) {}

void MasterChecker::Leases(uint64_t now, const std::vector<int>& holders) {
  if (holders.size() < 2) return;
  std::string what = "two leases at once: nodes " + std::to_string(ids_[holders[0]]) + " and " +
                     std::to_string(ids_[holders[1]]) + " both hold a valid lease at t=" +
                     std::to_string(now);
  if (transfer_from_ >= 0) {
    what += " (" + std::to_string(now - transfer_at_) + " ms after node " +
            std::to_string(ids_[transfer_from_]) +
            (transfer_target_ == 0 ? std::string(" stepped down")
                                   : " transferred to node " + std::to_string(transfer_target_)) +
            ")";
  }
  report_(what);
}

void MasterChecker::Transferred(int i, uint64_t target, uint64_t now) {
  transfer_from_ = i;
  transfer_target_ = target;
  transfer_at_ = now;
}

void MasterChecker::WriteCompleted(uint64_t instance) {
  min_barrier_ = std::max(min_barrier_, instance + 1);
}

void MasterChecker::ReadCompleted(int i, uint64_t began, uint64_t required, uint64_t barrier,
                                  bool lease) {
  if (barrier >= required) return;
  report_("stale read: node " + std::to_string(ids_[i]) + "'s " +
          (lease ? "lease read" : "read-index read") + " begun at t=" + std::to_string(began) +
          " returned barrier " + std::to_string(barrier) + " but a write completed before it at instance " +
          std::to_string(required - 1));
}

}  // namespace sim
}  // namespace chorus
