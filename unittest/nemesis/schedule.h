// Copyright (c) chorus authors.
//
// The seeded fault schedule of a nemesis run: a list of steps, each one
// fault held for a while and then healed, with a quiet gap before the next.
// The same seed, kinds and length give the same schedule (kinds, picks,
// durations); a step's targets are chosen from its `pick` when it runs
// (which node is master then is up to the cluster).

#ifndef CHORUS_UNITTEST_NEMESIS_SCHEDULE_H_
#define CHORUS_UNITTEST_NEMESIS_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace nemesis {

enum class FaultKind : uint8_t {
  kKill,              // kill -9 a member, restart it on its data dir
  kPause,             // SIGSTOP a member, then SIGCONT
  kPartition,         // a random majority / minority split
  kIsolateMaster,     // the master alone on one side
  kBridge,            // two halves that only one member (the bridge) joins
  kLoss,              // every member drops a random share of peer packets
  kTransfer,          // CHORUS.TRANSFER the mastership under load
  kMemberChange,      // replace a member by a fresh node (CHORUS.CHANGEMEMBER)
  kIsolateFollower,   // a follower alone (the stale-reads plant's fault)
};
constexpr int kFaultKinds = 9;

const char* FaultKindName(FaultKind kind);
// "kill,pause,..." -> kinds. InvalidArgument naming an unknown one.
Status ParseFaultKinds(const std::string& list, std::vector<FaultKind>* kinds);

struct FaultStep {
  FaultKind kind = FaultKind::kKill;
  uint64_t pick = 0;     // chooses the step's targets
  int hold_ms = 0;       // how long the fault lasts
  int quiet_ms = 0;      // healed time after it
  int64_t start_ms = 0;  // from the start of the faults
};

// Steps until `seconds` are used up: each holds 1-3 s and is followed by
// 0.5-1.5 s of quiet. The kinds come from a shuffled deck of `kinds`
// (every kind once, then again in a new order), kMemberChange at most
// `member_changes` times.
std::vector<FaultStep> MakeSchedule(uint64_t seed, double seconds,
                                    const std::vector<FaultKind>& kinds, int member_changes);
std::string DescribeStep(const FaultStep& step);

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_SCHEDULE_H_
