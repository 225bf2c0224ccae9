// election_server: one replica of a chorus cluster with master election on
// (Options::master_election). It prints who is master of each group whenever
// that changes, as this node sees it, and takes a few commands on stdin.
//
//   election_server --node=127.0.0.1:7001
//       --nodes=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --data_dir=/tmp/e1
//       [--create_if_missing]     (on the node's first start only)
//
// stdout (one line each, flushed at once):
//   ready node=<ip:port> id=<id> groups=<n>          after Node::Open succeeded
//   master group=<g> node=<ip:port> epoch=<n> epoch_node=<id>
//                                                    the master this node knows
//                                                    changed (GetMaster, polled
//                                                    every --poll_ms); the epoch
//                                                    changes at every change
//   master group=<g> node=none                       no master known any more
//   role group=<g> is_master=<0|1>                   Options::on_master_change:
//                                                    this node gained / lost it
//   proposed instance=<i> value=<v>                  "propose <v>" was executed
//   read instance=<i> is_master=<0|1>                "read": ReadBarrier returned
//                                                    (a lease read on the master,
//                                                    a read index elsewhere)
//   transferred to=<ip:port>                         "transfer <ip:port>" was sent
//   stepped_down                                     "stepdown" was done
//   status group=<g> executed=<i> master_chosen_end=<i> caught_up=<0|1> master_node=<id>
//                                                    "status"
//   error op=<command> status=<Status::ToString()>   a command failed
// Commands (one per stdin line) act on group --command_group. The node keeps
// running after stdin ends until SIGINT or SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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
DEFINE_int32(group_count, 1, "number of paxos groups (each elects its own master)");
DEFINE_int32(command_group, 0, "the group stdin commands act on");
DEFINE_int32(poll_ms, 10, "how often the master of each group is read (GetMaster)");
DEFINE_bool(forward_to_master, true,
            "Options::forward_to_master: a proposal on a non-master is forwarded (false: it "
            "fails with NotMaster naming the master)");

namespace {

using chorus::PrintLine;

// Executes nothing of interest: the sample is about who is master.
class NullStateMachine : public chorus::StateMachine {
 public:
  int id() const override { return 1; }
  chorus::Status Execute(const chorus::ExecuteInfo&, const std::string& value,
                         chorus::ExecuteContext* ctx) override {
    if (ctx != nullptr) ctx->output = value;
    return chorus::Status::OK();
  }
};

// "master group=<g> node=..." for what GetMaster says now.
std::string MasterLine(uint32_t group, const chorus::Status& s, const chorus::MasterInfo& m) {
  std::string line = "master group=" + std::to_string(group);
  if (!s.ok() || !m.known) return line + " node=none";
  return line + " node=" + m.node.ToString() + " epoch=" + std::to_string(m.epoch_number) +
         " epoch_node=" + std::to_string(m.epoch_node);
}

// Prints a line whenever the master of a group, as this node knows it, changes.
void WatchMasters(chorus::Node* node, const std::atomic<bool>* stop) {
  std::vector<std::string> last(static_cast<size_t>(FLAGS_group_count));
  while (!stop->load()) {
    for (uint32_t g = 0; g < last.size(); ++g) {
      chorus::MasterInfo m;
      chorus::Status s = node->GetMaster(g, &m);
      std::string line = MasterLine(g, s, m);
      if (line != last[g]) {
        // The very first "none" (before any election) says nothing new.
        if (!(last[g].empty() && line.find("node=none") != std::string::npos)) PrintLine(line);
        last[g] = line;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(FLAGS_poll_ms));
  }
}

// Runs one stdin command on `group`.
void RunCommand(chorus::Node* node, const std::vector<chorus::NodeInfo>& nodes,
                uint32_t group, const std::string& line) {
  const size_t space = line.find(' ');
  const std::string op = line.substr(0, space);
  const std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
  chorus::Status s;
  if (op == "propose") {
    uint64_t instance = 0;
    s = node->Propose(group, arg, &instance);
    if (s.ok()) PrintLine("proposed instance=" + std::to_string(instance) + " value=" + arg);
  } else if (op == "read") {
    uint64_t instance = 0;
    s = node->ReadBarrier(group, &instance);
    if (s.ok()) {
      PrintLine("read instance=" + std::to_string(instance) +
                " is_master=" + (node->IsMaster(group) ? "1" : "0"));
    }
  } else if (op == "transfer") {
    chorus::NodeInfo target;
    s = chorus::NodeInfo::Parse(arg, &target);
    bool member = false;
    for (const chorus::NodeInfo& n : nodes) member = member || n == target;
    if (s.ok() && !member) s = chorus::Status::InvalidArgument("not a member: " + arg);
    if (s.ok()) s = node->TransferMaster(group, target.id());
    if (s.ok()) PrintLine("transferred to=" + target.ToString());
  } else if (op == "stepdown") {
    s = node->StepDown(group);
    if (s.ok()) PrintLine("stepped_down");
  } else if (op == "status") {
    chorus::GroupStatus st;
    s = node->GetGroupStatus(group, &st);
    if (s.ok()) {
      PrintLine("status group=" + std::to_string(group) + " executed=" +
                std::to_string(st.executed) + " master_chosen_end=" +
                std::to_string(st.master_chosen_end) + " caught_up=" +
                (st.caught_up ? "1" : "0") + " master_node=" + std::to_string(st.master_node));
    }
  } else if (!op.empty()) {
    s = chorus::Status::InvalidArgument("unknown command (propose V, read, transfer IP:PORT, "
                                        "stepdown, status)");
  }
  if (!s.ok()) PrintLine("error op=" + op + " status=" + s.ToString());
}

int Usage(const std::string& problem) {
  std::fprintf(stderr, "election_server: %s\n%s\n", problem.c_str(), gflags::ProgramUsage());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "election_server --node=ip:port --nodes=ip:port,ip:port,... --data_dir=DIR "
      "[--create_if_missing]\n"
      "prints the master of each group whenever it changes; stdin commands: propose V, read, "
      "transfer IP:PORT, stepdown, status",
      &argc, &argv);

  chorus::Options options;
  const std::string problem =
      chorus::SetNodeAddresses(FLAGS_node, FLAGS_nodes, FLAGS_data_dir, &options);
  if (!problem.empty()) return Usage(problem);
  if (FLAGS_group_count < 1) return Usage("--group_count must be >= 1");
  if (FLAGS_command_group < 0 || FLAGS_command_group >= FLAGS_group_count) {
    return Usage("--command_group must be in [0, --group_count)");
  }
  if (FLAGS_poll_ms < 1) return Usage("--poll_ms must be >= 1");
  options.create_if_missing = FLAGS_create_if_missing;
  options.group_count = FLAGS_group_count;
  options.master_election = true;
  options.forward_to_master = FLAGS_forward_to_master;
  // Runs on the group's loop thread: a short write, nothing that blocks for long.
  options.on_master_change = [](uint32_t group, bool is_master) {
    PrintLine("role group=" + std::to_string(group) + " is_master=" + (is_master ? "1" : "0"));
  };

  std::vector<std::unique_ptr<NullStateMachine>> machines;
  for (int g = 0; g < FLAGS_group_count; ++g) {
    machines.push_back(std::make_unique<NullStateMachine>());
    options.state_machines.emplace_back(static_cast<uint32_t>(g), machines.back().get());
  }

  // SIGINT/SIGTERM are taken by sigwait below: block them before any thread
  // exists so that every thread inherits the mask.
  const sigset_t stop_signals = chorus::BlockStopSignals();

  std::unique_ptr<chorus::Node> node;
  chorus::Status s = chorus::Node::Open(options, &node);
  if (!s.ok()) {
    std::fprintf(stderr, "election_server: Open: %s\n", s.ToString().c_str());
    return 1;
  }
  PrintLine("ready node=" + options.self.ToString() + " id=" + std::to_string(node->node_id()) +
            " groups=" + std::to_string(FLAGS_group_count));

  std::atomic<bool> stop{false};
  std::thread watcher(WatchMasters, node.get(), &stop);
  // The command thread may be blocked reading stdin when a signal arrives,
  // so it is not joined: the process exits after Stop().
  std::thread commands([&node, &options] {
    std::string line;
    while (std::getline(std::cin, line)) {
      RunCommand(node.get(), options.nodes, static_cast<uint32_t>(FLAGS_command_group), line);
    }
  });
  commands.detach();

  chorus::WaitForStopSignal(stop_signals);
  stop.store(true);
  watcher.join();
  node->Stop();
  std::fflush(stdout);
  // Not returning from main: the detached command thread may still use `node`.
  std::_Exit(0);
}
