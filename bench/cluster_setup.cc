#include "bench/cluster_setup.h"

#include <unistd.h>

#include <cstdio>
#include <thread>

#include "bench/run_dir.h"

namespace chorus {
namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

// The master of `group` as `node` knows it: its index in `nodes`, -1 if none.
int MasterIndex(Node* node, uint32_t group, const std::vector<NodeInfo>& nodes) {
  MasterInfo m;
  if (!node->GetMaster(group, &m).ok() || !m.known) return -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == m.node) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

Status WarmUp(Node* node, int groups, bool reads, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (uint32_t g = 0; g < static_cast<uint32_t>(groups); ++g) {
    Status s;
    do {
      uint64_t instance = 0;
      s = reads ? node->ReadBarrier(g, &instance) : node->Propose(g, "warmup", &instance);
      if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (!s.ok() && !s.IsStopped() && Clock::now() < deadline);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status SetNode0Role(Node* node, const std::vector<NodeInfo>& nodes, bool want_master, int groups,
                    const std::string& run_dir, std::chrono::seconds timeout) {
  const std::string ask = run_dir + "/want_master";
  if (want_master && !WriteFileAtomically(ask, "node 0\n")) {
    return Status::IOError("cannot write " + ask);
  }
  const auto deadline = Clock::now() + timeout;
  Status s;
  for (uint32_t g = 0; g < static_cast<uint32_t>(groups) && s.ok(); ++g) {
    while (true) {
      const bool is_master = node->IsMaster(g);
      if (want_master ? is_master : !is_master && MasterIndex(node, g, nodes) > 0) break;
      if (!want_master && is_master) node->TransferMaster(g, nodes[1].id());  // checked above
      if (Clock::now() >= deadline) {
        s = Status::Timeout(std::string("node 0 did not become ") +
                            (want_master ? "master" : "follower") + " of group " +
                            std::to_string(g));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (want_master) std::remove(ask.c_str());
  return s;
}

void HandOverIfAsked(Node* node, const std::vector<NodeInfo>& nodes, const std::string& run_dir,
                     std::vector<Clock::time_point>* last_transfer) {
  if (access((run_dir + "/want_master").c_str(), F_OK) != 0) return;
  for (uint32_t g = 0; g < last_transfer->size(); ++g) {
    if (node->IsMaster(g) && Clock::now() - (*last_transfer)[g] > std::chrono::milliseconds(200)) {
      node->TransferMaster(g, nodes[0].id());  // node 0 checks the outcome
      (*last_transfer)[g] = Clock::now();
    }
  }
}

}  // namespace bench
}  // namespace chorus
