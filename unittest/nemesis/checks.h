// Copyright (c) chorus authors.
//
// The nemesis's checks after the faults are healed, besides the
// linearizability checker: the members converge on one state, and no
// acknowledged write is lost.

#ifndef CHORUS_UNITTEST_NEMESIS_CHECKS_H_
#define CHORUS_UNITTEST_NEMESIS_CHECKS_H_

#include <atomic>
#include <string>
#include <vector>

#include "cluster.h"
#include "history.h"

namespace chorus {
namespace nemesis {

// Waits (at most timeout_ms, or until *stop) until a fence write succeeds
// through some member and then every member answers the same DEBUG DIGEST
// ("<keys>:<crc>"). OK with *digest; Timeout with *detail saying what each
// member answered last.
Status Converge(Cluster* cluster, int timeout_ms, const std::atomic<bool>* stop,
                std::string* digest, std::string* detail);

struct LostAcks {
  size_t acknowledged = 0;  // write-once writes answered +OK
  size_t reads = 0;         // (key, member) pairs read back
  size_t lost = 0;          // of those, missing or another value
  std::vector<std::string> examples;  // the first few, for the report
};

// Reads every acknowledged write-once key of `history` back on every
// member (MGET in chunks, linearizable reads). A member that does not
// answer is an error (the cluster converged just before).
Status CheckLostAcks(Cluster* cluster, const std::vector<Operation>& history, LostAcks* result);

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_CHECKS_H_
