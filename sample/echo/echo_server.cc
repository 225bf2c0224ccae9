// echo_server: one replica of a chorus cluster whose state machine prints
// every value it executes. Each line read from stdin is proposed (in order,
// one at a time) to group --propose_group, except the admin lines below.
//
//   echo_server --node=1@127.0.0.1:7001
//       --nodes=1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003 --data_dir=/tmp/n1
//       [--create_if_missing]     (on the node's first start only)
//   echo_server --node=4@127.0.0.1:7004 --join=1@127.0.0.1:7001,2@127.0.0.1:7002
//       --data_dir=/tmp/n4 --create_if_missing --master_election
//                                 (a new node: it joins through those members and
//                                 waits until one of them adds it: "!add")
// Addresses are NodeInfo's "[id@]host:port" (without an id, an IPv4 address
// derives it). Membership changes need --master_election on every node.
//
// stdout (one line each, flushed at once):
//   ready node=<addr> id=<id> groups=<n>             after Node::Open succeeded
//   executed instance=<i> value=<v>                  every executed value
//                                                    (group=<g> first when
//                                                    --group_count > 1)
//   proposed instance=<i> value=<v>                  a line of stdin was chosen
//   error value=<v> status=<Status::ToString()>      a proposal failed (Busy, a
//                                                    definite failure, is retried
//                                                    for --retry_ms first)
//   checkpoint loaded instance=<i> count=<n> hash=<h>  a checkpoint was loaded
//                                                    (restart, or caught up from
//                                                    a peer, in this process)
//   status executed=<e> log_start=<l> checkpoint=<c> loaded=<n> sent=<s>
//          count=<n> hash=<h>                         answer to "!status"
//   master node=<id> addr=<addr> is_master=<0|1>     answer to "!master" (node=0
//                                                    addr=none: no master known)
//   members group=<g> role=<r> version=<v> active_from=<a> pending=<0|1>
//           voters=<id@addr,...> followers=<...|->   "!members" succeeded
//   admin op=<op> args=<args> status=<Status>        every admin line below, once
//                                                    its call returned
// Admin lines (not proposed; group --propose_group; they run one at a time
// on a thread of their own, so proposals go on meanwhile):
//   !members                 GetMembership
//   !add [id@]host:port      AddMember      !follower [id@]host:port  AddFollower
//   !promote id              PromoteFollower !remove id               RemoveMember
//   !change old_id [id@]host:port           ChangeMember
//   !stepdown                StepDown (with --master_election)
// and, answered at once in the stdin thread: !status, !master.
// The node keeps running after stdin ends (it still executes what the others
// propose) until SIGINT or SIGTERM, unless --exit_on_eof.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"
#include "sample/echo/echo_state.h"
#include "tools/member_commands.h"
#include "tools/node_flags.h"
#include "tools/print_line.h"
#include "tools/program_flags.h"
#include "tools/stop_signals.h"

DEFINE_string(node, "", "this node, [id@]host:port (REQUIRED)");
DEFINE_string(nodes, "",
              "the initial members, [id@]host:port,... (REQUIRED unless --join; the log's "
              "membership wins on later starts)");
DEFINE_string(join, "",
              "a NEW node: join the cluster through these members, [id@]host:port,... "
              "(then --nodes is empty; a member adds it: !add)");
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
DEFINE_bool(master_election, false,
            "Options::master_election (membership changes need it on every node)");
DEFINE_int32(retry_ms, 3000,
             "how long a proposal refused with Busy (never proposed) is retried");
DEFINE_int32(membership_timeout_ms, 120000, "Options::membership_timeout_ms");
DEFINE_string(log_level, "warning",
              "chorus's log lines (stderr) at this level and above: debug, info, warning, "
              "error, none");

namespace {

using chorus::PrintLine;
using chorus::echo::EchoStateMachine;

int Usage(const std::string& problem) {
  std::fprintf(stderr, "echo_server: %s\n%s\n", problem.c_str(),
               gflags::ProgramUsage());
  return 2;
}

// Runs the admin lines ("!add ..." etc.) one at a time, in their order, on
// a thread of its own: a membership call may take seconds (the new node
// catches up first), and the proposals of stdin go on meanwhile.
class AdminWorker {
 public:
  AdminWorker(chorus::Node* node, uint32_t group) : node_(node), group_(group) {
    std::thread([this] { Loop(); }).detach();  // the process exits with _Exit
  }

  void Push(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(line);
    cv_.notify_one();
  }

 private:
  void Loop() {
    while (true) {
      std::string line;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !lines_.empty(); });
        line = lines_.front();
        lines_.pop_front();
      }
      Run(line);
    }
  }

  void Run(const std::string& line) {
    std::istringstream words(line.substr(1));  // without the '!'
    std::string op, word;
    std::vector<std::string> args;
    words >> op;
    std::string joined;
    while (words >> word) {
      args.push_back(word);
      joined += (joined.empty() ? "" : " ") + word;
    }
    chorus::Status s;
    if (op == "stepdown") {
      s = args.empty() ? node_->StepDown(group_)
                       : chorus::Status::InvalidArgument("stepdown takes no arguments");
    } else {
      chorus::MembershipInfo info;
      s = chorus::RunMemberCommand(node_, group_, op, args, &info);
      if (s.ok() && op == "members") {
        chorus::GroupStatus gs;
        node_->GetGroupStatus(group_, &gs);
        PrintLine("members group=" + std::to_string(group_) +
                  " role=" + chorus::MemberRoleText(gs.role) + " " +
                  chorus::MembershipLine(info));
      }
    }
    PrintLine("admin op=" + op + " args=" + (joined.empty() ? "-" : joined) +
              " status=" + s.ToString());
  }

  chorus::Node* const node_;
  const uint32_t group_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;  // GUARDED_BY(mu_)
};

// "master node=<id> addr=<addr> is_master=<0|1>".
std::string MasterLine(chorus::Node* node, uint32_t group) {
  chorus::MasterInfo m;
  const bool known = FLAGS_master_election && node->GetMaster(group, &m).ok() && m.known;
  return "master node=" + std::to_string(known ? m.node.id() : 0) +
         " addr=" + (known ? chorus::DisplayAddress(m.node) : std::string("none")) +
         " is_master=" + (node->IsMaster(group) ? "1" : "0");
}

// Proposes one stdin line; Busy (never proposed, e.g. no master elected
// yet) is retried for --retry_ms.
void ProposeLine(chorus::Node* node, uint32_t group, const std::string& line, bool* stopped) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(FLAGS_retry_ms);
  while (true) {
    uint64_t instance = 0;
    chorus::Status st = node->Propose(group, line, &instance);
    if (st.ok()) {
      PrintLine("proposed instance=" + std::to_string(instance) + " value=" + line);
      return;
    }
    if (st.IsBusy() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    PrintLine("error value=" + line + " status=" + st.ToString());
    *stopped = st.IsStopped();
    return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "echo_server --node=[id@]host:port (--nodes=[id@]host:port,... | --join=...) "
      "--data_dir=DIR [--create_if_missing] [--master_election]\n"
      "proposes every stdin line; prints every executed value; !-lines change the membership",
      &argc, &argv);

  chorus::Options options;
  const std::string problem = chorus::SetNodeAddresses(FLAGS_node, FLAGS_nodes, FLAGS_data_dir,
                                                       &options, FLAGS_join);
  if (!problem.empty()) return Usage(problem);
  if (FLAGS_propose_group < 0 || FLAGS_propose_group >= FLAGS_group_count) {
    return Usage("--propose_group must be in [0, --group_count)");
  }
  if (FLAGS_retry_ms < 0) return Usage("--retry_ms must be >= 0");
  const std::string level_problem = chorus::SetLogLevel(FLAGS_log_level, &options.log_level);
  if (!level_problem.empty()) return Usage(level_problem);
  options.create_if_missing = FLAGS_create_if_missing;
  options.group_count = FLAGS_group_count;
  options.sync_writes = FLAGS_sync_writes;
  options.checkpoint_interval_instances = FLAGS_checkpoint_interval;
  options.log_keep_instances = FLAGS_log_keep;
  options.master_election = FLAGS_master_election;
  options.membership_timeout_ms = FLAGS_membership_timeout_ms;

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
  PrintLine("ready node=" + options.self.ToString() + " id=" + std::to_string(node->node_id()) +
            " groups=" + std::to_string(FLAGS_group_count));
  const uint32_t group = static_cast<uint32_t>(FLAGS_propose_group);
  AdminWorker* admin = new AdminWorker(node.get(), group);  // lives until _Exit

  // The proposer reads stdin; it may be blocked in a read when a signal
  // arrives, so it is not joined: the process exits after Stop().
  std::thread proposer([&node, &machines, admin, group] {
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
      if (line == "!master") {
        PrintLine(MasterLine(node.get(), group));
        continue;
      }
      if (!line.empty() && line[0] == '!') {
        admin->Push(line);
        continue;
      }
      bool stopped = false;
      ProposeLine(node.get(), group, line, &stopped);
      if (stopped) break;
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
