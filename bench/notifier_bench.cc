// notifier_bench: what one Notifier round trip costs, per backend.
//
// A consumer thread arms a ticket and hands it to a producer thread through a
// mailbox word; the producer sends the round number back; the consumer waits
// for it and checks it. Each round trip is timed on the consumer with the
// cycle counter (rdtsc; steady_clock ns where there is none).
//
//   --mode=nonblocking  the producer sends before the consumer calls Wait
//                       (the consumer spins until the producer says "sent"),
//                       as in phxpaxos issue #256.
//   --mode=blocking     the producer sends only once the consumer sleeps:
//                       it waits until the consumer has announced sleeping,
//                       then --sleep_us more so it is really asleep in the
//                       kernel. That deliberate delay is not the backend's
//                       cost, so here the timed span runs from just before
//                       Send on the producer to Wait's return on the
//                       consumer (the TSC is synchronised across cores where
//                       constant_tsc/nonstop_tsc are set): the wake-up cost.
//
//   --mode=batch        --waiters threads sleep, each waiting for one answer,
//                       and one thread answers them all: each on its own
//                       eventfd Notifier (one Send per waiter), or all on one
//                       NotifierGate (one Open). Shows the answering thread's
//                       CPU and wall time per batch (notifier_batch.h): what
//                       BatchPropose's loop pays per batch either way.
//
// Reps are interleaved across backends (and the order rotates each rep, so
// no backend always runs first). Per rep the value is the median round trip
// (robust to the odd preemption on a busy machine); the table shows the
// median, min and max of that value over the reps, and median/median(pipe).
//
//   notifier_bench --rounds=5000 --reps=5 --mode=both --cpus=0,1 [--json]

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "bench/notifier_batch.h"
#include "bench/notifier_bench_util.h"
#include "tools/program_flags.h"
#include "utils/cycle_clock.h"
#include "utils/notifier.h"

DEFINE_int32(sleep_us, 20, "blocking mode: how long the consumer sleeps before each Send");
DEFINE_int32(rounds, 5000, "timed round trips per rep and backend");
DEFINE_int32(warmup, 500, "untimed round trips before each timed run");
DEFINE_int32(reps, 5, "repetitions, interleaved across backends");
DEFINE_string(mode, "both", "nonblocking | blocking | both | batch");
DEFINE_int32(waiters, 64, "batch mode: sleeping waiters answered together");
DEFINE_string(backends, "pipe,eventfd,futex", "comma-separated list of pipe, eventfd, futex");
DEFINE_string(cpus, "", "two CPU ids 'producer,consumer' to pin the threads to; empty = no pinning");
DEFINE_bool(baseline, true,
            "also run pipe-always and eventfd-always: the phxpaxos-style notifier that makes "
            "a system call on every Send and Wait (issue #256), for reference");
DEFINE_bool(json, false, "print one JSON object per row instead of a table");

namespace chorus {
namespace {

using bench::Die;
using bench::MedianOf;
using bench::SpinUntil;

enum class Mode { kNonblocking, kBlocking };

const char* ModeName(Mode m) { return m == Mode::kNonblocking ? "nonblocking" : "blocking"; }

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void PinTo(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) Die("cannot pin to cpu " + std::to_string(cpu));
}

struct RunResult {
  uint64_t median;  // per-round-trip median of this run
  double mean;
  int fds;
};

// The notifier of phxpaxos issue #256, for reference: it goes through the
// kernel on every Send (write) and every Wait (read), whether or not the
// waiter sleeps. The result rides in an atomic published before the write.
class AlwaysSignalNotifier {
 public:
  explicit AlwaysSignalNotifier(bool use_eventfd) : eventfd_(use_eventfd) {
    if (eventfd_) {
      fds_[0] = fds_[1] = eventfd(0, EFD_CLOEXEC);
      if (fds_[0] < 0) Die("eventfd failed");
    } else if (pipe2(fds_, O_CLOEXEC) != 0) {
      Die("pipe failed");
    }
  }
  ~AlwaysSignalNotifier() {
    close(fds_[0]);
    if (!eventfd_) close(fds_[1]);
  }
  uint64_t Prepare() { return 0; }
  Status Send(uint64_t /*ticket*/, int r) {
    result_.store(r, std::memory_order_release);  // pairs with the acquire in Wait
    uint64_t one = 1;
    size_t len = eventfd_ ? 8 : 1;
    if (write(fds_[1], &one, len) != static_cast<ssize_t>(len)) Die("token write failed");
    return Status::OK();
  }
  Status Wait(int* r) {
    uint64_t buf;
    if (read(fds_[0], &buf, eventfd_ ? 8 : 1) <= 0) Die("token read failed");
    *r = result_.load(std::memory_order_acquire);
    return Status::OK();
  }
  bool waiter_sleeping() const { return true; }  // unknown; --sleep_us covers it
  int fd_count() const { return eventfd_ ? 1 : 2; }

 private:
  const bool eventfd_;
  int fds_[2];
  std::atomic<int> result_{0};
};

template <typename N>
RunResult RunOnce(N* n, Mode mode, int producer_cpu, int consumer_cpu) {
  const int total = FLAGS_warmup + FLAGS_rounds;
  // Consumer -> producer: (round << 32) | ticket. Producer -> consumer (only
  // in the non-blocking mode): the last round it has sent.
  std::atomic<uint64_t> mailbox{0};
  std::atomic<int> sent_round{0};
  std::atomic<uint64_t> send_start{0};  // blocking mode: CycleClockNow() before Send
  std::vector<uint64_t> cycles;
  cycles.reserve(FLAGS_rounds);

  std::thread producer([&] {
    PinTo(producer_cpu);
    for (int i = 1; i <= total; i++) {
      uint64_t m = 0;
      SpinUntil([&] {
        m = mailbox.load(std::memory_order_acquire);
        return (m >> 32) == static_cast<uint64_t>(i);
      });
      if (mode == Mode::kBlocking) {
        SpinUntil([&] { return n->waiter_sleeping(); });
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(FLAGS_sleep_us);
        SpinUntil([&] { return std::chrono::steady_clock::now() >= until; });
        // Relaxed: the consumer reads it after Wait, which acquires Send's
        // release, and this store is sequenced before Send.
        send_start.store(CycleClockNow(), std::memory_order_relaxed);
      }
      Status st = n->Send(m & 0xffffffffu, i);
      if (!st.ok()) Die("send: " + st.ToString());
      if (mode == Mode::kNonblocking) sent_round.store(i, std::memory_order_release);
    }
  });
  std::thread consumer([&] {
    PinTo(consumer_cpu);
    for (int i = 1; i <= total; i++) {
      uint64_t start = CycleClockNow();
      uint64_t ticket = n->Prepare();
      mailbox.store((static_cast<uint64_t>(i) << 32) | ticket, std::memory_order_release);
      if (mode == Mode::kNonblocking) {
        SpinUntil([&] { return sent_round.load(std::memory_order_acquire) == i; });
      }
      int r = 0;
      Status st = n->Wait(&r);
      uint64_t end = CycleClockNow();
      if (!st.ok()) Die("wait: " + st.ToString());
      if (r != i) Die("round " + std::to_string(i) + " got " + std::to_string(r));
      if (mode == Mode::kBlocking) start = send_start.load(std::memory_order_relaxed);
      // Guard against a TSC that is not synchronised across cores.
      if (i > FLAGS_warmup) cycles.push_back(end > start ? end - start : 0);
    }
  });
  producer.join();
  consumer.join();

  RunResult out;
  double sum = 0;
  for (uint64_t c : cycles) sum += static_cast<double>(c);
  out.mean = cycles.empty() ? 0 : sum / static_cast<double>(cycles.size());
  std::nth_element(cycles.begin(), cycles.begin() + cycles.size() / 2, cycles.end());
  out.median = cycles.empty() ? 0 : cycles[cycles.size() / 2];
  out.fds = n->fd_count();
  return out;
}

RunResult RunRow(const std::string& row, Mode mode, int producer_cpu, int consumer_cpu) {
  if (row == "pipe-always" || row == "eventfd-always") {
    AlwaysSignalNotifier n(row == "eventfd-always");
    return RunOnce(&n, mode, producer_cpu, consumer_cpu);
  }
  NotifierBackend backend;
  if (!ParseNotifierBackend(row.c_str(), &backend).ok()) Die("unknown row " + row);
  std::unique_ptr<Notifier> n;
  Status s = Notifier::Create(backend, &n);
  if (!s.ok()) Die("create " + row + ": " + s.ToString());
  return RunOnce(n.get(), mode, producer_cpu, consumer_cpu);
}

int Main() {
  if (FLAGS_mode == "batch") {
    bench::NotifierBatchConfig config;
    config.waiters = FLAGS_waiters;
    config.rounds = std::max(1, FLAGS_rounds / 10);  // each batch wakes --waiters threads
    config.reps = FLAGS_reps;
    config.json = FLAGS_json;
    return bench::RunNotifierBatchBench(config);
  }
  std::vector<Mode> modes;
  if (FLAGS_mode == "nonblocking" || FLAGS_mode == "both") modes.push_back(Mode::kNonblocking);
  if (FLAGS_mode == "blocking" || FLAGS_mode == "both") modes.push_back(Mode::kBlocking);
  if (modes.empty()) Die("--mode must be nonblocking, blocking, both or batch");

  // Row names: a Notifier backend, or "<pipe|eventfd>-always" (baseline).
  std::vector<std::string> rows;
  for (const std::string& name : Split(FLAGS_backends)) {
    NotifierBackend b;
    Status s = ParseNotifierBackend(name.c_str(), &b);
    if (!s.ok() || b == NotifierBackend::kAuto) Die("bad --backends entry '" + name + "'");
    rows.push_back(name);
  }
  if (rows.empty()) Die("--backends is empty");
  if (FLAGS_baseline) {
    rows.push_back("pipe-always");
    rows.push_back("eventfd-always");
  }
  if (FLAGS_rounds < 1 || FLAGS_reps < 1 || FLAGS_warmup < 0) Die("bad --rounds/--reps/--warmup");

  int producer_cpu = -1, consumer_cpu = -1;
  std::vector<std::string> cpus = Split(FLAGS_cpus);
  if (!cpus.empty()) {
    if (cpus.size() != 2) Die("--cpus wants two ids: producer,consumer");
    producer_cpu = std::atoi(cpus[0].c_str());
    consumer_cpu = std::atoi(cpus[1].c_str());
  }

  if (!FLAGS_json) {
    std::printf("notifier_bench: rounds=%d reps=%d warmup=%d cpus=%s unit=%s per round trip\n",
                FLAGS_rounds, FLAGS_reps, FLAGS_warmup,
                FLAGS_cpus.empty() ? "unpinned" : FLAGS_cpus.c_str(), CycleClockUnit());
    if (FLAGS_cpus.empty()) {
      std::printf("note: unpinned; on a busy machine both threads may share one CPU and the\n"
                  "      spin hand-off then costs a context switch per round. Use --cpus=A,B.\n");
    }
    std::printf("%-12s %-15s %4s %10s %10s %10s %10s %14s\n", "mode", "backend", "fds", "median",
                "min", "max", "mean", "ratio_to_pipe");
  }
  for (Mode mode : modes) {
    std::map<std::string, std::vector<uint64_t>> medians;
    std::map<std::string, std::vector<uint64_t>> means;
    std::map<std::string, int> fds;
    for (int rep = 0; rep < FLAGS_reps; rep++) {
      for (size_t k = 0; k < rows.size(); k++) {
        const std::string& b = rows[(k + rep) % rows.size()];  // rotate the order
        RunResult r = RunRow(b, mode, producer_cpu, consumer_cpu);
        medians[b].push_back(r.median);
        means[b].push_back(static_cast<uint64_t>(r.mean));
        fds[b] = r.fds;
      }
    }
    double pipe_median = 0;
    if (medians.count("pipe")) pipe_median = static_cast<double>(MedianOf(medians["pipe"]));
    for (const std::string& b : rows) {
      const std::vector<uint64_t>& v = medians[b];
      uint64_t med = MedianOf(v);
      uint64_t lo = *std::min_element(v.begin(), v.end());
      uint64_t hi = *std::max_element(v.begin(), v.end());
      uint64_t mean = MedianOf(means[b]);
      double ratio = pipe_median > 0 ? static_cast<double>(med) / pipe_median : -1;
      if (FLAGS_json) {
        std::printf(
            "{\"backend\":\"%s\",\"mode\":\"%s\",\"unit\":\"%s\",\"rounds\":%d,\"reps\":%d,"
            "\"median_cycles\":%llu,\"min_cycles\":%llu,\"max_cycles\":%llu,"
            "\"mean_cycles\":%llu,\"ratio_to_pipe\":%s,\"fds\":%d}\n",
            b.c_str(), ModeName(mode), CycleClockUnit(), FLAGS_rounds, FLAGS_reps,
            static_cast<unsigned long long>(med), static_cast<unsigned long long>(lo),
            static_cast<unsigned long long>(hi), static_cast<unsigned long long>(mean),
            ratio < 0 ? "null" : std::to_string(ratio).c_str(), fds[b]);
      } else {
        char ratio_text[32];
        if (ratio < 0) {
          std::snprintf(ratio_text, sizeof(ratio_text), "n/a");
        } else {
          std::snprintf(ratio_text, sizeof(ratio_text), "%.3f", ratio);
        }
        std::printf("%-12s %-15s %4d %10llu %10llu %10llu %10llu %14s\n", ModeName(mode),
                    b.c_str(), fds[b], static_cast<unsigned long long>(med),
                    static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
                    static_cast<unsigned long long>(mean), ratio_text);
      }
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  chorus::ParseProgramFlags("Notifier round-trip benchmark: pipe vs eventfd vs futex", &argc,
                            &argv);
  return chorus::Main();
}
