#include "utils/logging.h"

#include <cstdio>

namespace chorus {

namespace {
const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kNone: break;
  }
  return "?";
}
}  // namespace

void Logger::Log(LogLevel level, const char* format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  if (hook_) {
    hook_(level, buf);
  } else {
    // One fprintf per line: stdio locks the stream, so lines never interleave.
    fprintf(stderr, "chorus %s %s\n", LevelName(level), buf);
  }
}

}  // namespace chorus
