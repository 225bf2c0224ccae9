// timer_bench: schedule+unschedule pairs per second, the RPC-timeout pattern,
// for chorus::TimerThread and for a mutex + binary-heap timer thread (the
// baseline brpc replaced), at 1, 2, 4, ... --threads worker threads.
//
// Each worker loops: schedule a timer --timeout_us out, cancel it at once (an
// RPC that got its answer). The deadline is computed from a clock read every
// --clock_every iterations (an RPC layer has "now" at hand; with 1 the clock
// read, which costs the same for both timers, is in the loop). Every
// --short_every-th iteration it also schedules a timer --short_us out that is
// left to fire; the lateness of those (fire time - due time) is reported as
// p50/p99. Note the firing rate grows with the throughput, and with more busy
// workers than cores the timer thread competes with them for CPU: lateness
// then measures the OS scheduler as much as the timer. Cells run for --seconds each; the
// --reps repetitions are interleaved (impl and thread count vary fastest) and
// the median ops/s is reported; lateness percentiles pool all reps.
//
//   bench/timer_bench [--threads=8] [--seconds=1] [--reps=3] [--json]

#include <gflags/gflags.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/mutex_heap_timer.h"
#include "tools/program_flags.h"
#include "utils/timer_thread.h"

DEFINE_int32(threads, 8, "largest number of worker threads (runs 1, 2, 4, ... up to it)");
DEFINE_double(seconds, 1.0, "seconds per cell");
DEFINE_int32(reps, 3, "interleaved repetitions per cell; the median is reported");
DEFINE_int64(timeout_us, 1000000, "delay of the timers that get cancelled");
DEFINE_int32(short_every, 100, "every N-th iteration also schedules a timer that fires (0: none)");
DEFINE_int64(short_us, 1000, "delay of the timers that fire");
DEFINE_int32(buckets, 13, "TimerThreadOptions::num_buckets");
DEFINE_int32(clock_every, 64,
             "read the clock once per N iterations (1: every Schedule), so that the "
             "clock's cost (the same for both) does not hide the timers' own cost");
DEFINE_bool(baseline, true, "also run the mutex_heap baseline (ratios need it)");
DEFINE_bool(json, false, "print one JSON object per row instead of a table");

namespace chorus {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

void Noop(void*) {}

// Lateness samples of the cell being run; appended by the timer thread only
// (callbacks run one at a time on it). Set before the timer starts (thread
// creation orders it), read after Stop joined the timer thread.
std::vector<int64_t>* g_late_ns = nullptr;

// A firing timer's arg is its due time itself (ns), so scheduling one
// allocates nothing and the callback touches no worker-owned memory.
void RecordLateness(void* arg) {
  const int64_t due_ns = static_cast<int64_t>(reinterpret_cast<intptr_t>(arg));
  g_late_ns->push_back(NowNs() - due_ns);
}

struct CellResult {
  double ops_per_sec = 0;
  std::vector<int64_t> late_ns;
};

template <typename Timer>
CellResult RunCell(int threads) {
  std::vector<int64_t> late_ns;
  late_ns.reserve(1 << 20);
  g_late_ns = &late_ns;
  Timer timer;
  TimerThreadOptions options;
  options.num_buckets = static_cast<size_t>(FLAGS_buckets);
  Status s = timer.Start(options);
  if (!s.ok()) {
    std::fprintf(stderr, "Start: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<uint64_t> ops(static_cast<size_t>(threads) * 16, 0);  // padded slots
  std::vector<std::thread> workers;
  const auto timeout = std::chrono::microseconds(FLAGS_timeout_us);
  const auto short_delay = std::chrono::microseconds(FLAGS_short_us);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) {
      }
      uint64_t n = 0;
      int until_short = FLAGS_short_every;
      const int clock_every = std::max(1, FLAGS_clock_every);
      Clock::time_point now = Clock::now();
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 64; ++i) {
          if (i % clock_every == 0) now = Clock::now();
          if (FLAGS_short_every > 0 && --until_short == 0) {
            until_short = FLAGS_short_every;
            auto when = Clock::now() + short_delay;
            auto due_ns =
                std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch())
                    .count();
            timer.Schedule(&RecordLateness, reinterpret_cast<void*>(static_cast<intptr_t>(due_ns)),
                           when);
          }
          auto id = timer.Schedule(&Noop, nullptr, now + timeout);
          if (timer.Unschedule(id) != 0) {
            std::fprintf(stderr, "Unschedule of a pending timer failed\n");
            std::exit(1);
          }
          ++n;
        }
      }
      ops[static_cast<size_t>(t) * 16] = n;
    });
  }
  auto start = Clock::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(FLAGS_seconds));
  stop.store(true, std::memory_order_relaxed);
  auto elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& w : workers) w.join();
  timer.Stop();  // joins the timer thread: late_ns is ours again
  g_late_ns = nullptr;
  CellResult r;
  uint64_t total = 0;
  for (int t = 0; t < threads; ++t) total += ops[static_cast<size_t>(t) * 16];
  r.ops_per_sec = static_cast<double>(total) / elapsed;
  r.late_ns = std::move(late_ns);
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double PercentileUs(std::vector<int64_t>* v, double p) {
  if (v->empty()) return -1;
  size_t k = static_cast<size_t>(p * static_cast<double>(v->size() - 1));
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(k), v->end());
  return static_cast<double>((*v)[k]) / 1000.0;
}

struct Row {
  std::vector<double> ops;
  std::vector<int64_t> late_ns;
};

int Main() {
  if (FLAGS_threads < 1 || FLAGS_reps < 1 || FLAGS_seconds <= 0) {
    std::fprintf(stderr, "--threads, --reps and --seconds must be positive\n");
    return 1;
  }
  std::vector<int> thread_counts;
  for (int t = 1; t < FLAGS_threads; t *= 2) thread_counts.push_back(t);
  thread_counts.push_back(FLAGS_threads);

  const char* kImpls[] = {"timer_thread", "mutex_heap"};
  std::map<std::pair<std::string, int>, Row> rows;
  for (int rep = 0; rep < FLAGS_reps; ++rep) {
    for (int threads : thread_counts) {
      for (const char* impl : kImpls) {
        // Alternate which impl goes first so neither always gets a warm cache.
        bool tt = (std::string(impl) == "timer_thread") == (rep % 2 == 0);
        if (!tt && !FLAGS_baseline) continue;
        CellResult r = tt ? RunCell<TimerThread>(threads) : RunCell<MutexHeapTimer>(threads);
        Row& row = rows[{tt ? "timer_thread" : "mutex_heap", threads}];
        row.ops.push_back(r.ops_per_sec);
        row.late_ns.insert(row.late_ns.end(), r.late_ns.begin(), r.late_ns.end());
      }
    }
  }

  if (!FLAGS_json) {
    std::printf("schedule+unschedule pairs/s (median of %d x %.2fs), timeout %lldus, "
                "1/%d fire after %lldus, clock every %d; %u hw threads\n",
                FLAGS_reps, FLAGS_seconds, static_cast<long long>(FLAGS_timeout_us),
                FLAGS_short_every, static_cast<long long>(FLAGS_short_us), FLAGS_clock_every,
                std::thread::hardware_concurrency());
    std::printf("%-13s %7s %14s %8s %12s %12s\n", "impl", "threads", "ops_per_sec", "ratio",
                "late_p50_us", "late_p99_us");
  }
  for (int threads : thread_counts) {
    double base = Median(rows[{"mutex_heap", threads}].ops);
    for (const char* impl : kImpls) {
      if (!FLAGS_baseline && std::string(impl) == "mutex_heap") continue;
      Row& row = rows[{impl, threads}];
      double ops = Median(row.ops);
      double ratio = base > 0 ? ops / base : 0;
      double p50 = PercentileUs(&row.late_ns, 0.50);
      double p99 = PercentileUs(&row.late_ns, 0.99);
      if (FLAGS_json) {
        std::printf("{\"impl\":\"%s\",\"threads\":%d,\"ops_per_sec\":%.0f,"
                    "\"ratio_to_baseline\":%.3f,\"late_p50_us\":%.1f,\"late_p99_us\":%.1f,"
                    "\"late_samples\":%zu,\"reps\":%d,\"seconds\":%.2f}\n",
                    impl, threads, ops, ratio, p50, p99, row.late_ns.size(), FLAGS_reps,
                    FLAGS_seconds);
      } else {
        std::printf("%-13s %7d %14.0f %8.2f %12.1f %12.1f\n", impl, threads, ops, ratio, p50,
                    p99);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace chorus

int main(int argc, char** argv) {
  chorus::ParseProgramFlags("TimerThread vs mutex+heap timer: schedule+unschedule pairs/s",
                            &argc, &argv);
  return chorus::bench::Main();
}
