// echo_server: one replica of a chorus cluster whose state machine prints
// every value it executes. Each line read from stdin is proposed (in order,
// one at a time) to group --propose_group.
//
//   echo_server --node=127.0.0.1:7001
//       --nodes=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --data_dir=/tmp/n1
//       [--create_if_missing]     (on the node's first start only)
//
// stdout (one line each, flushed at once):
//   ready node=<ip:port> groups=<n>                  after Node::Open succeeded
//   executed instance=<i> value=<v>                  every executed value
//                                                    (group=<g> first when
//                                                    --group_count > 1)
//   proposed instance=<i> value=<v>                  a line of stdin was chosen
//   error value=<v> status=<Status::ToString()>      a proposal failed
//   checkpoint loaded instance=<i> count=<n> hash=<h>  a checkpoint was loaded
//                                                    (restart, or caught up from
//                                                    a peer, in this process)
//   status executed=<e> log_start=<l> checkpoint=<c> loaded=<n> sent=<s>
//          count=<n> hash=<h>                         answer to the stdin line
//                                                    "!status" (group --propose_group;
//                                                    not proposed)
// The node keeps running after stdin ends (it still executes what the others
// propose) until SIGINT or SIGTERM, unless --exit_on_eof.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"
#include "sample/echo/echo_state.h"
#include "tools/node_flags.h"
#include "tools/print_line.h"
#include "tools/program_flags.h"
#include "tools/stop_signals.h"

DEFINE_string(node, "", "this node, ip:port (REQUIRED)");
DEFINE_string(nodes, "", "every node of the cluster, ip:port,ip:port,... (REQUIRED)");
DEFINE_string(data_dir, "", "directory of this node's paxos log (REQUIRED)");
DEFINE_bool(create_if_missing, false,
            "create the paxos log if --data_dir is missing or empty: only on this node's first "
            "start (without it a missing log is an error, never a silent fresh start)");
DEFINE_int32(group_count, 1, "number of paxos groups");
DEFINE_int32(propose_group, 0, "the group stdin lines are proposed to");
DEFINE_bool(sync_writes, true, "fsync every promise/accept (false: faster, unsafe)");
DEFINE_uint64(checkpoint_interval, 0,
              "make a checkpoint every N executed instances and trim the log behind it "
              "(0: no checkpoints, the log is never trimmed)");
DEFINE_uint64(log_keep, 20000, "instances of log kept below the newest checkpoint");
DEFINE_bool(exit_on_eof, false, "exit once stdin ends and its last proposal returned");

namespace {

using chorus::PrintLine;
using chorus::echo::EchoStateMachine;

int Usage(const std::string& problem) {
  std::fprintf(stderr, "echo_server: %s\n%s\n", problem.c_str(),
               gflags::ProgramUsage());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "echo_server --node=ip:port --nodes=ip:port,ip:port,... --data_dir=DIR "
      "[--create_if_missing]\n"
      "proposes every stdin line; prints every executed value",
      &argc, &argv);

  chorus::Options options;
  const std::string problem =
      chorus::SetNodeAddresses(FLAGS_node, FLAGS_nodes, FLAGS_data_dir, &options);
  if (!problem.empty()) return Usage(problem);
  if (FLAGS_propose_group < 0 || FLAGS_propose_group >= FLAGS_group_count) {
    return Usage("--propose_group must be in [0, --group_count)");
  }
  options.create_if_missing = FLAGS_create_if_missing;
  options.group_count = FLAGS_group_count;
  options.sync_writes = FLAGS_sync_writes;
  options.checkpoint_interval_instances = FLAGS_checkpoint_interval;
  options.log_keep_instances = FLAGS_log_keep;

  std::vector<std::unique_ptr<EchoStateMachine>> machines;
  for (int g = 0; g < FLAGS_group_count; ++g) {
    machines.push_back(std::make_unique<EchoStateMachine>(FLAGS_group_count > 1,
                                                          FLAGS_checkpoint_interval > 0));
    options.state_machines.emplace_back(static_cast<uint32_t>(g), machines.back().get());
  }

  // SIGINT/SIGTERM are taken by sigwait below: block them before any thread
  // exists so that every thread inherits the mask.
  const sigset_t stop_signals = chorus::BlockStopSignals();

  std::unique_ptr<chorus::Node> node;
  chorus::Status s = chorus::Node::Open(options, &node);
  if (!s.ok()) {
    std::fprintf(stderr, "echo_server: Open: %s\n", s.ToString().c_str());
    return 1;
  }
  PrintLine("ready node=" + options.self.ToString() +
            " groups=" + std::to_string(FLAGS_group_count));

  // The proposer reads stdin; it may be blocked in a read when a signal
  // arrives, so it is not joined: the process exits after Stop().
  std::thread proposer([&node, &machines] {
    const uint32_t group = static_cast<uint32_t>(FLAGS_propose_group);
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line == "!status") {
        chorus::GroupStatus gs;
        node->GetGroupStatus(group, &gs);
        PrintLine("status executed=" + std::to_string(gs.executed) +
                  " log_start=" + std::to_string(gs.log_start) +
                  " checkpoint=" + std::to_string(gs.checkpoint_instance) +
                  " loaded=" + std::to_string(gs.checkpoints_loaded) +
                  " sent=" + std::to_string(gs.checkpoints_sent) + " " +
                  machines[group]->StateLine());
        continue;
      }
      uint64_t instance = 0;
      chorus::Status st = node->Propose(group, line, &instance);
      if (st.ok()) {
        PrintLine("proposed instance=" + std::to_string(instance) + " value=" + line);
      } else {
        PrintLine("error value=" + line + " status=" + st.ToString());
        if (st.IsStopped()) break;
      }
    }
    if (FLAGS_exit_on_eof) kill(getpid(), SIGTERM);
  });
  proposer.detach();

  chorus::WaitForStopSignal(stop_signals);
  node->Stop();
  std::fflush(stdout);
  // Not returning from main: the detached proposer may still use `node`.
  std::_Exit(0);
}
