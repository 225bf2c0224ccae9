// Copyright (c) chorus authors.
//
// The on-disk layout of the leveldb LogStorage (OpenLevelDbLogStorage in
// <chorus/log_storage.h>). Private to the library; tests use it to reach the
// raw keys and values.
//
// Keys (one database per group):
//   'r' + big-endian 64-bit instance id  -> a record (BE so leveldb's bytewise
//                                           order is numeric order)
//   'v' + variable name                  -> a variable
//   "m"                                  -> the meta value (see below)
//   "t"                                  -> trimmed_below: crc32c + 64-bit id
//                                           (little-endian), checksummed like
//                                           a record. Every record below it
//                                           is trimmed: invisible to readers,
//                                           deleted later in the background
//                                           (node/leveldb_log_trim.h).
// Every record and variable value is crc32c (4, little-endian) + payload,
// where the crc32c covers the key followed by the payload: a value copied
// under another key fails its check as surely as a flipped bit.
// The meta value says whose log this is, written when the database is
// created and checked on every open:
//   version 2: magic (8) | version (4) | cluster id (8) | group (4) |
//              node id (8) | crc32c of the preceding 32 bytes (4)
//   version 1: magic (8) | version (4) | cluster id (8) | group (4) |
//              crc32c of the preceding 24 bytes (4)   (no node identity)
// A version 1 meta is accepted and rewritten as version 2 with the opening
// node's id (the first open by a build that records it).

#ifndef CHORUS_NODE_LEVELDB_LOG_FORMAT_H_
#define CHORUS_NODE_LEVELDB_LOG_FORMAT_H_

#include <cstdint>
#include <string>

#include "chorus/status.h"

namespace chorus {
namespace leveldb_log {

constexpr char kRecordPrefix = 'r';
constexpr char kVariablePrefix = 'v';
constexpr char kMetaKey[] = "m";
constexpr char kTrimmedBelowKey[] = "t";
constexpr uint64_t kMetaMagic = 0x676f6c2d73726863ull;  // the bytes "chrs-log"
constexpr uint32_t kFormatVersion = 2;

std::string RecordKey(uint64_t instance);
// REQUIRES: key is a record key (kRecordPrefix + 8 bytes).
uint64_t InstanceOfRecordKey(const std::string& key);
std::string VariableKey(const std::string& name);

// crc32c(key + payload) + payload.
std::string EncodeChecksummed(const std::string& key, const std::string& payload);
// Verifies and strips the checksum. Returns Corruption naming `what` when
// the value is truncated or fails its crc32c; *payload is untouched then.
Status DecodeChecksummed(const std::string& key, const std::string& value, const std::string& what,
                         std::string* payload);

// The trimmed_below value, and its check: Corruption naming `what` when it
// fails its crc32c or is not 8 bytes long (*below is untouched then).
std::string EncodeTrimmedBelow(uint64_t below);
Status DecodeTrimmedBelow(const std::string& value, const std::string& what, uint64_t* below);

// Whose log a database is.
struct LogIdentity {
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  uint64_t node_id = 0;  // NodeInfo::id() of the node that owns the log
};

// A version 2 meta value.
std::string EncodeMeta(const LogIdentity& identity);
// A version 1 meta value (no node id): only for tests of the upgrade.
std::string EncodeMetaV1(uint64_t cluster_id, uint32_t group);
// Checks `value` against the expected identity. Corruption when it fails its
// crc32c, InvalidArgument (naming expected and found) on a bad magic, an
// unknown format version, or a cluster, group or node mismatch. *upgrade is
// set to true for a version 1 meta (which records no node): the caller then
// rewrites it with EncodeMeta.
Status CheckMeta(const std::string& value, const LogIdentity& expected, const std::string& dir,
                 bool* upgrade);

}  // namespace leveldb_log
}  // namespace chorus

#endif  // CHORUS_NODE_LEVELDB_LOG_FORMAT_H_
