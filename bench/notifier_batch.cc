#include "bench/notifier_batch.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <thread>

#include "bench/notifier_bench_util.h"
#include "utils/cycle_clock.h"
#include "utils/notifier.h"
#include "utils/notifier_gate.h"

namespace chorus {
namespace bench {
namespace {

uint64_t ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct RowResult {
  uint64_t answer_cpu_ns;   // median per batch: the answering thread's CPU
  uint64_t answer_cycles;   // median per batch: its wall time, in cycles
  uint64_t last_back;       // median per batch: cycles until the last waiter returned
};

// One rep of one row: `rounds` batches of config.waiters sleeping waiters.
RowResult RunRowOnce(const std::string& row, const NotifierBatchConfig& config) {
  const int n = config.waiters;
  const bool gated = row != "each";
  std::vector<std::unique_ptr<Notifier>> notifiers(n);
  if (!gated) {
    for (auto& x : notifiers) {
      Status s = Notifier::Create(NotifierBackend::kEventfd, &x);
      if (!s.ok()) Die("eventfd Notifier: " + s.ToString());
    }
  }
  std::unique_ptr<NotifierGate> gate;
  if (gated) {
    Status s = NotifierGate::Create(
        row == "gate-pipe" ? NotifierBackend::kPipe : NotifierBackend::kEventfd, &gate);
    if (!s.ok()) Die(row + ": " + s.ToString());
  }
  std::vector<std::atomic<uint64_t>> tickets(n);
  std::vector<std::atomic<uint64_t>> back_at(n);
  std::atomic<int> round{0};
  std::atomic<int> waiting{0};  // waiters between arming and their return
  std::vector<std::thread> threads;
  for (int w = 0; w < n; w++) {
    threads.emplace_back([&, w] {
      for (int r = 1; r <= config.rounds; r++) {
        SpinUntil([&] { return round.load(std::memory_order_acquire) >= r; });
        if (!gated) tickets[w].store(notifiers[w]->Prepare(), std::memory_order_release);
        waiting.fetch_add(1);
        int ignored = 0;
        Status s = gated ? gate->WaitFor(-1) : notifiers[w]->Wait(&ignored);
        if (!s.ok()) Die("wait: " + s.ToString());
        back_at[w].store(CycleClockNow(), std::memory_order_release);
        waiting.fetch_sub(1);
      }
    });
  }
  std::vector<uint64_t> cpu, wall, last;
  for (int r = 1; r <= config.rounds; r++) {
    if (gated && r > 1 && !gate->Reset().ok()) Die("gate reset");
    round.store(r, std::memory_order_release);
    // Until every waiter has announced its sleep, then a little longer so
    // that each is really asleep in the kernel: the wake-up is what is timed.
    SpinUntil([&] {
      if (waiting.load() != n) return false;
      if (gated) return gate->sleepers() == static_cast<uint32_t>(n);
      for (auto& x : notifiers) {
        if (!x->waiter_sleeping()) return false;
      }
      return true;
    });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const uint64_t cpu_start = ThreadCpuNs();
    const uint64_t start = CycleClockNow();
    if (gated) {
      if (!gate->Open().ok()) Die("open");
    } else {
      for (int w = 0; w < n; w++) {
        if (!notifiers[w]->Send(tickets[w].load(std::memory_order_acquire), 0).ok()) Die("send");
      }
    }
    const uint64_t answered = CycleClockNow();
    cpu.push_back(ThreadCpuNs() - cpu_start);
    SpinUntil([&] { return waiting.load() == 0; });
    uint64_t latest = 0;
    for (auto& b : back_at) latest = std::max(latest, b.load(std::memory_order_acquire));
    wall.push_back(answered - start);
    last.push_back(latest > start ? latest - start : 0);
  }
  for (auto& t : threads) t.join();
  return RowResult{MedianOf(cpu), MedianOf(wall), MedianOf(last)};
}

}  // namespace

int RunNotifierBatchBench(const NotifierBatchConfig& config) {
  if (config.waiters < 1 || config.rounds < 1 || config.reps < 1) {
    Die("--waiters, --rounds and --reps must be >= 1");
  }
  const std::vector<std::string> rows = {"each", "gate-eventfd", "gate-pipe"};
  std::map<std::string, std::vector<uint64_t>> cpu, wall, last;
  for (int rep = 0; rep < config.reps; rep++) {
    for (size_t k = 0; k < rows.size(); k++) {
      const std::string& row = rows[(k + rep) % rows.size()];  // rotate the order
      RowResult r = RunRowOnce(row, config);
      cpu[row].push_back(r.answer_cpu_ns);
      wall[row].push_back(r.answer_cycles);
      last[row].push_back(r.last_back);
    }
  }
  if (!config.json) {
    std::printf("notifier_bench batch: %d sleeping waiters per batch, %d batches x %d reps, "
                "medians; cycles in %s\n",
                config.waiters, config.rounds, config.reps, CycleClockUnit());
    std::printf("%-13s %8s %14s %14s %14s %16s\n", "row", "syscalls", "answer_cpu_ns",
                "cpu_ns/waiter", "answer_cycles", "last_back_cycles");
  }
  const uint64_t waiters = static_cast<uint64_t>(config.waiters);
  for (const std::string& row : rows) {
    const uint64_t c = MedianOf(cpu[row]);
    const uint64_t w = MedianOf(wall[row]);
    const uint64_t l = MedianOf(last[row]);
    const uint64_t syscalls = row == "each" ? waiters : 1;  // by construction, per batch
    if (config.json) {
      std::printf("{\"mode\":\"batch\",\"row\":\"%s\",\"waiters\":%d,\"rounds\":%d,\"reps\":%d,"
                  "\"unit\":\"%s\",\"answer_syscalls\":%llu,\"answer_cpu_ns\":%llu,"
                  "\"answer_cycles\":%llu,\"last_back_cycles\":%llu}\n",
                  row.c_str(), config.waiters, config.rounds, config.reps, CycleClockUnit(),
                  static_cast<unsigned long long>(syscalls), static_cast<unsigned long long>(c),
                  static_cast<unsigned long long>(w), static_cast<unsigned long long>(l));
    } else {
      std::printf("%-13s %8llu %14llu %14llu %14llu %16llu\n", row.c_str(),
                  static_cast<unsigned long long>(syscalls), static_cast<unsigned long long>(c),
                  static_cast<unsigned long long>(c / waiters), static_cast<unsigned long long>(w),
                  static_cast<unsigned long long>(l));
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace bench
}  // namespace chorus
