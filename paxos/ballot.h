// Ballot: a proposal number made unique by the proposer's node id.
#ifndef CHORUS_PAXOS_BALLOT_H_
#define CHORUS_PAXOS_BALLOT_H_

#include <cstdint>
#include <string>
#include <tuple>

#include "paxos.pb.h"

namespace chorus {
namespace paxos {

// Totally ordered by (number, node_id). The null ballot (0, 0) is below every
// ballot a proposer uses (proposers start at number 1).
struct Ballot {
  uint64_t number = 0;
  uint64_t node_id = 0;

  Ballot() = default;
  Ballot(uint64_t n, uint64_t id) : number(n), node_id(id) {}

  bool IsNull() const { return number == 0 && node_id == 0; }
  std::string ToString() const {
    return "(" + std::to_string(number) + "," + std::to_string(node_id) + ")";
  }

  void ToPb(BallotPb* pb) const {
    pb->set_number(number);
    pb->set_node_id(node_id);
  }
  static Ballot FromPb(const BallotPb& pb) { return Ballot(pb.number(), pb.node_id()); }
};

inline bool operator<(const Ballot& a, const Ballot& b) {
  return std::tie(a.number, a.node_id) < std::tie(b.number, b.node_id);
}
inline bool operator==(const Ballot& a, const Ballot& b) {
  return a.number == b.number && a.node_id == b.node_id;
}
inline bool operator!=(const Ballot& a, const Ballot& b) { return !(a == b); }
inline bool operator>(const Ballot& a, const Ballot& b) { return b < a; }
inline bool operator<=(const Ballot& a, const Ballot& b) { return !(b < a); }
inline bool operator>=(const Ballot& a, const Ballot& b) { return !(a < b); }

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_BALLOT_H_
