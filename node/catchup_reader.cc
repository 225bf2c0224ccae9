#include "node/catchup_reader.h"

#include <string>
#include <system_error>
#include <utility>

#include "paxos/catchup.h"
#include "utils/check.h"
#include "utils/coding.h"
#include "utils/thread_name.h"

namespace chorus {

CatchupReader::CatchupReader(Transport* transport, Logger* logger, size_t max_queued)
    : transport_(transport), logger_(logger), max_queued_(max_queued) {
  CHORUS_CHECK(max_queued_ >= 1);
}

CatchupReader::~CatchupReader() { Stop(); }

Status CatchupReader::Start() {
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    return Status::IOError(std::string("cannot start the catch-up reader thread: ") + e.what());
  }
  return Status::OK();
}

bool CatchupReader::Submit(uint32_t group, LogStorage* log, const paxos::CatchupRead& read) {
  {
    MutexLock lock(&mu_);
    if (!stopping_ && queue_.size() < max_queued_) {
      queue_.push_back(Job{group, log, read});
      wake_.Signal();
      return true;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void CatchupReader::Stop() {
  MutexLock stop_lock(&stop_mu_);
  size_t dropped = 0;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    dropped = queue_.size();
    queue_.clear();
  }
  wake_.SignalAll();
  dropped_.fetch_add(dropped, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void CatchupReader::Run() {
  SetThreadName("chorus-catchup");
  for (;;) {
    Job job;
    {
      MutexLock lock(&mu_);
      wake_.Wait(&mu_, [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Serve(job);
  }
}

void CatchupReader::Serve(const Job& job) {
  paxos::CatchupReply reply;
  Status s = paxos::ReadCatchup(job.read, job.log, &reply);
  if (s.IsCorruption()) {
    bad_records_.fetch_add(1, std::memory_order_relaxed);
    CHORUS_LOG(logger_, kWarning, "group %u: serving catch-up to node %llu: %s", job.group,
               static_cast<unsigned long long>(job.read.peer), s.ToString().c_str());
  }
  // Nothing to send (a bad first record): as when the core itself had
  // nothing; the asker's learn tick asks again. A "use a checkpoint" answer
  // (the log was trimmed past the first instance asked for) has no entries
  // but bytes: it is sent.
  if (reply.bytes.empty()) return;
  // The envelope Group::SendMessages puts on every message: the group index.
  std::string frame;
  frame.reserve(4 + reply.bytes.size());
  PutFixed32(&frame, job.group);
  frame.append(reply.bytes);
  s = transport_->Send(job.read.peer, std::move(frame));
  if (!s.ok()) {
    CHORUS_LOG(logger_, kDebug, "group %u: catch-up send: %s", job.group, s.ToString().c_str());
    return;
  }
  served_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace chorus
