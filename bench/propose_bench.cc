// propose_bench: throughput and latency of Propose / BatchPropose on a real
// 3-process chorus cluster on loopback, with fsync on.
//
//   propose_bench [--clients=100 --value_size=100 --seconds=10 --groups=1]
//                 [--batch --batch_count=64 --batch_delay_ms=0] [--json]
//
// The program runs itself three times (fork + exec of /proc/self/exe with the
// hidden --role=node): node 1 and node 2 just serve; node 0 also runs the
// --clients threads, so every proposal goes through a Node like an
// application's would. Each client proposes --value_size-byte values back to
// back for --seconds, round-robin over the groups, and times every call.
// Node 0 prints the result (a table, or one JSON object with --json) on
// stdout: values/s, latency percentiles of the successful calls, failures
// and the Status codes seen. Data dirs live in a temp dir that is removed at
// the end; the parent always kills its children (and they die with it).
//
// A "value" is one successful client call (with --batch, one BatchPropose
// call, not the batch it left in); values/s counts them over the measured
// window, which starts after the warm-up (one value chosen per group) and ends
// when the last client thread returns.
//
// CPU per value: node 0 samples the user + system CPU time of all three node
// processes at the start and at the end of the measured window: its own with
// getrusage(RUSAGE_SELF), node 1's and node 2's from utime + stime in
// /proc/<pid>/stat (the parent passes their pids in --peer_pids; clock ticks,
// so 10 ms resolution at 100 Hz per sample). Sampling all three from one
// place at the same two instants needs no messages between the nodes and
// excludes the warm-up and the stop. Each node's CPU in the window divided by
// the values of the window is `cpu_us_per_value_by_node` (node 0 includes
// the client threads); their sum is `cpu_us_per_value`. A figure that could
// not be measured (a peer gone, no values) is -1.
// MB/s (`mb_per_sec`) is values/s x --value_size / 1e6: payload bytes only,
// without chorus's headers, the batch encoding or the replication fan-out.
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"
#include "tools/program_flags.h"

DEFINE_int32(clients, 100, "client threads proposing concurrently (in node 0)");
DEFINE_int32(value_size, 100, "bytes per proposed value");
DEFINE_int32(seconds, 10, "measured duration");
DEFINE_int32(groups, 1, "paxos groups; clients go round-robin over them");
DEFINE_bool(batch, false, "use BatchPropose instead of Propose");
DEFINE_int32(batch_count, 64, "Options::batch_max_count (with --batch)");
DEFINE_int32(batch_delay_ms, 0, "Options::batch_delay_ms (with --batch)");
DEFINE_int32(max_inflight, 64, "Options::max_inflight (instances in flight per group)");
DEFINE_bool(sync_writes, true, "Options::sync_writes (fsync); keep on for real figures");
DEFINE_bool(json, false, "print one JSON object instead of a table");
DEFINE_int32(warmup_timeout_s, 30, "how long node 0 waits for the cluster to choose a value");

// Hidden: how the program runs its node processes.
DEFINE_string(role, "", "(internal) 'node' in a child process");
DEFINE_int32(node_index, 0, "(internal) this child's index in --nodes");
DEFINE_string(nodes, "", "(internal) ip:port list of the 3 nodes");
DEFINE_string(data_dir, "", "(internal) this node's data dir");
DEFINE_bool(create_if_missing, false, "(internal) create the data dir (the nodes' first start)");
DEFINE_bool(run_clients, false, "(internal) this node runs the clients and prints the result");
DEFINE_string(peer_pids, "", "(internal) pids of node 1 and node 2, for their CPU time");

namespace {

using Clock = std::chrono::steady_clock;

// Counts executed values; the bench measures the cluster, not an application.
class CountingStateMachine : public chorus::StateMachine {
 public:
  int id() const override { return 1; }
  chorus::Status Execute(const chorus::ExecuteInfo&, const std::string&,
                         chorus::ExecuteContext*) override {
    executed_.fetch_add(1, std::memory_order_relaxed);
    return chorus::Status::OK();
  }
  uint64_t executed() const { return executed_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> executed_{0};
};

// User + system CPU seconds this process used so far.
double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// User + system CPU seconds process `pid` used so far, from /proc/<pid>/stat
// (utime and stime, fields 14 and 15, in clock ticks); -1 if it cannot be read.
double ProcessCpuSecondsOf(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: the fields
  // that follow start after its last ')'.
  const char* p = std::strrchr(buf, ')');
  unsigned long long utime = 0, stime = 0;
  if (p == nullptr ||
      std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) != 2) {
    return -1;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(ticks);
}

// The machine's 1-minute load average: the figures mean little on a machine
// that is busy with something else, so the report says how busy it was.
double LoadAverage1m() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

// What the measured window cost besides the proposals themselves.
struct Environment {
  double load_avg_1m = -1;  // at the start of the window
  double node0_cpu = 0;     // CPU cores node 0 (leader + clients) kept busy
  // CPU seconds each node process used in the window; -1 if unknown.
  std::vector<double> cpu_s_by_node;
};

// CPU seconds of node 0 (this process) and of the peers in `peers`, in node
// order; -1 for a peer that cannot be read.
std::vector<double> SampleCpuSeconds(const std::vector<pid_t>& peers) {
  std::vector<double> cpu = {ProcessCpuSeconds()};
  for (pid_t pid : peers) cpu.push_back(ProcessCpuSecondsOf(pid));
  return cpu;
}

// The pids in --peer_pids ("pid1,pid2"); empty entries are skipped.
std::vector<pid_t> PeerPids() {
  std::vector<pid_t> pids;
  size_t pos = 0;
  while (pos < FLAGS_peer_pids.size()) {
    size_t comma = FLAGS_peer_pids.find(',', pos);
    if (comma == std::string::npos) comma = FLAGS_peer_pids.size();
    if (comma > pos) {
      const std::string pid = FLAGS_peer_pids.substr(pos, comma - pos);
      pids.push_back(static_cast<pid_t>(std::atol(pid.c_str())));
    }
    pos = comma + 1;
  }
  return pids;
}

struct ClientResult {
  std::vector<uint32_t> latencies_us;  // successful calls only
  std::map<std::string, uint64_t> failures;  // Status code name -> count
};

double Percentile(const std::vector<uint32_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::min(sorted.size(), std::max<size_t>(rank, 1));
  return sorted[rank - 1] / 1000.0;
}

// Proposes one value per group until each is chosen (the peers may still be
// starting): the measured window then starts on a working cluster.
chorus::Status WarmUp(chorus::Node* node) {
  const auto deadline = Clock::now() + std::chrono::seconds(FLAGS_warmup_timeout_s);
  for (int g = 0; g < FLAGS_groups; ++g) {
    chorus::Status s;
    do {
      uint64_t instance = 0;
      s = node->Propose(static_cast<uint32_t>(g), "warmup", &instance);
      if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (!s.ok() && !s.IsStopped() && Clock::now() < deadline);
    if (!s.ok()) return s;
  }
  return chorus::Status::OK();
}

void RunClient(chorus::Node* node, int index, Clock::time_point end, ClientResult* out) {
  std::string value(static_cast<size_t>(FLAGS_value_size), 'a' + index % 26);
  out->latencies_us.reserve(1 << 16);
  uint32_t group = static_cast<uint32_t>(index % FLAGS_groups);
  while (Clock::now() < end) {
    uint64_t instance = 0;
    uint32_t batch_index = 0;
    const auto start = Clock::now();
    chorus::Status s = FLAGS_batch ? node->BatchPropose(group, value, &instance, &batch_index)
                                   : node->Propose(group, value, &instance);
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    if (s.ok()) {
      out->latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
    } else {
      ++out->failures[chorus::Status::CodeName(s.code())];
      if (s.IsStopped()) break;
    }
    group = (group + 1) % static_cast<uint32_t>(FLAGS_groups);
  }
}

void Report(double elapsed_s, std::vector<ClientResult>& results, uint64_t executed,
            const Environment& env) {
  std::vector<uint32_t> all;
  std::map<std::string, uint64_t> failures;
  uint64_t failure_count = 0;
  for (ClientResult& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    for (const auto& [code, n] : r.failures) {
      failures[code] += n;
      failure_count += n;
    }
  }
  std::sort(all.begin(), all.end());
  const double ops = static_cast<double>(all.size()) / elapsed_s;
  const double p50 = Percentile(all, 0.50), p99 = Percentile(all, 0.99);
  const double p999 = Percentile(all, 0.999), max = all.empty() ? 0 : all.back() / 1000.0;
  const double mb_per_sec = ops * FLAGS_value_size / 1e6;
  // CPU microseconds per value, per node and in total (-1: unknown).
  std::vector<double> cpu_us_by_node;
  double cpu_us_total = all.empty() ? -1 : 0;
  for (size_t i = 0; i < 3; ++i) {
    const double cpu_s = i < env.cpu_s_by_node.size() ? env.cpu_s_by_node[i] : -1;
    const double us =
        (cpu_s < 0 || all.empty()) ? -1 : cpu_s * 1e6 / static_cast<double>(all.size());
    cpu_us_by_node.push_back(us);
    if (us < 0) cpu_us_total = -1;
    if (cpu_us_total >= 0) cpu_us_total += us;
  }
  std::string codes;
  for (const auto& [code, n] : failures) {
    if (!codes.empty()) codes += FLAGS_json ? "," : " ";
    codes += FLAGS_json ? "\"" + code + "\":" + std::to_string(n) : code + "=" + std::to_string(n);
  }
  if (FLAGS_json) {
    std::printf(
        "{\"bench\":\"propose\",\"ops_per_sec\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
        "\"p999_ms\":%.3f,\"max_ms\":%.3f,\"ops\":%zu,\"failures\":%" PRIu64
        ",\"failure_codes\":{%s},\"elapsed_s\":%.3f,\"executed_on_node0\":%" PRIu64
        ",\"mb_per_sec\":%.3f,\"cpu_us_per_value\":%.2f,"
        "\"cpu_us_per_value_by_node\":[%.2f,%.2f,%.2f],"
        "\"node0_cpu_cores\":%.2f,\"load_avg_1m\":%.2f,\"cpus\":%u,\"nodes\":3,\"clients\":%d,\"value_size\":%d,\"seconds\":%d,\"groups\":%d,"
        "\"batch\":%s,\"batch_count\":%d,\"batch_delay_ms\":%d,\"max_inflight\":%d,"
        "\"sync_writes\":%s}\n",
        ops, p50, p99, p999, max, all.size(), failure_count, codes.c_str(), elapsed_s, executed,
        mb_per_sec, cpu_us_total, cpu_us_by_node[0], cpu_us_by_node[1], cpu_us_by_node[2],
        env.node0_cpu, env.load_avg_1m, std::thread::hardware_concurrency(),
        FLAGS_clients, FLAGS_value_size, FLAGS_seconds, FLAGS_groups,
        FLAGS_batch ? "true" : "false", FLAGS_batch_count, FLAGS_batch_delay_ms,
        FLAGS_max_inflight, FLAGS_sync_writes ? "true" : "false");
  } else {
    std::printf("propose_bench: 3 nodes on loopback, fsync %s, %d group(s), %d clients, "
                "%d-byte values, %d s, %s\n",
                FLAGS_sync_writes ? "on" : "OFF", FLAGS_groups, FLAGS_clients, FLAGS_value_size,
                FLAGS_seconds,
                FLAGS_batch ? ("BatchPropose (count " + std::to_string(FLAGS_batch_count) +
                               ", delay " + std::to_string(FLAGS_batch_delay_ms) + " ms)").c_str()
                            : "Propose");
    std::printf("%12s %9s %9s %9s %9s %9s %11s %10s %9s  %s\n", "values/s", "MB/s", "p50 ms",
                "p99 ms", "p999 ms", "max ms", "CPU us/val", "ok", "failures", "codes");
    std::printf("%12.1f %9.3f %9.3f %9.3f %9.3f %9.3f %11.2f %10zu %9" PRIu64 "  %s\n", ops,
                mb_per_sec, p50, p99, p999, max, cpu_us_total, all.size(), failure_count,
                codes.empty() ? "-" : codes.c_str());
    std::printf("(CPU us per value by node: node 0 %.2f (with the clients), node 1 %.2f, "
                "node 2 %.2f; MB/s counts payload bytes only)\n",
                cpu_us_by_node[0], cpu_us_by_node[1], cpu_us_by_node[2]);
    std::printf("(latencies of successful calls; node 0 kept %.2f of %u CPUs busy; "
                "load average %.2f at start)\n",
                env.node0_cpu, std::thread::hardware_concurrency(), env.load_avg_1m);
  }
  std::fflush(stdout);
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
  std::vector<std::unique_ptr<CountingStateMachine>> machines;
  for (int g = 0; g < FLAGS_groups; ++g) {
    machines.push_back(std::make_unique<CountingStateMachine>());
    options.state_machines.emplace_back(static_cast<uint32_t>(g), machines.back().get());
  }

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::unique_ptr<chorus::Node> node;
  s = chorus::Node::Open(options, &node);
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: node %d: Open: %s\n", FLAGS_node_index,
                 s.ToString().c_str());
    return 1;
  }
  if (!FLAGS_run_clients) {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    node->Stop();
    return 0;
  }

  s = WarmUp(node.get());
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: the cluster chose no value within %d s: %s\n",
                 FLAGS_warmup_timeout_s, s.ToString().c_str());
    node->Stop();
    return 1;
  }
  uint64_t executed_before = 0;
  for (const auto& m : machines) executed_before += m->executed();

  std::vector<ClientResult> results(static_cast<size_t>(FLAGS_clients));
  std::vector<std::thread> threads;
  Environment env;
  env.load_avg_1m = LoadAverage1m();
  const std::vector<pid_t> peers = PeerPids();
  const std::vector<double> cpu_before = SampleCpuSeconds(peers);
  const auto start = Clock::now();
  const auto end = start + std::chrono::seconds(FLAGS_seconds);
  for (int i = 0; i < FLAGS_clients; ++i) {
    threads.emplace_back(RunClient, node.get(), i, end, &results[static_cast<size_t>(i)]);
  }
  for (std::thread& t : threads) t.join();
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const std::vector<double> cpu_after = SampleCpuSeconds(peers);
  env.node0_cpu = (cpu_after[0] - cpu_before[0]) / elapsed_s;
  for (size_t i = 0; i < cpu_after.size(); ++i) {
    const bool known = cpu_before[i] >= 0 && cpu_after[i] >= 0;
    env.cpu_s_by_node.push_back(known ? cpu_after[i] - cpu_before[i] : -1);
  }
  uint64_t executed = 0;
  for (const auto& m : machines) executed += m->executed();
  Report(elapsed_s, results, executed - executed_before, env);
  node->Stop();
  return 0;
}

// ---- the parent: starts the three node processes and cleans up ----

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted.store(true); }

// Three distinct loopback ports that were free a moment ago.
bool PickPorts(std::vector<uint16_t>* ports) {
  std::vector<int> fds;
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
         getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    if (fd >= 0) fds.push_back(fd);
    if (ok) ports->push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ok;
}

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Die with the parent, whatever kills it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` until `deadline`; returns its wait status, or -1 on timeout
// or interruption.
int WaitUntil(pid_t pid, Clock::time_point deadline) {
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (Clock::now() >= deadline || g_interrupted.load()) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Terminate(pid_t pid) {
  kill(pid, SIGTERM);
  if (WaitUntil(pid, Clock::now() + std::chrono::seconds(5)) == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

int RunParent(const char* argv0) {
  if (FLAGS_clients < 1 || FLAGS_value_size < 0 || FLAGS_seconds < 1 || FLAGS_groups < 1) {
    std::fprintf(stderr, "propose_bench: --clients, --seconds, --groups must be >= 1\n");
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
  std::vector<uint16_t> ports;
  if (!PickPorts(&ports)) {
    std::fprintf(stderr, "propose_bench: no free loopback ports\n");
    std::filesystem::remove_all(dir);
    return 1;
  }
  std::string nodes;
  for (uint16_t p : ports) nodes += (nodes.empty() ? "" : ",") + std::string("127.0.0.1:") +
                                    std::to_string(p);

  auto flag = [](const char* name, const std::string& v) { return "--" + std::string(name) + "=" + v; };
  auto bool_flag = [](const char* name, bool v) { return std::string(v ? "--" : "--no") + name; };
  std::vector<pid_t> pids;
  // Start the serving nodes first and node 0 (the clients) last.
  for (int i = 2; i >= 0; --i) {
    std::vector<std::string> args = {
        argv0, "--role=node", flag("node_index", std::to_string(i)), flag("nodes", nodes),
        flag("data_dir", dir + "/node" + std::to_string(i)), "--create_if_missing",
        flag("groups", std::to_string(FLAGS_groups)),
        flag("max_inflight", std::to_string(FLAGS_max_inflight)),
        flag("batch_count", std::to_string(FLAGS_batch_count)),
        flag("batch_delay_ms", std::to_string(FLAGS_batch_delay_ms)),
        bool_flag("sync_writes", FLAGS_sync_writes)};
    if (i == 0) {
      args.insert(args.end(),
                  {"--run_clients", flag("clients", std::to_string(FLAGS_clients)),
                   flag("value_size", std::to_string(FLAGS_value_size)),
                   flag("seconds", std::to_string(FLAGS_seconds)),
                   flag("warmup_timeout_s", std::to_string(FLAGS_warmup_timeout_s)),
                   bool_flag("batch", FLAGS_batch), bool_flag("json", FLAGS_json)});
      // Node 0 samples its peers' CPU time (node 1, node 2) over the window.
      if (pids.size() == 2) {
        args.push_back(flag("peer_pids",
                            std::to_string(pids[1]) + "," + std::to_string(pids[0])));
      }
    }
    pid_t pid = Spawn(args);
    if (pid < 0) {
      std::perror("propose_bench: fork");
      break;
    }
    pids.push_back(pid);
  }

  int rc = 1;
  if (pids.size() == 3) {
    // Node 0 has warm-up + the run + a stop to do.
    const auto deadline =
        Clock::now() + std::chrono::seconds(FLAGS_warmup_timeout_s + FLAGS_seconds + 60);
    int status = WaitUntil(pids.back(), deadline);
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
  for (pid_t pid : pids) Terminate(pid);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags("propose_bench [--clients=N --value_size=B --seconds=S --groups=G "
                            "--batch --batch_count=N --batch_delay_ms=MS --json]",
                            &argc, &argv);
  if (FLAGS_role == "node") return RunNode();
  if (!FLAGS_role.empty()) {
    std::fprintf(stderr, "propose_bench: unknown --role=%s\n", FLAGS_role.c_str());
    return 2;
  }
  return RunParent(argv[0]);
}
