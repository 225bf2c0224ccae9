// Fuzzes paxos message decoding and validation, and the protocol steps they
// drive: bytes from a peer go to Core::OnMessage of a 3-member core over
// MemLogStorage (input format: paxos_fuzz_input.h). Whatever the bytes, the
// core must not crash, and after every step:
//   - chosen_end never decreases (within one Core object);
//   - the step emits exactly the instances [chosen_end before, chosen_end after);
//   - every message it sends parses, is from this node of this cluster and
//     group, and is not addressed to itself;
//   - it persists no record at an instance id >= kMaxInstanceId;
//   - a restart after a crash reopens the log it wrote (Open is ok).
// A broken invariant is __builtin_trap(), which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "paxos.pb.h"
#include "paxos/core.h"
#include "unittest/fuzz/fuzz_require.h"
#include "unittest/fuzz/paxos_fuzz_input.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace paxos {
namespace fuzz {
namespace {

using chorus::fuzz::Require;

class FuzzedCore {
 public:
  FuzzedCore() { Open(); }

  void OnMessage(const std::string& bytes, uint64_t sender) {
    Outputs out;
    const uint64_t before = core_->chosen_end();
    core_->OnMessage(bytes, &out, sender);
    Execute(&out, before);
  }

  void Propose(const std::string& value) {
    Outputs out;
    const uint64_t before = core_->chosen_end();
    core_->Propose(next_token_++, value, &out);
    Execute(&out, before);
  }

  void Timeout(uint8_t kind_byte) {
    const TimerKind kind = static_cast<TimerKind>(1 + kind_byte % 4);
    auto it = timers_.find(kind);
    if (it == timers_.end()) return;
    Outputs out;
    const uint64_t before = core_->chosen_end();
    core_->OnTimeout(it->second, &out);
    Execute(&out, before);
  }

  void Cancel(uint8_t token) {
    Outputs out;
    const uint64_t before = core_->chosen_end();
    core_->Cancel(token % next_token_, &out);
    Execute(&out, before);
  }

  void Restart() {
    log_.Crash();
    Open();
  }

 private:
  void Open() {
    core_.reset();
    timers_.clear();
    // The log holds only what this core wrote: it must always reopen.
    Require(Core::Open(FuzzCoreOptions(kSelf), &log_, &core_).ok());
    Outputs out;
    const uint64_t before = core_->chosen_end();
    core_->Start(&out);
    Execute(&out, before);
  }

  void Execute(Outputs* out, uint64_t before) {
    const uint64_t after = core_->chosen_end();
    Require(after >= before);
    Require(out->chosen.size() == after - before);
    for (size_t i = 0; i < out->chosen.size(); ++i) {
      Require(out->chosen[i].instance == before + i);
    }
    for (const OutMessage& m : out->messages) {
      Require(m.to != kSelf);
      PaxosMsg msg;
      Require(msg.ParseFromString(m.bytes));
      Require(msg.cluster_id() == kCluster && msg.group() == 0 && msg.from() == kSelf);
    }
    // What may leave before the persist (outputs.h): ACCEPT requests only,
    // and none in a step that moves a promise or trims.
    const bool holds = !out->persist.variables.empty() || out->persist.delete_below != 0;
    for (const OutMessage& m : out->messages) {
      if (!m.before_persist) continue;
      Require(!holds);
      PaxosMsg msg;
      Require(msg.ParseFromString(m.bytes) && msg.type() == ACCEPT);
    }
    for (const auto& r : out->persist.records) Require(r.first < kMaxInstanceId);
    if (!out->persist.empty()) Require(log_.Write(out->persist, out->sync).ok());
    TrackTimers(*out, &timers_);
  }

  testing::MemLogStorage log_;
  std::unique_ptr<Core> core_;
  std::map<TimerKind, TimerId> timers_;
  uint64_t next_token_ = 1;
};

// Reads a length-prefixed field; a length past the end takes what is left.
std::string Take(const uint8_t** p, const uint8_t* end, size_t len) {
  const size_t n = std::min<size_t>(len, static_cast<size_t>(end - *p));
  std::string s(reinterpret_cast<const char*>(*p), n);
  *p += n;
  return s;
}

void RunSequence(const uint8_t* p, const uint8_t* end) {
  FuzzedCore core;
  // A restart is one byte but a whole reopen (recovery of everything the log
  // holds), so mutations pile them up: in a corpus evolved for 20,000 runs
  // they were 74% of all ops (median 1 per input, 90th percentile 61, up to
  // 241), and the reopens most of the time per input. What a crash can do is
  // set by the log it leaves, which the ops between crashes write; eight
  // crash points per sequence reach those states, and the restarts after
  // them are no-ops (kMaxRestarts in paxos_fuzz_input.h).
  int restarts_left = kMaxRestarts;
  while (p < end) {
    const uint8_t op = *p++ % kOpCount;
    switch (op) {
      case kOpMessage: {
        size_t len = 0;
        if (p < end) len = *p++;
        if (p < end) len |= static_cast<size_t>(*p++) << 8;
        core.OnMessage(Take(&p, end, len), Core::kSenderNotVerified);
        break;
      }
      case kOpPropose: {
        const size_t len = p < end ? *p++ : 0;
        core.Propose(Take(&p, end, len));
        break;
      }
      case kOpTimeout:
        if (p < end) core.Timeout(*p++);
        break;
      case kOpCancel:
        if (p < end) core.Cancel(*p++);
        break;
      case kOpRestart:
        if (restarts_left > 0) {
          --restarts_left;
          core.Restart();
        }
        break;
    }
  }
}

}  // namespace
}  // namespace fuzz
}  // namespace paxos
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::paxos::fuzz;  // NOLINT: one entry point
  if (size == 0) return 0;
  if ((data[0] & 1) == kModeSingle) {
    const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    FuzzedCore core;
    core.OnMessage(bytes, chorus::paxos::Core::kSenderNotVerified);
    // The same bytes as if the transport had verified peer 1 sent them.
    core.OnMessage(bytes, 1);
    return 0;
  }
  RunSequence(data + 1, data + size);
  return 0;
}
