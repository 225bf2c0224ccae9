// Learner: turns chosen notices and catch-up streams into chosen values
// emitted in instance order, exactly once each.
//
// Chained checksum: checksum(i) = crc32c::Extend(checksum(i-1), value(i)),
// checksum(-1) = 0, computed when instance i is applied in order and stored in
// its record. Catch-up entries carry the sender's checksum; a mismatch halts
// the learner (nothing more is applied) and reports Corruption.
//
// Catch-up is pulled: ASK_LEARN(from) to a peer that is ahead (or, on each
// idle learn tick, to a random peer), the peer answers LEARN_VALUES with a
// bounded batch (from its cache, or read from its log off its loop:
// catchup.h), and the learner asks for the next batch with CONFIRM_LEARN
// while the peer says it has more.
//
// Gaps: values chosen beyond a gap that stays for two learn ticks make the
// proposer run phase 1 (which fills it); a node that cannot (it votes in no
// configuration still to govern, or it joined and knows no configuration of
// the gap) broadcasts CHOSEN for the lowest of them instead, so that the
// voters see the gap and one of them fills it. Likewise a vote of this
// node's acceptor (at or above chosen_end) that stays undecided for two
// learn ticks without progress: its proposer may be gone (crashed, removed),
// and so may every record of its choice (a chosen record is unsynced), and
// phase 1 adopts it, so it gets decided.
//
// Work nobody would decide: an instance is decided only when a voter
// proposes there, and a quiet group proposes nothing. A node that holds work
// it cannot get decided itself (Proposer::FillWanted: a removed node's slot,
// accepted by a minority or by nobody; a joiner's proposal below the first
// configuration it knows) sends, on every learn tick without progress,
// FILL(i) to a voter of Latest() drawn at random; that voter fills every
// free instance up to i (Proposer::OnFill: phase 1, which adopts a value
// accepted there, else noops).
//
// System values (value.h): a membership change is applied to the history
// (reconfig.h) in the step that applies its instance, before the proposer
// and master hear of the instance, and goes out as a noop. Idle-tick peers:
// the members of Latest() (voters and followers), or join_peers while the
// node knows no membership.
//
// Trimmed logs (trim.h has the rules): a peer whose log starts above the
// instance asked for answers "use a checkpoint" (LEARN_VALUES with
// log_start, no entries); the learner then reports Outputs::
// checkpoint_needed and stops asking on every peer message (its learn ticks
// still ask, so a lost answer or a failed transfer is asked for again) until
// the runtime installs a checkpoint (Install) or values arrive.
#ifndef CHORUS_PAXOS_LEARNER_H_
#define CHORUS_PAXOS_LEARNER_H_

#include <cstdint>
#include <map>
#include <string>

#include "paxos/core.h"

namespace chorus {
namespace paxos {

class Learner {
 public:
  explicit Learner(CoreContext* ctx) : ctx_(ctx) {}
  void SetRoles(Acceptor* acceptor, Proposer* proposer, Master* master,
                const LogTrimmer* trimmer, Reconfig* reconfig) {
    acceptor_ = acceptor;
    proposer_ = proposer;
    master_ = master;
    trimmer_ = trimmer;
    reconfig_ = reconfig;
  }

  // Recovery, first: the log starts at `instance` (kLogStartVariable) and
  // the chain continues from `checksum`.
  void RestoreStart(uint64_t instance, uint32_t checksum);
  // Recovery, in instance order: `instance` is chosen with `value` and its
  // stored chained checksum. Returns Corruption if the chain breaks, or the
  // instance lies below the restored start.
  Status RestoreChosen(uint64_t instance, const std::string& value, uint32_t checksum);

  // The log was trimmed below `instance`: the cache drops those values.
  void DropCacheBelow(uint64_t instance);
  // A checkpoint of [0, instance) with chain checksum `checksum` was loaded
  // (REQUIRES instance > chosen_end()): pending values below it are dropped,
  // the chosen prefix jumps there, the cache is cleared, pending values from
  // `instance` on are applied, and catch-up goes on from there.
  void Install(uint64_t instance, uint32_t checksum);

  // Arms the learn timer.
  void Start();

  // `value` is chosen at `instance` (from any source). Applies every value
  // that is now contiguous. A different value for an instance already known
  // chosen halts the learner (a safety violation). An instance at or beyond
  // chosen_end + window is ignored (counted in beyond_window): pending()
  // never holds more than `window` values.
  void Learn(uint64_t instance, const std::string& value);

  void OnChosen(const PaxosMsg& msg) { Learn(msg.instance(), msg.value()); }
  // Answers a catch-up request with a bounded LEARN_VALUES batch: from the
  // cache when it holds the first instance asked for, else by planning a
  // CatchupRead (Outputs::catchup_reads, catchup.h) that the runtime serves
  // from the log off its loop. Returns the end of the batch sent or planned
  // (the asker's chosen_end once it applied it), 0 when there is nothing.
  uint64_t OnAskLearn(const PaxosMsg& msg);
  void OnLearnValues(const PaxosMsg& msg);
  void OnTick();
  // Every peer message reports its sender's chosen_end. `urgent`: ask at once
  // if the peer is ahead at all (else only when far ahead).
  void NotePeer(uint64_t peer, uint64_t peer_chosen_end, bool urgent);

  uint64_t chosen_end() const { return chosen_end_; }
  // The chained checksum of chosen_end() - 1 (0 when chosen_end() is 0).
  uint32_t last_checksum() const { return last_checksum_; }
  bool halted() const { return halted_; }
  bool IsChosen(uint64_t instance) const {
    return instance < chosen_end_ || pending_.count(instance) != 0;
  }
  // Chosen values beyond a gap, not applied yet.
  const std::map<uint64_t, std::string>& pending() const { return pending_; }
  // The chosen envelope of `instance` (applied or pending).
  Status ChosenEnvelope(uint64_t instance, std::string* value);
  // The value and chained checksum of an applied instance (cache, else log:
  // a synchronous read, for recovery-time callers and ChosenEnvelope;
  // catch-up never uses it).
  Status Applied(uint64_t instance, std::string* value, uint32_t* checksum);

 private:
  void Advance();
  void ApplyOne(uint64_t instance, const std::string& value);
  void Ask(uint64_t peer, MsgType type);
  void Halt(const Status& s);
  void Cache(uint64_t instance, const std::string& value, uint32_t checksum);
  // A peer to ask on an idle tick: a member of Latest() other than this
  // node, or one of join_peers while no membership is known; 0: none.
  uint64_t RandomPeer();
  // A voter of Latest() other than this node, drawn; 0: none.
  uint64_t RandomVoter();
  // "Use a checkpoint": the LEARN_VALUES answer to a request for `first`,
  // below the log's start.
  void AnswerUseCheckpoint(uint64_t peer, uint64_t first);

  CoreContext* const ctx_;
  Acceptor* acceptor_ = nullptr;
  Proposer* proposer_ = nullptr;
  Master* master_ = nullptr;
  const LogTrimmer* trimmer_ = nullptr;
  Reconfig* reconfig_ = nullptr;
  uint64_t chosen_end_ = 0;
  bool restored_start_ = false;  // RestoreStart was called (a trimmed log)
  uint32_t last_checksum_ = 0;
  bool halted_ = false;
  std::map<uint64_t, std::string> pending_;
  std::map<uint64_t, std::pair<std::string, uint32_t>> cache_;  // bounded
  uint64_t peer_best_ = 0;
  uint64_t peer_best_end_ = 0;
  bool ask_outstanding_ = false;
  uint64_t last_tick_end_ = 0;
  int stuck_ticks_ = 0;
  // A peer said "use a checkpoint" and no value came since: ask on learn
  // ticks only (each answer would report checkpoint_needed again).
  bool awaiting_checkpoint_ = false;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_LEARNER_H_
