// Round: group commit. It merges the Outputs of successive core steps into
// ONE round that the runtime executes as if it were a single step: one log
// write (one fsync), then the sends, the applies and the timers of all the
// steps (core.h, "Execute(out) MUST do"). Like etcd's RawNode accumulating a
// Ready, the merging is part of the pure core, so the simulation
// (unittest/sim) runs exactly the rounds the runtime (node/group.cc) runs.
//
// Why merging is safe: nothing of a round is sent before all of its records
// are durable (but requests that carry no vote of this node, outputs.h:
// OutMessage::before_persist), so every reply still leaves after the record
// it depends on.
// Why the rules below: executing the merged round must leave the log, the
// network and the timers as executing the steps one by one would have.
//
//   step field           merged round                     why
//   -------------------  -------------------------------  --------------------------
//   persist.records      one entry per instance: the      a batch never holds two
//                        latest step's record wins        entries for one key
//                                                         (log_storage.h)
//   persist.variables    one entry per name: last wins    same
//   persist.delete_below the max over the steps; each     storage applies a batch's
//                        step's trim also drops the       trim before its records,
//                        records EARLIER steps merged     so a record of the
//                        below it (even a trim below the  trimming step or a later
//                        round's); its own and later      one survives whatever
//                        steps' records stay              its id
//   sync                 OR over the steps                one durable write covers
//                                                         every step
//   messages             appended in step order           sends as step by step
//   messages'            all cleared when the round       a promise any step made
//   before_persist       persists a variable or a trim    must be durable before
//                                                         a request of its ballot
//                                                         leaves (outputs.h)
//   catchup_reads        appended in step order           each is served after
//                                                         the round's persist,
//                                                         which holds the records
//                                                         a step before it wrote
//                                                         (catchup.h)
//   chosen               appended in step order           instance order, once each
//   finished             appended in step order           after their chosen values
//   barriers             appended in step order           after the chosen values
//                                                         their instance covers
//   checkpoint_needed    appended in step order           the runtime ignores
//                                                         repeats while a transfer
//                                                         runs
//   master_changed,      OR; the latest changed step's    the view after the round
//   master               view                             is the last one reported
//   membership_changed,  OR; the latest changed step's    the history after the
//   membership           history                          round is the last one
//   errors               appended in step order           reports only
//   cancel_timers        appended in step order; each     a timer started and
//                        also drops this round's start    cancelled within the round
//                        with the same id                 never runs
//   timers               a start drops this round's       one live timer per kind:
//                        earlier starts of its kind, then the later start supersedes
//                        is appended                      (the core would ignore the
//                                                         older one if it fired)
//
// The round executes its cancels before its starts, as a single step does.
//
// Thread safety: none; one round belongs to one group's loop (or one
// simulated node).
#ifndef CHORUS_PAXOS_ROUND_H_
#define CHORUS_PAXOS_ROUND_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "paxos/options.h"
#include "paxos/outputs.h"

namespace chorus {
namespace paxos {

class Round {
 public:
  // `mutation`: TestMutation::kRoundKeepsFirst breaks the last-wins rule
  // (tests only); every other value merges correctly.
  explicit Round(TestMutation mutation = TestMutation::kNone) : mutation_(mutation) {}

  // Merges the outputs of the next core step (the steps must be added in the
  // order the core produced them). Moves out of *step and clears it, so the
  // caller can hand it to the core's next input.
  void Add(Outputs* step);

  // True when executing the round would do nothing: no persist (records,
  // variables, trim), messages, catch-up reads, chosen values, finished
  // proposals, barriers, checkpoint needs, master change, membership change,
  // timers, cancels or errors. A round of steps that all produced nothing is empty.
  bool empty() const;

  // The number of steps added since the round began (empty ones included).
  size_t steps() const { return steps_; }

  // Hands out the merged round in *round (its old contents are replaced):
  // persist.records in instance order, persist.variables in name order, each
  // key once. The Round starts over, empty.
  void Take(Outputs* round);

  // Drops the round unexecuted (e.g. the simulated node crashed): nothing of
  // it was persisted, sent or applied.
  void Clear();

 private:
  const TestMutation mutation_;
  std::map<uint64_t, std::string> records_;
  std::map<std::string, std::string> variables_;
  // Every field but persist.records / persist.variables, merged.
  Outputs merged_;
  size_t steps_ = 0;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_ROUND_H_
