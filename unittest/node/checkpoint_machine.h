// CheckpointMachine: an in-memory state machine that makes and loads
// checkpoints, for the node tests of issue 10. Its state is a hash chain
// over the values it executed and their count; it records every Execute /
// ExecuteNoop call, every load and prepare, and counts order violations (an
// instance skipped or repeated, across a load included). Knobs make its
// PrepareCheckpoint, Write and LoadCheckpoint fail or say NotSupported.
// Thread-safe: the group's loop, the checkpoint thread and the test read it.
#ifndef CHORUS_UNITTEST_NODE_CHECKPOINT_MACHINE_H_
#define CHORUS_UNITTEST_NODE_CHECKPOINT_MACHINE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/state_machine.h"
#include "node/fs_util.h"

namespace chorus {
namespace testing {

class CheckpointMachine : public StateMachine {
 public:
  struct State {
    uint64_t next = 0;   // the next instance it executes
    uint64_t count = 0;  // values executed
    uint64_t hash = 0;   // chain over (instance, value)
    bool operator==(const State& o) const {
      return next == o.next && count == o.count && hash == o.hash;
    }
  };

  explicit CheckpointMachine(int id = 1) : id_(id) {}
  int id() const override { return id_; }

  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext*) override {
    std::lock_guard<std::mutex> lock(mu_);
    Step(info.instance, info.batch_index > 0);
    ++state_.count;
    for (char c : value) state_.hash = (state_.hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    state_.hash = (state_.hash ^ info.instance) * 0x100000001b3ull;
    ++executes_;
    return Status::OK();
  }
  void ExecuteNoop(uint32_t, uint64_t instance) override {
    std::lock_guard<std::mutex> lock(mu_);
    Step(instance, false);
    ++executes_;
  }
  uint64_t GetCheckpointInstanceId(uint32_t) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return reported_checkpoint_;
  }

  Status PrepareCheckpoint(const CheckpointInfo& info,
                           std::unique_ptr<CheckpointWriter>* writer) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++prepares_;
    if (!supported_) return Status::NotSupported("no checkpoints here");
    if (fail_prepares_ > 0) {
      --fail_prepares_;
      return Status::IOError("prepare failed (test)");
    }
    if (info.instance != state_.next) ++violations_;  // not at an instance boundary
    writer->reset(new Writer(this, state_, fail_writes_ > 0));
    if (fail_writes_ > 0) --fail_writes_;
    return Status::OK();
  }

  Status LoadCheckpoint(const CheckpointInfo& info, const std::string& dir) override {
    std::string text;
    Status s = ReadWholeFile(dir + "/state", &text);
    if (!s.ok()) return s;
    State loaded;
    unsigned long long next = 0, count = 0, hash = 0;
    if (std::sscanf(text.c_str(), "%llu %llu %llu", &next, &count, &hash) != 3) {
      return Status::Corruption("bad checkpoint state");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_loads_ > 0) {
      --fail_loads_;
      ++failed_loads_;
      return Status::IOError("load failed (test)");
    }
    loaded.next = next;
    loaded.count = count;
    loaded.hash = hash;
    if (loaded.next != info.instance) ++violations_;
    state_ = loaded;
    loads_.push_back(info.instance);
    return Status::OK();
  }

  // ---- Knobs (set before the node opens, or any time) ----
  void set_supported(bool on) { Locked([&] { supported_ = on; }); }
  void fail_prepares(int n) { Locked([&] { fail_prepares_ = n; }); }
  void fail_writes(int n) { Locked([&] { fail_writes_ = n; }); }
  void fail_loads(int n) { Locked([&] { fail_loads_ = n; }); }
  // What GetCheckpointInstanceId reports (a persistent state machine).
  void set_reported_checkpoint(uint64_t i) { Locked([&] { reported_checkpoint_ = i; }); }
  // Forgets everything (a fresh process).
  void Reset() {
    Locked([&] {
      state_ = State();
      executes_ = prepares_ = violations_ = 0;
      loads_.clear();
    });
  }

  // ---- Observations ----
  State state() const { return Get(state_); }
  uint64_t executes() const { return Get(executes_); }
  uint64_t prepares() const { return Get(prepares_); }
  uint64_t violations() const { return Get(violations_); }
  std::vector<uint64_t> loads() const { return Get(loads_); }
  uint64_t writes() const { return Get(writes_); }
  uint64_t failed_loads() const { return Get(failed_loads_); }

 private:
  class Writer : public CheckpointWriter {
   public:
    Writer(CheckpointMachine* sm, State state, bool fail) : sm_(sm), state_(state), fail_(fail) {}
    Status Write(const std::string& dir) override {
      if (fail_) return Status::IOError("write failed (test)");
      char text[96];
      std::snprintf(text, sizeof(text), "%llu %llu %llu", static_cast<unsigned long long>(state_.next),
                    static_cast<unsigned long long>(state_.count),
                    static_cast<unsigned long long>(state_.hash));
      Status s = WriteWholeFile(dir + "/state", text);
      if (s.ok()) sm_->Locked([&] { ++sm_->writes_; });
      return s;
    }

   private:
    CheckpointMachine* const sm_;
    const State state_;  // captured by PrepareCheckpoint
    const bool fail_;
  };

  // REQUIRES: mu_ held.
  void Step(uint64_t instance, bool same_instance) {
    const uint64_t expected = same_instance ? state_.next - 1 : state_.next;
    if (instance != expected) ++violations_;
    state_.next = instance + 1;
  }
  template <typename F>
  void Locked(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    f();
  }
  template <typename T>
  T Get(const T& field) const {
    std::lock_guard<std::mutex> lock(mu_);
    return field;
  }

  const int id_;
  mutable std::mutex mu_;
  State state_;                       // GUARDED_BY(mu_)
  uint64_t executes_ = 0;             // GUARDED_BY(mu_)
  uint64_t prepares_ = 0;             // GUARDED_BY(mu_)
  uint64_t writes_ = 0;               // GUARDED_BY(mu_)
  uint64_t violations_ = 0;           // GUARDED_BY(mu_)
  std::vector<uint64_t> loads_;       // GUARDED_BY(mu_)
  bool supported_ = true;             // GUARDED_BY(mu_)
  int fail_prepares_ = 0;             // GUARDED_BY(mu_)
  int fail_writes_ = 0;               // GUARDED_BY(mu_)
  int fail_loads_ = 0;                // GUARDED_BY(mu_)
  uint64_t failed_loads_ = 0;         // GUARDED_BY(mu_)
  uint64_t reported_checkpoint_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_CHECKPOINT_MACHINE_H_
