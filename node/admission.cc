#include "node/admission.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace chorus {

Admission::Admission(const Options* options, uint32_t group, const RuntimeEnv* env,
                     GroupTimers* timers, paxos::Core* core, MergeFn merge)
    : options_(options),
      group_(group),
      env_(env),
      timers_(timers),
      core_(core),
      merge_(std::move(merge)) {}

uint64_t Admission::TimerDelayMs(SteadyTime now, SteadyTime when) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when - now);
  return static_cast<uint64_t>(std::max<int64_t>(left.count(), 0)) + 1;
}

size_t Admission::Capacity() const {
  // max_inflight in phase 2, and as many queued in the core behind them, so
  // that the core refills a freed slot in the same step that freed it.
  return 2 * static_cast<size_t>(options_->max_inflight);
}

bool Admission::Expired(ProposalRequest* request, SteadyTime now) {
  Status s = CheckNotStarted(*request, now, std::chrono::milliseconds(options_->max_queue_wait_ms),
                             group_);
  if (s.ok()) return false;
  AnswerAll(request, s);
  return true;
}

SteadyTime Admission::Expiry(const ProposalRequest& request) const {
  return std::min(request.enqueued + std::chrono::milliseconds(options_->max_queue_wait_ms),
                  request.deadline);
}

void Admission::Admit(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step) {
  const SteadyTime now = env_->Now();
  // When the loop took it (CheckNotStarted tells a stalled loop from overload).
  if (request->taken == SteadyTime()) request->taken = now;
  if (Expired(request.get(), now)) return;
  // At most Capacity() (2 x max_inflight) proposals are in the core; the
  // others wait here, in arrival order, where their queue wait is measured.
  if (!backlog_.empty() || in_core_.size() >= Capacity()) {
    backlog_.push_back(request);
    Held(*request);
    ArmBacklogTimer(Expiry(*request));
    return;
  }
  StartInCore(request, step);
}

void Admission::StartInCore(const std::shared_ptr<ProposalRequest>& request,
                            paxos::Outputs* step) {
  const SteadyTime now = env_->Now();
  const uint64_t token = next_token_++;
  Status s = core_->Propose(token, request->value, step);
  if (!s.ok()) {
    AnswerAll(request.get(), s);
    return;
  }
  InCore& in = in_core_[token];
  in.request = request;
  Held(*request);
  Event deadline;
  deadline.kind = Event::Kind::kDeadline;
  deadline.token = token;
  // The deadline may already be behind `now` (Drain checks expiry with the
  // time it started at): the timer then fires at once.
  in.deadline_timer = timers_->Start(TimerDelayMs(now, request->deadline), std::move(deadline));
}

void Admission::Drain() {
  const SteadyTime now = env_->Now();
  paxos::Outputs step;
  while (!backlog_.empty()) {
    std::shared_ptr<ProposalRequest> front = backlog_.front();
    if (Expired(front.get(), now)) {
      // answered
    } else if (in_core_.size() < Capacity()) {
      // Every core input clears its Outputs: merge each start's own.
      StartInCore(front, &step);
      merge_(&step);
    } else {
      break;
    }
    backlog_.pop_front();
    LetGo(*front);  // StartInCore counted it again if it is in the core now
  }
  ArmBacklogTimer();
}

void Admission::OnBacklogTimer() {
  backlog_timer_ = 0;
  ExpireBacklog();
  Drain();
}

void Admission::ExpireBacklog() {
  // Deadlines differ per call: an expired request may sit behind live ones.
  const SteadyTime now = env_->Now();
  backlog_.erase(std::remove_if(backlog_.begin(), backlog_.end(),
                                [&](const std::shared_ptr<ProposalRequest>& r) {
                                  if (!Expired(r.get(), now)) return false;
                                  LetGo(*r);
                                  return true;
                                }),
                 backlog_.end());
}

void Admission::ArmBacklogTimer() {
  if (backlog_.empty() || backlog_timer_ != 0) return;
  SteadyTime earliest = Expiry(*backlog_.front());
  for (const auto& r : backlog_) earliest = std::min(earliest, Expiry(*r));
  ArmBacklogTimer(earliest);
}

void Admission::ArmBacklogTimer(SteadyTime expiry) {
  if (backlog_timer_ != 0) {
    if (expiry >= backlog_timer_due_) return;
    timers_->Cancel(backlog_timer_);
  }
  Event check;
  check.kind = Event::Kind::kBacklogCheck;
  backlog_timer_ = timers_->Start(TimerDelayMs(env_->Now(), expiry), std::move(check));
  backlog_timer_due_ = expiry;
}

void Admission::OnDeadline(uint64_t token, paxos::Outputs* step) {
  auto it = in_core_.find(token);
  if (it == in_core_.end()) return;
  it->second.deadline_timer = 0;
  AnswerAll(it->second.request.get(),
            Status::Timeout("value not chosen by the call's deadline; it may still be chosen "
                            "later (Execute then sees its proposal id)"));
  // The core ends the proposal (ProposalResult) when it can; the request
  // stays in in_core_ until then so that its value executes without a ctx.
  core_->Cancel(token, step);
}

ProposalRequest* Admission::Find(uint64_t token) const {
  auto it = in_core_.find(token);
  return it == in_core_.end() ? nullptr : it->second.request.get();
}

std::shared_ptr<ProposalRequest> Admission::Finish(uint64_t token) {
  auto it = in_core_.find(token);
  if (it == in_core_.end()) return nullptr;
  InCore in = std::move(it->second);
  in_core_.erase(it);
  LetGo(*in.request);
  if (in.deadline_timer != 0) timers_->Cancel(in.deadline_timer);
  return std::move(in.request);
}

void Admission::FailAll(const Status& why) {
  for (auto& [token, in] : in_core_) {
    if (in.deadline_timer != 0) timers_->Cancel(in.deadline_timer);
    AnswerAll(in.request.get(), why);
  }
  in_core_.clear();
  for (auto& request : backlog_) AnswerAll(request.get(), why);
  backlog_.clear();
  batches_held_ = 0;
  batch_values_held_ = 0;
}

}  // namespace chorus
