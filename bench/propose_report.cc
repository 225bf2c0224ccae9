#include "bench/propose_report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <thread>

#include <gflags/gflags.h>

// The run's flags, defined in propose_bench.cc: the report repeats them.
DECLARE_int32(clients);
DECLARE_int32(value_size);
DECLARE_int32(seconds);
DECLARE_int32(groups);
DECLARE_bool(batch);
DECLARE_bool(async);
DECLARE_int32(async_submitters);
DECLARE_bool(async_chain);
DECLARE_int32(batch_count);
DECLARE_int32(batch_delay_ms);
DECLARE_int32(batch_inflight);
DECLARE_int32(max_inflight);
DECLARE_bool(sync_writes);
DECLARE_bool(json);
DECLARE_bool(election);
DECLARE_bool(secret);
DECLARE_string(clients_on);
DECLARE_string(node0_role);
DECLARE_bool(reads);
DECLARE_uint64(checkpoint_interval);
DECLARE_uint64(log_keep);

namespace chorus {
namespace bench {

namespace {

double Percentile(const std::vector<uint32_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::min(sorted.size(), std::max<size_t>(rank, 1));
  return sorted[rank - 1] / 1000.0;
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

// Where the clients run, for the table's first line. REQUIRES: 3 counts.
std::string WhereClientsRun(const std::vector<int>& clients) {
  if (FLAGS_clients_on == "process") {
    return "in a client process, over TCP loopback to node 0's propose server";
  }
  return std::to_string(clients[0]) + "/" + std::to_string(clients[1]) + "/" +
         std::to_string(clients[2]) + " on nodes 0/1/2";
}

}  // namespace

void Report(double elapsed_s, const std::vector<ClientResult>& results,
            const std::vector<int>& node_of, uint64_t executed, const Environment& env) {
  const ByNode by_node = ReportByNode(elapsed_s, results, node_of);
  std::vector<int> clients = env.clients_by_node;
  clients.resize(3, 0);
  std::vector<uint32_t> all;
  std::map<std::string, uint64_t> failures;
  uint64_t failure_count = 0;
  for (const ClientResult& r : results) {
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
  const double cpu_us_client =
      (env.client_process_cpu_s < 0 || all.empty())
          ? -1
          : env.client_process_cpu_s * 1e6 / static_cast<double>(all.size());
  std::string node0_threads_json, threads_json, threads_text;
  for (size_t i = 0; i < 3; ++i) {
    const auto* t = i < env.threads_by_node.size() ? &env.threads_by_node[i] : nullptr;
    const double n = static_cast<double>(all.size());
    const std::string json = t ? CpuByThreadJson(*t, n) : "{}";
    if (i == 0) node0_threads_json = json;
    threads_json += (i == 0 ? "" : ",") + json;
    threads_text += "; node " + std::to_string(i) + ": " +
                    (t ? CpuByThreadText(*t, n) : "-");
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
        "\"cpu_us_per_value_by_node\":[%.2f,%.2f,%.2f],\"cpu_us_per_value_client_process\":%.2f,"
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
        cpu_us_client, env.node0_cpu, env.load_avg_1m, std::thread::hardware_concurrency(),
        FLAGS_clients, FLAGS_value_size, FLAGS_seconds, FLAGS_groups,
        FLAGS_batch ? "true" : "false", FLAGS_batch_count, FLAGS_batch_delay_ms, FLAGS_batch_inflight,
        FLAGS_max_inflight, FLAGS_sync_writes ? "true" : "false", FLAGS_reads ? "read" : "propose",
        FLAGS_election ? "true" : "false", FLAGS_clients_on.c_str(), clients[0], clients[1],
        clients[2], by_node.ops.c_str(), by_node.p50.c_str(), by_node.p99.c_str(),
        FLAGS_node0_role.c_str(), env.node0_is_master, uint64_t{FLAGS_checkpoint_interval},
        uint64_t{FLAGS_log_keep}, env.checkpoints_made, env.log_start,
        FLAGS_secret ? "true" : "false", FLAGS_async ? "true" : "false", FLAGS_async_submitters,
        FLAGS_async_chain ? "true" : "false", node0_threads_json.c_str(), threads_json.c_str());
  } else {
    const bool process = FLAGS_clients_on == "process";
    std::printf("propose_bench: 3 nodes on loopback, fsync %s, %d group(s), %d clients "
                "(%s), %d-byte values, %d s, %s, election %s",
                FLAGS_sync_writes ? "on" : "OFF", FLAGS_groups, FLAGS_clients,
                WhereClientsRun(clients).c_str(), FLAGS_value_size, FLAGS_seconds,
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
    if (process) {
      std::printf(", the server calls %s", FLAGS_batch ? "BatchProposeAsync" : "ProposeAsync");
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
    std::printf("(CPU us per value by node: node 0 %.2f (with the %s), node 1 %.2f, "
                "node 2 %.2f; MB/s counts payload bytes only)\n",
                cpu_us_by_node[0], process ? "propose server" : "clients", cpu_us_by_node[1],
                cpu_us_by_node[2]);
    if (process) {
      std::printf("(CPU us per value of the client process: %.2f, not in the nodes' total)\n",
                  cpu_us_client);
    }
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

}  // namespace bench
}  // namespace chorus
