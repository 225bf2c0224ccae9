// What the cluster benches (propose_bench, failover_bench) share: they run a
// real 3-process cluster on loopback by re-executing their own binary
// (/proc/self/exe) once per node. Header-only, for the bench programs only.
#ifndef CHORUS_BENCH_BENCH_CLUSTER_H_
#define CHORUS_BENCH_BENCH_CLUSTER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace chorus {
namespace bench {

using Clock = std::chrono::steady_clock;

// CLOCK_MONOTONIC in ns: one clock for every process of the machine, so
// times taken in different node processes compare (steady_clock is not
// guaranteed to be that clock).
inline int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The machine's 1-minute load average: the figures mean little on a machine
// that is busy with something else, so the reports say how busy it was.
inline double LoadAverage1m() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

// `count` distinct loopback ports that were free a moment ago (the nodes',
// then any the bench adds).
inline bool PickPorts(std::vector<uint16_t>* ports, int count = 3) {
  std::vector<int> fds;
  bool ok = true;
  for (int i = 0; i < count && ok; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
         getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    if (fd >= 0) fds.push_back(fd);
    if (ok) ports->push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ok;
}

// "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3".
inline std::string LoopbackNodes(const std::vector<uint16_t>& ports) {
  std::string nodes;
  for (uint16_t p : ports) {
    nodes += (nodes.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
  }
  return nodes;
}

// Runs this program again with `args` (args[0] is argv[0]) in a child that
// dies with the parent, whatever kills it. stdin_fd / stdout_fd (if >= 0)
// become the child's stdin / stdout; the parent keeps its own copies and
// closes them. Returns the child's pid, or -1.
inline pid_t SpawnSelf(const std::vector<std::string>& args, int stdin_fd = -1,
                       int stdout_fd = -1) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    if (stdin_fd >= 0 && dup2(stdin_fd, STDIN_FILENO) < 0) _exit(126);
    if (stdout_fd >= 0 && dup2(stdout_fd, STDOUT_FILENO) < 0) _exit(126);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` until `deadline`; returns its wait status, or -1 on timeout
// or once *interrupted is set.
inline int WaitUntil(pid_t pid, Clock::time_point deadline, const std::atomic<bool>* interrupted) {
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (Clock::now() >= deadline || interrupted->load()) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// SIGTERM, then SIGKILL if `pid` has not exited within 5 s; reaps it.
inline void Terminate(pid_t pid, const std::atomic<bool>* interrupted) {
  kill(pid, SIGTERM);
  if (WaitUntil(pid, Clock::now() + std::chrono::seconds(5), interrupted) == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

// The median of `v` (the mean of the middle two for an even count); -1 if empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_BENCH_CLUSTER_H_
