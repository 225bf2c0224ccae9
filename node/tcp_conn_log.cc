#include "node/tcp_conn_log.h"

#include <algorithm>
#include <cstring>

namespace chorus {
namespace tcp {

ConnectionLog::ConnectionLog(const TcpTransportOptions& options)
    : enabled_(static_cast<bool>(options.log_hook)),
      logger_(options.log_hook, options.log_level) {}

void ConnectionLog::Up(const NodeInfo& peer) { Write(peer, "up"); }

void ConnectionLog::Down(const NodeInfo& peer, int err) {
  Write(peer, err == 0 ? std::string("down (closed)")
                       : "down (" + std::string(std::strerror(err)) + ")");
}

void ConnectionLog::Changed(const NodeInfo& peer, const std::string& what) {
  if (!enabled_ || !logger_.Enabled(LogLevel::kInfo)) return;
  logger_.Log(LogLevel::kInfo, "transport: peer %s %s", peer.ToString().c_str(), what.c_str());
}

void ConnectionLog::Write(const NodeInfo& peer, const std::string& what) {
  if (!enabled_ || !logger_.Enabled(LogLevel::kInfo)) return;
  const Clock::time_point now = Clock::now();
  auto [it, fresh] = buckets_.try_emplace(peer.id());
  Bucket& b = it->second;
  if (fresh) b.refilled = now;
  const double refills = std::chrono::duration<double>(now - b.refilled) / kRefill;
  b.tokens = std::min<double>(kBurst, b.tokens + refills);
  b.refilled = now;
  if (b.tokens < 1) {
    ++b.suppressed;
    return;
  }
  b.tokens -= 1;
  if (b.suppressed > 0) {
    logger_.Log(LogLevel::kInfo, "transport: connection to %s %s (%llu changes before not logged)",
                peer.ToString().c_str(), what.c_str(),
                static_cast<unsigned long long>(b.suppressed));
    b.suppressed = 0;
  } else {
    logger_.Log(LogLevel::kInfo, "transport: connection to %s %s", peer.ToString().c_str(),
                what.c_str());
  }
}

}  // namespace tcp
}  // namespace chorus
