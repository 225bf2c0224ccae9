// PROVISIONAL (lane B2): a minimal CheckpointStore with the interface of
// design10.md, so that the transfer can be built and tested before lane B1's
// store lands. On `git merge wip-ckpt-node` B1's files replace this one.
#ifndef CHORUS_NODE_CHECKPOINT_STORE_H_
#define CHORUS_NODE_CHECKPOINT_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "utils/logging.h"

namespace chorus {

struct CheckpointFile {
  std::string path;  // relative to the checkpoint's dir
  uint64_t size = 0;
  uint32_t crc = 0;
};

struct CheckpointManifest {
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  uint64_t instance = 0;
  uint32_t chain_checksum = 0;
  std::vector<CheckpointFile> files;  // sorted by path
  uint64_t total_bytes() const;
  std::string Encode() const;
  static Status Decode(const std::string& bytes, CheckpointManifest* m);
};

class CheckpointStore {
 public:
  static Status Open(const std::string& dir, uint64_t cluster_id, uint32_t group, Logger* logger,
                     std::unique_ptr<CheckpointStore>* store);
  Status Newest(CheckpointManifest* m) const;
  std::string DirOf(uint64_t instance) const;
  Status BeginStaging(std::string* staging_dir);
  Status Commit(const std::string& staging_dir, CheckpointManifest* m);
  void Abort(const std::string& staging_dir);
  Status Pin(uint64_t instance);
  void Unpin(uint64_t instance);
  Status ReadChunk(const CheckpointManifest& m, uint64_t offset, size_t max_bytes,
                   std::string* data) const;
  Status MakeScratch(const CheckpointManifest& m, int state_machine_id, std::string* scratch);

 private:
  CheckpointStore(const std::string& dir, uint64_t cluster_id, uint32_t group)
      : dir_(dir), cluster_id_(cluster_id), group_(group) {}
  const std::string dir_;
  const uint64_t cluster_id_;
  const uint32_t group_;
  mutable std::mutex mu_;
  std::map<uint64_t, CheckpointManifest> committed_;  // GUARDED_BY(mu_)
  std::map<uint64_t, int> pins_;                      // GUARDED_BY(mu_)
  uint64_t next_tag_ = 0;                             // GUARDED_BY(mu_)
};

Status RemoveTree(const std::string& path);

}  // namespace chorus

#endif  // CHORUS_NODE_CHECKPOINT_STORE_H_
