#include "tools/admin/log_reader.h"

#include <memory>

#include "chorus/transport.h"
#include "leveldb/db.h"
#include "node/leveldb_log_format.h"
#include "node/value_codec.h"
#include "paxos.pb.h"
#include "paxos/membership.h"
#include "paxos/value.h"
#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace admin {

namespace lf = leveldb_log;

namespace {

void ReadMembers(const google::protobuf::RepeatedPtrField<paxos::MemberPb>& pbs,
                 std::vector<ConfigMember>* out) {
  for (const paxos::MemberPb& m : pbs) {
    out->push_back({m.id(), m.voter(), m.address(), m.incarnation()});
  }
}

void ReadMembership(const std::string& payload, LogSummary* out) {
  paxos::MembershipPb pb;
  if (!pb.ParseFromString(payload)) {
    out->membership_error = "paxos.membership does not parse";
    return;
  }
  out->has_membership = true;
  for (const paxos::ConfigPb& c : pb.configs()) {
    ConfigSummary cs;
    cs.version = c.version();
    cs.active_from = c.active_from();
    cs.changed_at = c.changed_at();
    cs.activation_distance = c.activation_distance();
    ReadMembers(c.members(), &cs.members);
    out->configs.push_back(std::move(cs));
  }
}

bool IsRecordKey(const leveldb::Slice& k) { return k.size() == 9 && k[0] == lf::kRecordPrefix; }

// Reads and checks the meta record (its own crc32c; no expected identity).
void ReadMeta(leveldb::DB* db, LogSummary* out) {
  std::string v;
  if (!db->Get(leveldb::ReadOptions(), lf::kMetaKey, &v).ok()) {
    out->meta_error = "no meta record";
    return;
  }
  if (v.size() < 12 || DecodeFixed64(v.data()) != lf::kMetaMagic) {
    out->meta_error = "bad meta magic: not a chorus log";
    return;
  }
  out->meta_version = DecodeFixed32(v.data() + 8);
  const size_t body = out->meta_version == 1 ? 24 : out->meta_version == 2 ? 32 : 0;
  if (body == 0 || v.size() != body + 4 ||
      DecodeFixed32(v.data() + body) != crc32c::Value(v.data(), body)) {
    out->meta_error = "meta record is corrupt or of an unknown version";
    return;
  }
  out->meta_ok = true;
  out->cluster_id = DecodeFixed64(v.data() + 12);
  out->group = DecodeFixed32(v.data() + 20);
  out->node_id = out->meta_version == 2 ? DecodeFixed64(v.data() + 24) : 0;
}

// The payload of a checksummed value under `key`, or a problem.
Status Payload(const leveldb::Slice& key, const leveldb::Slice& value, const std::string& what,
               std::string* payload) {
  return lf::DecodeChecksummed(key.ToString(), value.ToString(), what, payload);
}

}  // namespace

Status Summarize(leveldb::DB* db, LogSummary* out) {
  *out = LogSummary();
  ReadMeta(db, out);
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  // Variables.
  for (it->Seek(std::string(1, lf::kVariablePrefix));
       it->Valid() && it->key().size() > 0 && it->key()[0] == lf::kVariablePrefix; it->Next()) {
    const std::string name = it->key().ToString().substr(1);
    out->variables.push_back(name);
    std::string payload;
    if (!Payload(it->key(), it->value(), "variable " + name, &payload).ok()) {
      if (name == paxos::kMembershipVariable) out->membership_error = "paxos.membership is damaged";
      continue;
    }
    if (name == "paxos.promise") {
      paxos::BallotPb pb;
      if (pb.ParseFromString(payload)) {
        out->has_promise = true;
        out->promised_number = pb.number();
        out->promised_node = pb.node_id();
      }
    } else if (name == "paxos.log_start") {
      paxos::LogStartPb pb;
      if (pb.ParseFromString(payload)) {
        out->log_start = pb.instance();
        out->log_start_checksum = pb.checksum();
      }
    } else if (name == "paxos.window") {
      out->window = payload;
    } else if (name == paxos::kMembershipVariable) {
      ReadMembership(payload, out);
    }
  }
  if (!it->status().ok()) return Status::Corruption("reading variables: " + it->status().ToString());
  // Records, in instance order (big-endian keys).
  bool chain = true;
  uint64_t next = out->log_start;
  bool first = true;
  for (it->Seek(lf::RecordKey(0)); it->Valid() && IsRecordKey(it->key()); it->Next()) {
    const uint64_t instance = lf::InstanceOfRecordKey(it->key().ToString());
    if (!out->has_records) out->first_instance = instance;
    out->has_records = true;
    out->last_instance = instance;
    ++out->records;
    std::string payload;
    paxos::InstanceRecord rec;
    const bool good = Payload(it->key(), it->value(), "record", &payload).ok() &&
                      rec.ParseFromString(payload);
    if (good && rec.chosen()) ++out->chosen_records;
    // An untrimmed log's chain starts at its first record (as Core::Open).
    if (first && out->log_start == 0) next = instance;
    first = false;
    if (chain && good && rec.chosen() && instance == next) {
      ++next;
    } else if (instance >= next) {
      chain = false;
    }
  }
  if (!it->status().ok()) return Status::Corruption("reading records: " + it->status().ToString());
  out->chosen_end = std::max(next, out->log_start);
  return Status::OK();
}

Status Verify(leveldb::DB* db, VerifyResult* out) {
  *out = VerifyResult();
  LogSummary summary;
  Status s = Summarize(db, &summary);
  if (!s.ok()) return s;
  if (!summary.meta_ok) {
    out->ok = false;
    out->problem = "meta: " + summary.meta_error;
    return Status::OK();
  }
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  uint32_t previous = summary.log_start_checksum;
  uint64_t next = summary.log_start;
  bool in_chain = true;
  bool first = true;
  for (it->Seek(lf::RecordKey(0)); it->Valid() && IsRecordKey(it->key()); it->Next()) {
    const uint64_t instance = lf::InstanceOfRecordKey(it->key().ToString());
    ++out->checked;
    auto bad = [&](const std::string& why) {
      out->ok = false;
      out->bad_instance = instance;
      out->problem = why;
    };
    std::string payload;
    s = Payload(it->key(), it->value(), "record " + std::to_string(instance), &payload);
    if (!s.ok()) {
      bad(s.ToString());
      return Status::OK();
    }
    paxos::InstanceRecord rec;
    if (!rec.ParseFromString(payload)) {
      bad("record " + std::to_string(instance) + " does not parse");
      return Status::OK();
    }
    if (summary.log_start > 0 && instance < summary.log_start) {
      bad("record " + std::to_string(instance) + " lies below the log start " +
          std::to_string(summary.log_start));
      return Status::OK();
    }
    if (first) {
      first = false;
      // An untrimmed log whose first record is not instance 0 (Core::Open):
      // its first chosen record restarts the chain; nothing before it to check.
      if (summary.log_start == 0 && instance > 0 && rec.chosen()) {
        previous = rec.checksum();
        next = instance + 1;
        continue;
      }
    }
    if (!in_chain || !rec.chosen() || instance != next) {
      in_chain = false;  // beyond the chosen prefix: votes only
      continue;
    }
    const uint32_t expect = crc32c::Extend(previous, rec.value().data(), rec.value().size());
    if (expect != rec.checksum()) {
      bad("record " + std::to_string(instance) + ": chained checksum " +
          std::to_string(rec.checksum()) + ", expected " + std::to_string(expect) +
          " from the previous instance's (the value or an earlier one was altered)");
      return Status::OK();
    }
    previous = expect;
    ++next;
    ++out->chain_checked;
  }
  if (!it->status().ok()) {
    out->ok = false;
    out->problem = "leveldb: " + it->status().ToString();
  }
  return Status::OK();
}

std::string MemberText(const ConfigMember& m) {
  const std::string id = std::to_string(m.id);
  NodeInfo n;
  if (NodeInfo::Parse(m.address, &n).ok()) {
    // An id that the IPv4 host and port derive goes without saying.
    n.node_id = 0;
    if (n.id() == m.id) return n.ToString();
  }
  if (m.address.compare(0, id.size() + 1, id + "@") == 0) return m.address;
  return id + "@" + (m.address.empty() ? "?" : m.address);
}

std::string MemberLists(const std::vector<ConfigMember>& members) {
  std::string voters, followers;
  for (const ConfigMember& m : members) {
    std::string& list = m.voter ? voters : followers;
    list += (list.empty() ? "" : ", ") + MemberText(m);
  }
  return "voters " + (voters.empty() ? "-" : voters) + "; followers " +
         (followers.empty() ? "-" : followers);
}

std::string DescribeSystemValue(uint64_t id, const std::string& data) {
  paxos::SystemValueKind kind;
  std::string payload;
  if (!paxos::DecodeSystemValue(id, data, &kind, &payload)) return "system value of unknown kind";
  paxos::MembershipChangePb pb;
  if (kind != paxos::SystemValueKind::kMembershipChange || !pb.ParseFromString(payload)) {
    return "system value that does not parse";
  }
  std::vector<ConfigMember> members;
  ReadMembers(pb.members(), &members);
  return "membership change from v" + std::to_string(pb.base_version()) + ": " +
         MemberLists(members) + " (activation distance " +
         std::to_string(pb.activation_distance()) + ")";
}

Status Dump(leveldb::DB* db, uint64_t from, uint64_t to, size_t limit,
            std::vector<DumpedRecord>* out) {
  out->clear();
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(lf::RecordKey(from)); it->Valid() && IsRecordKey(it->key()) && out->size() < limit;
       it->Next()) {
    DumpedRecord d;
    d.instance = lf::InstanceOfRecordKey(it->key().ToString());
    if (d.instance >= to) break;
    std::string payload;
    Status s = Payload(it->key(), it->value(), "record", &payload);
    paxos::InstanceRecord rec;
    if (!s.ok() || !rec.ParseFromString(payload)) {
      d.problem = s.ok() ? "does not parse" : s.ToString();
      out->push_back(std::move(d));
      continue;
    }
    d.chosen = rec.chosen();
    d.ballot_number = rec.accepted_ballot().number();
    d.ballot_node = rec.accepted_ballot().node_id();
    d.checksum = rec.checksum();
    uint64_t id = 0;
    std::string data;
    if (!paxos::DecodeValue(rec.value(), &d.proposer, &id, &data)) {
      d.raw = rec.value();
    } else if ((id & paxos::kSystemValueBit) != 0) {
      d.system = DescribeSystemValue(id, data);
    } else if (data.empty()) {
      d.noop = true;
    } else {
      std::vector<AppValue> values;
      if (DecodeAppValues(data, &values).ok()) {
        for (const AppValue& v : values) d.values.push_back({v.state_machine_id, v.proposal_id, v.payload});
      } else {
        d.raw = data;
      }
    }
    out->push_back(std::move(d));
  }
  if (!it->status().ok()) return Status::Corruption("reading records: " + it->status().ToString());
  return Status::OK();
}

}  // namespace admin
}  // namespace chorus
