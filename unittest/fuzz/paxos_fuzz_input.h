// The input format of paxos_message_fuzz, shared with make_fuzz_corpus (which
// records real exchanges in it), and the small core both of them drive.
//
//   byte 0: mode. Even: the rest is ONE message for Core::OnMessage.
//           Odd: the rest is a sequence of ops, so stateful paths run:
//     kOpMessage  | len (2, little-endian) | len bytes  -> OnMessage
//     kOpPropose  | len (1) | len bytes                 -> Propose (next token)
//     kOpTimeout  | kind (1)                            -> OnTimeout (the live timer of kind)
//     kOpCancel   | token (1)                           -> Cancel
//     kOpRestart                                        -> crash (unsynced writes lost), reopen;
//                                                          after kMaxRestarts of them, a no-op
//   A length past the end of the input takes what is left. Op bytes are taken
//   modulo kOpCount, so every byte string is a valid input.
#ifndef CHORUS_UNITTEST_FUZZ_PAXOS_FUZZ_INPUT_H_
#define CHORUS_UNITTEST_FUZZ_PAXOS_FUZZ_INPUT_H_

#include <cstdint>
#include <map>
#include <string>

#include "paxos/core.h"
#include "paxos/options.h"
#include "paxos/outputs.h"

namespace chorus {
namespace paxos {
namespace fuzz {

constexpr uint64_t kCluster = 9;
constexpr uint64_t kSelf = 2;  // the fuzzed core; 1 and 3 are its peers

constexpr uint8_t kModeSingle = 0;
constexpr uint8_t kModeSequence = 1;

enum Op : uint8_t { kOpMessage = 0, kOpPropose, kOpTimeout, kOpCancel, kOpRestart, kOpCount };

// The restarts of one sequence that crash and reopen the core (the reason
// for the bound is at its use in paxos_message_fuzz.cc).
constexpr int kMaxRestarts = 8;

// Small limits, so that the window, the PROMISE budget, catch-up batches and
// the chosen-value cache (values read back from the log) are all in reach of
// short inputs.
inline CoreOptions FuzzCoreOptions(uint64_t self) {
  CoreOptions o;
  o.cluster_id = kCluster;
  o.self = self;
  o.members = {1, 2, 3};
  o.max_inflight = 2;
  o.window = 8;
  o.max_value_bytes = 64;
  o.promise_budget_bytes = 64 + kEnvelopeOverhead;
  o.catchup_batch_count = 3;
  o.catchup_batch_bytes = 256;
  o.chosen_cache_size = 2;
  o.seed = 100 + self;
  return o;
}

// The live timer of each kind, as a runtime would track them.
inline void TrackTimers(const Outputs& out, std::map<TimerKind, TimerId>* timers) {
  for (const TimerId& id : out.cancel_timers) {
    auto it = timers->find(id.kind);
    if (it != timers->end() && it->second == id) timers->erase(it);
  }
  for (const TimerStart& t : out.timers) (*timers)[t.id.kind] = t.id;
}

inline void AppendMessageOp(std::string* in, const std::string& bytes) {
  in->push_back(static_cast<char>(kOpMessage));
  in->push_back(static_cast<char>(bytes.size() & 0xFF));
  in->push_back(static_cast<char>((bytes.size() >> 8) & 0xFF));
  in->append(bytes, 0, 0xFFFF);
}
inline void AppendProposeOp(std::string* in, const std::string& value) {
  in->push_back(static_cast<char>(kOpPropose));
  in->push_back(static_cast<char>(value.size() & 0xFF));
  in->append(value, 0, 0xFF);
}
inline void AppendTimeoutOp(std::string* in, TimerKind kind) {
  in->push_back(static_cast<char>(kOpTimeout));
  in->push_back(static_cast<char>(kind));
}
inline void AppendCancelOp(std::string* in, uint8_t token) {
  in->push_back(static_cast<char>(kOpCancel));
  in->push_back(static_cast<char>(token));
}
inline void AppendRestartOp(std::string* in) { in->push_back(static_cast<char>(kOpRestart)); }

}  // namespace fuzz
}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_UNITTEST_FUZZ_PAXOS_FUZZ_INPUT_H_
