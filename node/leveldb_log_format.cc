#include "node/leveldb_log_format.h"

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace leveldb_log {

namespace {
constexpr size_t kCrcSize = 4;
constexpr size_t kMetaV1BodySize = 8 + 4 + 8 + 4;
constexpr size_t kMetaBodySize = kMetaV1BodySize + 8;

// "ip:port (id N)" of a NodeInfo::id() (ipv4 << 16 | port).
std::string NodeText(uint64_t id) {
  const uint32_t ip = static_cast<uint32_t>(id >> 16);
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xFF) + "." +
         std::to_string((ip >> 8) & 0xFF) + "." + std::to_string(ip & 0xFF) + ":" +
         std::to_string(id & 0xFFFF) + " (id " + std::to_string(id) + ")";
}

uint32_t ValueCrc(const std::string& key, const char* payload, size_t n) {
  return crc32c::Extend(crc32c::Value(key), payload, n);
}
}  // namespace

std::string RecordKey(uint64_t instance) {
  std::string key(9, '\0');
  key[0] = kRecordPrefix;
  for (int i = 0; i < 8; ++i) key[1 + i] = static_cast<char>((instance >> (8 * (7 - i))) & 0xFF);
  return key;
}

uint64_t InstanceOfRecordKey(const std::string& key) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(key[1 + i]);
  return v;
}

std::string VariableKey(const std::string& name) { return std::string(1, kVariablePrefix) + name; }

std::string EncodeChecksummed(const std::string& key, const std::string& payload) {
  std::string value;
  value.reserve(kCrcSize + payload.size());
  PutFixed32(&value, ValueCrc(key, payload.data(), payload.size()));
  value.append(payload);
  return value;
}

Status DecodeChecksummed(const std::string& key, const std::string& value, const std::string& what,
                         std::string* payload) {
  if (value.size() < kCrcSize) {
    return Status::Corruption(what + ": stored value is truncated (" +
                              std::to_string(value.size()) + " bytes)");
  }
  const char* body = value.data() + kCrcSize;
  const size_t n = value.size() - kCrcSize;
  if (DecodeFixed32(value.data()) != ValueCrc(key, body, n)) {
    return Status::Corruption(what + ": stored value fails its crc32c (" + std::to_string(n) +
                              " payload bytes)");
  }
  payload->assign(body, n);
  return Status::OK();
}

std::string EncodeTrimmedBelow(uint64_t below) {
  std::string payload;
  PutFixed64(&payload, below);
  return EncodeChecksummed(kTrimmedBelowKey, payload);
}

Status DecodeTrimmedBelow(const std::string& value, const std::string& what, uint64_t* below) {
  std::string payload;
  Status s = DecodeChecksummed(kTrimmedBelowKey, value, what, &payload);
  if (!s.ok()) return s;
  if (payload.size() != 8) {
    return Status::Corruption(what + ": trimmed_below holds " + std::to_string(payload.size()) +
                              " bytes, not 8");
  }
  *below = DecodeFixed64(payload.data());
  return Status::OK();
}

std::string EncodeMetaV1(uint64_t cluster_id, uint32_t group) {
  std::string v;
  PutFixed64(&v, kMetaMagic);
  PutFixed32(&v, 1);
  PutFixed64(&v, cluster_id);
  PutFixed32(&v, group);
  PutFixed32(&v, crc32c::Value(v));
  return v;
}

std::string EncodeMeta(const LogIdentity& identity) {
  std::string v;
  PutFixed64(&v, kMetaMagic);
  PutFixed32(&v, kFormatVersion);
  PutFixed64(&v, identity.cluster_id);
  PutFixed32(&v, identity.group);
  PutFixed64(&v, identity.node_id);
  PutFixed32(&v, crc32c::Value(v));
  return v;
}

Status CheckMeta(const std::string& value, const LogIdentity& expected, const std::string& dir,
                 bool* upgrade) {
  *upgrade = false;
  if (value.size() < 12) return Status::Corruption("log in '" + dir + "': meta record is corrupt");
  if (DecodeFixed64(value.data()) != kMetaMagic) {
    return Status::InvalidArgument("'" + dir + "' is not a chorus log (bad meta magic)");
  }
  const uint32_t version = DecodeFixed32(value.data() + 8);
  if (version != 1 && version != kFormatVersion) {
    return Status::InvalidArgument("log in '" + dir + "' has format version " +
                                   std::to_string(version) + ", this build reads versions 1 to " +
                                   std::to_string(kFormatVersion));
  }
  // The crc32c is checked before any other field is trusted.
  const size_t body = version == 1 ? kMetaV1BodySize : kMetaBodySize;
  if (value.size() != body + kCrcSize ||
      DecodeFixed32(value.data() + body) != crc32c::Value(value.data(), body)) {
    return Status::Corruption("log in '" + dir + "': meta record is corrupt");
  }
  const uint64_t found_cluster = DecodeFixed64(value.data() + 12);
  if (found_cluster != expected.cluster_id) {
    return Status::InvalidArgument("log in '" + dir + "' belongs to cluster " +
                                   std::to_string(found_cluster) + ", expected cluster " +
                                   std::to_string(expected.cluster_id));
  }
  const uint32_t found_group = DecodeFixed32(value.data() + 20);
  if (found_group != expected.group) {
    return Status::InvalidArgument("log in '" + dir + "' belongs to group " +
                                   std::to_string(found_group) + ", expected group " +
                                   std::to_string(expected.group));
  }
  if (version == 1) {
    *upgrade = true;
    return Status::OK();
  }
  const uint64_t found_node = DecodeFixed64(value.data() + 24);
  if (found_node != expected.node_id) {
    return Status::InvalidArgument(
        "log in '" + dir + "' belongs to node " + NodeText(found_node) + ", but this node is " +
        NodeText(expected.node_id) +
        ": a data dir copied or swapped between nodes would make two acceptors share one "
        "history (unsafe); give every node its own data dir");
  }
  return Status::OK();
}

}  // namespace leveldb_log
}  // namespace chorus
