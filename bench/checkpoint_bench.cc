// checkpoint_bench: how long a node takes to restart (Node::Open: log
// recovery, checkpoint load, replay into the state machine) when its log
// holds --instances chosen instances, with and without a checkpoint near the
// end of it.
//
//   checkpoint_bench [--instances=1000000 --value_size=100 --tail=1000
//                     --keep=20000 --repeats=3 --clients=64] [--json]
//
// How the log is built: ONE node (a 1-member cluster on loopback: each
// instance is chosen by its own vote, with no peer to wait for) proposes
// --instances values of --value_size bytes from --clients threads, with
// fsync off while building (the bench measures the restart, not the
// building; the records are the same a 3-node cluster writes). That data
// dir is then copied three times:
//   no_checkpoint   checkpoints off: the restart replays the whole log;
//   checkpoint      a checkpoint made at the end of the built log, the log
//                   trimmed behind it keeping --keep instances (what a node
//                   with checkpoints on holds);
//   checkpoint_full_log  the same checkpoint with the whole log kept
//                   (log_keep_instances = instances): the recovery scan of a
//                   long log without the replay.
// Then --tail more values go into each (so the restarts also replay a
// little log after the checkpoint), and each is restarted --repeats times,
// interleaved (a, b, c, a, b, c, ...), with fsync on. Printed: one line per
// case (JSON with --json) with the median and every sample of Node::Open's
// duration, the instances replayed into the state machine, the log's start
// and the size of the log dir. Nothing is asserted: a ctest smoke run
// (checkpoint_bench_smoke) runs it with a small --instances.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "bench/bench_cluster.h"
#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "tools/program_flags.h"

DEFINE_uint64(instances, 1000000, "chosen instances in the built log");
DEFINE_int32(value_size, 100, "bytes per value");
DEFINE_uint64(tail, 1000, "values proposed after the checkpoint (replayed by the restart)");
DEFINE_uint64(keep, 20000, "log_keep_instances of the 'checkpoint' case");
DEFINE_int32(repeats, 3, "restarts per case (interleaved)");
DEFINE_int32(clients, 64, "proposing threads while building the log");
DEFINE_bool(json, false, "one JSON object per line");
DEFINE_string(keep_dir, "", "build in this (new) directory and keep it (default: a temp dir, removed)");

namespace {

namespace fs = std::filesystem;
using chorus::bench::Clock;

// Counts and hashes what it executes; its checkpoint is those two numbers.
class CountingMachine : public chorus::StateMachine {
 public:
  int id() const override { return 1; }
  chorus::Status Execute(const chorus::ExecuteInfo& info, const std::string& value,
                         chorus::ExecuteContext*) override {
    count_.fetch_add(1, std::memory_order_relaxed);
    executes_.fetch_add(1, std::memory_order_relaxed);
    hash_ = (hash_ ^ info.instance ^ value.size()) * 0x100000001b3ull;
    return chorus::Status::OK();
  }
  chorus::Status PrepareCheckpoint(const chorus::CheckpointInfo&,
                                   std::unique_ptr<chorus::CheckpointWriter>* writer) override {
    writer->reset(new Writer(count(), hash_));
    return chorus::Status::OK();
  }
  chorus::Status LoadCheckpoint(const chorus::CheckpointInfo&, const std::string& dir) override {
    FILE* f = std::fopen((dir + "/state").c_str(), "r");
    if (f == nullptr) return chorus::Status::IOError("no state file in " + dir);
    unsigned long long count = 0, hash = 0;
    const bool ok = std::fscanf(f, "%llu %llu", &count, &hash) == 2;
    std::fclose(f);
    if (!ok) return chorus::Status::Corruption("bad state file in " + dir);
    count_.store(count, std::memory_order_relaxed);
    hash_ = hash;
    loads_.fetch_add(1, std::memory_order_relaxed);
    return chorus::Status::OK();
  }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t loads() const { return loads_.load(std::memory_order_relaxed); }
  // Execute calls since Reset (a load does not count).
  uint64_t executes() const { return executes_.load(std::memory_order_relaxed); }
  void Reset() {
    count_.store(0);
    executes_.store(0);
    loads_.store(0);
    hash_ = 0;
  }

 private:
  class Writer : public chorus::CheckpointWriter {
   public:
    Writer(uint64_t count, uint64_t hash) : count_(count), hash_(hash) {}
    chorus::Status Write(const std::string& dir) override {
      FILE* f = std::fopen((dir + "/state").c_str(), "w");
      if (f == nullptr) return chorus::Status::IOError("cannot create " + dir + "/state");
      const bool ok = std::fprintf(f, "%" PRIu64 " %" PRIu64 "\n", count_, hash_) > 0;
      return std::fclose(f) == 0 && ok ? chorus::Status::OK()
                                       : chorus::Status::IOError("cannot write " + dir);
    }

   private:
    const uint64_t count_, hash_;
  };
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> loads_{0};
  std::atomic<uint64_t> executes_{0};
  uint64_t hash_ = 0;  // the group's loop (and Open's replay) only
};

struct Case {
  const char* name;
  std::string dir;
  uint64_t interval;  // checkpoint_interval_instances
  uint64_t keep;      // log_keep_instances
  std::vector<double> open_ms;
  uint64_t replayed = 0, loads = 0, log_start = 0, executed = 0, log_bytes = 0;
};

chorus::Options NodeOptions(const chorus::NodeInfo& self, const std::string& dir, bool sync,
                            uint64_t interval, uint64_t keep, CountingMachine* sm) {
  chorus::Options o;
  o.self = self;
  o.nodes = {self};
  o.data_dir = dir;
  o.create_if_missing = true;
  o.sync_writes = sync;
  o.state_machines = {{0, sm}};
  o.checkpoint_interval_instances = interval;
  o.log_keep_instances = keep;
  o.max_inflight = 256;
  o.log_level = chorus::LogLevel::kWarning;
  return o;
}

// Proposes `n` values from --clients threads.
bool ProposeMany(chorus::Node* node, uint64_t n) {
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> threads;
  const std::string value(static_cast<size_t>(FLAGS_value_size), 'v');
  for (int t = 0; t < FLAGS_clients; ++t) {
    threads.emplace_back([&] {
      while (next.fetch_add(1) < n) {
        uint64_t instance = 0;
        if (!node->Propose(0, value, &instance).ok()) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failures.load() > 0) {
    std::fprintf(stderr, "checkpoint_bench: %" PRIu64 " proposals failed\n", failures.load());
  }
  return failures.load() == 0;
}

bool WaitFor(const std::function<bool()>& done) {
  const auto end = Clock::now() + std::chrono::minutes(5);
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  return total;
}

int Fail(const std::string& what, const chorus::Status& s) {
  std::fprintf(stderr, "checkpoint_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

int Run(const std::string& root) {
  std::vector<uint16_t> ports;
  if (!chorus::bench::PickPorts(&ports)) {
    std::fprintf(stderr, "checkpoint_bench: no free loopback port\n");
    return 1;
  }
  const chorus::NodeInfo self{"127.0.0.1", ports[0]};
  CountingMachine sm;
  // 1. The log.
  const std::string built = root + "/built";
  const auto build_start = Clock::now();
  {
    std::unique_ptr<chorus::Node> node;
    chorus::Status s = chorus::Node::Open(NodeOptions(self, built, false, 0, 0, &sm), &node);
    if (!s.ok()) return Fail("opening the node that builds the log", s);
    if (!ProposeMany(node.get(), FLAGS_instances)) return 1;
  }
  const double build_s = std::chrono::duration<double>(Clock::now() - build_start).count();
  std::vector<Case> cases = {
      {"no_checkpoint", root + "/a", 0, 0, {}},
      {"checkpoint", root + "/b", 1, FLAGS_keep, {}},
      {"checkpoint_full_log", root + "/c", 1, FLAGS_instances + FLAGS_tail, {}},
  };
  // 2. Each case's copy: its checkpoint (interval 1 makes one at the first
  // round after Open: at the end of the built log), then the tail.
  for (Case& c : cases) {
    fs::copy(built, c.dir, fs::copy_options::recursive);
    sm.Reset();
    std::unique_ptr<chorus::Node> node;
    chorus::Status s = chorus::Node::Open(NodeOptions(self, c.dir, true, c.interval, c.keep, &sm),
                                          &node);
    if (!s.ok()) return Fail(std::string("preparing case ") + c.name, s);
    if (c.interval > 0) {
      if (!ProposeMany(node.get(), 1) || !WaitFor([&] {
            chorus::GroupStatus st;
            return node->GetGroupStatus(0, &st).ok() && st.checkpoints_made >= 1;
          })) {
        std::fprintf(stderr, "checkpoint_bench: case %s made no checkpoint\n", c.name);
        return 1;
      }
    }
    node.reset();  // no further checkpoint: reopened with the interval out of reach
    c.interval = c.interval > 0 ? ~uint64_t{0} >> 20 : 0;
    s = chorus::Node::Open(NodeOptions(self, c.dir, true, c.interval, c.keep, &sm), &node);
    if (!s.ok()) return Fail(std::string("reopening case ") + c.name, s);
    if (!ProposeMany(node.get(), FLAGS_tail)) return 1;
  }
  // 3. Restarts, interleaved.
  for (int r = 0; r < FLAGS_repeats; ++r) {
    for (Case& c : cases) {
      sm.Reset();  // a new process: the state machine starts empty
      std::unique_ptr<chorus::Node> node;
      const auto start = Clock::now();
      chorus::Status s =
          chorus::Node::Open(NodeOptions(self, c.dir, true, c.interval, c.keep, &sm), &node);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!s.ok()) return Fail(std::string("restarting case ") + c.name, s);
      c.open_ms.push_back(ms);
      c.replayed = sm.executes();
      c.loads = sm.loads();
      c.executed = node->GetNowInstanceId(0);
      c.log_start = node->GetMinChosenInstanceId(0);
      node.reset();
      c.log_bytes = DirBytes(c.dir + "/g0");
    }
  }
  for (Case& c : cases) {
    std::string samples;
    for (double ms : c.open_ms) samples += (samples.empty() ? "" : ",") + std::to_string(ms);
    const double median = chorus::bench::Median(c.open_ms);
    if (FLAGS_json) {
      std::printf("{\"bench\":\"checkpoint_restart\",\"case\":\"%s\",\"instances\":%" PRIu64
                  ",\"value_size\":%d,\"tail\":%" PRIu64 ",\"log_keep\":%" PRIu64
                  ",\"restart_ms_median\":%.1f,\"restart_ms\":[%s],\"checkpoint_loads\":%" PRIu64
                  ",\"replayed\":%" PRIu64 ",\"executed_after_open\":%" PRIu64 ",\"log_start\":%" PRIu64
                  ",\"log_dir_bytes\":%" PRIu64 ",\"build_s\":%.1f,\"load_avg_1m\":%.2f}\n",
                  c.name, uint64_t{FLAGS_instances}, FLAGS_value_size, uint64_t{FLAGS_tail}, c.keep,
                  median, samples.c_str(), c.loads, c.replayed, c.executed, c.log_start, c.log_bytes, build_s,
                  chorus::bench::LoadAverage1m());
    } else {
      std::printf("%-20s restart %9.1f ms (median of %zu: %s)  loads %" PRIu64
                  "  replayed %" PRIu64 "  next instance %" PRIu64 "  log start %" PRIu64 "  log dir %.1f MB\n",
                  c.name, median, c.open_ms.size(), samples.c_str(), c.loads, c.replayed, c.executed,
                  c.log_start, static_cast<double>(c.log_bytes) / 1e6);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags("checkpoint_bench: restart time with and without a checkpoint", &argc,
                            &argv);
  if (FLAGS_instances < 1 || FLAGS_repeats < 1 || FLAGS_clients < 1 || FLAGS_value_size < 1) {
    std::fprintf(stderr, "checkpoint_bench: --instances, --repeats, --clients, --value_size >= 1\n");
    return 2;
  }
  if (!FLAGS_keep_dir.empty()) {
    std::error_code ec;
    if (!fs::create_directory(FLAGS_keep_dir, ec)) {
      std::fprintf(stderr, "checkpoint_bench: cannot create a new --keep_dir %s\n",
                   FLAGS_keep_dir.c_str());
      return 1;
    }
    return Run(FLAGS_keep_dir);
  }
  std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  tmpl += "/chorus-checkpoint-bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("checkpoint_bench: mkdtemp");
    return 1;
  }
  const int rc = Run(tmpl);
  std::error_code ec;
  fs::remove_all(tmpl, ec);
  return rc;
}
