// CoreContext (paxos/core.h): the state the roles of one core share during a
// step: the outgoing messages, the writes, the timers.
#include <algorithm>

#include "paxos/core.h"
#include "paxos/learner.h"
#include "utils/check.h"

namespace chorus {
namespace paxos {

// ---- CoreContext ----

CoreContext::CoreContext(const CoreOptions& options, LogStorage* log)
    : options_(options), log_(log), rng_(options.seed) {}

void CoreContext::Send(uint64_t to, PaxosMsg* msg) {
  CHORUS_CHECK(out_ != nullptr);
  // kVoteBeforePersist (tests): an acceptor's ACCEPTED may leave before the
  // vote it reports is durable.
  Queue(to, msg, msg->type() == ACCEPTED && Mutated(TestMutation::kVoteBeforePersist));
}

void CoreContext::SendRequest(uint64_t to, PaxosMsg* msg) {
  CHORUS_CHECK(out_ != nullptr);
  Queue(to, msg, true);
}

void CoreContext::Queue(uint64_t to, PaxosMsg* msg, bool before_persist) {
  CHORUS_CHECK(out_ != nullptr);
  msg->set_cluster_id(options_.cluster_id);
  msg->set_group(options_.group);
  msg->set_from(options_.self);
  msg->set_chosen_end(learner_->chosen_end());
  // Which data dir speaks (membership.h M5): what a master adds this node
  // with, and what its votes count as. Defaults are not on the wire.
  msg->set_incarnation(options_.incarnation);
  msg->set_joined(options_.joined);
  if (to != options_.self) out_->messages.push_back({to, msg->SerializeAsString(), before_persist});
  if (to == kBroadcast || to == options_.self) local_.push_back(*msg);
}

void CoreContext::PersistRecord(uint64_t instance, std::string record, bool vote) {
  records_[instance] = std::move(record);
  sync_ = sync_ || vote;
}

void CoreContext::PersistVariable(const std::string& name, std::string value) {
  variables_[name] = std::move(value);
  sync_ = true;
}

void CoreContext::PersistTrim(uint64_t below) {
  records_.erase(records_.begin(), records_.lower_bound(below));
  delete_below_ = std::max(delete_below_, below);
  sync_ = true;
}

void CoreContext::StartTimer(TimerKind kind, uint64_t delay_ms) {
  CHORUS_CHECK(out_ != nullptr);
  const uint64_t gen = next_generation_++;
  auto it = live_timers_.find(kind);
  if (it != live_timers_.end()) out_->cancel_timers.push_back({kind, it->second});
  live_timers_[kind] = gen;
  out_->timers.push_back({{kind, gen}, delay_ms});
}

void CoreContext::CancelTimer(TimerKind kind) {
  auto it = live_timers_.find(kind);
  if (it == live_timers_.end()) return;
  out_->cancel_timers.push_back({kind, it->second});
  live_timers_.erase(it);
}

bool CoreContext::IsLiveTimer(const TimerId& id) const {
  auto it = live_timers_.find(id.kind);
  return it != live_timers_.end() && it->second == id.generation;
}

void CoreContext::ReportError(const Status& s) { out_->errors.push_back(s); }

void CoreContext::BeginStep(Outputs* out) {
  out->Clear();
  out_ = out;
}

bool CoreContext::PopLocal(PaxosMsg* msg) {
  if (local_.empty()) return false;
  *msg = std::move(local_.front());
  local_.pop_front();
  return true;
}

void CoreContext::EndStep() {
  local_.clear();
  for (auto& kv : records_) out_->persist.records.emplace_back(kv.first, std::move(kv.second));
  for (auto& kv : variables_) out_->persist.variables.emplace_back(kv.first, std::move(kv.second));
  out_->persist.delete_below = delete_below_;
  records_.clear();
  variables_.clear();
  delete_below_ = 0;
  out_->sync = sync_ && !Mutated(TestMutation::kUnsyncedWrites);
  // A moved promise must be durable before any message of this ballot
  // leaves (outputs.h, OutMessage::before_persist).
  if (!out_->persist.variables.empty() || out_->persist.delete_below != 0) {
    HoldEarlyMessages(out_);
  }
  if (membership_changed_) {
    out_->membership_changed = true;
    out_->membership = membership_;
    membership_changed_ = false;
  }
  sync_ = false;
  out_ = nullptr;
}

}  // namespace paxos
}  // namespace chorus
