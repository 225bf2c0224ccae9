// CheckpointTransfer between in-process nodes over a fake transport that
// can drop, corrupt or rewrite frames: a whole transfer, a corrupt chunk
// fetched again, a dropped chunk resumed, a silent sender replaced by
// another peer, an instance change restarting the transfer, a hostile
// manifest refused, no checkpoint anywhere, and malformed frames counted.
// Completion is awaited on the Deliver callback, never on a time.
#include "node/checkpoint_transfer.h"

#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "node/checkpoint_store.h"
#include "node/checkpoint_wire.h"
#include "unittest/support/test_util.h"
#include "utils/coding.h"

namespace chorus {
namespace checkpoint_transfer_test {
namespace {

using testing::TempDir;
using testing::WaitUntil;

constexpr uint64_t kCluster = 7;
constexpr uint32_t kGroup = 3;

// What the network does to a frame: true delivers it (maybe altered).
using Filter = std::function<bool(uint64_t from, uint64_t to, std::string* frame)>;

class FakeNet {
 public:
  void Attach(uint64_t id, CheckpointTransfer* t) {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_[id] = t;
  }
  void SetFilter(Filter f) {
    std::lock_guard<std::mutex> lock(mu_);
    filter_ = std::move(f);
  }
  void Deliver(uint64_t from, uint64_t to, std::string frame) {
    CheckpointTransfer* t = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (filter_ && !filter_(from, to, &frame)) return;
      auto it = nodes_.find(to);
      if (it == nodes_.end()) return;
      t = it->second;
    }
    if (frame.size() < 4) return;
    const uint32_t prefix = DecodeFixed32(frame.data());
    t->OnMessage(from, prefix & ~kCheckpointChannel, frame.substr(4));
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, CheckpointTransfer*> nodes_;
  Filter filter_;
};

class FakeTransport : public Transport {
 public:
  FakeTransport(FakeNet* net, uint64_t self) : net_(net), self_(self) {}
  Status Start(Receiver) override { return Status::OK(); }
  Status Send(uint64_t to, std::string message) override {
    net_->Deliver(self_, to, std::move(message));
    return Status::OK();
  }
  void Stop() override {}

 private:
  FakeNet* const net_;
  const uint64_t self_;
};

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One node: its store, its transfer, and what it was delivered.
struct TestNode {
  TestNode(FakeNet* net, uint64_t id, std::vector<uint64_t> peers,
           std::function<void(CheckpointTransferOptions*)> tune)
      : id(id), transport(net, id) {
    EXPECT_TRUE(CheckpointStore::Open(dir.path() + "/g3", kCluster, kGroup, &logger, &store).ok());
    CheckpointTransferOptions o;
    o.cluster_id = kCluster;
    o.self = id;
    o.peers = std::move(peers);
    o.chunk_bytes = 4096;
    o.max_chunk_bytes = 1 << 20;
    o.send_bytes_per_sec = 0;
    o.fetch_timeout_ms = 5000;
    if (tune) tune(&o);
    transfer = std::make_unique<CheckpointTransfer>(o, &transport, &logger);
    transfer->AddGroup(kGroup, store.get(), [this](const CheckpointManifest& m) {
      std::lock_guard<std::mutex> lock(mu);
      delivered.push_back(m);
      cv.notify_all();
    });
    net->Attach(id, transfer.get());
    EXPECT_TRUE(transfer->Start().ok());
  }
  ~TestNode() { transfer->Stop(); }

  // Commits a checkpoint at `instance` holding `files` (path -> bytes).
  void MakeCheckpoint(uint64_t instance, const std::map<std::string, std::string>& files) {
    std::string staging;
    ASSERT_TRUE(store->BeginStaging(&staging).ok());
    for (const auto& [path, bytes] : files) {
      const std::string full = staging + "/" + path;
      for (size_t at = full.find('/', staging.size() + 1); at != std::string::npos;
           at = full.find('/', at + 1)) {
        mkdir(full.substr(0, at).c_str(), 0755);
      }
      std::ofstream(full, std::ios::binary) << bytes;
    }
    CheckpointManifest m;
    m.instance = instance;
    m.chain_checksum = static_cast<uint32_t>(instance * 31);
    ASSERT_TRUE(store->Commit(staging, &m).ok());
  }

  // Waits for the n-th delivered checkpoint (an event, no time asserted).
  bool WaitDelivered(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return delivered.size() >= n; });
  }

  const uint64_t id;
  TempDir dir;
  Logger logger{LogHook(), LogLevel::kError};
  FakeTransport transport;
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<CheckpointTransfer> transfer;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CheckpointManifest> delivered;  // GUARDED_BY(mu)
};

const std::map<std::string, std::string>& SampleFiles() {
  static const auto* files = new std::map<std::string, std::string>{
      {"sm1/data", RandomBytes(50000, 1)},
      {"sm1/sub/more", RandomBytes(9000, 2)},
      {"sm1/empty", ""},
      {"sm2/state", RandomBytes(4096, 3)},
  };
  return *files;
}

// The receiver's store holds `instance` with exactly SampleFiles().
void ExpectReceived(TestNode* n, uint64_t instance) {
  CheckpointManifest m;
  ASSERT_TRUE(n->store->Newest(&m).ok());
  EXPECT_EQ(m.instance, instance);
  EXPECT_EQ(m.chain_checksum, static_cast<uint32_t>(instance * 31));
  for (const auto& [path, bytes] : SampleFiles()) {
    EXPECT_EQ(ReadFile(n->store->DirOf(instance) + "/" + path), bytes) << path;
  }
}

// CHUNK frames (the u8 type right after the u32 prefix).
bool IsChunk(const std::string& frame) {
  return frame.size() > 4 && frame[4] == static_cast<char>(CheckpointMessage::Type::kChunk);
}

TEST(CheckpointTransferTest, WholeTransferArrivesVerified) {
  FakeNet net;
  TestNode a(&net, 1, {2}, nullptr), b(&net, 2, {1}, nullptr);
  a.MakeCheckpoint(100, SampleFiles());
  b.transfer->Request(kGroup, 1, 40);
  b.transfer->Request(kGroup, 1, 40);  // a repeat while it runs is ignored
  ASSERT_TRUE(b.WaitDelivered(1));
  EXPECT_EQ(b.delivered[0].instance, 100u);
  ExpectReceived(&b, 100);
  EXPECT_EQ(b.transfer->Progress(kGroup).received, 1u);
  EXPECT_TRUE(WaitUntil([&] { return a.transfer->Progress(kGroup).sent == 1; }));
  EXPECT_EQ(b.transfer->Progress(kGroup).instance, 0u);  // no transfer running
  const CheckpointTransferStats s = b.transfer->stats();
  EXPECT_EQ(s.chunks_received, (50000u + 9000 + 4096 + 4095) / 4096);
  EXPECT_EQ(s.bad_chunks + s.malformed + s.restarts, 0u);
}

TEST(CheckpointTransferTest, CorruptChunkIsRejectedAndFetchedAgain) {
  FakeNet net;
  TestNode a(&net, 1, {2}, nullptr), b(&net, 2, {1}, nullptr);
  a.MakeCheckpoint(100, SampleFiles());
  int chunks = 0;
  net.SetFilter([&](uint64_t, uint64_t, std::string* frame) {
    if (IsChunk(*frame) && ++chunks == 3) (*frame)[frame->size() - 10] ^= 0x55;  // in its data
    return true;
  });
  b.transfer->Request(kGroup, 1, 0);
  ASSERT_TRUE(b.WaitDelivered(1));
  ExpectReceived(&b, 100);
  EXPECT_EQ(b.transfer->stats().bad_chunks, 1u);
}

TEST(CheckpointTransferTest, DroppedChunkIsResumedAfterTheTimeout) {
  FakeNet net;
  auto fast = [](CheckpointTransferOptions* o) { o->fetch_timeout_ms = 20; };
  TestNode a(&net, 1, {2}, nullptr), b(&net, 2, {1}, fast);
  a.MakeCheckpoint(100, SampleFiles());
  int chunks = 0;
  net.SetFilter([&](uint64_t, uint64_t, std::string* frame) {
    return !(IsChunk(*frame) && ++chunks == 4);
  });
  b.transfer->Request(kGroup, 1, 0);
  ASSERT_TRUE(b.WaitDelivered(1));
  ExpectReceived(&b, 100);
  const CheckpointTransferStats s = b.transfer->stats();
  EXPECT_GE(s.timeouts, 1u);
  EXPECT_EQ(s.restarts, 0u);  // resumed at the same offset, not restarted
}

TEST(CheckpointTransferTest, SilentSenderIsReplacedByAnotherPeer) {
  FakeNet net;
  auto fast = [](CheckpointTransferOptions* o) {
    o->fetch_timeout_ms = 20;
    o->failures_per_peer = 2;
  };
  TestNode a(&net, 1, {2, 3}, nullptr), b(&net, 2, {1, 3}, fast), c(&net, 3, {1, 2}, nullptr);
  a.MakeCheckpoint(100, SampleFiles());
  c.MakeCheckpoint(100, SampleFiles());
  int from_a = 0;
  net.SetFilter([&](uint64_t from, uint64_t, std::string* frame) {
    return !(from == 1 && IsChunk(*frame) && ++from_a > 3);  // node 1 "dies" after 3 chunks
  });
  b.transfer->Request(kGroup, 1, 0);
  ASSERT_TRUE(b.WaitDelivered(1));
  ExpectReceived(&b, 100);
  const CheckpointTransferStats s = b.transfer->stats();
  EXPECT_GE(s.peer_switches, 1u);
  EXPECT_EQ(s.restarts, 0u);  // node 3 has the same instance: resumed there
  EXPECT_TRUE(WaitUntil([&] { return c.transfer->Progress(kGroup).sent == 1; }));
}

TEST(CheckpointTransferTest, NewInstanceOnAnotherPeerRestartsTheTransfer) {
  FakeNet net;
  auto fast = [](CheckpointTransferOptions* o) {
    o->fetch_timeout_ms = 20;
    o->failures_per_peer = 1;
  };
  TestNode a(&net, 1, {2, 3}, nullptr), b(&net, 2, {1, 3}, fast), c(&net, 3, {1, 2}, nullptr);
  a.MakeCheckpoint(100, SampleFiles());
  c.MakeCheckpoint(200, SampleFiles());  // node 3 trimmed on: it only has 200
  int from_a = 0;
  net.SetFilter([&](uint64_t from, uint64_t, std::string* frame) {
    return !(from == 1 && IsChunk(*frame) && ++from_a > 2);
  });
  b.transfer->Request(kGroup, 1, 0);
  ASSERT_TRUE(b.WaitDelivered(1));
  EXPECT_EQ(b.delivered[0].instance, 200u);
  ExpectReceived(&b, 200);
  EXPECT_GE(b.transfer->stats().restarts, 1u);
}

TEST(CheckpointTransferTest, HostileManifestIsRefused) {
  FakeNet net;
  auto fast = [](CheckpointTransferOptions* o) { o->fetch_timeout_ms = 20; };
  TestNode a(&net, 1, {2}, nullptr), b(&net, 2, {1}, fast);
  a.MakeCheckpoint(100, SampleFiles());
  int rewritten = 0;
  net.SetFilter([&](uint64_t, uint64_t, std::string* frame) {
    if (!IsChunk(*frame) || rewritten > 0) return true;
    CheckpointMessage m;
    if (!DecodeCheckpointMessage(frame->data() + 4, frame->size() - 4, 1 << 20, &m).ok()) {
      return true;
    }
    CheckpointManifest manifest;
    if (m.manifest.empty() || !CheckpointManifest::Decode(m.manifest, &manifest).ok()) return true;
    manifest.files[0].path = "../../escaped";
    m.manifest = manifest.Encode();
    *frame = EncodeCheckpointMessage(m);
    ++rewritten;
    return true;
  });
  b.transfer->Request(kGroup, 1, 0);
  ASSERT_TRUE(b.WaitDelivered(1));
  ExpectReceived(&b, 100);
  EXPECT_EQ(b.transfer->stats().malformed, 1u);
  struct stat st;
  EXPECT_NE(stat((b.dir.path() + "/escaped").c_str(), &st), 0);
}

TEST(CheckpointTransferTest, NoCheckpointAnywhereEndsTheTransfer) {
  FakeNet net;
  TestNode a(&net, 1, {2, 3}, nullptr), b(&net, 2, {1, 3}, nullptr), c(&net, 3, {1, 2}, nullptr);
  c.MakeCheckpoint(10, SampleFiles());  // not above what node 2 has
  b.transfer->Request(kGroup, 1, 50);
  ASSERT_TRUE(WaitUntil([&] { return !b.transfer->active(kGroup); }));
  EXPECT_EQ(b.transfer->stats().nones, 2u);
  CheckpointManifest none;
  EXPECT_TRUE(b.store->Newest(&none).IsNotFound());
  // It can be asked again (nothing is stuck).
  a.MakeCheckpoint(100, SampleFiles());
  b.transfer->Request(kGroup, 1, 50);
  ASSERT_TRUE(b.WaitDelivered(1));
  ExpectReceived(&b, 100);
}

TEST(CheckpointTransferTest, MalformedFramesAreDroppedAndCounted) {
  FakeNet net;
  TestNode a(&net, 1, {2}, nullptr);
  a.MakeCheckpoint(100, SampleFiles());
  CheckpointTransfer* t = a.transfer.get();
  t->OnMessage(2, kGroup, "");
  t->OnMessage(2, kGroup, std::string("\x09garbage-of-unknown-type-xxxxxxxxxxxxxxxxxxxx", 40));
  CheckpointMessage fetch;
  fetch.type = CheckpointMessage::Type::kFetch;
  fetch.cluster_id = kCluster;
  fetch.group = kGroup;
  fetch.from = 2;
  fetch.transfer_id = 1;
  std::string good = EncodeCheckpointMessage(fetch).substr(4);
  t->OnMessage(2, kGroup, good.substr(0, good.size() - 1));  // truncated
  t->OnMessage(2, kGroup, good + "x");                       // trailing byte
  t->OnMessage(2, kGroup + 1, good);                         // prefix and field disagree
  CheckpointMessage chunk = fetch;
  chunk.type = CheckpointMessage::Type::kChunk;
  chunk.data = std::string(2 << 20, 'd');  // above max_chunk_bytes
  t->OnMessage(2, kGroup, EncodeCheckpointMessage(chunk).substr(4));
  EXPECT_EQ(t->stats().malformed, 6u);
  t->OnMessage(3, kGroup, good);  // speaks for node 2
  CheckpointMessage foreign = fetch;
  foreign.cluster_id = kCluster + 1;
  t->OnMessage(2, kGroup, EncodeCheckpointMessage(foreign).substr(4));
  EXPECT_EQ(t->stats().foreign, 2u);
  CheckpointMessage other = fetch;
  other.group = kGroup + 5;
  t->OnMessage(2, kGroup + 5, EncodeCheckpointMessage(other).substr(4));
  EXPECT_EQ(t->stats().unknown_group, 1u);
  // A CHUNK / NONE of no running transfer.
  chunk.data = "x";
  t->OnMessage(2, kGroup, EncodeCheckpointMessage(chunk).substr(4));
  EXPECT_TRUE(WaitUntil([&] { return t->stats().stale == 1; }));
  EXPECT_EQ(t->stats().chunks_sent, 0u);
}

TEST(CheckpointWireTest, RoundTripsEveryType) {
  CheckpointMessage m;
  m.type = CheckpointMessage::Type::kChunk;
  m.cluster_id = 1;
  m.group = 2;
  m.from = 3;
  m.transfer_id = 4;
  m.instance = 5;
  m.offset = 6;
  m.crc = 7;
  m.manifest = "man";
  m.data = "data";
  const std::string frame = EncodeCheckpointMessage(m);
  EXPECT_EQ(DecodeFixed32(frame.data()), kCheckpointChannel | 2);
  CheckpointMessage d;
  ASSERT_TRUE(DecodeCheckpointMessage(frame.data() + 4, frame.size() - 4, 100, &d).ok());
  EXPECT_EQ(d.instance, 5u);
  EXPECT_EQ(d.offset, 6u);
  EXPECT_EQ(d.crc, 7u);
  EXPECT_EQ(d.manifest, "man");
  EXPECT_EQ(d.data, "data");
  EXPECT_TRUE(DecodeCheckpointMessage(frame.data() + 4, frame.size() - 4, 3, &d).IsCorruption());
  // Every truncation is refused.
  for (size_t n = 0; n + 4 < frame.size(); ++n) {
    EXPECT_TRUE(DecodeCheckpointMessage(frame.data() + 4, n, 100, &d).IsCorruption()) << n;
  }
  m.type = CheckpointMessage::Type::kNone;
  m.reason = "why";
  const std::string none = EncodeCheckpointMessage(m);
  ASSERT_TRUE(DecodeCheckpointMessage(none.data() + 4, none.size() - 4, 100, &d).ok());
  EXPECT_EQ(d.reason, "why");
}

}  // namespace
}  // namespace checkpoint_transfer_test
}  // namespace chorus
