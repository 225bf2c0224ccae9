// EchoStateMachine: the echo sample's state machine. It prints every value
// it executes and keeps a tiny state that checkpoints can carry: how many
// values it executed and a hash chained over them (FNV-1a), so two replicas
// that executed the same values in the same order report the same state,
// whether they got there by executing or by loading a checkpoint.
//
// Checkpoints (echo_server --checkpoint_interval=N): the checkpoint is one
// file, "state": "<count> <hash> <check>\n" with check = count ^ hash ^
// kStateMagic, so a damaged file is refused (the old state then stays).
#ifndef CHORUS_SAMPLE_ECHO_ECHO_STATE_H_
#define CHORUS_SAMPLE_ECHO_ECHO_STATE_H_

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "chorus/state_machine.h"
#include "tools/print_line.h"

namespace chorus {
namespace echo {

constexpr uint64_t kStateMagic = 0x6563686f73746174ull;  // "echostat"

inline uint64_t ChainHash(uint64_t hash, const std::string& value) {
  for (unsigned char c : value + "\n") {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

class StateWriter : public CheckpointWriter {
 public:
  StateWriter(uint64_t count, uint64_t hash) : count_(count), hash_(hash) {}
  Status Write(const std::string& dir) override {
    std::ofstream out(dir + "/state", std::ios::trunc);
    out << count_ << " " << hash_ << " " << (count_ ^ hash_ ^ kStateMagic) << "\n";
    out.close();
    return out ? Status::OK() : Status::IOError("cannot write " + dir + "/state");
  }

 private:
  const uint64_t count_, hash_;
};

class EchoStateMachine : public StateMachine {
 public:
  EchoStateMachine(bool print_group, bool checkpoints)
      : print_group_(print_group), checkpoints_(checkpoints) {}

  int id() const override { return 1; }

  Status Execute(const ExecuteInfo& info, const std::string& value,
                 ExecuteContext* ctx) override {
    std::string line = "executed ";
    if (print_group_) line += "group=" + std::to_string(info.group) + " ";
    line += "instance=" + std::to_string(info.instance) + " value=" + value;
    PrintLine(line);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++count_;
      hash_ = ChainHash(hash_, value);
    }
    if (ctx != nullptr) ctx->output = value;
    return Status::OK();
  }

  Status PrepareCheckpoint(const CheckpointInfo& /*info*/,
                           std::unique_ptr<CheckpointWriter>* writer) override {
    if (!checkpoints_) return Status::NotSupported("echo_server without --checkpoint_interval");
    std::lock_guard<std::mutex> lock(mu_);
    *writer = std::make_unique<StateWriter>(count_, hash_);  // a copy: snapshot isolation
    return Status::OK();
  }

  Status LoadCheckpoint(const CheckpointInfo& info, const std::string& dir) override {
    std::ifstream in(dir + "/state");
    uint64_t count = 0, hash = 0, check = 0;
    if (!(in >> count >> hash >> check) || check != (count ^ hash ^ kStateMagic)) {
      return Status::Corruption("echo checkpoint " + dir + "/state is damaged");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);  // the swap: old state intact until here
      count_ = count;
      hash_ = hash;
    }
    std::string line = "checkpoint loaded ";
    if (print_group_) line += "group=" + std::to_string(info.group) + " ";
    PrintLine(line + "instance=" + std::to_string(info.instance) +
              " count=" + std::to_string(count) + " hash=" + std::to_string(hash));
    return Status::OK();
  }

  // "count=<n> hash=<h>" (thread-safe).
  std::string StateLine() const {
    std::lock_guard<std::mutex> lock(mu_);
    return "count=" + std::to_string(count_) + " hash=" + std::to_string(hash_);
  }

 private:
  const bool print_group_;
  const bool checkpoints_;
  mutable std::mutex mu_;
  uint64_t count_ = 0;                      // GUARDED_BY(mu_)
  uint64_t hash_ = 14695981039346656037ull;  // GUARDED_BY(mu_): FNV-1a offset basis
};

}  // namespace echo
}  // namespace chorus

#endif  // CHORUS_SAMPLE_ECHO_ECHO_STATE_H_
