#include "linearizability_search.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "linearizability_cache.h"

namespace chorus {
namespace nemesis {
namespace {

constexpr int64_t kForever = INT64_MAX;

// One operation as the search sees it: values interned (0 = absent), a
// kUnknown one open until kForever.
struct SearchOp {
  OpKind kind = OpKind::kRead;
  bool known = true;  // kOk (false: kUnknown, which may never take effect)
  int value = 0;
  int expected = 0;
  int output = 0;
  bool swapped = false;
  int64_t invoke = 0;
  int64_t complete = 0;
  // Zobrist keys: a set of linearized kOk operations is named by the XOR
  // of its members' keys (128 bits: two sets share a name with probability
  // 2^-128, far below anything a run can meet).
  uint64_t key1 = 0;
  uint64_t key2 = 0;
};

uint64_t SplitMix64(uint64_t* x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Which kUnknown writes and CAS can be dropped without changing the answer.
// Such an operation w (writing v) can be dropped when nothing that might
// come after it in an order could tell whether it took effect: no kOk read
// of v, no CAS expecting v (kOk swapped, or kUnknown), and no kOk CAS that
// did not swap (it saw "not the value before w") expecting a value that
// some operation writes or absent, among the operations that complete
// after w is invoked. Proof: take an order with w in it and delete w; until
// the next write the value is the one before w instead of v; in that
// stretch there is no read (it would read v), no swapped CAS (it would
// expect v), no unswapped kOk CAS that could now see its expected value; a
// kUnknown CAS there that did not swap moves to "never". The rest is
// unchanged. A kUnknown CAS whose new value is its expected one changes
// nothing and is always dropped.
std::vector<const Operation*> DropUnobservable(const std::vector<const Operation*>& ops,
                                               size_t* dropped) {
  std::map<std::string, int64_t> last_observer;  // value -> latest completion observing it
  int64_t last_unswapped = INT64_MIN;
  std::set<std::string> written;
  for (const Operation* op : ops) {
    if (op->kind != OpKind::kRead) written.insert(op->value);
  }
  for (const Operation* op : ops) {
    const int64_t complete = op->outcome == Outcome::kOk ? op->complete_ns : kForever;
    auto observe = [&last_observer, complete](const std::string& v) {
      auto it = last_observer.emplace(v, complete).first;
      it->second = std::max(it->second, complete);
    };
    const bool ok = op->outcome == Outcome::kOk;
    if (op->kind == OpKind::kRead && ok) observe(op->output);
    if (op->kind == OpKind::kCas) {
      if (ok && !op->cas_swapped) {
        if (!op->expected.empty() && written.count(op->expected) == 0) continue;
        last_unswapped = std::max(last_unswapped, complete);
      } else if (ok || op->expected != op->value) {
        observe(op->expected);
      }
    }
  }
  std::vector<const Operation*> kept;
  for (const Operation* op : ops) {
    bool drop = false;
    if (op->outcome == Outcome::kUnknown && op->kind != OpKind::kRead) {
      auto it = last_observer.find(op->value);
      const bool observed = it != last_observer.end() && it->second >= op->invoke_ns;
      drop = (op->kind == OpKind::kCas && op->expected == op->value) ||
             (!observed && last_unswapped < op->invoke_ns);
    }
    if (drop) {
      ++*dropped;
    } else {
      kept.push_back(op);
    }
  }
  return kept;
}

// Wing & Gong's search with Lowe's cache. The kOk operations are a list of
// call and return events in time order; an operation can take effect next
// when its call comes before the first return still in the list (no
// operation left over completed before it was invoked). Taking it lifts
// its two events out of the list (dancing links: undone in reverse order
// when the search backs up). The history is linearizable once every kOk
// operation is in the order: a kUnknown one left over never took effect.
//
// kUnknown operations have no return, so they stay candidates for ever
// and could multiply the states by every subset of them. They are tried
// only after the kOk candidates of a state failed, and only those that can
// help the next step: taking a kUnknown op u (which sets value v) now is
// useful only if some candidate needs v right after it: a read of v, a CAS
// expecting v, a CAS that did not swap expecting the present value, or a
// kUnknown CAS expecting v. Any other op k after u could go first (it is a
// candidate already and u stays one) or overwrites u (a write): a
// successful order can always be rearranged so that each kUnknown op is
// followed by one that needs it, or dropped.
class Search {
 public:
  Search(std::vector<SearchOp> ops, std::chrono::steady_clock::time_point deadline,
         size_t max_cache_entries, KeySearchStats* stats)
      : ops_(std::move(ops)), deadline_(deadline), max_cache_(max_cache_entries), stats_(stats) {
    Build();
  }

  KeyVerdict Run();
  size_t explored() const { return cache_.size(); }

 private:
  struct Event {
    int op = 0;
    bool call = true;
    int64_t time = 0;
    int partner = 0;  // the op's other event
  };
  struct Choice {
    bool unknown = false;  // a kUnknown op (else a kOk op's call event)
    int at = 0;            // the call event, or the index in the state's candidates
    int value_before = 0;
  };

  void Build();
  // The value after `op` at `value`, or false when the model refuses it.
  // A kUnknown op that would change nothing is refused: leaving it for
  // later can do all that taking it now can.
  bool Apply(const SearchOp& op, int value, int* after) const;
  // Takes `op` at the current value if the model accepts it and the result
  // was not explored before.
  bool Take(int op);
  void Untake(int op, int value_before);
  // The kUnknown ops worth trying at the present state (see the class
  // comment), given the first return still in the list.
  void UsefulUnknown(int first_return, std::vector<int>* out);
  void Unlink(int i);
  void Relink(int i);

  std::vector<SearchOp> ops_;
  const std::chrono::steady_clock::time_point deadline_;
  const size_t max_cache_;
  KeySearchStats* const stats_;

  std::vector<Event> events_;
  std::vector<int> next_, prev_;  // events; head: events_.size()
  size_t known_ops_ = 0;
  std::vector<int> unknown_;      // kUnknown ops by invoke
  std::vector<int> unknown_cas_;  // the kUnknown CAS among them
  std::vector<std::vector<int>> producers_;  // value -> kUnknown ops setting it, by invoke

  StateCache cache_;
  std::vector<int> taken_;      // kUnknown ops taken, in order
  std::vector<bool> is_taken_;  // by op
  int value_ = 0;
  uint64_t set1_ = 0, set2_ = 0;
};

void Search::Build() {
  is_taken_.assign(ops_.size(), false);
  int values = 1;
  for (const SearchOp& op : ops_) {
    values = std::max({values, op.value + 1, op.expected + 1, op.output + 1});
  }
  producers_.resize(values);
  for (size_t i = 0; i < ops_.size(); ++i) {
    const SearchOp& op = ops_[i];
    if (!op.known) {
      unknown_.push_back(static_cast<int>(i));
      continue;
    }
    ++known_ops_;
    events_.push_back(Event{static_cast<int>(i), true, op.invoke, 0});
    events_.push_back(Event{static_cast<int>(i), false, op.complete, 0});
  }
  // Time order; at equal times calls first (the two overlap).
  std::sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.call != b.call) return a.call;
    return a.op < b.op;
  });
  std::vector<int> call_of(ops_.size(), -1);
  for (size_t e = 0; e < events_.size(); ++e) {
    if (events_[e].call) call_of[events_[e].op] = static_cast<int>(e);
  }
  for (size_t e = 0; e < events_.size(); ++e) {
    if (events_[e].call) continue;
    const int c = call_of[events_[e].op];
    events_[e].partner = c;
    events_[c].partner = static_cast<int>(e);
  }
  const int n = static_cast<int>(events_.size());
  next_.assign(n + 1, -1);
  prev_.assign(n + 1, n);
  for (int e = 0; e < n; ++e) {
    prev_[e] = e == 0 ? n : e - 1;
    next_[e] = e + 1 < n ? e + 1 : -1;
  }
  next_[n] = n > 0 ? 0 : -1;

  std::sort(unknown_.begin(), unknown_.end(), [this](int a, int b) {
    return ops_[a].invoke != ops_[b].invoke ? ops_[a].invoke < ops_[b].invoke : a < b;
  });
  for (int u : unknown_) {
    producers_[ops_[u].value].push_back(u);
    if (ops_[u].kind == OpKind::kCas) unknown_cas_.push_back(u);
  }
}

bool Search::Apply(const SearchOp& op, int value, int* after) const {
  switch (op.kind) {
    case OpKind::kRead:
      *after = value;
      return op.output == value;
    case OpKind::kWrite:
      *after = op.value;
      return op.known || op.value != value;
    case OpKind::kCas:
      if (!op.known) {
        *after = op.value;
        return value == op.expected && op.value != value;
      }
      *after = op.swapped ? op.value : value;
      return op.swapped == (value == op.expected);
  }
  return false;
}

bool Search::Take(int op) {
  ++stats_->steps;
  int after = 0;
  if (!Apply(ops_[op], value_, &after)) return false;
  const SearchOp& o = ops_[op];
  if (o.known) {
    if (!cache_.Visit(set1_ ^ o.key1, set2_ ^ o.key2, after, taken_, is_taken_)) return false;
    set1_ ^= o.key1;
    set2_ ^= o.key2;
  } else {
    taken_.push_back(op);
    is_taken_[op] = true;
    if (!cache_.Visit(set1_, set2_, after, taken_, is_taken_)) {
      taken_.pop_back();
      is_taken_[op] = false;
      return false;
    }
  }
  value_ = after;
  return true;
}

void Search::Untake(int op, int value_before) {
  value_ = value_before;
  if (ops_[op].known) {
    set1_ ^= ops_[op].key1;
    set2_ ^= ops_[op].key2;
  } else {
    taken_.pop_back();
    is_taken_[op] = false;
  }
}

void Search::UsefulUnknown(int first_return, std::vector<int>* out) {
  out->clear();
  if (unknown_.empty()) return;
  const int64_t bound = events_[first_return].time;
  std::vector<int> needed;
  bool any_change = false;
  for (int e = next_[static_cast<int>(events_.size())]; e != first_return; e = next_[e]) {
    const SearchOp& k = ops_[events_[e].op];
    if (k.kind == OpKind::kRead) {
      needed.push_back(k.output);
    } else if (k.kind == OpKind::kCas) {
      if (k.swapped) {
        needed.push_back(k.expected);
      } else if (k.expected == value_) {
        any_change = true;
      }
    }
  }
  for (int u : unknown_cas_) {
    if (ops_[u].invoke > bound) break;
    if (!is_taken_[u]) needed.push_back(ops_[u].expected);
  }
  if (any_change) {
    for (int u : unknown_) {
      if (ops_[u].invoke > bound) break;
      if (!is_taken_[u]) out->push_back(u);
    }
    return;
  }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  for (int v : needed) {
    if (v == value_) continue;  // nothing to change
    for (int u : producers_[v]) {
      if (ops_[u].invoke > bound) break;
      if (!is_taken_[u]) out->push_back(u);
    }
  }
}

void Search::Unlink(int i) {
  next_[prev_[i]] = next_[i];
  if (next_[i] >= 0) prev_[next_[i]] = prev_[i];
}

void Search::Relink(int i) {
  next_[prev_[i]] = i;
  if (next_[i] >= 0) prev_[next_[i]] = i;
}

KeyVerdict Search::Run() {
  const int head = static_cast<int>(events_.size());
  std::vector<Choice> stack;
  // The kUnknown candidates of each state whose kOk candidates are spent,
  // innermost last (a state's list goes when all of it was tried).
  std::vector<std::vector<int>> useful;
  std::vector<std::vector<int>> spare;  // their storage, reused
  size_t taken_known = 0;
  bool in_unknown = false;  // trying useful.back()
  int at = next_[head];     // the event, or the index in useful.back(), to try next
  size_t until_clock = 0;
  while (true) {
    if (taken_known == known_ops_) return KeyVerdict::kLinearizable;
    if (++until_clock == 4096) {
      until_clock = 0;
      if (std::chrono::steady_clock::now() >= deadline_) return KeyVerdict::kGaveUp;
      if (cache_.size() > max_cache_) return KeyVerdict::kGaveUp;
    }
    if (!in_unknown) {
      // Some kOk op is left, so its return is in the list: `at` stays valid.
      const Event& e = events_[at];
      if (!e.call) {
        in_unknown = true;
        if (spare.empty()) spare.emplace_back();
        useful.push_back(std::move(spare.back()));
        spare.pop_back();
        UsefulUnknown(at, &useful.back());
        at = 0;
        continue;
      }
      const int value_before = value_;
      if (Take(e.op)) {
        stack.push_back(Choice{false, at, value_before});
        Unlink(at);
        Unlink(e.partner);
        ++taken_known;
        at = next_[head];
      } else {
        at = next_[at];
      }
      continue;
    }
    const std::vector<int>& candidates = useful.back();
    if (at < static_cast<int>(candidates.size())) {
      const int value_before = value_;
      // A kUnknown write right after another kUnknown op (no kOk op
      // between) overwrites what that one did: the state it leads to is
      // dominated by taking the write alone, which is tried from the state
      // before.
      const bool overwrite = ops_[candidates[at]].kind == OpKind::kWrite && !stack.empty() &&
                             stack.back().unknown;
      if (!overwrite && Take(candidates[at])) {
        stack.push_back(Choice{true, at, value_before});
        in_unknown = false;
        at = next_[head];
      } else {
        ++at;
      }
      continue;
    }
    // Nothing left to try here: undo the last choice and try what follows it.
    spare.push_back(std::move(useful.back()));
    useful.pop_back();
    if (stack.empty()) return KeyVerdict::kViolation;
    const Choice c = stack.back();
    stack.pop_back();
    if (c.unknown) {
      Untake(useful.back()[c.at], c.value_before);
      in_unknown = true;
      at = c.at + 1;
    } else {
      Untake(events_[c.at].op, c.value_before);
      Relink(events_[c.at].partner);
      Relink(c.at);
      --taken_known;
      in_unknown = false;
      at = next_[c.at];
    }
  }
}

}  // namespace

KeyVerdict SearchKey(const std::vector<const Operation*>& ops,
                     std::chrono::steady_clock::time_point deadline, size_t max_cache_entries,
                     KeySearchStats* stats) {
  const std::vector<const Operation*> kept = DropUnobservable(ops, &stats->dropped_unknown);
  std::map<std::string, int> ids{{"", 0}};
  auto intern = [&ids](const std::string& v) {
    return ids.emplace(v, static_cast<int>(ids.size())).first->second;
  };
  std::vector<SearchOp> search_ops;
  search_ops.reserve(kept.size());
  uint64_t seed = 0x6C696E6368656B21ull;
  for (const Operation* op : kept) {
    SearchOp s;
    s.kind = op->kind;
    s.known = op->outcome == Outcome::kOk;
    s.value = intern(op->value);
    s.expected = intern(op->expected);
    s.output = intern(op->output);
    s.swapped = op->cas_swapped;
    s.invoke = op->invoke_ns;
    s.complete = s.known ? op->complete_ns : kForever;
    s.key1 = SplitMix64(&seed);
    s.key2 = SplitMix64(&seed);
    search_ops.push_back(s);
  }
  Search search(std::move(search_ops), deadline, max_cache_entries, stats);
  const KeyVerdict verdict = search.Run();
  stats->cache_entries += search.explored();
  return verdict;
}

}  // namespace nemesis
}  // namespace chorus
