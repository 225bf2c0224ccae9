// Transport::SendBatch: the TCP transport's coalesced sends (a round's
// messages for a peer queued at once, written together with sendmsg, a
// message for several peers framed once), with and without the cluster
// secret; the default SendBatch of a transport that has only Send; and the
// byte stream a coalesced write puts on the wire (frames, optionally each
// with its HMAC tag, back to back) decoded however it is split.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chorus/transport.h"
#include "node/frame.h"
#include "node/frame_auth.h"
#include "unittest/support/test_util.h"
#include "unittest/support/transport_inbox.h"

namespace chorus {
namespace tcp_transport_batch_test {
namespace {

using testing::FreePort;
using testing::Inbox;

constexpr uint64_t kCluster = 5151;
const std::string kSecret = "batch test secret, 32 bytes long";

bool WaitUntil(const std::function<bool()>& pred) {
  return testing::WaitUntil(pred, std::chrono::seconds(30));
}

// The deterministic content of message `seq` (its size cycles through
// empty, tiny, a typical accept, one read chunk and more, and 1 MiB).
std::string Body(int seq) {
  static const size_t kSizes[] = {0, 1, 100, 4096, 70000, 100, 3000, 1 << 20};
  const size_t size = kSizes[seq % 8];
  std::string s = "#" + std::to_string(seq) + ":";
  std::mt19937 rng(static_cast<uint32_t>(seq));
  while (s.size() < size) s.push_back(static_cast<char>(rng() & 0xFF));
  if (size >= 8) s.resize(size);
  return s;
}

class TcpTransportBatchTest : public ::testing::TestWithParam<bool> {
 protected:
  void MakeNodes(int n) {
    for (int i = 0; i < n; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
  }
  TcpTransportOptions OptionsFor(int i) {
    TcpTransportOptions o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = kCluster;
    o.reconnect_min_ms = 5;
    o.reconnect_max_ms = 50;
    if (GetParam()) o.cluster_secret = kSecret;
    return o;
  }
  std::unique_ptr<TcpTransport> Start(const TcpTransportOptions& o, Inbox* inbox) {
    std::unique_ptr<TcpTransport> t;
    Status s = NewTcpTransport(o, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (t) {
      EXPECT_TRUE(t->Start(inbox->receiver()).ok());
    }
    return t;
  }
  uint64_t id(int i) const { return nodes_[i].id(); }

  std::vector<NodeInfo> nodes_;
};

// Batches mixing broadcasts (one message, both peers), messages for one
// peer and for self, interleaved with plain Sends: every node gets exactly
// what was addressed to it, intact and in the order sent.
TEST_P(TcpTransportBatchTest, EveryMessageArrivesIntactAndInOrder) {
  MakeNodes(3);
  Inbox inbox[3];
  std::vector<std::unique_ptr<TcpTransport>> ts;
  for (int i = 0; i < 3; ++i) ts.push_back(Start(OptionsFor(i), &inbox[i]));
  std::map<int, std::vector<std::string>> want;  // by receiver
  int seq = 0;
  for (int round = 0; round < 40; ++round) {
    MessageBatch batch;
    for (int m = 0; m < 1 + round % 9; ++m) {
      const std::string body = Body(seq++);
      const size_t index = batch.Add(body);
      switch ((round + m) % 4) {
        case 0:
        case 1:  // a broadcast
          batch.AddSend(id(1), index);
          batch.AddSend(id(2), index);
          want[1].push_back(body);
          want[2].push_back(body);
          break;
        case 2:
          batch.AddSend(id(2), index);
          want[2].push_back(body);
          break;
        case 3:  // to self and a peer
          batch.AddSend(id(0), index);
          batch.AddSend(id(1), index);
          want[0].push_back(body);
          want[1].push_back(body);
          break;
      }
    }
    ASSERT_TRUE(ts[0]->SendBatch(std::move(batch)).ok());
    if (round % 3 == 0) {  // a plain Send keeps its place among the batches
      const std::string body = Body(seq++);
      ASSERT_TRUE(ts[0]->Send(id(1), body).ok());
      want[1].push_back(body);
    }
  }
  for (int b = 0; b < 3; ++b) {
    ASSERT_TRUE(WaitUntil([&] { return inbox[b].size() >= want[b].size(); }))
        << "node " << b << " got " << inbox[b].size() << " of " << want[b].size();
    const auto got = inbox[b].Take();
    ASSERT_EQ(want[b].size(), got.size()) << b;
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(id(0), got[k].first);
      // Compared without printing a megabyte on a failure.
      EXPECT_TRUE(want[b][k] == got[k].second) << "node " << b << " message " << k;
    }
  }
  const TransportStats s = ts[0]->stats();
  EXPECT_EQ(want[1].size() + want[2].size(), s.frames_sent);
  EXPECT_EQ(0u, s.sends_dropped_queue_full);
  for (int b = 1; b < 3; ++b) {
    const TransportStats r = ts[b]->stats();
    EXPECT_EQ(want[b].size(), r.frames_received) << b;
    EXPECT_EQ(0u, r.frames_dropped_corrupt + r.frames_dropped_bad_mac +
                      r.connections_closed_on_error)
        << b;
  }
}

// Bad sends of a batch are reported, and the good ones still go out.
TEST_P(TcpTransportBatchTest, BadSendsAreReportedAndTheOthersDelivered) {
  MakeNodes(2);
  Inbox inbox[2];
  TcpTransportOptions o = OptionsFor(0);
  o.max_frame_bytes = 1000;
  auto a = Start(o, &inbox[0]);
  auto b = Start(OptionsFor(1), &inbox[1]);
  MessageBatch batch;
  const size_t big = batch.Add(std::string(1001, 'x'));
  const size_t ok = batch.Add("fine");
  batch.AddSend(id(1), big);
  batch.AddSend(id(1), ok);
  Status s = a->SendBatch(batch);
  EXPECT_TRUE(s.IsTooLarge()) << s.ToString();

  MessageBatch stranger;
  stranger.AddSend(NodeInfo{"127.0.0.1", 1}.id(), stranger.Add("lost"));
  stranger.AddSend(id(1), stranger.Add("after the stranger"));
  s = a->SendBatch(std::move(stranger));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();

  MessageBatch no_message;
  no_message.AddSend(id(1), 7);
  no_message.AddSend(id(1), no_message.Add("after the bad index"));
  s = a->SendBatch(std::move(no_message));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();

  ASSERT_TRUE(WaitUntil([&] { return inbox[1].size() >= 3; }));
  const auto got = inbox[1].Take();
  ASSERT_EQ(3u, got.size());
  EXPECT_EQ("fine", got[0].second);
  EXPECT_EQ("after the stranger", got[1].second);
  EXPECT_EQ("after the bad index", got[2].second);

  a->Stop();
  MessageBatch after_stop;
  after_stop.AddSend(id(1), after_stop.Add("too late"));
  EXPECT_TRUE(a->SendBatch(std::move(after_stop)).IsStopped());
}

// A dead peer's share of a batch waits in its bounded queue (the excess is
// dropped and counted); the live peer's share is delivered and SendBatch
// never waits for the dead one.
TEST_P(TcpTransportBatchTest, ADeadPeerNeitherBlocksNorHoldsUpTheOthers) {
  MakeNodes(3);
  Inbox inbox[3];
  TcpTransportOptions o = OptionsFor(0);
  o.max_queued_bytes_per_peer = 64 * 1024;
  auto a = Start(o, &inbox[0]);
  auto b = Start(OptionsFor(1), &inbox[1]);
  // Node 2 never starts: every connect to it fails.
  const std::string big(1000, 'v');
  constexpr int kRounds = 200;  // 200 KB for node 2: more than its queue holds
  for (int round = 0; round < kRounds; ++round) {
    MessageBatch batch;
    const size_t shared = batch.Add("r" + std::to_string(round));
    batch.AddSend(id(1), shared);
    batch.AddSend(id(2), shared);
    batch.AddSend(id(2), batch.Add(big));
    ASSERT_TRUE(a->SendBatch(std::move(batch)).ok());
  }
  ASSERT_TRUE(WaitUntil([&] { return inbox[1].size() == kRounds; }));
  EXPECT_GT(a->stats().sends_dropped_queue_full, 0u);
  const auto got = inbox[1].Take();
  for (int round = 0; round < kRounds; ++round) {
    EXPECT_EQ("r" + std::to_string(round), got[static_cast<size_t>(round)].second);
  }
}

INSTANTIATE_TEST_SUITE_P(SecretOffAndOn, TcpTransportBatchTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("WithSecret") : std::string("Plain");
                         });

// A transport that has only Send: the default SendBatch sends each message
// to each of its nodes, in the batch's order.
class SendOnlyTransport : public Transport {
 public:
  Status Start(Receiver) override { return Status::OK(); }
  Status Send(uint64_t to, std::string message) override {
    if (to == 0) return Status::InvalidArgument("no node 0");
    sent.emplace_back(to, std::move(message));
    return Status::OK();
  }
  void Stop() override {}
  std::vector<std::pair<uint64_t, std::string>> sent;
};

TEST(TransportSendBatchTest, TheDefaultSendsEachMessageToEachNodeInOrder) {
  SendOnlyTransport t;
  MessageBatch batch;
  const size_t a = batch.Add("a");
  const size_t b = batch.Add("b");
  batch.AddSend(1, a);
  batch.AddSend(2, b);
  batch.AddSend(0, b);  // refused: reported, the rest still sent
  batch.AddSend(2, a);
  batch.AddSend(1, 9);  // no such message
  batch.AddSend(3, b);
  Status s = t.SendBatch(std::move(batch));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  const std::vector<std::pair<uint64_t, std::string>> want = {
      {1, "a"}, {2, "b"}, {2, "a"}, {3, "b"}};
  EXPECT_EQ(want, t.sent);
}

// What a coalesced write puts on the wire: frames back to back, each with
// its HMAC tag when authenticated. Split in two at every byte, and fed one
// byte at a time, it decodes to the same frames, in order, tags verified.
class CoalescedStreamTest : public ::testing::TestWithParam<bool> {};

TEST_P(CoalescedStreamTest, DecodesSplitAtEveryByte) {
  const bool auth = GetParam();
  std::unique_ptr<FrameAuthenticator> authenticator;
  ASSERT_TRUE(FrameAuthenticator::New(kSecret, &authenticator).ok());
  AuthNonce nonce;
  ASSERT_TRUE(NewAuthNonce(&nonce).ok());
  constexpr uint64_t kSender = 11, kReceiver = 22;
  const std::vector<std::string> payloads = {"accept 1", "", std::string(300, 'v'), "commit",
                                             std::string(1, '\0'), "last"};
  std::string stream;
  for (size_t i = 0; i < payloads.size(); ++i) {
    const FrameHeader header = MakeFrameHeader(kCluster, kSender, payloads[i]);
    stream.append(header.data(), header.size());
    stream += payloads[i];
    if (auth) {
      const FrameTag tag = authenticator->Sign(nonce, kReceiver, i, header.data(), payloads[i]);
      stream.append(tag.data(), tag.size());
    }
  }
  auto decode = [&](const std::function<Status(FrameDecoder*, std::vector<Frame>*)>& feed) {
    uint64_t next_sequence = 0;
    FrameDecoder::FrameCheck check = [&](const char* header, const std::string& payload,
                                         const char* tag) {
      return authenticator->Verify(nonce, kReceiver, next_sequence++, header, payload, tag)
                 ? Status::OK()
                 : Status::InvalidArgument("bad tag");
    };
    FrameDecoder decoder = auth ? FrameDecoder(1 << 20, nullptr, kFrameTagSize, check)
                                : FrameDecoder(1 << 20);
    std::vector<Frame> frames;
    Status s = feed(&decoder, &frames);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(decoder.idle());
    std::vector<std::string> got;
    for (const Frame& f : frames) {
      EXPECT_EQ(kSender, f.sender);
      got.push_back(f.payload);
    }
    return got;
  };
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(payloads, decode([&](FrameDecoder* d, std::vector<Frame>* frames) {
                Status s = d->Consume(stream.data(), cut, frames);
                if (!s.ok()) return s;
                return d->Consume(stream.data() + cut, stream.size() - cut, frames);
              }))
        << "split at " << cut;
  }
  EXPECT_EQ(payloads, decode([&](FrameDecoder* d, std::vector<Frame>* frames) {
              for (char c : stream) {
                Status s = d->Consume(&c, 1, frames);
                if (!s.ok()) return s;
              }
              return Status::OK();
            }));
}

INSTANTIATE_TEST_SUITE_P(TagsOffAndOn, CoalescedStreamTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Tagged") : std::string("Plain");
                         });

}  // namespace
}  // namespace tcp_transport_batch_test
}  // namespace chorus
