// Inbox: collects what a Transport delivers (its Receiver), for the
// transport tests to wait on and inspect.
#ifndef CHORUS_UNITTEST_SUPPORT_TRANSPORT_INBOX_H_
#define CHORUS_UNITTEST_SUPPORT_TRANSPORT_INBOX_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "chorus/transport.h"

namespace chorus {
namespace testing {

class Inbox {
 public:
  Transport::Receiver receiver() {
    return [this](uint64_t from, std::string msg) {
      std::lock_guard<std::mutex> l(mu_);
      messages_.emplace_back(from, std::move(msg));
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> l(mu_);
    return messages_.size();
  }
  // (sender, message) in arrival order.
  std::vector<std::pair<uint64_t, std::string>> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return messages_;
  }
  // How many times `msg` arrived.
  size_t Count(const std::string& msg) {
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    for (const auto& m : messages_) n += m.second == msg ? 1 : 0;
    return n;
  }
  bool Contains(const std::string& msg) { return Count(msg) > 0; }

 private:
  std::mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> messages_;  // GUARDED_BY(mu_)
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_TRANSPORT_INBOX_H_
