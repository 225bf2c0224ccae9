#include "utils/thread_name.h"

#include <pthread.h>

namespace chorus {

namespace {
// The kernel's TASK_COMM_LEN (16) less the terminating NUL: pthread_setname_np
// refuses (ERANGE) a longer name rather than cutting it.
constexpr size_t kMaxThreadName = 15;
}  // namespace

void SetThreadName(const std::string& name) {
  const std::string cut = name.substr(0, kMaxThreadName);
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace chorus
