// Core recovery (Core::Open): the promise, the window, the log's start and
// the records of a LogStorage, checked as core.h's Open contract says.
#include <algorithm>
#include <string>

#include "paxos/acceptor.h"
#include "paxos/core.h"
#include "paxos/learner.h"
#include "paxos/proposer.h"
#include "paxos/reconfig.h"
#include "paxos/trim.h"
#include "utils/coding.h"

namespace chorus {
namespace paxos {

Status Core::Recover() {
  LogStorage* log = ctx_.log();
  std::string bytes;
  Status s = log->GetVariable(kPromiseVariable, &bytes);
  if (s.ok()) {
    BallotPb pb;
    if (!pb.ParseFromString(bytes)) {
      return Status::Corruption("paxos log: the promise variable does not parse");
    }
    if (pb.number() > kMaxBallotNumber) {
      return Status::Corruption("paxos log: the promise " + Ballot::FromPb(pb).ToString() +
                                " is above the ballot ceiling");
    }
    acceptor_->RestorePromise(Ballot::FromPb(pb));
  } else if (!s.IsNotFound()) {
    return Status::Corruption("paxos log: reading the promise: " + s.ToString());
  }
  // The membership history before the records (their changes replay on it).
  s = reconfig_->Recover();
  if (!s.ok()) return s;
  // A trimmed log: the chosen chain starts at the stored log start.
  s = trimmer_->Recover();
  if (!s.ok()) return s;
  uint64_t min = 0, max = 0;
  s = log->GetMinInstanceId(&min);
  const bool log_empty = s.IsNotFound();
  if (!log_empty && !s.ok()) return s;
  s = RecoverWindow(log_empty);
  if (!s.ok() || log_empty) {
    proposer_->NoteBallot(acceptor_->promised());
    return s;
  }
  s = log->GetMaxInstanceId(&max);
  if (!s.ok()) return s;
  if (min > max || min >= kMaxInstanceId) {
    return Status::Corruption("paxos log: a record at instance " + std::to_string(min) +
                              ", an id this core never uses");
  }
  // Records exist only below chosen_end + W (W: the largest window this log
  // was written under): the acceptor never accepts and the learner never
  // learns beyond it, and the chosen prefix is durable no later than any
  // record above it. So the scan ends there (never at max, which a hostile
  // or broken log may put at 2^64 - 1), and a record beyond it is Corruption
  // rather than hours of probing empty ids.
  const uint64_t window = recovery_window_;
  uint64_t highest = 0;
  for (uint64_t i = min;; ++i) {
    const uint64_t limit = std::max(learner_->chosen_end(), min) + window;
    if (i >= limit) {
      return Status::Corruption(
          "paxos log: a record at instance " + std::to_string(max) +
          " lies at or beyond chosen_end " + std::to_string(learner_->chosen_end()) +
          " + window " + std::to_string(window) +
          " (the largest this log was written under), where the core never writes");
    }
    s = log->Get(i, &bytes);
    if (s.IsNotFound()) {
      if (i == max) break;
      continue;
    }
    if (!s.ok()) {
      return Status::Corruption("paxos log: record of instance " + std::to_string(i) + ": " +
                                s.ToString());
    }
    InstanceRecord rec;
    if (!rec.ParseFromString(bytes)) {
      return Status::Corruption("paxos log: record of instance " + std::to_string(i) +
                                " does not parse");
    }
    const Ballot b = Ballot::FromPb(rec.accepted_ballot());
    if (!rec.chosen() && b.number > kMaxBallotNumber) {
      // (A chosen record's ballot is history; an accepted one still votes.)
      return Status::Corruption("paxos log: record of instance " + std::to_string(i) +
                                " holds ballot " + b.ToString() + " above the ceiling");
    }
    proposer_->NoteBallot(b);
    if (rec.chosen()) {
      s = learner_->RestoreChosen(i, rec.value(), rec.checksum());
      if (!s.ok()) return s;
      reconfig_->Replay(i, rec.value());
    } else if (!b.IsNull()) {
      if (i < learner_->chosen_end()) {
        return Status::Corruption("paxos log: instance " + std::to_string(i) +
                                  " is below the chosen prefix but not chosen");
      }
      if (!ctx_.Mutated(TestMutation::kAcceptedNotRecovered)) {
        acceptor_->RestoreAccepted(i, b, rec.value());
      }
    }
    highest = i;
    if (i == max) break;
  }
  proposer_->NoteBallot(acceptor_->promised());
  // Lower the recorded window to ours once no record lies beyond ours.
  const uint64_t own = ctx_.options().window;
  if (recovery_window_ > own && highest < learner_->chosen_end() + own) {
    window_to_persist_ = std::to_string(own);
  }
  return Status::OK();
}

Status Core::RecoverWindow(bool log_empty) {
  const uint64_t own = ctx_.options().window;
  std::string bytes;
  Status s = ctx_.log()->GetVariable(kWindowVariable, &bytes);
  uint64_t recorded = 0;
  if (s.ok()) {
    if (!ParsePositiveDecimal(bytes, kMaxWindow, &recorded)) {
      return Status::Corruption("paxos log: the window variable does not parse");
    }
  } else if (!s.IsNotFound()) {
    return Status::Corruption("paxos log: reading the window: " + s.ToString());
  } else if (!log_empty) {
    recorded = kMaxWindow;  // a log that predates the variable: any window
  }
  recovery_window_ = std::max(own, recorded);
  // Raised: record it. Lowered: record it once no vote lies beyond it (an
  // empty log has none; Recover checks the others).
  if (own > recorded || (log_empty && own < recorded)) window_to_persist_ = std::to_string(own);
  return Status::OK();
}

}  // namespace paxos
}  // namespace chorus
