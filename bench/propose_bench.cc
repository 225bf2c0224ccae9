// propose_bench: throughput and latency of Propose / BatchPropose on a real
// 3-process chorus cluster on loopback, with fsync on.
//
//   propose_bench [--clients=100 --value_size=100 --seconds=10 --groups=1]
//                 [--batch --batch_count=64 --batch_delay_ms=0 --batch_inflight=2] [--json]
//                 [--election [--clients_on=one|all] [--node0_role=any|master|follower]
//                  [--reads]]
//                 [--checkpoint_interval=N [--log_keep=K]] [--secret]
//                 [--async [--async_submitters=1] [--async_chain]]
//
// The program runs itself three times (fork + exec of /proc/self/exe with the
// hidden --role=node): node 1 and node 2 just serve; node 0 also runs the
// --clients threads, so every proposal goes through a Node like an
// application's would. Each client proposes --value_size-byte values back to
// back for --seconds, round-robin over the groups, and times every call.
//
// Master election (Options::master_election, --election):
//   --clients_on=all spreads the --clients over the three nodes (node 0 gets
//     the remainder); a non-master forwards its proposals to the master. The
//     nodes meet through files in the run's temp dir: node 0, once warmed up,
//     writes the window's start and end (CLOCK_MONOTONIC, the same clock in
//     every process), node 1 and node 2 run their clients in that window and
//     write their latencies and failures back for node 0 to merge. Works
//     without --election too (every node then proposes on its own: they duel).
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
// Per thread (bench/thread_cpu.h): the same two instants also sample every
// thread of the three processes; `threads_cpu_us_per_value` is node 0's CPU
// per value by thread name, user and system ("clients": the client threads,
// which live only in the window), `threads_cpu_us_per_value_by_node` all three.
// MB/s (`mb_per_sec`) is values/s x --value_size / 1e6: payload bytes only,
// without chorus's headers, the batch encoding or the replication fan-out.
#include <signal.h>
#include <sys/resource.h>
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

#include "bench/async_clients.h"
#include "bench/bench_cluster.h"
#include "bench/thread_cpu.h"
#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
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
DEFINE_string(clients_on, "one", "one: every client in node 0; all: spread over the 3 nodes");
DEFINE_string(node0_role, "any",
              "with --election: any, master (node 0 is made master) or follower");
DEFINE_bool(reads, false, "with --election: clients call ReadBarrier instead of Propose");
DEFINE_uint64(checkpoint_interval, 0,
              "Options::checkpoint_interval_instances (0: no checkpoints, no trimming)");
DEFINE_uint64(log_keep, 20000, "Options::log_keep_instances (with --checkpoint_interval)");

// Hidden: how the program runs its node processes.
DEFINE_string(role, "", "(internal) 'node' in a child process");
DEFINE_int32(node_index, 0, "(internal) this child's index in --nodes");
DEFINE_string(nodes, "", "(internal) ip:port list of the 3 nodes");
DEFINE_string(data_dir, "", "(internal) this node's data dir");
DEFINE_bool(create_if_missing, false, "(internal) create the data dir (the nodes' first start)");
DEFINE_bool(run_clients, false, "(internal) this node runs the clients and prints the result");
DEFINE_string(peer_pids, "", "(internal) pids of node 1 and node 2, for their CPU time");
DEFINE_string(run_dir, "", "(internal) the run's temp dir, where the nodes meet");

namespace {

using chorus::bench::Clock;
using chorus::bench::MonotonicNs;

// How many of the --clients run in node `index` (all in node 0 unless
// --clients_on=all), and the global index of its first one.
int ClientsOf(int index) {
  if (FLAGS_clients_on != "all") return index == 0 ? FLAGS_clients : 0;
  return FLAGS_clients / 3 + (index < FLAGS_clients % 3 ? 1 : 0);
}
int FirstClientOf(int index) {
  int first = 0;
  for (int i = 0; i < index; ++i) first += ClientsOf(i);
  return first;
}

// Writes `text` to `path` at once (a temp file renamed over it), so a node
// that polls for `path` never reads half of it.
bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return false;
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool ReadFile(const std::string& path, std::string* text) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  text->clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text->append(buf, n);
  std::fclose(f);
  return true;
}

// Counts executed values; the bench measures the cluster, not an application.
// Its checkpoint is the count, in one file (--checkpoint_interval).
class CountingStateMachine : public chorus::StateMachine {
 public:
  int id() const override { return 1; }
  chorus::Status Execute(const chorus::ExecuteInfo& info, const std::string&,
                         chorus::ExecuteContext*) override {
    executed_.fetch_add(1, std::memory_order_relaxed);
    // Every instance has exactly one value at batch index 0.
    if (info.batch_index == 0) instances_.fetch_add(1, std::memory_order_relaxed);
    return chorus::Status::OK();
  }
  uint64_t executed() const { return executed_.load(std::memory_order_relaxed); }
  // Paxos instances executed (not checkpointed), for the batch shape.
  uint64_t instances() const { return instances_.load(std::memory_order_relaxed); }

  chorus::Status PrepareCheckpoint(const chorus::CheckpointInfo&,
                                   std::unique_ptr<chorus::CheckpointWriter>* writer) override {
    writer->reset(new CountWriter(executed()));  // the snapshot: one number
    return chorus::Status::OK();
  }
  chorus::Status LoadCheckpoint(const chorus::CheckpointInfo&, const std::string& dir) override {
    std::string text;
    if (!ReadFile(dir + "/count", &text)) return chorus::Status::IOError("cannot read " + dir);
    executed_.store(std::strtoull(text.c_str(), nullptr, 10), std::memory_order_relaxed);
    return chorus::Status::OK();
  }

 private:
  std::atomic<uint64_t> executed_{0};
  std::atomic<uint64_t> instances_{0};

  class CountWriter : public chorus::CheckpointWriter {
   public:
    explicit CountWriter(uint64_t count) : count_(count) {}
    chorus::Status Write(const std::string& dir) override {
      FILE* f = std::fopen((dir + "/count").c_str(), "w");
      if (f == nullptr) return chorus::Status::IOError("cannot create " + dir + "/count");
      const bool ok = std::fprintf(f, "%" PRIu64 "\n", count_) > 0;
      return std::fclose(f) == 0 && ok ? chorus::Status::OK()
                                       : chorus::Status::IOError("cannot write " + dir + "/count");
    }

   private:
    const uint64_t count_;
  };
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

// What the measured window cost besides the proposals themselves.
struct Environment {
  double load_avg_1m = -1;  // at the start of the window
  double node0_cpu = 0;     // CPU cores node 0 (leader + clients) kept busy
  // CPU seconds each node process used in the window; -1 if unknown.
  std::vector<double> cpu_s_by_node;
  // By thread name, per node (empty: not measured).
  std::vector<std::map<std::string, chorus::bench::CpuTimes>> threads_by_node;
  int node0_is_master = -1;  // of group 0 at the window's start; -1: election off
  // Node 0, group 0, at the window's end (--checkpoint_interval).
  uint64_t checkpoints_made = 0;
  uint64_t log_start = 0;
  // Instances node 0 executed in the window (all groups): with `executed`,
  // the batch shape (values per instance).
  uint64_t instances = 0;
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
    chorus::Status s = FLAGS_reads   ? node->ReadBarrier(group, &instance)
                       : FLAGS_batch ? node->BatchPropose(group, value, &instance, &batch_index)
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

// values/s, p50 and p99 ms of the clients of each node ("[a,b,c]" JSON
// lists); node_of[i] is the node of results[i].
struct ByNode {
  std::string ops, p50, p99;
};
ByNode ReportByNode(double elapsed_s, const std::vector<ClientResult>& results,
                    const std::vector<int>& node_of) {
  ByNode out;
  for (int n = 0; n < 3; ++n) {
    std::vector<uint32_t> lat;
    for (size_t i = 0; i < results.size() && i < node_of.size(); ++i) {
      if (node_of[i] != n) continue;
      lat.insert(lat.end(), results[i].latencies_us.begin(), results[i].latencies_us.end());
    }
    std::sort(lat.begin(), lat.end());
    char buf[3][32];
    std::snprintf(buf[0], sizeof(buf[0]), "%.1f", static_cast<double>(lat.size()) / elapsed_s);
    std::snprintf(buf[1], sizeof(buf[1]), "%.3f", Percentile(lat, 0.50));
    std::snprintf(buf[2], sizeof(buf[2]), "%.3f", Percentile(lat, 0.99));
    const char* sep = n == 0 ? "[" : ",";
    out.ops += sep + std::string(buf[0]);
    out.p50 += sep + std::string(buf[1]);
    out.p99 += sep + std::string(buf[2]);
  }
  out.ops += "]";
  out.p50 += "]";
  out.p99 += "]";
  return out;
}

void Report(double elapsed_s, std::vector<ClientResult>& results, const std::vector<int>& node_of,
            uint64_t executed, const Environment& env) {
  const ByNode by_node = ReportByNode(elapsed_s, results, node_of);
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
  const double mb_per_sec = FLAGS_reads ? 0 : ops * FLAGS_value_size / 1e6;  // reads carry none
  // Node 0 executes every group's values, whoever proposed them.
  const double values_per_instance =
      env.instances == 0 ? 0 : static_cast<double>(executed) / static_cast<double>(env.instances);
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
  std::string node0_threads_json, threads_json, threads_text;
  for (size_t i = 0; i < 3; ++i) {
    const auto* t = i < env.threads_by_node.size() ? &env.threads_by_node[i] : nullptr;
    const double n = static_cast<double>(all.size());
    const std::string json = t ? chorus::bench::CpuByThreadJson(*t, n) : "{}";
    if (i == 0) node0_threads_json = json;
    threads_json += (i == 0 ? "" : ",") + json;
    threads_text += "; node " + std::to_string(i) + ": " +
                    (t ? chorus::bench::CpuByThreadText(*t, n) : "-");
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
        ",\"instances_on_node0\":%" PRIu64 ",\"values_per_instance\":%.2f"
        ",\"mb_per_sec\":%.3f,\"cpu_us_per_value\":%.2f,"
        "\"cpu_us_per_value_by_node\":[%.2f,%.2f,%.2f],"
        "\"node0_cpu_cores\":%.2f,\"load_avg_1m\":%.2f,\"cpus\":%u,\"nodes\":3,\"clients\":%d,\"value_size\":%d,\"seconds\":%d,\"groups\":%d,"
        "\"batch\":%s,\"batch_count\":%d,\"batch_delay_ms\":%d,\"batch_inflight\":%d,"
        "\"max_inflight\":%d,"
        "\"sync_writes\":%s,\"op\":\"%s\",\"election\":%s,\"clients_on\":\"%s\","
        "\"clients_by_node\":[%d,%d,%d],\"ops_per_sec_by_node\":%s,\"p50_ms_by_node\":%s,"
        "\"p99_ms_by_node\":%s,\"node0_role\":\"%s\",\"node0_is_master\":%d,"
        "\"checkpoint_interval\":%" PRIu64 ",\"log_keep\":%" PRIu64 ",\"checkpoints_made\":%" PRIu64
        ",\"log_start\":%" PRIu64 ",\"secret\":%s,\"async\":%s,\"async_submitters\":%d,\"async_chain\":%s,"
        "\"threads_cpu_us_per_value\":%s,\"threads_cpu_us_per_value_by_node\":[%s]}\n",
        ops, p50, p99, p999, max, all.size(), failure_count, codes.c_str(), elapsed_s, executed,
        env.instances, values_per_instance, mb_per_sec, cpu_us_total, cpu_us_by_node[0], cpu_us_by_node[1], cpu_us_by_node[2],
        env.node0_cpu, env.load_avg_1m, std::thread::hardware_concurrency(),
        FLAGS_clients, FLAGS_value_size, FLAGS_seconds, FLAGS_groups,
        FLAGS_batch ? "true" : "false", FLAGS_batch_count, FLAGS_batch_delay_ms, FLAGS_batch_inflight,
        FLAGS_max_inflight, FLAGS_sync_writes ? "true" : "false", FLAGS_reads ? "read" : "propose",
        FLAGS_election ? "true" : "false", FLAGS_clients_on.c_str(), ClientsOf(0), ClientsOf(1),
        ClientsOf(2), by_node.ops.c_str(), by_node.p50.c_str(), by_node.p99.c_str(),
        FLAGS_node0_role.c_str(), env.node0_is_master, uint64_t{FLAGS_checkpoint_interval},
        uint64_t{FLAGS_log_keep}, env.checkpoints_made, env.log_start,
        FLAGS_secret ? "true" : "false", FLAGS_async ? "true" : "false", FLAGS_async_submitters,
        FLAGS_async_chain ? "true" : "false", node0_threads_json.c_str(), threads_json.c_str());
  } else {
    std::printf("propose_bench: 3 nodes on loopback, fsync %s, %d group(s), %d clients "
                "(%d/%d/%d on nodes 0/1/2), %d-byte values, %d s, %s, election %s",
                FLAGS_sync_writes ? "on" : "OFF", FLAGS_groups, FLAGS_clients, ClientsOf(0),
                ClientsOf(1), ClientsOf(2), FLAGS_value_size, FLAGS_seconds,
                FLAGS_reads   ? "ReadBarrier"
                : FLAGS_batch ? ("BatchPropose (count " + std::to_string(FLAGS_batch_count) +
                                 ", delay " + std::to_string(FLAGS_batch_delay_ms) +
                                 " ms, in flight " + std::to_string(FLAGS_batch_inflight) + ")")
                                    .c_str()
                              : "Propose",
                FLAGS_election ? "on" : "off");
    if (FLAGS_async) {
      std::printf(", async (%d in flight from %d submitting thread(s)%s)", FLAGS_clients,
                  FLAGS_async_submitters, FLAGS_async_chain ? ", chained in done" : "");
    }
    if (FLAGS_secret) std::printf(", cluster_secret on");
    if (env.node0_is_master >= 0) {
      std::printf(" (node 0 %s)", env.node0_is_master ? "master" : "follower");
    }
    if (FLAGS_checkpoint_interval > 0) {
      std::printf(", checkpoints every %" PRIu64 " keeping %" PRIu64 " (node 0 made %" PRIu64
                  ", log starts at %" PRIu64 ")",
                  uint64_t{FLAGS_checkpoint_interval}, uint64_t{FLAGS_log_keep},
                  env.checkpoints_made, env.log_start);
    }
    std::printf("\n");
    std::printf("%12s %9s %9s %9s %9s %9s %11s %10s %9s  %s\n", "values/s", "MB/s", "p50 ms",
                "p99 ms", "p999 ms", "max ms", "CPU us/val", "ok", "failures", "codes");
    std::printf("%12.1f %9.3f %9.3f %9.3f %9.3f %9.3f %11.2f %10zu %9" PRIu64 "  %s\n", ops,
                mb_per_sec, p50, p99, p999, max, cpu_us_total, all.size(), failure_count,
                codes.empty() ? "-" : codes.c_str());
    std::printf("(CPU us per value by node: node 0 %.2f (with the clients), node 1 %.2f, "
                "node 2 %.2f; MB/s counts payload bytes only)\n",
                cpu_us_by_node[0], cpu_us_by_node[1], cpu_us_by_node[2]);
    std::printf("(values per paxos instance: %.2f, %" PRIu64 " instances executed on node 0)\n",
                values_per_instance, env.instances);
    std::printf("(CPU us per value by thread, user+sys%s)\n", threads_text.c_str());
    if (FLAGS_clients_on == "all") {
      std::printf("(by node 0/1/2: values/s %s, p50 ms %s, p99 ms %s)\n", by_node.ops.c_str(),
                  by_node.p50.c_str(), by_node.p99.c_str());
    }
    std::printf("(latencies of successful calls; node 0 kept %.2f of %u CPUs busy; "
                "load average %.2f at start)\n",
                env.node0_cpu, std::thread::hardware_concurrency(), env.load_avg_1m);
  }
  std::fflush(stdout);
}

// The master of `group` as `node` knows it: its index in `nodes`, -1 if none.
int MasterIndex(chorus::Node* node, uint32_t group, const std::vector<chorus::NodeInfo>& nodes) {
  chorus::MasterInfo m;
  if (!node->GetMaster(group, &m).ok() || !m.known) return -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == m.node) return static_cast<int>(i);
  }
  return -1;
}

// With --election and --node0_role=master|follower: makes node 0 (this
// process) the master of every group, or a follower of another node. A
// master elsewhere hands its groups over when it sees the file want_master
// in --run_dir (ServeControl); node 0 hands its own to node 1.
chorus::Status SetNode0Role(chorus::Node* node, const std::vector<chorus::NodeInfo>& nodes) {
  if (!FLAGS_election || FLAGS_node0_role == "any") return chorus::Status::OK();
  const bool want_master = FLAGS_node0_role == "master";
  const std::string ask = FLAGS_run_dir + "/want_master";
  if (want_master && !WriteFileAtomically(ask, "node 0\n")) {
    return chorus::Status::IOError("cannot write " + ask);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(FLAGS_warmup_timeout_s);
  chorus::Status s;
  for (uint32_t g = 0; g < static_cast<uint32_t>(FLAGS_groups) && s.ok(); ++g) {
    while (true) {
      const bool is_master = node->IsMaster(g);
      if (want_master ? is_master : !is_master && MasterIndex(node, g, nodes) > 0) break;
      if (!want_master && is_master) node->TransferMaster(g, nodes[1].id());  // checked above
      if (Clock::now() >= deadline) {
        s = chorus::Status::Timeout("node 0 did not become " + FLAGS_node0_role + " of group " +
                                    std::to_string(g));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (want_master) std::remove(ask.c_str());
  return s;
}

// With --reads: one ReadBarrier per group succeeds (a new master serves
// reads once its first noop is committed) before the window starts.
chorus::Status WarmUpReads(chorus::Node* node) {
  const auto deadline = Clock::now() + std::chrono::seconds(FLAGS_warmup_timeout_s);
  for (uint32_t g = 0; g < static_cast<uint32_t>(FLAGS_groups); ++g) {
    chorus::Status s;
    do {
      uint64_t instance = 0;
      s = node->ReadBarrier(g, &instance);
      if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (!s.ok() && !s.IsStopped() && Clock::now() < deadline);
    if (!s.ok()) return s;
  }
  return chorus::Status::OK();
}

// Runs the `count` clients whose global indexes start at `first` from
// `start_ns` to `end_ns` (CLOCK_MONOTONIC) and returns their results.
std::vector<ClientResult> RunWindow(chorus::Node* node, int first, int count, int64_t start_ns,
                                    int64_t end_ns) {
  const int64_t wait_ns = start_ns - MonotonicNs();
  if (wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
  const auto end = Clock::now() + std::chrono::nanoseconds(end_ns - MonotonicNs());
  std::vector<ClientResult> results(static_cast<size_t>(count));
  if (FLAGS_async) {
    chorus::bench::AsyncClientsConfig config;
    config.outstanding = count;
    config.submitters = FLAGS_async_submitters;
    config.groups = FLAGS_groups;
    config.value_size = static_cast<size_t>(FLAGS_value_size);
    config.batch = FLAGS_batch;
    config.chain = FLAGS_async_chain;
    std::vector<chorus::bench::AsyncSlotResult> slots =
        chorus::bench::RunAsyncClients(node, config, end);
    for (size_t i = 0; i < slots.size(); ++i) {
      results[i].latencies_us = std::move(slots[i].latencies_us);
      results[i].failures = std::move(slots[i].failures);
    }
    return results;
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    threads.emplace_back(RunClient, node, first + i, end, &results[static_cast<size_t>(i)]);
  }
  for (std::thread& t : threads) t.join();
  return results;
}

// The results of one node's clients as a file: a line "failures CODE:N ...",
// then one latency (us) per line.
std::string EncodeResults(const std::vector<ClientResult>& results) {
  std::map<std::string, uint64_t> failures;
  for (const ClientResult& r : results) {
    for (const auto& [code, n] : r.failures) failures[code] += n;
  }
  std::string text = "failures";
  for (const auto& [code, n] : failures) text += " " + code + ":" + std::to_string(n);
  text += "\n";
  for (const ClientResult& r : results) {
    for (uint32_t us : r.latencies_us) text += std::to_string(us) + "\n";
  }
  return text;
}

bool DecodeResults(const std::string& text, ClientResult* out) {
  const size_t nl = text.find('\n');
  if (text.compare(0, 8, "failures") != 0 || nl == std::string::npos) return false;
  size_t pos = 8;
  while (pos < nl) {
    const size_t colon = text.find(':', pos);
    size_t next = text.find(' ', pos + 1);
    if (next == std::string::npos || next > nl) next = nl;
    if (colon == std::string::npos || colon > next) return false;
    out->failures[text.substr(pos + 1, colon - pos - 1)] +=
        std::strtoull(text.c_str() + colon + 1, nullptr, 10);
    pos = next;
  }
  for (pos = nl + 1; pos < text.size();) {
    char* end = nullptr;
    const unsigned long us = std::strtoul(text.c_str() + pos, &end, 10);
    if (end == text.c_str() + pos) break;
    out->latencies_us.push_back(static_cast<uint32_t>(us));
    pos = static_cast<size_t>(end - text.c_str()) + 1;
  }
  return true;
}

// A serving node (1 or 2) with a --run_dir: hands its mastership to node 0
// while node 0 asks for it, and runs its share of --clients_on=all in the
// window node 0 announced, then writes their results for node 0.
void ServeControl(chorus::Node* node, const std::vector<chorus::NodeInfo>& nodes,
                  const std::atomic<bool>* stop) {
  const std::string ask = FLAGS_run_dir + "/want_master";
  const std::string start = FLAGS_run_dir + "/start";
  std::vector<Clock::time_point> last_transfer(static_cast<size_t>(FLAGS_groups));
  bool ran = ClientsOf(FLAGS_node_index) == 0;
  std::string text;
  while (!stop->load()) {
    if (FLAGS_election && access(ask.c_str(), F_OK) == 0) {
      for (uint32_t g = 0; g < last_transfer.size(); ++g) {
        if (node->IsMaster(g) && Clock::now() - last_transfer[g] > std::chrono::milliseconds(200)) {
          node->TransferMaster(g, nodes[0].id());  // node 0 checks the outcome
          last_transfer[g] = Clock::now();
        }
      }
    }
    long long start_ns = 0, end_ns = 0;
    if (!ran && ReadFile(start, &text) &&
        std::sscanf(text.c_str(), "%lld %lld", &start_ns, &end_ns) == 2) {
      const std::vector<ClientResult> results =
          RunWindow(node, FirstClientOf(FLAGS_node_index), ClientsOf(FLAGS_node_index),
                    start_ns, end_ns);
      const std::string path = FLAGS_run_dir + "/result" + std::to_string(FLAGS_node_index);
      if (!WriteFileAtomically(path, EncodeResults(results))) {
        std::fprintf(stderr, "propose_bench: node %d: cannot write %s\n", FLAGS_node_index,
                     path.c_str());
      }
      ran = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Node 0: adds the results node 1 and node 2 wrote for --clients_on=all,
// waiting for them until `deadline`.
// node_of gets the node of each result added.
chorus::Status CollectPeerResults(Clock::time_point deadline, std::vector<ClientResult>* results,
                                  std::vector<int>* node_of) {
  for (int i = 1; i < 3; ++i) {
    if (ClientsOf(i) == 0) continue;
    const std::string path = FLAGS_run_dir + "/result" + std::to_string(i);
    std::string text;
    while (!ReadFile(path, &text)) {
      if (Clock::now() >= deadline) {
        return chorus::Status::Timeout("no results from node " + std::to_string(i));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    results->emplace_back();
    node_of->push_back(i);
    if (!DecodeResults(text, &results->back())) {
      return chorus::Status::Corruption("bad results file " + path);
    }
  }
  return chorus::Status::OK();
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
  if (!FLAGS_run_clients) {
    std::atomic<bool> stop{false};
    std::thread control;
    if (!FLAGS_run_dir.empty()) control = std::thread(ServeControl, node.get(), options.nodes, &stop);
    chorus::WaitForStopSignal(stop_signals);
    stop.store(true);
    if (control.joinable()) control.join();
    node->Stop();
    return 0;
  }

  s = WarmUp(node.get());
  if (s.ok()) s = SetNode0Role(node.get(), options.nodes);
  if (s.ok() && FLAGS_reads) s = WarmUpReads(node.get());
  if (!s.ok()) {
    std::fprintf(stderr, "propose_bench: the cluster was not ready within %d s: %s\n",
                 FLAGS_warmup_timeout_s, s.ToString().c_str());
    node->Stop();
    return 1;
  }
  uint64_t executed_before = 0, instances_before = 0;
  for (const auto& m : machines) {
    executed_before += m->executed();
    instances_before += m->instances();
  }

  Environment env;
  env.load_avg_1m = chorus::bench::LoadAverage1m();
  if (FLAGS_election) env.node0_is_master = node->IsMaster(0) ? 1 : 0;
  const std::vector<pid_t> peers = PeerPids();
  // The window starts a little later with clients elsewhere: they poll for it.
  const int64_t start_ns = MonotonicNs() + (FLAGS_clients_on == "all" ? 100000000 : 0);
  const int64_t end_ns = start_ns + int64_t{FLAGS_seconds} * 1000000000;
  if (FLAGS_clients_on == "all" &&
      !WriteFileAtomically(FLAGS_run_dir + "/start",
                           std::to_string(start_ns) + " " + std::to_string(end_ns) + "\n")) {
    std::fprintf(stderr, "propose_bench: cannot write %s/start\n", FLAGS_run_dir.c_str());
    node->Stop();
    return 1;
  }
  const int64_t wait_ns = start_ns - MonotonicNs();
  if (wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
  const std::vector<double> cpu_before = SampleCpuSeconds(peers);
  std::vector<chorus::bench::ThreadSample> threads_before = {chorus::bench::SampleThreads(0)};
  for (pid_t pid : peers) threads_before.push_back(chorus::bench::SampleThreads(pid));
  const auto start = Clock::now();
  std::vector<ClientResult> results = RunWindow(node.get(), 0, ClientsOf(0), start_ns, end_ns);
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const std::vector<double> cpu_after = SampleCpuSeconds(peers);
  for (size_t i = 0; i < threads_before.size(); ++i) {
    env.threads_by_node.push_back(chorus::bench::CpuByThreadName(
        threads_before[i], chorus::bench::SampleThreads(i == 0 ? 0 : peers[i - 1]),
        ClientsOf(static_cast<int>(i)) > 0 ? "clients" : "ended"));
  }
  env.node0_cpu = (cpu_after[0] - cpu_before[0]) / elapsed_s;
  for (size_t i = 0; i < cpu_after.size(); ++i) {
    const bool known = cpu_before[i] >= 0 && cpu_after[i] >= 0;
    env.cpu_s_by_node.push_back(known ? cpu_after[i] - cpu_before[i] : -1);
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
    node->Stop();
    return 1;
  }
  Report(elapsed_s, results, node_of, executed - executed_before, env);
  node->Stop();
  return 0;
}

// ---- the parent: starts the three node processes and cleans up ----

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted.store(true); }

// The flags that must agree with each other; the problem, or "" if none.
std::string CheckFlags() {
  if (FLAGS_clients < 1 || FLAGS_value_size < 0 || FLAGS_seconds < 1 || FLAGS_groups < 1) {
    return "--clients, --seconds, --groups must be >= 1";
  }
  if (FLAGS_clients_on != "one" && FLAGS_clients_on != "all") return "--clients_on: one or all";
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
  std::vector<uint16_t> ports;
  if (!chorus::bench::PickPorts(&ports)) {
    std::fprintf(stderr, "propose_bench: no free loopback ports\n");
    std::filesystem::remove_all(dir);
    return 1;
  }
  const std::string nodes = chorus::bench::LoopbackNodes(ports);

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
                   bool_flag("async_chain", FLAGS_async_chain)});
      // Node 0 samples its peers' CPU time (node 1, node 2) over the window.
      if (pids.size() == 2) {
        args.push_back(flag("peer_pids",
                            std::to_string(pids[1]) + "," + std::to_string(pids[0])));
      }
    }
    pid_t pid = chorus::bench::SpawnSelf(args);
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
                            "--batch --batch_count=N --batch_delay_ms=MS --secret --json]",
                            &argc, &argv);
  if (FLAGS_role == "node") return RunNode();
  if (!FLAGS_role.empty()) {
    std::fprintf(stderr, "propose_bench: unknown --role=%s\n", FLAGS_role.c_str());
    return 2;
  }
  return RunParent(argv[0]);
}
