// checkpoint_transfer_bench: two figures of catch-up by checkpoint (issue 10).
//
//   checkpoint_transfer_bench [--mb=256 --chunk_kb=1024 --rate_mb=0]
//                             [--missed=200000 --state_mb=16] [--json]
//
// 1. Transfer MB/s between two processes on loopback. The bench forks: the
//    parent makes a checkpoint of --mb MB (random bytes, 4 files) in its
//    CheckpointStore and serves it; the child fetches it with its own
//    CheckpointTransfer over the TCP transport (the node's own code: FETCH /
//    CHUNK, crc32c per chunk, staging writes, then the store's verified,
//    fsynced Commit) and times Request -> committed. --rate_mb sets
//    checkpoint_send_bytes_per_sec (0: unlimited; chorus's default is 200).
// 2. Time for a node that missed --missed instances to serve again: a real
//    3-node cluster in this process (Node API, loopback TCP, checkpoints
//    every missed/10 instances, log_keep 1000), node 3 stopped while
//    --missed instances are chosen (BatchPropose from 16 threads, 64 values
//    per instance at most; sync_writes off to build the log quickly), nodes
//    1 and 2 restarted (so no frame queued for node 3 survives), then node 3
//    reopened. Timed: Node::Open of node 3 -> it executed everything node 1
//    had -> a Propose through node 3 returned. Its state machine holds
//    --state_mb MB, so the checkpoint sent is about that size.
// Output: a table, or with --json one line per figure. No figure is asserted.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
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
#include "node/checkpoint_store.h"
#include "node/checkpoint_transfer.h"
#include "node/fs_util.h"
#include "utils/coding.h"

DEFINE_int32(mb, 256, "checkpoint size for the transfer figure, MB");
DEFINE_int32(chunk_kb, 1024, "Options::checkpoint_chunk_bytes, KiB");
DEFINE_int32(rate_mb, 0, "checkpoint_send_bytes_per_sec in MB/s (0: unlimited)");
DEFINE_int32(missed, 200000, "instances node 3 misses (0: skip the second figure)");
DEFINE_int32(state_mb, 16, "bytes of state (so of checkpoint) of each state machine, MB");
DEFINE_bool(json, false, "one JSON line per figure");

namespace chorus {
namespace {

using bench::Clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string TempPath(const char* tag) {
  const char* base = getenv("TMPDIR");
  std::string t = std::string(base != nullptr ? base : "/tmp") + "/chorus_" + tag + "_XXXXXX";
  return mkdtemp(&t[0]) != nullptr ? t : std::string();
}

CheckpointTransferOptions TransferOptions(uint64_t self, uint64_t peer) {
  CheckpointTransferOptions o;
  o.cluster_id = 9;
  o.self = self;
  o.peers = {peer};
  o.chunk_bytes = static_cast<uint32_t>(FLAGS_chunk_kb) << 10;
  o.max_chunk_bytes = 32u << 20;
  o.send_bytes_per_sec = static_cast<uint64_t>(FLAGS_rate_mb) << 20;
  return o;
}

// One side of figure 1: a TCP transport between the two processes.
Status OpenSide(const std::vector<NodeInfo>& nodes, int me, std::unique_ptr<TcpTransport>* t) {
  TcpTransportOptions to;
  to.self = nodes[me];
  to.nodes = nodes;
  to.cluster_id = 9;
  return NewTcpTransport(to, t);
}

// Figure 1. Returns 0 on success.
int TransferFigure() {
  std::vector<uint16_t> ports;
  if (!bench::PickPorts(&ports)) return 1;
  const std::vector<NodeInfo> nodes = {{"127.0.0.1", ports[0]}, {"127.0.0.1", ports[1]}};
  const std::string dir = TempPath("ckbench");
  Logger logger(LogHook(), LogLevel::kError);
  const uint64_t bytes = static_cast<uint64_t>(FLAGS_mb) << 20;
  int ready[2];
  if (pipe(ready) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {  // the receiver
    close(ready[1]);
    char c;
    if (read(ready[0], &c, 1) != 1) _exit(1);  // the sender is serving
    std::unique_ptr<CheckpointStore> store;
    std::unique_ptr<TcpTransport> transport;
    if (!CheckpointStore::Open(dir + "/recv", 9, 0, &logger, &store).ok()) _exit(1);
    if (!OpenSide(nodes, 1, &transport).ok()) _exit(1);
    CheckpointTransfer transfer(TransferOptions(nodes[1].id(), nodes[0].id()), transport.get(),
                                &logger);
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    transfer.AddGroup(0, store.get(), [&](const CheckpointManifest&) {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_all();
    });
    transport->Start([&](uint64_t from, std::string m) {
      transfer.OnMessage(from, DecodeFixed32(m.data()) & ~kCheckpointChannel, m.substr(4));
    });
    transfer.Start();
    const auto start = Clock::now();
    transfer.Request(0, nodes[0].id(), 0);
    // When the last byte was written (before the verifying, fsyncing
    // Commit): a watcher polls the progress, the bench's only poll.
    std::atomic<int64_t> streamed_ns{0};
    std::thread watcher([&] {
      for (;;) {
        const CheckpointTransferProgress p = transfer.Progress(0);
        if ((p.bytes_total != 0 && p.bytes_done == p.bytes_total) || p.received != 0) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      streamed_ns.store((Clock::now() - start).count());
    });
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::minutes(10), [&] { return done; })) _exit(1);
    const double s = Seconds(start, Clock::now());
    watcher.join();
    const double streamed =
        std::chrono::duration<double>(Clock::duration(streamed_ns.load())).count();
    const double mbs = static_cast<double>(bytes) / (1 << 20) / s;
    const double stream_mbs = static_cast<double>(bytes) / (1 << 20) / streamed;
    const CheckpointTransferStats st = transfer.stats();
    if (FLAGS_json) {
      std::printf("{\"figure\":\"transfer\",\"mb\":%d,\"chunk_kb\":%d,\"rate_mb\":%d,"
                  "\"seconds\":%.3f,\"mb_per_s\":%.1f,\"streamed_s\":%.3f,"
                  "\"stream_mb_per_s\":%.1f,\"chunks\":%llu,\"load1m\":%.2f}\n",
                  FLAGS_mb, FLAGS_chunk_kb, FLAGS_rate_mb, s, mbs, streamed, stream_mbs,
                  static_cast<unsigned long long>(st.chunks_received), bench::LoadAverage1m());
    } else {
      std::printf("transfer: %d MB in %.3f s = %.1f MB/s including the verifying fsynced commit;"
                  " streamed in %.3f s = %.1f MB/s (chunk %d KiB, rate limit %s, %llu chunks,"
                  " two processes on loopback)\n",
                  FLAGS_mb, s, mbs, streamed, stream_mbs, FLAGS_chunk_kb,
                  FLAGS_rate_mb == 0 ? "off" : (std::to_string(FLAGS_rate_mb) + " MB/s").c_str(),
                  static_cast<unsigned long long>(st.chunks_received));
    }
    std::fflush(stdout);
    lock.unlock();
    transfer.Stop();
    transport->Stop();
    _exit(0);
  }
  // The sender.
  close(ready[0]);
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<TcpTransport> transport;
  if (!CheckpointStore::Open(dir + "/send", 9, 0, &logger, &store).ok()) return 1;
  std::string staging;
  if (!store->BeginStaging(&staging).ok() || !CreateDirs(staging + "/sm1").ok()) return 1;
  std::mt19937_64 rng(1);
  for (int f = 0; f < 4; ++f) {
    std::string data(bytes / 4, '\0');
    for (size_t i = 0; i + 8 <= data.size(); i += 8) {
      const uint64_t r = rng();
      std::memcpy(&data[i], &r, 8);
    }
    if (!WriteWholeFile(staging + "/sm1/part" + std::to_string(f), data).ok()) return 1;
  }
  CheckpointManifest m;
  m.instance = 1000;
  if (!store->Commit(staging, &m).ok()) return 1;
  if (!OpenSide(nodes, 0, &transport).ok()) return 1;
  CheckpointTransfer transfer(TransferOptions(nodes[0].id(), nodes[1].id()), transport.get(),
                              &logger);
  transfer.AddGroup(0, store.get(), nullptr);
  transport->Start([&](uint64_t from, std::string msg) {
    transfer.OnMessage(from, DecodeFixed32(msg.data()) & ~kCheckpointChannel, msg.substr(4));
  });
  transfer.Start();
  if (write(ready[1], "r", 1) != 1) return 1;
  int status = 0;
  waitpid(child, &status, 0);
  transfer.Stop();
  transport->Stop();
  RemoveTree(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Figure 2's state machine: a count, a chained hash and --state_mb MB of
// fixed padding, so its checkpoint is about that big.
class BenchStateMachine : public StateMachine {
 public:
  explicit BenchStateMachine(std::shared_ptr<const std::string> padding)
      : padding_(std::move(padding)) {}
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo&, const std::string& value, ExecuteContext*) override {
    count_.fetch_add(1, std::memory_order_relaxed);
    hash_ = (hash_ ^ value.size()) * 1099511628211ull;
    return Status::OK();
  }
  Status PrepareCheckpoint(const CheckpointInfo&, std::unique_ptr<CheckpointWriter>* w) override {
    class Writer : public CheckpointWriter {
     public:
      Writer(std::shared_ptr<const std::string> p, std::string head)
          : padding_(std::move(p)), head_(std::move(head)) {}
      Status Write(const std::string& dir) override {
        Status s = WriteWholeFile(dir + "/head", head_);
        return s.ok() ? WriteWholeFile(dir + "/padding", *padding_) : s;
      }

     private:
      const std::shared_ptr<const std::string> padding_;  // immutable: shared, not copied
      const std::string head_;
    };
    *w = std::make_unique<Writer>(padding_, std::to_string(count_.load()) + " " +
                                                std::to_string(hash_));
    return Status::OK();
  }
  Status LoadCheckpoint(const CheckpointInfo&, const std::string& dir) override {
    std::string head, padding;
    Status s = ReadWholeFile(dir + "/head", &head);
    if (s.ok()) s = ReadWholeFile(dir + "/padding", &padding);
    if (!s.ok()) return s;
    if (padding.size() != padding_->size()) return Status::Corruption("padding size");
    unsigned long long count = 0, hash = 0;
    if (std::sscanf(head.c_str(), "%llu %llu", &count, &hash) != 2) {
      return Status::Corruption("head");
    }
    count_.store(count, std::memory_order_relaxed);
    hash_ = hash;
    return Status::OK();
  }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  const std::shared_ptr<const std::string> padding_;
  std::atomic<uint64_t> count_{0};  // read by the bench thread
  uint64_t hash_ = 0;               // group loop only
};

bool WaitFor(const std::function<bool()>& pred, int seconds) {
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Figure 2. Returns 0 on success.
int CatchupFigure() {
  std::vector<uint16_t> ports;
  if (!bench::PickPorts(&ports)) return 1;
  std::vector<NodeInfo> nodes;
  for (uint16_t p : ports) nodes.push_back(NodeInfo{"127.0.0.1", p});
  const std::string dir = TempPath("ckcatchup");
  auto padding = std::make_shared<std::string>(static_cast<size_t>(FLAGS_state_mb) << 20, 'p');
  std::vector<std::unique_ptr<BenchStateMachine>> machines(3);
  std::vector<std::unique_ptr<Node>> running(3);
  const uint64_t interval = std::max<uint64_t>(static_cast<uint64_t>(FLAGS_missed) / 10, 100);
  auto start = [&](int i, bool create) {
    machines[i] = std::make_unique<BenchStateMachine>(padding);
    Options o;
    o.self = nodes[i];
    o.nodes = nodes;
    o.data_dir = dir + "/n" + std::to_string(i);
    o.create_if_missing = create;
    o.sync_writes = false;
    o.learn_interval_ms = 100;
    o.checkpoint_interval_instances = interval;
    o.log_keep_instances = 1000;
    o.checkpoint_chunk_bytes = static_cast<uint32_t>(FLAGS_chunk_kb) << 10;
    o.checkpoint_send_bytes_per_sec = static_cast<uint64_t>(FLAGS_rate_mb) << 20;
    o.state_machines.push_back({0, machines[i].get()});
    o.log_level = LogLevel::kError;
    Status s = Node::Open(o, &running[i]);
    if (!s.ok()) std::fprintf(stderr, "node %d: %s\n", i, s.ToString().c_str());
    return s.ok();
  };
  for (int i = 0; i < 3; ++i) {
    if (!start(i, true)) return 1;
  }
  uint64_t instance = 0;
  if (!running[0]->Propose(0, "first", &instance).ok()) return 1;
  if (!WaitFor([&] { return machines[2]->count() >= 1; }, 60)) return 1;
  const uint64_t behind = running[2]->GetNowInstanceId(0);
  running[2].reset();
  // --missed instances without node 3.
  const auto build_start = Clock::now();
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 16; ++t) {
    clients.emplace_back([&, t] {
      uint64_t inst = 0;
      uint32_t index = 0;
      for (int k = 0; !stop.load(); ++k) {
        running[t % 2]->BatchPropose(0, "v" + std::to_string(t) + "-" + std::to_string(k), &inst,
                                     &index);
      }
    });
  }
  WaitFor([&] { return running[0]->GetNowInstanceId(0) >= behind + FLAGS_missed; }, 3600);
  stop.store(true);
  for (auto& c : clients) c.join();
  const double build_s = Seconds(build_start, Clock::now());
  for (int i : {0, 1}) {
    if (!WaitFor([&] { return running[i]->GetMinChosenInstanceId(0) > behind; }, 600)) {
      std::fprintf(stderr, "node %d did not trim past %llu\n", i,
                   static_cast<unsigned long long>(behind));
      return 1;
    }
  }
  // Drop what the transports still queue for node 3: it must ask.
  for (int i : {0, 1}) {
    running[i].reset();
    if (!start(i, false)) return 1;
  }
  const uint64_t target = running[0]->GetNowInstanceId(0);
  const auto t0 = Clock::now();
  if (!start(2, false)) return 1;
  const auto opened = Clock::now();
  if (!WaitFor([&] { return running[2]->GetNowInstanceId(0) >= target; }, 600)) return 1;
  const auto caught_up = Clock::now();
  if (!running[2]->Propose(0, "serving-again", &instance).ok()) return 1;
  const auto serving = Clock::now();
  GroupStatus gs;
  running[2]->GetGroupStatus(0, &gs);
  if (FLAGS_json) {
    std::printf("{\"figure\":\"catchup\",\"missed\":%llu,\"state_mb\":%d,\"build_s\":%.1f,"
                "\"open_s\":%.3f,\"caught_up_s\":%.3f,\"serving_s\":%.3f,"
                "\"checkpoints_loaded\":%llu,\"load1m\":%.2f}\n",
                static_cast<unsigned long long>(target - behind), FLAGS_state_mb, build_s,
                Seconds(t0, opened), Seconds(t0, caught_up), Seconds(t0, serving),
                static_cast<unsigned long long>(gs.checkpoints_loaded), bench::LoadAverage1m());
  } else {
    std::printf("catch-up: node 3 missed %llu instances (built in %.1f s); from its Open: "
                "opened %.3f s, caught up %.3f s, serving (a Propose through it returned) "
                "%.3f s; checkpoints loaded %llu (state %d MB)\n",
                static_cast<unsigned long long>(target - behind), build_s, Seconds(t0, opened),
                Seconds(t0, caught_up), Seconds(t0, serving),
                static_cast<unsigned long long>(gs.checkpoints_loaded), FLAGS_state_mb);
  }
  for (auto& n : running) n.reset();
  RemoveTree(dir);
  return gs.checkpoints_loaded >= 1 ? 0 : 1;
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  gflags::SetUsageMessage("checkpoint transfer MB/s and time to serve again after a checkpoint");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  signal(SIGPIPE, SIG_IGN);
  // Figure 1 forks: before any thread of this process exists.
  int rc = chorus::TransferFigure();
  if (rc != 0) {
    std::fprintf(stderr, "checkpoint_transfer_bench: the transfer figure failed\n");
    return rc;
  }
  if (FLAGS_missed > 0) rc = chorus::CatchupFigure();
  if (rc != 0) std::fprintf(stderr, "checkpoint_transfer_bench: the catch-up figure failed\n");
  return rc;
}
