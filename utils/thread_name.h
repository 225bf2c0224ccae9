// SetThreadName: names the calling thread, so that top -H, perf and
// /proc/<pid>/task/*/comm (propose_bench's per-thread CPU split) tell
// chorus's threads apart: "chorus-loop-g0", "chorus-tcp", "chorus-timer"...
#ifndef CHORUS_UTILS_THREAD_NAME_H_
#define CHORUS_UTILS_THREAD_NAME_H_

#include <string>

namespace chorus {

// Best effort: Linux keeps 15 bytes of a name, so a longer one is cut
// there (e.g. group 100's loop and group 10's then share a name); a
// failure changes nothing else.
void SetThreadName(const std::string& name);

}  // namespace chorus

#endif  // CHORUS_UTILS_THREAD_NAME_H_
