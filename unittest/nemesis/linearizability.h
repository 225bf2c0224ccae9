// Copyright (c) chorus authors.
//
// A linearizability checker for histories of a key-value register model
// (history.h): is there a total order of the operations, consistent with
// their real-time order (an operation that completed before another was
// invoked comes first), in which every result is the model's?
//
// Keys are independent (linearizability is compositional), so each key's
// sub-history is checked on its own: a depth-first search over the order
// in which pending operations take effect (Wing & Gong, with Lowe's cache of
// (set of linearized operations, model state) pairs already explored).
//
// On a violation the checker shrinks the failing key's sub-history by
// deleting operations while it still fails, within
// CheckOptions::max_seconds. Only deletions that cannot turn a
// linearizable history into a failing one are made, so that the shrunk
// history's failure is evidence of the original's: a read or a CAS that did
// not swap goes alone; an operation that changes the value goes together
// with every operation that could observe it (the reads of its value, the
// CAS expecting it, and the CAS that did not swap, completing after its
// invoke, whose expected value may have been the one before it). The result is 1-minimal with respect to those deletions:
// deleting any one more of them makes it linearizable.

#ifndef CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_H_
#define CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "history.h"

namespace chorus {
namespace nemesis {

struct CheckOptions {
  // The whole check (search and shrinking) gives up after this long and
  // answers kUnknown: a search is exponential in the worst case.
  double max_seconds = 60;
  // Shrink a failing key's sub-history to a 1-minimal one.
  bool minimize = true;
  // One key's search gives up (kUnknown) once it has explored this many
  // (linearized set, value) states: about 50 bytes each.
  size_t max_states = size_t{8} << 20;
};

struct CheckResult {
  enum class Verdict { kLinearizable, kViolation, kUnknown };
  Verdict verdict = Verdict::kUnknown;
  size_t operations = 0;  // checked: kFailed ones and kUnknown reads dropped
  size_t keys = 0;
  std::string failing_key;         // kViolation
  std::vector<Operation> minimal;  // kViolation: failing sub-history of that key
  // kViolation: `minimal` is 1-minimal (false: minimize was off or the
  // time ran out while shrinking; it still fails).
  bool minimized = false;
  double seconds = 0;  // time to decide
  // kUnknown: why (the time ran out, or the history is malformed: an
  // operation id twice, a kOk or kFailed one that completes before it is
  // invoked).
  std::string error;
  // A report for people: the verdict, the counts and the failing
  // sub-history one operation per line.
  std::string Describe() const;
};

CheckResult CheckLinearizable(const std::vector<Operation>& history, const CheckOptions& options);

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_H_
