// PrintLine: how chorus's programs (the samples, the cluster benches) write
// their one-line records to stdout from several threads (group loops, the
// callbacks, client threads): each line whole, flushed at once, so a script
// or a parent process that reads the pipe sees it as soon as it happened.
//
// Header-only and for programs only.
#ifndef CHORUS_TOOLS_PRINT_LINE_H_
#define CHORUS_TOOLS_PRINT_LINE_H_

#include <cstdio>
#include <mutex>
#include <string>

namespace chorus {

// Writes `line` and a newline to stdout and flushes. Thread-safe: lines of
// concurrent callers never interleave.
inline void PrintLine(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace chorus

#endif  // CHORUS_TOOLS_PRINT_LINE_H_
