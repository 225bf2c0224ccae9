// Copyright (c) chorus authors.
#include "faults.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "clock.h"

namespace chorus {
namespace nemesis {
namespace {

const int kRestartTimeoutMs = 30000;

std::string Slots(const std::vector<int>& slots) {
  std::string s;
  for (int slot : slots) s += (s.empty() ? "" : ",") + std::to_string(Cluster::IdOf(slot));
  return "{" + s + "}";
}

}  // namespace

FaultRunner::FaultRunner(Network* network, Cluster* cluster, const std::vector<FaultStep>& steps)
    : network_(network), cluster_(cluster), steps_(steps) {
  next_spare_ = 0;
  for (int slot : cluster->members()) next_spare_ = std::max(next_spare_, slot + 1);
}

FaultRunner::~FaultRunner() { Stop(); }

void FaultRunner::Start() {
  start_ns_ = NowNs();
  thread_ = std::thread([this] { Run(); });
}

Status FaultRunner::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  Status s = network_->Heal();
  if (s.ok()) s = cluster_->ResumeAll(kRestartTimeoutMs);
  if (!s.ok()) Fail(s);
  return error();
}

std::map<std::string, int> FaultRunner::injected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_;
}

std::map<std::string, int> FaultRunner::declined() const {
  std::lock_guard<std::mutex> lock(mu_);
  return declined_;
}

std::vector<std::string> FaultRunner::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

Status FaultRunner::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void FaultRunner::Fail(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = s;
}

void FaultRunner::Note(const std::string& kind, const std::string& line, bool declined) {
  const double at = static_cast<double>(NowNs() - start_ns_) / 1e9;
  char t[32];
  std::snprintf(t, sizeof(t), "%7.2fs ", at);
  std::lock_guard<std::mutex> lock(mu_);
  if (!kind.empty()) ++(declined ? declined_ : injected_)[kind];
  log_.push_back(t + line);
}

bool FaultRunner::SleepUntil(int64_t until_ns) {
  while (!stop_) {
    const int64_t left = until_ns - NowNs();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 50000000)));
  }
  return false;
}

void FaultRunner::Run() {
  for (const FaultStep& step : steps_) {
    if (!SleepUntil(start_ns_ + step.start_ms * 1000000)) return;
    Step(step);
    if (stop_ || !error().ok()) return;
  }
}

Status FaultRunner::Block(const std::vector<std::vector<int>>& sides) {
  // Each member blocks every member that shares no side with it.
  std::vector<std::set<int>> blocked(network_->slots());
  const std::vector<int> members = cluster_->members();
  for (int a : members) {
    for (int b : members) {
      bool together = false;
      for (const std::vector<int>& side : sides) {
        const bool has_a = std::count(side.begin(), side.end(), a) > 0;
        const bool has_b = std::count(side.begin(), side.end(), b) > 0;
        together = together || (has_a && has_b);
      }
      if (a != b && !together) blocked[a].insert(b);
    }
  }
  return network_->Apply(blocked, 0);
}

void FaultRunner::Step(const FaultStep& step) {
  std::mt19937_64 rng(step.pick);
  std::vector<int> members = cluster_->members();
  std::shuffle(members.begin(), members.end(), rng);
  const int victim = members[0];
  const int64_t heal_at = NowNs() + static_cast<int64_t>(step.hold_ms) * 1000000;
  const std::string kind = FaultKindName(step.kind);
  const std::string id = std::to_string(Cluster::IdOf(victim));
  Status s;
  switch (step.kind) {
    case FaultKind::kKill:
      cluster_->Kill(victim);
      Note(kind, "kill -9 node " + id);
      SleepUntil(heal_at);
      s = cluster_->Restart(victim, kRestartTimeoutMs);
      Note("", "restart node " + id + " on its data dir: " + s.ToString());
      break;
    case FaultKind::kPause:
      cluster_->Pause(victim);
      Note(kind, "SIGSTOP node " + id);
      SleepUntil(heal_at);
      cluster_->Resume(victim);
      Note("", "SIGCONT node " + id);
      break;
    case FaultKind::kPartition:
    case FaultKind::kIsolateMaster:
    case FaultKind::kIsolateFollower: {
      size_t minority = (members.size() - 1) / 2;
      if (step.kind != FaultKind::kPartition) {
        const int master = cluster_->Master();
        auto it = std::find(members.begin(), members.end(), master);
        if (step.kind == FaultKind::kIsolateMaster && it != members.end()) {
          std::iter_swap(members.begin(), it);
        } else if (step.kind == FaultKind::kIsolateFollower && it == members.begin()) {
          std::iter_swap(members.begin(), members.begin() + 1);
        }
        minority = 1;
        if (step.kind == FaultKind::kIsolateMaster && master < 0) {
          Note("", "isolate_master: no master known now, isolating node " +
                       std::to_string(Cluster::IdOf(members[0])));
        }
      }
      const std::vector<int> a(members.begin(), members.begin() + minority);
      const std::vector<int> b(members.begin() + minority, members.end());
      s = Block({a, b});
      Note(kind, kind + " " + Slots(a) + " | " + Slots(b) + ": " + s.ToString());
      SleepUntil(heal_at);
      if (s.ok()) s = network_->Heal();
      Note("", "heal partition: " + s.ToString());
      break;
    }
    case FaultKind::kBridge: {
      const size_t half = (members.size() - 1) / 2;
      const std::vector<int> a(members.begin(), members.begin() + half + 1);
      const std::vector<int> b(members.begin() + half, members.end());
      s = Block({a, b});
      Note(kind, "bridge " + Slots(a) + " | " + Slots(b) + " (node " +
                     std::to_string(Cluster::IdOf(members[half])) + " in both): " + s.ToString());
      SleepUntil(heal_at);
      if (s.ok()) s = network_->Heal();
      Note("", "heal bridge: " + s.ToString());
      break;
    }
    case FaultKind::kLoss: {
      const int percent = 10 + static_cast<int>(rng() % 31);
      s = network_->Apply({}, percent);
      Note(kind, "drop " + std::to_string(percent) + "% of peer packets: " + s.ToString());
      SleepUntil(heal_at);
      if (s.ok()) s = network_->Heal();
      Note("", "heal loss: " + s.ToString());
      break;
    }
    case FaultKind::kTransfer: {
      // Right after a healed fault the members may not agree on a master
      // yet: give them a few seconds.
      int master = cluster_->Master();
      const int64_t wait_until = NowNs() + 5000000000LL;
      while (master < 0 && !stop_ && NowNs() < wait_until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        master = cluster_->Master();
      }
      int target = -1;
      for (int m : members) {
        if (m != master) target = m;
      }
      if (master < 0 || target < 0) {
        Note(kind, "transfer: the members agree on no master for 5 s", true);
        break;
      }
      RespReply r;
      const std::string to = std::to_string(Cluster::IdOf(target));
      s = cluster_->Command(master, {"CHORUS.TRANSFER", to}, &r);
      if (s.ok() && r.type == RespReply::Type::kError && r.text.find("unknown command") == 0) {
        // ERR unknown command: this kv_server cannot transfer (a harness
        // setup failure, not a refused hand-over).
        s = Status::NotSupported("kv_server has no CHORUS.TRANSFER: " + r.text);
        Note("", s.ToString());
        break;
      }
      const bool sent = s.ok() && r.type == RespReply::Type::kSimple;
      Note(kind,
           "CHORUS.TRANSFER " + to + " on master node " +
               std::to_string(Cluster::IdOf(master)) + ": " +
               (s.ok() ? (sent ? "+" : "-") + r.text : s.ToString()),
           !sent);
      s = Status::OK();  // a refused hand-over is the node's to refuse
      SleepUntil(heal_at);
      const int now = cluster_->Master();
      Note("", "master now: " + (now < 0 ? std::string("none agreed") : "node " +
                                     std::to_string(Cluster::IdOf(now))));
      break;
    }
    case FaultKind::kMemberChange: {
      if (next_spare_ >= network_->slots()) {
        Note(kind, "member_change: no spare slot left", true);
        break;
      }
      const int spare = next_spare_++;
      std::string answer;
      Note("", "member_change: start node " + std::to_string(Cluster::IdOf(spare)) +
                   " empty with --join, CHORUS.CHANGEMEMBER " + id);
      s = cluster_->ReplaceMember(victim, spare, 60000, &answer);
      Note(kind,
           "member_change: node " + id + " replaced by node " +
               std::to_string(Cluster::IdOf(spare)) + ": " + answer +
               (s.ok() ? "" : " (" + s.ToString() + ")"),
           !s.ok());
      // A change that did not happen is a refused one, not a harness error.
      s = Status::OK();
      break;
    }
  }
  if (!s.ok()) Fail(s);
}

}  // namespace nemesis
}  // namespace chorus
