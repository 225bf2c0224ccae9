// AddressBook: the addresses of every node this node may talk to, and what
// the transport is told (Transport::SetPeers).
//
// It is the union of: every member of every configuration that a group of
// this node keeps (its membership history, newest included), Options::nodes
// and Options::join. For an id that Options::nodes names, the address given
// there wins over the one a membership recorded (a member that moved keeps
// its id and is reached at its new address once its peers are restarted
// with it); otherwise the newest recorded address wins.
//
// Thread safety: every method may be called from any thread (group loops
// update it, API calls read it); `mu_` guards the state.
#ifndef CHORUS_NODE_ADDRESS_BOOK_H_
#define CHORUS_NODE_ADDRESS_BOOK_H_

#include <cstdint>
#include <map>
#include <vector>

#include "chorus/options.h"
#include "chorus/transport.h"
#include "paxos/membership.h"
#include "utils/mutex.h"

namespace chorus {

class AddressBook {
 public:
  AddressBook(const Options& options, int group_count);

  AddressBook(const AddressBook&) = delete;
  AddressBook& operator=(const AddressBook&) = delete;

  // Group `group`'s membership history is now `membership`. Returns true
  // when the book changed (the caller then tells the transport: Peers()).
  bool SetGroup(uint32_t group, const paxos::Membership& membership);

  // The address of node `id`: true and *node filled, or false when unknown.
  bool Find(uint64_t id, NodeInfo* node) const;
  // Every node of the book, self included, sorted by id.
  std::vector<NodeInfo> Peers() const;

 private:
  void RebuildLocked() REQUIRES(mu_);

  std::map<uint64_t, NodeInfo> fixed_;  // Options::nodes and join; read-only

  mutable Mutex mu_;
  // Per group: id -> address its kept configurations record (newest wins).
  std::vector<std::map<uint64_t, NodeInfo>> groups_ GUARDED_BY(mu_);
  std::map<uint64_t, NodeInfo> book_ GUARDED_BY(mu_);
};

}  // namespace chorus

#endif  // CHORUS_NODE_ADDRESS_BOOK_H_
