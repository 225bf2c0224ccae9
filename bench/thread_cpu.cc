#include "bench/thread_cpu.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace chorus {
namespace bench {

namespace {

// Parses a /proc stat line: the command name (field 2, between the first
// '(' and the last ')': it may hold both) and utime, stime (fields 14, 15).
bool ReadStat(const std::string& path, std::string* name, CpuTimes* cpu) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  unsigned long long utime = 0, stime = 0;
  if (open == nullptr || close == nullptr || close < open ||
      std::sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) != 2) {
    return false;
  }
  static const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return false;
  name->assign(open + 1, close);
  cpu->user_s = static_cast<double>(utime) / static_cast<double>(ticks);
  cpu->sys_s = static_cast<double>(stime) / static_cast<double>(ticks);
  return true;
}

double Total(const CpuTimes& c) { return c.user_s + c.sys_s; }

}  // namespace

ThreadSample SampleThreads(pid_t pid) {
  ThreadSample s;
  const std::string dir = pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid);
  if (!ReadStat(dir + "/stat", &s.process_name, &s.process)) return s;
  DIR* tasks = opendir((dir + "/task").c_str());
  if (tasks == nullptr) return s;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ThreadSample::Thread t;
    // A thread that ended since the listing is skipped: it is in the rest.
    if (ReadStat(dir + "/task/" + e->d_name + "/stat", &t.name, &t.cpu)) {
      s.threads[std::atol(e->d_name)] = std::move(t);
    }
  }
  closedir(tasks);
  s.ok = true;
  return s;
}

double ProcessCpuSeconds(pid_t pid) {
  if (pid == 0) {
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  }
  std::string name;
  CpuTimes cpu;
  if (!ReadStat("/proc/" + std::to_string(pid) + "/stat", &name, &cpu)) return -1;
  return Total(cpu);
}

std::map<std::string, CpuTimes> CpuByThreadName(const ThreadSample& before,
                                                const ThreadSample& after,
                                                const std::string& rest_name) {
  std::map<std::string, CpuTimes> out;
  if (!before.ok || !after.ok) return out;
  CpuTimes rest{after.process.user_s - before.process.user_s,
                after.process.sys_s - before.process.sys_s};
  for (const auto& [tid, t] : after.threads) {
    auto was = before.threads.find(tid);
    if (was == before.threads.end()) continue;  // started in the window: the rest
    const double user = t.cpu.user_s - was->second.cpu.user_s;
    const double sys = t.cpu.sys_s - was->second.cpu.sys_s;
    CpuTimes& slot = out[t.name == after.process_name ? "unnamed" : t.name];
    slot.user_s += user;
    slot.sys_s += sys;
    rest.user_s -= user;
    rest.sys_s -= sys;
  }
  // Tick rounding may leave a small negative rest when nothing ended.
  rest.user_s = std::max(rest.user_s, 0.0);
  rest.sys_s = std::max(rest.sys_s, 0.0);
  if (Total(rest) > 0) out[rest_name] = rest;
  return out;
}

std::string CpuByThreadJson(const std::map<std::string, CpuTimes>& cpu, double units) {
  if (units <= 0) return "{}";
  std::string out = "{";
  for (const auto& [name, c] : cpu) {
    std::string safe = name;  // a thread name is any text
    std::replace(safe.begin(), safe.end(), '"', '_');
    std::replace(safe.begin(), safe.end(), '\\', '_');
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s\"%s\":{\"user\":%.2f,\"sys\":%.2f}",
                  out.size() > 1 ? "," : "", safe.c_str(), c.user_s * 1e6 / units,
                  c.sys_s * 1e6 / units);
    out += buf;
  }
  return out + "}";
}

std::string CpuByThreadText(const std::map<std::string, CpuTimes>& cpu, double units) {
  if (units <= 0) return "-";
  std::vector<std::pair<std::string, CpuTimes>> sorted(cpu.begin(), cpu.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return Total(a.second) > Total(b.second); });
  std::string out;
  for (const auto& [name, c] : sorted) {
    if (Total(c) * 1e6 / units < 0.05) continue;  // prints as 0.0+0.0: idle in the window
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s%s %.1f+%.1f", out.empty() ? "" : ", ", name.c_str(),
                  c.user_s * 1e6 / units, c.sys_s * 1e6 / units);
    out += buf;
  }
  return out;
}

}  // namespace bench
}  // namespace chorus
