// Copyright (c) chorus authors.
//
// The search behind CheckLinearizable (linearizability.h), on the
// operations of ONE key: is there an order of them, consistent with real
// time, that the register model accepts?
//
// Internal to the checker; the tests reach it through CheckLinearizable.

#ifndef CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_SEARCH_H_
#define CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_SEARCH_H_

#include <chrono>
#include <cstddef>
#include <vector>

#include "history.h"

namespace chorus {
namespace nemesis {

enum class KeyVerdict { kLinearizable, kViolation, kGaveUp };

struct KeySearchStats {
  size_t dropped_unknown = 0;  // kUnknown writes/CAS no operation can observe
  size_t steps = 0;            // operations tried
  size_t cache_entries = 0;    // (linearized set, value) pairs explored
};

// `ops`: one key's operations without kFailed ones and kUnknown reads
// (their order does not matter). Gives up at `deadline`, or when the
// search would hold more than `max_cache_entries` explored states.
KeyVerdict SearchKey(const std::vector<const Operation*>& ops,
                     std::chrono::steady_clock::time_point deadline, size_t max_cache_entries,
                     KeySearchStats* stats);

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_SEARCH_H_
