// CheckpointTransfer, the receive side (receive thread only): FETCH one
// chunk at a time, check each one's crc32c, write it at its offset into a
// staging dir, time out and resume, switch peers, restart on a new
// instance, commit the whole checkpoint and hand it to the group.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "node/checkpoint_transfer.h"
#include "node/checkpoint_transfer_internal.h"
#include "node/fs_util.h"
#include "utils/crc32c.h"

namespace chorus {

namespace {

Status PwriteAll(int fd, const char* data, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t w = pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::IOError("write " + path + ": " + std::strerror(errno));
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

}  // namespace

void CheckpointTransfer::HandleRequest(const Job& job) {
  GroupState* g = FindGroup(job.group);
  if (g->receive) return;  // cannot happen: `running` admits one Request at a time
  auto r = std::make_unique<Receive>();
  r->id = ++next_transfer_id_;
  r->above = job.above;
  r->peers.push_back(job.from);
  for (uint64_t p : options_.peers) {
    if (p != job.from) r->peers.push_back(p);
  }
  Status s = g->store->BeginStaging(&r->staging);
  if (!s.ok()) {
    CHORUS_LOG(logger_, kWarning, "group %u: cannot receive a checkpoint: %s", g->group,
               s.ToString().c_str());
    g->running.store(false, std::memory_order_release);
    return;
  }
  CHORUS_LOG(logger_, kInfo, "group %u: fetching a checkpoint above instance %llu from node %llu",
             g->group, static_cast<unsigned long long>(job.above),
             static_cast<unsigned long long>(job.from));
  g->receive = std::move(r);
  SendFetch(g);
}

void CheckpointTransfer::SendFetch(GroupState* g) {
  Receive* r = g->receive.get();
  CheckpointMessage m = Header(CheckpointMessage::Type::kFetch, g->group, r->id);
  m.instance = r->have_manifest ? r->manifest.instance : 0;
  m.above = r->above;
  m.offset = r->offset;
  r->deadline = Clock::now() + std::chrono::milliseconds(options_.fetch_timeout_ms);
  Status s = transport_->Send(r->peer(), EncodeCheckpointMessage(m));
  if (!s.ok()) {
    CHORUS_LOG(logger_, kDebug, "group %u: checkpoint FETCH: %s", g->group, s.ToString().c_str());
  }
}

void CheckpointTransfer::CheckTimeouts(Clock::time_point now) {
  for (auto& [index, g] : groups_) {
    if (g->receive && now >= g->receive->deadline) {
      Count(&timeouts_);
      Fail(g.get(), /*count_timeout=*/true);
    }
  }
}

void CheckpointTransfer::NextPeer(GroupState* g) {
  Receive* r = g->receive.get();
  r->peer_index = (r->peer_index + 1) % r->peers.size();
  r->failures = 0;
  Count(&peer_switches_);
}

void CheckpointTransfer::Fail(GroupState* g, bool /*count_timeout*/) {
  Receive* r = g->receive.get();
  ++r->failures;
  ++r->total_failures;
  // Every peer failed several times in a row with no progress: give up; the
  // learner asks again on its next tick and the group requests anew.
  const size_t limit = static_cast<size_t>(options_.failures_per_peer) * r->peers.size() * 3;
  if (static_cast<size_t>(r->total_failures) >= limit) {
    CHORUS_LOG(logger_, kWarning, "group %u: checkpoint transfer gave up after %d failures",
               g->group, r->total_failures);
    Finish(g, /*abort=*/true);
    return;
  }
  if (r->failures >= options_.failures_per_peer) NextPeer(g);
  SendFetch(g);
}

void CheckpointTransfer::Finish(GroupState* g, bool abort) {
  if (abort && g->receive && !g->receive->staging.empty()) g->store->Abort(g->receive->staging);
  g->receive.reset();
  g->instance.store(0, std::memory_order_relaxed);
  g->done.store(0, std::memory_order_relaxed);
  g->total.store(0, std::memory_order_relaxed);
  g->running.store(false, std::memory_order_release);
}

void CheckpointTransfer::PublishProgress(GroupState* g) {
  const Receive* r = g->receive.get();
  g->instance.store(r->have_manifest ? r->manifest.instance : 0, std::memory_order_relaxed);
  g->done.store(r->offset, std::memory_order_relaxed);
  g->total.store(r->have_manifest ? r->manifest.total_bytes() : 0, std::memory_order_relaxed);
}

Status CheckpointTransfer::AcceptManifest(GroupState* g, const CheckpointMessage& msg) {
  Receive* r = g->receive.get();
  CheckpointManifest m;
  Status s = CheckpointManifest::Decode(msg.manifest, &m);
  if (!s.ok()) return s;
  if (m.cluster_id != options_.cluster_id || m.group != g->group) {
    return Status::Corruption("manifest of another cluster or group");
  }
  if (m.instance != msg.instance || msg.offset != 0) {
    return Status::Corruption("manifest disagrees with its chunk");
  }
  if (m.instance <= r->above) return Status::Corruption("checkpoint not above what we have");
  if (m.files.size() > kMaxCheckpointFiles) {
    return Status::Corruption("manifest lists too many files");
  }
  std::set<std::string> paths;
  uint64_t total = 0;
  for (const CheckpointFile& f : m.files) {
    if (!IsCleanCheckpointPath(f.path) || !paths.insert(f.path).second) {
      return Status::Corruption("manifest names a bad or repeated path");
    }
    if (f.size > UINT64_MAX - total) return Status::Corruption("manifest sizes overflow");
    total += f.size;
  }
  // A new instance (first, or the sender no longer has the one we were
  // fetching): start over in a fresh staging dir.
  if (r->have_manifest) {
    Count(&restarts_);
    g->store->Abort(r->staging);
    r->staging.clear();
    r->have_manifest = false;
    s = g->store->BeginStaging(&r->staging);
    if (!s.ok()) return s;
  }
  // Create every file now (an empty one gets no chunk).
  for (const CheckpointFile& f : m.files) {
    const std::string path = r->staging + "/" + f.path;
    s = CreateDirs(path.substr(0, path.rfind('/')));
    if (!s.ok()) return s;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::IOError("create " + path + ": " + std::strerror(errno));
    close(fd);
  }
  r->manifest = std::move(m);
  r->have_manifest = true;
  r->offset = 0;
  return Status::OK();
}

Status CheckpointTransfer::WriteChunk(GroupState* g, const std::string& data) {
  Receive* r = g->receive.get();
  uint64_t offset = r->offset;
  size_t at = 0;
  uint64_t start = 0;
  for (const CheckpointFile& f : r->manifest.files) {
    if (at == data.size()) break;
    const uint64_t end = start + f.size;
    if (offset < end) {
      const uint64_t in_file = offset - start;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(end - offset, data.size() - at));
      const std::string path = r->staging + "/" + f.path;
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return Status::IOError("open " + path + ": " + std::strerror(errno));
      Status s = PwriteAll(fd, data.data() + at, n, in_file, path);
      close(fd);
      if (!s.ok()) return s;
      at += n;
      offset += n;
    }
    start = end;
  }
  return Status::OK();
}

bool CheckpointTransfer::Answers(uint64_t from, const CheckpointMessage& msg) {
  const Receive* r = FindGroup(msg.group)->receive.get();
  if (r != nullptr && msg.transfer_id == r->id && from == r->peer()) return true;
  Count(&stale_);  // another transfer's, or from a peer we no longer ask
  return false;
}

void CheckpointTransfer::HandleChunk(uint64_t from, const CheckpointMessage& msg) {
  GroupState* g = FindGroup(msg.group);
  Receive* r = g->receive.get();  // the caller checked: msg answers our current FETCH
  const bool new_instance =
      !msg.manifest.empty() && (!r->have_manifest || msg.instance != r->manifest.instance);
  if (new_instance) {
    Status s = AcceptManifest(g, msg);
    if (!s.ok()) {
      Count(&malformed_);
      CHORUS_LOG(logger_, kWarning, "group %u: checkpoint from node %llu refused: %s", g->group,
                 static_cast<unsigned long long>(from), s.ToString().c_str());
      if (s.IsIOError()) {  // our disk, not the peer: give up; the learner asks again
        Finish(g, /*abort=*/true);
        return;
      }
      Fail(g, false);
      return;
    }
  }
  if (!r->have_manifest || msg.instance != r->manifest.instance || msg.offset != r->offset) {
    Count(&stale_);  // a late reply to an earlier FETCH; the current one is still out
    return;
  }
  const uint64_t total = r->manifest.total_bytes();
  if (crc32c::Value(msg.data) != msg.crc) {
    Count(&bad_chunks_);
    CHORUS_LOG(logger_, kWarning, "group %u: corrupt checkpoint chunk at offset %llu from node %llu",
               g->group, static_cast<unsigned long long>(msg.offset),
               static_cast<unsigned long long>(from));
    Fail(g, false);
    return;
  }
  if (msg.data.size() > total - r->offset || (msg.data.empty() && r->offset < total)) {
    Count(&malformed_);
    Fail(g, false);
    return;
  }
  Status s = WriteChunk(g, msg.data);
  if (!s.ok()) {
    CHORUS_LOG(logger_, kWarning, "group %u: writing a checkpoint chunk: %s", g->group,
               s.ToString().c_str());
    Finish(g, /*abort=*/true);
    return;
  }
  Count(&chunks_received_);
  r->offset += msg.data.size();
  r->failures = 0;
  r->total_failures = 0;
  r->nones = 0;
  PublishProgress(g);
  if (r->offset < total) {
    SendFetch(g);
    return;
  }
  // Every byte is in: the store checks each file against the sender's
  // manifest, syncs and renames. Only then does the group hear of it.
  CheckpointManifest m = r->manifest;
  s = g->store->Commit(r->staging, &m);
  if (!s.ok()) {
    CHORUS_LOG(logger_, kWarning, "group %u: received checkpoint %llu failed verification: %s",
               g->group, static_cast<unsigned long long>(m.instance), s.ToString().c_str());
    Count(&restarts_);
    g->store->Abort(r->staging);
    r->staging.clear();
    r->have_manifest = false;
    r->offset = 0;
    s = g->store->BeginStaging(&r->staging);
    if (!s.ok()) {
      Finish(g, /*abort=*/false);
      return;
    }
    NextPeer(g);
    SendFetch(g);
    return;
  }
  r->staging.clear();  // it is the committed checkpoint now
  g->received.fetch_add(1, std::memory_order_relaxed);
  CHORUS_LOG(logger_, kInfo, "group %u: received checkpoint %llu (%llu bytes) from node %llu",
             g->group, static_cast<unsigned long long>(m.instance),
             static_cast<unsigned long long>(total), static_cast<unsigned long long>(from));
  Finish(g, /*abort=*/false);
  if (g->deliver) g->deliver(m);
}

void CheckpointTransfer::HandleNone(uint64_t from, const CheckpointMessage& msg) {
  GroupState* g = FindGroup(msg.group);
  Receive* r = g->receive.get();  // the caller checked: msg answers our current FETCH
  Count(&nones_);
  CHORUS_LOG(logger_, kInfo, "group %u: node %llu has no checkpoint to send: %s", g->group,
             static_cast<unsigned long long>(from), msg.reason.c_str());
  if (++r->nones >= r->peers.size()) {
    Finish(g, /*abort=*/true);  // nobody has one; the learner asks again later
    return;
  }
  NextPeer(g);
  SendFetch(g);
}

}  // namespace chorus
