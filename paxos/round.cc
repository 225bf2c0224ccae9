#include "paxos/round.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace chorus {
namespace paxos {

namespace {

template <typename T>
void AppendAll(std::vector<T>* to, std::vector<T>* from) {
  for (T& x : *from) to->push_back(std::move(x));
}

// Last wins: the latest state of a key is the one to persist. With
// `keep_first` (the test mutation) the entry already there stays instead.
template <typename Key>
void Put(std::map<Key, std::string>* map, const Key& key, std::string* value, bool keep_first) {
  if (keep_first && map->count(key) != 0) return;
  (*map)[key] = std::move(*value);
}

}  // namespace

void Round::Add(Outputs* step) {
  steps_++;
  const bool keep_first = mutation_ == TestMutation::kRoundKeepsFirst;
  LogWriteBatch& p = merged_.persist;
  // The trim first: it removes what earlier steps merged below it, never
  // this step's own records (the storage applies delete_below first). A trim
  // not above the round's still removes them: one by one, it would have.
  if (step->persist.delete_below > 0) {
    const uint64_t below = step->persist.delete_below;
    records_.erase(records_.begin(), records_.lower_bound(below));
    p.delete_below = std::max(p.delete_below, below);
  }
  for (auto& rec : step->persist.records) Put(&records_, rec.first, &rec.second, keep_first);
  for (auto& var : step->persist.variables) Put(&variables_, var.first, &var.second, keep_first);
  merged_.sync = merged_.sync || step->sync;
  AppendAll(&merged_.messages, &step->messages);
  AppendAll(&merged_.catchup_reads, &step->catchup_reads);
  AppendAll(&merged_.chosen, &step->chosen);
  AppendAll(&merged_.finished, &step->finished);
  AppendAll(&merged_.barriers, &step->barriers);
  AppendAll(&merged_.checkpoint_needed, &step->checkpoint_needed);
  if (step->master_changed) {
    merged_.master_changed = true;
    merged_.master = step->master;
  }
  if (step->membership_changed) {
    merged_.membership_changed = true;
    merged_.membership = std::move(step->membership);
  }
  // Timers: a cancel drops the start of this round it names; a start
  // supersedes this round's earlier start of its kind. What is left runs as
  // cancels then starts, like a single step.
  std::vector<TimerStart>& starts = merged_.timers;
  for (const TimerId& c : step->cancel_timers) {
    starts.erase(std::remove_if(starts.begin(), starts.end(),
                                [&c](const TimerStart& t) { return t.id == c; }),
                 starts.end());
    merged_.cancel_timers.push_back(c);
  }
  for (const TimerStart& t : step->timers) {
    starts.erase(std::remove_if(starts.begin(), starts.end(),
                                [&t](const TimerStart& o) { return o.id.kind == t.id.kind; }),
                 starts.end());
    starts.push_back(t);
  }
  AppendAll(&merged_.errors, &step->errors);
  step->Clear();
}

bool Round::empty() const {
  const Outputs& m = merged_;
  return records_.empty() && variables_.empty() && m.persist.delete_below == 0 &&
         m.messages.empty() && m.catchup_reads.empty() && m.chosen.empty() &&
         m.finished.empty() && m.barriers.empty() && m.checkpoint_needed.empty() &&
         !m.master_changed && !m.membership_changed && m.timers.empty() && m.cancel_timers.empty() && m.errors.empty();
}

void Round::Take(Outputs* round) {
  *round = std::move(merged_);
  round->persist.records.clear();
  round->persist.variables.clear();
  for (auto& rec : records_) round->persist.records.emplace_back(rec.first, std::move(rec.second));
  for (auto& var : variables_) {
    round->persist.variables.emplace_back(var.first, std::move(var.second));
  }
  // One step's promise makes the whole round's requests wait for the
  // persist: a later step's ACCEPT may be of the ballot it promised.
  if (!round->persist.variables.empty() || round->persist.delete_below != 0) {
    HoldEarlyMessages(round);
  }
  Clear();
}

void Round::Clear() {
  records_.clear();
  variables_.clear();
  merged_.Clear();
  steps_ = 0;
}

}  // namespace paxos
}  // namespace chorus
