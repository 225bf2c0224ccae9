// Copyright (c) chorus authors.
//
// nemesis: runs a chorus-kv cluster (sample/kv's kv_server, 3 or 5
// replicas, each in its own network namespace) under a seeded schedule of
// faults while clients read, write and compare-and-set a few keys through
// every replica, then heals everything and checks:
//   1. the members converge: a fence write succeeds, every member answers
//      the same DEBUG DIGEST (keys and values);
//   2. no acknowledged write is lost: every write-once key answered +OK
//      reads back its value on every member;
//   3. the recorded history is linearizable (linearizability.h).
//
//   nemesis --kv_server=build/sample/kv/kv_server --nodes=3 --seconds=30 --seed=7
//
// Needs root (ip netns, nft). Exit status: 0 every check held (with
// --plant: the planted bug was caught and every other check held); 1 a
// check failed (with --plant: the plant went unnoticed); 2 bad flags or a
// setup failure (not root, no nft, a node that does not start); 130
// interrupted. Every failing run prints its seed and the command that
// replays its schedule. See README.md, section "Nemesis".
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include <gflags/gflags.h>

#include "checks.h"
#include "clock.h"
#include "cluster.h"
#include "faults.h"
#include "history.h"
#include "linearizability.h"
#include "net.h"
#include "schedule.h"
#include "tools/program_flags.h"
#include "workload.h"

DEFINE_string(kv_server, "", "the kv_server binary (REQUIRED)");
DEFINE_int32(nodes, 3, "replicas (3 or 5)");
DEFINE_double(seconds, 20, "how long faults and load go on (then heal and check)");
DEFINE_uint64(seed, 0, "the schedule's and the clients' seed (0: pick one and print it)");
DEFINE_string(faults, "kill,pause,partition,isolate_master,bridge,loss,transfer,member_change",
              "fault kinds the schedule draws from (comma-separated)");
DEFINE_string(plant, "",
              "a planted bug the checks must catch: history (one acknowledged read corrupted "
              "in the recorded history) or stale_reads (kv_server --stale_reads, a follower "
              "partitioned away while clients read from it; its schedule is isolate_follower only, "
              "--faults is ignored)");
DEFINE_int32(clients, 6, "client threads");
DEFINE_int32(keys, 3, "shared register keys at a time");
DEFINE_int32(key_seconds, 10,
             "move to new register keys every this many seconds (0: never; the checker's "
             "work grows with the operations per key)");
DEFINE_bool(cas, true, "CHORUS.CAS among the operations (needs a kv_server that has it)");
DEFINE_double(check_seconds, 120, "the linearizability checker's time limit");
DEFINE_string(work_dir, "/tmp", "where the run's directory (data, logs, history) goes");
DEFINE_bool(keep, false, "keep the run's directory after a passing run");

namespace {

using namespace chorus::nemesis;  // NOLINT: a program of this namespace
using chorus::Status;

std::atomic<bool> g_interrupted{false};

void OnSignal(int) { g_interrupted = true; }

int Fail(const std::string& why) {
  std::fprintf(stderr, "nemesis: %s\n", why.c_str());
  return 2;
}

std::string ReplayCommand(uint64_t seed) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", FLAGS_seconds);
  std::string c = "nemesis --kv_server=" + FLAGS_kv_server + " --nodes=" +
                  std::to_string(FLAGS_nodes) + " --seconds=" + seconds +
                  " --seed=" + std::to_string(seed) + " --faults=" + FLAGS_faults +
                  " --clients=" + std::to_string(FLAGS_clients) +
                  " --keys=" + std::to_string(FLAGS_keys) +
                  " --key_seconds=" + std::to_string(FLAGS_key_seconds) +
                  (FLAGS_cas ? "" : " --nocas");
  if (!FLAGS_plant.empty()) c += " --plant=" + FLAGS_plant;
  return c;
}

// Replaces the value of one acknowledged read of a register key by one no
// write ever wrote: a violation the checker must report.
bool PlantCorruptRead(std::vector<Operation>* history, uint64_t seed, std::string* what) {
  std::vector<size_t> reads;
  for (size_t i = 0; i < history->size(); ++i) {
    const Operation& op = (*history)[i];
    if (op.kind == OpKind::kRead && op.outcome == Outcome::kOk) reads.push_back(i);
  }
  if (reads.empty()) return false;
  Operation& op = (*history)[reads[seed % reads.size()]];
  *what = "op " + std::to_string(op.id) + " (read " + op.key + " = '" + op.output +
          "') now reads 'planted.never-written'";
  op.output = "planted.never-written";
  return true;
}

struct Counts {
  size_t ok = 0, failed = 0, unknown = 0, reads = 0, writes = 0, cas = 0, cas_swapped = 0;
  size_t write_once = 0;
};

Counts Count(const std::vector<Operation>& history) {
  Counts c;
  for (const Operation& op : history) {
    c.ok += op.outcome == Outcome::kOk;
    c.failed += op.outcome == Outcome::kFailed;
    c.unknown += op.outcome == Outcome::kUnknown;
    c.reads += op.kind == OpKind::kRead;
    c.writes += op.kind == OpKind::kWrite;
    c.cas += op.kind == OpKind::kCas;
    c.cas_swapped += op.kind == OpKind::kCas && op.outcome == Outcome::kOk && op.cas_swapped;
    c.write_once += Workload::IsWriteOnceKey(op.key);
  }
  return c;
}

int Run() {
  if (FLAGS_kv_server.empty()) return Fail("--kv_server is required");
  if (::access(FLAGS_kv_server.c_str(), X_OK) != 0) {
    return Fail("--kv_server: no executable at " + FLAGS_kv_server);
  }
  if (FLAGS_nodes != 3 && FLAGS_nodes != 5) return Fail("--nodes must be 3 or 5");
  if (FLAGS_seconds < 3) return Fail("--seconds must be >= 3");
  if (FLAGS_clients < 1 || FLAGS_keys < 1) return Fail("--clients and --keys must be >= 1");
  if (FLAGS_key_seconds < 0) return Fail("--key_seconds must be >= 0");
  const bool plant_history = FLAGS_plant == "history";
  const bool plant_stale = FLAGS_plant == "stale_reads";
  if (!FLAGS_plant.empty() && !plant_history && !plant_stale) {
    return Fail("--plant must be history or stale_reads");
  }
  std::vector<FaultKind> kinds;
  Status s = ParseFaultKinds(plant_stale ? "isolate_follower" : FLAGS_faults, &kinds);
  if (!s.ok()) return Fail("--faults: " + s.ToString());
  uint64_t seed = FLAGS_seed;
  if (seed == 0) seed = std::random_device()() % 1000000 + 1;
  std::printf("nemesis: seed %llu, %d nodes, %.0f s, plant '%s'\n",
              static_cast<unsigned long long>(seed), FLAGS_nodes, FLAGS_seconds,
              FLAGS_plant.c_str());
  std::printf("nemesis: replay: %s\n", ReplayCommand(seed).c_str());

  const int cleaned = Network::RemoveLeftovers();
  if (cleaned > 0) std::printf("nemesis: removed the namespaces of %d dead run(s)\n", cleaned);
  const int member_changes =
      std::count(kinds.begin(), kinds.end(), FaultKind::kMemberChange) > 0 ? 1 : 0;
  std::unique_ptr<Network> network;
  s = Network::Create(FLAGS_nodes + member_changes, &network);
  if (!s.ok()) return Fail("network setup: " + s.ToString());
  const std::string run_dir = FLAGS_work_dir + "/nemesis-" + std::to_string(::getpid());
  std::string ignored;
  RunShell("rm -rf " + run_dir + " && mkdir -p " + run_dir, &ignored);

  ClusterOptions co;
  co.kv_server = FLAGS_kv_server;
  co.run_dir = run_dir;
  co.voters = FLAGS_nodes;
  co.stale_reads = plant_stale;
  Cluster cluster(network.get(), co);
  s = cluster.StartInitial(30000);
  if (!s.ok()) return Fail("cluster start: " + s.ToString() + " (logs in " + run_dir + ")");
  if (FLAGS_cas) {
    RespReply r;
    s = cluster.Command(0, {"CHORUS.CAS", "nemesis/probe", "", "x"}, &r);
    if (s.ok() && r.type == chorus::nemesis::RespReply::Type::kError &&
        r.text.find("unknown command") == 0) {
      return Fail("this kv_server has no CHORUS.CAS (" + r.text + "); run with --nocas");
    }
  }

  const std::vector<FaultStep> steps =
      MakeSchedule(seed, FLAGS_seconds, kinds, member_changes);
  std::printf("nemesis: schedule of %zu steps:\n", steps.size());
  for (const FaultStep& step : steps) std::printf("  %s\n", DescribeStep(step).c_str());
  std::fflush(stdout);

  WorkloadOptions wo;
  wo.threads = FLAGS_clients;
  wo.keys = FLAGS_keys;
  wo.key_seconds = FLAGS_key_seconds;
  wo.cas = FLAGS_cas;
  wo.seed = seed;
  Workload workload(&cluster, wo);
  FaultRunner faults(network.get(), &cluster, steps);
  const int64_t run_start_ns = NowNs();
  workload.Start();
  faults.Start();
  const int64_t end = NowNs() + static_cast<int64_t>(FLAGS_seconds * 1e9);
  while (NowNs() < end && !g_interrupted && faults.error().ok()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const Status fault_status = faults.Stop();
  const int64_t faults_end_ns = NowNs();
  // A healed second of load: operations must go through again.
  if (fault_status.ok()) std::this_thread::sleep_for(std::chrono::seconds(1));
  workload.Stop();
  for (const std::string& line : faults.log()) std::printf("  fault %s\n", line.c_str());
  std::fflush(stdout);
  if (g_interrupted) return 130;
  if (!fault_status.ok()) {
    std::printf("nemesis: FAIL: a fault could not be injected or healed: %s\n"
                "nemesis: seed %llu; replay: %s\n", fault_status.ToString().c_str(),
                static_cast<unsigned long long>(seed), ReplayCommand(seed).c_str());
    return 2;
  }

  std::vector<std::string> failures;
  std::string digest, detail;
  s = Converge(&cluster, 60000, &g_interrupted, &digest, &detail);
  if (g_interrupted) return 130;
  if (!s.ok()) failures.push_back("convergence: " + s.ToString());
  std::vector<Operation> history = workload.History();
  LostAcks lost;
  if (s.ok()) {
    s = CheckLostAcks(&cluster, history, &lost);
    if (!s.ok()) failures.push_back("lost-ack check: " + s.ToString());
    if (lost.lost > 0) failures.push_back(std::to_string(lost.lost) + " acknowledged writes lost");
  }
  std::string planted;
  if (plant_history && !PlantCorruptRead(&history, seed, &planted)) {
    return Fail("--plant=history: the run has no acknowledged read to corrupt");
  }
  const std::string history_file = run_dir + "/history.txt";
  std::ofstream(history_file) << EncodeHistory(history);
  CheckOptions check;
  check.max_seconds = FLAGS_check_seconds;
  std::printf("nemesis: converged; checking %zu operations\n", history.size());
  std::fflush(stdout);
  const CheckResult verdict = CheckLinearizable(history, check);

  const double faults_end_s = static_cast<double>(faults_end_ns - run_start_ns) / 1e9;
  const double checked_s = static_cast<double>(NowNs() - run_start_ns) / 1e9;
  const Counts c = Count(history);
  std::printf("nemesis: operations: %zu recorded (%zu ok, %zu failed, %zu unknown; %zu reads, "
              "%zu writes of which %zu write-once, %zu cas of which %zu swapped), %zu checked on "
              "%zu keys\n",
              history.size(), c.ok, c.failed, c.unknown, c.reads, c.writes, c.write_once, c.cas,
              c.cas_swapped,
              verdict.operations, verdict.keys);
  std::string by_kind, declined;
  int total = 0;
  for (const auto& k : faults.injected()) {
    by_kind += (by_kind.empty() ? "" : ", ") + k.first + " " + std::to_string(k.second);
    total += k.second;
  }
  for (const auto& k : faults.declined()) {
    declined += (declined.empty() ? "; declined: " : ", ") + k.first + " " +
                std::to_string(k.second);
  }
  std::printf("nemesis: faults injected: %d (%s%s)\n", total, by_kind.c_str(), declined.c_str());
  if (digest.empty()) {
    std::printf("nemesis: state: no convergence: %s\n", detail.c_str());
  } else {
    std::printf("nemesis: state: every member (%zu) holds the same data, DEBUG DIGEST %s\n",
                cluster.members().size(), digest.c_str());
  }
  std::printf("nemesis: lost acknowledged writes: %zu of %zu write-once writes acknowledged "
              "(%zu reads on every member)\n", lost.lost, lost.acknowledged, lost.reads);
  for (const std::string& e : lost.examples) std::printf("  lost: %s\n", e.c_str());
  const char* verdict_name = verdict.verdict == CheckResult::Verdict::kLinearizable ? "linearizable"
                             : verdict.verdict == CheckResult::Verdict::kViolation
                                 ? "VIOLATION"
                                 : "UNKNOWN (the checker gave up)";
  std::printf("nemesis: checker: %s, %.3f s\n", verdict_name, verdict.seconds);
  std::printf("nemesis: time: %.1f s of load and faults (healed), %.1f s to converge and check\n",
              faults_end_s, checked_s - faults_end_s);
  if (verdict.verdict != CheckResult::Verdict::kLinearizable) {
    std::printf("%s\n", verdict.Describe().c_str());
  }

  if (!FLAGS_plant.empty()) {
    if (!planted.empty()) std::printf("nemesis: planted: %s\n", planted.c_str());
    if (verdict.verdict != CheckResult::Verdict::kViolation) {
      failures.push_back("the planted bug (" + FLAGS_plant + ") was NOT caught by the checker");
    }
  } else if (verdict.verdict != CheckResult::Verdict::kLinearizable) {
    failures.push_back(std::string("linearizability: ") + verdict_name);
  }
  if (failures.empty()) {
    std::printf("nemesis: %s\n", FLAGS_plant.empty()
                                     ? "PASS: linearizable, 0 lost acknowledged writes, "
                                       "converged"
                                     : "PASS: the planted bug was caught; 0 lost acknowledged "
                                       "writes, converged");
    if (!FLAGS_keep) RunShell("rm -rf " + run_dir, &ignored);
    return 0;
  }
  for (const std::string& f : failures) std::printf("nemesis: FAIL: %s\n", f.c_str());
  std::printf("nemesis: seed %llu; replay: %s\nnemesis: history %s (lincheck %s); node logs "
              "%s/err<slot>\n", static_cast<unsigned long long>(seed),
              ReplayCommand(seed).c_str(), history_file.c_str(), history_file.c_str(),
              run_dir.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "nemesis --kv_server=PATH [--nodes=3|5] [--seconds=S] [--seed=N] [--plant=history|"
      "stale_reads]\nruns kv_server replicas in network namespaces under seeded faults and "
      "checks the clients' history (needs root)",
      &argc, &argv);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  const int rc = Run();
  std::fflush(stdout);
  return rc;
}
