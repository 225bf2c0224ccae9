#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "unittest/support/test_util.h"
#include "unittest/support/transport_inbox.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "chorus/transport.h"
#include "node/frame.h"
#include "node/tcp_transport_testing.h"
#include "utils/coding.h"

namespace chorus {
namespace tcp_transport_test {
namespace {

using testing::CountOpenFds;
using testing::FreePort;
using testing::Inbox;

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr uint64_t kCluster = 4242;
// Generous: the machine running the tests may be loaded.
constexpr auto kDeadline = seconds(30);

bool WaitUntil(const std::function<bool()>& pred) { return testing::WaitUntil(pred, kDeadline); }

class TcpTransportTest : public ::testing::Test {
 protected:
  // Makes n members on free loopback ports.
  void MakeNodes(int n) {
    nodes_.clear();
    for (int i = 0; i < n; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
  }
  TcpTransportOptions OptionsFor(int i) {
    TcpTransportOptions o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = kCluster;
    o.reconnect_min_ms = 5;
    o.reconnect_max_ms = 50;
    return o;
  }
  std::unique_ptr<TcpTransport> Make(const TcpTransportOptions& o) {
    std::unique_ptr<TcpTransport> t;
    Status s = NewTcpTransport(o, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }
  // A raw client socket connected to node i.
  int RawConnect(int i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(nodes_[i].port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(0, connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    return fd;
  }
  static void WriteAll(int fd, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = write(fd, data.data() + off, data.size() - off);
      if (n <= 0) return;  // the other side may close first; that is fine
      off += static_cast<size_t>(n);
    }
  }
  // True when the peer closed the raw socket (read returns 0 or an error).
  static bool ClosedByPeer(int fd) {
    timeval tv{kDeadline.count(), 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char c;
    ssize_t n = read(fd, &c, 1);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
  // Creates transports 0 and 1 from `oa` and `ob`, starts them delivering
  // into the inboxes, and proves the link 0 -> 1 works (probe tag `tag`).
  void StartLinkedPair(const TcpTransportOptions& oa, const TcpTransportOptions& ob,
                       Inbox* inbox_a, Inbox* inbox_b, std::unique_ptr<TcpTransport>* a,
                       std::unique_ptr<TcpTransport>* b, const std::string& tag) {
    *a = Make(oa);
    *b = Make(ob);
    ASSERT_TRUE(*a && *b);
    ASSERT_TRUE((*a)->Start(inbox_a->receiver()).ok());
    ASSERT_TRUE((*b)->Start(inbox_b->receiver()).ok());
    ExpectLinkWorks(a->get(), inbox_b, 1, tag);
  }
  // Sends from a to b until b received a message, proving the link works.
  void ExpectLinkWorks(TcpTransport* a, Inbox* inbox_b, int b, const std::string& tag) {
    int i = 0;
    const std::string prefix = "probe-" + tag + "-";
    ASSERT_TRUE(WaitUntil([&] {
      EXPECT_TRUE(a->Send(nodes_[b].id(), prefix + std::to_string(i++)).ok());
      for (auto& m : inbox_b->Take()) {
        if (m.second.compare(0, prefix.size(), prefix) == 0) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
      return false;
    })) << tag;
  }

  std::vector<NodeInfo> nodes_;
};

// The deterministic content of message `seq` from a to b.
std::string MessageBody(int a, int b, int seq, size_t size) {
  std::string head = std::to_string(a) + ">" + std::to_string(b) + "#" + std::to_string(seq) + ":";
  std::string s = head;
  std::mt19937 rng(static_cast<uint32_t>(a * 1000003 + b * 1009 + seq));
  while (s.size() < size) s.push_back(static_cast<char>(rng() & 0xFF));
  if (size >= head.size()) s.resize(size);
  return s;
}

TEST_F(TcpTransportTest, ThreeNodesExchangeManyMessagesIntact) {
  MakeNodes(3);
  Inbox inbox[3];
  std::vector<std::unique_ptr<TcpTransport>> ts;
  for (int i = 0; i < 3; ++i) {
    ts.push_back(Make(OptionsFor(i)));
    ASSERT_TRUE(ts[i]->Start(inbox[i].receiver()).ok());
  }
  const size_t sizes[] = {0, 1, 7, 100, 4096, 65536, 100000, 1 << 20};
  constexpr int kPerPair = 60;
  std::map<std::pair<int, int>, std::vector<std::string>> sent;
  // Each node sends from its own thread, to everyone including itself.
  std::vector<std::thread> senders;
  std::mutex sent_mu;
  for (int a = 0; a < 3; ++a) {
    senders.emplace_back([&, a] {
      for (int seq = 0; seq < kPerPair; ++seq) {
        for (int b = 0; b < 3; ++b) {
          // 1 MiB only now and then, to keep the test quick.
          size_t size = sizes[seq % 8];
          if (size == (1u << 20) && seq % 40 != 7) size = 3000;
          std::string body = MessageBody(a, b, seq, size);
          {
            std::lock_guard<std::mutex> l(sent_mu);
            sent[{a, b}].push_back(body);
          }
          ASSERT_TRUE(ts[a]->Send(nodes_[b].id(), std::move(body)).ok());
        }
      }
    });
  }
  for (auto& th : senders) th.join();
  for (int b = 0; b < 3; ++b) {
    ASSERT_TRUE(WaitUntil([&] { return inbox[b].size() >= 3 * kPerPair; }))
        << "node " << b << " got " << inbox[b].size();
  }
  for (int b = 0; b < 3; ++b) {
    std::map<int, std::vector<std::string>> got;
    for (auto& m : inbox[b].Take()) {
      int a = -1;
      for (int k = 0; k < 3; ++k) {
        if (nodes_[k].id() == m.first) a = k;
      }
      ASSERT_GE(a, 0) << "unknown sender " << m.first;
      got[a].push_back(m.second);
    }
    for (int a = 0; a < 3; ++a) {
      // One connection per pair: order is kept too.
      const auto& want = sent[std::make_pair(a, b)];
      ASSERT_EQ(want.size(), got[a].size()) << a << " -> " << b;
      for (size_t k = 0; k < want.size(); ++k) {
        // Compare without printing megabytes on a failure.
        EXPECT_TRUE(want[k] == got[a][k]) << a << " -> " << b << " message " << k;
      }
    }
  }
  for (int i = 0; i < 3; ++i) {
    TransportStats s = ts[i]->stats();
    EXPECT_EQ(2u * kPerPair, s.frames_sent) << i;
    EXPECT_EQ(2u * kPerPair, s.frames_received) << i;
    EXPECT_EQ(0u, s.frames_dropped_corrupt + s.connections_closed_on_error +
                      s.sends_dropped_queue_full);
  }
}

TEST_F(TcpTransportTest, SendsToADownPeerDoNotBlockAndItIsReachedOnceUp) {
  MakeNodes(2);
  Inbox inbox_a, inbox_b, inbox_b2;  // outlive the transports
  auto a = Make(OptionsFor(0));
  ASSERT_TRUE(a->Start(inbox_a.receiver()).ok());
  // b is down: sends return at once and a keeps retrying in the background.
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(a->Send(nodes_[1].id(), "early-" + std::to_string(i)).ok());
  }
  std::this_thread::sleep_for(milliseconds(100));  // several failed connects
  EXPECT_EQ(0u, a->stats().frames_sent);
  auto b = Make(OptionsFor(1));
  ASSERT_TRUE(b->Start(inbox_b.receiver()).ok());
  ExpectLinkWorks(a.get(), &inbox_b, 1, "after-start");
  ExpectLinkWorks(b.get(), &inbox_a, 0, "reverse");

  // b restarts: a reconnects again.
  b->Stop();
  b.reset();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a->Send(nodes_[1].id(), "while-down").ok());
  b = Make(OptionsFor(1));
  ASSERT_TRUE(WaitUntil([&] { return b->Start(inbox_b2.receiver()).ok(); }));
  ExpectLinkWorks(a.get(), &inbox_b2, 1, "after-restart");
}

TEST_F(TcpTransportTest, QueueForADownPeerIsBounded) {
  MakeNodes(2);
  Inbox inbox;
  TcpTransportOptions o = OptionsFor(0);
  o.max_queued_bytes_per_peer = 10000;
  auto a = Make(o);
  ASSERT_TRUE(a->Start(inbox.receiver()).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->Send(nodes_[1].id(), std::string(1000, 'q')).ok());
  // At most 10000 bytes (fewer than 10 frames with headers) were kept.
  EXPECT_GE(a->stats().sends_dropped_queue_full, 90u);
  EXPECT_LT(a->stats().sends_dropped_queue_full, 100u);
}

TEST_F(TcpTransportTest, GarbageIsDroppedAndTheNodeKeepsWorking) {
  MakeNodes(2);
  Inbox inbox_a, inbox_b;
  std::unique_ptr<TcpTransport> a, b;
  ASSERT_NO_FATAL_FAILURE(
      StartLinkedPair(OptionsFor(0), OptionsFor(1), &inbox_a, &inbox_b, &a, &b, "before"));
  const size_t received_before = inbox_b.size();

  // Random bytes.
  int raw = RawConnect(1);
  std::mt19937 rng(7);
  std::string garbage(5000, '\0');
  for (auto& c : garbage) c = static_cast<char>(rng() & 0xFF);
  WriteAll(raw, garbage);
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_corrupt == 1; }));

  // A well-formed header with a bad crc.
  raw = RawConnect(1);
  std::string frame = EncodeFrame(kCluster, nodes_[0].id(), "tampered");
  frame.back() ^= 1;
  WriteAll(raw, frame);
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_corrupt == 2; }));

  // A header announcing a payload above the limit: rejected from the header.
  raw = RawConnect(1);
  std::string header = EncodeFrameHeader(kCluster, nodes_[0].id(), "");
  EncodeFixed32(&header[4], 0xFFFFFFF0u);
  WriteAll(raw, header);
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_too_large == 1; }));

  TransportStats s = b->stats();
  EXPECT_EQ(3u, s.connections_closed_on_error);
  EXPECT_FALSE(inbox_b.Contains("tampered"));
  // Only probes arrived, nothing from the garbage.
  for (auto& m : inbox_b.Take()) EXPECT_EQ(0u, m.second.rfind("probe-", 0)) << m.second;
  EXPECT_GE(inbox_b.size(), received_before);
  // b still talks to a, both ways.
  ExpectLinkWorks(a.get(), &inbox_b, 1, "after-garbage");
  ExpectLinkWorks(b.get(), &inbox_a, 0, "after-garbage-reverse");
}

TEST_F(TcpTransportTest, ForeignClusterAndNonMemberFramesAreDropped) {
  MakeNodes(2);
  Inbox inbox_a, inbox_b;
  auto b = Make(OptionsFor(1));
  ASSERT_TRUE(b->Start(inbox_b.receiver()).ok());

  // A valid frame from a member on a raw socket is delivered: the raw path
  // works, so the drops below are the checks at work.
  int raw = RawConnect(1);
  WriteAll(raw, EncodeFrame(kCluster, nodes_[0].id(), "legit"));
  ASSERT_TRUE(WaitUntil([&] { return inbox_b.Contains("legit"); }));

  // Another cluster, on the same connection: dropped, connection closed.
  WriteAll(raw, EncodeFrame(kCluster + 1, nodes_[0].id(), "foreign"));
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_foreign_cluster == 1; }));

  // A sender that is not a member.
  raw = RawConnect(1);
  const uint64_t stranger = NodeInfo{"10.9.9.9", 999}.id();
  WriteAll(raw, EncodeFrame(kCluster, stranger, "stranger"));
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_non_member == 1; }));

  // A whole transport of another cluster gets nothing through either.
  TcpTransportOptions other = OptionsFor(0);
  other.cluster_id = kCluster + 1;
  auto a = Make(other);
  ASSERT_TRUE(a->Start(inbox_a.receiver()).ok());
  ASSERT_TRUE(a->Send(nodes_[1].id(), "from-other-cluster").ok());
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_foreign_cluster >= 2; }));

  TransportStats s = b->stats();
  EXPECT_EQ(1u, s.frames_received);
  EXPECT_EQ(0u, s.frames_dropped_corrupt);
  EXPECT_FALSE(inbox_b.Contains("foreign"));
  EXPECT_FALSE(inbox_b.Contains("stranger"));
  EXPECT_FALSE(inbox_b.Contains("from-other-cluster"));
  ASSERT_EQ(1u, inbox_b.size());
  EXPECT_EQ(nodes_[0].id(), inbox_b.Take()[0].first);
}

TEST_F(TcpTransportTest, SendChecksItsArguments) {
  MakeNodes(2);
  Inbox inbox;
  TcpTransportOptions o = OptionsFor(0);
  o.max_frame_bytes = 1000;
  auto a = Make(o);
  ASSERT_TRUE(a->Start(inbox.receiver()).ok());
  EXPECT_TRUE(a->Send(nodes_[1].id(), std::string(1001, 'x')).IsTooLarge());
  EXPECT_TRUE(a->Send(nodes_[0].id(), std::string(1001, 'x')).IsTooLarge());
  EXPECT_TRUE(a->Send(nodes_[1].id(), std::string(1000, 'x')).ok());
  EXPECT_TRUE(a->Send(NodeInfo{"127.0.0.1", 1}.id(), "x").IsInvalidArgument());
  EXPECT_TRUE(a->Start(inbox.receiver()).IsInvalidArgument());  // twice
  a->Stop();
  EXPECT_TRUE(a->Send(nodes_[1].id(), "x").IsStopped());
  EXPECT_TRUE(a->Send(nodes_[0].id(), "x").IsStopped());
  EXPECT_TRUE(a->Start(inbox.receiver()).IsStopped());
}

TEST_F(TcpTransportTest, SendToSelfIsDelivered) {
  MakeNodes(1);
  Inbox inbox;
  auto a = Make(OptionsFor(0));
  ASSERT_TRUE(a->Start(inbox.receiver()).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a->Send(nodes_[0].id(), std::to_string(i)).ok());
  ASSERT_TRUE(WaitUntil([&] { return inbox.size() == 100; }));
  auto got = inbox.Take();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(nodes_[0].id(), got[i].first);
    EXPECT_EQ(std::to_string(i), got[i].second);
  }
}

TEST_F(TcpTransportTest, StartFailsClearlyWhenThePortIsTaken) {
  MakeNodes(1);
  Inbox inbox;
  auto a = Make(OptionsFor(0));
  ASSERT_TRUE(a->Start(inbox.receiver()).ok());
  auto b = Make(OptionsFor(0));  // same address
  Status s = b->Start(inbox.receiver());
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(nodes_[0].ToString())) << s.message();
}

TEST_F(TcpTransportTest, InvalidOptionsAreRejected) {
  MakeNodes(2);
  std::unique_ptr<TcpTransport> t;
  TcpTransportOptions o = OptionsFor(0);
  // Listed with self's id at another address.
  o.self = NodeInfo{"127.0.0.2", nodes_[0].port, nodes_[0].id()};
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.self = NodeInfo{"::1", 5};  // no id
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.nodes.push_back(NodeInfo{"db-1.example", 5});  // a host name without an id
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.nodes.push_back(NodeInfo{"bad host", 5, 9});
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.nodes.push_back(nodes_[1]);  // duplicate
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.nodes.push_back(NodeInfo{"bad", 5});
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.reconnect_max_ms = 1;
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.max_frame_bytes = 0;
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  o = OptionsFor(0);
  o.header_timeout_ms = -1;
  EXPECT_TRUE(NewTcpTransport(o, &t).IsInvalidArgument());
  EXPECT_EQ(nullptr, t);
}

TEST_F(TcpTransportTest, StopIsCleanIdempotentAndLeaksNoFd) {
  const int fds_before = CountOpenFds();
  MakeNodes(3);
  {
    Inbox inbox[3];
    std::vector<std::unique_ptr<TcpTransport>> ts;
    for (int i = 0; i < 3; ++i) {
      ts.push_back(Make(OptionsFor(i)));
      ASSERT_TRUE(ts[i]->Start(inbox[i].receiver()).ok());
    }
    for (int a = 0; a < 3; ++a) {
      for (int b = 0; b < 3; ++b) {
        if (a != b) ExpectLinkWorks(ts[a].get(), &inbox[b], b, std::to_string(a));
      }
    }
    // An incoming connection left open by a client, and one mid-frame.
    int raw1 = RawConnect(0);
    int raw2 = RawConnect(0);
    WriteAll(raw2, EncodeFrame(kCluster, nodes_[1].id(), "partial").substr(0, 10));

    // Node 0 stops while the others keep sending to it; its receiver must
    // not be called after Stop returns.
    auto t0 = Make(OptionsFor(0));  // a second instance is not started: still clean
    ts[0]->Stop();
    ts[0]->Stop();  // idempotent
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(ts[1]->Send(nodes_[0].id(), "late").ok());
      ASSERT_TRUE(ts[2]->Send(nodes_[0].id(), "late").ok());
    }
    const size_t got0 = inbox[0].size();
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(got0, inbox[0].size());
    EXPECT_FALSE(inbox[0].Contains("late"));
    close(raw1);
    close(raw2);
    ts[1]->Stop();
    // ts[2] is stopped by its destructor, t0 too.
  }
  EXPECT_EQ(fds_before, CountOpenFds());
}

// A header (only) announcing a payload of `len` bytes.
std::string HeaderAnnouncing(uint64_t cluster, uint64_t sender, uint32_t len) {
  std::string header = EncodeFrameHeader(cluster, sender, "");
  EncodeFixed32(&header[4], len);
  return header;
}

TEST_F(TcpTransportTest, IdentityIsCheckedFromTheHeaderBeforeThePayload) {
  MakeNodes(2);
  Inbox inbox;
  auto b = Make(OptionsFor(1));
  ASSERT_TRUE(b->Start(inbox.receiver()).ok());
  // Headers announcing 60 MiB (under the 64 MiB limit), and no payload at
  // all: the connection is closed from the header alone.
  int raw = RawConnect(1);
  WriteAll(raw, HeaderAnnouncing(kCluster + 1, nodes_[0].id(), 60u << 20));
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_foreign_cluster == 1; }));

  raw = RawConnect(1);
  WriteAll(raw, HeaderAnnouncing(kCluster, NodeInfo{"10.9.9.9", 999}.id(), 60u << 20));
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_non_member == 1; }));

  TransportStats s = b->stats();
  EXPECT_EQ(2u, s.connections_closed_on_error);
  EXPECT_EQ(0u, s.frames_dropped_corrupt + s.frames_dropped_too_large + s.frames_received);
}

TEST_F(TcpTransportTest, AFrameArrivingInSmallPiecesIsDelivered) {
  MakeNodes(2);
  Inbox inbox;
  auto b = Make(OptionsFor(1));
  ASSERT_TRUE(b->Start(inbox.receiver()).ok());
  int raw = RawConnect(1);
  int one = 1;
  setsockopt(raw, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::string payload(20000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  const std::string frame = EncodeFrame(kCluster, nodes_[0].id(), payload);
  for (size_t pos = 0; pos < frame.size(); pos += 997) {
    WriteAll(raw, frame.substr(pos, 997));
    std::this_thread::sleep_for(milliseconds(1));  // pacing only: separate reads
  }
  ASSERT_TRUE(WaitUntil([&] { return inbox.size() == 1; }));
  EXPECT_TRUE(inbox.Take()[0].second == payload);
  close(raw);
}

TEST_F(TcpTransportTest, IncomingConnectionsAreCapped) {
  MakeNodes(2);
  Inbox inbox;
  TcpTransportOptions o = OptionsFor(1);
  o.max_incoming_connections = 2;
  auto b = Make(o);
  ASSERT_TRUE(b->Start(inbox.receiver()).ok());
  // Two connections, each proven accepted by a delivered frame.
  int raw[2];
  for (int i = 0; i < 2; ++i) {
    raw[i] = RawConnect(1);
    const std::string msg = "held-" + std::to_string(i);
    WriteAll(raw[i], EncodeFrame(kCluster, nodes_[0].id(), msg));
    ASSERT_TRUE(WaitUntil([&] { return inbox.Contains(msg); }));
  }
  // A third is closed at once.
  int extra = RawConnect(1);
  EXPECT_TRUE(ClosedByPeer(extra));
  close(extra);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().connections_rejected_over_limit == 1; }));
  // Once one closes, a new connection gets its place (the close may be seen
  // after the next accept: retry until one is served).
  close(raw[0]);
  int attempt = 0;
  bool served = false;
  while (!served && attempt < 50) {
    const uint64_t rejected = b->stats().connections_rejected_over_limit;
    const std::string msg = "later-" + std::to_string(attempt++);
    int fd = RawConnect(1);
    WriteAll(fd, EncodeFrame(kCluster, nodes_[0].id(), msg));
    ASSERT_TRUE(WaitUntil([&] {
      return inbox.Contains(msg) || b->stats().connections_rejected_over_limit > rejected;
    }));
    served = inbox.Contains(msg);
    close(fd);
  }
  EXPECT_TRUE(served);
  close(raw[1]);
  EXPECT_EQ(0u, b->stats().connections_closed_on_error);
}

TEST_F(TcpTransportTest, ConnectionsWithoutAHeaderTimeOutAndFreeTheirSlots) {
  MakeNodes(2);
  Inbox inbox_b;
  TcpTransportOptions o = OptionsFor(1);
  o.max_incoming_connections = 2;
  o.header_timeout_ms = 200;
  auto b = Make(o);
  ASSERT_TRUE(b->Start(inbox_b.receiver()).ok());
  // Two connections fill the cap without ever completing a header: one
  // silent, one with a few bytes of a valid header.
  int silent = RawConnect(1);
  int partial = RawConnect(1);
  WriteAll(partial, EncodeFrame(kCluster, nodes_[0].id(), "x").substr(0, 5));
  // The node closes both (ClosedByPeer waits up to kDeadline).
  EXPECT_TRUE(ClosedByPeer(silent));
  EXPECT_TRUE(ClosedByPeer(partial));
  close(silent);
  close(partial);
  // Counted before the close, so already visible.
  EXPECT_EQ(2u, b->stats().connections_closed_header_timeout);
  // Their slots are free: a real member connects and delivers.
  Inbox inbox_a;
  auto a = Make(OptionsFor(0));
  ASSERT_TRUE(a->Start(inbox_a.receiver()).ok());
  ExpectLinkWorks(a.get(), &inbox_b, 1, "after-timeout");
  TransportStats s = b->stats();
  EXPECT_EQ(0u, s.connections_rejected_over_limit);
  EXPECT_EQ(0u, s.connections_closed_on_error);
  EXPECT_EQ(2u, s.connections_closed_header_timeout);
}

TEST_F(TcpTransportTest, AConnectionThatPassedAHeaderMayStayIdle) {
  MakeNodes(2);
  Inbox inbox;
  TcpTransportOptions o = OptionsFor(1);
  o.header_timeout_ms = 200;
  auto b = Make(o);
  ASSERT_TRUE(b->Start(inbox.receiver()).ok());
  // A member's connection delivers one frame, then stays idle.
  int member = RawConnect(1);
  WriteAll(member, EncodeFrame(kCluster, nodes_[0].id(), "first"));
  ASSERT_TRUE(WaitUntil([&] { return inbox.Contains("first"); }));
  // A silent connection accepted after it: once the node closed this one,
  // the member's deadline (earlier) has passed too, and a scan has run.
  int silent = RawConnect(1);
  EXPECT_TRUE(ClosedByPeer(silent));
  close(silent);
  EXPECT_EQ(1u, b->stats().connections_closed_header_timeout);
  // The member's connection is still open: no EOF to read...
  pollfd p{member, POLLIN, 0};
  EXPECT_EQ(0, poll(&p, 1, 100));
  // ...and it still delivers.
  WriteAll(member, EncodeFrame(kCluster, nodes_[0].id(), "second"));
  EXPECT_TRUE(WaitUntil([&] { return inbox.Contains("second"); }));
  close(member);
  EXPECT_EQ(1u, b->stats().connections_closed_header_timeout);
  EXPECT_EQ(0u, b->stats().connections_closed_on_error);
}

TEST_F(TcpTransportTest, FailedEpollRegistrationClosesOnlyThatConnection) {
  MakeNodes(2);
  Inbox inbox_a, inbox_b;
  std::unique_ptr<TcpTransport> a, b;
  ASSERT_NO_FATAL_FAILURE(
      StartLinkedPair(OptionsFor(0), OptionsFor(1), &inbox_a, &inbox_b, &a, &b, "before"));
  tcp_transport_testing::FailIncomingEpollAdds(1);
  int raw = RawConnect(1);
  EXPECT_TRUE(ClosedByPeer(raw));
  close(raw);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().connections_closed_epoll_error == 1; }));
  // The node lives on: old and new connections work.
  ExpectLinkWorks(a.get(), &inbox_b, 1, "after");
  raw = RawConnect(1);
  WriteAll(raw, EncodeFrame(kCluster, nodes_[0].id(), "new-conn"));
  EXPECT_TRUE(WaitUntil([&] { return inbox_b.Contains("new-conn"); }));
  close(raw);
  tcp_transport_testing::FailIncomingEpollAdds(0);
}

// Lowers RLIMIT_NOFILE so that no descriptor is free (filling the holes
// below it with dups of `any_fd`), and restores it.
class NoFreeFds {
 public:
  explicit NoFreeFds(int any_fd) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    int highest = 0;
    DIR* d = opendir("/proc/self/fd");
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') highest = std::max(highest, atoi(e->d_name));
    }
    closedir(d);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(highest + 1);
    setrlimit(RLIMIT_NOFILE, &low);
    // Fill the holes below the limit.
    int fd;
    while ((fd = dup(any_fd)) >= 0) dups_.push_back(fd);
  }
  ~NoFreeFds() {
    for (int fd : dups_) close(fd);
    setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  rlimit saved_;
  std::vector<int> dups_;
};

// Reads accept_failures while the test holds every file descriptor.
// UBSan's vptr check probes memory through a pipe, which cannot be created
// then, so it would report every virtual call as a bad object: skip it here.
__attribute__((no_sanitize("vptr"))) uint64_t AcceptFailures(TcpTransport* t) {
  return t->stats().accept_failures;
}

TEST_F(TcpTransportTest, AcceptWithoutFreeDescriptorsPausesInsteadOfSpinning) {
  MakeNodes(2);
  Inbox inbox;
  auto b = Make(OptionsFor(1));  // node 0 never runs: b opens no socket itself
  ASSERT_TRUE(b->Start(inbox.receiver()).ok());
  int raw = socket(AF_INET, SOCK_STREAM, 0);  // created while descriptors are free
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(nodes_[1].port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  // b's loop thread is running before the descriptors go: a thread that
  // first runs while none are free trips UBSan's vptr check (see above).
  int first = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(0, connect(first, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  WriteAll(first, EncodeFrame(kCluster, nodes_[0].id(), "before-emfile"));
  ASSERT_TRUE(WaitUntil([&] { return inbox.Contains("before-emfile"); }));
  close(first);
  {
    NoFreeFds no_fds(raw);
    ASSERT_EQ(-1, dup(raw));  // really none left
    ASSERT_EQ(0, connect(raw, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    ASSERT_TRUE(WaitUntil([&] { return AcceptFailures(b.get()) >= 1; }));
    // Still out of descriptors for a while: a spinning loop would count
    // thousands of failures; a pausing one a handful (fewer when loaded).
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_LT(AcceptFailures(b.get()), 20u);
  }
  // Descriptors are back: the waiting connection is accepted and served.
  WriteAll(raw, EncodeFrame(kCluster, nodes_[0].id(), "after-emfile"));
  EXPECT_TRUE(WaitUntil([&] { return inbox.Contains("after-emfile"); }));
  close(raw);
}

// The TCP sockets of this process whose local or remote port is `port`.
std::vector<int> SocketsWithPort(uint16_t port, bool local) {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = atoi(e->d_name);
    sockaddr_in a{};
    socklen_t len = sizeof(a);
    const int r = local ? getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)
                        : getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
    if (r == 0 && a.sin_family == AF_INET && ntohs(a.sin_port) == port) fds.push_back(fd);
  }
  closedir(d);
  return fds;
}

int IntOpt(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof(v);
  if (getsockopt(fd, level, name, &v, &len) != 0) return -1;
  return v;
}

TEST_F(TcpTransportTest, EverySocketDetectsDeadPeers) {
  MakeNodes(2);
  Inbox inbox_a, inbox_b;
  TcpTransportOptions oa = OptionsFor(0), ob = OptionsFor(1);
  oa.dead_peer_timeout_ms = ob.dead_peer_timeout_ms = 6000;
  std::unique_ptr<TcpTransport> a, b;
  ASSERT_NO_FATAL_FAILURE(StartLinkedPair(oa, ob, &inbox_a, &inbox_b, &a, &b, "a-to-b"));
  // a's outgoing socket to b, b's accepted socket from a, and b's listener.
  std::vector<int> to_b = SocketsWithPort(nodes_[1].port, /*local=*/false);
  std::vector<int> at_b = SocketsWithPort(nodes_[1].port, /*local=*/true);
  ASSERT_EQ(1u, to_b.size());
  ASSERT_EQ(2u, at_b.size());
  int checked = 0;
  for (int fd : {to_b[0], at_b[0], at_b[1]}) {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;  // listener
    ++checked;
    EXPECT_EQ(1, IntOpt(fd, SOL_SOCKET, SO_KEEPALIVE)) << fd;
    EXPECT_EQ(2, IntOpt(fd, IPPROTO_TCP, TCP_KEEPIDLE)) << fd;
    EXPECT_EQ(1, IntOpt(fd, IPPROTO_TCP, TCP_KEEPINTVL)) << fd;
    EXPECT_EQ(3, IntOpt(fd, IPPROTO_TCP, TCP_KEEPCNT)) << fd;
    EXPECT_EQ(6000, IntOpt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT)) << fd;
  }
  EXPECT_EQ(2, checked);
}

TEST_F(TcpTransportTest, AConnectThatHangsIsAbandonedAndRetried) {
  MakeNodes(1);
  // A "peer" whose accept queue is full: further SYNs are dropped, so a
  // connect to it stays pending.
  const NodeInfo stuck{"127.0.0.1", FreePort()};
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(stuck.port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(0, bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  ASSERT_EQ(0, listen(listener, 0));
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(fd);
  }
  TcpTransportOptions o = OptionsFor(0);
  o.nodes.push_back(stuck);
  o.connect_timeout_ms = 100;
  Inbox inbox;
  auto a = Make(o);
  ASSERT_TRUE(a->Start(inbox.receiver()).ok());
  ASSERT_TRUE(a->Send(stuck.id(), "never-arrives").ok());
  // Two timeouts: the first connect was given up and another one tried.
  EXPECT_TRUE(WaitUntil([&] { return a->stats().connect_timeouts >= 2; }));
  a->Stop();
  for (int fd : fillers) close(fd);
  close(listener);
}

TEST_F(TcpTransportTest, APeerThatAcceptsAndClosesIsRetriedWithGrowingBackoff) {
  MakeNodes(1);
  const NodeInfo flaky{"127.0.0.1", FreePort()};
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(flaky.port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(0, bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  ASSERT_EQ(0, listen(listener, 16));
  timeval tv{kDeadline.count(), 0};
  setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));  // bounds accept()

  TcpTransportOptions o = OptionsFor(0);
  o.nodes.push_back(flaky);
  o.reconnect_min_ms = 5;
  o.reconnect_max_ms = 400;
  Inbox inbox;
  auto a = Make(o);
  ASSERT_TRUE(a->Start(inbox.receiver()).ok());
  // Something always waits to be sent, so a reconnects as soon as its backoff
  // allows.
  std::atomic<bool> done{false};
  std::thread sender([&] {
    while (!done.load()) {
      a->Send(flaky.id(), "x");
      std::this_thread::sleep_for(milliseconds(2));
    }
  });
  // Each connection is accepted and closed at once. Had the backoff been
  // reset by every successful connect, six connects would come 5 ms apart;
  // doubling, the gaps are at least 5 + 10 + 20 + 40 + 80 ms.
  steady_clock::time_point first;
  for (int i = 0; i < 6; ++i) {
    int fd = accept(listener, nullptr, nullptr);
    EXPECT_GE(fd, 0) << "connect " << i << " never came";
    if (fd < 0) break;
    if (i == 0) first = steady_clock::now();
    close(fd);
  }
  EXPECT_GE(steady_clock::now() - first, milliseconds(155));
  done.store(true);
  sender.join();
  a->Stop();
  close(listener);
}

}  // namespace
}  // namespace tcp_transport_test
}  // namespace chorus
