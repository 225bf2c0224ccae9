// CountingLogStorage: a LogStorage over another that counts the records read
// through it, so a test can assert how many reads a step cost (a recovery
// scan's length; that a core step read nothing), whatever the machine's
// speed. Not thread-safe; single-threaded tests only.
#ifndef CHORUS_UNITTEST_SUPPORT_COUNTING_LOG_STORAGE_H_
#define CHORUS_UNITTEST_SUPPORT_COUNTING_LOG_STORAGE_H_

#include <cstdint>
#include <string>

#include "chorus/log_storage.h"

namespace chorus {
namespace testing {

class CountingLogStorage : public LogStorage {
 public:
  explicit CountingLogStorage(LogStorage* base) : base_(base) {}
  Status Write(const LogWriteBatch& batch, bool sync) override { return base_->Write(batch, sync); }
  Status Get(uint64_t instance, std::string* record) override {
    ++gets;
    return base_->Get(instance, record);
  }
  Status GetMaxInstanceId(uint64_t* i) override { return base_->GetMaxInstanceId(i); }
  Status GetMinInstanceId(uint64_t* i) override { return base_->GetMinInstanceId(i); }
  Status GetVariable(const std::string& n, std::string* v) override { return base_->GetVariable(n, v); }

  uint64_t gets = 0;  // Get calls so far

 private:
  LogStorage* const base_;
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_COUNTING_LOG_STORAGE_H_
