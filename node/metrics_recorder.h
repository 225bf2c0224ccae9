// GroupMetricsRecorder: the counters and histograms behind Node::GetMetrics
// for one group (chorus/metrics.h says what each one means), and the info
// lines of the events it sees at a round's end (master gained or lost, a new
// master, catch-up begun and ended, a checkpoint made).
//
// Cost and guards: every field is a std::atomic written with relaxed
// stores/adds and read with relaxed loads. Nothing is ordered by them and no
// reader needs a consistent cut (metrics.h says a snapshot is per field).
//   - Propose outcomes (CountPropose): any proposing thread, one relaxed add
//     per counter and histogram bucket; no lock, no shared line but the
//     counters themselves.
//   - Everything else: the group's loop thread only (OnLogWrite, OnApplied,
//     OnRound), so each "now" value has a single writer and the event
//     detection state (last_*) is loop-only plain data.
//   - Read: any thread.
#ifndef CHORUS_NODE_METRICS_RECORDER_H_
#define CHORUS_NODE_METRICS_RECORDER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "chorus/metrics.h"
#include "chorus/status.h"
#include "utils/logging.h"

namespace chorus {

// A Histogram<N> of metrics.h that many threads may add to.
template <size_t N>
class AtomicHistogram {
 public:
  explicit AtomicHistogram(const uint64_t (&bounds)[N]) : bounds_(bounds) {}
  void Observe(uint64_t v) {
    size_t i = 0;
    while (i < N && v > bounds_[i]) ++i;  // N <= 17: a scan beats a search
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }
  void Read(Histogram<N>* h) const {
    for (size_t i = 0; i <= N; ++i) h->counts[i] = counts_[i].load(std::memory_order_relaxed);
    h->count = count_.load(std::memory_order_relaxed);
    h->sum = sum_.load(std::memory_order_relaxed);
  }

 private:
  const uint64_t (&bounds_)[N];
  std::atomic<uint64_t> counts_[N + 1] = {};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
};

// What the loop reports at a round's end (filled by Group::PublishMetrics).
struct RoundFacts {
  size_t chosen = 0;  // instances applied by this round
  uint64_t chosen_end = 0;
  uint64_t executed = 0;
  uint64_t log_start = 0;
  uint64_t in_core = 0;
  uint64_t backlog = 0;
  uint64_t queued_events = 0;
  bool checkpoint_needed = false;  // the core asked for a checkpoint this round
  // Master (master_election only; zero otherwise).
  uint64_t master_node = 0;
  uint64_t master_epoch = 0;
  bool self_master = false;  // this node is the ready master
  uint64_t master_chosen_end = 0;
  // Checkpoints.
  uint64_t checkpoint_instance = 0;
  uint64_t checkpoints_made = 0;
  // Core counters (paxos::CoreStats), copied.
  uint64_t elections_started = 0;
  uint64_t catchup_requests = 0;
  uint64_t catchup_reads = 0;
  uint64_t checkpoints_needed = 0;
  uint64_t checkpoint_replies = 0;
  uint64_t trims = 0;
  uint64_t garbage = 0;
  uint64_t foreign = 0;
};

class GroupMetricsRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  // `catchup_lag`: how far (instances) behind the master's chosen end this
  // node must fall to count as catching up; `self`: this node's id; logger
  // (may be null) gets the event lines.
  GroupMetricsRecorder(uint32_t group, uint64_t self, uint64_t catchup_lag, Logger* logger);

  // How the log lines name a node (e.g. its address from the node's address
  // book). Default: the ipv4:port a derived id encodes. Loop thread, before
  // the loop starts.
  void set_node_namer(std::function<std::string(uint64_t id)> namer) { namer_ = std::move(namer); }

  GroupMetricsRecorder(const GroupMetricsRecorder&) = delete;
  GroupMetricsRecorder& operator=(const GroupMetricsRecorder&) = delete;

  // Any thread. Counts a Propose / BatchPropose that returned `s` after it
  // began at `start`; returns `s`.
  Status CountPropose(Status s, Clock::time_point start);

  // Loop thread. A log write that began at `start` (synced or not).
  void OnLogWrite(Clock::time_point start, bool synced);
  // Loop thread. An applied instance with `values` application values (0: a noop).
  void OnApplied(size_t values);
  // Loop thread. The end of a round; logs the events it sees.
  void OnRound(const RoundFacts& facts);
  // Instances applied so far (for the recovery line of Group::Open).
  uint64_t instances_executed() const { return instances_executed_.load(std::memory_order_relaxed); }

  // Any thread. Fills every field this recorder keeps (not the ones the
  // node adds: checkpoints loaded/sent, transfer progress, inbound drops).
  void Read(GroupMetrics* m) const;

 private:
  static void Set(std::atomic<uint64_t>* a, uint64_t v) { a->store(v, std::memory_order_relaxed); }
  static void Add(std::atomic<uint64_t>* a, uint64_t n = 1) {
    a->fetch_add(n, std::memory_order_relaxed);
  }
  void LogEvents(const RoundFacts& f);

  const uint32_t group_;
  const uint64_t self_;
  const uint64_t catchup_lag_;
  Logger* const logger_;
  std::function<std::string(uint64_t)> namer_;  // loop only; empty: NodeText

  // Any thread.
  std::atomic<uint64_t> ok_{0}, busy_{0}, timeout_{0}, not_master_{0}, stopped_{0}, other_{0};
  AtomicHistogram<kLatencyBounds> propose_latency_{kLatencyBoundsUs};
  // Loop-written, any-thread-read.
  std::atomic<uint64_t> log_writes_{0}, log_syncs_{0}, rounds_{0}, values_executed_{0},
      instances_executed_{0};
  AtomicHistogram<kLatencyBounds> sync_latency_{kLatencyBoundsUs};
  AtomicHistogram<kSizeBounds> instances_per_round_{kSizeBoundsCount};
  AtomicHistogram<kSizeBounds> values_per_instance_{kSizeBoundsCount};
  std::atomic<uint64_t> chosen_end_{0}, executed_{0}, log_start_{0}, in_core_{0}, backlog_{0},
      queued_{0};
  std::atomic<uint64_t> master_node_{0}, is_master_{0}, master_changes_{0}, master_gained_{0},
      master_lost_{0}, elections_{0};
  std::atomic<uint64_t> catchups_started_{0}, catchups_finished_{0}, catching_up_{0};
  std::atomic<uint64_t> catchup_requests_{0}, catchup_reads_{0};
  std::atomic<uint64_t> checkpoint_instance_{0}, checkpoints_made_{0}, checkpoints_needed_{0},
      checkpoint_replies_{0}, trims_{0}, garbage_{0}, foreign_{0};

  // ---- Loop thread only: the previous round, for the events.
  bool first_round_ = true;
  uint64_t last_master_ = 0;
  bool last_self_master_ = false;
  bool catching_up_now_ = false;
  uint64_t catchup_from_ = 0;
  uint64_t last_made_ = 0;
};

}  // namespace chorus

#endif  // CHORUS_NODE_METRICS_RECORDER_H_
