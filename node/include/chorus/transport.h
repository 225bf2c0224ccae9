// Copyright (c) chorus authors.
//
// Transport: moves opaque messages between the nodes of one cluster. chorus
// ships a TCP implementation on epoll (NewTcpTransport); an application may
// plug in its own (e.g. over its RPC framework).
//
// Delivery is best effort: a message may be lost, duplicated or reordered
// and the protocol copes. A send never blocks on a slow or dead peer.

#ifndef CHORUS_TRANSPORT_H_
#define CHORUS_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

// A member of the cluster: an IPv4 address and a port. Its node id is derived
// from both (see id()), so every process computes the same ids.
struct NodeInfo {
  std::string ip;     // dotted IPv4, e.g. "127.0.0.1"
  uint16_t port = 0;

  // (ipv4 as a 32-bit number) << 16 | port. 0 when ip is not a valid IPv4.
  uint64_t id() const;
  // "ip:port".
  std::string ToString() const;

  // Parses "ip:port". Returns InvalidArgument with the offending text otherwise.
  static Status Parse(const std::string& text, NodeInfo* node);
  // Parses a comma separated list "ip:port,ip:port,...".
  static Status ParseList(const std::string& text, std::vector<NodeInfo>* nodes);

  bool operator==(const NodeInfo& o) const { return ip == o.ip && port == o.port; }
  bool operator!=(const NodeInfo& o) const { return !(*this == o); }
};

class Transport {
 public:
  // Called for every verified incoming message, on a transport thread.
  // `from` is the sender's node id (already checked to be a member).
  // The callback must be quick: queue the message and return.
  using Receiver = std::function<void(uint64_t from, std::string message)>;

  virtual ~Transport();

  // Starts listening and delivering to `receiver`. Call once.
  virtual Status Start(Receiver receiver) = 0;

  // Queues `message` for `to` and returns at once. Returns TooLarge when the
  // message exceeds the transport's maximum frame size, InvalidArgument for
  // an unknown node, Stopped after Stop(); ok does not mean delivered.
  virtual Status Send(uint64_t to, std::string message) = 0;

  // Stops all threads and closes every connection. Idempotent. After it
  // returns the receiver is never called again.
  virtual void Stop() = 0;
};

struct TcpTransportOptions {
  // This node (the address to listen on).
  NodeInfo self;
  // Every member of the cluster, self included. Frames from other senders are
  // dropped and counted.
  std::vector<NodeInfo> nodes;
  // Frames carry the cluster id; frames of another cluster are dropped.
  uint64_t cluster_id = 0;
  // Largest payload accepted or sent, in bytes. Default 64 MiB.
  uint32_t max_frame_bytes = 64u << 20;
  // Reconnect backoff after a failed connect: starts at min, doubles up to max.
  int reconnect_min_ms = 20;
  int reconnect_max_ms = 1000;
  // Bytes queued for one peer before further sends to it are dropped (the
  // peer is slow or down; the protocol retries). Default 64 MiB.
  size_t max_queued_bytes_per_peer = 64u << 20;
};

// Counters of a TCP transport (monotonic, since Start).
struct TransportStats {
  uint64_t frames_sent = 0;
  uint64_t frames_received = 0;
  uint64_t frames_dropped_corrupt = 0;        // bad magic, length or crc32c
  uint64_t frames_dropped_too_large = 0;
  uint64_t frames_dropped_foreign_cluster = 0;
  uint64_t frames_dropped_non_member = 0;
  uint64_t sends_dropped_queue_full = 0;
  uint64_t connections_closed_on_error = 0;
};

class TcpTransport : public Transport {
 public:
  virtual TransportStats stats() const = 0;
};

// Creates a TCP transport. Validates the options (self in nodes, valid
// addresses, sane limits); does not bind until Start().
Status NewTcpTransport(const TcpTransportOptions& options, std::unique_ptr<TcpTransport>* out);

}  // namespace chorus

#endif  // CHORUS_TRANSPORT_H_
