#include "paxos/trim.h"

#include <algorithm>
#include <string>

#include "paxos/learner.h"
#include "paxos/reconfig.h"

namespace chorus {
namespace paxos {

const char kLogStartVariable[] = "paxos.log_start";

Status ReadLogStart(LogStorage* log, uint64_t* instance, uint32_t* checksum) {
  std::string bytes;
  Status s = log->GetVariable(kLogStartVariable, &bytes);
  if (s.IsNotFound()) return s;
  if (!s.ok()) return Status::Corruption("paxos log: reading the log start: " + s.ToString());
  LogStartPb pb;
  if (!pb.ParseFromString(bytes) || pb.instance() >= kMaxInstanceId) {
    return Status::Corruption("paxos log: the log start variable does not parse");
  }
  *instance = pb.instance();
  *checksum = pb.checksum();
  return Status::OK();
}

Status LogTrimmer::Recover() {
  uint64_t start = 0;
  uint32_t checksum = 0;
  Status s = ReadLogStart(ctx_->log(), &start, &checksum);
  if (s.IsNotFound()) return Status::OK();
  if (!s.ok()) return s;
  log_start_ = start;
  learner_->RestoreStart(start, checksum);
  return Status::OK();
}

void LogTrimmer::OnCheckpoint(uint64_t instance, uint64_t trim_limit) {
  const uint64_t end = learner_->chosen_end();
  if (instance > end) {
    ctx_->ReportError(Status::InvalidArgument(
        "OnCheckpoint: checkpoint instance " + std::to_string(instance) +
        " is beyond chosen_end " + std::to_string(end) + "; clamped"));
    instance = end;
  }
  const uint64_t keep = ctx_->options().log_keep_instances;
  uint64_t base = instance;
  if (ctx_->Mutated(TestMutation::kTrimIgnoresCheckpoint)) base = end;
  uint64_t trim = base - std::min(base, keep);
  if (ctx_->Mutated(TestMutation::kTrimIgnoresMargin)) trim = instance;
  trim = std::min(trim, trim_limit);
  if (trim <= log_start_) return;
  // The chain's start for a restart: the checksum of the last trimmed
  // instance (cache, else a synchronous read of the log: one record).
  std::string value;
  uint32_t checksum = 0;
  Status s = learner_->Applied(trim - 1, &value, &checksum);
  if (!s.ok()) {
    ctx_->ReportError(Status::Corruption("OnCheckpoint: cannot read the checksum of instance " +
                                         std::to_string(trim - 1) + ": " + s.ToString() +
                                         "; not trimmed"));
    return;
  }
  Persist(trim, checksum);
  // The configurations that govern only trimmed instances go too, in the
  // same synced write (M6: the one in force at the log's start stays).
  reconfig_->OnTrim(trim);
  learner_->DropCacheBelow(trim);
  ctx_->stats()->trims++;
}

void LogTrimmer::Installed(uint64_t instance, uint32_t checksum) { Persist(instance, checksum); }

void LogTrimmer::Persist(uint64_t start, uint32_t checksum) {
  log_start_ = start;
  LogStartPb pb;
  pb.set_instance(start);
  pb.set_checksum(checksum);
  ctx_->PersistTrim(start);
  ctx_->PersistVariable(kLogStartVariable, pb.SerializeAsString());
}

}  // namespace paxos
}  // namespace chorus
