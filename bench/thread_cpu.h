// Per-thread CPU of a process, from /proc: which of chorus's threads (the
// group loops "chorus-loop-gN", the transport's "chorus-tcp", the timer
// "chorus-timer", ...) spend what, user and system, over a measured window.
//
// A sample reads /proc/<pid>/stat (the whole process, ended threads
// included) and /proc/<pid>/task/<tid>/stat of every live thread (utime and
// stime, fields 14 and 15, in clock ticks: 10 ms at 100 Hz per reading).
// Between two samples, the threads alive in both are summed by name; the
// rest of the process's CPU, the threads that started or ended in between,
// goes to one entry (propose_bench's client threads, which run only in the
// window; without them, what is left there is the rounding of the ticks:
// the process's figure is not the sum of its threads' rounded ones).
// Threads that never named themselves carry the process's name (the main
// thread's) and are reported as one "unnamed" entry (the main thread and
// leveldb's background thread).
#ifndef CHORUS_BENCH_THREAD_CPU_H_
#define CHORUS_BENCH_THREAD_CPU_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace chorus {
namespace bench {

struct CpuTimes {
  double user_s = 0;
  double sys_s = 0;
};

struct ThreadSample {
  bool ok = false;      // false: the process could not be read (gone)
  std::string process_name;
  CpuTimes process;     // every thread the process ever ran
  struct Thread {
    std::string name;
    CpuTimes cpu;
  };
  std::map<long, Thread> threads;  // by thread id
};

// Samples process `pid` (0: this process).
ThreadSample SampleThreads(pid_t pid);

// User + system CPU seconds process `pid` used so far: this process's
// (pid 0) from getrusage (microseconds), another's from /proc/<pid>/stat
// (clock ticks); -1 if it cannot be read (the process is gone).
double ProcessCpuSeconds(pid_t pid);

// The CPU used between `before` and `after` (two samples of one process),
// by thread name, as the file comment says; the threads that started or
// ended between them are `rest_name`. Empty when either sample failed.
std::map<std::string, CpuTimes> CpuByThreadName(const ThreadSample& before,
                                                const ThreadSample& after,
                                                const std::string& rest_name);

// {"name":{"user":U,"sys":S},...}: microseconds per unit (seconds x 1e6 /
// `units`, e.g. the window's values); "{}" when `units` is 0.
std::string CpuByThreadJson(const std::map<std::string, CpuTimes>& cpu, double units);
// "name U+S, ..." (microseconds per unit, user+sys), busiest first; the
// threads idle in the window are left out.
std::string CpuByThreadText(const std::map<std::string, CpuTimes>& cpu, double units);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_THREAD_CPU_H_
