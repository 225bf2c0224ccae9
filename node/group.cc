#include "node/group.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "node/core_options.h"
#include "node/value_codec.h"
#include "utils/coding.h"

namespace chorus {

namespace {

using Clock = std::chrono::steady_clock;

// A proposer that the loop has not answered by its deadline plus this much
// gives up on its own (the loop is stuck, e.g. on a hung disk).
constexpr auto kAnswerGrace = std::chrono::seconds(2);

// The loop executes a round after at most this many events, so that a flood
// of messages cannot delay the fsync (and the answers) without bound.
constexpr size_t kMaxEventsPerRound = 512;

// A fresh seed for every start of the core (proposal ids come from it).
uint64_t FreshSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

}  // namespace

Group::Group(const GroupEnv& env, uint32_t index, std::unique_ptr<LogStorage> log,
             std::vector<StateMachine*> state_machines)
    : env_(env),
      index_(index),
      log_(std::move(log)),
      queue_(std::make_shared<EventQueue>()),
      batch_(env.options, env.timer_thread, queue_),
      timers_(std::make_unique<GroupTimers>(env.timer_thread, queue_)) {
  for (StateMachine* sm : state_machines) state_machines_[sm->id()] = sm;
  for (const NodeInfo& n : env.options->nodes) {
    if (n.id() != env.options->self.id()) peers_.push_back(n.id());
  }
}

Group::~Group() {
  Stop();
  // The core reads the log: destroy it first.
  core_.reset();
}

Status Group::Open(const GroupEnv& env, uint32_t index, std::unique_ptr<LogStorage> log,
                   std::vector<StateMachine*> state_machines, std::unique_ptr<Group>* out) {
  std::unique_ptr<Group> group(new Group(env, index, std::move(log), std::move(state_machines)));
  paxos::CoreOptions core_options = MakeCoreOptions(*env.options, index);
  core_options.seed = FreshSeed();
  Status s = paxos::Core::Open(core_options, group->log_.get(), &group->core_);
  if (!s.ok()) return s.Annotate("group " + std::to_string(index));
  s = group->Replay();
  if (!s.ok()) return s;
  *out = std::move(group);
  return Status::OK();
}

Status Group::Replay() {
  // Values below each state machine's checkpoint are already reflected in
  // its state; the rest of the chosen prefix is executed again, in order.
  const uint64_t end = core_->chosen_end();
  uint64_t from = end;
  for (const auto& [id, sm] : state_machines_) {
    checkpoints_[id] = sm->GetCheckpointInstanceId(index_);
    from = std::min(from, checkpoints_[id]);
  }
  for (uint64_t i = from; i < end; ++i) {
    paxos::ChosenValue chosen;
    Status s = core_->ReadChosen(i, &chosen);
    if (!s.ok()) {
      return Status::Corruption("group " + std::to_string(index_) + ": cannot replay instance " +
                                std::to_string(i) + " into the state machines: " + s.ToString());
    }
    chosen.ours = false;
    Apply(chosen);
  }
  next_execute_.store(end, std::memory_order_release);
  return Status::OK();
}

Status Group::Start() {
  paxos::Outputs out;
  core_->Start(&out);
  round_.Add(&out);
  try {
    loop_ = std::thread([this] { Loop(); });
  } catch (const std::system_error& e) {
    return Status::IOError(std::string("cannot start the group loop thread: ") + e.what());
  }
  return Status::OK();
}

void Group::Stop() {
  if (stopped_.exchange(true)) return;
  std::deque<Event> dropped;
  queue_->Close(&dropped);
  if (loop_.joinable()) loop_.join();
  // The loop is gone: this thread now owns its state.
  const Status stopped = Status::Stopped("the node is stopping");
  for (Event& e : dropped) {
    if (e.kind == Event::Kind::kPropose && e.request) AnswerAll(e.request.get(), stopped);
  }
  for (auto& [token, in] : in_core_) AnswerAll(in.request.get(), stopped);
  in_core_.clear();
  for (auto& request : backlog_) AnswerAll(request.get(), stopped);
  backlog_.clear();
  if (auto pending = batch_.Close()) AnswerAll(pending.get(), stopped);
  timers_->CancelAll();
}

Status Group::health() const {
  if (stopped_.load(std::memory_order_acquire)) return Status::Stopped("the node is stopped");
  std::lock_guard<std::mutex> lock(health_mu_);
  return health_;
}

uint64_t Group::min_chosen_instance_id() const {
  uint64_t id = 0;
  return log_->GetMinInstanceId(&id).ok() ? id : 0;
}

void Group::PostMessage(uint64_t from, std::string bytes) {
  Event event;
  event.kind = Event::Kind::kMessage;
  event.bytes = std::move(bytes);
  event.from = from;
  if (!queue_->PushMessage(std::move(event), env_.options->max_inbound_queue_bytes) &&
      !stopped_.load(std::memory_order_relaxed)) {
    dropped_messages_.fetch_add(1, std::memory_order_relaxed);
  }
}

Status Group::ResolveStateMachine(const ExecuteContext* ctx, int* id) const {
  const int wanted = ctx != nullptr ? ctx->state_machine_id : 0;
  if (wanted != 0) {
    if (state_machines_.count(wanted) == 0) {
      return Status::InvalidArgument("group " + std::to_string(index_) +
                                     " has no state machine with id " + std::to_string(wanted));
    }
    *id = wanted;
    return Status::OK();
  }
  if (state_machines_.size() > 1) {
    return Status::InvalidArgument("group " + std::to_string(index_) +
                                   " has several state machines: set ctx->state_machine_id");
  }
  *id = state_machines_.empty() ? 0 : state_machines_.begin()->first;
  return Status::OK();
}

Status Group::Propose(const std::string& value, ExecuteContext* ctx, bool batch,
                      uint64_t* instance_id, uint32_t* batch_index) {
  const Options& o = *env_.options;
  if (stopped_.load(std::memory_order_acquire)) return Status::Stopped("the node is stopping");
  if (std::this_thread::get_id() == loop_thread_id_.load(std::memory_order_acquire)) {
    return Status::InvalidArgument("Propose called from inside Execute of group " +
                                   std::to_string(index_) + ": it would wait for itself");
  }
  if (value.size() > o.max_value_bytes) {
    return Status::TooLarge("value of " + std::to_string(value.size()) +
                            " bytes exceeds max_value_bytes " + std::to_string(o.max_value_bytes));
  }
  auto waiter = std::make_shared<ProposalWaiter>();
  Status s = ResolveStateMachine(ctx, &waiter->value.state_machine_id);
  if (!s.ok()) return s;
  // Overload protection: refuse at once rather than queue without bound.
  if (waiting_.fetch_add(1, std::memory_order_relaxed) >= o.max_waiting_proposals) {
    waiting_.fetch_sub(1, std::memory_order_relaxed);
    return Status::Busy("group " + std::to_string(index_) + " already has " +
                        std::to_string(o.max_waiting_proposals) + " proposals waiting");
  }
  struct Release {
    std::atomic<int>* n;
    ~Release() { n->fetch_sub(1, std::memory_order_relaxed); }
  } release{&waiting_};

  s = env_.notifier_pool->Get(&waiter->notifier);
  if (!s.ok()) return s;
  waiter->ticket = waiter->notifier->Prepare();
  if (ctx != nullptr) ctx->result = Status::OK();  // a reused ctx holds no stale result
  waiter->ctx = ctx;
  waiter->enqueued = Clock::now();

  if (batch) {
    waiter->value.payload = value;  // packed with the others when the batch leaves
    batch_.Add(waiter);
  } else {
    auto request = std::make_shared<ProposalRequest>();
    request->value = EncodeSingleValue(waiter->value.state_machine_id, value);
    request->waiters.push_back(waiter);
    request->enqueued = waiter->enqueued;
    request->deadline = request->enqueued + std::chrono::milliseconds(o.propose_timeout_ms);
    Event event;
    event.kind = Event::Kind::kPropose;
    event.request = std::move(request);
    if (!queue_->Push(std::move(event))) return Status::Stopped("the node is stopping");
  }

  int ignored = 0;
  const auto limit = std::chrono::milliseconds(o.propose_timeout_ms) + kAnswerGrace;
  s = waiter->notifier->WaitFor(std::chrono::duration_cast<std::chrono::microseconds>(limit).count(),
                                &ignored);
  if (s.IsTimeout()) {
    // The loop did not answer in time: stop it from using ctx from now on,
    // then take an answer that may have raced in.
    {
      std::lock_guard<std::mutex> lock(waiter->mu);
      waiter->abandoned = true;
    }
    s = waiter->notifier->WaitFor(0, &ignored);
    if (!s.ok()) return Status::Timeout("no answer from group " + std::to_string(index_));
  }
  if (!s.ok()) return s;
  if (instance_id != nullptr) *instance_id = waiter->instance;
  if (batch_index != nullptr) *batch_index = waiter->batch_index;
  return waiter->status;
}

void Group::Loop() {
  loop_thread_id_.store(std::this_thread::get_id(), std::memory_order_release);
  std::deque<Event> events;
  paxos::Outputs step;
  RunRounds();  // the outputs of core_->Start()
  while (queue_->TakeAll(&events, kMaxEventsPerRound)) {
    for (Event& event : events) {
      HandleEvent(&event, &step);
      Merge(&step);
    }
    events.clear();
    RunRounds();
  }
}

void Group::RunRounds() {
  do {
    ExecuteRound();
    // Proposals that ended this round made room: start waiting ones.
    DrainBacklog();
  } while (!round_.empty());
}

void Group::HandleEvent(Event* event, paxos::Outputs* step) {
  step->Clear();
  if (event->timer_seq != 0 && !timers_->OnFired(event->timer_seq)) return;  // cancelled
  switch (event->kind) {
    case Event::Kind::kPropose:
      HandlePropose(event->request, step);
      break;
    case Event::Kind::kFlushBatch:
      if (auto request = batch_.TakePending()) HandlePropose(request, step);
      break;
    case Event::Kind::kMessage:
      // Bad input (a sender speaking for another node included) is counted by the core.
      if (halted_.ok()) core_->OnMessage(event->bytes, step, event->from);
      break;
    case Event::Kind::kTimeout:
      if (halted_.ok()) core_->OnTimeout(event->timer, step);
      break;
    case Event::Kind::kDeadline:
      HandleDeadline(event->token, step);
      break;
    case Event::Kind::kBacklogCheck:
      backlog_timer_ = 0;
      DrainBacklog();  // merges into the round itself
      break;
  }
}

size_t Group::CoreCapacity() const {
  // max_inflight in phase 2, and as many queued in the core behind them, so
  // that the core refills a freed slot in the same step that freed it.
  return 2 * static_cast<size_t>(env_.options->max_inflight);
}

bool Group::Expired(ProposalRequest* request, Clock::time_point now) {
  if (now - request->enqueued > std::chrono::milliseconds(env_.options->max_queue_wait_ms)) {
    AnswerAll(request, Status::Busy("proposal waited longer than max_queue_wait_ms for the group"));
    return true;
  }
  if (now >= request->deadline) {
    AnswerAll(request, Status::Timeout("proposal deadline passed before it started"));
    return true;
  }
  return false;
}

void Group::HandlePropose(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step) {
  if (!halted_.ok()) {
    AnswerAll(request.get(), halted_);
    return;
  }
  if (Expired(request.get(), Clock::now())) return;
  // At most max_inflight proposals are in the core; the others wait here, in
  // arrival order, where their queue wait is measured.
  if (!backlog_.empty() || in_core_.size() >= CoreCapacity()) {
    backlog_.push_back(request);
    ArmBacklogTimer();
    return;
  }
  StartInCore(request, step);
}

void Group::StartInCore(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step) {
  const auto now = Clock::now();
  const uint64_t token = next_token_++;
  Status s = core_->Propose(token, request->value, step);
  if (!s.ok()) {
    AnswerAll(request.get(), s);
    return;
  }
  InCore& in = in_core_[token];
  in.request = request;
  Event deadline;
  deadline.kind = Event::Kind::kDeadline;
  deadline.token = token;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(request->deadline - now);
  in.deadline_timer = timers_->Start(static_cast<uint64_t>(left.count()) + 1, std::move(deadline));
}

void Group::DrainBacklog() {
  const auto now = Clock::now();
  paxos::Outputs step;
  while (!backlog_.empty()) {
    std::shared_ptr<ProposalRequest> front = backlog_.front();
    if (!halted_.ok()) {
      AnswerAll(front.get(), halted_);
    } else if (Expired(front.get(), now)) {
      // answered
    } else if (in_core_.size() < CoreCapacity()) {
      // Every core input clears its Outputs: merge each start's own.
      StartInCore(front, &step);
      Merge(&step);
    } else {
      break;
    }
    backlog_.pop_front();
  }
  ArmBacklogTimer();
}

void Group::ArmBacklogTimer() {
  if (backlog_.empty() || backlog_timer_ != 0) return;
  // The backlog is in arrival order, and every request has the same queue
  // wait and timeout: the front one expires first.
  const ProposalRequest& front = *backlog_.front();
  const auto expiry = std::min(front.enqueued + std::chrono::milliseconds(env_.options->max_queue_wait_ms),
                               front.deadline);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(expiry - Clock::now());
  Event check;
  check.kind = Event::Kind::kBacklogCheck;
  backlog_timer_ = timers_->Start(static_cast<uint64_t>(std::max<int64_t>(left.count(), 0)) + 1,
                                  std::move(check));
}

void Group::HandleDeadline(uint64_t token, paxos::Outputs* step) {
  auto it = in_core_.find(token);
  if (it == in_core_.end()) return;
  it->second.deadline_timer = 0;
  AnswerAll(it->second.request.get(),
            Status::Timeout("value not chosen within propose_timeout_ms; it may still be chosen later"));
  // The core ends the proposal (ProposalResult) when it can; the request
  // stays in in_core_ until then so that its value executes without a ctx.
  if (halted_.ok()) core_->Cancel(token, step);
}

void Group::Merge(paxos::Outputs* step) { round_.Add(step); }

void Group::ExecuteRound() {
  paxos::Outputs round;
  round_.Take(&round);
  for (const Status& e : round.errors) {
    CHORUS_LOG(env_.logger, kWarning, "group %u: %s", index_, e.ToString().c_str());
  }
  // 1. Persist. Nothing of this round may be sent or applied unless it is durable.
  if (!round.persist.empty()) {
    Status s = log_->Write(round.persist, round.sync && env_.options->sync_writes);
    if (!s.ok()) {
      Halt(Status::IOError("group " + std::to_string(index_) + ": log write failed, group halted: " +
                           s.ToString()));
      return;
    }
  }
  // 2. Send.
  for (const paxos::OutMessage& m : round.messages) {
    if (m.to == paxos::kBroadcast) {
      for (uint64_t peer : peers_) SendMessage(peer, m.bytes);
    } else {
      SendMessage(m.to, m.bytes);
    }
  }
  // 2b. Catch-up reads go to the reader thread, so this loop never waits on
  // them; only now, after the persist: they may cover this round's records.
  // A full reader drops (and counts) the read; the asker asks again.
  for (const paxos::CatchupRead& read : round.catchup_reads) {
    env_.catchup_reader->Submit(index_, log_.get(), read);
  }
  // 3. Apply, then answer the proposers whose values are executed.
  for (const paxos::ChosenValue& c : round.chosen) Apply(c);
  for (const paxos::ProposalResult& f : round.finished) Finish(f);
  // 4. Timers.
  for (const paxos::TimerId& t : round.cancel_timers) timers_->CancelCore(t);
  for (const paxos::TimerStart& t : round.timers) timers_->StartCore(t);
  if (core_->halted() && halted_.ok()) {
    Halt(Status::Corruption("group " + std::to_string(index_) +
                            " halted: the paxos log disagrees with a peer's (checksum mismatch)"));
  }
}

void Group::SendMessage(uint64_t to, const std::string& bytes) {
  // Envelope: the group index, then the core's message.
  std::string frame;
  frame.reserve(4 + bytes.size());
  PutFixed32(&frame, index_);
  frame.append(bytes);
  Status s = env_.transport->Send(to, std::move(frame));
  if (!s.ok()) CHORUS_LOG(env_.logger, kDebug, "group %u: send: %s", index_, s.ToString().c_str());
}

void Group::Apply(const paxos::ChosenValue& chosen) {
  ProposalRequest* request = nullptr;
  if (chosen.ours) {
    auto it = in_core_.find(chosen.token);
    if (it != in_core_.end()) request = it->second.request.get();
  }
  if (!chosen.noop) {
    std::vector<AppValue> values;
    Status s = DecodeAppValues(chosen.value, &values);
    if (!s.ok()) {
      // Every replica decodes the same bytes the same way: skipping keeps them equal.
      CHORUS_LOG(env_.logger, kError, "group %u: instance %llu holds a value chorus cannot decode: %s",
                 index_, static_cast<unsigned long long>(chosen.instance), s.ToString().c_str());
    }
    for (size_t i = 0; i < values.size(); ++i) {
      // The waiter of this value, unless it was already answered (deadline):
      // then it may have returned, and neither its ctx nor its fields are ours.
      ProposalWaiter* waiter = nullptr;
      if (request != nullptr && i < request->waiters.size() && !request->waiters[i]->answered) {
        waiter = request->waiters[i].get();
      }
      auto sm = state_machines_.find(values[i].state_machine_id);
      if (sm != state_machines_.end() && chosen.instance < checkpoints_[sm->first]) {
        // Already reflected in this state machine's own durable state.
      } else if (sm != state_machines_.end()) {
        if (waiter != nullptr) {
          std::lock_guard<std::mutex> lock(waiter->mu);
          ExecuteContext* ctx = waiter->abandoned ? nullptr : waiter->ctx;
          // The application's result goes to its ctx, never into the Status
          // Propose returns (that one carries chorus's codes only).
          Status result = sm->second->Execute(index_, chosen.instance, values[i].payload, ctx);
          if (ctx != nullptr) ctx->result = std::move(result);
        } else {
          sm->second->Execute(index_, chosen.instance, values[i].payload, nullptr);
        }
      } else if (values[i].state_machine_id != 0) {
        CHORUS_LOG(env_.logger, kWarning, "group %u: instance %llu is for unknown state machine %d",
                   index_, static_cast<unsigned long long>(chosen.instance),
                   values[i].state_machine_id);
      }
      if (waiter != nullptr) {
        waiter->instance = chosen.instance;
        waiter->batch_index = static_cast<uint32_t>(i);
      }
    }
  }
  next_execute_.store(chosen.instance + 1, std::memory_order_release);
}

void Group::Finish(const paxos::ProposalResult& result) {
  auto it = in_core_.find(result.token);
  if (it == in_core_.end()) return;
  InCore in = std::move(it->second);
  in_core_.erase(it);
  if (in.deadline_timer != 0) timers_->Cancel(in.deadline_timer);
  for (const auto& w : in.request->waiters) {
    if (w->answered) continue;
    if (result.status.ok()) {
      w->instance = result.instance;
      Answer(w.get(), Status::OK());  // Execute's own result is in its ctx (Apply)
    } else {
      Answer(w.get(), result.status);
    }
  }
}

void Group::Halt(const Status& why) {
  CHORUS_LOG(env_.logger, kError, "%s", why.ToString().c_str());
  halted_ = why;
  {
    std::lock_guard<std::mutex> lock(health_mu_);
    health_ = why;
  }
  for (auto& [token, in] : in_core_) {
    if (in.deadline_timer != 0) timers_->Cancel(in.deadline_timer);
    AnswerAll(in.request.get(), why);
  }
  in_core_.clear();
  for (auto& request : backlog_) AnswerAll(request.get(), why);
  backlog_.clear();
}

void Group::Answer(ProposalWaiter* waiter, const Status& status) {
  if (waiter->answered) return;
  waiter->answered = true;
  waiter->status = status;
  // Send publishes the fields above to the waiter (release), or tells us the
  // waiter gave up (stale ticket): then nobody reads them.
  waiter->notifier->Send(waiter->ticket, 0);
}

void Group::AnswerAll(ProposalRequest* request, const Status& status) {
  for (const auto& w : request->waiters) Answer(w.get(), status);
}

}  // namespace chorus
