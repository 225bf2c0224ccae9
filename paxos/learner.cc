#include "paxos/learner.h"

#include <algorithm>

#include "paxos/acceptor.h"
#include "paxos/master.h"
#include "paxos/proposer.h"
#include "paxos/reconfig.h"
#include "paxos/trim.h"
#include "paxos/value.h"
#include "utils/crc32c.h"

namespace chorus {
namespace paxos {

void Learner::RestoreStart(uint64_t instance, uint32_t checksum) {
  restored_start_ = true;
  chosen_end_ = instance;
  last_checksum_ = checksum;
  last_tick_end_ = instance;
}

Status Learner::RestoreChosen(uint64_t instance, const std::string& value, uint32_t checksum) {
  if (restored_start_ && instance < trimmer_->log_start()) {
    return Status::Corruption("paxos log: a chosen record at instance " + std::to_string(instance) +
                              " below the log start " + std::to_string(trimmer_->log_start()));
  }
  if (!restored_start_ && chosen_end_ == 0 && instance > 0 && last_checksum_ == 0) {
    // The log below `instance` was trimmed: the chain restarts from the
    // stored checksum.
    chosen_end_ = instance;
  } else {
    if (instance != chosen_end_) {
      return Status::Corruption("paxos log: chosen instance " + std::to_string(instance) +
                                " follows a gap at " + std::to_string(chosen_end_));
    }
    uint32_t expect = crc32c::Extend(last_checksum_, value.data(), value.size());
    if (expect != checksum) {
      return Status::Corruption("paxos log: chained checksum mismatch at instance " +
                                std::to_string(instance));
    }
  }
  chosen_end_ = instance + 1;
  last_checksum_ = checksum;
  last_tick_end_ = chosen_end_;
  return Status::OK();
}

void Learner::Start() { ctx_->StartTimer(TimerKind::kLearn, ctx_->options().learn_interval_ms); }

void Learner::Halt(const Status& s) {
  halted_ = true;
  ctx_->ReportError(s);
}

void Learner::Learn(uint64_t instance, const std::string& value) {
  if (halted_) return;
  if (instance < chosen_end_) {
    auto it = cache_.find(instance);
    if (it != cache_.end() && it->second.first != value) {
      Halt(Status::Corruption("paxos: conflicting chosen values at instance " +
                              std::to_string(instance)));
    }
    return;
  }
  if (instance >= chosen_end_ + ctx_->options().window) {
    // Beyond the window: not kept (catch-up brings it once we are closer).
    // This bounds pending_, hence a PROMISE and the gap phase 1 fills.
    ctx_->stats()->beyond_window++;
    return;
  }
  auto it = pending_.find(instance);
  if (it != pending_.end()) {
    if (it->second != value) {
      Halt(Status::Corruption("paxos: conflicting chosen values at instance " +
                              std::to_string(instance)));
    }
    return;
  }
  pending_.emplace(instance, value);
  Advance();
}

void Learner::Advance() {
  while (!halted_) {
    auto it = pending_.find(chosen_end_);
    if (it == pending_.end()) break;
    std::string value = std::move(it->second);
    pending_.erase(it);
    ApplyOne(chosen_end_, value);
  }
}

void Learner::Cache(uint64_t instance, const std::string& value, uint32_t checksum) {
  cache_[instance] = {value, checksum};
  while (cache_.size() > ctx_->options().chosen_cache_size) cache_.erase(cache_.begin());
}

void Learner::DropCacheBelow(uint64_t instance) {
  cache_.erase(cache_.begin(), cache_.lower_bound(instance));
}

void Learner::Install(uint64_t instance, uint32_t checksum) {
  pending_.erase(pending_.begin(), pending_.lower_bound(instance));
  chosen_end_ = instance;
  last_checksum_ = checksum;
  cache_.clear();
  ask_outstanding_ = false;
  awaiting_checkpoint_ = false;
  Advance();
  // Log catch-up goes on from the checkpoint at once.
  if (!halted_ && peer_best_end_ > chosen_end_) Ask(peer_best_, ASK_LEARN);
}

void Learner::ApplyOne(uint64_t instance, const std::string& value) {
  const uint32_t checksum = crc32c::Extend(last_checksum_, value.data(), value.size());
  InstanceRecord rec;
  acceptor_->AcceptedBallot(instance).ToPb(rec.mutable_accepted_ballot());
  rec.set_value(value);
  rec.set_chosen(true);
  rec.set_checksum(checksum);
  ctx_->PersistRecord(instance, rec.SerializeAsString(), /*vote=*/false);
  Cache(instance, value, checksum);
  acceptor_->Forget(instance);
  chosen_end_ = instance + 1;
  last_checksum_ = checksum;

  paxos::ChosenValue out;
  out.instance = instance;
  if (!DecodeValue(value, &out.proposer, &out.proposal_id, &out.value)) {
    // Only envelopes are ever proposed; anything else is a bug or an attack
    // that got past a majority. Refuse to go on.
    Halt(Status::Corruption("paxos: chosen value at instance " + std::to_string(instance) +
                            " is not a value envelope"));
    return;
  }
  out.noop = out.value.empty();
  // A system value: applied to the core first (M1: a change governs from
  // instance + alpha, which the proposer may reach as soon as it drives on
  // below), and a noop to the state machines.
  SystemValueKind kind;
  std::string payload;
  const bool system = (out.proposal_id & kSystemValueBit) != 0;
  Status change;
  if (system) {
    const bool known = DecodeSystemValue(out.proposal_id, out.value, &kind, &payload);
    change = reconfig_->Apply(instance, known, payload);
    out.noop = true;
    out.value.clear();
  }
  const size_t slot = ctx_->out()->chosen.size();
  const uint64_t proposer = out.proposer, proposal_id = out.proposal_id;
  ctx_->out()->chosen.push_back(std::move(out));
  // The master first: it may want another noop, which the proposer places
  // when it drives on below.
  uint64_t forwarded_token = 0;
  const bool forwarded =
      master_->OnApplied(instance, value, proposer, proposal_id, &forwarded_token);
  uint64_t token = 0;
  bool own_proposer = false;
  const bool own = proposer_->OnApplied(instance, value, &token, &own_proposer);
  if (own) {
    ctx_->out()->chosen[slot].ours = true;
    ctx_->out()->chosen[slot].token = token;
  } else if (forwarded) {
    // Proposed by the master on our behalf: reported like our own.
    ctx_->out()->chosen[slot].ours = true;
    ctx_->out()->chosen[slot].token = forwarded_token;
    token = forwarded_token;
  }
  if (system) reconfig_->Track(instance, change, own || forwarded, token, own_proposer);
}

uint64_t Learner::RandomPeer() {
  const uint64_t self = ctx_->options().self;
  // Self included, drawn until another comes up: the same draws as with a
  // fixed member list, so runs without changes behave as they always did.
  std::vector<uint64_t> ids;
  const Membership& m = ctx_->membership();
  if (m.known()) {
    for (const Member& member : m.Latest().members) ids.push_back(member.id);
  } else {
    for (uint64_t id : ctx_->options().join_peers) {
      if (id != 0) ids.push_back(id);
    }
  }
  bool other = false;
  for (uint64_t id : ids) other = other || id != self;
  if (!other) return 0;
  uint64_t peer = self;
  while (peer == self) peer = ids[ctx_->rng()->Uniform(ids.size())];
  return peer;
}

uint64_t Learner::RandomVoter() {
  const uint64_t self = ctx_->options().self;
  std::vector<uint64_t> ids;
  for (const Member& m : ctx_->membership().Latest().members) {
    if (m.voter && m.id != self) ids.push_back(m.id);
  }
  return ids.empty() ? 0 : ids[ctx_->rng()->Uniform(ids.size())];
}

Status Learner::Applied(uint64_t instance, std::string* value, uint32_t* checksum) {
  if (instance >= chosen_end_) return Status::NotFound("instance not applied");
  auto it = cache_.find(instance);
  if (it != cache_.end()) {
    *value = it->second.first;
    *checksum = it->second.second;
    return Status::OK();
  }
  std::string bytes;
  Status s = ctx_->log()->Get(instance, &bytes);
  if (!s.ok()) return s;
  InstanceRecord rec;
  if (!rec.ParseFromString(bytes) || !rec.chosen()) {
    return Status::Corruption("paxos log: bad chosen record at instance " +
                              std::to_string(instance));
  }
  *value = rec.value();
  *checksum = rec.checksum();
  return Status::OK();
}

Status Learner::ChosenEnvelope(uint64_t instance, std::string* value) {
  auto it = pending_.find(instance);
  if (it != pending_.end()) {
    *value = it->second;
    return Status::OK();
  }
  uint32_t checksum = 0;
  return Applied(instance, value, &checksum);
}

void Learner::Ask(uint64_t peer, MsgType type) {
  PaxosMsg msg;
  msg.set_type(type);
  msg.set_instance(chosen_end_);
  ctx_->Send(peer, &msg);
  ask_outstanding_ = true;
  ctx_->stats()->catchup_requests++;
}

void Learner::NotePeer(uint64_t peer, uint64_t peer_chosen_end, bool urgent) {
  if (peer_chosen_end > peer_best_end_) {
    peer_best_end_ = peer_chosen_end;
    peer_best_ = peer;
  }
  if (halted_ || ask_outstanding_ || awaiting_checkpoint_ || peer_chosen_end <= chosen_end_) {
    return;
  }
  if (urgent || peer_chosen_end - chosen_end_ > ctx_->options().max_inflight) {
    Ask(peer, ASK_LEARN);
  }
}

uint64_t Learner::OnAskLearn(const PaxosMsg& msg) {
  const CoreOptions& o = ctx_->options();
  const uint64_t first = msg.instance();
  if (first < trimmer_->log_start()) {
    AnswerUseCheckpoint(msg.from(), first);
    return 0;
  }
  if (first >= chosen_end_) return 0;
  if (cache_.count(first) == 0) {
    // Older than the cache: the values are in the log only. Reading it here
    // would stall this step, hence the loop and its round's fsync, on the
    // disk; plan the read instead (catchup.h), for the runtime to do off
    // the loop once this round is persisted.
    CatchupRead read;
    read.peer = msg.from();
    read.first = first;
    read.chosen_end = chosen_end_;
    read.max_count = o.catchup_batch_count;
    read.max_bytes = o.catchup_batch_bytes;
    read.cluster_id = o.cluster_id;
    read.group = o.group;
    read.from = o.self;
    ctx_->out()->catchup_reads.push_back(read);
    ctx_->stats()->catchup_reads++;
    // The planned end (the count bound; the byte bound or a trimmed log may
    // end the batch sooner): see Core::Dispatch for why it is used as if sent.
    return first + std::min<uint64_t>(chosen_end_ - first, o.catchup_batch_count);
  }
  // The cache holds the newest values, contiguous up to chosen_end_ (they are
  // cached in the order they are applied): serve from memory, as before.
  PaxosMsg reply;
  reply.set_type(LEARN_VALUES);
  reply.set_instance(first);
  size_t bytes = 0;
  for (uint64_t i = first; i < chosen_end_; ++i) {
    if (static_cast<size_t>(reply.learned_size()) >= o.catchup_batch_count) break;
    if (reply.learned_size() > 0 && bytes >= o.catchup_batch_bytes) break;
    auto it = cache_.find(i);
    if (it == cache_.end()) break;
    bytes += it->second.first.size();
    LearnedEntry* e = reply.add_learned();
    e->set_instance(i);
    e->set_value(it->second.first);
    e->set_checksum(it->second.second);
  }
  const uint64_t end = first + static_cast<uint64_t>(reply.learned_size());
  ctx_->Send(msg.from(), &reply);
  return end;
}

void Learner::AnswerUseCheckpoint(uint64_t peer, uint64_t first) {
  PaxosMsg reply;
  reply.set_type(LEARN_VALUES);
  reply.set_instance(first);
  reply.set_log_start(trimmer_->log_start());
  ctx_->Send(peer, &reply);
  ctx_->stats()->checkpoint_replies++;
}

void Learner::OnLearnValues(const PaxosMsg& msg) {
  if (halted_) return;
  const uint64_t before = chosen_end_;
  for (const LearnedEntry& e : msg.learned()) {
    if (e.instance() < chosen_end_) continue;
    if (e.instance() > chosen_end_) break;
    const std::string& value = e.value();
    const uint32_t expect = crc32c::Extend(last_checksum_, value.data(), value.size());
    if (expect != e.checksum()) {
      Halt(Status::Corruption("paxos: chained checksum mismatch at instance " +
                              std::to_string(e.instance()) + " from node " +
                              std::to_string(msg.from()) + ": the replicas diverged"));
      return;
    }
    auto it = pending_.find(e.instance());
    if (it != pending_.end()) {
      if (it->second != value) {
        Halt(Status::Corruption("paxos: conflicting chosen values at instance " +
                                std::to_string(e.instance())));
        return;
      }
      pending_.erase(it);
    }
    ApplyOne(e.instance(), value);
    if (halted_) return;
  }
  Advance();
  if (halted_) return;
  if (chosen_end_ > before) awaiting_checkpoint_ = false;
  if (msg.log_start() > chosen_end_) {
    // "Use a checkpoint": what we need is trimmed from the peer's log.
    ask_outstanding_ = false;
    awaiting_checkpoint_ = true;
    if (ctx_->out()->checkpoint_needed.empty()) {
      ctx_->out()->checkpoint_needed.push_back({msg.from(), msg.log_start()});
      ctx_->stats()->checkpoints_needed++;
    }
    return;
  }
  if (chosen_end_ > before && msg.chosen_end() > chosen_end_) {
    Ask(msg.from(), CONFIRM_LEARN);
  } else {
    ask_outstanding_ = false;
  }
}

void Learner::OnTick() {
  Start();
  if (halted_) return;
  const bool progress = chosen_end_ != last_tick_end_;
  last_tick_end_ = chosen_end_;
  ask_outstanding_ = false;
  if (progress) {
    stuck_ticks_ = 0;
    awaiting_checkpoint_ = false;
    return;
  }
  if (peer_best_end_ > chosen_end_) {
    Ask(peer_best_, ASK_LEARN);
  } else {
    // Nobody told us they are ahead; probe a random peer (a node that
    // restarted into an idle cluster learns this way).
    const uint64_t peer = RandomPeer();
    if (peer != 0) Ask(peer, ASK_LEARN);
  }
  peer_best_end_ = 0;
  // Work this node cannot get decided itself (a removed node's slot, a
  // joiner's proposal below the first configuration it knows) waits for a
  // voter to propose there, which in a quiet group never happens: ask one
  // to fill up to it (Proposer::FillWanted / OnFill), a voter per tick.
  uint64_t fill = 0;
  if (proposer_->FillWanted(&fill)) {
    const uint64_t voter = RandomVoter();
    if (voter != 0) {
      PaxosMsg msg;
      msg.set_type(FILL);
      msg.set_instance(fill);
      ctx_->Send(voter, &msg);
      ctx_->stats()->fills_sent++;
    }
  }
  // A vote of our acceptor's that stays undecided: whoever proposed it is
  // gone (crashed, removed) or so is every record of its choice (a chosen
  // record is written unsynced), and only a phase 1 over it decides it, which
  // a quiet group never runs.
  const bool vote = acceptor_->HoldsVote() && !ctx_->Mutated(TestMutation::kNoVoteRecovery);
  if ((!pending_.empty() || vote) && ++stuck_ticks_ >= 2) {
    // Values beyond a gap are chosen but the gap is not, or a vote is not
    // decided: have the proposer run phase 1, which fills the gap (with an
    // accepted value or a noop) and proposes the vote's value again.
    stuck_ticks_ = 0;
    if (ctx_->CanPrepareFrom(chosen_end_)) {
      proposer_->Unstick();
    } else if (!pending_.empty()) {
      // This node cannot run that phase 1 (it votes in no configuration
      // still to govern, or joined and does not know the one governing the
      // gap), and the voters may not know the values beyond it: tell them
      // the lowest, so that their learners get stuck here too and one of
      // them fills the gap.
      const auto first = pending_.begin();
      PaxosMsg msg;
      msg.set_type(CHOSEN);
      msg.set_instance(first->first);
      msg.set_value(first->second);
      ctx_->Send(kBroadcast, &msg);
    }
  }
}

}  // namespace paxos
}  // namespace chorus
