// The model of the crash-consistency tests (crash_consistency_test.cc): a
// random write load on a LogStorage that remembers every batch it tried,
// and the check of what a log holds after a crash against it.
//
// Every value written is unique ("w<write>#<key>#" and padding), so a value
// read back names the one write that stored it. After a crash the log must
// hold the effect of some set S of whole writes (a batch is atomic) that
// contains every write acknowledged as synced. S is pinned down exactly:
// each value read puts its write in S and rules out every later write to its
// key, an absent key rules out every write to it, and trims are tracked by
// the variable "trim" that only trim batches set (trims only rise and no
// record is ever written below the trim point, as the core behaves). The
// check fails iff a write must be both in S and out of it, a value read is
// one no write stored, or a trimmed record shows.
#ifndef CHORUS_UNITTEST_NODE_CRASH_LOG_MODEL_H_
#define CHORUS_UNITTEST_NODE_CRASH_LOG_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "chorus/log_storage.h"

namespace chorus {
namespace testing {

class CrashLogModel {
 public:
  // One write the workload tried.
  struct Attempt {
    uint64_t id = 0;  // unique over the whole test (every life)
    LogWriteBatch batch;
    bool sync = false;
    bool acknowledged = false;  // Write returned OK
  };

  explicit CrashLogModel(uint64_t seed) : rng_(seed) {}

  // A random batch: 0-4 records at or above the trim point, 0-2 variables,
  // sometimes a trim (which also sets "trim") unless `trims` is false;
  // never empty. `big` allows records of a few KiB (batches that span
  // leveldb's 32 KiB blocks).
  Attempt NextAttempt(bool big, bool trims = true) {
    Attempt a;
    a.id = ++next_id_;
    a.sync = Chance(70);
    const std::string tag = "w" + std::to_string(a.id) + "#";
    if (trims && Chance(6)) {
      trim_point_ += 1 + Below(6);
      a.batch.delete_below = trim_point_;
      a.batch.variables.emplace_back(kTrimVariable,
                                     tag + "trim#" + std::to_string(trim_point_));
    }
    std::set<uint64_t> ids;
    const uint64_t records = Below(5);
    for (uint64_t i = 0; i < records; ++i) ids.insert(trim_point_ + Below(kRecordSpan));
    for (uint64_t id : ids) {
      const size_t pad = big && Chance(10) ? 2000 + Below(6000) : Below(300);
      a.batch.records.emplace_back(id, tag + "r" + std::to_string(id) + "#" + Padding(pad));
      max_record_ = std::max(max_record_, id);
      any_record_ = true;
    }
    std::set<int> names;
    const uint64_t vars = Below(3);
    for (uint64_t i = 0; i < vars; ++i) names.insert(static_cast<int>(Below(4)));
    for (int n : names) {
      const std::string name = "v" + std::to_string(n);
      a.batch.variables.emplace_back(name, tag + name + "#" + Padding(Below(100)));
    }
    if (a.batch.empty()) {
      a.batch.variables.emplace_back("v0", tag + "v0#");
    }
    return a;
  }

  // Records the outcome of a tried write.
  void Record(const Attempt& attempt) { attempts_.push_back(attempt); }

  // Checks `log` (reopened after a crash) against the writes recorded since
  // the last check, and makes what it holds the baseline of the next life.
  // Returns "" when consistent, else what is wrong. *keys_checked counts the
  // keys compared.
  std::string CheckAndRebase(LogStorage* log, uint64_t* keys_checked);

  const std::vector<Attempt>& attempts() const { return attempts_; }

  static constexpr const char* kTrimVariable = "trim";

 private:
  static constexpr uint64_t kRecordSpan = 48;

  bool Chance(int percent) { return Below(100) < static_cast<uint64_t>(percent); }
  uint64_t Below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  std::string Padding(size_t n) {
    std::string s(n, 'x');
    for (char& c : s) c = static_cast<char>('a' + Below(26));
    return s;
  }

  std::mt19937_64 rng_;
  uint64_t next_id_ = 0;
  uint64_t trim_point_ = 0;  // the highest delete_below tried
  uint64_t max_record_ = 0;
  bool any_record_ = false;
  std::vector<Attempt> attempts_;  // since the last check
  // What the log held at the last check (durable: recovered and reopened).
  std::map<std::string, std::string> baseline_;  // key ("r<id>" or the variable name) -> value
};

namespace crash_model_internal {

// The write id a value names ("w<id>#..."), or 0 when it names none.
inline uint64_t WriterOf(const std::string& value) {
  if (value.size() < 3 || value[0] != 'w') return 0;
  uint64_t id = 0;
  size_t i = 1;
  for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) id = id * 10 + (value[i] - '0');
  return i < value.size() && value[i] == '#' ? id : 0;
}

inline std::string RecordName(uint64_t id) { return "r" + std::to_string(id); }

}  // namespace crash_model_internal

inline std::string CrashLogModel::CheckAndRebase(LogStorage* log, uint64_t* keys_checked) {
  using crash_model_internal::RecordName;
  using crash_model_internal::WriterOf;
  std::map<uint64_t, const Attempt*> by_id;
  // key -> the writes that stored it, oldest first: (write id, value)
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> writes;
  for (const Attempt& a : attempts_) {
    by_id[a.id] = &a;
    for (const auto& r : a.batch.records) writes[RecordName(r.first)].emplace_back(a.id, r.second);
    for (const auto& v : a.batch.variables) writes[v.first].emplace_back(a.id, v.second);
  }

  // Read everything back. Absent keys are not in `observed`.
  std::map<std::string, std::string> observed;
  std::set<std::string> keys = {"v0", "v1", "v2", "v3", kTrimVariable};
  for (const auto& b : baseline_) {
    if (b.first[0] != 'r') keys.insert(b.first);
  }
  for (const std::string& name : keys) {
    std::string value;
    Status s = log->GetVariable(name, &value);
    if (s.ok()) {
      observed[name] = value;
    } else if (!s.IsNotFound()) {
      return "variable " + name + ": " + s.ToString();
    }
  }
  uint64_t trimmed = 0;  // the trim point the log holds
  auto trim = observed.find(kTrimVariable);
  if (trim != observed.end()) {
    const size_t at = trim->second.find("#trim#");
    if (at == std::string::npos) return "variable trim holds '" + trim->second + "'";
    trimmed = std::stoull(trim->second.substr(at + 6));
  }
  bool any_present = false;
  uint64_t min_present = 0, max_present = 0;
  for (uint64_t id = 0; any_record_ && id <= max_record_; ++id) {
    std::string value;
    Status s = log->Get(id, &value);
    if (s.IsNotFound()) {
      keys.insert(RecordName(id));
      continue;
    }
    if (!s.ok()) return "record " + std::to_string(id) + ": " + s.ToString();
    if (id < trimmed) return "record " + std::to_string(id) + " shows below trim point " +
                             std::to_string(trimmed);
    observed[RecordName(id)] = value;
    keys.insert(RecordName(id));
    if (!any_present) min_present = id;
    any_present = true;
    max_present = id;
  }

  std::map<uint64_t, std::string> must_in, must_out;  // write id -> why
  for (const std::string& key : keys) {
    const bool is_record = key[0] == 'r';
    if (is_record && std::stoull(key.substr(1)) < trimmed) continue;  // hidden by the trim
    (*keys_checked)++;
    const auto& ws = writes[key];
    auto seen = observed.find(key);
    auto base = baseline_.find(key);
    if (seen == observed.end()) {
      if (base != baseline_.end()) return key + " was durable before this life and is gone";
      for (const auto& w : ws) must_out[w.first] = key + " is absent";
      continue;
    }
    const uint64_t writer = WriterOf(seen->second);
    if (by_id.count(writer) == 0) {
      if (base == baseline_.end() || base->second != seen->second) {
        return key + " holds a value no write stored: '" + seen->second.substr(0, 40) + "'";
      }
      for (const auto& w : ws) must_out[w.first] = key + " holds its value of an earlier life";
      continue;
    }
    size_t at = ws.size();
    for (size_t i = 0; i < ws.size(); ++i) {
      if (ws[i].first == writer) at = i;
    }
    if (at == ws.size() || ws[at].second != seen->second) {
      return key + " holds a value write " + std::to_string(writer) + " did not store there";
    }
    must_in[writer] = key + " holds its value";
    for (size_t i = at + 1; i < ws.size(); ++i) {
      must_out[ws[i].first] = key + " holds the value of write " + std::to_string(writer);
    }
  }
  for (const Attempt& a : attempts_) {
    if (a.sync && a.acknowledged) must_in[a.id] = "it was acknowledged as synced";
  }
  for (const auto& in : must_in) {
    auto out = must_out.find(in.first);
    if (out == must_out.end()) continue;
    const Attempt& a = *by_id[in.first];
    return "write " + std::to_string(a.id) + " (" + (a.sync ? "sync" : "no sync") + ", " +
           (a.acknowledged ? "acknowledged" : "failed") + ") is half there or lost: " +
           in.second + ", but " + out->second;
  }
  // A prefix: the log keeps the writes up to some point and none after it
  // (synced or not: leveldb's write-ahead log is one sequence, and chorus
  // syncs a log file before it moves on to the next).
  if (!must_in.empty() && !must_out.empty() && must_out.begin()->first < must_in.rbegin()->first) {
    return "not a prefix of the writes: write " + std::to_string(must_out.begin()->first) +
           " is gone (" + must_out.begin()->second + ") but the later write " +
           std::to_string(must_in.rbegin()->first) + " is there (" + must_in.rbegin()->second + ")";
  }

  uint64_t lo = 0, hi = 0;
  Status smin = log->GetMinInstanceId(&lo);
  Status smax = log->GetMaxInstanceId(&hi);
  if (any_present != smin.ok() || any_present != smax.ok() ||
      (any_present && (lo != min_present || hi != max_present))) {
    return "min/max instance (" + smin.ToString() + " " + std::to_string(lo) + ", " +
           smax.ToString() + " " + std::to_string(hi) + ") disagree with the records read (" +
           std::to_string(min_present) + ".." + std::to_string(max_present) + ")";
  }

  baseline_.clear();
  for (const auto& o : observed) {
    if (o.first[0] == 'r' && std::stoull(o.first.substr(1)) < trimmed) continue;
    baseline_.insert(o);
  }
  attempts_.clear();
  return "";
}

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_CRASH_LOG_MODEL_H_
