// The checker on histories generated from a real sequential execution:
// every operation takes effect at a point inside its own interval, so the
// history is linearizable by construction; then one read is made to lie.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "history.h"
#include "linearizability.h"

namespace chorus {
namespace nemesis {
namespace {

struct GenOptions {
  int ops = 2000;
  int keys = 3;
  int clients = 6;
  int max_gap = 40;     // between two linearization points
  int max_spread = 300;  // an interval reaches this far either side of its point
  double unknown_applied = 0.03;   // a write/CAS that took effect but timed out
  double unknown_dropped = 0.03;   // an extra write/CAS that timed out and never took effect
  double failed = 0.02;            // an extra one refused
};

class Generator {
 public:
  Generator(uint32_t seed, const GenOptions& options) : rng_(seed), options_(options) {}

  std::vector<Operation> Run() {
    std::vector<int64_t> free_at(options_.clients, 0);
    int64_t point = 1000;
    for (int i = 0; i < options_.ops; ++i) {
      point += Uniform(1, options_.max_gap);
      const int client = Uniform(0, options_.clients - 1);
      // The client is busy until its last operation completed.
      if (free_at[client] + 1 >= point) point = free_at[client] + 2;
      Operation op;
      op.id = history_.size() + 1;
      op.client = client;
      op.node = Uniform(1, 3);
      op.key = "k" + std::to_string(Uniform(0, options_.keys - 1));
      op.invoke_ns = std::max(free_at[client] + 1, point - Uniform(1, options_.max_spread));
      op.complete_ns = point + Uniform(1, options_.max_spread);
      op.outcome = Outcome::kOk;
      std::string& current = model_[op.key];
      const int dice = Uniform(0, 9);
      if (dice < 5) {
        op.kind = OpKind::kRead;
        op.output = current;
      } else {
        op.kind = dice < 8 ? OpKind::kWrite : OpKind::kCas;
        op.value = "v" + std::to_string(op.id);
        if (op.kind == OpKind::kCas) {
          op.expected = Chance(0.5) ? current : RecentValue(op.key);
          op.cas_swapped = op.expected == current;
        }
        if (op.kind == OpKind::kWrite || op.cas_swapped) current = op.value;
        written_[op.key].push_back(op.value);
        if (Chance(options_.unknown_applied)) op.outcome = Outcome::kUnknown;
      }
      free_at[client] = op.complete_ns;
      history_.push_back(op);
      if (Chance(options_.unknown_dropped)) AddIneffective(op, Outcome::kUnknown);
      if (Chance(options_.failed)) AddIneffective(op, Outcome::kFailed);
    }
    return history_;
  }

  // Values written to `key`, in the order their operations were made.
  const std::vector<std::string>& written(const std::string& key) { return written_[key]; }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  std::string RecentValue(const std::string& key) {
    const std::vector<std::string>& w = written_[key];
    if (w.empty() || Chance(0.2)) return "";
    return w[w.size() - 1 - Uniform(0, std::min<int>(3, static_cast<int>(w.size()) - 1))];
  }

  // An operation of a client of its own that never takes effect.
  void AddIneffective(const Operation& near, Outcome outcome) {
    Operation op;
    op.id = history_.size() + 1;
    op.client = options_.clients + static_cast<int>(op.id);
    op.kind = Chance(0.5) ? OpKind::kWrite : OpKind::kCas;
    op.key = near.key;
    op.value = "x" + std::to_string(op.id);
    op.expected = model_[near.key];  // would swap, had it taken effect
    op.outcome = outcome;
    op.invoke_ns = near.invoke_ns;
    op.complete_ns = outcome == Outcome::kFailed ? near.complete_ns : 0;
    history_.push_back(op);
  }

  std::mt19937 rng_;
  const GenOptions options_;
  std::map<std::string, std::string> model_;
  std::map<std::string, std::vector<std::string>> written_;
  std::vector<Operation> history_;
};

std::vector<size_t> OkReads(const std::vector<Operation>& h) {
  std::vector<size_t> reads;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i].kind == OpKind::kRead && h[i].outcome == Outcome::kOk) reads.push_back(i);
  }
  return reads;
}

TEST(LinearizabilityRandom, GeneratedHistoriesAreLinearizable) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    GenOptions options;
    options.ops = 300 + 50 * static_cast<int>(seed);
    options.keys = 1 + static_cast<int>(seed % 4);
    const std::vector<Operation> h = Generator(seed, options).Run();
    const CheckResult r = CheckLinearizable(h, CheckOptions());
    ASSERT_EQ(r.verdict, CheckResult::Verdict::kLinearizable) << "seed " << seed << "\n"
                                                              << r.Describe();
  }
}

TEST(LinearizabilityRandom, ReadOfANeverWrittenValueIsCaught) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::vector<Operation> h = Generator(seed, GenOptions()).Run();
    const std::vector<size_t> reads = OkReads(h);
    Operation& liar = h[reads[seed * 7919 % reads.size()]];
    liar.output = "never-written";
    const CheckResult r = CheckLinearizable(h, CheckOptions());
    ASSERT_EQ(r.verdict, CheckResult::Verdict::kViolation) << "seed " << seed;
    EXPECT_EQ(r.failing_key, liar.key);
    EXPECT_TRUE(r.minimized);
    // That read alone is the evidence.
    ASSERT_EQ(r.minimal.size(), 1u) << "seed " << seed << "\n" << r.Describe();
    EXPECT_EQ(r.minimal[0].id, liar.id);
  }
}

TEST(LinearizabilityRandom, ReadOfAValueWrittenOnlyLaterIsCaught) {
  int mutated = 0;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    Generator gen(seed, GenOptions());
    std::vector<Operation> h = gen.Run();
    // A read and a write of its key invoked after the read completed:
    // values are unique, so the read cannot have seen it.
    for (size_t i : OkReads(h)) {
      const Operation& read = h[i];
      const Operation* later = nullptr;
      for (const Operation& op : h) {
        if (op.key == read.key && op.kind != OpKind::kRead && op.outcome != Outcome::kFailed &&
            op.invoke_ns > read.complete_ns) {
          later = &op;
          break;
        }
      }
      if (later == nullptr) continue;
      const std::string value = later->value;
      h[i].output = value;
      const CheckResult r = CheckLinearizable(h, CheckOptions());
      ASSERT_EQ(r.verdict, CheckResult::Verdict::kViolation) << "seed " << seed;
      EXPECT_EQ(r.failing_key, h[i].key);
      const CheckResult again = CheckLinearizable(r.minimal, CheckOptions());
      EXPECT_EQ(again.verdict, CheckResult::Verdict::kViolation) << r.Describe();
      ++mutated;
      break;
    }
  }
  EXPECT_GE(mutated, 25);  // the generator leaves later writes after most reads
}

// A generated history is linearizable; with the read at `liar_at` (a
// fraction of the reads) made to return a value never written, that read
// alone is the minimal failing sub-history. Prints both reports (times).
void ExpectCaughtInBigHistory(uint32_t seed, const GenOptions& options, double liar_at) {
  std::vector<Operation> h = Generator(seed, options).Run();
  CheckResult r = CheckLinearizable(h, CheckOptions());
  ASSERT_EQ(r.verdict, CheckResult::Verdict::kLinearizable) << r.Describe();
  std::printf("%s", r.Describe().c_str());
  const std::vector<size_t> reads = OkReads(h);
  Operation& liar = h[reads[static_cast<size_t>(liar_at * static_cast<double>(reads.size()))]];
  liar.output = "never-written";
  r = CheckLinearizable(h, CheckOptions());
  ASSERT_EQ(r.verdict, CheckResult::Verdict::kViolation) << r.Describe();
  ASSERT_EQ(r.minimal.size(), 1u) << r.Describe();
  EXPECT_EQ(r.minimal[0].id, liar.id);
  std::printf("%s", r.Describe().c_str());
}

// About the size of a nemesis run: 20k operations, 8 keys, 10 clients.
TEST(LinearizabilityRandom, NemesisSizedHistory) {
  GenOptions options;
  options.ops = 20000;
  options.keys = 8;
  options.clients = 10;
  ExpectCaughtInBigHistory(42, options, 0.5);
}

// Many writes and CAS left open (10% that took effect, 10% more that never
// did): the ones the search must place, and the ones it must leave out.
TEST(LinearizabilityRandom, ManyUnknownOperations) {
  GenOptions options;
  options.ops = 5000;
  options.keys = 4;
  options.clients = 10;
  options.unknown_applied = 0.1;
  options.unknown_dropped = 0.1;
  ExpectCaughtInBigHistory(9, options, 0.33);
}

TEST(HistoryFormat, RoundTrip) {
  std::vector<Operation> h = Generator(7, GenOptions()).Run();
  Operation odd;
  odd.id = 999999;
  odd.client = 3;
  odd.kind = OpKind::kCas;
  odd.key = "a key=with %odd\tbytes\n\x01\xff";
  odd.value = "";
  odd.expected = "100%";
  odd.outcome = Outcome::kOk;
  odd.cas_swapped = true;
  odd.invoke_ns = -5;
  odd.complete_ns = 7;
  odd.node = -1;
  h.push_back(odd);
  std::vector<Operation> back;
  ASSERT_TRUE(DecodeHistory("# a comment\n\n" + EncodeHistory(h), &back).ok());
  ASSERT_EQ(back.size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(EncodeOperation(back[i]), EncodeOperation(h[i]));
    EXPECT_EQ(back[i].key, h[i].key);
    EXPECT_EQ(back[i].value, h[i].value);
    EXPECT_EQ(back[i].expected, h[i].expected);
    EXPECT_EQ(back[i].output, h[i].output);
    EXPECT_EQ(back[i].cas_swapped, h[i].cas_swapped);
    EXPECT_EQ(back[i].invoke_ns, h[i].invoke_ns);
    EXPECT_EQ(back[i].complete_ns, h[i].complete_ns);
    EXPECT_EQ(back[i].outcome, h[i].outcome);
    EXPECT_EQ(back[i].kind, h[i].kind);
    EXPECT_EQ(back[i].node, h[i].node);
    EXPECT_EQ(back[i].client, h[i].client);
  }
  EXPECT_EQ(EncodeOperation(odd).find('\n'), std::string::npos);
}

TEST(HistoryFormat, BadLinesSayWhy) {
  const std::string good =
      "id=1 client=1 kind=write key=x value=a expected= outcome=ok output= swapped=0 "
      "invoke=10 complete=20 node=1";
  Operation op;
  ASSERT_TRUE(DecodeOperation(good, &op).ok());
  auto with = [&good](const std::string& from, const std::string& to) {
    std::string line = good;
    line.replace(line.find(from), from.size(), to);
    return line;
  };
  const struct {
    std::string line;
    std::string says;
  } cases[] = {
      {"", "field 1 must be 'id=...'"},
      {"id=1 client=1", "ends after 'client'"},
      {good + " extra=1", "text after the last field"},
      {with("id=1", "id=x"), "id 'x' is not an unsigned integer"},
      {with("client=1", "client=-2"), "client '-2'"},
      {with("client=1 ", ""), "field 2 must be 'client=...'"},
      {with("kind=write", "kind=delete"), "kind 'delete'"},
      {with("key=x", "key=%4"), "key has a bad %XX escape"},
      {with("key=x", "key=%zz"), "key has a bad %XX escape"},
      {with("outcome=ok", "outcome=lost"), "outcome 'lost'"},
      {with("swapped=0", "swapped=2"), "swapped '2'"},
      {with("invoke=10", "invoke=30"), "completes before it is invoked"},
      {with("node=1", "node=one"), "node 'one'"},
  };
  for (const auto& c : cases) {
    const Status s = DecodeOperation(c.line, &op);
    EXPECT_TRUE(s.IsInvalidArgument()) << c.line;
    EXPECT_NE(s.ToString().find(c.says), std::string::npos) << c.line << " -> " << s.ToString();
  }
  std::vector<Operation> h;
  const Status s = DecodeHistory(good + "\n# fine\n" + good + " x\n", &h);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("line 3: "), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace nemesis
}  // namespace chorus
