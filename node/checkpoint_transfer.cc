// CheckpointTransfer: threads, routing, progress. The receive side is in
// checkpoint_transfer_receive.cc, the send side in checkpoint_transfer_send.cc.
#include "node/checkpoint_transfer.h"

#include <algorithm>
#include <random>
#include <system_error>
#include <utility>

#include "node/checkpoint_transfer_internal.h"
#include "utils/thread_name.h"

namespace chorus {

namespace {

// Frames waiting for each thread. One chunk is outstanding per transfer, so
// the receive queue holds a few per group at most; beyond these the frame
// is dropped (counted) and the receiver's timeout asks again.
constexpr size_t kMaxReceiveJobs = 64;
constexpr size_t kMaxSendJobs = 256;
// ...and the CHUNK data queued for the receive thread at most this many
// bytes (or one chunk, whichever is larger): a member flooding CHUNKs
// cannot make this node buffer without bound.
constexpr size_t kMaxReceiveBytes = 64u << 20;

}  // namespace

CheckpointTransfer::CheckpointTransfer(const CheckpointTransferOptions& options,
                                       Transport* transport, Logger* logger)
    : options_(options), transport_(transport), logger_(logger) {
  // Transfer ids differ across restarts, so a CHUNK answering a FETCH of a
  // previous process run is never taken for one of ours.
  std::random_device rd;
  next_transfer_id_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

CheckpointTransfer::~CheckpointTransfer() { Stop(); }

void CheckpointTransfer::AddGroup(uint32_t group, CheckpointStore* store, Deliver deliver) {
  auto g = std::make_unique<GroupState>();
  g->group = group;
  g->store = store;
  g->deliver = std::move(deliver);
  groups_[group] = std::move(g);
}

Status CheckpointTransfer::Start() {
  refilled_ = Clock::now();
  tokens_ = static_cast<double>(options_.chunk_bytes);
  try {
    receive_thread_ = std::thread([this] { ReceiveLoop(); });
    send_thread_ = std::thread([this] { SendLoop(); });
  } catch (const std::system_error& e) {
    Stop();
    return Status::IOError(std::string("cannot start the checkpoint transfer threads: ") +
                           e.what());
  }
  return Status::OK();
}

void CheckpointTransfer::Stop() {
  MutexLock stop_lock(&stop_mu_);
  {
    MutexLock lock(&mu_);
    if (stopping_ && !receive_thread_.joinable() && !send_thread_.joinable()) return;
    stopping_ = true;
    dropped_.fetch_add(receive_jobs_.size() + send_jobs_.size(), std::memory_order_relaxed);
    receive_jobs_.clear();
    receive_bytes_ = 0;
    send_jobs_.clear();
  }
  receive_wake_.SignalAll();
  send_wake_.SignalAll();
  if (receive_thread_.joinable()) receive_thread_.join();
  if (send_thread_.joinable()) send_thread_.join();
  // Both threads are gone: this thread owns their state now.
  for (auto& [index, g] : groups_) {
    if (g->receive) Finish(g.get(), /*abort=*/true);
  }
  for (auto& [key, serving] : serving_) {
    groups_[key.first]->store->Unpin(serving.manifest.instance);
  }
  serving_.clear();
}

CheckpointTransfer::GroupState* CheckpointTransfer::FindGroup(uint32_t group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? nullptr : it->second.get();
}

bool CheckpointTransfer::Push(std::deque<Job>* queue, CondVar* wake, Job job,
                              size_t max) {
  {
    MutexLock lock(&mu_);
    const size_t bytes = job.msg.data.size();
    const bool fits = queue != &receive_jobs_ || receive_bytes_ == 0 ||
                      receive_bytes_ + bytes <= kMaxReceiveBytes;
    if (!stopping_ && queue->size() < max && fits) {
      if (queue == &receive_jobs_) receive_bytes_ += bytes;
      queue->push_back(std::move(job));
      wake->Signal();
      return true;
    }
  }
  Count(&dropped_);
  return false;
}

void CheckpointTransfer::OnMessage(uint64_t from, uint32_t group, std::string bytes) {
  Job job;
  Status s = DecodeCheckpointMessage(bytes.data(), bytes.size(), options_.max_chunk_bytes,
                                     &job.msg);
  if (!s.ok() || job.msg.group != group) {
    Count(&malformed_);
    CHORUS_LOG(logger_, kDebug, "checkpoint channel: from node %llu: %s",
               static_cast<unsigned long long>(from),
               s.ok() ? "group field disagrees with the prefix" : s.ToString().c_str());
    return;
  }
  // A member may speak only for itself, and only in this cluster.
  if (job.msg.cluster_id != options_.cluster_id || job.msg.from != from || from == 0) {
    Count(&foreign_);
    return;
  }
  GroupState* g = FindGroup(group);
  if (g == nullptr) {
    Count(&unknown_group_);
    return;
  }
  // A CHUNK or NONE while no transfer of the group runs answers nothing:
  // drop it here rather than queue its data.
  if (job.msg.type != CheckpointMessage::Type::kFetch &&
      !g->running.load(std::memory_order_acquire)) {
    Count(&stale_);
    return;
  }
  job.kind = Job::Kind::kMessage;
  job.from = from;
  job.group = group;
  if (job.msg.type == CheckpointMessage::Type::kFetch) {
    Push(&send_jobs_, &send_wake_, std::move(job), kMaxSendJobs);
  } else {
    Push(&receive_jobs_, &receive_wake_, std::move(job), kMaxReceiveJobs);
  }
}

void CheckpointTransfer::Request(uint32_t group, uint64_t peer, uint64_t above) {
  GroupState* g = FindGroup(group);
  if (g == nullptr || peer == 0) return;
  // Repeats while a transfer runs are expected (the learner asks on every
  // tick): ignore them.
  if (g->running.exchange(true, std::memory_order_acq_rel)) return;
  Job job;
  job.kind = Job::Kind::kRequest;
  job.group = group;
  job.from = peer;
  job.above = above;
  if (!Push(&receive_jobs_, &receive_wake_, std::move(job), kMaxReceiveJobs)) {
    g->running.store(false, std::memory_order_release);
  }
}

CheckpointMessage CheckpointTransfer::Header(CheckpointMessage::Type type, uint32_t group,
                                             uint64_t transfer_id) const {
  CheckpointMessage m;
  m.type = type;
  m.cluster_id = options_.cluster_id;
  m.group = group;
  m.from = options_.self;
  m.transfer_id = transfer_id;
  return m;
}

bool CheckpointTransfer::pending(uint32_t group) const {
  GroupState* g = FindGroup(group);
  return g != nullptr && g->running.load(std::memory_order_acquire);
}

CheckpointTransferProgress CheckpointTransfer::Progress(uint32_t group) const {
  CheckpointTransferProgress p;
  GroupState* g = FindGroup(group);
  if (g == nullptr) return p;
  p.instance = g->instance.load(std::memory_order_relaxed);
  p.bytes_done = g->done.load(std::memory_order_relaxed);
  p.bytes_total = g->total.load(std::memory_order_relaxed);
  p.received = g->received.load(std::memory_order_relaxed);
  p.sent = g->sent.load(std::memory_order_relaxed);
  return p;
}

CheckpointTransferStats CheckpointTransfer::stats() const {
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  CheckpointTransferStats s;
  s.malformed = get(malformed_);
  s.foreign = get(foreign_);
  s.unknown_group = get(unknown_group_);
  s.stale = get(stale_);
  s.bad_chunks = get(bad_chunks_);
  s.timeouts = get(timeouts_);
  s.peer_switches = get(peer_switches_);
  s.restarts = get(restarts_);
  s.nones = get(nones_);
  s.dropped = get(dropped_);
  s.chunks_sent = get(chunks_sent_);
  s.bytes_sent = get(bytes_sent_);
  s.chunks_received = get(chunks_received_);
  return s;
}

int CheckpointTransfer::TakeJob(std::deque<Job>* queue, CondVar* wake,
                                Clock::time_point next, Job* job) {
  MutexLock lock(&mu_);
  auto ready = [&]() REQUIRES(mu_) { return stopping_ || !queue->empty(); };
  if (next == Clock::time_point::max()) {
    wake->Wait(&mu_, ready);
  } else {
    wake->WaitUntil(&mu_, next, ready);
  }
  if (stopping_) return -1;
  if (queue->empty()) return 0;  // the deadline passed
  *job = std::move(queue->front());
  queue->pop_front();
  if (queue == &receive_jobs_) receive_bytes_ -= job->msg.data.size();
  return 1;
}

void CheckpointTransfer::ReceiveLoop() {
  SetThreadName("chorus-ckpt-rx");
  for (;;) {
    // The earliest FETCH deadline (receive-thread state: read here only).
    Clock::time_point next = Clock::time_point::max();
    for (const auto& [index, g] : groups_) {
      if (g->receive && g->receive->deadline < next) next = g->receive->deadline;
    }
    Job job;
    const int got = TakeJob(&receive_jobs_, &receive_wake_, next, &job);
    if (got < 0) return;
    if (got > 0 && job.kind == Job::Kind::kRequest) {
      HandleRequest(job);
    } else if (got > 0 && Answers(job.from, job.msg)) {
      if (job.msg.type == CheckpointMessage::Type::kChunk) {
        HandleChunk(job.from, job.msg);
      } else {
        HandleNone(job.from, job.msg);
      }
    }
    CheckTimeouts(Clock::now());
  }
}

void CheckpointTransfer::SendLoop() {
  SetThreadName("chorus-ckpt-tx");
  for (;;) {
    // When the next idle pin expires (send-thread state).
    Clock::time_point next = Clock::time_point::max();
    for (const auto& [key, serving] : serving_) {
      next = std::min(next, serving.last_fetch + std::chrono::milliseconds(options_.pin_idle_ms));
    }
    Job job;
    const int got = TakeJob(&send_jobs_, &send_wake_, next, &job);
    if (got < 0) return;
    if (got > 0) HandleFetch(job.from, job.msg);
    UnpinIdle(Clock::now());
  }
}

}  // namespace chorus
