// Helpers shared by the tests: free loopback ports, temp dirs, fd counting,
// waiting for a condition with a generous deadline (never a speed check).
#ifndef CHORUS_UNITTEST_SUPPORT_TEST_UTIL_H_
#define CHORUS_UNITTEST_SUPPORT_TEST_UTIL_H_

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>

namespace chorus {
namespace testing {

// A loopback port that was free a moment ago (0 if none could be found).
// Drawn at random below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), not with bind(port 0): a port from that
// range is one that a concurrent test's outgoing connection may take before
// this test binds it (a cluster that then failed to open, under ctest -j).
inline uint16_t FreePort() {
  int ephemeral_low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &ephemeral_low) != 1) ephemeral_low = 32768;
    std::fclose(f);
  }
  constexpr int kLow = 10000;
  // An ephemeral range that starts (almost) as low: any port above kLow.
  const int high = ephemeral_low > kLow + 1000 && ephemeral_low < 65536 ? ephemeral_low : 65536;
  thread_local std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = kLow + static_cast<int>(rng() % static_cast<uint32_t>(high - kLow));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (ok) return static_cast<uint16_t>(port);
  }
  return 0;
}

// Open file descriptors of this process.
inline int CountOpenFds() {
  int count = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++count;
  }
  closedir(d);
  return count - 1;  // the DIR itself
}

// The newest "<number>.log" (leveldb's write-ahead log) in the leveldb
// directory `dir`, as a path; "" when there is none.
inline std::string NewestLevelDbLog(const std::string& dir) {
  std::string newest;
  unsigned long long best = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return newest;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() <= 4 || n.compare(n.size() - 4, 4, ".log") != 0) continue;
    const unsigned long long number = std::strtoull(n.c_str(), nullptr, 10);
    if (newest.empty() || number > best) {
      best = number;
      newest = dir + "/" + n;
    }
  }
  closedir(d);
  return newest;
}

// Polls pred() until it holds or `deadline` passes; returns pred().
inline bool WaitUntil(const std::function<bool()>& pred,
                      std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A fresh directory under $TMPDIR (or /tmp), removed with its content on
// destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/chorus_test_XXXXXX";
    path_ = mkdtemp(&tmpl[0]) != nullptr ? tmpl : std::string();
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::string cmd = "rm -rf '" + path_ + "'";
      if (system(cmd.c_str()) != 0) {
        // Leaving a temp dir behind is harmless.
      }
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_TEST_UTIL_H_
