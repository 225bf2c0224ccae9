// The TCP transport's addresses (IPv6, host names) and its address book
// (SetPeers): peers added, removed and moved while traffic flows.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "chorus/transport.h"
#include "node/socket_util.h"
#include "node/tcp_transport_testing.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace tcp_transport_book_test {
namespace {

using testing::FreePort;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr uint64_t kCluster = 77;
constexpr auto kDeadline = seconds(30);  // generous: the machine may be loaded

bool WaitUntil(const std::function<bool()>& pred) { return testing::WaitUntil(pred, kDeadline); }

// A free port on ::1, 0 when ::1 cannot be bound (no IPv6 loopback).
uint16_t FreePort6() {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin6_port);
  }
  close(fd);
  return port;
}

// Collects what a transport receives, by sender.
class Inbox {
 public:
  Transport::Receiver receiver() {
    return [this](uint64_t from, std::string msg) {
      std::lock_guard<std::mutex> l(mu_);
      by_sender_[from].push_back(std::move(msg));
    };
  }
  std::vector<std::string> From(uint64_t sender) {
    std::lock_guard<std::mutex> l(mu_);
    return by_sender_[sender];
  }
  bool Got(uint64_t sender, const std::string& msg) {
    for (const std::string& m : From(sender)) {
      if (m == msg) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, std::vector<std::string>> by_sender_;  // GUARDED_BY(mu_)
};

TcpTransportOptions Options(const NodeInfo& self, const std::vector<NodeInfo>& book) {
  TcpTransportOptions o;
  o.self = self;
  o.nodes = book;
  o.cluster_id = kCluster;
  o.reconnect_min_ms = 5;
  o.reconnect_max_ms = 50;
  return o;
}

std::unique_ptr<TcpTransport> StartTransport(const NodeInfo& self,
                                             const std::vector<NodeInfo>& book, Inbox* inbox) {
  std::unique_ptr<TcpTransport> t;
  Status s = NewTcpTransport(Options(self, book), &t);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!t) return t;
  s = t->Start(inbox->receiver());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return t;
}

// Sends numbered probes from `a` (id from) to `to` until `inbox` of the
// receiver has one: proves the link works.
bool LinkWorks(TcpTransport* a, uint64_t from, uint64_t to, Inbox* inbox,
               const std::string& tag) {
  int i = 0;
  const std::string prefix = "probe-" + tag + "-";
  return WaitUntil([&] {
    if (!a->Send(to, prefix + std::to_string(i++)).ok()) return false;
    for (const std::string& m : inbox->From(from)) {
      if (m.compare(0, prefix.size(), prefix) == 0) return true;
    }
    std::this_thread::sleep_for(milliseconds(5));
    return false;
  });
}

TEST(TcpTransportBookTest, Ipv6LoopbackExchange) {
  const uint16_t p1 = FreePort6();
  const uint16_t p2 = FreePort6();
  if (p1 == 0 || p2 == 0) GTEST_SKIP() << "::1 cannot be bound on this machine";
  std::vector<NodeInfo> nodes;
  ASSERT_TRUE(NodeInfo::ParseList("1@[::1]:" + std::to_string(p1) + ",2@[::1]:" +
                                      std::to_string(p2),
                                  &nodes)
                  .ok());
  Inbox in1, in2;
  auto t1 = StartTransport(nodes[0], nodes, &in1);
  auto t2 = StartTransport(nodes[1], nodes, &in2);
  ASSERT_TRUE(t1 && t2);
  EXPECT_TRUE(LinkWorks(t1.get(), 1, 2, &in2, "v6"));
  EXPECT_TRUE(LinkWorks(t2.get(), 2, 1, &in1, "v6"));
  // A large frame and an ordered stream.
  const std::string big(1 << 20, 'x');
  ASSERT_TRUE(t1->Send(2, big).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t1->Send(2, "m" + std::to_string(i)).ok());
  ASSERT_TRUE(WaitUntil([&] { return in2.Got(1, "m99"); }));
  EXPECT_TRUE(in2.Got(1, big));
  EXPECT_EQ(0u, t2->stats().frames_dropped_non_member);
}

TEST(TcpTransportBookTest, LocalhostHostNameWithIds) {
  std::vector<NodeInfo> nodes;
  ASSERT_TRUE(NodeInfo::ParseList("1@localhost:" + std::to_string(FreePort()) +
                                      ",2@localhost:" + std::to_string(FreePort()),
                                  &nodes)
                  .ok());
  Inbox in1, in2;
  auto t1 = StartTransport(nodes[0], nodes, &in1);
  auto t2 = StartTransport(nodes[1], nodes, &in2);
  ASSERT_TRUE(t1 && t2);
  EXPECT_TRUE(LinkWorks(t1.get(), 1, 2, &in2, "name"));
  EXPECT_TRUE(LinkWorks(t2.get(), 2, 1, &in1, "name"));
  EXPECT_EQ(0u, t1->stats().resolve_failures);
}

TEST(TcpTransportBookTest, AnUnresolvableNameIsAFailedConnectRetriedOffTheSendPath) {
  const NodeInfo self{"127.0.0.1", FreePort(), 1};
  const NodeInfo ghost{"no-such-host.invalid", 7, 2};
  Inbox in;
  auto t = StartTransport(self, {self, ghost}, &in);
  ASSERT_TRUE(t);
  const auto start = steady_clock::now();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t->Send(2, "lost").ok());
  // Sends only queue: they never wait for the name service.
  EXPECT_LT(steady_clock::now() - start, seconds(2));
  // Retried with the backoff: several failures, not one.
  EXPECT_TRUE(WaitUntil([&] { return t->stats().resolve_failures >= 3; }))
      << t->stats().resolve_failures;
  EXPECT_EQ(0u, t->stats().connects);
  t->Stop();
}

// What a fake name service answers for "multi.test": an address nobody
// listens on, then the live one. Shared with the hook (the resolver thread
// may still hold it after the test).
struct FakeNames {
  uint16_t dead_port = 0;
  std::atomic<uint16_t> live_port{0};
  std::atomic<int> resolutions{0};
};

class FakeNameService {
 public:
  explicit FakeNameService(std::shared_ptr<FakeNames> names) {
    tcp_transport_testing::SetResolver(
        [names](const std::string& host, uint16_t, std::vector<SockAddr>* addrs) {
          addrs->clear();
          if (host != "multi.test") return Status::IOError("unknown name " + host);
          ++names->resolutions;
          SockAddr a;
          NumericSockAddr("127.0.0.1", names->dead_port, &a);
          addrs->push_back(a);
          NumericSockAddr("127.0.0.1", names->live_port.load(), &a);
          addrs->push_back(a);
          return Status::OK();
        });
  }
  ~FakeNameService() { tcp_transport_testing::SetResolver(nullptr); }
};

TEST(TcpTransportBookTest, ANameWithSeveralAddressesFailsOverAndIsResolvedAgain) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b{"127.0.0.1", FreePort(), 2};
  auto names = std::make_shared<FakeNames>();
  names->dead_port = FreePort();
  names->live_port = b.port;
  FakeNameService fake(names);
  const NodeInfo b_named{"multi.test", b.port, 2};
  Inbox in_a, in_b;
  auto ta = StartTransport(a, {a, b_named}, &in_a);
  auto tb = StartTransport(b, {a, b}, &in_b);
  ASSERT_TRUE(ta && tb);
  // The first address is refused; the second, of the same resolution, works.
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "first"));
  EXPECT_EQ(1, names->resolutions.load());
  EXPECT_EQ(1u, ta->stats().connects);
  // The name moves: node 2 restarts on another port and the name service
  // says so. Once both addresses it knew fail, the transport asks again.
  tb->Stop();
  const NodeInfo b2{"127.0.0.1", FreePort(), 2};
  names->live_port = b2.port;
  Inbox in_b2;
  auto tb2 = StartTransport(b2, {a, b2}, &in_b2);
  ASSERT_TRUE(tb2);
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b2, "moved"));
  EXPECT_GE(names->resolutions.load(), 2);
  EXPECT_EQ(0u, ta->stats().resolve_failures);
  ta->Stop();
}

TEST(TcpTransportBookTest, SetPeersChecksItsArguments) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b{"127.0.0.1", FreePort(), 2};
  Inbox in_a, in_b;
  auto ta = StartTransport(a, {a, b}, &in_a);
  auto tb = StartTransport(b, {a, b}, &in_b);
  ASSERT_TRUE(ta && tb);
  ASSERT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "before"));
  // Refused, and the book is kept.
  EXPECT_TRUE(ta->SetPeers({a, b, NodeInfo{"127.0.0.1", 9, 2}}).IsInvalidArgument());
  EXPECT_TRUE(ta->SetPeers({a, NodeInfo{"db.example", 9}}).IsInvalidArgument());
  EXPECT_TRUE(ta->SetPeers({a, NodeInfo{"127.0.0.1", 0, 3}}).IsInvalidArgument());
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "kept"));
  // Self's entry is ignored, whatever its address; the same book again
  // changes nothing.
  EXPECT_TRUE(ta->SetPeers({NodeInfo{"127.0.0.9", 1, 1}, b}).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(ta->SetPeers({b, a}).ok());
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "same"));
  EXPECT_EQ(1u, ta->stats().connects);
  EXPECT_EQ(0u, ta->stats().disconnects);
  EXPECT_EQ(0u, ta->stats().connections_closed_removed_peer);
  ta->Stop();
  EXPECT_TRUE(ta->SetPeers({a, b}).IsStopped());
}

// A transport written before SetPeers existed.
class FixedTransport : public Transport {
 public:
  Status Start(Receiver) override { return Status::OK(); }
  Status Send(uint64_t, std::string) override { return Status::OK(); }
  void Stop() override {}
};

TEST(TcpTransportBookTest, SetPeersIsNotSupportedByDefault) {
  FixedTransport t;
  EXPECT_TRUE(t.SetPeers({}).IsNotSupported());
}

// Sends numbered messages from `t` to `to` until told to stop; counts them.
class Traffic {
 public:
  Traffic(TcpTransport* t, uint64_t to) : thread_([this, t, to] {
    while (!stop_.load()) {
      Status s = t->Send(to, "t" + std::to_string(sent_));
      EXPECT_TRUE(s.ok()) << s.ToString();
      ++sent_;
      std::this_thread::sleep_for(milliseconds(1));
    }
  }) {}
  // Returns the number of messages sent.
  int Finish() {
    stop_.store(true);
    thread_.join();
    return sent_;
  }

 private:
  std::atomic<bool> stop_{false};
  int sent_ = 0;  // written by thread_ only, read after join
  std::thread thread_;
};

// Every message of a Traffic arrived, once and in order.
void ExpectAllInOrder(Inbox* inbox, uint64_t from, int sent) {
  ASSERT_TRUE(WaitUntil([&] { return inbox->Got(from, "t" + std::to_string(sent - 1)); }));
  int next = 0;
  for (const std::string& m : inbox->From(from)) {
    if (m[0] != 't') continue;
    EXPECT_EQ("t" + std::to_string(next), m);
    ++next;
  }
  EXPECT_EQ(sent, next);
}

TEST(TcpTransportBookTest, SetPeersAddsAPeerWhileTrafficFlows) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b{"127.0.0.1", FreePort(), 2};
  const NodeInfo c{"127.0.0.1", FreePort(), 3};
  Inbox in_a, in_b, in_c;
  auto ta = StartTransport(a, {a, b}, &in_a);
  auto tb = StartTransport(b, {a, b}, &in_b);
  auto tc = StartTransport(c, {a, b, c}, &in_c);
  ASSERT_TRUE(ta && tb && tc);
  ASSERT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "ab"));
  ASSERT_TRUE(LinkWorks(tb.get(), 2, 1, &in_a, "ba"));
  // Not in the book yet: Send refuses, and c's frames are dropped.
  EXPECT_TRUE(ta->Send(3, "early").IsInvalidArgument());
  ASSERT_TRUE(tc->Send(1, "knock").ok());
  ASSERT_TRUE(WaitUntil([&] { return ta->stats().frames_dropped_non_member >= 1; }));

  Traffic ab(ta.get(), 2), ba(tb.get(), 1);
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(ta->SetPeers({a, b, c}).ok());
  ASSERT_TRUE(tb->SetPeers({a, b, c}).ok());
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 3, &in_c, "ac"));
  EXPECT_TRUE(LinkWorks(tc.get(), 3, 1, &in_a, "ca"));
  EXPECT_TRUE(LinkWorks(tb.get(), 2, 3, &in_c, "bc"));
  EXPECT_TRUE(LinkWorks(tc.get(), 3, 2, &in_b, "cb"));
  std::this_thread::sleep_for(milliseconds(50));
  const int sent_ab = ab.Finish();
  const int sent_ba = ba.Finish();
  // The others' connections were not disturbed: nothing lost, no reconnect.
  ExpectAllInOrder(&in_b, 1, sent_ab);
  ExpectAllInOrder(&in_a, 2, sent_ba);
  EXPECT_EQ(0u, ta->stats().disconnects);
  EXPECT_EQ(0u, tb->stats().disconnects);
  EXPECT_EQ(2u, ta->stats().connects);  // to b, then to c
}

TEST(TcpTransportBookTest, SetPeersRemovesAPeer) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b{"127.0.0.1", FreePort(), 2};
  const NodeInfo c{"127.0.0.1", FreePort(), 3};
  Inbox in_a, in_b, in_c;
  auto ta = StartTransport(a, {a, b, c}, &in_a);
  auto tb = StartTransport(b, {a, b, c}, &in_b);
  auto tc = StartTransport(c, {a, b, c}, &in_c);
  ASSERT_TRUE(ta && tb && tc);
  ASSERT_TRUE(LinkWorks(ta.get(), 1, 3, &in_c, "ac"));
  ASSERT_TRUE(LinkWorks(tc.get(), 3, 1, &in_a, "ca"));
  ASSERT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "ab"));

  Traffic ab(ta.get(), 2), ca(tc.get(), 1);
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(ta->SetPeers({a, b}).ok());
  // a closes both connections with c: its own (for the removed peer) and
  // c's into a, either at the book change or, when a frame of c's arrives
  // first, as a non-member frame's connection (an error close).
  ASSERT_TRUE(WaitUntil([&] {
    const TransportStats st = ta->stats();
    return st.connections_closed_removed_peer >= 1 &&
           st.connections_closed_removed_peer + st.connections_closed_on_error >= 2;
  })) << ta->stats().connections_closed_removed_peer << " "
      << ta->stats().connections_closed_on_error;
  EXPECT_TRUE(ta->Send(3, "gone").IsInvalidArgument());
  // c still sends to a (c's book still has a): c sees its connection
  // closed, reconnects, and a drops its frames from the header on.
  const uint64_t dropped = ta->stats().frames_dropped_non_member;
  ASSERT_TRUE(WaitUntil([&] { return ta->stats().frames_dropped_non_member > dropped + 2; }));
  EXPECT_GE(tc->stats().disconnects, 1u);
  const size_t from_c = in_a.From(3).size();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(from_c, in_a.From(3).size());  // nothing more delivered from c
  const int sent_ab = ab.Finish();
  ca.Finish();
  ExpectAllInOrder(&in_b, 1, sent_ab);  // a -> b went on undisturbed
  EXPECT_EQ(0u, ta->stats().disconnects);
  EXPECT_EQ(0u, tb->stats().frames_dropped_non_member);
}

TEST(TcpTransportBookTest, SetPeersFollowsAChangedAddress) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b_old{"127.0.0.1", FreePort(), 2};
  Inbox in_a, in_b_old, in_b_new;
  auto ta = StartTransport(a, {a, b_old}, &in_a);
  auto tb = StartTransport(b_old, {a, b_old}, &in_b_old);
  ASSERT_TRUE(ta && tb);
  ASSERT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b_old, "old"));
  // Node 2 moves: a new process listens elsewhere (by name, this time)
  // while the old one is still up; the connection to the old address is
  // closed and nothing more goes there.
  NodeInfo b_new{"localhost", FreePort(), 2};
  auto tb2 = StartTransport(b_new, {a, b_new}, &in_b_new);
  ASSERT_TRUE(tb2);
  ASSERT_TRUE(ta->SetPeers({a, b_new}).ok());
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b_new, "new"));
  EXPECT_TRUE(LinkWorks(tb2.get(), 2, 1, &in_a, "back"));
  EXPECT_EQ(1u, ta->stats().connections_closed_removed_peer);
  const size_t at_old = in_b_old.From(1).size();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(ta->Send(2, "after").ok());
  ASSERT_TRUE(WaitUntil([&] { return in_b_new.Got(1, "after"); }));
  EXPECT_EQ(at_old, in_b_old.From(1).size());
  tb->Stop();
  // And back to an address given as a number.
  tb2->Stop();
  const NodeInfo b_third{"127.0.0.1", FreePort(), 2};
  Inbox in_b_third;
  auto tb3 = StartTransport(b_third, {a, b_third}, &in_b_third);
  ASSERT_TRUE(tb3);
  ASSERT_TRUE(ta->SetPeers({a, b_third}).ok());
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b_third, "third"));
}

TEST(TcpTransportBookTest, FramesQueuedForAMovedPeerGoToItsNewAddress) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b_old{"127.0.0.1", FreePort(), 2};  // nobody listens there
  const NodeInfo b_new{"127.0.0.1", FreePort(), 2};
  Inbox in_a, in_b;
  auto ta = StartTransport(a, {a, b_old}, &in_a);
  ASSERT_TRUE(ta);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(ta->Send(2, "q" + std::to_string(i)).ok());
  auto tb = StartTransport(b_new, {a, b_new}, &in_b);
  ASSERT_TRUE(tb);
  ASSERT_TRUE(ta->SetPeers({a, b_new}).ok());
  EXPECT_TRUE(WaitUntil([&] { return in_b.Got(1, "q9"); }));
  EXPECT_TRUE(in_b.Got(1, "q0"));
}

TEST(TcpTransportBookTest, SetPeersRacingSendsAndTrafficIsSafe) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  const NodeInfo b{"127.0.0.1", FreePort(), 2};
  const NodeInfo c{"127.0.0.1", FreePort(), 3};
  const NodeInfo c_moved{"localhost", c.port, 3};  // same listener, by name
  Inbox in_a, in_b, in_c;
  auto ta = StartTransport(a, {a, b, c}, &in_a);
  auto tb = StartTransport(b, {a, b, c}, &in_b);
  auto tc = StartTransport(c, {a, b, c}, &in_c);
  ASSERT_TRUE(ta && tb && tc);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; !stop.load(); ++n) {
        // Ok or InvalidArgument (c is out of the book at times); never more.
        Status s = ta->Send(i == 0 ? 2 : 3, "r" + std::to_string(n));
        EXPECT_TRUE(s.ok() || s.IsInvalidArgument()) << s.ToString();
        if (n % 64 == 0) std::this_thread::sleep_for(milliseconds(1));
      }
    });
  }
  threads.emplace_back([&] {
    for (int n = 0; !stop.load(); ++n) {
      // Add, remove and move c, and repeat books, as fast as it goes.
      const std::vector<NodeInfo> books[] = {{a, b, c}, {a, b}, {b, c_moved}, {a, b, c}};
      EXPECT_TRUE(ta->SetPeers(books[n % 4]).ok());
      (void)ta->stats();
      std::this_thread::sleep_for(milliseconds(n % 3));
    }
  });
  std::this_thread::sleep_for(milliseconds(500));
  stop.store(true);
  for (auto& th : threads) th.join();
  // Whatever the races, the final book works both ways.
  ASSERT_TRUE(ta->SetPeers({a, b, c}).ok());
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 2, &in_b, "end-b"));
  EXPECT_TRUE(LinkWorks(ta.get(), 1, 3, &in_c, "end-c"));
  EXPECT_TRUE(LinkWorks(tc.get(), 3, 1, &in_a, "end-ca"));
  ta->Stop();  // with whatever is queued or resolving
}

// A raw client connection to `port` on 127.0.0.1.
int RawConnect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  EXPECT_EQ(0, connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  return fd;
}

TEST(TcpTransportBookTest, TheDefaultIncomingLimitFollowsTheBook) {
  const NodeInfo a{"127.0.0.1", FreePort(), 1};
  Inbox in_a;
  auto ta = StartTransport(a, {a}, &in_a);  // a book of 1: 4 * 1 + 16 = 20
  ASSERT_TRUE(ta);
  std::vector<NodeInfo> book{a};
  for (uint64_t id = 2; id <= 10; ++id) book.push_back(NodeInfo{"127.0.0.1", 1, id});
  std::vector<int> fds;
  for (int i = 0; i < 25; ++i) fds.push_back(RawConnect(a.port));
  ASSERT_TRUE(WaitUntil([&] { return ta->stats().connections_rejected_over_limit == 5; }))
      << ta->stats().connections_rejected_over_limit;
  // A book of 10: 56.
  ASSERT_TRUE(ta->SetPeers(book).ok());
  for (int i = 0; i < 30; ++i) fds.push_back(RawConnect(a.port));
  std::this_thread::sleep_for(milliseconds(200));
  // 20 + 30 = 50 open of the 56 allowed now (the 5 rejected are closed).
  EXPECT_EQ(5u, ta->stats().connections_rejected_over_limit);
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace tcp_transport_book_test
}  // namespace chorus
