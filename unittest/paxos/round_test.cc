// Round (group commit): each merge rule of round.h, then a randomized check
// that executing a merged round leaves the log and the live timers as
// executing its steps one by one does.
#include "paxos/round.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "paxos/random.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace paxos {
namespace round_test {
namespace {

using Records = std::vector<std::pair<uint64_t, std::string>>;
using Variables = std::vector<std::pair<std::string, std::string>>;

Outputs Persist(Records records, Variables variables = {}, uint64_t delete_below = 0) {
  Outputs o;
  o.persist.records = std::move(records);
  o.persist.variables = std::move(variables);
  o.persist.delete_below = delete_below;
  o.sync = !o.persist.empty();
  return o;
}

Outputs Timers(std::vector<TimerStart> starts, std::vector<TimerId> cancels = {}) {
  Outputs o;
  o.timers = std::move(starts);
  o.cancel_timers = std::move(cancels);
  return o;
}

Outputs Merged(Round* round) {
  Outputs out;
  round->Take(&out);
  return out;
}

// Adds `steps` in order to a fresh round and takes the merged round.
Outputs MergeSteps(std::vector<Outputs> steps, TestMutation m = TestMutation::kNone) {
  Round round(m);
  for (Outputs& step : steps) round.Add(&step);
  return Merged(&round);
}

TEST(RoundTest, RecordsDedupeLastWins) {
  const Outputs out = MergeSteps({Persist({{5, "a5"}, {6, "a6"}}), Persist({{5, "b5"}, {4, "b4"}}),
                                  Persist({{6, "c6"}})});
  // One entry per instance, the latest step's, in instance order.
  EXPECT_EQ(out.persist.records, (Records{{4, "b4"}, {5, "b5"}, {6, "c6"}}));
  EXPECT_TRUE(out.sync);
}


TEST(RoundTest, VariablesDedupeLastWins) {
  const Outputs out = MergeSteps({Persist({}, {{"promise", "p1"}, {"master", "m1"}}),
                                  Persist({}, {{"promise", "p2"}})});
  EXPECT_EQ(out.persist.variables, (Variables{{"master", "m1"}, {"promise", "p2"}}));
}


TEST(RoundTest, MutationKeepsFirstEntryPerKey) {
  const Outputs out = MergeSteps({Persist({{5, "a5"}}, {{"promise", "p1"}}),
                                  Persist({{5, "b5"}, {6, "b6"}}, {{"promise", "p2"}})},
                                 TestMutation::kRoundKeepsFirst);
  EXPECT_EQ(out.persist.records, (Records{{5, "a5"}, {6, "b6"}}));
  EXPECT_EQ(out.persist.variables, (Variables{{"promise", "p1"}}));
}


TEST(RoundTest, TrimDropsEarlierStepsRecordsBelowItOnly) {
  // The trimming step's own record below the trim is kept: storage applies
  // the trim before the batch's records.
  const Outputs out = MergeSteps({Persist({{3, "a3"}, {7, "a7"}}), Persist({{2, "b2"}}, {}, 5)});
  EXPECT_EQ(out.persist.records, (Records{{2, "b2"}, {7, "a7"}}));
  EXPECT_EQ(out.persist.delete_below, 5u);
}


TEST(RoundTest, TrimKeepsLaterStepsRecordsAndNeverMovesBack) {
  const Outputs out = MergeSteps({Persist({{3, "a3"}}, {}, 10),
                                  Persist({{4, "b4"}, {8, "b8"}}),  // after the trim: kept
                                  Persist({{5, "c5"}}, {}, 6)});    // lower: the round's stays 10
  // One by one, c's trim would have removed b's record 4 (and a's 3), not 8,
  // and c's own record 5 would have been written after it.
  EXPECT_EQ(out.persist.records, (Records{{5, "c5"}, {8, "b8"}}));
  EXPECT_EQ(out.persist.delete_below, 10u);
}


TEST(RoundTest, SyncIsTheOrOfTheSteps) {
  Outputs unsynced = Persist({{1, "x"}});
  unsynced.sync = false;
  EXPECT_TRUE(MergeSteps({unsynced, Persist({{2, "y"}})}).sync);
  EXPECT_TRUE(MergeSteps({Persist({{2, "y"}}), unsynced}).sync);
  EXPECT_FALSE(MergeSteps({unsynced, unsynced}).sync);
}


TEST(RoundTest, LaterStartSupersedesEarlierStartOfItsKind) {
  const Outputs out = MergeSteps({
      Timers({{{TimerKind::kPrepare, 1}, 100}, {{TimerKind::kLearn, 2}, 200}}),
      // As the core restarts a timer: cancel the old generation, start a new one.
      Timers({{{TimerKind::kPrepare, 3}, 50}}, {{TimerKind::kPrepare, 1}}),
      // A start without a cancel supersedes too (the old one would be ignored).
      Timers({{{TimerKind::kLearn, 4}, 300}}),
  });
  ASSERT_EQ(out.timers.size(), 2u);
  EXPECT_EQ(out.timers[0].id, (TimerId{TimerKind::kPrepare, 3}));
  EXPECT_EQ(out.timers[0].delay_ms, 50u);
  EXPECT_EQ(out.timers[1].id, (TimerId{TimerKind::kLearn, 4}));
  EXPECT_EQ(out.cancel_timers, (std::vector<TimerId>{{TimerKind::kPrepare, 1}}));
}


TEST(RoundTest, CancelDropsTheStartItNamesOnly) {
  const Outputs out = MergeSteps({
      Timers({{{TimerKind::kAccept, 5}, 100}, {{TimerKind::kBackoff, 6}, 10}}),
      // Cancels gen 5 of kAccept (started this round) and a kBackoff
      // generation of an earlier round: this round's kBackoff start stays.
      Timers({}, {{TimerKind::kAccept, 5}, {TimerKind::kBackoff, 2}}),
  });
  ASSERT_EQ(out.timers.size(), 1u);
  EXPECT_EQ(out.timers[0].id, (TimerId{TimerKind::kBackoff, 6}));
  // The cancels are kept: one may name a timer of an earlier round.
  EXPECT_EQ(out.cancel_timers,
            (std::vector<TimerId>{{TimerKind::kAccept, 5}, {TimerKind::kBackoff, 2}}));
}


TEST(RoundTest, StartAfterCancelInTheSameRoundRuns) {
  const Outputs out = MergeSteps(
      {Timers({}, {{TimerKind::kAccept, 1}}), Timers({{{TimerKind::kAccept, 2}, 100}})});
  ASSERT_EQ(out.timers.size(), 1u);
  EXPECT_EQ(out.timers[0].id, (TimerId{TimerKind::kAccept, 2}));
  EXPECT_EQ(out.cancel_timers, (std::vector<TimerId>{{TimerKind::kAccept, 1}}));
}


Outputs Early(std::vector<std::string> requests, Records records = {}) {
  Outputs o = Persist(std::move(records));
  for (std::string& r : requests) o.messages.push_back({kBroadcast, std::move(r), true});
  return o;
}

std::vector<bool> BeforePersist(const Outputs& out) {
  std::vector<bool> flags;
  for (const OutMessage& m : out.messages) flags.push_back(m.before_persist);
  return flags;
}

TEST(RoundTest, RequestsStayBeforePersistWhileTheRoundPersistsOnlyRecords) {
  Outputs reply;
  reply.messages.push_back({2, "reply"});
  const Outputs out = MergeSteps({Early({"a1", "a2"}, {{5, "vote5"}}), std::move(reply),
                                  Early({"a3"}, {{7, "vote7"}})});
  ASSERT_EQ(out.messages.size(), 4u);
  EXPECT_EQ(out.messages[0].bytes, "a1");
  EXPECT_EQ(out.messages[2].bytes, "reply");
  EXPECT_EQ(BeforePersist(out), (std::vector<bool>{true, true, false, true}));
}

TEST(RoundTest, AVariableOrTrimInAnyStepMakesEveryRequestWaitForThePersist) {
  // A promise moved in one step (a variable), before or after the requests,
  // or a trim: a request of the new ballot must not leave before it is
  // durable.
  for (int where = 0; where < 3; ++where) {
    std::vector<Outputs> steps;
    steps.push_back(Early({"a1"}));
    steps.push_back(Early({"a2"}));
    Outputs held = where == 2 ? Persist({}, {}, 4) : Persist({}, {{"promised", "b9"}});
    steps.insert(steps.begin() + (where == 0 ? 0 : 1), std::move(held));
    Outputs out = MergeSteps(std::move(steps));
    ASSERT_EQ(out.messages.size(), 2u) << where;
    EXPECT_EQ(out.messages[0].bytes, "a1");
    EXPECT_EQ(out.messages[1].bytes, "a2");
    EXPECT_EQ(BeforePersist(out), (std::vector<bool>{false, false})) << where;
  }
}

TEST(RoundTest, MessagesReadsChosenFinishedAndErrorsKeepStepOrder) {
  Round round;
  for (uint64_t s = 0; s < 3; ++s) {
    Outputs o;
    o.messages.push_back({s + 1, "m" + std::to_string(s) + "a"});
    o.messages.push_back({kBroadcast, "m" + std::to_string(s) + "b"});
    CatchupRead read;
    read.peer = s + 1;
    read.first = 20 + s;
    o.catchup_reads.push_back(read);
    ChosenValue c;
    c.instance = 10 + s;
    c.value = "v" + std::to_string(s);
    o.chosen.push_back(c);
    o.finished.push_back({100 + s, 10 + s, Status::OK()});
    o.errors.push_back(Status::Corruption("e" + std::to_string(s)));
    round.Add(&o);
    // Add leaves the step cleared for the core's next input.
    EXPECT_TRUE(o.messages.empty() && o.catchup_reads.empty() && o.chosen.empty() &&
                o.finished.empty() && o.errors.empty());
  }
  const Outputs out = Merged(&round);
  ASSERT_EQ(out.messages.size(), 6u);
  ASSERT_EQ(out.catchup_reads.size(), 3u);
  ASSERT_EQ(out.chosen.size(), 3u);
  ASSERT_EQ(out.finished.size(), 3u);
  ASSERT_EQ(out.errors.size(), 3u);
  for (uint64_t s = 0; s < 3; ++s) {
    EXPECT_EQ(out.messages[2 * s].to, s + 1);
    EXPECT_EQ(out.messages[2 * s].bytes, "m" + std::to_string(s) + "a");
    EXPECT_EQ(out.messages[2 * s + 1].to, kBroadcast);
    EXPECT_EQ(out.catchup_reads[s].peer, s + 1);
    EXPECT_EQ(out.catchup_reads[s].first, 20 + s);
    EXPECT_EQ(out.chosen[s].instance, 10 + s);
    EXPECT_EQ(out.chosen[s].value, "v" + std::to_string(s));
    EXPECT_EQ(out.finished[s].token, 100 + s);
    EXPECT_EQ(out.errors[s].ToString(), Status::Corruption("e" + std::to_string(s)).ToString());
  }
}

TEST(RoundTest, BarriersAppendAndTheLatestMasterViewWins) {
  Outputs a, b, c;
  a.barriers.push_back({1, 5, Status::OK()});
  a.master_changed = true;
  a.master.node = 2;
  b.barriers.push_back({2, 0, Status::Busy("no master")});
  c.master_changed = true;
  c.master.node = 3;
  c.master.self_ready = true;
  Outputs out = MergeSteps({a, b, c});
  ASSERT_EQ(out.barriers.size(), 2u);
  EXPECT_EQ(out.barriers[0].token, 1u);
  EXPECT_TRUE(out.barriers[1].status.IsBusy());
  EXPECT_TRUE(out.master_changed);
  EXPECT_EQ(out.master.node, 3u);
  EXPECT_TRUE(out.master.self_ready);
  // A step without a change keeps the earlier step's view.
  Outputs d;
  out = MergeSteps({a, d});
  EXPECT_TRUE(out.master_changed);
  EXPECT_EQ(out.master.node, 2u);
  // Either alone makes the round non-empty.
  Round round;
  Outputs e;
  e.master_changed = true;
  round.Add(&e);
  EXPECT_FALSE(round.empty());
}

TEST(RoundTest, EmptyRoundDetection) {
  Round round;
  EXPECT_TRUE(round.empty());
  EXPECT_EQ(round.steps(), 0u);
  Outputs nothing;
  round.Add(&nothing);
  round.Add(&nothing);
  EXPECT_TRUE(round.empty());  // steps that produced nothing
  EXPECT_EQ(round.steps(), 2u);

  // Each kind of output alone makes the round non-empty.
  std::vector<Outputs> each(9);
  each[0].persist.records.push_back({1, "r"});
  each[1].persist.variables.push_back({"v", "x"});
  each[2].persist.delete_below = 3;
  each[3].messages.push_back({2, "m"});
  each[4].chosen.push_back(ChosenValue());
  each[5].finished.push_back(ProposalResult());
  each[6].cancel_timers.push_back({TimerKind::kLearn, 1});
  each[7].errors.push_back(Status::IOError("x"));
  each[8].catchup_reads.push_back(CatchupRead());
  for (size_t k = 0; k < each.size(); ++k) {
    Round r;
    r.Add(&each[k]);
    EXPECT_FALSE(r.empty()) << "output kind " << k;
  }
  Outputs timer = Timers({{{TimerKind::kLearn, 1}, 10}});
  round.Add(&timer);
  EXPECT_FALSE(round.empty());

  // Taking the round, or dropping it, starts an empty one.
  Outputs out = Merged(&round);
  EXPECT_EQ(out.timers.size(), 1u);
  EXPECT_TRUE(round.empty());
  EXPECT_EQ(round.steps(), 0u);
  Outputs more = Persist({{9, "r"}});
  round.Add(&more);
  round.Clear();
  EXPECT_TRUE(round.empty());
  EXPECT_EQ(round.steps(), 0u);
  EXPECT_TRUE(Merged(&round).persist.empty());
}

// ---- Merged == one by one, on random steps ----

// The running timers the core acts on when they fire: those that are its
// live generation of their kind (it ignores the others, see outputs.h).
std::map<TimerKind, uint64_t> Effective(const std::set<std::pair<TimerKind, uint64_t>>& running,
                                        const std::map<TimerKind, uint64_t>& live) {
  std::map<TimerKind, uint64_t> effective;
  for (const auto& t : running) {
    auto it = live.find(t.first);
    if (it != live.end() && it->second == t.second) effective.insert(t);
  }
  return effective;
}

void ExecuteTimers(const Outputs& o, std::set<std::pair<TimerKind, uint64_t>>* running) {
  for (const TimerId& c : o.cancel_timers) running->erase({c.kind, c.generation});
  for (const TimerStart& t : o.timers) running->insert({t.id.kind, t.id.generation});
}

TEST(RoundTest, MergedRoundExecutesLikeItsStepsOneByOne) {
  const TimerKind kinds[] = {TimerKind::kPrepare, TimerKind::kAccept, TimerKind::kBackoff,
                             TimerKind::kLearn};
  const std::string names[] = {"promise", "master", "members"};
  Rng rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    sim::MemLogStorage one_by_one, merged;
    std::set<std::pair<TimerKind, uint64_t>> running_steps, running_merged;
    std::map<TimerKind, uint64_t> live_gen;  // as the core tracks it
    uint64_t next_gen = 1;
    Round round;
    const int steps = 1 + static_cast<int>(rng.Uniform(6));
    for (int s = 0; s < steps; ++s) {
      Outputs step;
      for (uint64_t n = rng.Uniform(4); n > 0; --n) {
        step.persist.records.push_back({rng.Uniform(12), "r" + std::to_string(rng.Next() % 1000)});
      }
      for (uint64_t n = rng.Uniform(2); n > 0; --n) {
        step.persist.variables.push_back({names[rng.Uniform(3)], std::to_string(rng.Next())});
      }
      if (rng.OneIn(200000)) step.persist.delete_below = rng.Uniform(12);
      step.sync = true;
      // Timers as the core emits them: a start cancels the live generation
      // of its kind; a cancel names the live one.
      for (uint64_t n = rng.Uniform(3); n > 0; --n) {
        const TimerKind k = kinds[rng.Uniform(4)];
        auto live = live_gen.find(k);
        if (rng.OneIn(300000)) {
          if (live == live_gen.end()) continue;
          step.cancel_timers.push_back({k, live->second});
          live_gen.erase(live);
        } else {
          if (live != live_gen.end()) step.cancel_timers.push_back({k, live->second});
          live_gen[k] = next_gen;
          step.timers.push_back({{k, next_gen++}, 10});
        }
      }
      one_by_one.Write(step.persist, step.sync);
      ExecuteTimers(step, &running_steps);
      round.Add(&step);
    }
    Outputs out = Merged(&round);
    std::set<uint64_t> ids;
    for (const auto& rec : out.persist.records) {
      ASSERT_TRUE(ids.insert(rec.first).second) << "two records for instance " << rec.first;
    }
    std::set<TimerKind> started;
    for (const TimerStart& t : out.timers) {
      ASSERT_TRUE(started.insert(t.id.kind).second) << "two starts of one kind, trial " << trial;
    }
    merged.Write(out.persist, out.sync);
    ExecuteTimers(out, &running_merged);
    for (uint64_t i = 0; i < 12; ++i) {
      std::string a, b;
      Status sa = one_by_one.Get(i, &a), sb = merged.Get(i, &b);
      ASSERT_EQ(sa.ok(), sb.ok()) << "trial " << trial << " instance " << i;
      EXPECT_EQ(a, b) << "trial " << trial << " instance " << i;
    }
    for (const std::string& name : names) {
      std::string a, b;
      Status sa = one_by_one.GetVariable(name, &a), sb = merged.GetVariable(name, &b);
      ASSERT_EQ(sa.ok(), sb.ok()) << "trial " << trial << " variable " << name;
      EXPECT_EQ(a, b) << "trial " << trial << " variable " << name;
    }
    // Every live timer runs, one by one and merged alike.
    EXPECT_EQ(Effective(running_steps, live_gen), live_gen) << "trial " << trial;
    EXPECT_EQ(Effective(running_merged, live_gen), live_gen) << "trial " << trial;
  }
}

}  // namespace
}  // namespace round_test
}  // namespace paxos
}  // namespace chorus
