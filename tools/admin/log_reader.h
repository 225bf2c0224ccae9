// chorus_admin's reading of one group's paxos log (a GroupCopy's leveldb):
// what it holds, a dump of a range of instances, and the verification of
// every record (crc32c of each stored value, the record's shape, and the
// chained checksum of the chosen prefix, checksum(i) = crc32c::Extend(
// checksum(i-1), value(i)), from the log's start).
#ifndef CHORUS_TOOLS_ADMIN_LOG_READER_H_
#define CHORUS_TOOLS_ADMIN_LOG_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace leveldb {
class DB;
}

namespace chorus {
namespace admin {

// One configuration of the group's recorded membership history
// (paxos/membership.h Config; the LogStorage variable "paxos.membership").
struct ConfigMember {
  uint64_t id = 0;
  bool voter = true;
  std::string address;       // as the runtime recorded it (NodeInfo text)
  uint64_t incarnation = 0;  // 0: a genesis member
};
struct ConfigSummary {
  uint64_t version = 0, active_from = 0, changed_at = 0, activation_distance = 0;
  std::vector<ConfigMember> members;  // sorted by id
};

struct LogSummary {
  // The meta record: whose log this is.
  bool meta_ok = false;
  std::string meta_error;  // when !meta_ok
  uint32_t meta_version = 0;
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  uint64_t node_id = 0;  // 0 in a version 1 meta
  // Records.
  uint64_t records = 0;
  bool has_records = false;
  uint64_t first_instance = 0, last_instance = 0;
  uint64_t chosen_records = 0;
  // The log's start (paxos.log_start; 0 when never trimmed) and the chosen
  // end: every instance in [log_start, chosen_end) has a chosen record.
  uint64_t log_start = 0;
  uint32_t log_start_checksum = 0;
  uint64_t chosen_end = 0;
  // The acceptor's promise (paxos.promise): (number, node id).
  bool has_promise = false;
  uint64_t promised_number = 0, promised_node = 0;
  std::string window;  // paxos.window, as stored (decimal)
  // The membership history the log recorded (paxos.membership), oldest
  // first; has_membership false when the log never recorded one (then the
  // genesis governs: the node's initial Options::nodes, which the log does
  // not hold), membership_error when the variable does not decode.
  bool has_membership = false;
  std::string membership_error;
  std::vector<ConfigSummary> configs;
  // Every variable name, for completeness.
  std::vector<std::string> variables;
};

Status Summarize(leveldb::DB* db, LogSummary* out);

struct VerifyResult {
  uint64_t checked = 0;        // records read
  uint64_t chain_checked = 0;  // chosen records whose chained checksum was checked
  bool ok = true;
  uint64_t bad_instance = 0;   // the first bad record (when !ok)
  std::string problem;
};

// Walks every record in instance order. Stops at the first bad one.
Status Verify(leveldb::DB* db, VerifyResult* out);

struct DumpedValue {
  int state_machine_id = 0;
  uint64_t proposal_id = 0;
  std::string payload;
};
struct DumpedRecord {
  uint64_t instance = 0;
  bool chosen = false;
  uint64_t ballot_number = 0, ballot_node = 0;
  uint32_t checksum = 0;
  uint64_t proposer = 0;  // from the value's envelope
  bool noop = false;
  // A system value (a membership change): what it says, e.g. "membership
  // change from v2: voters 1@a, 2@b; followers 4@c (activation distance 256)".
  std::string system;
  std::vector<DumpedValue> values;  // the application values (a batch: several)
  std::string raw;                  // the record's value bytes when they do not decode
  std::string problem;              // a record that fails its crc or does not parse
};

// "id@address" of a member (the address as recorded, with its id; just
// "ip:port" when that IPv4 host and port derive the id), and
// "voters a, b; followers -" of a member set.
std::string MemberText(const ConfigMember& m);
std::string MemberLists(const std::vector<ConfigMember>& members);
// What a system value (envelope id `id`, data `data`) says.
std::string DescribeSystemValue(uint64_t id, const std::string& data);

// Records with from <= instance < to, at most `limit`.
Status Dump(leveldb::DB* db, uint64_t from, uint64_t to, size_t limit,
            std::vector<DumpedRecord>* out);

}  // namespace admin
}  // namespace chorus

#endif  // CHORUS_TOOLS_ADMIN_LOG_READER_H_
