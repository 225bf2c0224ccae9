// propose_bench: getting the cluster into the state its window measures,
// before the window starts: every group answering (WarmUp) and node 0 in
// the role asked for (SetNode0Role on node 0, HandOverIfAsked on the
// others). The nodes meet through --run_dir (bench/run_dir.h).
#ifndef CHORUS_BENCH_CLUSTER_SETUP_H_
#define CHORUS_BENCH_CLUSTER_SETUP_H_

#include <chrono>
#include <string>
#include <vector>

#include "chorus/node.h"
#include "chorus/status.h"

namespace chorus {
namespace bench {

// One call per group succeeds, each retried every 20 ms until `timeout`
// (the peers may still be starting): a Propose of "warmup", or with
// `reads` a ReadBarrier (a new master serves reads once its first noop is
// committed). Returns the last failure otherwise.
Status WarmUp(Node* node, int groups, bool reads, std::chrono::seconds timeout);

// Node 0 (`node`; nodes[0]): makes it the master of every group
// (want_master: a master elsewhere hands its groups over when it sees
// `run_dir`/want_master, HandOverIfAsked) or a follower of another node
// (node 0 hands its own to node 1). Timeout after `timeout`.
Status SetNode0Role(Node* node, const std::vector<NodeInfo>& nodes, bool want_master, int groups,
                    const std::string& run_dir, std::chrono::seconds timeout);

// Node 1 or 2, called every few ms: while node 0 asks for mastership, hands
// it every group this node masters (at most once per 200 ms per group:
// *last_transfer, one entry per group, is the caller's to keep).
void HandOverIfAsked(Node* node, const std::vector<NodeInfo>& nodes, const std::string& run_dir,
                     std::vector<std::chrono::steady_clock::time_point>* last_transfer);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_CLUSTER_SETUP_H_
