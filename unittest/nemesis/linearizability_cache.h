// Copyright (c) chorus authors.
//
// The state cache of the linearizability search (linearizability_search.cc):
// internal to the checker.

#ifndef CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_CACHE_H_
#define CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chorus {
namespace nemesis {

// The explored states. A state is the set of kOk operations linearized,
// the value, and the kUnknown operations taken. A state is dominated by an
// explored one with the same kOk set and value that took a subset of its
// kUnknown operations: a kUnknown operation is never required, so whatever
// can follow the new state can follow the explored one, which failed. This
// is what keeps kUnknown operations cheap: taking one that does not help,
// then an ordinary write, leads to a state dominated by taking the write
// alone.
class StateCache {
 public:
  StateCache() : slots_(1u << 12) {}

  // Records the state; false when it was explored or is dominated.
  // `taken` lists the kUnknown operations taken (indexes), `is_taken`
  // tells the same by index.
  bool Visit(uint64_t set1, uint64_t set2, int value, const std::vector<int>& taken,
             const std::vector<bool>& is_taken) {
    if ((used_ + 1) * 2 > slots_.size()) Grow();
    Slot* slot = Find(set1, set2, value);
    if (slot->value >= 0) {
      for (int e = slot->first; e >= 0; e = entries_[e].next) {
        const Entry& entry = entries_[e];
        bool subset = true;
        for (uint32_t k = 0; k < entry.length && subset; ++k) {
          subset = is_taken[pool_[entry.offset + k]];
        }
        if (subset) return false;
      }
    } else {
      *slot = Slot{set1, set2, value, -1};
      ++used_;
    }
    entries_.push_back(Entry{static_cast<uint32_t>(pool_.size()),
                             static_cast<uint32_t>(taken.size()), slot->first});
    slot->first = static_cast<int>(entries_.size() - 1);
    pool_.insert(pool_.end(), taken.begin(), taken.end());
    return true;
  }
  size_t size() const { return entries_.size(); }

 private:
  struct Slot {
    uint64_t set1 = 0;
    uint64_t set2 = 0;
    int32_t value = -1;  // -1: empty
    int32_t first = -1;  // entries_ of this (set, value), newest first
  };
  struct Entry {
    uint32_t offset;  // the taken kUnknown operations: pool_[offset, offset + length)
    uint32_t length;
    int32_t next;
  };

  Slot* Find(uint64_t set1, uint64_t set2, int value) {
    const size_t mask = slots_.size() - 1;
    size_t i = (set1 ^ (static_cast<uint64_t>(value) * 0x9E3779B97F4A7C15ull)) & mask;
    while (slots_[i].value >= 0) {
      const Slot& s = slots_[i];
      if (s.set1 == set1 && s.set2 == set2 && s.value == value) break;
      i = (i + 1) & mask;
    }
    return &slots_[i];
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.value >= 0) *Find(s.set1, s.set2, s.value) = s;
    }
  }

  std::vector<Slot> slots_;
  size_t used_ = 0;
  std::vector<Entry> entries_;
  std::vector<int> pool_;
};

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_LINEARIZABILITY_CACHE_H_
