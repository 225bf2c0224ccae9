// SafetyChecker: the simulation's safety oracle. It watches what each node
// emits (chosen values, in order) and sends (PROMISE / ACCEPTED), across
// crashes and restarts, and reports the first rule it sees broken:
//   - no two nodes learn different values for an instance;
//   - a node's learned values never change, also across restarts (a
//     restarted node may recover a shorter chosen prefix than it learned:
//     chosen records are written unsynced; what it learns again must be
//     what it learned before);
//   - values come out in instance order, each once per incarnation (a
//     checkpoint install skips to its instance; a restart of a trimmed log
//     replays from its log start);
//   - every chosen value was proposed, and is chosen at one instance only;
//   - an acceptor keeps its word: once it sent a PROMISE or ACCEPTED for
//     ballot b, it never answers a lower ballot with either, in any
//     incarnation (checking it where it is given catches a lost promise even
//     in runs where no second value happens to get chosen).
// Single-threaded; deterministic.
//
// MasterChecker: the oracle of master election (CoreOptions::master_election):
//   - at most one node holds a valid lease at any virtual instant (the sim
//     asks every live node's Core::HoldsLease() after every step, with that
//     node's clock read at the step's virtual time: a lease only starts on an
//     input, and time alone only ends one, so checking right after each step
//     sees every overlap; a master transfer is covered by the same check);
//   - a read is linearizable: the barrier a ReadBarrier reports (every value
//     chosen before the call is below it) lies beyond the instance of every
//     write (a proposal reported chosen to its client) that completed before
//     the read began.
#ifndef CHORUS_UNITTEST_SIM_CHECKER_H_
#define CHORUS_UNITTEST_SIM_CHECKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "paxos/ballot.h"
#include "paxos/core.h"

namespace chorus {
namespace sim {

class SafetyChecker {
 public:
  using Report = std::function<void(const std::string& violation)>;

  // `ids`: the node ids, by node index. `report` gets each violation.
  SafetyChecker(std::vector<uint64_t> ids, Report report);

  // `data` was proposed (data are unique per run).
  void Proposed(const std::string& data) { proposed_.insert(data); }
  // The proposal of `data` ended with a definite failure (not chosen, and
  // never to be): it must not be chosen, now or later.
  void Failed(const std::string& data);
  // Node i started on a recovered core: its chosen prefix must be what it
  // learned before. Returns false after reporting a violation.
  bool Recovered(int i, paxos::Core* core);
  // Node i installed a checkpoint of [0, instance): it emits `instance` next
  // (what it never emitted below it stays unknown to this checker).
  void Installed(int i, uint64_t instance);
  // Node i lost its disk: a new data dir, a new acceptor (its word and its
  // emission order start over; what it learns must still agree).
  void DiskLost(int i);
  // Node i emitted chosen value `v`. Returns true when the node learned it
  // for the first time (false when it learned it again after a restart, or
  // on a violation).
  bool Learned(int i, const paxos::ChosenValue& v);
  // Node i sent `bytes` (a serialized PaxosMsg).
  void Sent(int i, const std::string& bytes);

  // Whether the value chosen at `instance` carries `data`.
  bool ChosenIs(uint64_t instance, const std::string& data) const;
  // Instances chosen so far (by any node).
  uint64_t chosen() const { return global_.size(); }

  // The identity of a chosen value: proposer, proposal id, data.
  static std::string Key(const paxos::ChosenValue& v);

 private:
  struct NodeView {
    uint64_t id = 0;
    // Learned keys, in instance order (all incarnations); "" where unknown
    // (below a checkpoint it installed).
    std::vector<std::string> history;
    uint64_t applied = 0;              // instances this incarnation emitted (or recovered)
    paxos::Ballot acknowledged;        // highest ballot it sent a PROMISE / ACCEPTED for
  };

  const Report report_;
  std::vector<NodeView> nodes_;
  std::set<std::string> proposed_;
  std::set<std::string> failed_;
  std::map<std::string, uint64_t> chosen_at_;  // data -> instance
  std::map<uint64_t, std::string> global_;     // instance -> key
};

class MasterChecker {
 public:
  using Report = SafetyChecker::Report;

  MasterChecker(std::vector<uint64_t> ids, Report report);

  // After a step at virtual time `now`: `holders` are the indexes of the
  // nodes that hold a valid lease now.
  void Leases(uint64_t now, const std::vector<int>& holders);
  // Node i's TransferMaster(target) (0: step down) returned OK at `now`.
  void Transferred(int i, uint64_t target, uint64_t now);

  // A write was reported chosen at `instance` to its client.
  void WriteCompleted(uint64_t instance);
  // A read begins: returns what its barrier must reach (one past the
  // largest instance of the writes completed so far; 0 if none).
  uint64_t ReadBegins() const { return min_barrier_; }
  // Node i's read, begun at virtual time `began` (when the writes completed
  // before it required `required`), reported barrier `barrier`. `lease`:
  // served by a master inside its lease (no message).
  void ReadCompleted(int i, uint64_t began, uint64_t required, uint64_t barrier, bool lease);

 private:
  const Report report_;
  const std::vector<uint64_t> ids_;
  uint64_t min_barrier_ = 0;
  int transfer_from_ = -1;            // the last TransferMaster (or step down), if any
  uint64_t transfer_target_ = 0;
  uint64_t transfer_at_ = 0;
};

}  // namespace sim
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SIM_CHECKER_H_
