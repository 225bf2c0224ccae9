#include "linearizability.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "history.h"

namespace chorus {
namespace nemesis {
namespace {

// Builds histories by hand; times in microseconds for readability.
class HistoryBuilder {
 public:
  Operation& Write(int client, const std::string& key, const std::string& value, int64_t invoke,
                   int64_t complete, Outcome outcome = Outcome::kOk) {
    Operation& op = Add(client, OpKind::kWrite, key, invoke, complete, outcome);
    op.value = value;
    return op;
  }
  Operation& Read(int client, const std::string& key, const std::string& output, int64_t invoke,
                  int64_t complete, Outcome outcome = Outcome::kOk) {
    Operation& op = Add(client, OpKind::kRead, key, invoke, complete, outcome);
    op.output = output;
    return op;
  }
  Operation& Cas(int client, const std::string& key, const std::string& expected,
                 const std::string& value, bool swapped, int64_t invoke, int64_t complete,
                 Outcome outcome = Outcome::kOk) {
    Operation& op = Add(client, OpKind::kCas, key, invoke, complete, outcome);
    op.expected = expected;
    op.value = value;
    op.cas_swapped = swapped;
    return op;
  }
  const std::vector<Operation>& ops() const { return ops_; }

 private:
  Operation& Add(int client, OpKind kind, const std::string& key, int64_t invoke, int64_t complete,
                 Outcome outcome) {
    Operation op;
    op.id = ops_.size() + 1;
    op.client = client;
    op.kind = kind;
    op.key = key;
    op.outcome = outcome;
    op.invoke_ns = invoke * 1000;
    op.complete_ns = complete * 1000;
    op.node = client % 3 + 1;
    ops_.push_back(op);
    return ops_.back();
  }
  std::vector<Operation> ops_;
};

CheckResult Check(const std::vector<Operation>& history) {
  return CheckLinearizable(history, CheckOptions());
}

bool HasId(const std::vector<Operation>& ops, uint64_t id) {
  return std::any_of(ops.begin(), ops.end(), [id](const Operation& op) { return op.id == id; });
}

// A violation on `key` whose minimal sub-history has at most `max_ops`
// operations, includes `must_have`, and fails again when checked alone.
void ExpectViolation(const std::vector<Operation>& history, const std::string& key,
                     size_t max_ops, const std::vector<uint64_t>& must_have) {
  const CheckResult r = Check(history);
  ASSERT_EQ(r.verdict, CheckResult::Verdict::kViolation) << r.Describe();
  EXPECT_EQ(r.failing_key, key);
  EXPECT_TRUE(r.minimized);
  EXPECT_GE(r.minimal.size(), 1u);
  EXPECT_LE(r.minimal.size(), max_ops) << r.Describe();
  for (uint64_t id : must_have) EXPECT_TRUE(HasId(r.minimal, id)) << id << "\n" << r.Describe();
  for (const Operation& op : r.minimal) EXPECT_EQ(op.key, key);
  const CheckResult again = Check(r.minimal);
  EXPECT_EQ(again.verdict, CheckResult::Verdict::kViolation) << again.Describe();
  EXPECT_NE(r.Describe().find("VIOLATION"), std::string::npos);
}

// Sequential traffic on `key` before `start`: writes and reads that agree.
void AddNoise(HistoryBuilder* h, const std::string& key, int count, int64_t start) {
  for (int i = 0; i < count; ++i) {
    const int64_t t = start - 20 * (count - i);
    h->Write(7, key, "noise" + std::to_string(i), t, t + 5);
    h->Read(8, key, "noise" + std::to_string(i), t + 8, t + 12);
  }
}

TEST(Linearizability, EmptyHistory) {
  const CheckResult r = Check({});
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kLinearizable);
  EXPECT_EQ(r.operations, 0u);
  EXPECT_EQ(r.keys, 0u);
}

TEST(Linearizability, OverlappingWritesAndReads) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 30);
  h.Write(2, "x", "b", 5, 25);
  h.Read(3, "x", "b", 6, 26);   // b took effect first...
  h.Read(3, "x", "a", 35, 40);  // ...then a, inside its own interval
  h.Read(4, "x", "", 0, 2);     // before either
  h.Read(5, "x", "a", 10, 50);  // overlaps both
  const CheckResult r = Check(h.ops());
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kLinearizable) << r.Describe();
  EXPECT_EQ(r.operations, 6u);
  EXPECT_EQ(r.keys, 1u);
}

TEST(Linearizability, CasChain) {
  HistoryBuilder h;
  h.Cas(1, "x", "", "a", true, 0, 10);
  h.Cas(2, "x", "a", "b", true, 5, 20);
  h.Cas(3, "x", "a", "c", false, 15, 30);  // after b replaced a
  h.Cas(1, "x", "b", "d", true, 25, 35);
  h.Read(2, "x", "d", 40, 45);
  h.Cas(3, "x", "", "e", false, 40, 50);  // not absent any more
  const CheckResult r = Check(h.ops());
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kLinearizable) << r.Describe();
}

TEST(Linearizability, UnknownWriteThatTookEffect) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  h.Write(2, "x", "b", 20, 0, Outcome::kUnknown);
  h.Read(3, "x", "b", 1000, 1010);  // long after: b did take effect
  h.Read(3, "x", "b", 1020, 1030);
  EXPECT_EQ(Check(h.ops()).verdict, CheckResult::Verdict::kLinearizable);
}

TEST(Linearizability, UnknownWriteThatNeverTookEffect) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  h.Write(2, "x", "b", 20, 0, Outcome::kUnknown);
  h.Read(3, "x", "a", 1000, 1010);
  h.Cas(3, "x", "a", "c", true, 1020, 1030);
  h.Read(3, "x", "c", 1040, 1050);
  EXPECT_EQ(Check(h.ops()).verdict, CheckResult::Verdict::kLinearizable);
}

TEST(Linearizability, UnknownCasThatSwappedLate) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  h.Cas(2, "x", "a", "b", false, 20, 0, Outcome::kUnknown);
  h.Read(3, "x", "a", 100, 110);
  h.Read(3, "x", "b", 200, 210);  // the CAS took effect between the reads
  EXPECT_EQ(Check(h.ops()).verdict, CheckResult::Verdict::kLinearizable);
}

TEST(Linearizability, FailedOperationsAndUnknownReadsAreDropped) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  h.Write(2, "x", "b", 20, 30, Outcome::kFailed);  // never took effect
  h.Read(3, "x", "zzz", 40, 0, Outcome::kUnknown);  // constrains nothing
  h.Read(3, "x", "a", 50, 60);
  const CheckResult r = Check(h.ops());
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kLinearizable) << r.Describe();
  EXPECT_EQ(r.operations, 2u);
}

TEST(Linearizability, KeysAreIndependent) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  h.Write(1, "y", "b", 20, 30);
  h.Read(2, "y", "b", 40, 50);
  h.Read(2, "x", "a", 60, 70);
  h.Read(2, "z", "", 60, 70);
  const CheckResult r = Check(h.ops());
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kLinearizable);
  EXPECT_EQ(r.keys, 3u);
}

TEST(Linearizability, StaleReadAfterCompletedWrite) {
  HistoryBuilder h;
  AddNoise(&h, "x", 40, 0);
  h.Write(9, "y", "other", 0, 5);
  const uint64_t first = h.Write(1, "x", "a", 0, 10).id;
  const uint64_t second = h.Write(1, "x", "b", 20, 30).id;
  const uint64_t stale = h.Read(2, "x", "a", 40, 50).id;
  ExpectViolation(h.ops(), "x", 3, {first, second, stale});
}

TEST(Linearizability, LostAcknowledgedWrite) {
  HistoryBuilder h;
  AddNoise(&h, "k", 30, 0);
  const uint64_t write = h.Write(1, "k", "a", 0, 10).id;
  const uint64_t read = h.Read(2, "k", "noise29", 20, 30).id;  // the write vanished
  h.Read(2, "k", "a", 40, 50);
  ExpectViolation(h.ops(), "k", 3, {write, read});
}

TEST(Linearizability, ReadOfAValueNeverWritten) {
  HistoryBuilder h;
  AddNoise(&h, "x", 30, 0);
  h.Write(1, "x", "a", 0, 10);
  const uint64_t read = h.Read(2, "x", "ghost", 20, 30).id;
  ExpectViolation(h.ops(), "x", 1, {read});
}

TEST(Linearizability, CasThatSwappedOnAWrongValue) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  const uint64_t b = h.Write(1, "x", "b", 20, 30).id;
  const uint64_t a = h.Write(1, "x", "a", 40, 50).id;
  const uint64_t cas = h.Cas(2, "x", "b", "c", true, 60, 70).id;  // x was a, not b
  ExpectViolation(h.ops(), "x", 3, {b, a, cas});
}

TEST(Linearizability, CasThatDidNotSwapOnTheRightValue) {
  HistoryBuilder h;
  AddNoise(&h, "x", 20, 0);
  const uint64_t w = h.Write(1, "x", "a", 0, 10).id;
  const uint64_t cas = h.Cas(2, "x", "a", "c", false, 20, 30).id;
  ExpectViolation(h.ops(), "x", 2, {w, cas});
}

TEST(Linearizability, ReadsSeeingTwoWritesInOppositeOrders) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 100);
  h.Write(2, "x", "b", 0, 100);
  h.Read(3, "x", "a", 10, 20);
  h.Read(3, "x", "b", 30, 40);  // client 3: a before b
  h.Read(4, "x", "b", 10, 20);
  h.Read(4, "x", "a", 30, 40);  // client 4: b before a
  ExpectViolation(h.ops(), "x", 6, {});
  // Either client's view alone is fine.
  HistoryBuilder one;
  one.Write(1, "x", "a", 0, 100);
  one.Write(2, "x", "b", 0, 100);
  one.Read(3, "x", "a", 10, 20);
  one.Read(3, "x", "b", 30, 40);
  EXPECT_EQ(Check(one.ops()).verdict, CheckResult::Verdict::kLinearizable);
}

TEST(Linearizability, UnknownWriteObservedThenUnobserved) {
  HistoryBuilder h;
  const uint64_t a = h.Write(1, "x", "a", 0, 10).id;
  const uint64_t b = h.Write(2, "x", "b", 20, 0, Outcome::kUnknown).id;
  const uint64_t seen = h.Read(3, "x", "b", 30, 40).id;
  const uint64_t unseen = h.Read(3, "x", "a", 50, 60).id;  // b cannot be undone
  ExpectViolation(h.ops(), "x", 4, {a, b, seen, unseen});
}

TEST(Linearizability, ViolationOnOneKeyAmongMany) {
  HistoryBuilder h;
  for (int k = 0; k < 5; ++k) {
    const std::string key = "k" + std::to_string(k);
    AddNoise(&h, key, 10, 1000);
  }
  h.Write(1, "k3", "late", 1000, 1010);
  const uint64_t bad = h.Read(2, "k3", "noise5", 1020, 1030).id;
  const CheckResult r = Check(h.ops());
  ASSERT_EQ(r.verdict, CheckResult::Verdict::kViolation);
  EXPECT_EQ(r.failing_key, "k3");
  EXPECT_TRUE(HasId(r.minimal, bad));
  EXPECT_LE(r.minimal.size(), 3u) << r.Describe();
  EXPECT_EQ(r.keys, 5u);
}

TEST(Linearizability, WithoutMinimizeTheWholeKeyIsReported) {
  HistoryBuilder h;
  AddNoise(&h, "x", 10, 0);
  h.Write(1, "x", "a", 0, 10);
  h.Read(2, "x", "ghost", 20, 30);
  CheckOptions options;
  options.minimize = false;
  const CheckResult r = CheckLinearizable(h.ops(), options);
  ASSERT_EQ(r.verdict, CheckResult::Verdict::kViolation);
  EXPECT_FALSE(r.minimized);
  EXPECT_EQ(r.minimal.size(), h.ops().size());
}

TEST(Linearizability, MalformedHistoryIsUndecided) {
  HistoryBuilder h;
  h.Write(1, "x", "a", 0, 10);
  h.Read(1, "x", "a", 20, 30).id = 1;  // the same id twice
  CheckResult r = Check(h.ops());
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kUnknown);
  EXPECT_NE(r.error.find("appears twice"), std::string::npos) << r.error;

  HistoryBuilder backwards;
  backwards.Write(1, "x", "a", 50, 10);
  r = Check(backwards.ops());
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kUnknown);
  EXPECT_NE(r.error.find("completes before it is invoked"), std::string::npos) << r.error;
}

// A long sequential history: more steps than the search makes between two
// looks at its limits.
std::vector<Operation> LongHistory(int ops) {
  HistoryBuilder h;
  for (int i = 0; i < ops; ++i) h.Write(1, "x", "v" + std::to_string(i), 10 * i, 10 * i + 5);
  return h.ops();
}

TEST(Linearizability, GivesUpAtTheTimeLimit) {
  CheckOptions options;
  options.max_seconds = 0;
  const CheckResult r = CheckLinearizable(LongHistory(20000), options);
  EXPECT_EQ(r.verdict, CheckResult::Verdict::kUnknown);
  EXPECT_NE(r.error.find("gave up on key \"x\""), std::string::npos) << r.error;
  EXPECT_NE(r.Describe().find("UNKNOWN"), std::string::npos);
}

TEST(Linearizability, GivesUpAtTheStateLimit) {
  CheckOptions options;
  options.max_states = 100;
  EXPECT_EQ(CheckLinearizable(LongHistory(20000), options).verdict,
            CheckResult::Verdict::kUnknown);
  // The same history within the limits.
  EXPECT_EQ(Check(LongHistory(20000)).verdict, CheckResult::Verdict::kLinearizable);
}

}  // namespace
}  // namespace nemesis
}  // namespace chorus
