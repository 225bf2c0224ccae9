// MemLogStorage: an in-memory LogStorage for unit tests and the simulation.
// It models a disk: a synced write is durable; an unsynced write is visible
// to reads but lost by Crash(). Corrupt*() make a stored record or variable
// fail its "checksum" (Get returns Corruption), or replace its bytes.
#ifndef CHORUS_UNITTEST_SUPPORT_MEM_LOG_STORAGE_H_
#define CHORUS_UNITTEST_SUPPORT_MEM_LOG_STORAGE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chorus/log_storage.h"

namespace chorus {
namespace testing {

class MemLogStorage : public LogStorage {
 public:
  Status Write(const LogWriteBatch& batch, bool sync) override {
    writes_++;
    if (sync) {
      for (const auto& b : unsynced_) Apply(b, &durable_);
      unsynced_.clear();
      Apply(batch, &durable_);
      syncs_++;
    } else {
      unsynced_.push_back(batch);
    }
    return Status::OK();
  }

  Status Get(uint64_t instance, std::string* record) override {
    const State& s = View();
    if (s.bad_records.count(instance)) return Status::Corruption("record checksum mismatch");
    auto it = s.records.find(instance);
    if (it == s.records.end()) return Status::NotFound("no record");
    *record = it->second;
    return Status::OK();
  }

  Status GetMaxInstanceId(uint64_t* instance) override {
    const State& s = View();
    if (s.records.empty()) return Status::NotFound("empty log");
    *instance = s.records.rbegin()->first;
    return Status::OK();
  }

  Status GetMinInstanceId(uint64_t* instance) override {
    const State& s = View();
    if (s.records.empty()) return Status::NotFound("empty log");
    *instance = s.records.begin()->first;
    return Status::OK();
  }

  Status GetVariable(const std::string& name, std::string* value) override {
    const State& s = View();
    if (s.bad_variables.count(name)) return Status::Corruption("variable checksum mismatch");
    auto it = s.variables.find(name);
    if (it == s.variables.end()) return Status::NotFound("no variable");
    *value = it->second;
    return Status::OK();
  }

  // Drops every write that was not synced (a process or machine crash).
  void Crash() { unsynced_.clear(); }

  void CorruptRecord(uint64_t instance) { durable_.bad_records.insert(instance); }
  void CorruptVariable(const std::string& name) { durable_.bad_variables.insert(name); }
  void OverwriteRecord(uint64_t instance, const std::string& bytes) {
    durable_.records[instance] = bytes;
  }

  uint64_t writes() const { return writes_; }
  uint64_t syncs() const { return syncs_; }
  size_t unsynced_batches() const { return unsynced_.size(); }

 private:
  struct State {
    std::map<uint64_t, std::string> records;
    std::map<std::string, std::string> variables;
    std::set<uint64_t> bad_records;
    std::set<std::string> bad_variables;
  };

  static void Apply(const LogWriteBatch& batch, State* s) {
    if (batch.delete_below > 0) {
      s->records.erase(s->records.begin(), s->records.lower_bound(batch.delete_below));
    }
    for (const auto& r : batch.records) {
      s->records[r.first] = r.second;
      s->bad_records.erase(r.first);
    }
    for (const auto& v : batch.variables) {
      s->variables[v.first] = v.second;
      s->bad_variables.erase(v.first);
    }
  }

  const State& View() {
    if (unsynced_.empty()) return durable_;
    merged_ = durable_;
    for (const auto& b : unsynced_) Apply(b, &merged_);
    return merged_;
  }

  State durable_;
  State merged_;
  std::vector<LogWriteBatch> unsynced_;
  uint64_t writes_ = 0;
  uint64_t syncs_ = 0;
};

}  // namespace testing

// The simulation and the paxos tests know it by this name.
namespace sim {
using testing::MemLogStorage;
}  // namespace sim

}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_MEM_LOG_STORAGE_H_
