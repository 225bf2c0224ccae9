// Node::GetMetrics / GetTransportMetrics on a real 3-node cluster in one
// process over loopback TCP: the counters move with proposals (ok, not
// master, other failures), histograms count what they should, gauges follow
// the log, transport counters see traffic. Asserts counts, never times.
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/metrics.h"
#include "chorus/node.h"
#include "unittest/node/ops_cluster.h"

namespace chorus {
namespace metrics_test {
namespace {

using testing::OpsCluster;
using testing::WaitUntil;

template <size_t N>
uint64_t BucketSum(const Histogram<N>& h) {
  uint64_t sum = 0;
  for (uint64_t c : h.counts) sum += c;
  return sum;
}

TEST(MetricsTest, CountersMoveWithProposals) {
  OpsCluster cluster(3, /*election=*/false);
  ASSERT_TRUE(cluster.StartAll().ok());
  GroupMetrics before;
  ASSERT_TRUE(cluster.node(0)->GetMetrics(0, &before).ok());
  EXPECT_EQ(before.proposals_ok, 0u);

  constexpr int kSingle = 20;
  for (int i = 0; i < kSingle; ++i) {
    uint64_t instance = 0;
    ASSERT_TRUE(cluster.node(0)->Propose(0, "v" + std::to_string(i), &instance).ok());
  }
  // BatchPropose from several threads: values share instances.
  constexpr int kThreads = 4, kPerThread = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&cluster, t] {
      for (int i = 0; i < kPerThread; ++i) {
        uint64_t instance = 0;
        uint32_t index = 0;
        EXPECT_TRUE(cluster.node(0)
                        ->BatchPropose(0, "b" + std::to_string(t) + "." + std::to_string(i),
                                       &instance, &index)
                        .ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  const uint64_t total = kSingle + kThreads * kPerThread;

  // Failures: a value above max_value_bytes (other), a bad group (not counted:
  // no group to count it in).
  EXPECT_TRUE(cluster.node(0)->Propose(0, std::string((8u << 20) + 1, 'x'), nullptr).IsTooLarge());
  GroupMetrics m;
  EXPECT_TRUE(cluster.node(0)->GetMetrics(7, &m).IsInvalidArgument());

  // Counters of the proposer's thread and of Apply are exact once the calls
  // returned; the per-round figures are published at the end of the round
  // that answered them: wait for the last one.
  ASSERT_TRUE(WaitUntil([&] {
    return cluster.node(0)->GetMetrics(0, &m).ok() && m.executed == m.chosen_end &&
           m.instances_per_round.sum >= m.values_per_instance.count;
  }));
  EXPECT_EQ(m.proposals_ok, total);
  EXPECT_EQ(m.proposals_failed_other, 1u);
  EXPECT_EQ(m.proposals_busy + m.proposals_timeout + m.proposals_not_master + m.proposals_stopped,
            0u);
  EXPECT_EQ(m.propose_latency_us.count, total);
  EXPECT_EQ(BucketSum(m.propose_latency_us), total);
  EXPECT_GT(m.propose_latency_us.sum, 0u);
  // Every vote was synced: at least one sync per single proposal's round.
  EXPECT_GE(m.log_syncs, static_cast<uint64_t>(kSingle));
  EXPECT_GE(m.log_writes, m.log_syncs);
  EXPECT_EQ(m.sync_latency_us.count, m.log_syncs);
  EXPECT_GT(m.rounds, 0u);
  EXPECT_EQ(m.values_executed, total);
  EXPECT_EQ(m.values_per_instance.sum, total);
  EXPECT_GE(m.instances_per_round.sum, m.values_per_instance.count);
  EXPECT_GE(m.chosen_end, static_cast<uint64_t>(kSingle) + 1);
  EXPECT_EQ(m.executed, m.chosen_end);
  EXPECT_EQ(m.instances_in_flight, 0u);
  EXPECT_EQ(m.master_node, 0u);  // election off
  EXPECT_EQ(m.master_changes, 0u);

  // A follower executes the same values (its own proposals: none).
  ASSERT_TRUE(WaitUntil([&] {
    GroupMetrics f;
    return cluster.node(1)->GetMetrics(0, &f).ok() && f.values_executed == total;
  }));
  GroupMetrics f;
  ASSERT_TRUE(cluster.node(1)->GetMetrics(0, &f).ok());
  EXPECT_EQ(f.proposals_ok, 0u);
  EXPECT_GT(f.log_syncs, 0u);  // its votes

  TransportMetrics t;
  ASSERT_TRUE(cluster.node(0)->GetTransportMetrics(&t).ok());
  EXPECT_TRUE(t.known);
  EXPECT_GE(t.connects, 2u);  // to both peers
  EXPECT_GT(t.frames_sent, 0u);
  EXPECT_GT(t.frames_received, 0u);
  EXPECT_GT(t.bytes_sent, t.frames_sent);  // a frame is more than a byte
  EXPECT_GT(t.bytes_received, 0u);
  EXPECT_EQ(t.dropped_corrupt + t.dropped_foreign_cluster + t.dropped_non_member, 0u);

  // Metrics keep answering after Stop().
  cluster.node(0)->Stop();
  GroupMetrics after;
  ASSERT_TRUE(cluster.node(0)->GetMetrics(0, &after).ok());
  EXPECT_EQ(after.proposals_ok, total);
}

TEST(MetricsTest, MasterAndNotMaster) {
  OpsCluster cluster(3, /*election=*/true);
  cluster.options_hook = [](int, Options* o) { o->forward_to_master = false; };
  ASSERT_TRUE(cluster.StartAll().ok());
  const int master = cluster.WaitForMaster();
  ASSERT_GE(master, 0);
  const int follower = (master + 1) % 3;
  ASSERT_TRUE(cluster.node(master)->Propose(0, "x", nullptr).ok());
  ASSERT_TRUE(WaitUntil([&] {
    GroupMetrics f;
    return cluster.node(follower)->GetMetrics(0, &f).ok() &&
           f.master_node == cluster.info(master).id();
  }));
  EXPECT_TRUE(cluster.node(follower)->Propose(0, "y", nullptr).IsNotMaster());

  GroupMetrics m, f;
  ASSERT_TRUE(cluster.node(master)->GetMetrics(0, &m).ok());
  ASSERT_TRUE(cluster.node(follower)->GetMetrics(0, &f).ok());
  EXPECT_TRUE(m.is_master);
  EXPECT_EQ(m.master_gained, 1u);
  EXPECT_EQ(m.master_lost, 0u);
  EXPECT_GE(m.elections_started, 1u);
  EXPECT_EQ(m.proposals_ok, 1u);
  EXPECT_FALSE(f.is_master);
  EXPECT_EQ(f.master_gained, 0u);
  EXPECT_GE(f.master_changes, 1u);  // none -> the master
  EXPECT_EQ(f.proposals_not_master, 1u);

  // A hand-over: the old master counts a loss, the new one a gain.
  ASSERT_TRUE(cluster.node(master)->TransferMaster(0, cluster.info(follower).id()).ok());
  ASSERT_TRUE(WaitUntil([&] {
    GroupMetrics n;
    return cluster.node(follower)->GetMetrics(0, &n).ok() && n.is_master;
  }));
  ASSERT_TRUE(WaitUntil([&] {
    return cluster.node(master)->GetMetrics(0, &m).ok() && m.master_lost == 1;
  }));
  EXPECT_FALSE(m.is_master);
}

}  // namespace
}  // namespace metrics_test
}  // namespace chorus
