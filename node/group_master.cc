#include "node/group_master.h"

#include <string>
#include <utility>

#include "node/event_queue.h"

namespace chorus {

GroupMaster::GroupMaster(const Options* options, uint32_t group, GroupTimers* timers,
                         const AddressBook* book)
    : options_(options), group_(group), timers_(timers), book_(book) {}

MasterSnapshot GroupMaster::snapshot() const {
  MutexLock lock(&mu_);
  return shared_;
}

bool GroupMaster::FindMember(uint64_t id, NodeInfo* node) const {
  if (book_ != nullptr) return book_->Find(id, node);
  for (const NodeInfo& n : options_->nodes) {
    if (n.id() == id) {
      *node = n;
      return true;
    }
  }
  return false;
}

Status GroupMaster::WithMasterAddress(const Status& s) const {
  if (!s.IsNotMaster()) return s;
  const MasterSnapshot m = snapshot();
  NodeInfo master;
  if (m.node == 0 || m.node == options_->self.id() || !FindMember(m.node, &master)) return s;
  return Status::NotMaster("group " + std::to_string(group_) + ": " +
                           options_->self.ToString() + " is not the master; the master is " +
                           master.ToString());
}

void GroupMaster::Update(const MasterSnapshot& now) {
  if (now == last_) return;
  const MasterSnapshot before = last_;
  last_ = now;
  {
    MutexLock lock(&mu_);
    shared_ = now;
  }
  // Stored first: a callback that asks GetMaster sees the new master.
  const uint64_t self = options_->self.id();
  // A new epoch of the same master (it ran phase 1 again above a stale
  // promise, say of a member that campaigned unheard after a restart) is no
  // change for the application: GetMaster shows it, the callback does not.
  const bool changed =
      before.node != now.node || before.is_master(self) != now.is_master(self);
  if (changed && options_->on_master_change) {
    options_->on_master_change(group_, now.is_master(self));
  }
}

uint64_t GroupMaster::AddBarrier(std::shared_ptr<CallWaiter> waiter, int timeout_ms) {
  const uint64_t token = next_token_++;
  Barrier& b = barriers_[token];
  b.waiter = std::move(waiter);
  Event deadline;
  deadline.kind = Event::Kind::kBarrierDeadline;
  deadline.token = token;
  b.deadline_timer = timers_->Start(static_cast<uint64_t>(timeout_ms), std::move(deadline));
  return token;
}

void GroupMaster::Answer(uint64_t token, const Status& status, uint64_t instance) {
  auto it = barriers_.find(token);
  if (it == barriers_.end()) return;
  if (it->second.deadline_timer != 0) timers_->Cancel(it->second.deadline_timer);
  AnswerCall(it->second.waiter.get(), status, instance);
  barriers_.erase(it);
}

void GroupMaster::OnBarrierResult(uint64_t token, uint64_t instance, const Status& status,
                                  uint64_t executed) {
  auto it = barriers_.find(token);
  if (it == barriers_.end()) return;  // its deadline passed first
  if (!status.ok()) {
    Answer(token, status, 0);
  } else if (executed >= instance) {
    Answer(token, Status::OK(), instance);
  } else {
    it->second.has_point = true;
    it->second.point = instance;
  }
}

void GroupMaster::OnExecuted(uint64_t executed) {
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    Barrier& b = it->second;
    if (b.has_point && executed >= b.point) {
      if (b.deadline_timer != 0) timers_->Cancel(b.deadline_timer);
      AnswerCall(b.waiter.get(), Status::OK(), b.point);
      it = barriers_.erase(it);
    } else {
      ++it;
    }
  }
}

void GroupMaster::OnBarrierDeadline(uint64_t token) {
  auto it = barriers_.find(token);
  if (it == barriers_.end()) return;
  it->second.deadline_timer = 0;  // it fired
  const std::string why = it->second.has_point
                              ? "this node did not execute up to the read point in time"
                              : "no answer from the master in time";
  Answer(token, Status::Timeout("group " + std::to_string(group_) + " read barrier: " + why), 0);
}

void GroupMaster::AddSentWaiter(std::shared_ptr<CallWaiter> waiter) {
  sent_waiters_.push_back(std::move(waiter));
}

void GroupMaster::AnswerSent() {
  for (const auto& w : sent_waiters_) AnswerCall(w.get(), Status::OK());
  sent_waiters_.clear();
}

void GroupMaster::FailAll(const Status& why) {
  for (auto& [token, b] : barriers_) {
    if (b.deadline_timer != 0) timers_->Cancel(b.deadline_timer);
    AnswerCall(b.waiter.get(), why);
  }
  barriers_.clear();
  for (const auto& w : sent_waiters_) AnswerCall(w.get(), why);
  sent_waiters_.clear();
}

}  // namespace chorus
