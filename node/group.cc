#include "node/group.h"

#include <algorithm>
#include <chrono>
#include <deque>

#include "node/core_options.h"
#include "node/value_codec.h"
#include "utils/coding.h"
#include "utils/thread_name.h"

namespace chorus {

namespace {

// The loop executes a round after at most this many events, so that a flood
// of messages cannot delay the fsync (and the answers) without bound.
constexpr size_t kMaxEventsPerRound = 512;

// splitmix64's finalizer: a bijection, so distinct counters give distinct ids.
uint64_t MixBits(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Group::Group(const GroupEnv& env, uint32_t index, std::unique_ptr<LogStorage> log,
             std::vector<StateMachine*> state_machines)
    : env_(env),
      index_(index),
      log_(std::move(log)),
      // Fresh per start (from the OS, or the test hook's seed): ids differ
      // across restarts as well as across nodes.
      proposal_id_base_(MixBits(env.runtime->CoreSeed(index)) ^ env.options->self.id()),
      queue_(std::make_shared<EventQueue>()),
      batch_(env.options, env.runtime, queue_, env.notifier_pool),
      timers_(std::make_unique<GroupTimers>(env.runtime, queue_)),
      master_(env.options, index, timers_.get(), env.address_book) {
  for (StateMachine* sm : state_machines) state_machines_[sm->id()] = sm;
  checkpoint_ = std::make_unique<GroupCheckpoint>(env.options, index, env.logger,
                                                  env.checkpoint_worker, env.request_checkpoint,
                                                  queue_, &state_machines_, &checkpoints_);
  if (const AddressBook* book = env.address_book) {
    metrics_.set_node_namer([book](uint64_t id) {
      NodeInfo n;
      return book->Find(id, &n) ? n.ToString() : "node " + std::to_string(id);
    });
  }
  Transport* transport = env.transport;
  Logger* logger = env.logger;
  changer_ = std::make_unique<MembershipChanger>(
      env.options, index, env.logger, timers_.get(),
      [transport, logger](uint64_t to, std::string frame) {
        Status s = transport->Send(to, std::move(frame));
        if (!s.ok()) CHORUS_LOG(logger, kDebug, "membership reply: %s", s.ToString().c_str());
      });
}

Group::~Group() {
  Stop();
  // The core reads the log: destroy it first.
  core_.reset();
}

Status Group::Open(const GroupEnv& env, uint32_t index, std::unique_ptr<LogStorage> log,
                   std::vector<StateMachine*> state_machines, std::unique_ptr<Group>* out) {
  const auto began = std::chrono::steady_clock::now();  // for the recovery log line
  std::unique_ptr<Group> group(new Group(env, index, std::move(log), std::move(state_machines)));
  Status s = group->checkpoint_->OpenStore();
  if (!s.ok()) return s;
  paxos::CoreOptions core_options = MakeCoreOptions(*env.options, index);
  core_options.seed = env.runtime->CoreSeed(index);
  core_options.incarnation = env.incarnation;
  core_options.joined = env.joined;
  s = paxos::Core::Open(core_options, group->log_.get(), &group->core_);
  if (!s.ok()) return s.Annotate("group " + std::to_string(index));
  Group* g = group.get();
  g->admission_ = std::make_unique<Admission>(env.options, index, env.runtime, g->timers_.get(),
                                              g->core_.get(),
                                              [g](paxos::Outputs* step) { g->Merge(step); });
  paxos::Outputs restored;
  s = g->checkpoint_->Restore(g->core_.get(), g->log_.get(), &restored);
  if (!s.ok()) return s;
  g->round_.Add(&restored);  // executed by the loop's first round
  s = g->checkpoint_->Replay(g->core_.get(), [g](const paxos::ChosenValue& c) { g->Apply(c); });
  if (!s.ok()) return s;
  g->next_execute_.store(g->core_->chosen_end(), std::memory_order_release);
  g->log_start_.store(g->core_->log_start(), std::memory_order_release);
  g->membership_.OnOpen(*g->core_);
  g->LogOpened(began, g->metrics_.instances_executed());
  *out = std::move(group);
  return Status::OK();
}

void Group::SetCoreNow() {
  // Only master election reads the time: without it, no clock read per input.
  if (!env_.options->master_election) return;
  // The monotonic clock (steady_clock, or the test hook's): never the wall
  // clock, and never decreasing, as Core::SetNow requires.
  const auto now = env_.runtime->Now().time_since_epoch();
  core_->SetNow(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()));
}

Status Group::Start() {
  paxos::Outputs out;
  SetCoreNow();
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
    if (e.call) AnswerCall(e.call.get(), stopped);
  }
  if (admission_) admission_->FailAll(stopped);
  master_.FailAll(stopped);
  changer_->FailAll(stopped);
  if (auto pending = batch_.Close()) AnswerAll(pending.get(), stopped);
  timers_->CancelAll();
}

Status Group::health() const {
  if (stopped_.load(std::memory_order_acquire)) return Status::Stopped("the node is stopped");
  MutexLock lock(&health_mu_);
  return health_;
}

void Group::PostLoadCheckpoint(uint64_t instance) {
  Event event;
  event.kind = Event::Kind::kLoadCheckpoint;
  event.token = instance;
  queue_->Push(std::move(event));  // dropped once stopped
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

uint64_t Group::NextProposalId() {
  uint64_t id = 0;
  while (id == 0) {  // 0 means "none"
    id = MixBits(proposal_id_base_ + proposal_seq_.fetch_add(1, std::memory_order_relaxed));
  }
  return id;
}

void Group::Loop() {
  SetThreadName("chorus-loop-g" + std::to_string(index_));
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
    SetCoreNow();
    admission_->Drain();
    // Batches that ended this round made room for a deferred one.
    if (batch_deferred_) {
      paxos::Outputs step;
      FlushBatch(/*at_deadline=*/false, &step);
      Merge(&step);
    }
  } while (!round_.empty());
}

void Group::HandleEvent(Event* event, paxos::Outputs* step) {
  step->Clear();
  if (event->timer_seq != 0 && !timers_->OnFired(event->timer_seq)) return;  // cancelled
  SetCoreNow();
  switch (event->kind) {
    case Event::Kind::kPropose:
      HandlePropose(event->request, step);
      break;
    case Event::Kind::kFlushBatch:
      FlushBatch(/*at_deadline=*/event->token != 0, step);
      break;
    case Event::Kind::kMessage:
      // Bad input (a sender speaking for another node included) is counted by the core.
      if (halted_.ok()) core_->OnMessage(event->bytes, step, event->from);
      break;
    case Event::Kind::kTimeout:
      if (halted_.ok()) core_->OnTimeout(event->timer, step);
      break;
    case Event::Kind::kDeadline:
      admission_->OnDeadline(event->token, step);
      break;
    case Event::Kind::kBacklogCheck:
      admission_->OnBacklogTimer();  // merges into the round itself
      break;
    case Event::Kind::kReadBarrier:
      HandleReadBarrier(event->call, step);
      break;
    case Event::Kind::kTransfer:
      HandleTransfer(event->call, event->token, step);
      break;
    case Event::Kind::kBarrierDeadline:
      master_.OnBarrierDeadline(event->token);
      break;
    case Event::Kind::kCheckpointDone:
      checkpoint_->OnMade(core_.get(), event->token, event->status, step);
      break;
    case Event::Kind::kMembership:
      HandleMembership(event, step);
      break;
    case Event::Kind::kMembershipTick:
      if (halted_.ok()) changer_->OnTick(core_.get(), CoreNowMs(), step);
      break;
    case Event::Kind::kLoadCheckpoint:
      if (const uint64_t next = checkpoint_->OnLoad(core_.get(), event->token, step)) {
        next_execute_.store(next, std::memory_order_release);
      }
      break;
  }
}

void Group::HandlePropose(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step) {
  if (!halted_.ok()) {
    AnswerAll(request.get(), halted_);
    return;
  }
  admission_->Admit(request, step);
}

void Group::FlushBatch(bool at_deadline, paxos::Outputs* step) {
  if (at_deadline) batch_deadline_timer_ = 0;  // this is it firing
  const int limit = env_.options->batch_max_inflight;
  // Waiting pays only behind big batches: with batches of a few values (a
  // group with few callers) it adds a round of latency to each and saves
  // little CPU. propose_bench measured it (README "Batch shape"): 1 group,
  // 100 clients, batches of 29-31 values (of 64) without waiting:
  // 1.18-1.27x values/s with it in 3 runs of 4, 0.80x in the 4th (41-46 per
  // batch: the noise of a 2-core VM; hence off by default); 16 groups, 8 per batch:
  // 0.56x when it waited behind any batch, 0.92x behind batches of 16 or
  // more. Hence a third of batch_max_count.
  const size_t held = admission_->batches_held();
  const size_t min_fill = std::max(1, env_.options->batch_max_count / 3);
  SteadyTime deadline;
  // Only a batch that may wait asks for its deadline (a lock of
  // ProposeBatch's): with no limit, the default, a flush takes the lock once.
  if (!at_deadline && limit > 0 && held >= static_cast<size_t>(limit) &&
      admission_->batch_values_held() >= held * min_fill && batch_.PendingDeadline(&deadline)) {
    // The batch keeps filling (ProposeBatch posts no new flush while it is
    // not empty); RunRounds flushes it again after each round. The timer
    // follows the pending batch: a full one may have left meanwhile and
    // another begun.
    batch_deferred_ = true;
    if (batch_deadline_timer_ == 0 || deadline != batch_deadline_) {
      if (batch_deadline_timer_ != 0) timers_->Cancel(batch_deadline_timer_);
      Event flush;
      flush.kind = Event::Kind::kFlushBatch;
      flush.token = 1;
      batch_deadline_timer_ =
          timers_->Start(Admission::TimerDelayMs(env_.runtime->Now(), deadline), std::move(flush));
      batch_deadline_ = deadline;
    }
    return;
  }
  batch_deferred_ = false;
  if (batch_deadline_timer_ != 0) {
    timers_->Cancel(batch_deadline_timer_);
    batch_deadline_timer_ = 0;
  }
  if (auto request = batch_.TakePending()) HandlePropose(request, step);
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
    const auto write_began = std::chrono::steady_clock::now();
    Status s = log_->Write(round.persist, round.sync && env_.options->sync_writes);
    metrics_.OnLogWrite(write_began, round.sync && env_.options->sync_writes);
    if (!s.ok()) {
      Halt(Status::IOError("group " + std::to_string(index_) + ": log write failed, group halted: " +
                           s.ToString()));
      return;
    }
  }
  // 2. Send.
  SendMessages(round.messages);
  // 2b. Catch-up reads go to the reader thread, so this loop never waits on
  // them; only now, after the persist: they may cover this round's records.
  // A full reader drops (and counts) the read; the asker asks again.
  for (const paxos::CatchupRead& read : round.catchup_reads) {
    env_.catchup_reader->Submit(index_, log_.get(), read);
  }
  // 3. Apply, then answer the proposers whose values are executed.
  for (const paxos::ChosenValue& c : round.chosen) Apply(c);
  // Published before the answers: a membership call answered OK must find
  // its change in GetMembership (the caller reads it right after).
  membership_.AfterRound(*core_);
  for (const paxos::ProposalResult& f : round.finished) Finish(f);
  // 3b. Read barriers: each waits until the state machines executed every
  // instance below its read point (this round's applies included).
  const uint64_t executed = next_execute_.load(std::memory_order_relaxed);
  for (const auto& b : round.barriers) {
    master_.OnBarrierResult(b.token, b.instance, b.status, executed);
  }
  if (!round.chosen.empty()) master_.OnExecuted(executed);
  // 3c. Checkpoints: serve the core's checkpoint_needed, make one when due.
  paxos::Outputs after;
  if (const uint64_t next =
          checkpoint_->AfterRound(core_.get(), round.checkpoint_needed, executed, &after)) {
    next_execute_.store(next, std::memory_order_release);
  }
  Merge(&after);  // (the next round's)
  // 4. Timers.
  for (const paxos::TimerId& t : round.cancel_timers) timers_->CancelCore(t);
  for (const paxos::TimerStart& t : round.timers) timers_->StartCore(t);
  if (core_->halted() && halted_.ok()) {
    Halt(Status::Corruption("group " + std::to_string(index_) +
                            " halted: the paxos log disagrees with a peer's (checksum mismatch)"));
  }
  log_start_.store(core_->log_start(), std::memory_order_release);
  // Again: a checkpoint install or a NOT_MEMBER of this round may have
  // changed it since (compared with what was published; nothing is missed).
  membership_.AfterRound(*core_);
  checkpoint_->EndOfRound();
  UpdateMaster();
  PublishMetrics(round);  // before the transfers' answers
  // Transfers whose hand-over this round sent; answered after the snapshot,
  // so that their callers see this node as master no more.
  master_.AnswerSent();
}

void Group::SendMessages(const std::vector<paxos::OutMessage>& messages) {
  // One batch for the round: the transport then writes what goes to one
  // peer together, and a broadcast (an accept request carries the value) is
  // enveloped and framed once for all its peers instead of once each.
  MessageBatch batch;
  const std::vector<uint64_t>& peers = membership_.broadcast_peers();
  for (const paxos::OutMessage& m : messages) {
    if (m.to == paxos::kBroadcast && peers.empty()) continue;  // alone in the group
    // Envelope: the group index, then the core's message.
    std::string frame;
    frame.reserve(4 + m.bytes.size());
    PutFixed32(&frame, index_);
    frame.append(m.bytes);
    const size_t index = batch.Add(std::move(frame));
    if (m.to == paxos::kBroadcast) {
      for (uint64_t peer : peers) batch.AddSend(peer, index);
    } else {
      batch.AddSend(m.to, index);
    }
  }
  if (batch.empty()) return;
  Status s = env_.transport->SendBatch(std::move(batch));
  if (!s.ok()) CHORUS_LOG(env_.logger, kDebug, "group %u: send: %s", index_, s.ToString().c_str());
}

void Group::Halt(const Status& why) {
  CHORUS_LOG(env_.logger, kError, "%s", why.ToString().c_str());
  halted_ = why;
  {
    MutexLock lock(&health_mu_);
    health_ = why;
  }
  admission_->FailAll(why);
  master_.FailAll(why);
  changer_->FailAll(why);
  checkpoint_->Halt();
}

}  // namespace chorus
