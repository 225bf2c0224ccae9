// ConnectionLog: the TCP transport's info lines for outgoing connections
// that come up or go down, rate-limited per peer so that a flapping peer
// cannot flood the log: each peer has a bucket of kBurst lines, refilled by
// one every kRefill; a line that finds the bucket empty is not written but
// counted, and the next written line of that peer says how many were not.
// A failed connect attempt to a peer that was not up logs nothing (a peer
// that is still starting, or down for long, is not news on every retry).
// Changes of the address book are logged too, one line each.
//
// Thread safety: none; the transport's loop thread alone calls it.
#ifndef CHORUS_NODE_TCP_CONN_LOG_H_
#define CHORUS_NODE_TCP_CONN_LOG_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "chorus/transport.h"
#include "utils/logging.h"

namespace chorus {
namespace tcp {

class ConnectionLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kBurst = 4;
  static constexpr std::chrono::seconds kRefill{5};

  // Logs through options.log_hook at options.log_level (no hook: silent).
  explicit ConnectionLog(const TcpTransportOptions& options);

  // The connection to `peer` is established.
  void Up(const NodeInfo& peer);
  // The established connection to `peer` broke (errno `err`, 0: EOF).
  void Down(const NodeInfo& peer, int err);
  // The address book changed for `peer` (`what`: "added to the address
  // book"...). Not rate-limited: the book changes with the membership, which
  // is rare, and only the differences are reported.
  void Changed(const NodeInfo& peer, const std::string& what);

 private:
  struct Bucket {
    double tokens = kBurst;
    Clock::time_point refilled;
    uint64_t suppressed = 0;
  };
  void Write(const NodeInfo& peer, const std::string& what);

  const bool enabled_;
  Logger logger_;
  std::unordered_map<uint64_t, Bucket> buckets_;  // by peer id
};

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_CONN_LOG_H_
