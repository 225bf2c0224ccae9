// /status: what chorus_admin's live mode shows, as JSON. Membership is the
// node list this node was opened with (membership changes, issue 9, are not
// recorded yet). Per group: the instance ids, the master as this node knows
// it, and this node's lag behind the master's chosen end. The lag of the
// OTHER members is not known here cheaply: chorus_admin asks each member.
#include <string>

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

}  // namespace

std::string StatusJson(const Node& node, const Options& options) {
  std::string out = "{\"node\":" + Quote(options.self.ToString()) +
                    ",\"node_id\":" + Num(options.self.id()) +
                    ",\"cluster_id\":" + Num(options.cluster_id) + ",\"members\":[";
  for (size_t i = 0; i < options.nodes.size(); ++i) {
    if (i > 0) out += ",";
    out += Quote(options.nodes[i].ToString());
  }
  out += "],\"membership_version\":null,\"master_election\":";
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
      out += ",\"master\":" + Quote(master.node.ToString()) +
             ",\"master_epoch\":" + Num(master.epoch_number);
    } else {
      out += ",\"master\":null";
    }
    out += std::string(",\"is_master\":") + (node.IsMaster(group) ? "true" : "false");
    out += ",\"master_chosen_end\":" + Num(st.master_chosen_end);
    const uint64_t lag = st.master_chosen_end > st.executed ? st.master_chosen_end - st.executed : 0;
    out += ",\"lag\":" + Num(lag) + ",\"caught_up\":" + (st.caught_up ? "true" : "false") + "}";
  }
  return out + "]}\n";
}

}  // namespace chorus
