#include "tools/admin/output.h"

#include <cstdio>

namespace chorus {
namespace admin {

namespace {

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

}  // namespace

std::string NodeText(uint64_t id) {
  // An explicit id (NodeInfo::node_id, "id@host:port") is a plain number;
  // an id an IPv4 address derived is ipv4 << 16 | port.
  if ((id >> 16) == 0 || (id >> 48) != 0) return "id " + std::to_string(id);
  const uint32_t ip = static_cast<uint32_t>(id >> 16);
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xFF) + "." +
         std::to_string((ip >> 8) & 0xFF) + "." + std::to_string(ip & 0xFF) + ":" +
         std::to_string(id & 0xFFFF);
}

std::string ConfigText(const ConfigSummary& c) {
  return "v" + std::to_string(c.version) + " (active from " + std::to_string(c.active_from) +
         ", changed at " + std::to_string(c.changed_at) + ", activation distance " +
         std::to_string(c.activation_distance) + "): " + MemberLists(c.members);
}

std::string JsonString(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

void Output::MembershipJson(const LogSummary& s) {
  if (!s.has_membership) {
    std::printf("{\"recorded\":false");
    if (!s.membership_error.empty()) {
      std::printf(",\"error\":%s", JsonString(s.membership_error).c_str());
    }
    if (!genesis_.empty()) {
      std::printf(",\"genesis_from_flag\":[");
      for (size_t i = 0; i < genesis_.size(); ++i) {
        std::printf("%s%s", i ? "," : "", JsonString(genesis_[i]).c_str());
      }
      std::printf("]");
    }
    std::printf("},\"membership_version\":null");
    return;
  }
  std::printf("{\"recorded\":true,\"configs\":[");
  for (size_t i = 0; i < s.configs.size(); ++i) {
    const ConfigSummary& c = s.configs[i];
    std::printf("%s{\"version\":%llu,\"active_from\":%llu,\"changed_at\":%llu,"
                "\"activation_distance\":%llu,\"members\":[",
                i ? "," : "", U(c.version), U(c.active_from), U(c.changed_at),
                U(c.activation_distance));
    for (size_t j = 0; j < c.members.size(); ++j) {
      const ConfigMember& m = c.members[j];
      std::printf("%s{\"id\":%llu,\"address\":%s,\"voter\":%s,\"incarnation\":%llu}",
                  j ? "," : "", U(m.id), JsonString(m.address).c_str(), m.voter ? "true" : "false",
                  U(m.incarnation));
    }
    std::printf("]}");
  }
  std::printf("]}");
  if (s.configs.empty()) {
    std::printf(",\"membership_version\":null");
  } else {
    std::printf(",\"membership_version\":%llu", U(s.configs.back().version));
  }
}

void Output::MembershipTable(const LogSummary& s) {
  if (s.has_membership && !s.configs.empty()) {
    std::printf("  %-20s %s\n", "membership", ConfigText(s.configs.back()).c_str());
    for (size_t i = s.configs.size() - 1; i-- > 0;) {
      std::printf("  %-20s %s\n", "  kept earlier", ConfigText(s.configs[i]).c_str());
    }
    return;
  }
  if (!s.membership_error.empty()) {
    std::printf("  %-20s BAD: %s\n", "membership", s.membership_error.c_str());
    return;
  }
  std::string genesis;
  for (const std::string& n : genesis_) genesis += (genesis.empty() ? "" : ", ") + n;
  if (!genesis.empty()) {
    std::printf("  %-20s not recorded in this log: the genesis governs, v0: voters %s; "
                "followers - (from --nodes, not from the log)\n",
                "membership", genesis.c_str());
  } else {
    std::printf("  %-20s not recorded in this log: the genesis governs (the nodes of the "
                "node's first start, Options::nodes; --nodes=LIST shows them), or a node that "
                "joined has not learned one yet\n",
                "membership");
  }
}

void Output::BeginInspect(const std::string& data_dir,
                          const std::vector<std::pair<std::string, std::string>>& identity) {
  auto get = [&identity](const std::string& key) {
    for (const auto& kv : identity) {
      if (kv.first == key) return kv.second;
    }
    return std::string("?");
  };
  if (json_) {
    std::printf("{\"data_dir\":%s,\"identity\":", JsonString(data_dir).c_str());
    if (identity.empty()) {
      std::printf("null");
    } else {
      std::printf("{");
      for (size_t i = 0; i < identity.size(); ++i) {
        std::printf("%s%s:%s", i ? "," : "", JsonString(identity[i].first).c_str(),
                    JsonString(identity[i].second).c_str());
      }
      std::printf("}");
    }
    std::printf(",\"groups\":[");
    return;
  }
  std::printf("data dir %s\n", data_dir.c_str());
  if (identity.empty()) {
    std::printf("  %-20s none (a data dir of an older chorus)\n", "IDENTITY");
  } else {
    const std::string address = get("address");
    std::printf("  %-20s cluster %s, node %s%s, incarnation %s, %s\n", "IDENTITY",
                get("cluster_id").c_str(), get("node_id").c_str(),
                address == "?" ? "" : (" (" + address + ")").c_str(), get("incarnation").c_str(),
                get("joined") == "1" ? "created to join (Options::join)"
                                     : "not created to join");
  }
}

void Output::Group(uint32_t group, const LogSummary& s, bool has_checkpoint, uint64_t checkpoint,
                   uint32_t checkpoint_checksum, uint64_t checkpoint_bytes, int checkpoints) {
  const std::string owner = s.meta_ok ? (s.node_id != 0 ? NodeText(s.node_id) : "(not recorded)")
                                      : "";
  if (json_) {
    std::printf("%s{\"group\":%u,\"meta\":", first_ ? "" : ",", group);
    first_ = false;
    if (s.meta_ok) {
      std::printf("{\"version\":%u,\"cluster_id\":%llu,\"group\":%u,\"node_id\":%llu,\"node\":%s}",
                  s.meta_version, U(s.cluster_id), s.group, U(s.node_id),
                  JsonString(owner).c_str());
    } else {
      std::printf("{\"error\":%s}", JsonString(s.meta_error).c_str());
    }
    std::printf(",\"records\":%llu,\"chosen_records\":%llu", U(s.records), U(s.chosen_records));
    if (s.has_records) {
      std::printf(",\"first_instance\":%llu,\"last_instance\":%llu", U(s.first_instance),
                  U(s.last_instance));
    } else {
      std::printf(",\"first_instance\":null,\"last_instance\":null");
    }
    std::printf(",\"log_start\":%llu,\"chosen_end\":%llu", U(s.log_start), U(s.chosen_end));
    if (s.has_promise) {
      std::printf(",\"promised\":{\"number\":%llu,\"node_id\":%llu,\"node\":%s}",
                  U(s.promised_number), U(s.promised_node),
                  JsonString(NodeText(s.promised_node)).c_str());
    } else {
      std::printf(",\"promised\":null");
    }
    std::printf(",\"window\":%s,\"membership\":", s.window.empty() ? "null" : s.window.c_str());
    MembershipJson(s);
    std::printf(",\"master\":null,\"checkpoint\":");
    if (has_checkpoint) {
      std::printf("{\"instance\":%llu,\"chain_checksum\":%u,\"bytes\":%llu,\"stored\":%d}",
                  U(checkpoint), checkpoint_checksum, U(checkpoint_bytes), checkpoints);
    } else {
      std::printf("null");
    }
    std::printf(",\"variables\":[");
    for (size_t i = 0; i < s.variables.size(); ++i) {
      std::printf("%s%s", i ? "," : "", JsonString(s.variables[i]).c_str());
    }
    std::printf("]}");
    return;
  }
  std::printf("\ngroup %u\n", group);
  if (s.meta_ok) {
    std::printf("  %-20s cluster %llu, group %u, node %s (meta version %u)\n", "identity",
                U(s.cluster_id), s.group, owner.c_str(), s.meta_version);
  } else {
    std::printf("  %-20s BAD: %s\n", "identity", s.meta_error.c_str());
  }
  if (s.has_records) {
    std::printf("  %-20s %llu .. %llu (%llu records, %llu chosen)\n", "instances in log",
                U(s.first_instance), U(s.last_instance), U(s.records), U(s.chosen_records));
  } else {
    std::printf("  %-20s none\n", "instances in log");
  }
  std::printf("  %-20s %llu\n", "log start", U(s.log_start));
  std::printf("  %-20s %llu (every instance below it is chosen)\n", "chosen end", U(s.chosen_end));
  if (s.has_promise) {
    std::printf("  %-20s (%llu, %s)\n", "promised ballot", U(s.promised_number),
                NodeText(s.promised_node).c_str());
  } else {
    std::printf("  %-20s none\n", "promised ballot");
  }
  MembershipTable(s);
  std::printf("  %-20s not persisted (leases live in memory; learned from heartbeats)\n",
              "master");
  if (has_checkpoint) {
    std::printf("  %-20s %llu (chain checksum %u, %llu bytes; %d stored)\n", "checkpoint",
                U(checkpoint), checkpoint_checksum, U(checkpoint_bytes), checkpoints);
  } else {
    std::printf("  %-20s none\n", "checkpoint");
  }
}

void Output::BeginVerify(const std::string& data_dir) {
  if (json_) {
    std::printf("{\"data_dir\":%s,\"groups\":[", JsonString(data_dir).c_str());
  } else {
    std::printf("verify %s\n", data_dir.c_str());
  }
}

void Output::Verified(uint32_t group, const VerifyResult& r) {
  if (json_) {
    std::printf("%s{\"group\":%u,\"ok\":%s,\"records\":%llu,\"chain_checked\":%llu", first_ ? "" : ",",
                group, r.ok ? "true" : "false", U(r.checked), U(r.chain_checked));
    first_ = false;
    if (!r.ok) {
      std::printf(",\"bad_instance\":%llu,\"problem\":%s", U(r.bad_instance),
                  JsonString(r.problem).c_str());
    }
    std::printf("}");
    return;
  }
  if (r.ok) {
    std::printf("group %u: ok (%llu records, %llu chained checksums checked)\n", group,
                U(r.checked), U(r.chain_checked));
  } else {
    std::printf("group %u: BAD at instance %llu: %s (%llu records read)\n", group,
                U(r.bad_instance), r.problem.c_str(), U(r.checked));
  }
}

void Output::End() {
  if (json_) std::printf("]}\n");
}

void Output::Dumped(uint32_t group, const std::vector<DumpedRecord>& records, bool hex) {
  auto bytes = [hex](const std::string& b) { return hex ? Hex(b) : Printable(b); };
  if (json_) std::printf("{\"group\":%u,\"records\":[", group);
  bool first = true;
  for (const DumpedRecord& d : records) {
    if (json_) {
      std::printf("%s{\"instance\":%llu", first ? "" : ",", U(d.instance));
      first = false;
      if (!d.problem.empty()) {
        std::printf(",\"problem\":%s}", JsonString(d.problem).c_str());
        continue;
      }
      std::printf(",\"chosen\":%s,\"ballot\":[%llu,%llu],\"checksum\":%u,\"noop\":%s,\"values\":[",
                  d.chosen ? "true" : "false", U(d.ballot_number), U(d.ballot_node), d.checksum,
                  d.noop ? "true" : "false");
      for (size_t i = 0; i < d.values.size(); ++i) {
        std::printf("%s{\"state_machine\":%d,\"proposal_id\":%llu,\"%s\":%s}", i ? "," : "",
                    d.values[i].state_machine_id, U(d.values[i].proposal_id),
                    hex ? "hex" : "value", JsonString(bytes(d.values[i].payload)).c_str());
      }
      std::printf("]%s%s", d.raw.empty() ? "" : ",\"raw\":",
                  d.raw.empty() ? "" : JsonString(bytes(d.raw)).c_str());
      if (!d.system.empty()) std::printf(",\"system\":%s", JsonString(d.system).c_str());
      std::printf("}");
      continue;
    }
    if (!d.problem.empty()) {
      std::printf("%llu  BAD: %s\n", U(d.instance), d.problem.c_str());
      continue;
    }
    std::printf("%llu  %s ballot (%llu, %s) checksum %u", U(d.instance),
                d.chosen ? "chosen  " : "accepted", U(d.ballot_number),
                NodeText(d.ballot_node).c_str(), d.checksum);
    if (d.noop) std::printf("  noop");
    if (!d.system.empty()) std::printf("  %s", d.system.c_str());
    if (!d.raw.empty()) std::printf("  raw %s", bytes(d.raw).c_str());
    std::printf("\n");
    for (const DumpedValue& v : d.values) {
      std::printf("    sm %d  %s\n", v.state_machine_id, bytes(v.payload).c_str());
    }
  }
  if (json_) std::printf("]}\n");
}

namespace {

// "v3 (active from A[, pending]): voters 1@a, 2@b; followers -".
std::string LiveMembershipText(const LiveGroup& g) {
  std::vector<ConfigMember> members;
  for (const LiveMember& m : g.members) members.push_back({m.id, m.voter, m.node, 0});
  return "v" + std::to_string(g.membership_version) + " (active from " +
         std::to_string(g.active_from) + (g.pending ? ", pending" : "") +
         "): " + MemberLists(members);
}

// Per group, the answer with the newest membership (the largest version).
std::vector<const LiveGroup*> NewestMemberships(const std::vector<LiveGroup>& groups) {
  std::vector<const LiveGroup*> newest;
  for (const LiveGroup& g : groups) {
    if (!g.has_membership) continue;
    bool found = false;
    for (const LiveGroup*& n : newest) {
      if (n->group != g.group) continue;
      found = true;
      if (g.membership_version > n->membership_version) n = &g;
    }
    if (!found) newest.push_back(&g);
  }
  return newest;
}

}  // namespace

void Output::Live(const std::vector<LiveGroup>& groups, const std::vector<std::string>& errors) {
  const std::vector<const LiveGroup*> newest = NewestMemberships(groups);
  if (json_) {
    std::printf("{\"nodes\":[");
    for (size_t i = 0; i < groups.size(); ++i) {
      const LiveGroup& g = groups[i];
      std::printf("%s{\"endpoint\":%s,\"node\":%s,\"group\":%u,\"executed\":%llu,"
                  "\"chosen_end\":%llu,\"log_start\":%llu,\"checkpoint_instance\":%llu,"
                  "\"master\":%s,\"is_master\":%s,\"lag\":%llu,\"health\":%s,\"role\":%s,"
                  "\"membership_version\":%s}",
                  i ? "," : "", JsonString(g.endpoint).c_str(), JsonString(g.node).c_str(),
                  g.group, U(g.executed), U(g.chosen_end), U(g.log_start),
                  U(g.checkpoint_instance), g.master.empty() ? "null" : JsonString(g.master).c_str(),
                  g.is_master ? "true" : "false", U(g.lag), JsonString(g.health).c_str(),
                  g.role.empty() ? "null" : JsonString(g.role).c_str(),
                  g.has_membership ? std::to_string(g.membership_version).c_str() : "null");
    }
    std::printf("],\"memberships\":[");
    for (size_t i = 0; i < newest.size(); ++i) {
      const LiveGroup& g = *newest[i];
      std::printf("%s{\"group\":%u,\"version\":%llu,\"active_from\":%llu,\"pending\":%s,"
                  "\"reported_by\":%s,\"members\":[",
                  i ? "," : "", g.group, U(g.membership_version), U(g.active_from),
                  g.pending ? "true" : "false", JsonString(g.node).c_str());
      for (size_t j = 0; j < g.members.size(); ++j) {
        std::printf("%s{\"id\":%llu,\"node\":%s,\"voter\":%s}", j ? "," : "",
                    U(g.members[j].id), JsonString(g.members[j].node).c_str(),
                    g.members[j].voter ? "true" : "false");
      }
      std::printf("]}");
    }
    std::printf("],\"errors\":[");
    for (size_t i = 0; i < errors.size(); ++i) {
      std::printf("%s%s", i ? "," : "", JsonString(errors[i]).c_str());
    }
    std::printf("]}\n");
    return;
  }
  std::printf("%-24s %5s %10s %10s %10s %10s %-24s %-8s %5s %8s\n", "node", "group", "executed",
              "chosen_end", "log_start", "checkpoint", "master", "role", "mver", "lag");
  for (const LiveGroup& g : groups) {
    const std::string role = g.is_master ? "master" : g.role;
    std::printf("%-24s %5u %10llu %10llu %10llu %10llu %-24s %-8s %5s %8llu\n", g.node.c_str(),
                g.group, U(g.executed), U(g.chosen_end), U(g.log_start), U(g.checkpoint_instance),
                g.master.empty() ? "(none)" : g.master.c_str(), role.c_str(),
                g.has_membership ? std::to_string(g.membership_version).c_str() : "-", U(g.lag));
  }
  for (const LiveGroup* n : newest) {
    std::printf("group %u membership %s (as %s knows it)\n", n->group,
                LiveMembershipText(*n).c_str(), n->node.c_str());
    for (const LiveGroup& g : groups) {
      if (g.group != n->group || &g == n) continue;
      if (!g.has_membership) {
        std::printf("  %s: membership not known: %s\n", g.node.c_str(),
                    g.membership_error.empty() ? "not reported" : g.membership_error.c_str());
      } else if (g.membership_version != n->membership_version) {
        std::printf("  %s knows only v%llu (behind)\n", g.node.c_str(), U(g.membership_version));
      }
    }
  }
  for (const std::string& e : errors) std::printf("unreachable: %s\n", e.c_str());
}

}  // namespace admin
}  // namespace chorus
