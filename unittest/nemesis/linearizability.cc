#include "linearizability.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

#include "linearizability_search.h"

namespace chorus {
namespace nemesis {
namespace {

using Clock = std::chrono::steady_clock;
using OpList = std::vector<const Operation*>;

// Whether the operation, when it takes effect, may leave a new value.
bool ChangesValue(const Operation& op) {
  if (op.kind == OpKind::kWrite) return true;
  if (op.kind != OpKind::kCas) return false;
  return op.outcome == Outcome::kUnknown ? op.expected != op.value : op.cas_swapped;
}

// Evidence-preserving deletion (linearizability.h): the operations that go
// when `seeds` go, among those `alive`.
std::vector<bool> DeletionClosure(const OpList& ops, const std::vector<bool>& alive,
                                  const std::vector<size_t>& seeds) {
  std::vector<bool> gone(ops.size(), false);
  std::vector<size_t> queue = seeds;
  while (!queue.empty()) {
    const size_t i = queue.back();
    queue.pop_back();
    if (gone[i] || !alive[i]) continue;
    gone[i] = true;
    const Operation& w = *ops[i];
    if (!ChangesValue(w)) continue;
    const int64_t w_complete = w.outcome == Outcome::kOk ? w.complete_ns : INT64_MAX;
    // Whether the value before w may be `v`: absent, or written by an
    // operation invoked before w completed.
    auto may_precede = [&](const std::string& v) {
      if (v.empty()) return true;
      for (size_t j = 0; j < ops.size(); ++j) {
        if (alive[j] && ChangesValue(*ops[j]) && ops[j]->value == v &&
            ops[j]->invoke_ns <= w_complete) {
          return true;
        }
      }
      return false;
    };
    for (size_t j = 0; j < ops.size(); ++j) {
      if (!alive[j] || gone[j]) continue;
      const Operation& o = *ops[j];
      const bool ok = o.outcome == Outcome::kOk;
      const bool observes =
          (o.kind == OpKind::kRead && o.output == w.value) ||
          (o.kind == OpKind::kCas && (!ok || o.cas_swapped) && o.expected == w.value) ||
          (o.kind == OpKind::kCas && ok && !o.cas_swapped && o.complete_ns >= w.invoke_ns &&
           may_precede(o.expected));
      if (observes) queue.push_back(j);
    }
  }
  return gone;
}

OpList Alive(const OpList& ops, const std::vector<bool>& alive) {
  OpList out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (alive[i]) out.push_back(ops[i]);
  }
  return out;
}

struct Shrinker {
  const OpList& ops;
  Clock::time_point deadline;
  size_t max_states;
  std::vector<bool> alive;
  bool out_of_time = false;

  // Tries deleting the closure of ops [begin, end) (in invoke order);
  // keeps the deletion when the rest still fails.
  bool TryDelete(const std::vector<size_t>& order, size_t begin, size_t end) {
    std::vector<size_t> seeds;
    for (size_t k = begin; k < end && k < order.size(); ++k) {
      if (alive[order[k]]) seeds.push_back(order[k]);
    }
    if (seeds.empty()) return false;
    const std::vector<bool> gone = DeletionClosure(ops, alive, seeds);
    std::vector<bool> candidate = alive;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (gone[i]) candidate[i] = false;
    }
    KeySearchStats stats;
    const KeyVerdict v = SearchKey(Alive(ops, candidate), deadline, max_states, &stats);
    if (v == KeyVerdict::kGaveUp) out_of_time = true;
    if (v != KeyVerdict::kViolation) return false;
    alive = std::move(candidate);
    return true;
  }

  // Deletes chunks of `chunk` operations, first to last. true if any went.
  bool Pass(const std::vector<size_t>& order, size_t chunk) {
    bool changed = false;
    for (size_t k = 0; k < order.size() && !out_of_time; k += chunk) {
      if (TryDelete(order, k, k + chunk)) changed = true;
    }
    return changed;
  }
};

// Shrinks a failing sub-history; *minimized: it is 1-minimal.
OpList Shrink(const OpList& ops, Clock::time_point deadline, size_t max_states, bool* minimized) {
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&ops](size_t a, size_t b) {
    return ops[a]->invoke_ns < ops[b]->invoke_ns;
  });
  Shrinker s{ops, deadline, max_states, std::vector<bool>(ops.size(), true)};
  // Big chunks first (the part of a long history far from the violation
  // goes in a few tries), then single operations until none can go.
  for (size_t chunk = ops.size() / 2; chunk > 1 && !s.out_of_time; chunk /= 2) s.Pass(order, chunk);
  while (!s.out_of_time && s.Pass(order, 1)) {
  }
  *minimized = !s.out_of_time;
  return Alive(ops, s.alive);
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Quote(const std::string& s) {
  if (s.empty()) return "(absent)";
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      q.push_back('\\');
      q.push_back(static_cast<char>(c));
    } else if (c < ' ' || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      q += hex;
    } else {
      q.push_back(static_cast<char>(c));
    }
  }
  return q + "\"";
}

std::string DescribeOperation(const Operation& op, int64_t origin_ns) {
  std::string what;
  switch (op.kind) {
    case OpKind::kRead:
      what = "read " + Quote(op.key);
      if (op.outcome == Outcome::kOk) what += " -> " + Quote(op.output);
      break;
    case OpKind::kWrite:
      what = "write " + Quote(op.key) + " = " + Quote(op.value);
      break;
    case OpKind::kCas:
      what = "cas " + Quote(op.key) + " " + Quote(op.expected) + " -> " + Quote(op.value);
      if (op.outcome == Outcome::kOk) what += op.cas_swapped ? " swapped" : " not swapped";
      break;
  }
  char times[96];
  const double invoke_ms = static_cast<double>(op.invoke_ns - origin_ns) / 1e6;
  if (op.outcome == Outcome::kUnknown) {
    std::snprintf(times, sizeof(times), "[%.3f ms, open)", invoke_ms);
  } else {
    std::snprintf(times, sizeof(times), "[%.3f ms, %.3f ms]", invoke_ms,
                  static_cast<double>(op.complete_ns - origin_ns) / 1e6);
  }
  return "  " + std::string(times) + " id=" + std::to_string(op.id) +
         " client=" + std::to_string(op.client) + " node=" + std::to_string(op.node) + " " +
         what + " (" + OutcomeName(op.outcome) + ")";
}

// A malformed history: "" when fine.
std::string Malformed(const std::vector<Operation>& history) {
  std::set<uint64_t> ids;
  for (const Operation& op : history) {
    if (!ids.insert(op.id).second) {
      return "operation id " + std::to_string(op.id) + " appears twice";
    }
    if (op.outcome != Outcome::kUnknown && op.complete_ns < op.invoke_ns) {
      return "operation " + std::to_string(op.id) + " completes before it is invoked";
    }
  }
  return "";
}

}  // namespace

CheckResult CheckLinearizable(const std::vector<Operation>& history,
                              const CheckOptions& options) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(std::max(0.0, options.max_seconds)));
  CheckResult result;
  result.error = Malformed(history);
  if (!result.error.empty()) {
    result.seconds = Since(start);
    return result;
  }
  std::map<std::string, OpList> by_key;
  for (const Operation& op : history) {
    if (op.outcome == Outcome::kFailed) continue;
    if (op.outcome == Outcome::kUnknown && op.kind == OpKind::kRead) continue;
    by_key[op.key].push_back(&op);
    ++result.operations;
  }
  result.keys = by_key.size();
  std::string gave_up_on;
  const OpList* failing = nullptr;
  for (const auto& key : by_key) {
    KeySearchStats stats;
    const KeyVerdict v = SearchKey(key.second, deadline, options.max_states, &stats);
    if (v == KeyVerdict::kViolation) {
      result.failing_key = key.first;
      failing = &key.second;
      break;
    }
    if (v == KeyVerdict::kGaveUp && gave_up_on.empty()) {
      gave_up_on = key.first;
      if (Clock::now() >= deadline) break;  // no time left for the other keys
    }
  }
  if (failing != nullptr) {
    result.verdict = CheckResult::Verdict::kViolation;
    OpList minimal = *failing;
    if (options.minimize) minimal = Shrink(*failing, deadline, options.max_states, &result.minimized);
    std::sort(minimal.begin(), minimal.end(), [](const Operation* a, const Operation* b) {
      return a->invoke_ns < b->invoke_ns;
    });
    for (const Operation* op : minimal) result.minimal.push_back(*op);
  } else if (!gave_up_on.empty()) {
    result.verdict = CheckResult::Verdict::kUnknown;
    result.error = "gave up on key " + Quote(gave_up_on) + " (the time limit of " +
                   std::to_string(options.max_seconds) + " s or " +
                   std::to_string(options.max_states) + " explored states was reached)";
  } else {
    result.verdict = CheckResult::Verdict::kLinearizable;
  }
  result.seconds = Since(start);
  return result;
}

std::string CheckResult::Describe() const {
  char counts[160];
  std::snprintf(counts, sizeof(counts), "%zu operations on %zu keys, decided in %.3f s",
                operations, keys, seconds);
  switch (verdict) {
    case Verdict::kLinearizable:
      return std::string("linearizable: ") + counts + "\n";
    case Verdict::kUnknown:
      return std::string("UNKNOWN: ") + error + "; " + counts + "\n";
    case Verdict::kViolation:
      break;
  }
  std::string text = "VIOLATION: key " + Quote(failing_key) + " is not linearizable; " + counts +
                     "\n" + (minimized ? "a 1-minimal" : "a (not fully shrunk)") +
                     " failing sub-history of that key, " + std::to_string(minimal.size()) +
                     " operations (times from its first invoke):\n";
  const int64_t origin = minimal.empty() ? 0 : minimal.front().invoke_ns;
  for (const Operation& op : minimal) text += DescribeOperation(op, origin) + "\n";
  return text;
}

}  // namespace nemesis
}  // namespace chorus
