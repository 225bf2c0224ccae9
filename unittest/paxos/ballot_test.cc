#include "paxos/ballot.h"

#include <gtest/gtest.h>

#include "paxos/options.h"

namespace chorus {
namespace paxos {
namespace ballot_test {
namespace {

TEST(BallotTest, TotalOrderByNumberThenNode) {
  EXPECT_LT(Ballot(1, 9), Ballot(2, 1));
  EXPECT_LT(Ballot(2, 1), Ballot(2, 3));
  EXPECT_EQ(Ballot(2, 3), Ballot(2, 3));
  EXPECT_NE(Ballot(2, 3), Ballot(2, 4));
  EXPECT_GE(Ballot(2, 3), Ballot(2, 3));
  EXPECT_GT(Ballot(3, 0), Ballot(2, 99));
  EXPECT_TRUE(Ballot().IsNull());
  EXPECT_LT(Ballot(), Ballot(1, 1));
}

TEST(BallotTest, RoundTripsThroughProto) {
  BallotPb pb;
  Ballot(7, 42).ToPb(&pb);
  EXPECT_EQ(Ballot::FromPb(pb), Ballot(7, 42));
}

TEST(CoreOptionsTest, Validation) {
  CoreOptions o;
  EXPECT_TRUE(o.Validate().IsInvalidArgument());  // no members
  o.members = {1, 2, 3};
  EXPECT_TRUE(o.Validate().IsInvalidArgument());  // self 0
  o.self = 4;
  EXPECT_TRUE(o.Validate().IsInvalidArgument());  // self not a member
  o.self = 2;
  EXPECT_TRUE(o.Validate().ok());
  o.members = {1, 2, 2};
  EXPECT_TRUE(o.Validate().IsInvalidArgument());  // duplicate
  o.members = {0, 2};
  EXPECT_TRUE(o.Validate().IsInvalidArgument());  // id 0
  o.members = {1, 2, 3};
  o.max_inflight = 0;
  EXPECT_TRUE(o.Validate().IsInvalidArgument());
  o.max_inflight = 1;
  EXPECT_EQ(o.Majority(), 2u);
  o.members = {1, 2, 3, 4};
  EXPECT_EQ(o.Majority(), 3u);
}

}  // namespace
}  // namespace ballot_test
}  // namespace paxos
}  // namespace chorus
