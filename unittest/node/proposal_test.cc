#include "node/proposal.h"

#include <gtest/gtest.h>

namespace chorus {
namespace proposal_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A request queued at t0 with a deadline of `timeout` that the loop took
// `taken_after` later.
ProposalRequest Queued(Clock::time_point t0, milliseconds taken_after, milliseconds timeout) {
  ProposalRequest r;
  r.enqueued = t0;
  r.taken = t0 + taken_after;
  r.deadline = t0 + timeout;
  return r;
}

TEST(CheckNotStartedTest, WaitingWithinTheLimitsMayStillStart) {
  const auto t0 = Clock::now();
  const ProposalRequest r = Queued(t0, milliseconds(1), milliseconds(5000));
  EXPECT_TRUE(CheckNotStarted(r, t0 + milliseconds(2000), milliseconds(2000), 3).ok());
}

TEST(CheckNotStartedTest, WaitingForRoomInTheGroupIsOverload) {
  const auto t0 = Clock::now();
  const ProposalRequest r = Queued(t0, milliseconds(1), milliseconds(5000));
  Status s = CheckNotStarted(r, t0 + milliseconds(2001), milliseconds(2000), 3);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(s.message().find("group 3 overloaded"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("never proposed"), std::string::npos) << s.message();
}

TEST(CheckNotStartedTest, ALoopThatTookTheProposalLateIsAStallNotOverload) {
  // The process was paused (SIGSTOP) for 3 s right after the call queued it.
  const auto t0 = Clock::now();
  const ProposalRequest r = Queued(t0, milliseconds(3000), milliseconds(5000));
  Status s = CheckNotStarted(r, t0 + milliseconds(3000), milliseconds(2000), 3);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(s.message().find("group 3 stalled"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("overloaded"), std::string::npos) << s.message();
}

TEST(CheckNotStartedTest, APassedDeadlineIsTimeout) {
  const auto t0 = Clock::now();
  const ProposalRequest r = Queued(t0, milliseconds(1), milliseconds(100));
  Status s = CheckNotStarted(r, t0 + milliseconds(100), milliseconds(2000), 0);
  EXPECT_TRUE(s.IsTimeout()) << s.ToString();
  EXPECT_NE(s.message().find("never proposed"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace proposal_test
}  // namespace chorus
