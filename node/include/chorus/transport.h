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
#include <utility>
#include <vector>

#include "chorus/logging.h"
#include "chorus/status.h"

namespace chorus {

// A node of the cluster: its address (a host and a port) and its node id.
//
// The node id is the node's identity: the membership, the logs and the wire
// name nodes by id, never by address, so a node keeps its id when it moves
// to another address. Give it explicitly ("7@db3.example:7000"); without
// one, an IPv4 address derives it (see id()), for compatibility.
struct NodeInfo {
  // A dotted IPv4 address ("127.0.0.1"), an IPv6 address ("::1"; written
  // "[::1]:7000" in text) or a host name ("db3.example", resolved when the
  // transport connects or listens).
  std::string host;
  uint16_t port = 0;
  // The explicit node id; 0: derived from an IPv4 host (see id()).
  uint64_t node_id = 0;

  // node_id when set; otherwise, for an IPv4 host, (ipv4 as a 32-bit number)
  // << 16 | port; otherwise 0 (no id: invalid as a member).
  uint64_t id() const;
  // "host:port" ("[v6]:port" for IPv6), prefixed with "id@" when node_id is
  // set: the text Parse reads back.
  std::string ToString() const;

  // ok when the node can be a member: host is a dotted IPv4 address, an
  // IPv6 address (without brackets) or a host name (see Parse), port != 0,
  // and id() != 0. InvalidArgument naming the node otherwise.
  Status Validate() const;

  // Parses "[id@]host:port" (host: IPv4, "[IPv6]" or a host name; id: a
  // decimal number >= 1). Returns InvalidArgument with the offending text
  // otherwise, and for a host name or IPv6 address without an id. A host
  // name is letters, digits, '-' and '.': labels of 1..63 characters that
  // neither start nor end with '-', 253 characters at most, and a last label
  // that is not all digits (so a mistyped IPv4 address such as "1.2.3" is
  // refused, not taken for a name). An IPv6 address is stored without its
  // brackets, in its canonical form (as inet_ntop writes it: "[0::1]" is
  // stored "::1"); a host name is stored as written.
  static Status Parse(const std::string& text, NodeInfo* node);
  // Parses a comma separated list of the above; ids must be unique, and so
  // must addresses (two ids at one address is a configuration mistake).
  static Status ParseList(const std::string& text, std::vector<NodeInfo>* nodes);

  bool operator==(const NodeInfo& o) const {
    return host == o.host && port == o.port && node_id == o.node_id;
  }
  bool operator!=(const NodeInfo& o) const { return !(*this == o); }
};

// Messages handed to Transport::SendBatch together: each message stored
// once, however many nodes it goes to (an accept request to every acceptor
// carries the same value).
struct MessageBatch {
  std::vector<std::string> messages;
  // (node id, index into `messages`), in the order they are to be sent.
  std::vector<std::pair<uint64_t, size_t>> sends;

  // Appends a message and returns its index for AddSend.
  size_t Add(std::string message) {
    messages.push_back(std::move(message));
    return messages.size() - 1;
  }
  // Sends messages[message] to `to`. REQUIRES: message < messages.size().
  void AddSend(uint64_t to, size_t message) { sends.emplace_back(to, message); }
  bool empty() const { return sends.empty(); }
};

class Transport {
 public:
  // Called for every verified incoming message, on a transport thread.
  // `from` is the sender's node id as the transport established it (checked
  // to be a member; never 0). The node drops, and counts, a message whose own
  // sender field names another node, so a member cannot speak for another.
  // The callback must be quick: queue the message and return.
  using Receiver = std::function<void(uint64_t from, std::string message)>;

  virtual ~Transport();

  // Starts listening and delivering to `receiver`. Call once.
  virtual Status Start(Receiver receiver) = 0;

  // Queues `message` for `to` and returns at once. Returns TooLarge when the
  // message exceeds the transport's maximum frame size, InvalidArgument for
  // an unknown node, Stopped after Stop(); ok does not mean delivered.
  virtual Status Send(uint64_t to, std::string message) = 0;

  // Queues every send of `batch` as Send would, in the batch's order (per
  // node, the order on the wire), and returns at once. A transport may use
  // the batch to do less per message: the TCP transport hands all of a
  // node's messages to its I/O thread at once (one wake-up, written
  // together with sendmsg) and frames a message sent to several nodes once.
  // Returns the first error Send would have returned (a message too large,
  // an unknown node, Stopped; InvalidArgument for a send whose index names
  // no message); the other sends are queued all the same. The
  // default calls Send for each (a copy of the message each, the last
  // moved), so every transport supports it.
  virtual Status SendBatch(MessageBatch batch);

  // Stops all threads and closes every connection. Idempotent. After it
  // returns the receiver is never called again.
  virtual void Stop() = 0;

  // Replaces the address book: the set of nodes this transport sends to and
  // accepts frames from. The membership of a cluster changes at run time,
  // so the node calls this whenever it learns another set (the union of its
  // groups' members); it may be called often, with the same set again: only
  // the differences act. Self may be in the list and is ignored (a node
  // always reaches itself). Compared with the previous book:
  //   - a new peer is sent to (connected lazily, as the others) and its
  //     frames are accepted;
  //   - a peer whose address changed is reconnected to the new address
  //     (frames queued and not yet written go there);
  //   - a removed peer's connections are closed and the frames queued for
  //     it dropped; Send to it returns InvalidArgument from then on; frames
  //     whose header names a sender outside the book are dropped and counted
  //     (TransportStats::frames_dropped_non_member) before their payload is
  //     read.
  // Thread-safe against concurrent Send, SetPeers and the transport's own
  // threads. Returns InvalidArgument (and keeps the previous book) when an
  // entry is invalid (see NodeInfo::Validate) or two entries share an id;
  // Stopped after Stop(). The default returns NotSupported, so a transport
  // written before membership could change keeps compiling (its members
  // are then fixed).
  virtual Status SetPeers(const std::vector<NodeInfo>& peers);
};

struct TcpTransportOptions {
  // This node: its id, and the address to listen on. A host name is
  // resolved when Start() listens (getaddrinfo; it may block there): the
  // first of its addresses that can be bound is used.
  NodeInfo self;
  // The initial address book (see Transport::SetPeers): the nodes sent to
  // and accepted from. Self may be listed (with self's address) and is
  // ignored. Frames from other senders are dropped and counted. A peer's
  // host name is resolved on a thread of the transport each time it is
  // connected to (never in Send): the addresses are tried in turn, one per
  // connect attempt, and once all have failed the name is resolved again. A
  // failed resolution counts as a failed connect (retried after the
  // backoff).
  std::vector<NodeInfo> nodes;
  // Frames carry the cluster id; frames of another cluster are dropped.
  uint64_t cluster_id = 0;
  // Authenticates every frame with HMAC-SHA256 under this secret, with
  // replay protection (see Options::cluster_secret; the design is in
  // node/frame_auth.h). Empty (the default): off, and the wire is as without
  // it. When set, at least 16 bytes, and the same on every member: a node
  // with another secret, or none, is refused both ways.
  std::string cluster_secret;
  // Largest payload accepted or sent, in bytes. Default 64 MiB.
  uint32_t max_frame_bytes = 64u << 20;
  // Reconnect backoff after a failed connect or a lost connection: starts at
  // min and doubles up to max. It starts again from min only after a
  // connection stayed up for reconnect_max_ms (a peer that accepts and closes
  // at once is not retried every reconnect_min_ms).
  int reconnect_min_ms = 20;
  int reconnect_max_ms = 1000;
  // A non-blocking connect still pending after this long is abandoned and
  // retried after the backoff. Default 3 s.
  int connect_timeout_ms = 3000;
  // Every socket (outgoing and accepted) gets SO_KEEPALIVE with short probes
  // and TCP_USER_TIMEOUT = this, so a peer that vanished without a reset (host
  // down, network cut) breaks the connection within about this long instead
  // of leaving a "connected" socket behind. Default 10 s; 0 turns it off.
  int dead_peer_timeout_ms = 10000;
  // Accepted connections open at once; further ones are accepted and closed
  // at once (and counted). 0 (the default) means 4 * (the nodes in the
  // current address book, self included) + 16: the limit follows SetPeers.
  int max_incoming_connections = 0;
  // An accepted connection that has not delivered a complete frame header
  // that passed the identity checks (cluster id, sender is a member) within
  // this long after it was accepted is closed and counted, so silent or
  // stalled non-members cannot hold max_incoming_connections slots forever.
  // A connection is exempt once one header passed (it is then a member's and
  // may stay idle). Checked by a coarse periodic scan: a connection may stay
  // up to about a quarter of this longer. Default 5 s; 0 turns it off.
  int header_timeout_ms = 5000;
  // Bytes queued for one peer before further sends to it are dropped (the
  // peer is slow or down; the protocol retries). Default 64 MiB.
  size_t max_queued_bytes_per_peer = 64u << 20;
  // Receives the transport's info lines: outgoing connections up and down,
  // rate-limited per peer (see tcp_conn_log.h). Empty: none are logged.
  LogHook log_hook;
  LogLevel log_level = LogLevel::kInfo;
};

// Counters of a TCP transport (monotonic, since Start).
struct TransportStats {
  uint64_t frames_sent = 0;
  uint64_t frames_received = 0;
  uint64_t bytes_sent = 0;      // written to sockets (frame headers included)
  uint64_t bytes_received = 0;  // read from sockets
  // Outgoing connections established, and established ones lost (each loss
  // is followed by reconnect attempts with the backoff).
  uint64_t connects = 0;
  uint64_t disconnects = 0;
  uint64_t frames_dropped_corrupt = 0;        // bad magic, length or crc32c
  uint64_t frames_dropped_too_large = 0;
  // The identity checks run on the header, before its payload is read.
  uint64_t frames_dropped_foreign_cluster = 0;
  uint64_t frames_dropped_non_member = 0;
  // With a cluster secret: frames whose HMAC did not verify (forged, made
  // with another secret, replayed, or from a node without the secret); each
  // closes its connection.
  uint64_t frames_dropped_bad_mac = 0;
  uint64_t sends_dropped_queue_full = 0;
  // Incoming connections closed for a bad frame (any of the drops above).
  uint64_t connections_closed_on_error = 0;
  // Incoming connections closed at once: max_incoming_connections were open.
  uint64_t connections_rejected_over_limit = 0;
  // accept() failed for lack of descriptors or memory (EMFILE, ENFILE,
  // ENOBUFS, ENOMEM); accepting pauses briefly each time (the pending
  // connections wait in the backlog) instead of spinning.
  uint64_t accept_failures = 0;
  // Connections (incoming or outgoing) closed because epoll_ctl refused them
  // (e.g. ENOMEM, ENOSPC); the node keeps running.
  uint64_t connections_closed_epoll_error = 0;
  // Outgoing connects abandoned after connect_timeout_ms.
  uint64_t connect_timeouts = 0;
  // With a cluster secret: outgoing connections closed because the peer's
  // challenge (its connection nonce) was malformed or did not arrive within
  // connect_timeout_ms (a peer without the secret sends none).
  uint64_t auth_challenge_failures = 0;
  // Connections broken by the dead-peer detection (ETIMEDOUT: keepalive
  // probes or TCP_USER_TIMEOUT expired).
  uint64_t connections_timed_out = 0;
  // Resolutions of a peer's host name that failed or gave no address (each
  // counts as a failed connect).
  uint64_t resolve_failures = 0;
  // Connections closed because their peer left the address book (outgoing,
  // and incoming ones whose sender left it).
  uint64_t connections_closed_removed_peer = 0;
  // Incoming connections closed because no verified frame header arrived
  // within header_timeout_ms of their accept.
  uint64_t connections_closed_header_timeout = 0;
};

class TcpTransport : public Transport {
 public:
  virtual TransportStats stats() const = 0;
};

// Creates a TCP transport. Validates the options (valid addresses, unique
// ids, self listed with its own address if at all, sane limits); does not
// bind until Start().
Status NewTcpTransport(const TcpTransportOptions& options, std::unique_ptr<TcpTransport>* out);

}  // namespace chorus

#endif  // CHORUS_TRANSPORT_H_
