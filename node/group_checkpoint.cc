#include "node/group_checkpoint.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "node/fs_util.h"

namespace chorus {

namespace {

// Samples of the byte margin kept at most; beyond, every other one goes
// (coarser samples only ever keep more of the log).
constexpr size_t kMaxSamples = 4096;

std::string GroupName(uint32_t group) { return "group " + std::to_string(group); }

}  // namespace

std::string CheckpointDirOf(const Options& options, uint32_t group) {
  std::string base = options.checkpoint_dir;
  if (base.empty() && !options.data_dir.empty()) base = options.data_dir + "/checkpoints";
  if (base.empty()) return base;
  return base + "/g" + std::to_string(group);
}

GroupCheckpoint::GroupCheckpoint(const Options* options, uint32_t group, Logger* logger,
                                 CheckpointWorker* worker, CheckpointRequestHook request,
                                 std::shared_ptr<EventQueue> queue,
                                 const std::map<int, StateMachine*>* machines,
                                 std::map<int, uint64_t>* applied_from)
    : options_(options),
      group_(group),
      logger_(logger),
      worker_(worker),
      request_(std::move(request)),
      queue_(std::move(queue)),
      machines_(machines),
      applied_from_(applied_from) {
  const uint64_t span = options->checkpoint_interval_instances + options->log_keep_instances;
  sample_every_ = std::max<uint64_t>(1, span / 1024);
}

GroupCheckpoint::~GroupCheckpoint() = default;

Status GroupCheckpoint::OpenStore() {
  const std::string dir = CheckpointDirOf(*options_, group_);
  if (dir.empty()) return Status::OK();
  Status s = CheckpointStore::Open(dir, options_->cluster_id, group_, logger_, &store_);
  return s.ok() ? s : s.Annotate(GroupName(group_));
}

Status GroupCheckpoint::LoadInto(const CheckpointManifest& m, int id, StateMachine* sm) {
  std::string scratch;
  Status s = store_->MakeScratch(m, id, &scratch);
  if (s.ok()) {
    CheckpointInfo info;
    info.group = group_;
    info.instance = m.instance;
    s = sm->LoadCheckpoint(info, scratch);
    // Whatever the state machine left there is chorus's to delete.
    Status r = RemoveTree(scratch);
    if (!r.ok()) CHORUS_LOG(logger_, kWarning, "%s: %s", GroupName(group_).c_str(), r.ToString().c_str());
  }
  if (!s.ok()) {
    return s.Annotate(GroupName(group_) + ": loading checkpoint " + std::to_string(m.instance) +
                      " into state machine " + std::to_string(id));
  }
  (*applied_from_)[id] = m.instance;
  return Status::OK();
}

Status GroupCheckpoint::Install(paxos::Core* core, const CheckpointManifest& m,
                                paxos::Outputs* out) {
  if (m.membership.empty()) return core->InstallCheckpoint(m.instance, m.chain_checksum, out);
  paxos::Membership membership;
  Status s = paxos::Membership::Decode(m.membership, &membership);
  if (!s.ok()) return s.Annotate("the membership of checkpoint " + std::to_string(m.instance));
  return core->InstallCheckpoint(m.instance, m.chain_checksum, &membership, out);
}

Status GroupCheckpoint::Restore(paxos::Core* core, LogStorage* log, paxos::Outputs* out) {
  for (const auto& [id, sm] : *machines_) (*applied_from_)[id] = sm->GetCheckpointInstanceId(group_);
  last_ = core->log_start();
  CheckpointManifest c;
  if (!store_ || !store_->Newest(&c).ok()) return Status::OK();
  last_ = std::max(last_, c.instance);
  bool all = true;
  for (const auto& [id, sm] : *machines_) {
    const uint64_t own = (*applied_from_)[id];
    if (own >= c.instance) continue;
    Status s = LoadInto(c, id, sm);
    if (s.ok()) continue;
    // The log may still hold what this state machine needs.
    if (core->log_start() > own) return s;
    all = false;
    CHORUS_LOG(logger_, kWarning, "%s (replaying the log from %llu instead)", s.ToString().c_str(),
               static_cast<unsigned long long>(own));
  }
  if (!all || c.instance <= core->chosen_end()) return Status::OK();
  // Stored but never installed: the crash came between the two.
  paxos::Outputs installed;
  Status s = Install(core, c, &installed);
  if (!s.ok()) return s.Annotate(GroupName(group_) + ": installing checkpoint " + std::to_string(c.instance));
  if (!installed.persist.empty()) {
    s = log->Write(installed.persist, options_->sync_writes);
    if (!s.ok()) return s.Annotate(GroupName(group_) + ": recording the checkpoint's install");
    installed.persist = LogWriteBatch();
  }
  // Values chosen at and above it that recovery found: Replay executes them
  // from the log (they are there), so the first round must not again.
  installed.chosen.clear();
  *out = std::move(installed);
  return Status::OK();
}

Status GroupCheckpoint::Replay(paxos::Core* core,
                               const std::function<void(const paxos::ChosenValue&)>& apply) {
  // Values below each state machine's checkpoint are already reflected in
  // its state; the rest of the chosen prefix is executed again, in order.
  const uint64_t end = core->chosen_end();
  uint64_t from = end;
  for (const auto& [id, first] : *applied_from_) from = std::min(from, first);
  if (from < core->log_start()) {
    return Status::Corruption(
        GroupName(group_) + ": a state machine needs the log from instance " + std::to_string(from) +
        ", but it starts at " + std::to_string(core->log_start()) +
        " (trimmed) and no stored checkpoint covers the gap (was the checkpoint dir '" +
        CheckpointDirOf(*options_, group_) + "' lost?)");
  }
  // The byte margin counts from here: what lies below is not known.
  ResetSamples(from);
  for (uint64_t i = from; i < end; ++i) {
    paxos::ChosenValue chosen;
    Status s = core->ReadChosen(i, &chosen);
    if (!s.ok()) {
      return Status::Corruption(GroupName(group_) + ": cannot replay instance " + std::to_string(i) +
                                " into the state machines: " + s.ToString());
    }
    chosen.ours = false;
    apply(chosen);
  }
  return Status::OK();
}

void GroupCheckpoint::ResetSamples(uint64_t instance) {
  samples_.clear();
  if (options_->log_keep_bytes > 0) samples_.emplace_back(instance, applied_bytes_);
}

void GroupCheckpoint::OnApplied(uint64_t instance, size_t bytes) {
  if (options_->log_keep_bytes == 0) return;
  if (samples_.empty() || instance >= samples_.back().first + sample_every_) {
    samples_.emplace_back(instance, applied_bytes_);
    if (samples_.size() > kMaxSamples) {
      std::deque<std::pair<uint64_t, uint64_t>> thinned;
      for (size_t i = 0; i < samples_.size(); i += 2) thinned.push_back(samples_[i]);
      samples_.swap(thinned);
    }
  }
  applied_bytes_ += bytes;
}

uint64_t GroupCheckpoint::TrimLimit(uint64_t bytes_below) {
  const uint64_t keep = options_->log_keep_bytes;
  if (keep == 0) return std::numeric_limits<uint64_t>::max();
  // The newest sample T with at least `keep` bytes of values in [T, S):
  // trimming below T keeps them. None: bytes below the oldest sample are
  // unknown (before this process started), so trim nothing.
  for (auto it = samples_.rbegin(); it != samples_.rend(); ++it) {
    if (bytes_below >= it->second && bytes_below - it->second >= keep) {
      const uint64_t limit = it->first;
      // Older samples would only give lower limits to later checkpoints.
      while (samples_.front().first < limit) samples_.pop_front();
      return limit;
    }
  }
  return 0;
}

uint64_t GroupCheckpoint::AfterRound(paxos::Core* core,
                                     const std::vector<paxos::CheckpointNeeded>& needed,
                                     uint64_t executed, paxos::Outputs* step) {
  step->Clear();
  if (halted_) return 0;
  for (const paxos::CheckpointNeeded& n : needed) {
    const uint64_t above = core->chosen_end();
    CheckpointManifest own;
    if (store_ && store_->Newest(&own).ok() && own.instance > above) {
      // Stored already (a crash before its install, or a load that failed):
      // no transfer needed.
      return OnLoad(core, own.instance, step);
    }
    if (request_) {
      request_(group_, n.peer, above);
    } else if (!warned_no_store_) {
      warned_no_store_ = true;
      CHORUS_LOG(logger_, kWarning,
                 "%s: node %llu's log starts at %llu, above this node's %llu: this node needs a "
                 "checkpoint, and can fetch none (checkpoints are off, or there is no transfer)",
                 GroupName(group_).c_str(), static_cast<unsigned long long>(n.peer),
                 static_cast<unsigned long long>(n.log_start),
                 static_cast<unsigned long long>(above));
    }
  }
  MaybeMake(core, executed);
  return 0;
}

void GroupCheckpoint::MaybeMake(paxos::Core* core, uint64_t executed) {
  const uint64_t interval = options_->checkpoint_interval_instances;
  if (!store_ || worker_ == nullptr || interval == 0 || !supported_ || machines_->empty()) return;
  if (making_.load(std::memory_order_relaxed) || executed < last_ || executed - last_ < interval) {
    return;
  }
  // Between rounds every chosen value is applied; if the core ran ahead
  // (it cannot here, but a checkpoint must be exact), wait a round.
  if (executed != core->chosen_end()) return;
  CheckpointInfo info;
  info.group = group_;
  info.instance = executed;
  auto writers = std::make_shared<std::vector<std::pair<int, std::unique_ptr<CheckpointWriter>>>>();
  for (const auto& [id, sm] : *machines_) {
    std::unique_ptr<CheckpointWriter> writer;
    Status s = sm->PrepareCheckpoint(info, &writer);
    if (s.IsNotSupported()) {
      supported_ = false;
      CHORUS_LOG(logger_, kInfo, "%s: state machine %d makes no checkpoints: the log is never trimmed",
                 GroupName(group_).c_str(), id);
      return;
    }
    if (s.ok() && writer == nullptr) s = Status::InvalidArgument("PrepareCheckpoint set no writer");
    if (!s.ok()) {
      last_ = executed;  // try again at the next interval
      CHORUS_LOG(logger_, kWarning, "%s: state machine %d: no checkpoint at %llu: %s",
                 GroupName(group_).c_str(), id, static_cast<unsigned long long>(executed),
                 s.ToString().c_str());
      return;
    }
    writers->emplace_back(id, std::move(writer));
  }
  last_ = executed;
  making_bytes_ = applied_bytes_;
  making_.store(true, std::memory_order_release);
  CheckpointStore* store = store_.get();
  std::shared_ptr<EventQueue> queue = queue_;
  const uint32_t chain = core->chain_checksum();
  // M6: the checkpoint says which configurations govern from `executed` on.
  std::string membership = core->MembershipAt(executed).Encode();
  const bool queued = worker_->Submit([store, queue, writers, executed, chain, membership] {
    CheckpointManifest m;
    m.instance = executed;
    m.chain_checksum = chain;
    m.membership = membership;
    std::string staging;
    Status s = store->BeginStaging(&staging);
    for (auto& [id, writer] : *writers) {
      if (!s.ok()) break;
      const std::string dir = staging + "/" + StateMachineDirName(id);
      s = CreateDirs(dir);
      if (s.ok()) s = writer->Write(dir);
      if (!s.ok()) s = s.Annotate("state machine " + std::to_string(id) + " writing its checkpoint");
      writer.reset();  // done with what PrepareCheckpoint captured
    }
    if (s.ok()) {
      s = store->Commit(staging, &m);
    } else if (!staging.empty()) {
      store->Abort(staging);
    }
    Event done;
    done.kind = Event::Kind::kCheckpointDone;
    done.token = executed;
    done.status = std::move(s);
    queue->Push(std::move(done));  // fails only once the group stopped
  });
  if (!queued) {
    making_.store(false, std::memory_order_release);
    CHORUS_LOG(logger_, kWarning, "%s: the checkpoint thread refused the checkpoint at %llu",
               GroupName(group_).c_str(), static_cast<unsigned long long>(executed));
  }
}

void GroupCheckpoint::OnMade(paxos::Core* core, uint64_t instance, const Status& status,
                             paxos::Outputs* step) {
  step->Clear();
  finished_ = true;  // making() ends with the round that executes this trim
  if (!status.ok()) {
    CHORUS_LOG(logger_, kWarning, "%s: checkpoint at %llu failed (the previous one stays; trying "
               "again at the next interval): %s", GroupName(group_).c_str(),
               static_cast<unsigned long long>(instance), status.ToString().c_str());
    return;
  }
  made_.fetch_add(1, std::memory_order_relaxed);
  if (halted_) return;
  // Durable now (Commit fsynced it): the core may trim behind it. A newer
  // one loaded meanwhile makes this a no-op in the core.
  core->OnCheckpoint(std::min(instance, core->chosen_end()), TrimLimit(making_bytes_), step);
}

void GroupCheckpoint::EndOfRound() {
  if (!finished_) return;
  finished_ = false;
  making_.store(false, std::memory_order_release);
}

uint64_t GroupCheckpoint::OnLoad(paxos::Core* core, uint64_t instance, paxos::Outputs* step) {
  if (halted_ || !store_ || instance <= core->chosen_end()) return 0;  // stale
  CheckpointManifest m;
  Status s = store_->Get(instance, &m);
  if (s.ok()) s = Load(core, m, step);
  if (!s.ok()) {
    CHORUS_LOG(logger_, kWarning, "%s: %s (the old state stays; retried when the core asks again)",
               GroupName(group_).c_str(), s.ToString().c_str());
    return 0;
  }
  return instance;
}

Status GroupCheckpoint::Load(paxos::Core* core, const CheckpointManifest& m, paxos::Outputs* step) {
  // The group applies nothing meanwhile: this runs on its loop.
  for (const auto& [id, sm] : *machines_) {
    if ((*applied_from_)[id] >= m.instance) continue;  // loaded by an earlier try
    Status s = LoadInto(m, id, sm);
    if (!s.ok()) return s;
  }
  Status s = Install(core, m, step);
  if (!s.ok()) return s.Annotate("installing checkpoint " + std::to_string(m.instance));
  loaded_.fetch_add(1, std::memory_order_relaxed);
  last_ = std::max(last_, m.instance);
  ResetSamples(m.instance);
  CHORUS_LOG(logger_, kInfo, "%s: loaded checkpoint %llu (%llu bytes) from a peer",
             GroupName(group_).c_str(), static_cast<unsigned long long>(m.instance),
             static_cast<unsigned long long>(m.total_bytes()));
  return Status::OK();
}

}  // namespace chorus
