// The authenticated TCP transport (cluster_secret, node/frame_auth.h): real
// transports on loopback attacked from raw sockets (forged, replayed,
// duplicated, reordered and foreign-secret frames), a member without the
// secret, and a 3-node cluster that chooses values with the secret set. The
// frame-level pieces are tested in frame_auth_test.cc.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chorus/node.h"
#include "chorus/state_machine.h"
#include "chorus/transport.h"
#include "node/frame.h"
#include "node/frame_auth.h"
#include "unittest/support/test_util.h"
#include "unittest/support/transport_inbox.h"
#include "utils/coding.h"

namespace chorus {
namespace transport_auth_test {
namespace {

using testing::FreePort;
using testing::Inbox;
using testing::TempDir;

constexpr uint64_t kCluster = 4343;
const std::string kSecret = "correct horse battery staple 01";
const std::string kOtherSecret = "another cluster's secret, 32 b.";

bool WaitUntil(const std::function<bool()>& pred) {
  return testing::WaitUntil(pred, std::chrono::seconds(30));
}

// ---- transports on loopback ----

class TransportAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
  }
  TcpTransportOptions OptionsFor(int i, const std::string& secret) {
    TcpTransportOptions o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = kCluster;
    o.cluster_secret = secret;
    o.reconnect_min_ms = 5;
    o.reconnect_max_ms = 50;
    o.connect_timeout_ms = 300;
    return o;
  }
  std::unique_ptr<TcpTransport> Start(const TcpTransportOptions& o, Inbox* inbox) {
    std::unique_ptr<TcpTransport> t;
    Status s = NewTcpTransport(o, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (t == nullptr) return t;
    s = t->Start(inbox->receiver());
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }

  // A raw client of node 1, speaking as the member node 0 would.
  struct Raw {
    int fd = -1;
    AuthNonce nonce{};
    uint64_t next_sequence = 0;
  };
  // Connects to node 1 and reads its challenge.
  Raw RawConnect() {
    Raw raw;
    raw.fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(nodes_[1].port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(0, connect(raw.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    timeval tv{30, 0};
    setsockopt(raw.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char challenge[kChallengeSize];
    size_t got = 0;
    while (got < sizeof(challenge)) {
      const ssize_t n = read(raw.fd, challenge + got, sizeof(challenge) - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    EXPECT_EQ(kChallengeSize, got);
    EXPECT_TRUE(DecodeChallenge(challenge, &raw.nonce).ok());
    return raw;
  }
  // The bytes of a frame from node 0 tagged for `raw`'s next sequence
  // number under `secret`.
  std::string SignedFrame(Raw* raw, const std::string& payload,
                          const std::string& secret = kSecret) {
    std::unique_ptr<FrameAuthenticator> auth;
    EXPECT_TRUE(FrameAuthenticator::New(secret, &auth).ok());
    const std::string header = EncodeFrameHeader(kCluster, nodes_[0].id(), payload);
    const FrameTag tag =
        auth->Sign(raw->nonce, nodes_[1].id(), raw->next_sequence++, header.data(), payload);
    return header + payload + std::string(tag.data(), tag.size());
  }
  static void WriteAll(int fd, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = write(fd, data.data() + off, data.size() - off);
      if (n <= 0) return;  // the other side may close first
      off += static_cast<size_t>(n);
    }
  }
  // True when the peer closed the raw socket (EOF or a reset).
  static bool ClosedByPeer(int fd) {
    char c;
    const ssize_t n = read(fd, &c, 1);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  std::vector<NodeInfo> nodes_;
};

TEST_F(TransportAuthTest, TwoNodesWithTheSecretExchangeFrames) {
  Inbox inbox_a, inbox_b;
  auto a = Start(OptionsFor(0, kSecret), &inbox_a);
  auto b = Start(OptionsFor(1, kSecret), &inbox_b);
  ASSERT_TRUE(a && b);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(a->Send(nodes_[1].id(), "a" + std::to_string(i)).ok());
    ASSERT_TRUE(b->Send(nodes_[0].id(), "b" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(WaitUntil([&] { return inbox_b.size() == 200 && inbox_a.size() == 200; }));
  for (int i = 0; i < 200; ++i) {
    EXPECT_TRUE(inbox_b.Contains("a" + std::to_string(i)));
    EXPECT_TRUE(inbox_a.Contains("b" + std::to_string(i)));
  }
  const TransportStats sb = b->stats();
  EXPECT_EQ(0u, sb.frames_dropped_bad_mac + sb.connections_closed_on_error +
                    sb.auth_challenge_failures);
  // Each frame costs its 28-byte header and 32-byte tag on the wire.
  EXPECT_GE(a->stats().bytes_sent, 200u * (kFrameHeaderSize + kFrameTagSize));
}

TEST_F(TransportAuthTest, AFrameFromARawClientWithTheSecretIsDelivered) {
  Inbox inbox;
  auto b = Start(OptionsFor(1, kSecret), &inbox);
  ASSERT_TRUE(b);
  Raw raw = RawConnect();
  std::string both = SignedFrame(&raw, "first");
  both += SignedFrame(&raw, "second");  // sequence 1: signed after "first"
  WriteAll(raw.fd, both);
  ASSERT_TRUE(WaitUntil([&] { return inbox.Contains("second"); }));
  EXPECT_TRUE(inbox.Contains("first"));
  EXPECT_EQ(0u, b->stats().frames_dropped_bad_mac);
  close(raw.fd);
}

TEST_F(TransportAuthTest, ForgedFramesAreDroppedCountedAndCloseTheConnection) {
  Inbox inbox;
  auto b = Start(OptionsFor(1, kSecret), &inbox);
  ASSERT_TRUE(b);
  // The right cluster id and a member's id, no tag at all: what follows the
  // payload (here the next frame's header) is read as its tag.
  Raw raw = RawConnect();
  WriteAll(raw.fd, EncodeFrame(kCluster, nodes_[0].id(), "forged-untagged") +
                       EncodeFrame(kCluster, nodes_[0].id(), "forged-untagged-2") +
                       std::string(kFrameTagSize, '\0'));
  EXPECT_TRUE(ClosedByPeer(raw.fd));
  close(raw.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 1; }));

  // A tag of the right size that is not the frame's.
  raw = RawConnect();
  std::string frame = SignedFrame(&raw, "forged-wrong-tag");
  frame.back() ^= 0x40;
  WriteAll(raw.fd, frame);
  EXPECT_TRUE(ClosedByPeer(raw.fd));
  close(raw.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 2; }));

  // A genuine tag over another sender's header: the header is covered.
  raw = RawConnect();
  frame = SignedFrame(&raw, "sender-swapped");
  // A valid header (crc32c included) naming the receiver itself as sender.
  frame.replace(0, kFrameHeaderSize, EncodeFrameHeader(kCluster, nodes_[1].id(), "sender-swapped"));
  WriteAll(raw.fd, frame);
  EXPECT_TRUE(ClosedByPeer(raw.fd));
  close(raw.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 3; }));

  const TransportStats s = b->stats();
  EXPECT_EQ(3u, s.connections_closed_on_error);
  EXPECT_EQ(0u, s.frames_received);
  EXPECT_EQ(0u, inbox.size());
}

TEST_F(TransportAuthTest, AReplayOnANewConnectionIsDropped) {
  Inbox inbox;
  auto b = Start(OptionsFor(1, kSecret), &inbox);
  ASSERT_TRUE(b);
  Raw first = RawConnect();
  const std::string captured = SignedFrame(&first, "once");
  WriteAll(first.fd, captured);
  ASSERT_TRUE(WaitUntil([&] { return inbox.Contains("once"); }));

  // The same bytes, first frame of a new connection (same sequence number
  // 0, another nonce).
  Raw second = RawConnect();
  EXPECT_NE(first.nonce, second.nonce);
  WriteAll(second.fd, captured);
  EXPECT_TRUE(ClosedByPeer(second.fd));
  close(second.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 1; }));
  EXPECT_EQ(1u, inbox.Count("once"));

  // The first connection still works: only the replaying one was closed.
  WriteAll(first.fd, SignedFrame(&first, "still-up"));
  EXPECT_TRUE(WaitUntil([&] { return inbox.Contains("still-up"); }));
  close(first.fd);
  EXPECT_EQ(2u, b->stats().frames_received);
}

TEST_F(TransportAuthTest, AFrameDuplicatedOnTheSameConnectionIsDropped) {
  Inbox inbox;
  auto b = Start(OptionsFor(1, kSecret), &inbox);
  ASSERT_TRUE(b);
  Raw raw = RawConnect();
  const std::string frame = SignedFrame(&raw, "dup");
  WriteAll(raw.fd, frame + frame);
  EXPECT_TRUE(ClosedByPeer(raw.fd));
  close(raw.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 1; }));
  EXPECT_EQ(1u, inbox.Count("dup"));

  // Reordered: frame 1 sent before frame 0.
  raw = RawConnect();
  const std::string zero = SignedFrame(&raw, "zero");
  const std::string one = SignedFrame(&raw, "one");
  WriteAll(raw.fd, one + zero);
  EXPECT_TRUE(ClosedByPeer(raw.fd));
  close(raw.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 2; }));
  EXPECT_FALSE(inbox.Contains("one"));
  EXPECT_FALSE(inbox.Contains("zero"));
}

TEST_F(TransportAuthTest, FramesOfAnotherClustersSecretAreDropped) {
  Inbox inbox_a, inbox_b;
  auto b = Start(OptionsFor(1, kSecret), &inbox_b);
  ASSERT_TRUE(b);
  Raw raw = RawConnect();
  WriteAll(raw.fd, SignedFrame(&raw, "other-secret-raw", kOtherSecret));
  EXPECT_TRUE(ClosedByPeer(raw.fd));
  close(raw.fd);
  EXPECT_TRUE(WaitUntil([&] { return b->stats().frames_dropped_bad_mac == 1; }));

  // A whole transport with the other secret (same cluster id and members).
  auto a = Start(OptionsFor(0, kOtherSecret), &inbox_a);
  ASSERT_TRUE(a);
  ASSERT_TRUE(WaitUntil([&] {
    EXPECT_TRUE(a->Send(nodes_[1].id(), "other-secret").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return b->stats().frames_dropped_bad_mac >= 3;
  }));
  EXPECT_FALSE(inbox_b.Contains("other-secret-raw"));
  EXPECT_FALSE(inbox_b.Contains("other-secret"));
  EXPECT_EQ(0u, b->stats().frames_received);
}

TEST_F(TransportAuthTest, ANodeWithoutTheSecretIsRefusedBothWays) {
  Inbox inbox_plain, inbox_secret;
  auto plain = Start(OptionsFor(0, ""), &inbox_plain);
  auto secret = Start(OptionsFor(1, kSecret), &inbox_secret);
  ASSERT_TRUE(plain && secret);
  // plain -> secret: untagged frames fail the tag check; secret -> plain:
  // no challenge ever comes, so nothing is written.
  ASSERT_TRUE(WaitUntil([&] {
    EXPECT_TRUE(plain->Send(nodes_[1].id(), "from-plain").ok());
    EXPECT_TRUE(secret->Send(nodes_[0].id(), "from-secret").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return secret->stats().frames_dropped_bad_mac >= 1 &&
           secret->stats().auth_challenge_failures >= 1;
  }));
  EXPECT_EQ(0u, inbox_secret.size());
  EXPECT_EQ(0u, inbox_plain.size());
  EXPECT_EQ(0u, secret->stats().frames_received);
  EXPECT_EQ(0u, secret->stats().frames_sent);
  EXPECT_EQ(0u, secret->stats().connects);  // never ready without a challenge
}

TEST_F(TransportAuthTest, ShortSecretsAreRefusedByNewTcpTransport) {
  std::unique_ptr<TcpTransport> t;
  Status s = NewTcpTransport(OptionsFor(0, "too short"), &t);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(nullptr, t);
}

// ---- a cluster ----

class Recorder : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo&, const std::string& value, ExecuteContext*) override {
    std::lock_guard<std::mutex> l(mu_);
    values_.push_back(value);
    return Status::OK();
  }
  std::vector<std::string> values() {
    std::lock_guard<std::mutex> l(mu_);
    return values_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> values_;  // GUARDED_BY(mu_)
};

TEST(TransportAuthClusterTest, ThreeNodesWithTheSecretChooseValues) {
  TempDir dir;
  std::vector<NodeInfo> members;
  for (int i = 0; i < 3; ++i) members.push_back(NodeInfo{"127.0.0.1", FreePort()});
  Recorder machines[3];
  std::unique_ptr<Node> nodes[3];
  for (int i = 0; i < 3; ++i) {
    Options o;
    o.self = members[i];
    o.nodes = members;
    o.cluster_id = 91;
    o.cluster_secret = kSecret;
    o.data_dir = dir.path() + "/n" + std::to_string(i);
    o.create_if_missing = true;
    o.state_machines.push_back({0, &machines[i]});
    Status s = Node::Open(o, &nodes[i]);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::vector<std::string> proposed;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 3; ++i) {
      const std::string value = "v" + std::to_string(round) + "-from-" + std::to_string(i);
      uint64_t instance = 0;
      Status s = nodes[i]->Propose(0, value, &instance);
      ASSERT_TRUE(s.ok()) << value << ": " << s.ToString();
      proposed.push_back(value);
    }
  }
  // Every replica executes every value, in one order.
  ASSERT_TRUE(WaitUntil([&] {
    for (auto& m : machines) {
      if (m.values().size() != proposed.size()) return false;
    }
    return true;
  }));
  EXPECT_EQ(machines[0].values(), machines[1].values());
  EXPECT_EQ(machines[0].values(), machines[2].values());
  const std::vector<std::string> executed = machines[0].values();
  for (const std::string& v : proposed) {
    EXPECT_EQ(1, std::count(executed.begin(), executed.end(), v)) << v;
  }
  // The node's transport challenges a new connection: the secret reached it.
  {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(members[0].port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ASSERT_EQ(0, connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    char challenge[kChallengeSize];
    ASSERT_EQ(static_cast<ssize_t>(kChallengeSize),
              recv(fd, challenge, sizeof(challenge), MSG_WAITALL));
    AuthNonce nonce;
    EXPECT_TRUE(DecodeChallenge(challenge, &nonce).ok());
    close(fd);
  }
  for (auto& node : nodes) {
    TransportMetrics m;
    ASSERT_TRUE(node->GetTransportMetrics(&m).ok());
    EXPECT_GT(m.frames_received, 0u);
    EXPECT_EQ(0u, m.dropped_bad_mac);
    EXPECT_EQ(0u, m.dropped_corrupt);
  }
}

TEST(TransportAuthClusterTest, OpenRefusesAShortSecretAndOneWithACustomTransport) {
  TempDir dir;
  Recorder machine;
  Options o;
  o.self = NodeInfo{"127.0.0.1", FreePort()};
  o.nodes = {o.self};
  o.data_dir = dir.path() + "/n";
  o.create_if_missing = true;
  o.state_machines.push_back({0, &machine});
  o.cluster_secret = "0123456789abcde";  // 15 bytes
  std::unique_ptr<Node> node;
  Status s = Node::Open(o, &node);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("cluster_secret")) << s.ToString();

  // A transport of the application's own: the secret would protect nothing.
  TcpTransportOptions to;
  to.self = o.self;
  to.nodes = o.nodes;
  to.cluster_id = o.cluster_id;
  std::unique_ptr<TcpTransport> custom;
  ASSERT_TRUE(NewTcpTransport(to, &custom).ok());
  o.transport = custom.get();
  o.cluster_secret = kSecret;
  s = Node::Open(o, &node);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("cluster_secret")) << s.ToString();
  EXPECT_EQ(nullptr, node);
}

}  // namespace
}  // namespace transport_auth_test
}  // namespace chorus
