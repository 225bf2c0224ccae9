// GatedLogStorage: a LogStorage over another whose Get can be held at a gate
// (a disk that hangs), so a test can tell what goes on while a reader is
// stuck in the log, by waiting for events rather than for time.
// Thread-safe as far as the base is.
#ifndef CHORUS_UNITTEST_SUPPORT_GATED_LOG_STORAGE_H_
#define CHORUS_UNITTEST_SUPPORT_GATED_LOG_STORAGE_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "chorus/log_storage.h"

namespace chorus {
namespace testing {

class GatedLogStorage : public LogStorage {
 public:
  explicit GatedLogStorage(std::unique_ptr<LogStorage> base) : base_(std::move(base)) {}

  Status Write(const LogWriteBatch& batch, bool sync) override { return base_->Write(batch, sync); }
  Status Get(uint64_t instance, std::string* record) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++held_;
      opened_.wait(lock, [this] { return !closed_; });
      --held_;
      ++gets_;
    }
    return base_->Get(instance, record);
  }
  Status GetMaxInstanceId(uint64_t* i) override { return base_->GetMaxInstanceId(i); }
  Status GetMinInstanceId(uint64_t* i) override { return base_->GetMinInstanceId(i); }
  Status GetVariable(const std::string& n, std::string* v) override { return base_->GetVariable(n, v); }

  // From now on every Get waits until Open().
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = false;
    }
    opened_.notify_all();
  }
  // Gets waiting at the gate now.
  int held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }
  // Gets that passed the gate so far.
  uint64_t gets() {
    std::lock_guard<std::mutex> lock(mu_);
    return gets_;
  }

 private:
  const std::unique_ptr<LogStorage> base_;
  std::mutex mu_;
  std::condition_variable opened_;  // closed_ became false
  bool closed_ = false;             // GUARDED_BY(mu_)
  int held_ = 0;                    // GUARDED_BY(mu_)
  uint64_t gets_ = 0;               // GUARDED_BY(mu_)
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_GATED_LOG_STORAGE_H_
