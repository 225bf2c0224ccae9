// chorus_admin's live mode: asks running nodes for their /status (the
// chorus_prometheus endpoint, e.g. kv_server --metrics_port) and shows
// membership, master, instance ids and each member's lag.
#ifndef CHORUS_TOOLS_ADMIN_LIVE_H_
#define CHORUS_TOOLS_ADMIN_LIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace admin {

// GET http://ip:port/path (loopback or any IPv4), 5 s timeout. The body.
Status HttpGet(const std::string& ip_port, const std::string& path, std::string* body);

struct LiveMember {
  uint64_t id = 0;
  std::string node;  // its address as the node reported it
  bool voter = true;
};

struct LiveGroup {
  std::string endpoint;  // the status address asked
  std::string node;      // the node's own address
  uint32_t group = 0;
  uint64_t executed = 0, chosen_end = 0, log_start = 0, checkpoint_instance = 0;
  std::string master;  // "" when none known
  bool is_master = false;
  uint64_t lag = 0;  // behind the largest chosen end among the answers
  std::string health;
  // The node's role in the group ("voter", "follower", "removed",
  // "joining", "not_eligible"; "" from a node that does not report it) and
  // the membership as it knows it (has_membership false: not reported, or
  // membership_error says why).
  std::string role;
  bool has_membership = false;
  uint64_t membership_version = 0, active_from = 0;
  bool pending = false;
  std::vector<LiveMember> members;
  std::string membership_error;
};

// Asks every endpoint; fills one LiveGroup per node and group. An endpoint
// that does not answer, or answers no /status document, is an entry in
// *errors. *raw gets each answer.
void QueryLive(const std::vector<std::string>& endpoints, std::vector<LiveGroup>* groups,
               std::vector<std::string>* raw, std::vector<std::string>* errors);

}  // namespace admin
}  // namespace chorus

#endif  // CHORUS_TOOLS_ADMIN_LIVE_H_
