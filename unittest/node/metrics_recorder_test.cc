// The pieces behind Node::GetMetrics: histogram bucket edges (a value equal
// to a bound counts in that bound's bucket; above every bound: +Inf), the
// propose outcome classes, the event counters of OnRound (master gained,
// lost, changed; catch-up begun and ended), and the transport's per-peer
// rate limit of connection lines.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "node/metrics_recorder.h"
#include "node/tcp_conn_log.h"

namespace chorus {
namespace metrics_recorder_test {
namespace {

TEST(AtomicHistogramTest, BucketEdges) {
  AtomicHistogram<kLatencyBounds> h(kLatencyBoundsUs);
  h.Observe(0);
  h.Observe(50);       // == the first bound: bucket 0
  h.Observe(51);       // bucket 1
  h.Observe(5000000);  // == the last bound
  h.Observe(5000001);  // +Inf
  LatencyHistogram out;
  h.Read(&out);
  EXPECT_EQ(out.counts[0], 2u);
  EXPECT_EQ(out.counts[1], 1u);
  EXPECT_EQ(out.counts[kLatencyBounds - 1], 1u);
  EXPECT_EQ(out.counts[kLatencyBounds], 1u);
  EXPECT_EQ(out.count, 5u);
  EXPECT_EQ(out.sum, 0u + 50 + 51 + 5000000 + 5000001);
}

TEST(GroupMetricsRecorderTest, ProposeOutcomes) {
  GroupMetricsRecorder r(0, 1, 8, nullptr);
  const auto t = GroupMetricsRecorder::Clock::now();
  EXPECT_TRUE(r.CountPropose(Status::OK(), t).ok());
  EXPECT_TRUE(r.CountPropose(Status::Busy("x"), t).IsBusy());
  r.CountPropose(Status::Timeout("x"), t);
  r.CountPropose(Status::NotMaster("x"), t);
  r.CountPropose(Status::Stopped("x"), t);
  r.CountPropose(Status::TooLarge("x"), t);
  r.CountPropose(Status::IOError("x"), t);
  GroupMetrics m;
  r.Read(&m);
  EXPECT_EQ(m.proposals_ok, 1u);
  EXPECT_EQ(m.proposals_busy, 1u);
  EXPECT_EQ(m.proposals_timeout, 1u);
  EXPECT_EQ(m.proposals_not_master, 1u);
  EXPECT_EQ(m.proposals_stopped, 1u);
  EXPECT_EQ(m.proposals_failed_other, 2u);
  EXPECT_EQ(m.propose_latency_us.count, 1u);  // OK only
}

TEST(GroupMetricsRecorderTest, RoundEvents) {
  std::vector<std::string> lines;
  Logger logger([&lines](LogLevel, const std::string& l) { lines.push_back(l); }, LogLevel::kInfo);
  const uint64_t self = 7, other = 9;
  GroupMetricsRecorder r(3, self, /*catchup_lag=*/8, &logger);
  RoundFacts f;
  r.OnRound(f);  // nothing known
  f.master_node = self;
  f.self_master = true;
  r.OnRound(f);
  f.master_node = other;
  f.self_master = false;
  f.master_chosen_end = 100;
  f.executed = 50;  // 50 behind: a catch-up
  r.OnRound(f);
  f.executed = 100;
  r.OnRound(f);
  GroupMetrics m;
  r.Read(&m);
  EXPECT_EQ(m.master_gained, 1u);
  EXPECT_EQ(m.master_lost, 1u);
  EXPECT_EQ(m.master_changes, 2u);
  EXPECT_EQ(m.catchups_started, 1u);
  EXPECT_EQ(m.catchups_finished, 1u);
  EXPECT_FALSE(m.catching_up);
  EXPECT_EQ(m.rounds, 4u);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("group 3: this node is the master"), std::string::npos) << all;
  EXPECT_NE(all.find("group 3: this node is no longer the master"), std::string::npos) << all;
  EXPECT_NE(all.find("group 3: master is now 0.0.0.0:9"), std::string::npos) << all;
  EXPECT_NE(all.find("group 3: catch-up started at instance 50"), std::string::npos) << all;
  EXPECT_NE(all.find("group 3: catch-up done at instance 100 (50 instances from 50)"),
            std::string::npos)
      << all;
}

TEST(ConnectionLogTest, RateLimitedPerPeer) {
  std::vector<std::string> lines;
  TcpTransportOptions o;
  o.log_hook = [&lines](LogLevel, const std::string& l) { lines.push_back(l); };
  tcp::ConnectionLog log(o);
  const NodeInfo a{"127.0.0.1", 1000}, b{"127.0.0.1", 1001};
  for (int i = 0; i < 10; ++i) {
    log.Down(a, 0);
    log.Up(a);
  }
  // A burst of kBurst lines, then silence (the rest is counted).
  EXPECT_EQ(lines.size(), static_cast<size_t>(tcp::ConnectionLog::kBurst));
  log.Up(b);  // another peer has its own budget
  ASSERT_EQ(lines.size(), static_cast<size_t>(tcp::ConnectionLog::kBurst) + 1);
  EXPECT_EQ(lines.back(), "transport: connection to 127.0.0.1:1001 up");
  TcpTransportOptions silent;  // no hook: nothing, no crash
  tcp::ConnectionLog quiet(silent);
  quiet.Up(a);
}

}  // namespace
}  // namespace metrics_recorder_test
}  // namespace chorus
