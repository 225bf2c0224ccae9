// Copyright (c) chorus authors.
//
// Logging vocabulary: the levels of chorus's log lines and the hook an
// application may install to receive them (Options::log_hook). Standard
// library only, like every vocabulary header (status.h, log_storage.h).

#ifndef CHORUS_LOGGING_H_
#define CHORUS_LOGGING_H_

#include <functional>
#include <string>

namespace chorus {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kNone = 4 };

// Receives chorus's log lines (from any thread; must be thread-safe).
using LogHook = std::function<void(LogLevel level, const std::string& line)>;

}  // namespace chorus

#endif  // CHORUS_LOGGING_H_
