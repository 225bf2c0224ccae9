// The /metrics and /status endpoint (chorus_prometheus) of a real 3-node
// cluster in one process: scraped over loopback HTTP, the counters move
// after proposals; the text is the Prometheus format (TYPE lines,
// cumulative histogram buckets ending in +Inf); /status names the members
// and the master; other paths get 404.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/metrics_server.h"
#include "unittest/node/ops_cluster.h"
#include "unittest/prometheus/http_get.h"

namespace chorus {
namespace metrics_server_test {
namespace {

using testing::HttpGet;
using testing::OpsCluster;
using testing::SampleValue;

TEST(MetricsServerTest, ScrapedCountersMoveAfterProposals) {
  OpsCluster cluster(3, /*election=*/true);
  ASSERT_TRUE(cluster.StartAll().ok());
  const int master = cluster.WaitForMaster();
  ASSERT_GE(master, 0);
  const Options options = cluster.OptionsFor(master);
  std::unique_ptr<MetricsServer> server;
  ASSERT_TRUE(MetricsServer::Start(cluster.node(master), options, {}, &server).ok());
  ASSERT_NE(server->port(), 0);

  const std::string ok = "chorus_proposals_total{group=\"0\",outcome=\"ok\"}";
  const std::string before = HttpGet(server->port(), "/metrics");
  ASSERT_NE(before.find("# TYPE chorus_proposals_total counter"), std::string::npos) << before;
  EXPECT_EQ(SampleValue(before, ok), 0) << before;
  const double frames_before = SampleValue(before, "chorus_transport_frames_sent_total");
  EXPECT_GT(frames_before, 0);  // heartbeats

  for (int i = 0; i < 7; ++i) ASSERT_TRUE(cluster.node(master)->Propose(0, "m", nullptr).ok());
  // Gauges are published at the end of the round that answered the
  // proposer: wait for the round of the last value.
  std::string after;
  ASSERT_TRUE(testing::WaitUntil([&] {
    after = HttpGet(server->port(), "/metrics");
    return SampleValue(after, "chorus_chosen_end{group=\"0\"}") >= 8;  // the noop + 7
  })) << after;
  EXPECT_EQ(SampleValue(after, ok), 7) << after;
  EXPECT_EQ(SampleValue(after, "chorus_propose_latency_seconds_count{group=\"0\"}"), 7);
  EXPECT_EQ(SampleValue(after, "chorus_propose_latency_seconds_bucket{group=\"0\",le=\"+Inf\"}"),
            7);
  EXPECT_GT(SampleValue(after, "chorus_log_syncs_total{group=\"0\"}"), 0);
  EXPECT_EQ(SampleValue(after, "chorus_is_master{group=\"0\"}"), 1);
  EXPECT_GT(SampleValue(after, "chorus_transport_frames_sent_total"), frames_before);
  EXPECT_EQ(SampleValue(after, "chorus_transport_dropped_total{reason=\"corrupt\"}"), 0);

  int code = 0;
  const std::string status = HttpGet(server->port(), "/status", &code);
  EXPECT_EQ(code, 200);
  EXPECT_NE(status.find("\"initial_members\":[\"" + cluster.info(0).ToString()), std::string::npos)
      << status;
  // The membership this node knows: the genesis (v0), the three voters.
  std::vector<NodeInfo> sorted = {cluster.info(0), cluster.info(1), cluster.info(2)};
  std::sort(sorted.begin(), sorted.end(),
            [](const NodeInfo& a, const NodeInfo& b) { return a.id() < b.id(); });
  std::string members;
  for (const NodeInfo& n : sorted) {
    members += std::string(members.empty() ? "" : ",") + "{\"id\":" + std::to_string(n.id()) +
               ",\"node\":\"" + n.ToString() + "\",\"voter\":true}";
  }
  EXPECT_NE(status.find("\"role\":\"voter\",\"membership\":{\"version\":0,\"active_from\":0,"
                        "\"pending\":false,\"members\":[" + members + "]}"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("\"master\":\"" + cluster.info(master).ToString() + "\""),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("\"is_master\":true"), std::string::npos) << status;
  HttpGet(server->port(), "/nothing", &code);
  EXPECT_EQ(code, 404);
  server->Stop();
}

// chorus_admin live: every member's /status, the master, lags, roles and
// the membership.
TEST(MetricsServerTest, ChorusAdminLiveReadsEveryMember) {
  OpsCluster cluster(3, /*election=*/true);
  ASSERT_TRUE(cluster.StartAll().ok());
  const int master = cluster.WaitForMaster();
  ASSERT_GE(master, 0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cluster.node(master)->Propose(0, "l", nullptr).ok());
  std::vector<Options> options;
  std::vector<std::unique_ptr<MetricsServer>> servers(3);
  std::string endpoints;
  for (int i = 0; i < 3; ++i) options.push_back(cluster.OptionsFor(i));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(MetricsServer::Start(cluster.node(i), options[i], {}, &servers[i]).ok());
    endpoints += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(servers[i]->port());
  }
  auto run = [](const std::string& args, int* code) {
    std::string out;
    FILE* p = popen((std::string(CHORUS_ADMIN_PATH) + " " + args + " 2>&1").c_str(), "r");
    char buf[4096];
    size_t n;
    while (p != nullptr && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    const int status = p != nullptr ? pclose(p) : -1;
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
  };
  int code = -1;
  std::string out = run("live " + endpoints, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(cluster.info(master).ToString()), std::string::npos) << out;
  EXPECT_NE(out.find("master"), std::string::npos) << out;
  EXPECT_NE(out.find("group 0 membership v0 (active from 0): voters "), std::string::npos) << out;
  out = run("--json live " + endpoints, &code);
  EXPECT_EQ(code, 0) << out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(out.find("\"node\":\"" + cluster.info(i).ToString() + "\""), std::string::npos)
        << out;
  }
  EXPECT_NE(out.find("\"is_master\":true"), std::string::npos) << out;
  EXPECT_NE(out.find("\"lag\":"), std::string::npos) << out;
  EXPECT_NE(out.find("\"errors\":[]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"role\":\"voter\",\"membership_version\":0"), std::string::npos) << out;
  EXPECT_NE(out.find("\"memberships\":[{\"group\":0,\"version\":0,"), std::string::npos) << out;
  for (auto& s : servers) s->Stop();
}

}  // namespace
}  // namespace metrics_server_test
}  // namespace chorus
