// TcpPeers' address book (see tcp_peers.h): the Peers by node id, which
// Enqueue (any thread) queues to, SetBook replaces and the loop brings its
// connections in line with (ApplyBook).
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node/frame.h"
#include "node/tcp_peer.h"
#include "node/tcp_peers.h"
#include "utils/mutex.h"

namespace chorus {
namespace tcp {

std::shared_ptr<TcpPeers::Peer> TcpPeers::NewPeer(const NodeInfo& info) {
  auto peer = std::make_shared<Peer>();
  peer->info = info;
  peer->slot = next_slot_++;
  return peer;
}

TcpPeers::FramedPtr TcpPeers::Frame(std::string message) const {
  auto framed = std::make_shared<Framed>();
  framed->header = MakeFrameHeader(options_.cluster_id, self_id_, message);
  framed->payload = std::move(message);
  return framed;
}

Status TcpPeers::Enqueue(uint64_t to, std::string message) {
  return EnqueueBatch({{to, Frame(std::move(message))}});
}

Status TcpPeers::EnqueueBatch(const std::vector<std::pair<uint64_t, FramedPtr>>& sends) {
  // Shared: Sends from many threads go on together; SetBook waits for them.
  ReaderMutexLock bl(&book_mu_);
  // The wake happens under the lock: Stop() passes through book_mu_ after
  // setting the stop flag (Barrier), so no Enqueue can wake the loop once
  // Stop goes on to close the wake descriptor.
  if (stop_->load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
  Status first;
  bool wake = false;
  // A round names a few peers: each is served in one pass over the sends,
  // under its lock once, without sorting or allocating per send.
  std::vector<uint64_t> served;
  for (size_t i = 0; i < sends.size(); ++i) {
    const uint64_t to = sends[i].first;
    if (std::find(served.begin(), served.end(), to) != served.end()) continue;
    served.push_back(to);
    auto it = book_.find(to);
    if (it == book_.end()) {
      if (first.ok()) {
        first = Status::InvalidArgument("node " + std::to_string(to) + " is not a member");
      }
      continue;
    }
    Peer* peer = it->second.get();
    MutexLock l(&peer->mu);
    const bool was_empty = peer->queue.empty();
    for (size_t j = i; j < sends.size(); ++j) {
      if (sends[j].first != to) continue;
      OutFrame frame;
      frame.framed = sends[j].second;
      if (peer->queued_bytes + frame.size() > options_.max_queued_bytes_per_peer) {
        // The peer is slow or down; the protocol retries.
        Counters::Add(&counters_->sends_dropped_queue_full);
        continue;
      }
      peer->queued_bytes += frame.size();
      peer->queue.push_back(std::move(frame));
    }
    if (was_empty && !peer->queue.empty()) wake = true;
  }
  if (wake) wake_();
  return first;
}

Status TcpPeers::SetBook(const std::vector<NodeInfo>& nodes) {
  WriterMutexLock bl(&book_mu_);
  if (stop_->load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
  Book next;
  bool changed = false;
  for (const NodeInfo& n : nodes) {
    const uint64_t id = n.id();
    if (id == self_id_) continue;
    auto old = book_.find(id);
    if (old == book_.end()) {
      next[id] = NewPeer(n);
      changed = true;
      continue;
    }
    Peer* was = old->second.get();
    // The id is the identity; only the address matters here (an IPv4 node
    // named with or without its derived id is the same node).
    if (was->info.host == n.host && was->info.port == n.port) {
      next[id] = old->second;
      continue;
    }
    // Moved: what waits for it goes to the new address.
    std::shared_ptr<Peer> moved = NewPeer(n);
    {
      MutexLock l(&was->mu);
      MutexLock ml(&moved->mu);  // not shared yet: uncontended
      for (const OutFrame& f : was->queue) was->queued_bytes -= f.size();
      moved->queue.swap(was->queue);
      for (const OutFrame& f : moved->queue) moved->queued_bytes += f.size();
    }
    next[id] = std::move(moved);
    changed = true;
  }
  for (auto& [id, peer] : book_) {
    if (next.count(id) != 0) continue;
    // Removed: its frames are dropped (the loop closes its connection).
    MutexLock l(&peer->mu);
    for (const OutFrame& f : peer->queue) peer->queued_bytes -= f.size();
    peer->queue.clear();
    changed = true;
  }
  if (!changed) return Status::OK();
  book_.swap(next);
  book_size_.store(book_.size() + 1, std::memory_order_relaxed);
  book_version_.fetch_add(1, std::memory_order_release);
  wake_();
  return Status::OK();
}

bool TcpPeers::IsMember(uint64_t sender) const {
  if (sender == self_id_) return true;
  ReaderMutexLock bl(&book_mu_);
  return book_.count(sender) != 0;
}

void TcpPeers::Barrier() { WriterMutexLock bl(&book_mu_); }

void TcpPeers::ApplyBook() {
  std::vector<std::shared_ptr<Peer>> current;
  {
    ReaderMutexLock bl(&book_mu_);
    applied_version_ = book_version_.load(std::memory_order_relaxed);
    for (auto& entry : book_) current.push_back(entry.second);
  }
  std::unordered_map<uint64_t, Peer*> by_id;  // the book's Peers, by node id
  for (auto& peer : current) by_id[peer->info.id()] = peer.get();
  for (auto it = live_.begin(); it != live_.end();) {
    Peer* peer = it->second.get();
    auto now_in_book = by_id.find(peer->info.id());
    if (now_in_book != by_id.end() && now_in_book->second == peer) {
      ++it;
      continue;
    }
    if (peer->fd >= 0) {
      // Closing also takes the socket out of the epoll set.
      Counters::Add(&counters_->closed_removed_peer);
      CloseFd(&peer->fd);
    }
    conn_log_.Changed(peer->info, now_in_book == by_id.end()
                                      ? "removed from the address book"
                                      : "moved to " + now_in_book->second->info.ToString());
    it = live_.erase(it);
  }
  for (auto& peer : current) {
    if (live_.count(peer->slot) != 0) continue;
    live_[peer->slot] = peer;
    if (applied_version_ > 1) conn_log_.Changed(peer->info, "added to the address book");
  }
}

}  // namespace tcp
}  // namespace chorus
