#include "paxos/master.h"

#include "paxos/acceptor.h"
#include "paxos/learner.h"
#include "paxos/proposer.h"
#include "paxos/value.h"

namespace chorus {
namespace paxos {

namespace {
// How many FORWARD identities a master remembers to drop duplicates.
constexpr size_t kSeenForwards = 1 << 16;
}  // namespace

// ---- time and steps ----

uint64_t Master::DriftedLease() const {
  const CoreOptions& o = ctx_->options();
  if (ctx_->Mutated(TestMutation::kLeaseIgnoresDrift)) return o.lease_ms;
  // lease_ms <= 3.6e6 and ppm < 5e5 (options.cc): no overflow. Rounded
  // down, which only shortens the lease.
  return o.lease_ms * (1000000 - o.max_clock_drift_ppm) / (1000000 + o.max_clock_drift_ppm);
}

bool Master::HoldActive() const {
  return ctx_->now() < hold_until_ && !ctx_->Mutated(TestMutation::kNoStartupHold);
}

bool Master::GrantLive() const { return grant_holder_ != 0 && ctx_->now() < grant_until_; }

void Master::Start() {
  if (!enabled()) return;
  // The startup hold: the grants given before a crash are forgotten, and one
  // may live on for up to lease_ms (our clock) from the moment we crashed,
  // which is before now. Refusing every PREPARE until now + lease_ms
  // outlasts it.
  hold_until_ = ctx_->now() + ctx_->options().lease_ms;
  // Read-index requests are matched to replies by sequence number: a
  // random start keeps a reply to the previous incarnation of this node
  // from answering a request of this one (instance ids stay < 2^62).
  read_seq_ = ctx_->rng()->Next() >> 3;
  ArmElection();
}

void Master::ArmElection() {
  const CoreOptions& o = ctx_->options();
  ctx_->StartTimer(TimerKind::kElection,
                   o.election_timeout_ms + ctx_->rng()->Uniform(o.election_jitter_ms + 1));
}

void Master::BeginStep() {
  if (!enabled()) return;
  const uint64_t now = ctx_->now();
  if (is_master_) {
    // A master whose lease ran out without renewal (or that never got one
    // within lease_ms) is no master: it cannot reach a majority.
    const uint64_t first = since_ + ctx_->options().lease_ms;
    if (now >= lease_until_ && (now >= first || released_)) StepDown();
  }
  if (known_node_ != 0 && now >= known_until_) known_node_ = 0;
  // Read-index requests without a reply in lease_ms, or whose master is
  // not the live one any more, end Busy (the caller retries).
  for (auto it = reads_.begin(); it != reads_.end();) {
    const PendingRead& r = it->second;
    if (now >= r.sent_at + ctx_->options().lease_ms || !Live(now) || known_node_ != r.master) {
      Barrier(r.token, 0, Status::Busy("read index: no answer from master " +
                                       std::to_string(r.master) + " in time"));
      it = reads_.erase(it);
    } else {
      ++it;
    }
  }
  // A follower too far behind to reach the read index soon: Busy too.
  const uint64_t patience = ctx_->options().election_timeout_ms;
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (now >= it->sent_at + patience) {
      Barrier(it->token, 0, Status::Busy("read index: this node did not catch up in time"));
      it = waits_.erase(it);
    } else {
      ++it;
    }
  }
}

void Master::EndStep() {
  if (!enabled()) return;
  const uint64_t end = learner_->chosen_end();
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (end >= it->index) {
      Barrier(it->token, it->index, Status::OK());
      it = waits_.erase(it);
    } else {
      ++it;
    }
  }
  const MasterView v = View();
  if (v.node != last_view_.node || v.epoch != last_view_.epoch ||
      v.self_ready != last_view_.self_ready) {
    ctx_->out()->master_changed = true;
    ctx_->out()->master = v;
  }
  last_view_ = v;
}

void Master::Barrier(uint64_t token, uint64_t instance, const Status& s) {
  ctx_->out()->barriers.push_back({token, instance, s});
}

// ---- acceptor side ----

void Master::Grant(uint64_t holder, const Ballot& b) {
  grant_holder_ = holder;
  grant_ballot_ = b;
  grant_until_ = ctx_->now() + ctx_->options().lease_ms;
}

bool Master::RefusesOwnPrepare() const {
  if (!enabled()) return false;
  return HoldActive() || (GrantLive() && grant_holder_ != ctx_->options().self &&
                          !ctx_->Mutated(TestMutation::kPrepareIgnoresGrant));
}

bool Master::RefusePrepare(const PaxosMsg& msg) {
  if (!enabled()) return false;
  const bool hold = HoldActive();
  // The holder itself may prepare (a master whose ballot reached its limit
  // runs phase 1 again): its own lease is what the grant protects.
  const bool grant = GrantLive() && msg.from() != grant_holder_ &&
                     !ctx_->Mutated(TestMutation::kPrepareIgnoresGrant);
  if (!hold && !grant) return false;
  // Refused WITHOUT touching the promise: raising it would let a lagging
  // node push the master's ballot out (and cost a write) for nothing.
  PaxosMsg reply;
  reply.set_type(PREPARE_REJECT);
  reply.set_instance(msg.instance());
  *reply.mutable_ballot() = msg.ballot();
  acceptor_->promised().ToPb(reply.mutable_promised());
  // A hold refusal of the grant's own holder does not name it (sim F2 read
  // "lease_holder = the sender" as a lease refusal): only another node's
  // live grant is named; the hold says kUnknownHolder.
  reply.set_lease_holder(grant ? grant_holder_ : kUnknownHolder);
  ctx_->stats()->prepares_refused++;
  ctx_->Send(msg.from(), &reply);
  return true;
}

void Master::OnAccepted(const PaxosMsg& msg) {
  if (!enabled()) return;
  // Accepting ballot b means promised == b now: the same condition as a
  // heartbeat's grant. A rival whose ACCEPT is accepted has a majority of
  // promises, which (master.h) it got only after the leases of any earlier
  // grant majority ended.
  Grant(msg.from(), Ballot::FromPb(msg.ballot()));
}

void Master::OnHeartbeat(const PaxosMsg& msg) {
  if (!enabled()) return;
  const Ballot b = Ballot::FromPb(msg.ballot());
  const uint64_t self = ctx_->options().self;
  if (msg.from() != self && !ctx_->MayPromise(learner_->chosen_end())) {
    // Not a voter here (a follower, a removed node, a lost disk): no grant
    // and no ack (an ack counts by id). It still learns the master, to
    // forward proposals and ask read indexes.
    if (!is_master_ && b >= known_ballot_) {
      known_node_ = msg.from();
      known_ballot_ = b;
      known_chosen_end_ = msg.chosen_end();
      known_until_ = ctx_->now() + ctx_->options().election_timeout_ms;
      ArmElection();
      proposer_->Kick();
    }
    return;
  }
  Ballot promised = acceptor_->promised();
  bool granted = b >= promised;
  if (msg.from() != self && is_master_) {
    if (ballot_ < b) {
      StepDown();  // a master of a higher ballot exists
    } else {
      // A stale master: refuse it, and tell it our higher ballot.
      granted = false;
      if (promised < ballot_) promised = ballot_;
    }
  }
  if (granted) {
    Grant(msg.from(), b);
    if (msg.from() != self) {
      known_node_ = msg.from();
      known_ballot_ = b;
      known_chosen_end_ = msg.chosen_end();
      known_until_ = ctx_->now() + ctx_->options().election_timeout_ms;
      ArmElection();
      // Proposals queued here before the master was known go to it now.
      proposer_->Kick();
      // A slot of ours under a ballot that lost (sim F3): nobody would
      // decide its instance in a quiet cluster (we defer, so never run phase
      // 1; the master has nothing to propose there). Ask the master to fill
      // up to it, once per heartbeat. Once decided, our OnApplied re-queues
      // the proposal if another value won, and it is forwarded then.
      uint64_t stranded = 0;
      if (!is_master_ && proposer_->StrandedSlot(&stranded) &&
          stranded >= learner_->chosen_end()) {
        ctx_->stats()->fills_sent++;
        PaxosMsg fill;
        fill.set_type(FILL);
        fill.set_instance(stranded);
        b.ToPb(fill.mutable_ballot());
        ctx_->Send(msg.from(), &fill);
      }
    }
  }
  PaxosMsg ack;
  ack.set_type(HEARTBEAT_ACK);
  ack.set_instance(msg.instance());
  *ack.mutable_ballot() = msg.ballot();
  promised.ToPb(ack.mutable_promised());
  ctx_->Send(msg.from(), &ack);
}

void Master::OnRelease(const PaxosMsg& msg) {
  if (!enabled()) return;
  const uint64_t target = msg.instance();
  const uint64_t self = ctx_->options().self;
  // Only the grant the releasing master holds, under the ballot it releases
  // (a stale, duplicated RELEASE cannot move a newer grant).
  if (grant_holder_ == msg.from() && grant_ballot_ == Ballot::FromPb(msg.ballot()) &&
      GrantLive()) {
    if (target == 0) {
      grant_holder_ = 0;
    } else {
      Grant(target, grant_ballot_);
    }
  }
  if (known_node_ == msg.from()) known_node_ = 0;
  if (target == self && msg.from() != self && !is_master_ && ctx_->SelfEligibleInLatest()) {
    ctx_->stats()->elections_started++;
    proposer_->Campaign();
  }
}

// ---- master side ----

void Master::OnPrepared(const Ballot& b) {
  if (!enabled()) return;
  ballot_ = b;
  if (!is_master_) {
    is_master_ = true;
    ready_ = false;
    released_ = false;
    has_noop_ = false;
    since_ = ctx_->now();
    first_ballot_ = b;
    lease_until_ = 0;
    rounds_.clear();
    known_node_ = 0;
    FailReads("this node became master");
  }
  if (!ready_) proposer_->WantNoop();
  // A change whose origin lost its master (or that this node learned as a
  // follower) gets in force under the new one.
  proposer_->FillTo(ctx_->membership().Latest().active_from);
  SendHeartbeat();
}

bool Master::StepDownIfRemoved() {
  if (!enabled() || !is_master_ || ctx_->SelfCanVote()) return false;
  // Our removal is in force: no configuration still to govern has us as a
  // voter. Give the lease up to nobody (the others elect a master of the
  // new configuration) and propose nothing more.
  Status s = Transfer(0);
  return s.ok();
}

void Master::NoteNoop(uint64_t instance, const std::string& envelope, bool complete) {
  has_noop_ = true;
  noop_complete_ = complete;
  noop_instance_ = instance;
  noop_envelope_ = envelope;
}

void Master::Skip(uint64_t instance) {
  if (has_noop_ && noop_instance_ < instance) {
    has_noop_ = false;
    if (WantsReady()) proposer_->WantNoop();
  }
}

void Master::SendHeartbeat() {
  const CoreOptions& o = ctx_->options();
  const uint64_t seq = ++heartbeat_seq_;
  rounds_[seq].sent_at = ctx_->now();
  // Rounds older than a lease can only give a lease already over.
  const size_t keep = static_cast<size_t>(o.lease_ms / o.heartbeat_interval_ms) + 2;
  while (rounds_.size() > keep) rounds_.erase(rounds_.begin());
  ctx_->stats()->heartbeats_sent++;
  ctx_->StartTimer(TimerKind::kHeartbeat, o.heartbeat_interval_ms);
  PaxosMsg msg;
  msg.set_type(HEARTBEAT);
  msg.set_instance(seq);
  ballot_.ToPb(msg.mutable_ballot());
  ctx_->Send(kBroadcast, &msg);  // our own acceptor grants us in this step
}

void Master::OnHeartbeatAck(const PaxosMsg& msg) {
  if (!enabled() || !is_master_ || released_) return;
  if (Ballot::FromPb(msg.ballot()) != ballot_) return;  // an older ballot's round
  const Ballot promised = Ballot::FromPb(msg.promised());
  if (promised > ballot_) {
    // Refused: that acceptor promised a higher ballot. Our own newer one (a
    // phase 1 again in progress) is no news. Another node's may be a stale
    // promise (a proposer that lost) or a newer master: run phase 1 again
    // above it. As the holder of our grants we may; a newer master's grants
    // refuse us, and its heartbeats (or our lease's end) depose us.
    if (promised.node_id != ctx_->options().self) {
      proposer_->NoteBallot(promised);
      proposer_->Campaign();
    }
    return;
  }
  auto it = rounds_.find(msg.instance());
  if (it == rounds_.end()) return;
  it->second.acks.emplace(msg.from(), VoterOf(msg));
  // M3: a majority of every configuration that may govern an instance a
  // rival could use before this lease ends (from chosen_end on, alpha far).
  const uint64_t end = learner_->chosen_end();
  if (!ctx_->QuorumOver(end, end + ctx_->activation_distance(), it->second.acks)) return;
  // Every grant of this round was given after sent_at (our clock) and lasts
  // lease_ms on a clock at most 1 + rho fast; ours is at most 1 + rho slow.
  const uint64_t until = it->second.sent_at + DriftedLease();
  if (until > lease_until_) lease_until_ = until;
  rounds_.erase(rounds_.begin(), std::next(it));
}

void Master::OnHigherBallot(const Ballot& b) {
  if (!enabled() || !is_master_) return;
  if (b <= ballot_ || b.node_id == ctx_->options().self) return;
  if (!released_ && ctx_->now() < lease_until_) {
    // Node F1: inside our lease a higher ballot of another node is a stale
    // promise (a node that campaigned unheard, e.g. right after its
    // restart, promised its own ballot), never a rival with a majority:
    // every acceptor of the majority whose acks gave us the lease granted
    // us with promised <= our ballot, and refuses every other node's
    // PREPARE until its grant ends, after our lease (master.h). So no other
    // ballot can have a majority of promises, nor get a value chosen,
    // before lease_until_. Nothing about the lease or readiness depends on
    // our ballot number: we keep both (no flapping IsMaster / lease gap),
    // and run phase 1 again above the promise (as the holder of our grants
    // we may), so that acceptor takes our ACCEPTs and heartbeats again.
    // The epoch moves up with the new ballot; the master does not change.
    // Out of our lease (or released) a real rival may exist: step down.
    proposer_->NoteBallot(b);
    proposer_->Campaign();
    return;
  }
  StepDown();
}

void Master::StepDown() {
  if (!is_master_) return;
  is_master_ = false;
  ready_ = false;
  released_ = false;
  lease_until_ = 0;
  has_noop_ = false;
  rounds_.clear();
  ctx_->CancelTimer(TimerKind::kHeartbeat);
}

void Master::OnTimeout(TimerKind kind) {
  if (!enabled()) return;
  if (kind == TimerKind::kHeartbeat) {
    if (is_master_ && !released_) SendHeartbeat();
    return;
  }
  if (kind != TimerKind::kElection) return;
  ArmElection();
  const uint64_t now = ctx_->now();
  if (is_master_ || now < no_campaign_until_ || Live(now)) return;
  // Only an eligible voter of the newest configuration runs: a follower, a
  // removed node or one whose entry names another data dir (M5) must not.
  if (!ctx_->SelfEligibleInLatest()) return;
  // Someone was master lately (our own acceptor still grants it), or our
  // own acceptor is in its startup hold: our PREPARE would be refused.
  if ((GrantLive() && grant_holder_ != ctx_->options().self) || HoldActive()) return;
  ctx_->stats()->elections_started++;
  proposer_->Campaign();
}

void Master::OnForward(const PaxosMsg& msg) {
  if (!enabled()) return;
  uint64_t proposer = 0, id = 0;
  std::string data;
  // The FORWARD names the mastership it was sent to: one of an earlier
  // mastership (a duplicate delayed across our restart, whose seen set is
  // gone) is dropped, so a value is never proposed twice.
  const Ballot to = Ballot::FromPb(msg.ballot());
  if (!is_master_ || released_ || to < first_ballot_ || to > ballot_ ||
      !DecodeValue(msg.value(), &proposer, &id, &data) || data.empty() ||
      proposer != msg.from()) {
    ctx_->stats()->forwards_dropped++;
    return;
  }
  // The network may deliver a FORWARD twice: proposing it twice would get
  // it chosen (and executed) twice.
  const auto key = std::make_pair(proposer, id);
  if (!seen_forwards_.insert(key).second) {
    ctx_->stats()->forwards_dropped++;
    return;
  }
  seen_order_.push_back(key);
  while (seen_order_.size() > kSeenForwards) {
    seen_forwards_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
  ctx_->stats()->forwards_proposed++;
  proposer_->ProposeForwarded(msg.value());
}

void Master::OnFill(const PaxosMsg& msg) {
  if (!enabled()) return;
  // Only for the mastership the follower heard of (an older ballot's FILL
  // is stale; harmless, but there is no need for it), or from a node that
  // follows no master (null ballot: a learn tick's FILL, Learner::OnTick,
  // e.g. a removed node's, which hears no heartbeat).
  const Ballot b = Ballot::FromPb(msg.ballot());
  if (!IsMaster() || (b != ballot_ && !b.IsNull()) || msg.from() == ctx_->options().self) {
    return;
  }
  // Safe at any free instance: the proposer places fillers only at or above
  // its prepared ballot's next instance (no vote reported there by its
  // majority) and below Bound(); instances with a slot (adopted values
  // included) keep it. Not the readiness noop (NoteNoop): a filler never
  // makes this master ready.
  proposer_->Fill(msg.instance());
}

bool Master::OnApplied(uint64_t instance, const std::string& envelope, uint64_t proposer,
                       uint64_t id, uint64_t* token) {
  if (!enabled()) return false;
  if (is_master_ && !ready_ && has_noop_ && instance == noop_instance_) {
    has_noop_ = false;
    if (envelope == noop_envelope_ && noop_complete_) {
      // Chosen in our ballot (only it proposed this envelope), above every
      // value its phase 1 reported: every value chosen before our phase 1
      // is applied now.
      ready_ = true;
    } else {
      // Another value won there, or a truncated phase 1 may hide chosen
      // values above the noop: try again (higher up).
      proposer_->WantNoop();
    }
  }
  if (proposer != ctx_->options().self) return false;
  auto it = forwarded_.find(id);
  if (it == forwarded_.end()) return false;
  *token = it->second;
  forwarded_.erase(it);
  // A membership change ends once in force (reconfig.h), not here.
  if ((id & kSystemValueBit) == 0) {
    ctx_->out()->finished.push_back({*token, instance, Status::OK()});
  }
  return true;
}

}  // namespace paxos
}  // namespace chorus
