#include "node/checkpoint_worker.h"

#include <string>
#include <system_error>
#include <utility>

#include "utils/check.h"
#include "utils/thread_name.h"

namespace chorus {

CheckpointWorker::CheckpointWorker(size_t max_queued) : max_queued_(max_queued) {
  CHORUS_CHECK(max_queued_ >= 1);
}

CheckpointWorker::~CheckpointWorker() { Stop(); }

Status CheckpointWorker::Start() {
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    return Status::IOError(std::string("cannot start the checkpoint thread: ") + e.what());
  }
  return Status::OK();
}

bool CheckpointWorker::Submit(std::function<void()> job) {
  {
    MutexLock lock(&mu_);
    if (!stopping_ && queue_.size() < max_queued_) {
      queue_.push_back(std::move(job));
      wake_.Signal();
      return true;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;  // `job` is destroyed here, outside the lock
}

void CheckpointWorker::Stop() {
  MutexLock stop_lock(&stop_mu_);
  std::deque<std::function<void()>> dropped;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.SignalAll();
  dropped_.fetch_add(dropped.size(), std::memory_order_relaxed);
  dropped.clear();  // destroyed outside mu_: a job's captures may take locks
  if (thread_.joinable()) thread_.join();
}

void CheckpointWorker::Run() {
  SetThreadName("chorus-ckpt");
  for (;;) {
    std::function<void()> job;
    {
      MutexLock lock(&mu_);
      wake_.Wait(&mu_, [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
    job = nullptr;
    completed_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace chorus
