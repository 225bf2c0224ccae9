// What a node logs (Options::log_hook at info level) over a normal life: a
// 3-node cluster in one process over loopback TCP starts, elects a master,
// hands the mastership over, loses its master to a normal stop, elects
// another, restarts the stopped node and stops. None of that is worth a
// warning: the test asserts no line at kWarning or above, and the info lines
// of the events that happened (open/recovery, master gained and lost, a new
// master, connections up and down). A second test has a node catch up and
// checks its catch-up lines. Waits poll for states; nothing asserts a time.
#include <string>

#include <gtest/gtest.h>

#include "chorus/node.h"
#include "unittest/node/ops_cluster.h"

namespace chorus {
namespace logging_test {
namespace {

using testing::LogLines;
using testing::OpsCluster;
using testing::WaitUntil;

void ExpectNoWarnings(const LogLines& log) {
  const auto bad = log.AtLeast(LogLevel::kWarning);
  std::string text;
  for (const auto& l : bad) text += "  [node " + std::to_string(l.node) + "] " + l.text + "\n";
  EXPECT_TRUE(bad.empty()) << "lines at warning or above:\n" << text;
}

TEST(LoggingTest, NormalStartMasterChangeAndStopLogNoWarning) {
  OpsCluster cluster(3, /*election=*/true);
  ASSERT_TRUE(cluster.StartAll().ok());
  int master = cluster.WaitForMaster();
  ASSERT_GE(master, 0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cluster.node(master)->Propose(0, "a", nullptr).ok());

  // A hand-over.
  const int target = (master + 1) % 3;
  ASSERT_TRUE(cluster.node(master)->TransferMaster(0, cluster.info(target).id()).ok());
  ASSERT_TRUE(WaitUntil([&] { return cluster.AgreedMaster() == target; }));
  const int old_master = master;
  master = target;

  // The master stops (normally); the other two elect one of them.
  cluster.Stop(master);
  const int stopped = master;
  master = cluster.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_NE(master, stopped);
  ASSERT_TRUE(cluster.node(master)->Propose(0, "b", nullptr).ok());

  // It comes back and catches up; then everything stops.
  ASSERT_TRUE(cluster.Start(stopped).ok());
  ASSERT_TRUE(WaitUntil([&] {
    return cluster.node(stopped)->GetNowInstanceId(0) == cluster.node(master)->GetNowInstanceId(0);
  }));
  for (int i = 0; i < 3; ++i) cluster.Stop(i);

  const LogLines& log = cluster.log();
  ExpectNoWarnings(log);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(log.Has(i, "group 0: opened in")) << i << "\n" << log.Dump();
    EXPECT_TRUE(log.Has(i, "transport: connection to")) << i << "\n" << log.Dump();
  }
  EXPECT_TRUE(log.Has(old_master, "group 0: this node is the master")) << log.Dump();
  EXPECT_TRUE(log.Has(old_master, "group 0: this node is no longer the master")) << log.Dump();
  EXPECT_TRUE(log.Has(stopped, "group 0: this node is the master")) << log.Dump();
  EXPECT_TRUE(log.Has(master, "group 0: this node is the master")) << log.Dump();
  EXPECT_TRUE(log.Has(-1, "group 0: master is now")) << log.Dump();
  EXPECT_TRUE(log.Has(-1, " down")) << log.Dump();
  // The restart replayed the log it had.
  EXPECT_TRUE(log.Has(stopped, "replayed")) << log.Dump();
}

TEST(LoggingTest, CatchUpIsLoggedAtInfo) {
  OpsCluster cluster(3, /*election=*/true);
  cluster.options_hook = [](int, Options* o) { o->max_inflight = 4; };  // catch-up lag: 8
  ASSERT_TRUE(cluster.StartAll().ok());
  ASSERT_GE(cluster.WaitForMaster(), 0);
  // Restart 0 and 1 alone (their transports then hold nothing queued for
  // node 2), and run a while without node 2.
  for (int i = 0; i < 3; ++i) cluster.Stop(i);
  ASSERT_TRUE(cluster.Start(0).ok());
  ASSERT_TRUE(cluster.Start(1).ok());
  const int master = cluster.WaitForMaster();
  ASSERT_GE(master, 0);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(cluster.node(master)->Propose(0, "c", nullptr).ok());
  ASSERT_TRUE(cluster.Start(2).ok());
  ASSERT_TRUE(WaitUntil([&] {
    GroupMetrics m;
    return cluster.node(2)->GetMetrics(0, &m).ok() && m.catchups_finished >= 1 &&
           !m.catching_up;
  })) << cluster.log().Dump();
  EXPECT_TRUE(cluster.log().Has(2, "group 0: catch-up started at instance")) << cluster.log().Dump();
  EXPECT_TRUE(cluster.log().Has(2, "group 0: catch-up done at instance")) << cluster.log().Dump();
  for (int i = 0; i < 3; ++i) cluster.Stop(i);
  ExpectNoWarnings(cluster.log());
}

}  // namespace
}  // namespace logging_test
}  // namespace chorus
