#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "unittest/support/test_util.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "chorus/transport.h"
#include "node/frame.h"
#include "utils/coding.h"

namespace chorus {
namespace {

using testing::CountOpenFds;
using testing::FreePort;

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr uint64_t kCluster = 4242;
// Generous: the machine running the tests may be loaded.
constexpr auto kDeadline = seconds(30);

bool WaitUntil(const std::function<bool()>& pred) { return testing::WaitUntil(pred, kDeadline); }

// Collects what a transport receives.
class Inbox {
 public:
  Transport::Receiver receiver() {
    return [this](uint64_t from, std::string msg) {
      std::lock_guard<std::mutex> l(mu_);
      messages_.emplace_back(from, std::move(msg));
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> l(mu_);
    return messages_.size();
  }
  std::vector<std::pair<uint64_t, std::string>> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return messages_;
  }
  bool Contains(const std::string& msg) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& m : messages_) {
      if (m.second == msg) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> messages_;  // GUARDED_BY(mu_)
};

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
  auto a = Make(OptionsFor(0));
  auto b = Make(OptionsFor(1));
  ASSERT_TRUE(a->Start(inbox_a.receiver()).ok());
  ASSERT_TRUE(b->Start(inbox_b.receiver()).ok());
  ExpectLinkWorks(a.get(), &inbox_b, 1, "before");
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
  o.self = NodeInfo{"127.0.0.1", 1};  // not in nodes
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

}  // namespace
}  // namespace chorus
