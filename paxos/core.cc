#include "paxos/core.h"

#include <algorithm>

#include "paxos/acceptor.h"
#include "utils/check.h"
#include "paxos/learner.h"
#include "paxos/master.h"
#include "paxos/proposer.h"
#include "paxos/reconfig.h"
#include "paxos/trim.h"
#include "paxos/value.h"

namespace chorus {
namespace paxos {

const char kWindowVariable[] = "paxos.window";

// ---- Core ----

namespace {

bool ValidBallot(const BallotPb& b) { return b.number() <= kMaxBallotNumber; }


// An envelope this core could have proposed: the header plus at most
// max_value_bytes of data (`check_size`: the size limit applies too).
bool ValidEnvelope(const std::string& v, const CoreOptions& o, bool check_size) {
  return v.size() >= kEnvelopeOverhead && (!check_size || v.size() <= o.MaxEnvelopeBytes());
}

// Checks what parsing cannot: ids and ballots in range, replicated values
// that are envelopes. Returns false (and why) for a malformed message.
bool WellFormed(const PaxosMsg& m, const CoreOptions& o, std::string* why) {
  if (m.instance() >= kMaxInstanceId || m.chosen_end() > kMaxInstanceId ||
      m.reported_end() > kMaxInstanceId || m.log_start() >= kMaxInstanceId) {
    *why = "an instance id at or above the ceiling";
    return false;
  }
  if (!ValidBallot(m.ballot()) || !ValidBallot(m.promised())) {
    *why = "a ballot number above the ceiling";
    return false;
  }
  if ((m.type() == ACCEPT || m.type() == CHOSEN) && !ValidEnvelope(m.value(), o, true)) {
    *why = "a value that is not an envelope of at most max_value_bytes";
    return false;
  }
  for (const AcceptedEntry& e : m.accepted()) {
    if (e.instance() >= kMaxInstanceId || !ValidBallot(e.ballot()) ||
        !ValidEnvelope(e.value(), o, true)) {
      *why = "a reported value with a bad instance, ballot or envelope";
      return false;
    }
  }
  if (m.type() == FORWARD && !ValidEnvelope(m.value(), o, true)) {
    *why = "a forwarded value that is not an envelope of at most max_value_bytes";
    return false;
  }
  // A RELEASE target or a lease holder this node does not count as a member
  // is not malformed: it may be a node added by a change this node has not
  // learned yet, or one named only by configurations it dropped at a trim.
  // Both are ids of "another node" (OnRelease acts only for the live
  // grant's holder and ballot; a forward to an unknown id is dropped).
  if (m.read_index() > kMaxInstanceId) {
    *why = "a read index above the ceiling";
    return false;
  }
  for (const LearnedEntry& e : m.learned()) {
    // No size limit here: a value chosen under a larger max_value_bytes
    // must still be learnable (the chained checksum vouches for it).
    if (e.instance() >= kMaxInstanceId || !ValidEnvelope(e.value(), o, false)) {
      *why = "a learned value with a bad instance or envelope";
      return false;
    }
  }
  return true;
}

}  // namespace

Core::Core(const CoreOptions& options, LogStorage* log)
    : ctx_(options, log),
      learner_(new Learner(&ctx_)),
      acceptor_(new Acceptor(&ctx_, learner_.get())),
      proposer_(new Proposer(&ctx_, learner_.get(), acceptor_.get())),
      master_(new Master(&ctx_, learner_.get(), acceptor_.get(), proposer_.get())),
      trimmer_(new LogTrimmer(&ctx_, learner_.get())),
      reconfig_(new Reconfig(&ctx_, learner_.get())) {
  learner_->SetRoles(acceptor_.get(), proposer_.get(), master_.get(), trimmer_.get(),
                     reconfig_.get());
  reconfig_->SetRoles(proposer_.get(), master_.get());
  trimmer_->SetReconfig(reconfig_.get());
  proposer_->SetMaster(master_.get());
  ctx_.set_chosen_end_source(learner_.get());
}

Core::~Core() = default;

Status Core::Open(const CoreOptions& options, LogStorage* log, std::unique_ptr<Core>* core) {
  Status s = options.Validate();
  if (!s.ok()) return s;
  if (log == nullptr) return Status::InvalidArgument("Core::Open: log is null");
  std::unique_ptr<Core> c(new Core(options, log));
  s = c->Recover();
  if (!s.ok()) return s;
  *core = std::move(c);
  return Status::OK();
}

void Core::Begin(Outputs* out) {
  ctx_.BeginStep(out);
  if (!learner_->halted()) master_->BeginStep();
}

void Core::Finish() {
  Drain();
  if (!learner_->halted()) {
    if (master_->StepDownIfRemoved()) Drain();
    reconfig_->EndStep();
    master_->EndStep();
  }
  ctx_.EndStep();
}

void Core::Drain() {
  PaxosMsg msg;
  while (!learner_->halted() && ctx_.PopLocal(&msg)) Dispatch(msg);
}

void Core::Start(Outputs* out) {
  Begin(out);
  // Recorded before anything is accepted under a larger window: this write
  // is the first of the round, so it is durable no later than those votes.
  if (!window_to_persist_.empty()) {
    ctx_.PersistVariable(kWindowVariable, std::move(window_to_persist_));
    window_to_persist_.clear();
  }
  reconfig_->Start();
  learner_->Start();
  master_->Start();
  Finish();
}

Status Core::Propose(uint64_t token, const std::string& value, Outputs* out) {
  Begin(out);
  Status s;
  if (learner_->halted()) {
    s = Status::Stopped("paxos group halted");
  } else if (value.empty()) {
    s = Status::InvalidArgument("Propose: empty value");
  } else if (value.size() > ctx_.options().max_value_bytes) {
    s = Status::TooLarge("Propose: value of " + std::to_string(value.size()) +
                         " bytes exceeds max_value_bytes");
  } else {
    s = Route(token, EncodeValue(ctx_.options().self, ctx_.NewProposalId(), value),
              /*system=*/false);
  }
  Finish();
  return s;
}

Status Core::Route(uint64_t token, const std::string& envelope, bool system) {
  uint64_t master = 0;
  if (master_->ShouldForward(&master)) {
    // Another node is a live master: it proposes (or NotMaster).
    return master_->Forward(token, envelope);
  }
  const MemberRole role = reconfig_->role();
  if (role != MemberRole::kVoter) {
    return Status::InvalidArgument("this node is not a voting member of group " +
                                   std::to_string(ctx_.options().group) + ": " +
                                   MemberRoleName(role));
  }
  proposer_->ProposeEnvelope(token, envelope, system);
  return Status::OK();
}

void Core::Cancel(uint64_t token, Outputs* out) {
  Begin(out);
  if (!master_->CancelForwarded(token) && !reconfig_->Cancel(token)) proposer_->Cancel(token);
  Finish();
}

Status Core::OnMessage(const std::string& bytes, Outputs* out, uint64_t sender) {
  Begin(out);
  Status s;
  PaxosMsg msg;
  const CoreOptions& o = ctx_.options();
  std::string why;
  if (learner_->halted()) {
    s = Status::Stopped("paxos group halted");
  } else if (!msg.ParseFromString(bytes) || msg.type() == MSG_UNKNOWN ||
             !MsgType_IsValid(msg.type())) {
    ctx_.stats()->garbage_messages++;
    s = Status::Corruption("paxos: a message that does not parse");
  } else if (!WellFormed(msg, o, &why)) {
    ctx_.stats()->garbage_messages++;
    s = Status::Corruption("paxos: a malformed " + MsgType_Name(msg.type()) + " from node " +
                           std::to_string(msg.from()) + " dropped: " + why);
  } else if (msg.cluster_id() != o.cluster_id || msg.group() != o.group ||
             msg.from() == o.self || msg.from() == 0) {
    ctx_.stats()->foreign_messages++;
    s = Status::InvalidArgument("paxos: message of cluster " + std::to_string(msg.cluster_id()) +
                                " group " + std::to_string(msg.group()) + " from node " +
                                std::to_string(msg.from()) + " dropped");
  } else if (sender != kSenderNotVerified && msg.from() != sender) {
    // A member must not speak for another (its votes would count twice).
    ctx_.stats()->sender_mismatches++;
    s = Status::InvalidArgument("paxos: message claiming to be from node " +
                                std::to_string(msg.from()) + " arrived from node " +
                                std::to_string(sender) + ": dropped");
  } else if (!reconfig_->Admit(msg)) {
    ctx_.stats()->foreign_messages++;
    // Not a member of the configurations this node uses now (it was told
    // with NOT_MEMBER): its votes and master messages must not count here.
    s = Status::InvalidArgument("paxos: a " + MsgType_Name(msg.type()) + " from node " +
                                std::to_string(msg.from()) +
                                ", not a member of group " + std::to_string(o.group) +
                                " here: dropped");
  } else {
    reconfig_->NotePeer(msg);
    Dispatch(msg);
  }
  Finish();
  return s;
}

void Core::OnTimeout(const TimerId& id, Outputs* out) {
  Begin(out);
  if (!learner_->halted() && ctx_.IsLiveTimer(id)) {
    ctx_.CancelTimer(id.kind);  // it fired: no longer live
    out->cancel_timers.clear();
    if (id.kind == TimerKind::kLearn) {
      learner_->OnTick();
    } else if (id.kind == TimerKind::kHeartbeat || id.kind == TimerKind::kElection) {
      master_->OnTimeout(id.kind);
    } else {
      proposer_->OnTimeout(id.kind);
    }
  }
  Finish();
}

void Core::Dispatch(const PaxosMsg& msg) {
  const bool from_peer = msg.from() != ctx_.options().self;
  const bool reject = msg.type() == PREPARE_REJECT || msg.type() == ACCEPT_REJECT;
  if (from_peer) {
    learner_->NotePeer(msg.from(), msg.chosen_end(), reject);
    proposer_->NotePeer(msg.from(), msg.chosen_end());
  }
  switch (msg.type()) {
    case PREPARE:
      proposer_->NoteBallot(Ballot::FromPb(msg.ballot()));
      // M4: only an eligible voter of the configurations the promise may
      // count in answers; anyone else stays silent (its answer would not
      // count, or would count as another data dir's).
      // (A PREPARE from below chosen_end is refused whoever we are: the
      // refusal is no vote, and tells the proposer it is behind.)
      if (msg.instance() >= learner_->chosen_end() && !ctx_.MayPromise(msg.instance())) break;
      // Master election: a live lease grant or the startup hold refuses it
      // before the acceptor sees it (its promise stays as it is).
      if (master_->RefusePrepare(msg)) break;
      acceptor_->OnPrepare(msg);
      master_->OnHigherBallot(acceptor_->promised());
      break;
    case ACCEPT:
      proposer_->NoteBallot(Ballot::FromPb(msg.ballot()));
      // M4, per instance (a value known chosen is told to anyone).
      if (!learner_->IsChosen(msg.instance()) && !ctx_.MayAccept(msg.instance())) break;
      if (acceptor_->OnAccept(msg)) master_->OnAccepted(msg);
      master_->OnHigherBallot(acceptor_->promised());
      break;
    case HEARTBEAT:
    case HEARTBEAT_ACK:
    case FORWARD:
    case READ_INDEX:
    case READ_INDEX_REPLY:
    case RELEASE:
      if (!master_->enabled()) {
        ctx_.stats()->master_messages_ignored++;
        break;
      }
      if (msg.type() == HEARTBEAT) {
        proposer_->NoteBallot(Ballot::FromPb(msg.ballot()));
        master_->OnHeartbeat(msg);
      } else if (msg.type() == HEARTBEAT_ACK) {
        master_->OnHeartbeatAck(msg);
      } else if (msg.type() == FORWARD) {
        master_->OnForward(msg);
      } else if (msg.type() == READ_INDEX) {
        master_->OnReadIndex(msg);
      } else if (msg.type() == READ_INDEX_REPLY) {
        master_->OnReadIndexReply(msg);
      } else {
        master_->OnRelease(msg);
      }
      break;
    case FILL:
      // A node that cannot decide an instance it needs decided asks (see
      // Learner::OnTick, Master::OnHeartbeat). With master election only the
      // master fills; without it any voter that can run phase 1 here does.
      if (master_->enabled()) {
        master_->OnFill(msg);
      } else {
        proposer_->OnFill(msg.instance());
      }
      break;
    case PROMISE:
      proposer_->OnPromise(msg);
      break;
    case PREPARE_REJECT:
    case ACCEPT_REJECT:
      proposer_->OnReject(msg);
      break;
    case ACCEPTED:
      proposer_->OnAccepted(msg);
      break;
    case ACCEPT_BEHIND:
      proposer_->OnBehind(msg);
      break;
    case CHOSEN:
      learner_->OnChosen(msg);
      break;
    case ASK_LEARN:
    case CONFIRM_LEARN: {
      // The batch moves the asker up: an ACCEPT it refused as behind may
      // now fit its window, so it goes again, right after the batch.
      // A batch planned as a CatchupRead counts as served too, with its
      // planned end: the runtime sends it shortly, on the same ordered
      // connection, after this round's messages. An ACCEPT_BEHIND the peer
      // sent before it got the batch then goes again once, behind it
      // (Proposer::OnBehind); an ACCEPT re-sent now may overtake the batch
      // and be refused again, which costs one more round trip at worst (it
      // then waits for the peer's next, higher chosen_end). A planned end
      // beyond what the read delivers (byte bound, trimmed log, dropped
      // read) is no harm: NoteServed only steers re-sends, once per batch,
      // never what is chosen.
      const uint64_t end = learner_->OnAskLearn(msg);
      if (end != 0) proposer_->NoteServed(msg.from(), end);
      break;
    }
    case LEARN_VALUES:
      learner_->OnLearnValues(msg);
      break;
    case NOT_MEMBER:
      // A peer does not take us as a member: we may be behind a change that
      // removed us. Catch up now if it is ahead (the history then says).
      learner_->NotePeer(msg.from(), msg.chosen_end(), /*urgent=*/true);
      break;
    default:
      ctx_.stats()->garbage_messages++;
      break;
  }
}

void Core::SetNow(uint64_t now_ms) { ctx_.set_now(now_ms); }

void Core::ReadBarrier(uint64_t token, Outputs* out) {
  Begin(out);
  if (learner_->halted()) {
    out->barriers.push_back({token, 0, Status::Stopped("paxos group halted")});
  } else {
    master_->ReadBarrier(token);
  }
  Finish();
}

Status Core::TransferMaster(uint64_t target, Outputs* out) {
  Begin(out);
  Status s = learner_->halted() ? Status::Stopped("paxos group halted") : master_->Transfer(target);
  Finish();
  return s;
}

MasterView Core::master() const { return master_->View(); }
bool Core::HoldsLease() const { return !learner_->halted() && master_->HoldsLease(); }

uint64_t Core::chosen_end() const { return learner_->chosen_end(); }
uint64_t Core::log_start() const { return trimmer_->log_start(); }
uint32_t Core::chain_checksum() const { return learner_->last_checksum(); }

void Core::OnCheckpoint(uint64_t instance, uint64_t trim_limit, Outputs* out) {
  Begin(out);
  if (!learner_->halted()) trimmer_->OnCheckpoint(instance, trim_limit);
  Finish();
}

Status Core::InstallCheckpoint(uint64_t instance, uint32_t checksum, Outputs* out) {
  return InstallCheckpoint(instance, checksum, nullptr, out);
}

Status Core::InstallCheckpoint(uint64_t instance, uint32_t checksum,
                               const Membership* membership, Outputs* out) {
  Begin(out);
  Status s;
  if (learner_->halted()) {
    s = Status::Stopped("paxos group halted");
  } else if (instance >= kMaxInstanceId) {
    s = Status::InvalidArgument("InstallCheckpoint: instance " + std::to_string(instance) +
                                " at or above the ceiling");
  } else if (instance > learner_->chosen_end()) {
    // Order: the roles drop what the checkpoint covers before the learner
    // applies the pending values above it (which drives the proposer on).
    acceptor_->ForgetBelow(instance);
    proposer_->Skip(instance);
    master_->Skip(instance);
    trimmer_->Installed(instance, checksum);
    // The history before the pending values above `instance` are applied
    // (some may be changes based on it).
    reconfig_->Install(instance, membership);
    learner_->Install(instance, checksum);
    ctx_.stats()->checkpoints_installed++;
    proposer_->Kick();
  }
  Finish();
  return s;
}
bool Core::halted() const { return learner_->halted(); }
Ballot Core::promised() const { return acceptor_->promised(); }

Status Core::ReadChosen(uint64_t instance, ChosenValue* value) {
  std::string bytes;
  uint32_t checksum = 0;
  Status s = learner_->Applied(instance, &bytes, &checksum);
  if (!s.ok()) return s;
  *value = ChosenValue();
  value->instance = instance;
  if (!DecodeValue(bytes, &value->proposer, &value->proposal_id, &value->value)) {
    return Status::Corruption("paxos log: instance " + std::to_string(instance) +
                              " holds no value envelope");
  }
  value->noop = value->value.empty() || (value->proposal_id & kSystemValueBit) != 0;
  if (value->noop) value->value.clear();
  return Status::OK();
}

}  // namespace paxos
}  // namespace chorus
