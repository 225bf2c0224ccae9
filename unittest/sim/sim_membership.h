// Internal to the simulation (sim.h): the types and constants of
// --membership (sim_membership.cc, sim_scheduler.cc).
#ifndef CHORUS_UNITTEST_SIM_SIM_MEMBERSHIP_H_
#define CHORUS_UNITTEST_SIM_SIM_MEMBERSHIP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "paxos/ballot.h"
#include "paxos/membership.h"

namespace chorus {
namespace sim {
namespace internal {

// Per chaos tick the change scheduler acts
// (starts a scenario or proposes its next change) with this probability.
constexpr uint64_t kChangeTickPpm = 200000;
// Right after the scheduler proposed a change: another node proposes a
// racing change on its own view (one of the two Conflicts when both rest on
// the same version); with master election the master transfers its
// mastership, or crashes.
constexpr uint64_t kRaceChangePpm = 250000;
constexpr uint64_t kRaceTransferPpm = 250000;
constexpr uint64_t kRaceMasterCrashPpm = 100000;
// Per chaos tick: a removed node that still runs loses its disk and comes
// back as a new joiner (a new data dir, so a new incarnation: M5).
constexpr uint64_t kRemovedLoseDiskPpm = 5000;
// A scenario that has not finished after this many proposals is dropped.
constexpr int kMaxScenarioAttempts = 40;
// The scheduler keeps at least this many voters.
constexpr size_t kMinVoters = 3;

// --membership: a ProposeMembership not finished yet.
struct Change {
  int node = 0;
  paxos::MembershipChange change;
  bool driver = false;     // the scheduler's scenario waits for it
  bool cancelled = false;  // cancelled at its deadline
};

// --membership: one step of a scenario; `a` the node added or promoted,
// `b` the node removed (indexes; -1: none; kRemoveMaster resolves `b` to the
// lease holder when it proposes).
struct ChangeStep {
  // kTouch: the same members again (a racing change that only bumps the
  // version).
  enum Op { kAddFollower, kPromote, kRemove, kReplace, kRemoveMaster, kTouch } op = kAddFollower;
  int a = -1;
  int b = -1;
};
struct Scenario {
  const char* kind = "";  // SimResult::scenarios' key
  std::string name;       // empty: none running
  std::vector<ChangeStep> steps;
  size_t next = 0;
  uint64_t token = 0;  // the driver change in flight (0: none)
  int attempts = 0;
};

// A vote of a core step, persisted when its round executes.
struct StepVote {
  uint64_t instance = 0;
  paxos::Ballot ballot;
  std::string value;
};

// The address a member entry of node `id` carries (opaque to the core).
inline std::string Address(uint64_t id) { return "n" + std::to_string(id); }

// The entry of node `id` in `c`; nullptr: none.
inline const paxos::Member* FindMember(const paxos::Config& c, uint64_t id) {
  for (const paxos::Member& m : c.members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

}  // namespace internal
}  // namespace sim
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SIM_SIM_MEMBERSHIP_H_
