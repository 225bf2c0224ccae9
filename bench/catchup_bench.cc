// catchup_bench: how fast a new, empty node catches up with a group it is
// added to (issue 9's figure: log catch-up MB/s).
//
//   catchup_bench [--instances=100000 --bytes=1024 --clients=32 --repeats=3]
//                 [--modes=log,checkpoint] [--sync_writes=true] [--json]
//
// Each run: a 3-node cluster in this process (Node API, real TCP on
// loopback, master election on, node ids 1..3) commits --instances values of
// --bytes random bytes each (one value per instance: Propose from --clients
// threads to the master). Then a fourth node is opened with an empty data
// dir and Options::join (through the three), and the master adds it as a
// follower (Node::AddFollower). Timed: from the fourth node's Node::Open to
// the moment its state machine has executed every instance the group had
// chosen (the log built, the change and its activation noops), polled every
// millisecond. Two modes, each its own cluster:
//   log         checkpoints off: the new node learns and executes every
//               instance from the others' logs (log catch-up);
//   checkpoint  checkpoints on (every --checkpoint_interval instances,
//               default instances/10, --log_keep kept below each): the
//               others trimmed their logs, so the new node loads a peer's
//               checkpoint, then learns the tail by log. The state machine's
//               checkpoint holds --instances x --bytes bytes (a fixed
//               padding standing for a state as large as the log), so both
//               modes move about as many bytes.
// Printed per mode: the median over --repeats runs (and every sample) of the
// catch-up time, instances/s (instances executed or covered / time) and MB/s
// (instances x bytes / time), plus the time AddFollower took and the
// checkpoints the new node loaded. No figure is asserted; the ctest smoke
// run (catchup_bench_smoke) uses small counts.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "bench/bench_cluster.h"
#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "node/fs_util.h"
#include "tools/program_flags.h"

DEFINE_uint64(instances, 100000, "values committed before the new node joins (one per instance)");
DEFINE_uint64(bytes, 1024, "bytes per value");
DEFINE_int32(clients, 32, "proposing threads while the log is built");
DEFINE_int32(repeats, 3, "runs per mode (the median is printed)");
DEFINE_string(modes, "log,checkpoint",
              "log (checkpoints off), checkpoint (checkpoints on), or both");
DEFINE_uint64(checkpoint_interval, 0,
              "checkpoint mode: instances per checkpoint (0: instances/10)");
DEFINE_uint64(log_keep, 1000, "checkpoint mode: instances of log kept below a checkpoint");
DEFINE_bool(sync_writes, true, "Options::sync_writes of every node");
DEFINE_int32(timeout_s, 1800, "give up a run after this long");
DEFINE_bool(json, false, "one JSON object per mode");

namespace chorus {
namespace {

using bench::Clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

bool WaitFor(const std::function<bool()>& pred, Clock::time_point deadline) {
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Counts what it executes; its checkpoint is a head ("count") and a fixed
// padding shared by every node (immutable: never copied).
class BenchStateMachine : public StateMachine {
 public:
  explicit BenchStateMachine(std::shared_ptr<const std::string> padding)
      : padding_(std::move(padding)) {}
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo&, const std::string&, ExecuteContext*) override {
    count_.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }
  Status PrepareCheckpoint(const CheckpointInfo&, std::unique_ptr<CheckpointWriter>* w) override {
    class Writer : public CheckpointWriter {
     public:
      Writer(std::shared_ptr<const std::string> p, uint64_t count)
          : padding_(std::move(p)), count_(count) {}
      Status Write(const std::string& dir) override {
        Status s = WriteWholeFile(dir + "/head", std::to_string(count_));
        return s.ok() ? WriteWholeFile(dir + "/padding", *padding_) : s;
      }

     private:
      const std::shared_ptr<const std::string> padding_;
      const uint64_t count_;
    };
    *w = std::make_unique<Writer>(padding_, count_.load());
    return Status::OK();
  }
  Status LoadCheckpoint(const CheckpointInfo&, const std::string& dir) override {
    std::string head, padding;
    Status s = ReadWholeFile(dir + "/head", &head);
    if (s.ok()) s = ReadWholeFile(dir + "/padding", &padding);
    if (!s.ok()) return s;
    if (padding.size() != padding_->size()) return Status::Corruption("padding size");
    count_.store(std::strtoull(head.c_str(), nullptr, 10));
    return Status::OK();
  }

 private:
  const std::shared_ptr<const std::string> padding_;
  std::atomic<uint64_t> count_{0};
};

struct RunResult {
  bool ok = false;
  double build_s = 0, add_s = 0, catchup_s = 0;
  uint64_t instances = 0;  // what the new node had to reach
  uint64_t checkpoints_loaded = 0, log_start = 0;
};

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng();
    std::memcpy(&s[i], &r, std::min<size_t>(8, n - i));
  }
  return s;
}

RunResult Run(bool checkpoints, const std::shared_ptr<const std::string>& padding) {
  RunResult r;
  const auto deadline = Clock::now() + std::chrono::seconds(FLAGS_timeout_s);
  std::vector<uint16_t> ports, more;
  if (!bench::PickPorts(&ports) || !bench::PickPorts(&more)) return r;
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(NodeInfo{"127.0.0.1", ports[i], uint64_t(i + 1)});
  const NodeInfo newcomer{"127.0.0.1", more[0], 4};
  const char* base = getenv("TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/chorus_catchup_XXXXXX";
  if (mkdtemp(&dir[0]) == nullptr) return r;
  std::vector<std::unique_ptr<BenchStateMachine>> machines(4);
  std::vector<std::unique_ptr<Node>> running(4);
  const uint64_t interval =
      FLAGS_checkpoint_interval != 0 ? FLAGS_checkpoint_interval
                                     : std::max<uint64_t>(FLAGS_instances / 10, 100);
  auto open = [&](int i) {
    machines[i] = std::make_unique<BenchStateMachine>(padding);
    Options o;
    if (i < 3) {
      o.self = nodes[i];
      o.nodes = nodes;
    } else {
      o.self = newcomer;
      o.join = nodes;
    }
    o.data_dir = dir + "/n" + std::to_string(i + 1);
    o.create_if_missing = true;
    o.sync_writes = FLAGS_sync_writes;
    o.master_election = true;
    o.membership_timeout_ms = FLAGS_timeout_s * 1000;
    o.checkpoint_interval_instances = checkpoints ? interval : 0;
    o.log_keep_instances = FLAGS_log_keep;
    o.state_machines.push_back({0, machines[i].get()});
    o.log_level = LogLevel::kError;
    Status s = Node::Open(o, &running[i]);
    if (!s.ok()) std::fprintf(stderr, "catchup_bench: node %d: %s\n", i + 1, s.ToString().c_str());
    return s.ok();
  };
  auto finish = [&]() {
    for (auto& n : running) n.reset();
    RemoveTree(dir);
    return r;
  };
  for (int i = 0; i < 3; ++i) {
    if (!open(i)) return finish();
  }
  int master = -1;
  WaitFor([&] {
    for (int i = 0; i < 3; ++i) {
      if (running[i]->IsMaster(0)) master = i;
    }
    return master >= 0;
  }, deadline);
  if (master < 0) return finish();

  // Build: --instances values, one per instance.
  const auto build_start = Clock::now();
  std::atomic<uint64_t> next{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < FLAGS_clients; ++t) {
    clients.emplace_back([&, t] {
      std::string value = RandomBytes(FLAGS_bytes, 1000 + t);
      for (uint64_t k; (k = next.fetch_add(1)) < FLAGS_instances;) {
        std::memcpy(&value[0], &k, std::min<size_t>(8, value.size()));
        while (!running[master]->Propose(0, value, nullptr).ok() && Clock::now() < deadline) {
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  r.build_s = Seconds(build_start, Clock::now());
  const uint64_t built = running[master]->GetNowInstanceId(0);
  if (!WaitFor([&] {
        for (int i = 0; i < 3; ++i) {
          if (running[i]->GetNowInstanceId(0) < built) return false;
          if (checkpoints && running[i]->GetMinChosenInstanceId(0) == 0) return false;
        }
        return true;
      }, deadline)) {
    std::fprintf(stderr, "catchup_bench: the members did not all execute (and trim) the log\n");
    return finish();
  }

  // The new node: Open with join, then AddFollower through the master.
  const auto t0 = Clock::now();
  if (!open(3)) return finish();
  Status s = running[master]->AddFollower(0, newcomer);
  const auto added = Clock::now();
  if (!s.ok()) {
    std::fprintf(stderr, "catchup_bench: AddFollower: %s\n", s.ToString().c_str());
    return finish();
  }
  const uint64_t target = running[master]->GetNowInstanceId(0);
  if (!WaitFor([&] { return running[3]->GetNowInstanceId(0) >= target; }, deadline)) {
    std::fprintf(stderr, "catchup_bench: the new node executed %llu of %llu\n",
                 static_cast<unsigned long long>(running[3]->GetNowInstanceId(0)),
                 static_cast<unsigned long long>(target));
    return finish();
  }
  const auto done = Clock::now();
  GroupStatus gs;
  running[3]->GetGroupStatus(0, &gs);
  GroupStatus ms;
  running[master]->GetGroupStatus(0, &ms);
  r.ok = true;
  r.add_s = Seconds(t0, added);
  r.catchup_s = Seconds(t0, done);
  r.instances = target;
  r.checkpoints_loaded = gs.checkpoints_loaded;
  r.log_start = ms.log_start;
  return finish();
}

std::string Samples(const std::vector<double>& v) {
  std::string out;
  for (double x : v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.3f", out.empty() ? "" : ",", x);
    out += buf;
  }
  return out;
}

int Mode(const std::string& mode, const std::shared_ptr<const std::string>& padding) {
  const bool checkpoints = mode == "checkpoint";
  std::vector<double> times, adds;
  RunResult last;
  for (int k = 0; k < FLAGS_repeats; ++k) {
    last = Run(checkpoints, padding);
    if (!last.ok) {
      std::fprintf(stderr, "catchup_bench: mode %s run %d failed\n", mode.c_str(), k + 1);
      return 1;
    }
    if (checkpoints && last.checkpoints_loaded == 0) {
      std::fprintf(stderr, "catchup_bench: checkpoint mode: the new node loaded no checkpoint\n");
      return 1;
    }
    times.push_back(last.catchup_s);
    adds.push_back(last.add_s);
  }
  const double t = bench::Median(times);
  const double per_s = static_cast<double>(last.instances) / t;
  const double mb_s = static_cast<double>(FLAGS_instances * FLAGS_bytes) / (1 << 20) / t;
  if (FLAGS_json) {
    std::printf("{\"mode\":\"%s\",\"instances\":%llu,\"bytes\":%llu,\"catchup_s\":%.3f,"
                "\"samples_s\":[%s],\"instances_per_s\":%.0f,\"mb_per_s\":%.1f,"
                "\"add_follower_s\":%.3f,\"build_s\":%.1f,\"checkpoints_loaded\":%llu,"
                "\"log_start\":%llu,\"sync_writes\":%s,\"load1m\":%.2f}\n",
                mode.c_str(), static_cast<unsigned long long>(FLAGS_instances),
                static_cast<unsigned long long>(FLAGS_bytes), t, Samples(times).c_str(), per_s,
                mb_s, bench::Median(adds), last.build_s,
                static_cast<unsigned long long>(last.checkpoints_loaded),
                static_cast<unsigned long long>(last.log_start),
                FLAGS_sync_writes ? "true" : "false", bench::LoadAverage1m());
  } else {
    std::printf("%s catch-up: %llu instances x %llu B (%.1f MB) in %.3f s (median of %d: %s s)"
                " = %.0f instances/s, %.1f MB/s; AddFollower %.3f s; checkpoints loaded %llu,"
                " members' log start %llu; build %.1f s; load %.2f\n",
                checkpoints ? "checkpoint" : "log",
                static_cast<unsigned long long>(FLAGS_instances),
                static_cast<unsigned long long>(FLAGS_bytes),
                static_cast<double>(FLAGS_instances * FLAGS_bytes) / (1 << 20), t, FLAGS_repeats,
                Samples(times).c_str(), per_s, mb_s, bench::Median(adds),
                static_cast<unsigned long long>(last.checkpoints_loaded),
                static_cast<unsigned long long>(last.log_start), last.build_s,
                bench::LoadAverage1m());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "catchup_bench [--instances=N --bytes=B --repeats=R --modes=log,checkpoint] [--json]\n"
      "time for a new empty node (Options::join + AddFollower) to catch up N instances",
      &argc, &argv);
  if (FLAGS_instances == 0 || FLAGS_bytes == 0 || FLAGS_repeats < 1 || FLAGS_clients < 1) {
    std::fprintf(stderr,
                 "catchup_bench: --instances, --bytes, --repeats, --clients must be >= 1\n");
    return 2;
  }
  const auto padding = std::make_shared<const std::string>(
      chorus::RandomBytes(static_cast<size_t>(FLAGS_instances * FLAGS_bytes), 7));
  for (const char* mode : {"log", "checkpoint"}) {
    const bool wanted = ("," + FLAGS_modes + ",").find(std::string(",") + mode + ",") !=
                        std::string::npos;
    if (!wanted) continue;
    const int rc = chorus::Mode(mode, padding);
    if (rc != 0) return rc;
  }
  return 0;
}
