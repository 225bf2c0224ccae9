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

// System values: envelopes whose id has kSystemValueBit set carry a value of
// chorus itself, not the application's: their data is one SystemValueKind
// byte followed by its payload (a membership change: membership.h). They
// are replicated, checksummed and chosen like any value; the learner
// applies them to the core and reports them as noops to the state
// machines. The proposer draws the ids of application values with the bit
// clear, so the two never mix.
constexpr uint64_t kSystemValueBit = uint64_t{1} << 63;
enum class SystemValueKind : uint8_t {
  kMembershipChange = 1,
};
// The envelope of a system value of `kind` with `payload`; `id` gets the
// kSystemValueBit.
std::string EncodeSystemValue(uint64_t proposer, uint64_t id, SystemValueKind kind,
                              const std::string& payload);
// True when `data` (an envelope's data) and `id` (its id) form a system
// value; then *kind and *payload are set. A system-bit id with data that is
// no known kind is false with *kind = 0 (the learner treats it as a noop).
bool DecodeSystemValue(uint64_t id, const std::string& data, SystemValueKind* kind,
                       std::string* payload);

// Returns the envelope of `data` (empty data: a noop filler).
std::string EncodeValue(uint64_t proposer, uint64_t id, const std::string& data);
// Parses an envelope. Returns false when `bytes` is not one.
bool DecodeValue(const std::string& bytes, uint64_t* proposer, uint64_t* id, std::string* data);

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_VALUE_H_
