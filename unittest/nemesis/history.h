// Copyright (c) chorus authors.
//
// A history of client operations against a replicated key-value store, as
// the nemesis (unittest/nemesis) records it and the linearizability checker
// (linearizability.h) reads it.
//
// The model: a map key -> string in which every key starts absent. An
// absent key reads as "" (workloads never write ""). A compare-and-set swaps
// iff the current value equals `expected` ("" matches an absent key).
//
// Outcomes: a kFailed operation had no effect and is dropped before
// checking; a kUnknown write or CAS (timeout, connection lost, node killed)
// may take effect at any point after its invoke, or never; a kUnknown read
// is dropped (it constrains nothing).

#ifndef CHORUS_UNITTEST_NEMESIS_HISTORY_H_
#define CHORUS_UNITTEST_NEMESIS_HISTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace nemesis {

enum class OpKind : uint8_t { kRead, kWrite, kCas };

enum class Outcome : uint8_t {
  kOk,       // completed; its result fields are valid
  kFailed,   // definitely had no effect (refused before it was proposed)
  kUnknown,  // may or may not have taken effect
};

struct Operation {
  uint64_t id = 0;  // unique in the history
  int client = 0;   // a client runs one operation at a time
  OpKind kind = OpKind::kRead;
  std::string key;
  std::string value;     // kWrite: the value written; kCas: the new value
  std::string expected;  // kCas: the value compared with ("" = absent)
  Outcome outcome = Outcome::kUnknown;
  std::string output;        // kRead + kOk: the value read ("" = absent)
  bool cas_swapped = false;  // kCas + kOk: whether it swapped
  int64_t invoke_ns = 0;     // one monotonic clock for the whole history
  int64_t complete_ns = 0;   // kUnknown: ignored (open until the end)
  int node = 0;              // the node it was sent to (reports only)
};

const char* OpKindName(OpKind kind);
const char* OutcomeName(Outcome outcome);

// One line of text per operation (the format tools/lincheck reads back).
std::string EncodeOperation(const Operation& op);
// Parses one line of EncodeOperation. OK or InvalidArgument (says why).
Status DecodeOperation(const std::string& line, Operation* op);

// A whole history as text, one operation per line, and back.
std::string EncodeHistory(const std::vector<Operation>& history);
Status DecodeHistory(const std::string& text, std::vector<Operation>* history);

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_HISTORY_H_
