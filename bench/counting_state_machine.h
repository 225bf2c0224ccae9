// propose_bench's state machine: it counts executed values (the bench
// measures the cluster, not an application). Its checkpoint is the count,
// in one file (--checkpoint_interval). Header-only, for propose_bench.
#ifndef CHORUS_BENCH_COUNTING_STATE_MACHINE_H_
#define CHORUS_BENCH_COUNTING_STATE_MACHINE_H_

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/run_dir.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"

namespace chorus {
namespace bench {

class CountingStateMachine : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo& info, const std::string&, ExecuteContext*) override {
    executed_.fetch_add(1, std::memory_order_relaxed);
    // Every instance has exactly one value at batch index 0.
    if (info.batch_index == 0) instances_.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }
  uint64_t executed() const { return executed_.load(std::memory_order_relaxed); }
  // Paxos instances executed (not checkpointed), for the batch shape.
  uint64_t instances() const { return instances_.load(std::memory_order_relaxed); }

  Status PrepareCheckpoint(const CheckpointInfo&,
                           std::unique_ptr<CheckpointWriter>* writer) override {
    writer->reset(new CountWriter(executed()));  // the snapshot: one number
    return Status::OK();
  }
  Status LoadCheckpoint(const CheckpointInfo&, const std::string& dir) override {
    std::string text;
    if (!ReadFile(dir + "/count", &text)) return Status::IOError("cannot read " + dir);
    executed_.store(std::strtoull(text.c_str(), nullptr, 10), std::memory_order_relaxed);
    return Status::OK();
  }

 private:
  std::atomic<uint64_t> executed_{0};
  std::atomic<uint64_t> instances_{0};

  class CountWriter : public CheckpointWriter {
   public:
    explicit CountWriter(uint64_t count) : count_(count) {}
    Status Write(const std::string& dir) override {
      FILE* f = std::fopen((dir + "/count").c_str(), "w");
      if (f == nullptr) return Status::IOError("cannot create " + dir + "/count");
      const bool ok = std::fprintf(f, "%" PRIu64 "\n", count_) > 0;
      return std::fclose(f) == 0 && ok ? Status::OK()
                                      : Status::IOError("cannot write " + dir + "/count");
    }

   private:
    const uint64_t count_;
  };
};

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_COUNTING_STATE_MACHINE_H_
