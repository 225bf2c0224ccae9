// The identity of a node's data dir: data_dir/IDENTITY.
//
// It records whose data dir this is (cluster id, node id), the data dir's
// incarnation (a random non-zero 64-bit number drawn when the dir was
// created; paxos/membership.h M5: a member entry names the incarnation it was
// added with, so a node whose disk was lost, and so got a new dir, never
// votes as its old self) and whether the dir was created to join an existing
// cluster (Options::join: such a node never votes under a genesis entry).
//
// Text, one "key value" per line, ending with a crc32c of the lines above:
//   chorus-identity 1
//   cluster_id <decimal>
//   node_id <decimal>
//   incarnation <decimal>
//   joined <0|1>
//   address <NodeInfo text>     (informational: what self was when created)
//   crc32c <decimal>
// Written once (a temporary file, fsynced, renamed, the directory fsynced)
// and never rewritten.
#ifndef CHORUS_NODE_DATA_DIR_IDENTITY_H_
#define CHORUS_NODE_DATA_DIR_IDENTITY_H_

#include <cstdint>
#include <string>

#include "chorus/options.h"
#include "chorus/status.h"
#include "utils/logging.h"

namespace chorus {

struct DataDirIdentity {
  uint64_t cluster_id = 0;
  uint64_t node_id = 0;
  uint64_t incarnation = 0;  // 0: unknown (no data dir: a log_storage_factory)
  bool joined = false;
  // The node's address when the dir was created (for messages only: a node
  // keeps its id when it moves).
  std::string address;

  std::string Encode() const;
  // Corruption naming the problem for bytes that are not an identity file.
  static Status Decode(const std::string& text, DataDirIdentity* out);
};

// The name of the file inside the data dir ("IDENTITY").
extern const char kIdentityFileName[];

// Reads data_dir/IDENTITY, or creates it:
//  - a data dir that holds an IDENTITY: it must name options' cluster and
//    node (InvalidArgument naming both otherwise);
//  - a data dir that holds a group log (data_dir/g<N>/CURRENT) but no
//    IDENTITY (a data dir of an older chorus, which recorded none): one is
//    created with joined = false;
//  - otherwise (missing, empty, or holding only files that are not
//    chorus's, e.g. an application's own state): created
//    (options.create_if_missing must be set, unless a log_storage_factory
//    decides: InvalidArgument otherwise) with joined = !options.join.empty().
// With no data_dir (a log_storage_factory): nothing is read or written;
// incarnation 0, joined = !options.join.empty().
// IOError when the file cannot be read or written; Corruption when it does
// not parse.
Status LoadOrCreateIdentity(const Options& options, Logger* logger, DataDirIdentity* identity);

}  // namespace chorus

#endif  // CHORUS_NODE_DATA_DIR_IDENTITY_H_
