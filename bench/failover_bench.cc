// failover_bench: how long a 3-process chorus cluster on loopback, with
// master election on (Options::master_election) and under load, takes to
// serve again after its master is killed with SIGKILL, and whether it lost
// an acknowledged value.
//
//   failover_bench [--rounds=3 --clients=4 --load_ms=1000 --after_ms=1000] [--json]
//                  [--lease_ms=N --election_timeout_ms=N --election_jitter_ms=N
//                   --heartbeat_interval_ms=N]   (default: chorus's Options)
//
// Each round runs a fresh cluster: the program runs itself three times (fork
// + exec of /proc/self/exe with the hidden --role=node; their stdin and
// stdout are pipes to the parent). Every node runs --clients threads that
// propose unique values back to back (so the followers' are forwarded to the
// master), and logs each acknowledged value with one write(2) to an append-
// only file, so that a SIGKILL loses no acknowledgement. Once all three name
// the same master and --load_ms of load passed, the parent takes the time
// (CLOCK_MONOTONIC, shared by every process of the machine) and kills the
// master with SIGKILL, then tells the two others the kill time. Each of them
// then runs two probes next to its load:
//   a propose probe: Propose with a --probe_timeout_ms deadline, again and
//     again; its first success ends failover_ms = kill -> that success;
//   a read probe: while this node is master (IsMaster), ReadBarrier (a lease
//     read: no message, no log write); its first success ends first_read_ms.
// Each figure is the earliest over the two survivors. --after_ms later the
// parent stops the load on both survivors; once every call there returned,
// each calls ReadBarrier (its state machine then holds every value chosen
// before, so every acknowledged one) and writes out the values it executed.
// lost = acknowledged values (of all three nodes, the killed one included)
// missing from a survivor; duplicates = values a survivor executed twice.
// Both must be 0.
//
// Output: one line per round and the medians (a table), or with --json one
// object: failover_ms, first_read_ms (medians over the rounds), lost and
// duplicates (sums), acked, the per-round figures and the options. Exit
// status 1 if a round did not fail over within --deadline_s or lost a value.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gflags/gflags.h>

#include "bench/bench_cluster.h"
#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"
#include "tools/print_line.h"
#include "tools/program_flags.h"

DEFINE_int32(rounds, 3, "fresh clusters, one master kill each; the figures are medians");
DEFINE_int32(clients, 4, "load client threads on each of the 3 nodes");
DEFINE_int32(value_size, 64, "bytes per proposed value (at least its unique id)");
DEFINE_int32(load_ms, 1000, "load before the kill, once a master is agreed");
DEFINE_int32(after_ms, 1000, "load after the first proposal succeeded after the kill");
DEFINE_int32(client_timeout_ms, 2000, "deadline of each load proposal (ctx.timeout_ms)");
DEFINE_int32(probe_timeout_ms, 50, "deadline of each propose probe after the kill");
DEFINE_int32(deadline_s, 20, "a round fails if the cluster has not failed over by then");
DEFINE_int32(lease_ms, -1, "Options::lease_ms (-1: chorus's default)");
DEFINE_int32(election_timeout_ms, -1, "Options::election_timeout_ms (-1: default)");
DEFINE_int32(election_jitter_ms, -1, "Options::election_jitter_ms (-1: default)");
DEFINE_int32(heartbeat_interval_ms, -1, "Options::heartbeat_interval_ms (-1: default)");
DEFINE_bool(sync_writes, true, "Options::sync_writes (fsync); keep on for real figures");
DEFINE_bool(json, false, "print one JSON object instead of a table");
DEFINE_bool(keep_failed, false,
            "keep the temp dir of a failed round (its logs, ack logs and executed values) and "
            "print its path");

// Hidden: how the program runs its node processes.
DEFINE_string(role, "", "(internal) 'node' in a child process");
DEFINE_int32(node_index, 0, "(internal) this child's index in --nodes");
DEFINE_string(nodes, "", "(internal) ip:port list of the 3 nodes");
DEFINE_string(data_dir, "", "(internal) this node's data dir");

namespace {

using chorus::bench::Clock;
using chorus::bench::MonotonicNs;

constexpr uint32_t kGroup = 0;

// The election options of the flags (those left at -1 keep chorus's default).
void SetElectionOptions(chorus::Options* options) {
  options->master_election = true;
  if (FLAGS_lease_ms >= 0) options->lease_ms = FLAGS_lease_ms;
  if (FLAGS_election_timeout_ms >= 0) options->election_timeout_ms = FLAGS_election_timeout_ms;
  if (FLAGS_election_jitter_ms >= 0) options->election_jitter_ms = FLAGS_election_jitter_ms;
  if (FLAGS_heartbeat_interval_ms >= 0) {
    options->heartbeat_interval_ms = FLAGS_heartbeat_interval_ms;
  }
}

// ---- a node process ----

using chorus::PrintLine;

// Keeps every executed value, to be checked against the acknowledgements.
class RecordingStateMachine : public chorus::StateMachine {
 public:
  int id() const override { return 1; }
  chorus::Status Execute(const chorus::ExecuteInfo&, const std::string& value,
                         chorus::ExecuteContext*) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back(value.substr(0, value.find(' ')));
    return chorus::Status::OK();
  }
  std::vector<std::string> values() const {
    std::lock_guard<std::mutex> lock(mu_);
    return values_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> values_;  // GUARDED_BY(mu_); the id part of each value
};

// Appends each acknowledged value's id with one write(2) of a whole line, so
// a SIGKILL right after loses none and tears none (O_APPEND, < PIPE_BUF).
class AckLog {
 public:
  explicit AckLog(const std::string& path)
      : fd_(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~AckLog() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  void Add(const std::string& id) {
    const std::string line = id + "\n";
    if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      failed_.store(true);
    }
  }
  bool failed() const { return failed_.load(); }

 private:
  const int fd_;
  std::atomic<bool> failed_{false};
};

// A value: its unique id ("n<node>c<client>s<seq>"), then padding to --value_size.
std::string MakeValue(const std::string& id) {
  std::string v = id;
  if (static_cast<int>(v.size()) + 1 < FLAGS_value_size) {
    v += ' ';
    v.resize(static_cast<size_t>(FLAGS_value_size), 'x');
  }
  return v;
}

struct NodeRun {
  chorus::Node* node = nullptr;
  AckLog* acks = nullptr;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> kill_ns{0};  // 0 until the parent says the master was killed
};

// Proposes unique values back to back; logs the acknowledged ones.
void LoadClient(NodeRun* run, int client) {
  const std::string prefix =
      "n" + std::to_string(FLAGS_node_index) + "c" + std::to_string(client) + "s";
  for (uint64_t seq = 0; !run->stop.load(); ++seq) {
    const std::string id = prefix + std::to_string(seq);
    chorus::ExecuteContext ctx;
    ctx.timeout_ms = FLAGS_client_timeout_ms;
    uint64_t instance = 0;
    chorus::Status s = run->node->Propose(kGroup, MakeValue(id), &instance, &ctx);
    if (s.ok()) {
      run->acks->Add(id);
    } else if (s.IsStopped()) {
      break;
    } else if (!s.IsTimeout()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // Busy: no master yet
    }
  }
}

// Returns once the parent said the master was killed (or the run stops).
void WaitForKill(const NodeRun* run) {
  while (!run->stop.load() && run->kill_ns.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// After the kill: the first proposal that succeeds, with short deadlines.
void ProposeProbe(NodeRun* run) {
  WaitForKill(run);
  const std::string prefix = "n" + std::to_string(FLAGS_node_index) + "probe";
  for (uint64_t seq = 0; !run->stop.load(); ++seq) {
    const std::string id = prefix + std::to_string(seq);
    chorus::ExecuteContext ctx;
    ctx.timeout_ms = FLAGS_probe_timeout_ms;
    uint64_t instance = 0;
    chorus::Status s = run->node->Propose(kGroup, MakeValue(id), &instance, &ctx);
    if (s.ok()) {
      const int64_t done = MonotonicNs();
      run->acks->Add(id);
      PrintLine("first_propose " + std::to_string(done));
      return;
    }
    if (s.IsStopped()) return;
    if (!s.IsTimeout()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// After the kill: the first lease read, once this node is master.
void ReadProbe(NodeRun* run) {
  WaitForKill(run);
  while (!run->stop.load()) {
    if (run->node->IsMaster(kGroup)) {
      uint64_t instance = 0;
      if (run->node->ReadBarrier(kGroup, &instance).ok()) {
        PrintLine("first_read " + std::to_string(MonotonicNs()));
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

// Tells the parent the index of the master this node knows (-1: none) at
// every change.
void WatchMaster(NodeRun* run, const std::vector<chorus::NodeInfo>& nodes) {
  int last = -2;
  while (!run->stop.load()) {
    chorus::MasterInfo m;
    int index = -1;
    if (run->node->GetMaster(kGroup, &m).ok() && m.known) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i] == m.node) index = static_cast<int>(i);
      }
    }
    if (index != last) {
      PrintLine("master " + std::to_string(index));
      last = index;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Waits (ReadBarrier) until this node executed every value chosen so far
// and writes the ids of its executed values to `path`. The parent asks for it
// only once every survivor's load stopped, so every acknowledgement came
// before the barrier began: the values must all be there.
std::string Dump(NodeRun* run, const RecordingStateMachine& machine, const std::string& path) {
  chorus::Status s;
  const auto deadline = Clock::now() + std::chrono::seconds(FLAGS_deadline_s);
  do {
    uint64_t instance = 0;
    s = run->node->ReadBarrier(kGroup, &instance);
    if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (!s.ok() && !s.IsStopped() && Clock::now() < deadline);
  if (!s.ok()) return "barrier_failed " + s.ToString();
  const std::vector<std::string> values = machine.values();
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& v : values) out << v << '\n';
  out.close();
  if (!out) return "write_failed " + path;
  return "ok " + std::to_string(values.size());
}

int RunNode() {
  chorus::Options options;
  chorus::Status s = chorus::NodeInfo::ParseList(FLAGS_nodes, &options.nodes);
  if (!s.ok() || FLAGS_node_index < 0 ||
      FLAGS_node_index >= static_cast<int>(options.nodes.size())) {
    std::fprintf(stderr, "failover_bench: bad --nodes/--node_index: %s\n", s.ToString().c_str());
    return 2;
  }
  options.self = options.nodes[static_cast<size_t>(FLAGS_node_index)];
  options.data_dir = FLAGS_data_dir;
  options.create_if_missing = true;
  options.sync_writes = FLAGS_sync_writes;
  SetElectionOptions(&options);
  RecordingStateMachine machine;
  options.state_machines.emplace_back(kGroup, &machine);
  AckLog acks(FLAGS_data_dir + ".acked");
  if (!acks.ok()) {
    std::fprintf(stderr, "failover_bench: cannot open %s.acked\n", FLAGS_data_dir.c_str());
    return 1;
  }

  std::unique_ptr<chorus::Node> node;
  s = chorus::Node::Open(options, &node);
  if (!s.ok()) {
    std::fprintf(stderr, "failover_bench: node %d: Open: %s\n", FLAGS_node_index,
                 s.ToString().c_str());
    return 1;
  }
  NodeRun run;
  run.node = node.get();
  run.acks = &acks;
  std::vector<std::thread> threads;
  threads.emplace_back(WatchMaster, &run, options.nodes);
  for (int c = 0; c < FLAGS_clients; ++c) threads.emplace_back(LoadClient, &run, c);
  threads.emplace_back(ProposeProbe, &run);
  threads.emplace_back(ReadProbe, &run);
  PrintLine("ready");

  // Commands from the parent, one per line: "killed <ns>", "stop" (the load
  // and the probes; answered "quiet" once every call returned), "dump",
  // "exit"; stdin's end (the parent died) is "exit".
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("killed ", 0) == 0) {
      run.kill_ns.store(std::atoll(line.c_str() + 7));
    } else if (line == "stop") {
      run.stop.store(true);
      for (std::thread& t : threads) t.join();
      threads.clear();
      PrintLine("quiet");
    } else if (line == "dump") {
      PrintLine("stopped " + Dump(&run, machine, FLAGS_data_dir + ".executed") +
           (acks.failed() ? " ack_log_failed" : ""));
    } else if (line == "exit") {
      break;
    }
  }
  run.stop.store(true);
  for (std::thread& t : threads) t.join();
  node->Stop();
  return 0;
}

// ---- the parent: one round per fresh cluster ----

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted.store(true); }

// A node process as the parent sees it: its pipes and the last it said.
struct Child {
  pid_t pid = -1;
  int to = -1;    // its stdin
  int from = -1;  // its stdout
  std::string buf;
  bool ready = false;
  int master = -1;  // the master index it last named
  int64_t first_propose_ns = 0;
  int64_t first_read_ns = 0;
  bool quiet = false;   // its load stopped
  std::string stopped;  // its "stopped ..." line, once it came
  bool eof = false;
};

void Send(Child* c, const std::string& line) {
  if (c->to < 0) return;
  const std::string l = line + "\n";
  if (write(c->to, l.data(), l.size()) < 0) {
    close(c->to);
    c->to = -1;
  }
}

void Handle(Child* c, const std::string& line) {
  if (line == "ready") {
    c->ready = true;
  } else if (line.rfind("master ", 0) == 0) {
    c->master = std::atoi(line.c_str() + 7);
  } else if (line.rfind("first_propose ", 0) == 0) {
    c->first_propose_ns = std::atoll(line.c_str() + 14);
  } else if (line.rfind("first_read ", 0) == 0) {
    c->first_read_ns = std::atoll(line.c_str() + 11);
  } else if (line == "quiet") {
    c->quiet = true;
  } else if (line.rfind("stopped ", 0) == 0) {
    c->stopped = line.substr(8);
  }
}

// Reads what the live children said for up to `wait_ms` and handles it.
void Pump(std::vector<Child>* children, int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<Child*> who;
  for (Child& c : *children) {
    if (c.from >= 0 && !c.eof) {
      fds.push_back({c.from, POLLIN, 0});
      who.push_back(&c);
    }
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return;
  }
  if (poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    Child* c = who[i];
    char buf[4096];
    const ssize_t n = read(c->from, buf, sizeof(buf));
    if (n <= 0) {
      if (n == 0 || errno != EINTR) c->eof = true;
      continue;
    }
    c->buf.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = c->buf.find('\n')) != std::string::npos) {
      Handle(c, c->buf.substr(0, nl));
      c->buf.erase(0, nl + 1);
    }
  }
}

// Pumps until done() or the deadline; returns done().
template <typename Done>
bool PumpUntil(std::vector<Child>* children, Clock::time_point deadline, Done done) {
  while (!done()) {
    if (Clock::now() >= deadline || g_interrupted.load()) return done();
    Pump(children, 10);
  }
  return true;
}

struct RoundResult {
  bool ok = false;
  std::string error;
  int killed = -1;
  int new_master = -1;
  double failover_ms = -1;
  double first_read_ms = -1;
  uint64_t acked = 0;
  uint64_t lost = 0;
  uint64_t duplicates = 0;
  std::string lost_examples;  // a few lost ids, each with the node that acknowledged it
};

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// lost: acknowledged ids (every node's ack log) missing from a survivor's
// executed values; duplicates: ids a survivor executed more than once.
void CheckValues(const std::string& dir, const std::vector<int>& survivors, RoundResult* r) {
  std::vector<std::string> acked;
  std::vector<int> acked_by;
  for (int i = 0; i < 3; ++i) {
    for (std::string& id : ReadLines(dir + "/node" + std::to_string(i) + ".acked")) {
      acked.push_back(std::move(id));
      acked_by.push_back(i);
    }
  }
  r->acked = acked.size();
  std::unordered_set<std::string> missing;
  for (int i : survivors) {
    std::unordered_map<std::string, int> executed;
    for (const std::string& id : ReadLines(dir + "/node" + std::to_string(i) + ".executed")) {
      if (++executed[id] == 2) ++r->duplicates;
    }
    for (size_t k = 0; k < acked.size(); ++k) {
      if (executed.count(acked[k]) != 0 || !missing.insert(acked[k]).second) continue;
      if (missing.size() <= 5) {
        r->lost_examples += " " + acked[k] + " (acknowledged on node " +
                            std::to_string(acked_by[k]) + ", missing on node " +
                            std::to_string(i) + ")";
      }
    }
  }
  r->lost = missing.size();
}

RoundResult RunRound(const char* argv0) {
  RoundResult r;
  std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  tmpl += "/chorus-failover-bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    r.error = "mkdtemp failed";
    return r;
  }
  const std::string dir = tmpl;
  std::vector<uint16_t> ports;
  if (!chorus::bench::PickPorts(&ports)) {
    r.error = "no free loopback ports";
    std::filesystem::remove_all(dir);
    return r;
  }
  const std::string nodes = chorus::bench::LoopbackNodes(ports);
  auto flag = [](const char* name, int v) { return "--" + std::string(name) + "=" + std::to_string(v); };

  std::vector<Child> children(3);
  for (int i = 0; i < 3; ++i) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) break;
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]);
      close(in[1]);
      break;
    }
    std::vector<std::string> args = {
        argv0, "--role=node", flag("node_index", i), "--nodes=" + nodes,
        "--data_dir=" + dir + "/node" + std::to_string(i), flag("clients", FLAGS_clients),
        flag("value_size", FLAGS_value_size), flag("client_timeout_ms", FLAGS_client_timeout_ms),
        flag("probe_timeout_ms", FLAGS_probe_timeout_ms), flag("deadline_s", FLAGS_deadline_s),
        flag("lease_ms", FLAGS_lease_ms), flag("election_timeout_ms", FLAGS_election_timeout_ms),
        flag("election_jitter_ms", FLAGS_election_jitter_ms),
        flag("heartbeat_interval_ms", FLAGS_heartbeat_interval_ms),
        FLAGS_sync_writes ? "--sync_writes" : "--nosync_writes"};
    children[static_cast<size_t>(i)].pid = chorus::bench::SpawnSelf(args, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    children[static_cast<size_t>(i)].to = in[1];
    children[static_cast<size_t>(i)].from = out[0];
  }

  const auto deadline = [] { return Clock::now() + std::chrono::seconds(FLAGS_deadline_s); };
  // The master all three name; -1 until they agree.
  auto agreed = [&children](const std::vector<int>& who) {
    int m = children[static_cast<size_t>(who[0])].master;
    for (int i : who) {
      if (children[static_cast<size_t>(i)].master != m) return -1;
    }
    return m;
  };
  const std::vector<int> all = {0, 1, 2};
  do {
    bool spawned = true;
    for (const Child& c : children) spawned = spawned && c.pid > 0;
    if (!spawned) {
      r.error = "fork failed";
      break;
    }
    if (!PumpUntil(&children, deadline(), [&] { return agreed(all) >= 0; })) {
      r.error = "no master agreed by all three within --deadline_s";
      break;
    }
    // Load with a stable master, then kill the master it has at that moment.
    PumpUntil(&children, Clock::now() + std::chrono::milliseconds(FLAGS_load_ms),
              [] { return false; });
    if (!PumpUntil(&children, deadline(), [&] { return agreed(all) >= 0; })) {
      r.error = "the three nodes disagree on the master after the load";
      break;
    }
    r.killed = agreed(all);
    Child& victim = children[static_cast<size_t>(r.killed)];
    const int64_t kill_ns = MonotonicNs();
    kill(victim.pid, SIGKILL);
    waitpid(victim.pid, nullptr, 0);
    victim.pid = -1;
    close(victim.to);
    victim.to = -1;
    std::vector<int> survivors;
    for (int i = 0; i < 3; ++i) {
      if (i != r.killed) survivors.push_back(i);
    }
    for (int i : survivors) Send(&children[static_cast<size_t>(i)], "killed " + std::to_string(kill_ns));
    auto earliest = [&](int64_t Child::*field) {
      int64_t best = 0;
      for (int i : survivors) {
        const int64_t t = children[static_cast<size_t>(i)].*field;
        if (t != 0 && (best == 0 || t < best)) best = t;
      }
      return best;
    };
    const bool propose_ok = PumpUntil(&children, deadline(),
                                      [&] { return earliest(&Child::first_propose_ns) != 0; });
    if (propose_ok) r.failover_ms = (earliest(&Child::first_propose_ns) - kill_ns) / 1e6;
    const bool read_ok = PumpUntil(&children, deadline(),
                                   [&] { return earliest(&Child::first_read_ns) != 0; });
    if (read_ok) r.first_read_ms = (earliest(&Child::first_read_ns) - kill_ns) / 1e6;
    // More load after the failover, then stop and collect.
    PumpUntil(&children, Clock::now() + std::chrono::milliseconds(FLAGS_after_ms),
              [] { return false; });
    r.new_master = agreed(survivors);
    // Stop the load everywhere first, then read: a barrier that began
    // before another survivor's last acknowledgement need not include it.
    for (int i : survivors) Send(&children[static_cast<size_t>(i)], "stop");
    bool stopped = PumpUntil(&children, deadline(), [&] {
      for (int i : survivors) {
        if (!children[static_cast<size_t>(i)].quiet) return false;
      }
      return true;
    });
    for (int i : survivors) Send(&children[static_cast<size_t>(i)], "dump");
    stopped = stopped && PumpUntil(&children, deadline(), [&] {
      for (int i : survivors) {
        if (children[static_cast<size_t>(i)].stopped.empty()) return false;
      }
      return true;
    });
    std::string stop_problem;
    for (int i : survivors) {
      const std::string& st = children[static_cast<size_t>(i)].stopped;
      if (st.rfind("ok ", 0) != 0 || st.find("ack_log_failed") != std::string::npos) {
        stop_problem += " node " + std::to_string(i) + ": " + (st.empty() ? "no answer" : st);
      }
    }
    if (!stopped || !stop_problem.empty()) {
      r.error = "a survivor could not read its state:" + stop_problem;
      break;
    }
    CheckValues(dir, survivors, &r);
    if (!propose_ok) {
      r.error = "no proposal succeeded on a survivor within --deadline_s of the kill";
    } else if (!read_ok) {
      r.error = "no lease read on a new master within --deadline_s of the kill";
    } else if (r.lost != 0 || r.duplicates != 0) {
      r.error = std::to_string(r.lost) + " acknowledged values lost, " +
                std::to_string(r.duplicates) + " executed twice; killed node " +
                std::to_string(r.killed) + "; lost:" + r.lost_examples;
    } else {
      r.ok = true;
    }
  } while (false);

  for (Child& c : children) {
    Send(&c, "exit");
    if (c.to >= 0) close(c.to);
    if (c.pid > 0) chorus::bench::Terminate(c.pid, &g_interrupted);
    if (c.from >= 0) close(c.from);
  }
  if (!r.ok && FLAGS_keep_failed) {
    r.error += " [kept " + dir + "]";
  } else {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return r;
}

std::string JsonList(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.1f", i == 0 ? "" : ",", v[i]);
    s += buf;
  }
  return s + "]";
}

int RunParent(const char* argv0) {
  if (FLAGS_rounds < 1 || FLAGS_clients < 0 || FLAGS_load_ms < 0 || FLAGS_after_ms < 0 ||
      FLAGS_probe_timeout_ms < 1 || FLAGS_client_timeout_ms < 1 || FLAGS_deadline_s < 1) {
    std::fprintf(stderr, "failover_bench: --rounds, --probe_timeout_ms, --client_timeout_ms, "
                         "--deadline_s must be >= 1; --clients, --load_ms, --after_ms >= 0\n");
    return 2;
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);  // a child that died: its stdin write fails instead
  chorus::Options defaults;
  SetElectionOptions(&defaults);
  const double load = chorus::bench::LoadAverage1m();
  if (!FLAGS_json) {
    std::printf("failover_bench: 3 nodes on loopback, fsync %s, %d load clients per node, "
                "lease %d ms, election timeout %d ms (+ up to %d), heartbeat %d ms\n",
                FLAGS_sync_writes ? "on" : "OFF", FLAGS_clients, defaults.lease_ms,
                defaults.election_timeout_ms, defaults.election_jitter_ms,
                defaults.heartbeat_interval_ms);
    std::printf("%6s %7s %11s %14s %8s %6s %11s  %s\n", "round", "killed", "failover_ms",
                "first_read_ms", "acked", "lost", "duplicates", "new master / error");
    std::fflush(stdout);
  }
  std::vector<double> failover, first_read;
  uint64_t acked = 0, lost = 0, duplicates = 0;
  int failed = 0;
  for (int round = 1; round <= FLAGS_rounds && !g_interrupted.load(); ++round) {
    RoundResult r = RunRound(argv0);
    if (!r.ok) ++failed;
    if (r.failover_ms >= 0) failover.push_back(r.failover_ms);
    if (r.first_read_ms >= 0) first_read.push_back(r.first_read_ms);
    acked += r.acked;
    lost += r.lost;
    duplicates += r.duplicates;
    if (!FLAGS_json) {
      std::printf("%6d %7d %11.1f %14.1f %8" PRIu64 " %6" PRIu64 " %11" PRIu64 "  %s\n", round,
                  r.killed, r.failover_ms, r.first_read_ms, r.acked, r.lost, r.duplicates,
                  r.ok ? ("node " + std::to_string(r.new_master)).c_str() : r.error.c_str());
      std::fflush(stdout);
    } else if (!r.ok) {
      std::fprintf(stderr, "failover_bench: round %d: %s\n", round, r.error.c_str());
    }
  }
  const double failover_med = chorus::bench::Median(failover);
  const double read_med = chorus::bench::Median(first_read);
  if (FLAGS_json) {
    std::printf(
        "{\"bench\":\"failover\",\"failover_ms\":%.1f,\"first_read_ms\":%.1f,\"lost\":%" PRIu64
        ",\"duplicates\":%" PRIu64 ",\"acked\":%" PRIu64
        ",\"rounds\":%d,\"failed_rounds\":%d,\"failover_ms_by_round\":%s,"
        "\"first_read_ms_by_round\":%s,\"clients_per_node\":%d,\"value_size\":%d,"
        "\"lease_ms\":%d,\"election_timeout_ms\":%d,\"election_jitter_ms\":%d,"
        "\"heartbeat_interval_ms\":%d,\"probe_timeout_ms\":%d,\"sync_writes\":%s,"
        "\"load_avg_1m\":%.2f,\"cpus\":%u}\n",
        failover_med, read_med, lost, duplicates, acked, FLAGS_rounds, failed,
        JsonList(failover).c_str(), JsonList(first_read).c_str(), FLAGS_clients,
        FLAGS_value_size, defaults.lease_ms, defaults.election_timeout_ms,
        defaults.election_jitter_ms, defaults.heartbeat_interval_ms, FLAGS_probe_timeout_ms,
        FLAGS_sync_writes ? "true" : "false", load, std::thread::hardware_concurrency());
  } else {
    std::printf("median failover_ms %.1f, first_read_ms %.1f over %zu round(s); lost %" PRIu64
                ", duplicates %" PRIu64 " of %" PRIu64 " acknowledged; %d round(s) failed "
                "(load average %.2f at start)\n",
                failover_med, read_med, failover.size(), lost, duplicates, acked, failed, load);
  }
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "failover_bench [--rounds=N --clients=N --load_ms=MS --after_ms=MS --json]\n"
      "kills the master of a loaded 3-process cluster and times the failover",
      &argc, &argv);
  if (FLAGS_role == "node") return RunNode();
  if (!FLAGS_role.empty()) {
    std::fprintf(stderr, "failover_bench: unknown --role=%s\n", FLAGS_role.c_str());
    return 2;
  }
  return RunParent(argv[0]);
}
