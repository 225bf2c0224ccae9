// LogTrimmer: the log's start, and the rules that move it behind checkpoints.
//
// A checkpoint at instance S reflects every instance < S; the runtime makes,
// stores and transfers checkpoints (node/), the core only trims its log
// behind them and tells a peer that asks for trimmed values to fetch one.
// The log's start L (log_start) is the first instance it holds: every
// instance below L is covered by a checkpoint. Invariants:
//   L <= chosen_end;  L <= the newest durable checkpoint's instance (the log
//   holds every chosen instance from it on, so a restart that loads it can
//   replay the rest);  no record below L exists (recovery: Corruption).
// L and the chained checksum of L - 1 persist in kLogStartVariable (core.h),
// always in the SAME synced batch as the LogWriteBatch::delete_below that
// removes the records below L (the storage applies both atomically), so a
// restart finds the chain's start whatever else the crash lost.
//
//   input                        condition                 effect
//   ---------------------------  ------------------------  ---------------------------------
//   OnCheckpoint(S, limit)       S > chosen_end            S = chosen_end; InvalidArgument
//                                                          reported (a runtime bug)
//                                T = min(S - min(S, keep), keep = log_keep_instances
//                                        limit)
//                                T <= L                    nothing
//                                otherwise                 delete_below = T, log_start =
//                                                          (T, checksum(T - 1)), synced;
//                                                          L = T; cache below T dropped;
//                                                          membership ForgetBelow(T) and
//                                                          kMembershipVariable in the
//                                                          same synced write (M6)
//   InstallCheckpoint(S, c[, m]) S <= chosen_end           nothing (stale)
//                                otherwise                 learner: pending < S dropped,
//                                                          chosen_end = S, chain = c;
//                                                          acceptor forgets votes < S;
//                                                          own proposals in flight < S end
//                                                          Stopped (outcome unknown);
//                                                          delete_below = S, log_start =
//                                                          (S, c), synced; L = S; a known
//                                                          history m replaces this node's
//                                                          (persisted in the same write);
//                                                          pending values >= S applied
//   ASK_LEARN / CONFIRM_LEARN(F) F < L                     LEARN_VALUES{log_start = L, no
//                                                          entries}: "use a checkpoint"
//                                                          (never an empty or short batch
//                                                          taken as "nothing there")
//   ReadCatchup(F) (off-loop)    first record missing and  the same answer (a trim raced
//                                F < stored log_start      the planned read)
//   LEARN_VALUES{log_start = L'} L' > chosen_end, no       Outputs::checkpoint_needed
//                                usable entries            {from, L'} (one per step)
//   PREPARE(i) / ACCEPT(i)       i < L                     refused as behind, as for every
//                                                          i < chosen_end (acceptor.h)
//
// Why trimming is safe: every trimmed instance is chosen and below
// chosen_end, where this acceptor refuses every PREPARE and ACCEPT, so its
// forgotten votes there can never be counted again; a restart recovers
// chosen_end >= L from the variable.
#ifndef CHORUS_PAXOS_TRIM_H_
#define CHORUS_PAXOS_TRIM_H_

#include <cstdint>

#include "chorus/log_storage.h"
#include "chorus/status.h"
#include "paxos/core.h"

namespace chorus {
namespace paxos {

// Reads kLogStartVariable from `log`. OK (and the values), NotFound when the
// log was never trimmed, Corruption when it does not read or parse.
Status ReadLogStart(LogStorage* log, uint64_t* instance, uint32_t* checksum);

class LogTrimmer {
 public:
  LogTrimmer(CoreContext* ctx, Learner* learner) : ctx_(ctx), learner_(learner) {}
  void SetReconfig(Reconfig* reconfig) { reconfig_ = reconfig; }

  // Recovery: the stored log start, if any (kLogStartVariable). Sets the
  // learner's chain start. Corruption when it does not parse.
  Status Recover();

  uint64_t log_start() const { return log_start_; }

  // Core::OnCheckpoint (the table above).
  void OnCheckpoint(uint64_t instance, uint64_t trim_limit);
  // Core::InstallCheckpoint's write: the log starts at `instance` now.
  // REQUIRES: instance > log_start().
  void Installed(uint64_t instance, uint32_t checksum);

 private:
  // delete_below = start and kLogStartVariable = (start, checksum), synced.
  void Persist(uint64_t start, uint32_t checksum);

  CoreContext* const ctx_;
  Learner* const learner_;
  Reconfig* reconfig_ = nullptr;
  uint64_t log_start_ = 0;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_TRIM_H_
