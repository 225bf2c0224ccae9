// CheckpointTransfer, the send side (send thread only): answer each FETCH
// with one CHUNK read from the group's store (or NONE), pin the checkpoint
// served to a peer until it stops fetching, and keep all transfers together
// under Options::checkpoint_send_bytes_per_sec.
#include <algorithm>
#include <thread>

#include "node/checkpoint_transfer.h"
#include "node/checkpoint_transfer_internal.h"
#include "utils/crc32c.h"

namespace chorus {

void CheckpointTransfer::SendNone(uint64_t to, const CheckpointMessage& fetch,
                                  const std::string& reason) {
  CheckpointMessage m = Header(CheckpointMessage::Type::kNone, fetch.group, fetch.transfer_id);
  m.reason = reason.substr(0, kMaxReasonBytes);
  transport_->Send(to, EncodeCheckpointMessage(m));
}

void CheckpointTransfer::HandleFetch(uint64_t from, const CheckpointMessage& msg) {
  GroupState* g = FindGroup(msg.group);
  const auto key = std::make_pair(msg.group, from);
  auto it = serving_.find(key);
  auto drop = [&] {
    if (it == serving_.end()) return;
    g->store->Unpin(it->second.manifest.instance);
    serving_.erase(it);
    it = serving_.end();
  };
  // Resume what this peer is fetching (pinned, so still there) when it asks
  // for that instance; otherwise serve the newest.
  bool restart = false;
  if (it == serving_.end() || msg.instance == 0 || it->second.manifest.instance != msg.instance) {
    CheckpointManifest newest;
    Status s = g->store->Newest(&newest);
    if (!s.ok() || newest.instance <= msg.above) {
      drop();
      SendNone(from, msg,
               s.ok() ? "newest checkpoint " + std::to_string(newest.instance) +
                            " is not above " + std::to_string(msg.above)
                      : "no checkpoint: " + s.ToString());
      return;
    }
    if (it == serving_.end() || it->second.manifest.instance != newest.instance) {
      // Pin before letting go of the old one: the store may delete an
      // unpinned older checkpoint at any commit.
      s = g->store->Pin(newest.instance);
      if (!s.ok()) {
        drop();
        SendNone(from, msg, "checkpoint went away: " + s.ToString());
        return;
      }
      drop();
      Serving fresh;
      fresh.manifest = std::move(newest);
      it = serving_.emplace(key, std::move(fresh)).first;
    }
    restart = msg.instance != it->second.manifest.instance;
  }
  Serving& sv = it->second;
  sv.last_fetch = Clock::now();
  const uint64_t total = sv.manifest.total_bytes();
  const uint64_t offset = restart ? 0 : msg.offset;
  if (offset > total) {
    SendNone(from, msg, "offset beyond the checkpoint");
    return;
  }
  CheckpointMessage reply = Header(CheckpointMessage::Type::kChunk, msg.group, msg.transfer_id);
  reply.instance = sv.manifest.instance;
  reply.offset = offset;
  Status s = g->store->ReadChunk(sv.manifest, offset, options_.chunk_bytes, &reply.data);
  if (!s.ok()) {
    CHORUS_LOG(logger_, kWarning, "group %u: reading checkpoint %llu for node %llu: %s",
               msg.group, static_cast<unsigned long long>(sv.manifest.instance),
               static_cast<unsigned long long>(from), s.ToString().c_str());
    drop();
    SendNone(from, msg, "cannot read the checkpoint: " + s.ToString());
    return;
  }
  reply.crc = crc32c::Value(reply.data);
  if (offset == 0 || restart) reply.manifest = sv.manifest.Encode();
  const size_t bytes = reply.data.size();
  const bool last = offset + bytes == total;
  Throttle(bytes);
  s = transport_->Send(from, EncodeCheckpointMessage(reply));
  if (!s.ok()) {
    CHORUS_LOG(logger_, kDebug, "group %u: checkpoint CHUNK: %s", msg.group, s.ToString().c_str());
    return;
  }
  Count(&chunks_sent_);
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
  if (last && !sv.counted) {
    sv.counted = true;
    g->sent.fetch_add(1, std::memory_order_relaxed);
    CHORUS_LOG(logger_, kInfo, "group %u: checkpoint %llu sent to node %llu (%llu bytes)",
               msg.group, static_cast<unsigned long long>(sv.manifest.instance),
               static_cast<unsigned long long>(from), static_cast<unsigned long long>(total));
  }
}

void CheckpointTransfer::Throttle(size_t bytes) {
  const uint64_t rate = options_.send_bytes_per_sec;
  if (rate == 0) return;
  // Token bucket holding at most one chunk (the burst); a chunk may take it
  // negative, and the debt is waited off before it is sent.
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  refilled_ = now;
  tokens_ = std::min(tokens_ + elapsed * static_cast<double>(rate),
                     static_cast<double>(std::max<size_t>(options_.chunk_bytes, bytes)));
  tokens_ -= static_cast<double>(bytes);
  if (tokens_ >= 0) return;
  const auto wait = std::chrono::duration<double>(-tokens_ / static_cast<double>(rate));
  MutexLock lock(&mu_);
  // Stop cuts the wait short (the chunk then goes out or fails: harmless).
  send_wake_.WaitFor(&mu_, wait, [this]() REQUIRES(mu_) { return stopping_; });
}

void CheckpointTransfer::UnpinIdle(Clock::time_point now) {
  const auto idle = std::chrono::milliseconds(options_.pin_idle_ms);
  for (auto it = serving_.begin(); it != serving_.end();) {
    if (now - it->second.last_fetch >= idle) {
      groups_[it->first.first]->store->Unpin(it->second.manifest.instance);
      it = serving_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace chorus
