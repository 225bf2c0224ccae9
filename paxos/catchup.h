// Catch-up reads: the LEARN_VALUES reply to a lagging peer, built from the
// LogStorage alone, so that the runtime can build it off the group's loop.
//
// The core answers ASK_LEARN / CONFIRM_LEARN itself while its cache of
// recently chosen values holds the first instance asked for (the cache is
// the newest chosen_cache_size values, contiguous up to chosen_end, so it
// then holds the whole batch). Otherwise it plans a CatchupRead
// (outputs.h) instead of reading the log in the middle of a step; the
// runtime (node/catchup_reader.h) and the simulation (unittest/sim) execute
// it with ReadCatchup below, after the round that planned it is persisted.
//
// Why after the persist: a read covers instances below the core's
// chosen_end, and the newest of them may have been chosen in that very round,
// whose chosen records are in the round's own write (the core writes a
// chosen record in the round that applies it). Read before that write, the
// batch would stop at the first of them (its record missing, or still an
// accepted, not chosen, one): never a wrong value, since only chosen records
// are sent, but a short or empty batch, and an empty one leaves the asker
// idle until its next learn tick.
//
// Pure like the rest of paxos/: no threads, no clock; it only reads `log`.
#ifndef CHORUS_PAXOS_CATCHUP_H_
#define CHORUS_PAXOS_CATCHUP_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "chorus/log_storage.h"
#include "chorus/status.h"
#include "paxos/outputs.h"

namespace chorus {
namespace paxos {

struct CatchupReply {
  // The serialized LEARN_VALUES message for read.peer (header as
  // CoreContext::Send fills it): send it when not empty. Empty when it holds
  // no entry and is no "use a checkpoint" answer (log_start below).
  std::string bytes;
  size_t entries = 0;
  // One past the last entry; read.first when there is none.
  uint64_t end = 0;
  // Non-zero: the reply is "use a checkpoint" (no entries): the log starts
  // at log_start, above read.first (trimmed since the core planned it).
  uint64_t log_start = 0;
};

// Reads the chosen values of read.first, read.first + 1, ... below
// read.chosen_end from `log` into a LEARN_VALUES reply: each entry the
// instance, its value and the chained checksum its record stores, at most
// read.max_count entries, and no more once the values hold read.max_bytes
// (the first entry always goes in). A record is sent only if it reads, parses,
// is chosen and its checksum extends the previous entry's, so a bad record is
// never passed on, nor anything after it (the asker needs them in order).
// Returns OK when the batch ended at a bound or at read.chosen_end; NotFound
// when it stopped at a missing record (the log was trimmed there); Corruption
// when it stopped at a bad one. Whatever it returns, *reply holds the entries
// before the stop, which are good to send (reply->entries may be 0).
// When the FIRST record is missing and the log's start (kLogStartVariable,
// trim.h) lies above read.first, a trim raced the planned read: the reply is
// "use a checkpoint" (log_start set, no entries, bytes not empty; NotFound
// is still returned), as the core answers below its log start.
Status ReadCatchup(const CatchupRead& read, LogStorage* log, CatchupReply* reply);

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_CATCHUP_H_
