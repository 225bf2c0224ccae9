// Logger: where chorus components write their log lines. Each Node owns one,
// built from Options::log_hook and Options::log_level; components borrow it.
// Only the vocabulary header chorus/logging.h is included: utils/ knows
// nothing of the runtime API.
// Thread-safe: Log() may be called from any thread (the hook must be too).
#ifndef CHORUS_UTILS_LOGGING_H_
#define CHORUS_UTILS_LOGGING_H_

#include <cstdarg>
#include <string>

#include "chorus/logging.h"

namespace chorus {

class Logger {
 public:
  // An empty hook writes to stderr.
  Logger(LogHook hook, LogLevel level) : hook_(std::move(hook)), level_(level) {}

  bool Enabled(LogLevel level) const { return level >= level_ && level_ != LogLevel::kNone; }
  void Log(LogLevel level, const char* format, ...) __attribute__((format(printf, 3, 4)));

 private:
  const LogHook hook_;
  const LogLevel level_;
};

}  // namespace chorus

#define CHORUS_LOG(logger, level, ...)                                       \
  do {                                                                       \
    if ((logger) != nullptr && (logger)->Enabled(::chorus::LogLevel::level)) \
      (logger)->Log(::chorus::LogLevel::level, __VA_ARGS__);                 \
  } while (0)

#endif  // CHORUS_UTILS_LOGGING_H_
