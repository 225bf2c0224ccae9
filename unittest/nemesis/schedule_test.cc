// Copyright (c) chorus authors.
#include "schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace chorus {
namespace nemesis {
namespace {

std::vector<FaultKind> Kinds(const std::string& list) {
  std::vector<FaultKind> kinds;
  EXPECT_TRUE(ParseFaultKinds(list, &kinds).ok()) << list;
  return kinds;
}

TEST(ScheduleTest, SameSeedSameSchedule) {
  const std::vector<FaultKind> kinds = Kinds("kill,pause,partition,loss");
  const std::vector<FaultStep> a = MakeSchedule(7, 60, kinds, 0);
  const std::vector<FaultStep> b = MakeSchedule(7, 60, kinds, 0);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(DescribeStep(a[i]), DescribeStep(b[i]));
  const std::vector<FaultStep> c = MakeSchedule(8, 60, kinds, 0);
  std::string da, dc;
  for (const FaultStep& s : a) da += DescribeStep(s) + "\n";
  for (const FaultStep& s : c) dc += DescribeStep(s) + "\n";
  EXPECT_NE(da, dc);
}

TEST(ScheduleTest, StepsFitTheRunAndDoNotOverlap) {
  const std::vector<FaultStep> steps = MakeSchedule(3, 30, Kinds("kill,bridge"), 0);
  ASSERT_FALSE(steps.empty());
  int64_t free_at = 0;
  for (const FaultStep& s : steps) {
    EXPECT_GE(s.start_ms, free_at);
    EXPECT_LE(s.start_ms + s.hold_ms, 30000);
    EXPECT_GE(s.hold_ms, 1000);
    EXPECT_TRUE(s.kind == FaultKind::kKill || s.kind == FaultKind::kBridge);
    free_at = s.start_ms + s.hold_ms + s.quiet_ms;
  }
}

TEST(ScheduleTest, MemberChangesAreBounded) {
  const std::vector<FaultKind> kinds = Kinds("member_change,pause");
  for (int allowed : {0, 1, 2}) {
    int changes = 0;
    for (const FaultStep& s : MakeSchedule(11, 300, kinds, allowed)) {
      changes += s.kind == FaultKind::kMemberChange;
    }
    EXPECT_EQ(changes, allowed);
  }
  // Only member changes and none allowed: an empty schedule, not a hang.
  EXPECT_TRUE(MakeSchedule(11, 300, Kinds("member_change"), 0).empty());
}

TEST(ScheduleTest, EveryKindBeforeAnyTwice) {
  const std::vector<FaultKind> kinds = Kinds("kill,pause,partition,isolate_master,bridge,loss");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<FaultStep> steps = MakeSchedule(seed, 300, kinds, 0);
    ASSERT_GE(steps.size(), 2 * kinds.size());
    std::set<FaultKind> first(kinds.begin(), kinds.end());
    for (size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(first.erase(steps[i].kind), 1u) << seed;
    EXPECT_TRUE(first.empty());
  }
}

TEST(ScheduleTest, UnknownKindIsAnError) {
  std::vector<FaultKind> kinds;
  Status s = ParseFaultKinds("kill,netem", &kinds);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("netem"), std::string::npos);
  EXPECT_TRUE(ParseFaultKinds("", &kinds).IsInvalidArgument());
  ASSERT_TRUE(ParseFaultKinds("transfer,isolate_master", &kinds).ok());
  EXPECT_EQ(kinds.size(), 2u);
  EXPECT_STREQ(FaultKindName(kinds[1]), "isolate_master");
}

}  // namespace
}  // namespace nemesis
}  // namespace chorus
