#include "paxos/options.h"

#include <algorithm>
#include <set>
#include <string>

#include "paxos/membership.h"

namespace chorus {
namespace paxos {

bool CoreOptions::IsMember(uint64_t id) const {
  return std::find(members.begin(), members.end(), id) != members.end();
}

Status CoreOptions::Validate() const {
  if (members.empty() && !joined) {
    return Status::InvalidArgument("CoreOptions.members is empty (allowed only when joined)");
  }
  if (members.size() > kMaxMembers) {
    return Status::InvalidArgument("CoreOptions.members holds more than " +
                                   std::to_string(kMaxMembers) + " ids");
  }
  std::set<uint64_t> seen;
  for (uint64_t m : members) {
    if (m == 0) return Status::InvalidArgument("CoreOptions.members holds node id 0");
    if (!seen.insert(m).second) {
      return Status::InvalidArgument("CoreOptions.members holds node id " + std::to_string(m) +
                                     " twice");
    }
  }
  if (self == 0) return Status::InvalidArgument("CoreOptions.self is 0");
  if (!joined && !IsMember(self)) {
    return Status::InvalidArgument("CoreOptions.self " + std::to_string(self) +
                                   " is not in members");
  }
  if (!member_addresses.empty() && member_addresses.size() != members.size()) {
    return Status::InvalidArgument(
        "CoreOptions.member_addresses must be empty or hold one address per member");
  }
  for (const std::string& a : member_addresses) {
    if (a.size() > kMaxMemberAddressBytes) {
      return Status::InvalidArgument("CoreOptions.member_addresses holds an address longer than " +
                                     std::to_string(kMaxMemberAddressBytes) + " bytes");
    }
  }
  for (uint64_t p : join_peers) {
    if (p == 0) return Status::InvalidArgument("CoreOptions.join_peers holds node id 0");
  }
  if (max_inflight < 1) return Status::InvalidArgument("CoreOptions.max_inflight must be >= 1");
  if (prepare_timeout_ms < 1) {
    return Status::InvalidArgument("CoreOptions.prepare_timeout_ms must be >= 1");
  }
  if (accept_timeout_ms < 1) {
    return Status::InvalidArgument("CoreOptions.accept_timeout_ms must be >= 1");
  }
  if (learn_interval_ms < 1) {
    return Status::InvalidArgument("CoreOptions.learn_interval_ms must be >= 1");
  }
  if (activation_distance < max_inflight || activation_distance > kMaxWindow) {
    return Status::InvalidArgument(
        "CoreOptions.activation_distance must be in [max_inflight, 2^20]");
  }
  if (window < max_inflight || window > kMaxWindow) {
    return Status::InvalidArgument("CoreOptions.window must be in [max_inflight, 2^20]");
  }
  if (max_value_bytes < 1 || max_value_bytes > (size_t{1} << 31)) {
    return Status::InvalidArgument("CoreOptions.max_value_bytes must be in [1, 2^31]");
  }
  if (promise_budget_bytes < MaxEnvelopeBytes()) {
    return Status::InvalidArgument(
        "CoreOptions.promise_budget_bytes must be >= max_value_bytes + 16");
  }
  if (catchup_batch_count < 1 || catchup_batch_count > (size_t{1} << 20)) {
    return Status::InvalidArgument("CoreOptions.catchup_batch_count must be in [1, 2^20]");
  }
  if (catchup_batch_bytes > (size_t{1} << 31)) {
    return Status::InvalidArgument("CoreOptions.catchup_batch_bytes must be <= 2^31");
  }
  // Master election (checked even when it is off: the defaults are valid).
  constexpr uint64_t kMaxLeaseMs = 3600 * 1000;
  if (lease_ms < 1 || lease_ms > kMaxLeaseMs) {
    return Status::InvalidArgument("CoreOptions.lease_ms must be in [1, 3600000]");
  }
  if (heartbeat_interval_ms < 1 || heartbeat_interval_ms >= lease_ms / 2) {
    return Status::InvalidArgument(
        "CoreOptions.heartbeat_interval_ms must be >= 1 and < lease_ms / 2");
  }
  if (election_timeout_ms < lease_ms) {
    return Status::InvalidArgument("CoreOptions.election_timeout_ms must be >= lease_ms");
  }
  if (election_timeout_ms > kMaxLeaseMs || election_jitter_ms > kMaxLeaseMs) {
    return Status::InvalidArgument(
        "CoreOptions.election_timeout_ms and election_jitter_ms must be <= 3600000");
  }
  if (max_clock_drift_ppm >= 500000) {
    return Status::InvalidArgument("CoreOptions.max_clock_drift_ppm must be < 500000");
  }
  return Status::OK();
}

size_t CoreOptions::MaxMessageBytes() const {
  const size_t one = MaxEnvelopeBytes() + kMessageHeaderBytes;
  const size_t promise =
      promise_budget_bytes + window * kEntryOverheadBytes + kMessageHeaderBytes;
  const size_t learn = catchup_batch_bytes + MaxEnvelopeBytes() +
                       catchup_batch_count * kEntryOverheadBytes + kMessageHeaderBytes;
  return std::max(one, std::max(promise, learn));
}

}  // namespace paxos
}  // namespace chorus
