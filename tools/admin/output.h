// chorus_admin's output: a readable table (default) or JSON (--json, one
// document on stdout, for scripts).
#ifndef CHORUS_TOOLS_ADMIN_OUTPUT_H_
#define CHORUS_TOOLS_ADMIN_OUTPUT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/admin/live.h"
#include "tools/admin/log_reader.h"

namespace chorus {
namespace admin {

class Output {
 public:
  explicit Output(bool json) : json_(json) {}
  // The genesis to show for a log that never recorded a membership
  // (chorus_admin --nodes: the node's initial Options::nodes).
  void set_genesis(std::vector<std::string> nodes) { genesis_ = std::move(nodes); }

  // `identity`: the data dir's IDENTITY file as "key value" pairs (empty:
  // the dir has none, e.g. one of an older chorus).
  void BeginInspect(const std::string& data_dir,
                    const std::vector<std::pair<std::string, std::string>>& identity);
  void Group(uint32_t group, const LogSummary& s, bool has_checkpoint, uint64_t checkpoint,
             uint32_t checkpoint_checksum, uint64_t checkpoint_bytes, int checkpoints);
  void BeginVerify(const std::string& data_dir);
  void Verified(uint32_t group, const VerifyResult& r);
  // Ends an inspect or verify.
  void End();
  void Dumped(uint32_t group, const std::vector<DumpedRecord>& records, bool hex);
  void Live(const std::vector<LiveGroup>& groups, const std::vector<std::string>& errors);

 private:
  void MembershipJson(const LogSummary& s);
  void MembershipTable(const LogSummary& s);

  const bool json_;
  std::vector<std::string> genesis_;
  bool first_ = true;  // JSON: no comma before the first element
};

// "ip:port" of a NodeInfo::id() an IPv4 address derived (ipv4 << 16 | port);
// "id N" for an explicit one.
std::string NodeText(uint64_t id);
// "v3 (active from A, changed at C, activation distance D): voters ...; followers ...".
std::string ConfigText(const ConfigSummary& c);
// JSON string literal of arbitrary bytes (\u00XX for controls, \\ and \").
std::string JsonString(const std::string& bytes);
// Printable form: ASCII as is, other bytes as \xNN.
std::string Printable(const std::string& bytes);
std::string Hex(const std::string& bytes);

}  // namespace admin
}  // namespace chorus

#endif  // CHORUS_TOOLS_ADMIN_OUTPUT_H_
