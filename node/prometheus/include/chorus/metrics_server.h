// Copyright (c) chorus authors.
//
// MetricsServer: an optional HTTP endpoint for a running Node, in the
// chorus_prometheus library (built only when Debian's prometheus-cpp-dev is
// installed; the chorus library itself never depends on it).
//   GET /metrics  every group's GroupMetrics and the node's TransportMetrics
//                 in the Prometheus text format (version 0.0.4), serialized
//                 by prometheus-cpp. Names and labels: prometheus_text.cc.
//   GET /status   a small JSON document: this node, its initial members
//                 (Options::nodes / join), and per group the instance ids,
//                 the master, this node's lag behind it, its role and the
//                 membership it knows (version, active_from, pending,
//                 members with their roles); chorus_admin's live mode
//                 reads it. Fields: status_json.cc.
// Anything else is answered 404. One thread serves one request at a time
// (HTTP/1.0 style: the connection closes after the answer); a client that
// sends nothing for a few seconds is dropped, so a stuck scraper cannot hold
// the server.
#ifndef CHORUS_METRICS_SERVER_H_
#define CHORUS_METRICS_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/status.h"

namespace chorus {

struct MetricsServerOptions {
  // Address to listen on. Default: loopback only.
  std::string ip = "127.0.0.1";
  // 0 picks a free port (see MetricsServer::port()).
  uint16_t port = 0;
};

class MetricsServer {
 public:
  // Starts serving `node`, which was opened with `options` (for the member
  // list and the group count). REQUIRES: node and options outlive the
  // server (stop it first). Returns IOError when the address cannot be bound.
  static Status Start(Node* node, const Options& options, const MetricsServerOptions& server,
                      std::unique_ptr<MetricsServer>* out);
  virtual ~MetricsServer();

  // The port it listens on.
  virtual uint16_t port() const = 0;
  // Stops the thread and closes the socket. Idempotent; the destructor calls it.
  virtual void Stop() = 0;

 protected:
  MetricsServer() = default;
};

// The bodies the server sends, for programs that serve them their own way.
std::string PrometheusText(const Node& node, const Options& options);
std::string StatusJson(const Node& node, const Options& options);

}  // namespace chorus

#endif  // CHORUS_METRICS_SERVER_H_
