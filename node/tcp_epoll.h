// What the three parts of the TCP transport share: the loop's epoll set and
// the tags of its events, the transport's counters, and a few helpers for
// descriptors and epoll timeouts. The parts: tcp_peers (outgoing
// connections and the address book), tcp_incoming (accepted connections), tcp_transport (the loop
// that drives both, Send and Stop).
#ifndef CHORUS_NODE_TCP_EPOLL_H_
#define CHORUS_NODE_TCP_EPOLL_H_

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "chorus/status.h"
#include "chorus/transport.h"

namespace chorus {
namespace tcp {

using Clock = std::chrono::steady_clock;

// Bytes read from a socket at once.
constexpr size_t kReadChunk = 64 * 1024;

// epoll_event.data.u64 = kind << 56 | index.
enum class Kind : uint64_t { kWake = 0, kListen = 1, kPeer = 2, kIncoming = 3 };
inline uint64_t Tag(Kind kind, uint64_t index) { return static_cast<uint64_t>(kind) << 56 | index; }
inline Kind KindOf(uint64_t tag) { return static_cast<Kind>(tag >> 56); }
inline uint64_t IndexOf(uint64_t tag) { return tag & ((uint64_t{1} << 56) - 1); }

inline void CloseFd(int* fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

// The loop's epoll set. Created by the transport's Init, closed by its Stop
// (after the loop joined); Register is called by the loop thread, and by
// Init / Start before the loop runs.
class Epoll {
 public:
  Epoll() = default;
  ~Epoll() { Close(); }
  Epoll(const Epoll&) = delete;
  Epoll& operator=(const Epoll&) = delete;

  Status Init() {
    fd_ = epoll_create1(EPOLL_CLOEXEC);
    return fd_ < 0 ? Status::FromErrno("epoll_create1", errno) : Status::OK();
  }
  int fd() const { return fd_; }
  // epoll_ctl; false (errno set) when it failed. The callers give up the one
  // socket concerned rather than the process.
  bool Register(int fd, uint32_t events, uint64_t tag, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(fd_, op, fd, &ev) == 0;
  }
  bool Remove(int fd) { return epoll_ctl(fd_, EPOLL_CTL_DEL, fd, nullptr) == 0; }
  void Close() { CloseFd(&fd_); }

 private:
  int fd_ = -1;
};

// The transport's counters (monotonic; relaxed: they order nothing). Each
// is written by one part, read by stats() from any thread.
struct Counters {
  std::atomic<uint64_t> frames_sent{0};
  std::atomic<uint64_t> frames_received{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> disconnects{0};
  std::atomic<uint64_t> dropped_corrupt{0};
  std::atomic<uint64_t> dropped_too_large{0};
  std::atomic<uint64_t> dropped_foreign_cluster{0};
  std::atomic<uint64_t> dropped_non_member{0};
  std::atomic<uint64_t> dropped_bad_mac{0};
  std::atomic<uint64_t> challenge_failures{0};
  std::atomic<uint64_t> sends_dropped_queue_full{0};
  std::atomic<uint64_t> closed_on_error{0};
  std::atomic<uint64_t> rejected_over_limit{0};
  std::atomic<uint64_t> accept_failures{0};
  std::atomic<uint64_t> closed_epoll_error{0};
  std::atomic<uint64_t> connect_timeouts{0};
  std::atomic<uint64_t> timed_out{0};
  std::atomic<uint64_t> closed_header_timeout{0};
  std::atomic<uint64_t> resolve_failures{0};
  std::atomic<uint64_t> closed_removed_peer{0};

  static void Add(std::atomic<uint64_t>* counter, uint64_t n = 1) {
    counter->fetch_add(n, std::memory_order_relaxed);
  }
  // Counts an error that broke a connection when it is the dead-peer
  // detection at work.
  void CountIfTimedOut(int err) {
    if (err == ETIMEDOUT) Add(&timed_out);
  }
  TransportStats Snapshot() const {
    auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    TransportStats s;
    s.frames_sent = get(frames_sent);
    s.frames_received = get(frames_received);
    s.bytes_sent = get(bytes_sent);
    s.bytes_received = get(bytes_received);
    s.connects = get(connects);
    s.disconnects = get(disconnects);
    s.frames_dropped_corrupt = get(dropped_corrupt);
    s.frames_dropped_too_large = get(dropped_too_large);
    s.frames_dropped_foreign_cluster = get(dropped_foreign_cluster);
    s.frames_dropped_non_member = get(dropped_non_member);
    s.frames_dropped_bad_mac = get(dropped_bad_mac);
    s.auth_challenge_failures = get(challenge_failures);
    s.sends_dropped_queue_full = get(sends_dropped_queue_full);
    s.connections_closed_on_error = get(closed_on_error);
    s.connections_rejected_over_limit = get(rejected_over_limit);
    s.accept_failures = get(accept_failures);
    s.connections_closed_epoll_error = get(closed_epoll_error);
    s.connect_timeouts = get(connect_timeouts);
    s.connections_timed_out = get(timed_out);
    s.connections_closed_header_timeout = get(closed_header_timeout);
    s.resolve_failures = get(resolve_failures);
    s.connections_closed_removed_peer = get(closed_removed_peer);
    return s;
  }
};

// The smaller of two epoll timeouts, -1 meaning none.
inline int MinTimeout(int a, int b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

// Milliseconds from now until `t` (rounded up), at least 0.
inline int MsUntil(Clock::time_point now, Clock::time_point t) {
  if (t <= now) return 0;
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1);
}

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_EPOLL_H_
