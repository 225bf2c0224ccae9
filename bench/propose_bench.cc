// propose_bench: throughput and latency of Propose / BatchPropose on a real
// 3-process chorus cluster on loopback, with fsync on.
//
//   propose_bench [--clients=100 --value_size=100 --seconds=10 --groups=1]
//                 [--batch --batch_count=64 --batch_delay_ms=0 --batch_inflight=2] [--json]
//                 [--clients_on=one|all|process]
//                 [--election [--node0_role=any|master|follower] [--reads]]
//                 [--checkpoint_interval=N [--log_keep=K]] [--secret]
//                 [--async [--async_submitters=1] [--async_chain]]
//
// The program runs itself three times (fork + exec of /proc/self/exe with the
// hidden --role=node; a fourth with --clients_on=process): node 1 and node 2
// just serve; node 0 also runs the --clients threads (by default), so every
// proposal goes through a Node like an application's would. Each client
// proposes --value_size-byte values back to back for --seconds, round-robin
// over the groups, and times every call.
//
// Where the clients run (--clients_on):
//   one (the default): all of them are threads of node 0.
//   all: spread over the three nodes (node 0 gets the remainder). The nodes
//     meet through files in the run's temp dir (bench/run_dir.h): node 0,
//     once warmed up, writes the window's start and end, node 1 and node 2
//     run their clients in that window and write their latencies and
//     failures back for node 0 to merge. With --election a non-master
//     forwards its proposals to the master; without, every node proposes
//     on its own (they duel).
//   process: a 4th process (the hidden --role=client) runs them, each with
//     its own TCP loopback connection to node 0's propose server
//     (bench/net_client.h, bench/propose_server.h), which proposes with
//     ProposeAsync / BatchProposeAsync: the network-client case, where the
//     others are in-process. It meets node 0 through the same files; node
//     0 also samples its CPU time (--client_pid).
//
// Master election (Options::master_election, --election):
//   --node0_role=master|follower: before the window, node 0 is made the
//     master of every group (the master hands it over with TransferMaster,
//     asked through a file) or a follower (node 0 hands its mastership to
//     node 1); any (the default) takes the election's outcome. The JSON says
//     whether node 0 was master of group 0 when the window began.
//   --reads: the clients call ReadBarrier instead of Propose (nothing is
//     proposed in the window): lease reads with --node0_role=master, read
//     index reads (one round trip to the master) with --node0_role=follower.
// Checkpoints (--checkpoint_interval=N): every node makes a checkpoint of
// its counting state machine (one small file) every N executed instances
// and trims its log behind it, keeping --log_keep instances: the steady
// state with trimming on. 0 (the default) makes none: the log grows, as
// without checkpoints. The JSON reports node 0's checkpoints made in group
// 0 and its log start at the end.
// --secret sets Options::cluster_secret (a fixed bench secret) on every
// node: every frame then carries its HMAC-SHA256 tag (the authenticated
// transport, node/frame_auth.h); compare with and without to see its cost.
// Node 0 prints the result (a table, or one JSON object with --json) on
// stdout: values/s, latency percentiles of the successful calls, failures
// and the Status codes seen. Data dirs live in a temp dir that is removed at
// the end; the parent always kills its children (and they die with it).
//
// --async: no thread per client; --clients asynchronous proposals are kept
// in flight by --async_submitters threads (bench/async_clients.h); a
// latency is then from the call to its done.
// The measured window starts after the warm-up (one value chosen per group)
// and ends when the last client is done (its thread returned or, with
// --clients_on=process, its connection closed).
//
// CPU: node 0 samples the user + system CPU time of every process of the
// run (bench/thread_cpu.h; the parent passes the others' pids) at the start
// and at the end of the window: from one place at the same two instants,
// with no messages between the processes, and without the warm-up and the
// stop. bench/propose_report.h says what the report makes of them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "bench/async_clients.h"
#include "bench/bench_cluster.h"
#include "bench/cluster_setup.h"
#include "bench/counting_state_machine.h"
#include "bench/net_client.h"
#include "bench/propose_report.h"
#include "bench/propose_server.h"
#include "bench/run_dir.h"
#include "bench/thread_clients.h"
#include "bench/thread_cpu.h"
#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/status.h"
#include "tools/program_flags.h"
#include "tools/stop_signals.h"

DEFINE_int32(clients, 100, "client threads proposing concurrently (in node 0)");
DEFINE_int32(value_size, 100, "bytes per proposed value");
DEFINE_int32(seconds, 10, "measured duration");
DEFINE_int32(groups, 1, "paxos groups; clients go round-robin over them");
DEFINE_bool(batch, false, "use BatchPropose instead of Propose");
DEFINE_bool(async, false,
            "ProposeAsync (BatchProposeAsync with --batch): --clients proposals kept in flight "
            "by --async_submitters threads (bench/async_clients.h)");
DEFINE_int32(async_submitters, 1, "with --async: the submitting threads");
DEFINE_bool(async_chain, false,
            "with --async: each done proposes the next value itself, on chorus's thread");
DEFINE_int32(batch_count, 64, "Options::batch_max_count (with --batch)");
DEFINE_int32(batch_delay_ms, 0, "Options::batch_delay_ms (with --batch)");
DEFINE_int32(batch_inflight, chorus::Options().batch_max_inflight,
             "Options::batch_max_inflight (with --batch; 0: no limit)");
DEFINE_int32(max_inflight, 64, "Options::max_inflight (instances in flight per group)");
DEFINE_bool(sync_writes, true, "Options::sync_writes (fsync); keep on for real figures");
DEFINE_bool(json, false, "print one JSON object instead of a table");
DEFINE_int32(warmup_timeout_s, 30, "how long node 0 waits for the cluster to choose a value");
DEFINE_bool(election, false, "Options::master_election on every node");
DEFINE_bool(secret, false, "Options::cluster_secret on every node (authenticated transport)");
DEFINE_string(clients_on, "one",
              "one: every client in node 0; all: spread over the 3 nodes; process: in a 4th "
              "process, proposing over TCP loopback through node 0");
DEFINE_string(node0_role, "any",
              "with --election: any, master (node 0 is made master) or follower");
DEFINE_bool(reads, false, "with --election: clients call ReadBarrier instead of Propose");
DEFINE_uint64(checkpoint_interval, 0,
              "Options::checkpoint_interval_instances (0: no checkpoints, no trimming)");
DEFINE_uint64(log_keep, 20000, "Options::log_keep_instances (with --checkpoint_interval)");

// Hidden: how the program runs its node processes.
DEFINE_string(role, "", "(internal) 'node' or 'client' in a child process");
DEFINE_int32(node_index, 0, "(internal) this child's index in --nodes");
DEFINE_string(nodes, "", "(internal) ip:port list of the 3 nodes");
DEFINE_string(data_dir, "", "(internal) this node's data dir");
DEFINE_bool(create_if_missing, false, "(internal) create the data dir (the nodes' first start)");
DEFINE_bool(run_clients, false, "(internal) this node runs the clients and prints the result");
DEFINE_string(peer_pids, "", "(internal) pids of node 1 and node 2, for their CPU time");
DEFINE_string(run_dir, "", "(internal) the run's temp dir, where the nodes meet");
DEFINE_int32(server_port, 0, "(internal) node 0's propose server port (--clients_on=process)");
DEFINE_int32(client_pid, 0, "(internal) pid of the client process, for its CPU time");

namespace {

using chorus::bench::ClientResult;
using chorus::bench::CountingStateMachine;
using chorus::bench::Clock;
using chorus::bench::MonotonicNs;

// How many of the --clients run in node `index` (all in node 0 with
// --clients_on=one, none with process), and the global index of its first one.
int ClientsOf(int index) {
  if (FLAGS_clients_on == "process") return 0;
  if (FLAGS_clients_on != "all") return index == 0 ? FLAGS_clients : 0;
  return FLAGS_clients / 3 + (index < FLAGS_clients % 3 ? 1 : 0);
}
int FirstClientOf(int index) {
  int first = 0;
  for (int i = 0; i < index; ++i) first += ClientsOf(i);
  return first;
}

// CPU seconds of node 0 (this process) and of the processes in `others`,
// in that order; -1 for one that cannot be read.
std::vector<double> SampleCpuSeconds(const std::vector<pid_t>& others) {
  std::vector<double> cpu = {chorus::bench::ProcessCpuSeconds(0)};
  for (pid_t pid : others) cpu.push_back(chorus::bench::ProcessCpuSeconds(pid));
  return cpu;
}

// The pids in --peer_pids ("pid1,pid2"); empty if it does not parse.
std::vector<pid_t> PeerPids() {
  int node1 = 0, node2 = 0;
  if (std::sscanf(FLAGS_peer_pids.c_str(), "%d,%d", &node1, &node2) != 2) return {};
  return {node1, node2};
}

// Runs the `count` clients whose global indexes start at `first` from
// `start_ns` to `end_ns` (CLOCK_MONOTONIC) and returns their results.
std::vector<ClientResult> RunWindow(chorus::Node* node, int first, int count, int64_t start_ns,
                                    int64_t end_ns) {
  const int64_t wait_ns = start_ns - MonotonicNs();
  if (wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
  const auto end = Clock::now() + std::chrono::nanoseconds(end_ns - MonotonicNs());
  if (FLAGS_async) {
    chorus::bench::AsyncClientsConfig config;
    config.outstanding = count;
    config.submitters = FLAGS_async_submitters;
    config.groups = FLAGS_groups;
    config.value_size = static_cast<size_t>(FLAGS_value_size);
    config.batch = FLAGS_batch;
    config.chain = FLAGS_async_chain;
    return chorus::bench::RunAsyncClients(node, config, end);
  }
  chorus::bench::ThreadClientsConfig config;
  config.first = first;
  config.count = count;
  config.groups = FLAGS_groups;
  config.value_size = static_cast<size_t>(FLAGS_value_size);
  config.batch = FLAGS_batch;
  config.reads = FLAGS_reads;
  return chorus::bench::RunThreadClients(node, config, end);
}

// A serving node (1 or 2) with a --run_dir: hands its mastership to node 0
// while node 0 asks for it, and runs its share of --clients_on=all in the
// window node 0 announced, then writes their results for node 0.
void ServeControl(chorus::Node* node, const std::vector<chorus::NodeInfo>& nodes,
                  const std::atomic<bool>* stop) {
  std::vector<Clock::time_point> last_transfer(static_cast<size_t>(FLAGS_groups));
  bool ran = ClientsOf(FLAGS_node_index) == 0;
  while (!stop->load()) {
    if (FLAGS_election) chorus::bench::HandOverIfAsked(node, nodes, FLAGS_run_dir, &last_transfer);
    int64_t start_ns = 0, end_ns = 0;
    if (!ran && chorus::bench::ReadWindow(FLAGS_run_dir, &start_ns, &end_ns)) {
      const std::vector<ClientResult> results =
          RunWindow(node, FirstClientOf(FLAGS_node_index), ClientsOf(FLAGS_node_index),
                    start_ns, end_ns);
      const std::string path = FLAGS_run_dir + "/result" + std::to_string(FLAGS_node_index);
      if (!chorus::bench::WriteFileAtomically(path, chorus::bench::EncodeResults(results))) {
        std::fprintf(stderr, "propose_bench: node %d: cannot write %s\n", FLAGS_node_index,
                     path.c_str());
      }
      ran = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Node 0: adds the results node 1 and node 2 wrote for --clients_on=all,
// or the client process for --clients_on=process, waiting for them until
// `deadline`. node_of gets the node each result's clients proposed through.
chorus::Status CollectPeerResults(Clock::time_point deadline, std::vector<ClientResult>* results,
                                  std::vector<int>* node_of) {
  std::vector<std::pair<std::string, int>> files;  // name, node
  for (int i = 1; i < 3; ++i) {
    if (ClientsOf(i) > 0) files.emplace_back("result" + std::to_string(i), i);
  }
  if (FLAGS_clients_on == "process") files.emplace_back("result_client", 0);
  for (const auto& [name, node] : files) {
    results->emplace_back();
    node_of->push_back(node);
    chorus::Status s =
        chorus::bench::WaitForResults(FLAGS_run_dir, name, deadline, &results->back());
    if (!s.ok()) return s;
  }
  return chorus::Status::OK();
}

// --role=client (--clients_on=process): connects the --clients to node 0's
// propose server, runs them in the window node 0 announces and writes
// their results for node 0.
int RunClientProcess() {
  // Node 0 listens once open and announces the window once warmed up (and
  // in its --node0_role), each within --warmup_timeout_s.
  const auto deadline = Clock::now() + std::chrono::seconds(3 * FLAGS_warmup_timeout_s);
  chorus::bench::NetClientsConfig config;
  config.port = static_cast<uint16_t>(FLAGS_server_port);
  config.clients = FLAGS_clients;
  config.groups = FLAGS_groups;
  config.value_size = static_cast<size_t>(FLAGS_value_size);
  config.batch = FLAGS_batch;
  chorus::bench::NetClients clients(config);
  chorus::Status s = clients.Connect(deadline);
  int64_t start_ns = 0, end_ns = 0;
  while (s.ok() && !chorus::bench::ReadWindow(FLAGS_run_dir, &start_ns, &end_ns)) {
    if (Clock::now() >= deadline) s = chorus::Status::Timeout("node 0 announced no window");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: client process: %s\n", s.ToString().c_str());
    return 1;
  }
  const std::string path = FLAGS_run_dir + "/result_client";
  if (!chorus::bench::WriteFileAtomically(
          path, chorus::bench::EncodeResults(clients.Run(start_ns, end_ns)))) {
    std::fprintf(stderr, "propose_bench: client process: cannot write %s\n", path.c_str());
    return 1;
  }
  return 0;
}

// Node 0: warms the cluster up, runs the measured window (its own clients,
// or the client process's through the propose server) and prints the report.
int RunNode0(chorus::Node* node, const std::vector<std::unique_ptr<CountingStateMachine>>& machines,
             const std::vector<chorus::NodeInfo>& nodes) {
  // The server listens before the warm-up: the client process connects meanwhile.
  std::unique_ptr<chorus::bench::ProposeServer> server;
  chorus::Status s;
  if (FLAGS_clients_on == "process") {
    const auto port = static_cast<uint16_t>(FLAGS_server_port);
    s = chorus::bench::ProposeServer::Start(node, port, &server);
  }
  const std::chrono::seconds timeout(FLAGS_warmup_timeout_s);
  if (s.ok()) s = chorus::bench::WarmUp(node, FLAGS_groups, false, timeout);
  if (s.ok() && FLAGS_election && FLAGS_node0_role != "any") {
    s = chorus::bench::SetNode0Role(node, nodes, FLAGS_node0_role == "master", FLAGS_groups,
                                    FLAGS_run_dir, timeout);
  }
  if (s.ok() && FLAGS_reads) s = chorus::bench::WarmUp(node, FLAGS_groups, true, timeout);
  if (s.ok() && server && !server->WaitForAccepted(FLAGS_clients, Clock::now() + timeout)) {
    s = chorus::Status::Timeout("the client process did not connect its clients");
  }
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: the cluster was not ready within %d s: %s\n",
                 FLAGS_warmup_timeout_s, s.ToString().c_str());
    return 1;
  }
  uint64_t executed_before = 0, instances_before = 0;
  for (const auto& m : machines) {
    executed_before += m->executed();
    instances_before += m->instances();
  }

  chorus::bench::Environment env;
  env.load_avg_1m = chorus::bench::LoadAverage1m();
  if (FLAGS_election) env.node0_is_master = node->IsMaster(0) ? 1 : 0;
  env.clients_by_node = {ClientsOf(0) + (server ? FLAGS_clients : 0), ClientsOf(1), ClientsOf(2)};
  const std::vector<pid_t> peers = PeerPids();
  std::vector<pid_t> others = peers;  // CPU-sampled besides node 0
  if (FLAGS_client_pid > 0) others.push_back(FLAGS_client_pid);
  // The window starts a little later with clients elsewhere: they poll for it.
  const bool elsewhere = FLAGS_clients_on != "one";
  const int64_t start_ns = MonotonicNs() + (elsewhere ? 100000000 : 0);
  const int64_t end_ns = start_ns + int64_t{FLAGS_seconds} * 1000000000;
  if (elsewhere && !chorus::bench::WriteWindow(FLAGS_run_dir, start_ns, end_ns)) {
    std::fprintf(stderr, "propose_bench: cannot write %s/start\n", FLAGS_run_dir.c_str());
    return 1;
  }
  const int64_t wait_ns = start_ns - MonotonicNs();
  if (wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
  const std::vector<double> cpu_before = SampleCpuSeconds(others);
  std::vector<chorus::bench::ThreadSample> threads_before = {chorus::bench::SampleThreads(0)};
  for (pid_t pid : peers) threads_before.push_back(chorus::bench::SampleThreads(pid));
  const auto start = Clock::now();
  std::vector<ClientResult> results = RunWindow(node, 0, ClientsOf(0), start_ns, end_ns);
  // The client process closes each connection after its client's last
  // reply, once the window is over.
  const auto closed_by = start + std::chrono::nanoseconds(end_ns - start_ns + 30000000000);
  if (server && !server->WaitForAllClosed(closed_by)) {
    std::fprintf(stderr, "propose_bench: the client process's clients did not finish\n");
    return 1;
  }
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const std::vector<double> cpu_after = SampleCpuSeconds(others);
  for (size_t i = 0; i < threads_before.size(); ++i) {
    env.threads_by_node.push_back(chorus::bench::CpuByThreadName(
        threads_before[i], chorus::bench::SampleThreads(i == 0 ? 0 : peers[i - 1]),
        ClientsOf(static_cast<int>(i)) > 0 ? "clients" : "ended"));
  }
  env.node0_cpu = (cpu_after[0] - cpu_before[0]) / elapsed_s;
  for (size_t i = 0; i < cpu_after.size(); ++i) {
    const bool known = cpu_before[i] >= 0 && cpu_after[i] >= 0;
    const double cpu_s = known ? cpu_after[i] - cpu_before[i] : -1;
    if (i < 1 + peers.size()) {
      env.cpu_s_by_node.push_back(cpu_s);
    } else {
      env.client_process_cpu_s = cpu_s;
    }
  }
  uint64_t executed = 0, instances = 0;
  for (const auto& m : machines) {
    executed += m->executed();
    instances += m->instances();
  }
  env.instances = instances - instances_before;
  chorus::GroupStatus group0;
  if (node->GetGroupStatus(0, &group0).ok()) {
    env.checkpoints_made = group0.checkpoints_made;
    env.log_start = group0.log_start;
  }
  std::vector<int> node_of(results.size(), 0);
  s = CollectPeerResults(Clock::now() + std::chrono::seconds(30), &results, &node_of);
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  chorus::bench::Report(elapsed_s, results, node_of, executed - executed_before, env);
  return 0;
}

int RunNode() {
  chorus::Options options;
  chorus::Status s = chorus::NodeInfo::ParseList(FLAGS_nodes, &options.nodes);
  if (!s.ok() || FLAGS_node_index < 0 ||
      FLAGS_node_index >= static_cast<int>(options.nodes.size())) {
    std::fprintf(stderr, "propose_bench: bad --nodes/--node_index: %s\n", s.ToString().c_str());
    return 2;
  }
  options.self = options.nodes[static_cast<size_t>(FLAGS_node_index)];
  options.data_dir = FLAGS_data_dir;
  options.create_if_missing = FLAGS_create_if_missing;
  options.group_count = FLAGS_groups;
  options.sync_writes = FLAGS_sync_writes;
  options.max_inflight = FLAGS_max_inflight;
  options.batch_max_count = FLAGS_batch_count;
  options.batch_delay_ms = FLAGS_batch_delay_ms;
  options.batch_max_inflight = FLAGS_batch_inflight;
  options.master_election = FLAGS_election;
  // A benchmark's secret: only its length and use matter here, never keep a
  // real one in code.
  if (FLAGS_secret) options.cluster_secret = "propose_bench cluster secret 32b";
  options.checkpoint_interval_instances = FLAGS_checkpoint_interval;
  options.log_keep_instances = FLAGS_log_keep;
  std::vector<std::unique_ptr<CountingStateMachine>> machines;
  for (int g = 0; g < FLAGS_groups; ++g) {
    machines.push_back(std::make_unique<CountingStateMachine>());
    options.state_machines.emplace_back(static_cast<uint32_t>(g), machines.back().get());
  }

  const sigset_t stop_signals = chorus::BlockStopSignals();

  std::unique_ptr<chorus::Node> node;
  s = chorus::Node::Open(options, &node);
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: node %d: Open: %s\n", FLAGS_node_index,
                 s.ToString().c_str());
    return 1;
  }
  int rc = 0;
  if (FLAGS_run_clients) {
    rc = RunNode0(node.get(), machines, options.nodes);
  } else {
    std::atomic<bool> stop{false};
    std::thread control;
    if (!FLAGS_run_dir.empty()) control = std::thread(ServeControl, node.get(), options.nodes, &stop);
    chorus::WaitForStopSignal(stop_signals);
    stop.store(true);
    if (control.joinable()) control.join();
  }
  node->Stop();
  return rc;
}

// ---- the parent: starts the three node processes and cleans up ----

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted.store(true); }

// The flags that must agree with each other; the problem, or "" if none.
std::string CheckFlags() {
  if (FLAGS_clients < 1 || FLAGS_value_size < 0 || FLAGS_seconds < 1 || FLAGS_groups < 1) {
    return "--clients, --seconds, --groups must be >= 1";
  }
  const bool process = FLAGS_clients_on == "process";
  if (FLAGS_clients_on != "one" && FLAGS_clients_on != "all" && !process) {
    return "--clients_on: one, all or process";
  }
  if (process && FLAGS_value_size > static_cast<int>(chorus::Options().max_value_bytes)) {
    return "--clients_on=process: --value_size is at most Options::max_value_bytes";
  }
  if (FLAGS_node0_role != "any" && FLAGS_node0_role != "master" &&
      FLAGS_node0_role != "follower") {
    return "--node0_role: any, master or follower";
  }
  if (!FLAGS_election && (FLAGS_node0_role != "any" || FLAGS_reads)) {
    return "--node0_role and --reads need --election";
  }
  if (FLAGS_reads && (FLAGS_batch || FLAGS_clients_on != "one")) {
    return "--reads runs its clients in node 0, without --batch";
  }
  if (FLAGS_async && (FLAGS_reads || FLAGS_clients_on != "one" || FLAGS_async_submitters < 1)) {
    return "--async runs its proposals in node 0 (--async_submitters >= 1), without --reads";
  }
  return "";
}

int RunParent(const char* argv0) {
  const std::string problem = CheckFlags();
  if (!problem.empty()) {
    std::fprintf(stderr, "propose_bench: %s\n", problem.c_str());
    return 2;
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);

  std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  tmpl += "/chorus-propose-bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("propose_bench: mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  const bool process = FLAGS_clients_on == "process";
  std::vector<uint16_t> ports;  // the nodes', then node 0's propose server's
  if (!chorus::bench::PickPorts(&ports, process ? 4 : 3)) {
    std::fprintf(stderr, "propose_bench: no free loopback ports\n");
    std::filesystem::remove_all(dir);
    return 1;
  }
  const std::string server_port = process ? std::to_string(ports[3]) : "0";
  ports.resize(3);
  const std::string nodes = chorus::bench::LoopbackNodes(ports);

  auto flag = [](const char* name, const std::string& v) { return "--" + std::string(name) + "=" + v; };
  auto bool_flag = [](const char* name, bool v) { return std::string(v ? "--" : "--no") + name; };
  std::vector<pid_t> pids;
  pid_t client_pid = 0;
  // Start the serving nodes first, then the client process (it retries its
  // connects until node 0 listens), node 0 (the clients) last.
  for (int i = 2; i >= 0; --i) {
    if (i == 0 && process) {
      client_pid = chorus::bench::SpawnSelf(
          {argv0, "--role=client", flag("server_port", server_port), flag("run_dir", dir),
           flag("clients", std::to_string(FLAGS_clients)),
           flag("groups", std::to_string(FLAGS_groups)),
           flag("value_size", std::to_string(FLAGS_value_size)), bool_flag("batch", FLAGS_batch),
           flag("warmup_timeout_s", std::to_string(FLAGS_warmup_timeout_s))});
      if (client_pid < 0) {
        std::perror("propose_bench: fork");
        break;
      }
      pids.push_back(client_pid);
    }
    std::vector<std::string> args = {
        argv0, "--role=node", flag("node_index", std::to_string(i)), flag("nodes", nodes),
        flag("data_dir", dir + "/node" + std::to_string(i)), "--create_if_missing",
        flag("groups", std::to_string(FLAGS_groups)),
        flag("max_inflight", std::to_string(FLAGS_max_inflight)),
        flag("batch_count", std::to_string(FLAGS_batch_count)),
        flag("batch_delay_ms", std::to_string(FLAGS_batch_delay_ms)),
        flag("batch_inflight", std::to_string(FLAGS_batch_inflight)),
        bool_flag("sync_writes", FLAGS_sync_writes), bool_flag("election", FLAGS_election),
        bool_flag("secret", FLAGS_secret), flag("run_dir", dir), flag("clients", std::to_string(FLAGS_clients)),
        flag("clients_on", FLAGS_clients_on), flag("value_size", std::to_string(FLAGS_value_size)),
        bool_flag("batch", FLAGS_batch),
        flag("checkpoint_interval", std::to_string(FLAGS_checkpoint_interval)),
        flag("log_keep", std::to_string(FLAGS_log_keep))};
    if (i == 0) {
      args.insert(args.end(),
                  {"--run_clients", flag("seconds", std::to_string(FLAGS_seconds)),
                   flag("warmup_timeout_s", std::to_string(FLAGS_warmup_timeout_s)),
                   flag("node0_role", FLAGS_node0_role), bool_flag("reads", FLAGS_reads),
                   bool_flag("json", FLAGS_json), bool_flag("async", FLAGS_async),
                   flag("async_submitters", std::to_string(FLAGS_async_submitters)),
                   bool_flag("async_chain", FLAGS_async_chain), flag("server_port", server_port),
                   flag("client_pid", std::to_string(client_pid))});
      // Node 0 samples its peers' CPU time (node 1, node 2) over the window.
      args.push_back(flag("peer_pids", std::to_string(pids[1]) + "," + std::to_string(pids[0])));
    }
    pid_t pid = chorus::bench::SpawnSelf(args);
    if (pid < 0) {
      std::perror("propose_bench: fork");
      break;
    }
    pids.push_back(pid);
  }

  int rc = 1;
  if (pids.size() == (process ? 4u : 3u)) {
    // Node 0 has warm-up + the run + a stop to do.
    const auto deadline =
        Clock::now() + std::chrono::seconds(2 * FLAGS_warmup_timeout_s + FLAGS_seconds + 90);
    int status = chorus::bench::WaitUntil(pids.back(), deadline, &g_interrupted);
    if (status == -1) {
      std::fprintf(stderr, "propose_bench: %s\n",
                   g_interrupted.load() ? "interrupted" : "node 0 did not finish in time");
      kill(pids.back(), SIGKILL);
      waitpid(pids.back(), nullptr, 0);
    } else if (WIFEXITED(status)) {
      rc = WEXITSTATUS(status);
    } else {
      std::fprintf(stderr, "propose_bench: node 0 died of signal %d\n", WTERMSIG(status));
    }
    pids.pop_back();
  }
  for (pid_t pid : pids) chorus::bench::Terminate(pid, &g_interrupted);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags("propose_bench [--clients=N --value_size=B --seconds=S --groups=G "
                            "--batch --batch_count=N --batch_delay_ms=MS --secret --json "
                            "--clients_on=one|all|process]",
                            &argc, &argv);
  if (FLAGS_role == "node") return RunNode();
  if (FLAGS_role == "client") return RunClientProcess();
  if (!FLAGS_role.empty()) {
    std::fprintf(stderr, "propose_bench: unknown --role=%s\n", FLAGS_role.c_str());
    return 2;
  }
  return RunParent(argv[0]);
}
