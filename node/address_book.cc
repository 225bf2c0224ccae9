#include "node/address_book.h"

#include "node/core_options.h"

namespace chorus {

AddressBook::AddressBook(const Options& options, int group_count)
    : groups_(static_cast<size_t>(group_count > 0 ? group_count : 0)) {
  // join first: an id both lists name takes the nodes address.
  for (const NodeInfo& n : options.join) fixed_[n.id()] = n;
  for (const NodeInfo& n : options.nodes) fixed_[n.id()] = n;
  fixed_[options.self.id()] = options.self;
  MutexLock lock(&mu_);
  RebuildLocked();
}

bool AddressBook::SetGroup(uint32_t group, const paxos::Membership& membership) {
  std::map<uint64_t, NodeInfo> recorded;
  for (const paxos::Config& c : membership.configs()) {  // oldest first: newest wins
    for (const paxos::Member& m : c.members) {
      NodeInfo n;
      // An address that does not parse (it came from the log) names no
      // reachable node: the id stays unknown rather than wrong.
      if (ParseMemberAddress(m.id, m.address, &n).ok()) recorded[m.id] = n;
    }
  }
  MutexLock lock(&mu_);
  if (group >= groups_.size() || groups_[group] == recorded) return false;
  groups_[group] = std::move(recorded);
  const std::map<uint64_t, NodeInfo> before = book_;
  RebuildLocked();
  return book_ != before;
}

void AddressBook::RebuildLocked() {
  book_.clear();
  for (const auto& g : groups_) {
    for (const auto& [id, n] : g) book_[id] = n;
  }
  for (const auto& [id, n] : fixed_) book_[id] = n;
}

bool AddressBook::Find(uint64_t id, NodeInfo* node) const {
  MutexLock lock(&mu_);
  auto it = book_.find(id);
  if (it == book_.end()) return false;
  *node = it->second;
  return true;
}

std::vector<NodeInfo> AddressBook::Peers() const {
  MutexLock lock(&mu_);
  std::vector<NodeInfo> out;
  out.reserve(book_.size());
  for (const auto& [id, n] : book_) out.push_back(n);
  return out;
}

}  // namespace chorus
