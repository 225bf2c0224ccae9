// CkCluster: a real 3-node cluster in one process (loopback TCP) whose
// nodes make checkpoints (CheckpointMachine state machines, small
// intervals, a small leveldb memtable), and the helpers of the node
// checkpoint tests: group status, copying a checkpoint between stores the
// way a transfer does, running without node 0. Tests wait for states
// (counters), never for a time.
#ifndef CHORUS_UNITTEST_NODE_CHECKPOINT_CLUSTER_H_
#define CHORUS_UNITTEST_NODE_CHECKPOINT_CLUSTER_H_

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "chorus/node.h"
#include "node/checkpoint_store.h"
#include "node/fs_util.h"
#include "node/node_impl.h"
#include "unittest/node/checkpoint_machine.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace testing {

inline Group* GroupOf(Node* node) { return static_cast<NodeImpl*>(node)->group_for_testing(0); }

// Bytes of the regular files under `dir`.
inline uint64_t DirBytes(const std::string& dir) {
  std::vector<std::string> files;
  if (!ListFilesRecursive(dir, &files, nullptr).ok()) return 0;
  uint64_t total = 0;
  for (const std::string& f : files) {
    struct stat st;
    if (stat((dir + "/" + f).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

class CkCluster {
 public:
  static constexpr int kNodes = 3;
  explicit CkCluster(int machines_per_node = 1) {
    for (int i = 0; i < kNodes; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
    for (int i = 0; i < kNodes; ++i) {
      machines_.emplace_back();
      for (int m = 0; m < machines_per_node; ++m) {
        machines_[i].push_back(std::make_unique<CheckpointMachine>(m + 1));
      }
    }
    running_.resize(kNodes);
    started_.resize(kNodes, false);
    logs_.resize(kNodes, nullptr);
  }
  ~CkCluster() {
    for (auto& n : running_) n.reset();
  }

  uint64_t interval = 40;
  uint64_t keep = 10;
  uint64_t keep_bytes = 0;
  // leveldb memtable of each log: small, so that the size on disk follows
  // the live records in a short test.
  size_t write_buffer_bytes = 64 << 10;

  std::string data_dir(int i) const { return dir_.path() + "/n" + std::to_string(i); }
  Options OptionsFor(int i) {
    Options o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = 31;
    o.data_dir = data_dir(i);
    o.create_if_missing = !started_[i];
    for (auto& m : machines_[i]) o.state_machines.push_back({0, m.get()});
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 100;
    o.propose_timeout_ms = 20000;
    o.checkpoint_interval_instances = interval;
    o.log_keep_instances = keep;
    o.log_keep_bytes = keep_bytes;
    o.log_level = LogLevel::kNone;
    // The default leveldb log, with a small memtable; the test keeps a
    // pointer to read its bounds (LogStorage reads are thread-safe).
    LogStorage** slot = &logs_[i];
    const size_t buffer = write_buffer_bytes;
    const uint64_t self = nodes_[i].id();
    const bool create = o.create_if_missing;
    const std::string dir = o.data_dir;
    o.log_storage_factory = [slot, buffer, self, create, dir](uint32_t g,
                                                            std::unique_ptr<LogStorage>* out) {
      LevelDbLogOptions lo;
      lo.cluster_id = 31;
      lo.group = g;
      lo.node_id = self;
      lo.create_if_missing = create;
      lo.write_buffer_bytes = buffer;
      Status s = OpenLevelDbLogStorage(dir + "/g" + std::to_string(g), lo, out);
      if (s.ok()) *slot = out->get();
      return s;
    };
    return o;
  }
  Status Start(int i) {
    Options o = OptionsFor(i);
    started_[i] = true;
    return Node::Open(o, &running_[i]);
  }
  void StartAll() {
    for (int i = 0; i < kNodes; ++i) ASSERT_TRUE(Start(i).ok());
  }
  void Stop(int i) {
    running_[i].reset();
    logs_[i] = nullptr;
  }
  Node* node(int i) { return running_[i].get(); }
  CheckpointMachine* machine(int i, int m = 0) { return machines_[i][m].get(); }
  // Records the log of node i holds now (max - min + 1; 0 when empty).
  uint64_t Records(int i) {
    uint64_t lo = 0, hi = 0;
    if (logs_[i] == nullptr || !logs_[i]->GetMinInstanceId(&lo).ok() ||
        !logs_[i]->GetMaxInstanceId(&hi).ok()) {
      return 0;
    }
    return hi - lo + 1;
  }

  // Proposes `n` values of `bytes` bytes from node `from` on 4 threads, to
  // state machine `sm` (0: the only one).
  void ProposeMany(int from, int n, size_t bytes = 16, int sm = 0) {
    std::atomic<int> next{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int k = next++; k < n; k = next++) {
          std::string v = "v" + std::to_string(k) + "-" + std::to_string(value_seq_ + k);
          v.resize(std::max(bytes, v.size()), 'x');
          uint64_t instance = 0;
          ExecuteContext ctx;
          ctx.state_machine_id = sm;
          if (!node(from)->Propose(0, v, &instance, &ctx).ok()) ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    value_seq_ += n;
    EXPECT_EQ(failures.load(), 0);
  }

  // Every running node in `members` executed the same instances with the same state.
  bool Converged(const std::vector<int>& members) {
    return WaitUntil([&] {
      const uint64_t now = node(members[0])->GetNowInstanceId(0);
      for (int i : members) {
        if (node(i)->GetNowInstanceId(0) != now) return false;
        for (size_t m = 0; m < machines_[i].size(); ++m) {
          if (!(machine(i, static_cast<int>(m))->state() ==
                machine(members[0], static_cast<int>(m))->state())) {
            return false;
          }
        }
      }
      return true;
    });
  }
  // Proposes from node 0 (to state machine `sm`) in small steps until
  // `done` holds (at most `max` values).
  bool ProposeUntil(const std::function<bool()>& done, int sm = 0, int max = 2000) {
    for (int n = 0; n < max && !done(); n += 5) ProposeMany(0, 5, 16, sm);
    return WaitUntil(done);
  }
  // No checkpoint is being written on node i (so counters are settled).
  bool Settled(int i) {
    return WaitUntil([&] { return !GroupOf(node(i))->checkpoint_in_progress(); });
  }

 private:
  TempDir dir_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::vector<std::unique_ptr<CheckpointMachine>>> machines_;
  std::vector<std::unique_ptr<Node>> running_;
  std::vector<bool> started_;
  std::vector<LogStorage*> logs_;  // borrowed from the running nodes
  int value_seq_ = 0;
};

inline GroupStatus StatusOf(Node* node) {
  GroupStatus st;
  EXPECT_TRUE(node->GetGroupStatus(0, &st).ok());
  return st;
}

// Copies the newest checkpoint of `from` into `to` the way a transfer does:
// the files into a staging dir, then Commit with the sender's manifest
// (which verifies every file). Returns the manifest.
inline CheckpointManifest CopyNewest(CheckpointStore* from, CheckpointStore* to) {
  CheckpointManifest m;
  EXPECT_TRUE(from->Newest(&m).ok());
  EXPECT_TRUE(from->Pin(m.instance).ok());
  std::string staging;
  EXPECT_TRUE(to->BeginStaging(&staging).ok());
  for (const CheckpointFile& f : m.files) {
    std::string data;
    EXPECT_TRUE(ReadWholeFile(from->DirOf(m.instance) + "/" + f.path, &data).ok());
    const std::string path = staging + "/" + f.path;
    EXPECT_TRUE(CreateDirs(path.substr(0, path.rfind('/'))).ok());
    EXPECT_TRUE(WriteWholeFile(path, data).ok());
  }
  from->Unpin(m.instance);
  CheckpointManifest received = m;
  EXPECT_TRUE(to->Commit(staging, &received).ok());
  return m;
}

// Nodes 1 and 2 choose `intervals` checkpoint intervals of values without
// node 0 (never started) and trim their logs.
inline bool RunWithoutNode0(CkCluster* c, int intervals) {
  if (!c->Start(1).ok() || !c->Start(2).ok()) return false;
  c->ProposeMany(1, static_cast<int>(intervals * c->interval));
  return c->Converged({1, 2}) && c->Settled(1) &&
         WaitUntil([&] { return c->node(1)->GetMinChosenInstanceId(0) > 0; });
}

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_CHECKPOINT_CLUSTER_H_
