// The envelope of a replicated value: who proposed it, a proposal id unique
// per proposer incarnation, and the application's bytes. Two proposals with
// equal bytes stay distinguishable, which is what lets a proposer tell "my
// proposal was chosen here" from "someone else's equal bytes were".
#ifndef CHORUS_PAXOS_VALUE_H_
#define CHORUS_PAXOS_VALUE_H_

#include <cstdint>
#include <string>

namespace chorus {
namespace paxos {

// Returns the envelope of `data` (empty data: a noop filler).
std::string EncodeValue(uint64_t proposer, uint64_t id, const std::string& data);
// Parses an envelope. Returns false when `bytes` is not one.
bool DecodeValue(const std::string& bytes, uint64_t* proposer, uint64_t* id, std::string* data);

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_VALUE_H_
