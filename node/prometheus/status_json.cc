// /status: what chorus_admin's live mode shows, as JSON. This node, the
// initial membership it was opened with (Options::nodes; Options::join for
// a node that joined), and per group: the instance ids, the master as this
// node knows it, this node's lag behind the master's chosen end, its role
// and the group's membership as this node knows it (Node::GetMembership:
// version, active_from, pending, members). The lag of the OTHER members is
// not known here cheaply: chorus_admin asks each member.
#include <string>
#include <vector>

#include "chorus/metrics_server.h"

namespace chorus {

namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // none expected (addresses, codes)
    out += c;
  }
  return out + "\"";
}

std::string Num(uint64_t v) { return std::to_string(v); }

// "id@host:port", or "ip:port" when the IPv4 host and port derive the id
// (the membership records every id explicitly).
std::string Address(const NodeInfo& node) {
  NodeInfo plain = node;
  plain.node_id = 0;
  return plain.id() == node.id() ? plain.ToString() : node.ToString();
}

std::string NodeList(const std::vector<NodeInfo>& nodes) {
  std::string out = "[";
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) out += ",";
    out += Quote(Address(nodes[i]));
  }
  return out + "]";
}

// ,"role":..,"membership":{...} (or "membership":null and the reason).
std::string MembershipJson(const Node& node, uint32_t group, const GroupStatus& st) {
  std::string out = ",\"role\":" + Quote(MemberRoleText(st.role));
  MembershipInfo info;
  const Status s = node.GetMembership(group, &info);
  if (!s.ok()) return out + ",\"membership\":null,\"membership_error\":" + Quote(s.ToString());
  out += ",\"membership\":{\"version\":" + Num(info.version) +
         ",\"active_from\":" + Num(info.active_from) +
         ",\"pending\":" + (info.pending ? "true" : "false") + ",\"members\":[";
  for (size_t i = 0; i < info.members.size(); ++i) {
    const MemberInfo& m = info.members[i];
    if (i > 0) out += ",";
    out += "{\"id\":" + Num(m.node.id()) + ",\"node\":" + Quote(Address(m.node)) +
           ",\"voter\":" + (m.voter ? "true" : "false") + "}";
  }
  return out + "]}";
}

}  // namespace

std::string StatusJson(const Node& node, const Options& options) {
  std::string out = "{\"node\":" + Quote(Address(options.self)) +
                    ",\"node_id\":" + Num(node.node_id()) +
                    ",\"cluster_id\":" + Num(options.cluster_id) +
                    ",\"initial_members\":" + NodeList(options.nodes) +
                    ",\"join\":" + NodeList(options.join) + ",\"master_election\":";
  out += options.master_election ? "true" : "false";
  out += ",\"groups\":[";
  bool first = true;
  for (int g = 0; g < options.group_count; ++g) {
    const uint32_t group = static_cast<uint32_t>(g);
    GroupStatus st;
    GroupMetrics m;
    const Status health = node.GetGroupStatus(group);
    if (!node.GetGroupStatus(group, &st).ok() || !node.GetMetrics(group, &m).ok()) continue;
    if (!first) out += ",";
    first = false;
    out += "{\"group\":" + Num(group) + ",\"health\":" + Quote(health.ToString()) +
           ",\"executed\":" + Num(st.executed) + ",\"chosen_end\":" + Num(m.chosen_end) +
           ",\"log_start\":" + Num(st.log_start) +
           ",\"checkpoint_instance\":" + Num(st.checkpoint_instance);
    MasterInfo master;
    if (options.master_election && node.GetMaster(group, &master).ok()) {
      out += ",\"master\":" + Quote(Address(master.node)) +
             ",\"master_id\":" + Num(master.node.id()) +
             ",\"master_epoch\":" + Num(master.epoch_number);
    } else {
      out += ",\"master\":null";
    }
    out += std::string(",\"is_master\":") + (node.IsMaster(group) ? "true" : "false");
    out += ",\"master_chosen_end\":" + Num(st.master_chosen_end);
    const uint64_t lag = st.master_chosen_end > st.executed ? st.master_chosen_end - st.executed : 0;
    out += ",\"lag\":" + Num(lag) + ",\"caught_up\":" + (st.caught_up ? "true" : "false");
    out += MembershipJson(node, group, st) + "}";
  }
  return out + "]}\n";
}

}  // namespace chorus
