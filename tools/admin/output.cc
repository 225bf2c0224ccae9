#include "tools/admin/output.h"

#include <cstdio>

namespace chorus {
namespace admin {

namespace {

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

}  // namespace

std::string NodeText(uint64_t id) {
  const uint32_t ip = static_cast<uint32_t>(id >> 16);
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xFF) + "." +
         std::to_string((ip >> 8) & 0xFF) + "." + std::to_string(ip & 0xFF) + ":" +
         std::to_string(id & 0xFFFF);
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

void Output::BeginInspect(const std::string& data_dir) {
  if (json_) {
    std::printf("{\"data_dir\":%s,\"groups\":[", JsonString(data_dir).c_str());
  } else {
    std::printf("data dir %s\n", data_dir.c_str());
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
    std::printf(",\"window\":%s,\"membership\":null,\"membership_version\":null,"
                "\"master\":null,\"checkpoint\":",
                s.window.empty() ? "null" : s.window.c_str());
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
  std::printf("  %-20s not recorded (the log holds no membership yet: issue 9); identity above\n",
              "membership");
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
      std::printf("]%s%s}", d.raw.empty() ? "" : ",\"raw\":",
                  d.raw.empty() ? "" : JsonString(bytes(d.raw)).c_str());
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
    if (!d.raw.empty()) std::printf("  raw %s", bytes(d.raw).c_str());
    std::printf("\n");
    for (const DumpedValue& v : d.values) {
      std::printf("    sm %d  %s\n", v.state_machine_id, bytes(v.payload).c_str());
    }
  }
  if (json_) std::printf("]}\n");
}

void Output::Live(const std::vector<LiveGroup>& groups, const std::vector<std::string>& errors) {
  if (json_) {
    std::printf("{\"nodes\":[");
    for (size_t i = 0; i < groups.size(); ++i) {
      const LiveGroup& g = groups[i];
      std::printf("%s{\"endpoint\":%s,\"node\":%s,\"group\":%u,\"executed\":%llu,"
                  "\"chosen_end\":%llu,\"log_start\":%llu,\"checkpoint_instance\":%llu,"
                  "\"master\":%s,\"is_master\":%s,\"lag\":%llu,\"health\":%s}",
                  i ? "," : "", JsonString(g.endpoint).c_str(), JsonString(g.node).c_str(),
                  g.group, U(g.executed), U(g.chosen_end), U(g.log_start),
                  U(g.checkpoint_instance), g.master.empty() ? "null" : JsonString(g.master).c_str(),
                  g.is_master ? "true" : "false", U(g.lag), JsonString(g.health).c_str());
    }
    std::printf("],\"errors\":[");
    for (size_t i = 0; i < errors.size(); ++i) {
      std::printf("%s%s", i ? "," : "", JsonString(errors[i]).c_str());
    }
    std::printf("]}\n");
    return;
  }
  std::printf("%-22s %5s %10s %10s %10s %10s %-22s %6s %8s\n", "node", "group", "executed",
              "chosen_end", "log_start", "checkpoint", "master", "role", "lag");
  for (const LiveGroup& g : groups) {
    std::printf("%-22s %5u %10llu %10llu %10llu %10llu %-22s %6s %8llu\n", g.node.c_str(), g.group,
                U(g.executed), U(g.chosen_end), U(g.log_start), U(g.checkpoint_instance),
                g.master.empty() ? "(none)" : g.master.c_str(), g.is_master ? "master" : "",
                U(g.lag));
  }
  for (const std::string& e : errors) std::printf("unreachable: %s\n", e.c_str());
}

}  // namespace admin
}  // namespace chorus
