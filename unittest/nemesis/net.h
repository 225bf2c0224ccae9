// Copyright (c) chorus authors.
//
// The nemesis's network: one Linux network namespace per replica slot, each
// with a veth pair into a bridge that lives in a hub namespace, and one more
// veth from the harness's own (root) namespace into that bridge, which the
// clients use. Names and the /24 subnet come from the harness's pid, so
// runs can go on side by side; Destroy (also at destruction) removes them,
// and RemoveLeftovers removes those of runs whose process is gone.
//
// Faults are nftables rules inside the replicas' namespaces (table
// "inet nemesis"): a partition drops the packets to and from blocked peers,
// packet loss drops a random share (numgen random) of what comes in from
// the other replicas. The client's address is never blocked: a partitioned
// replica still serves the clients that reach it (what a stale read needs).
// The kernel here has no netem, so there is no delay fault.

#ifndef CHORUS_UNITTEST_NEMESIS_NET_H_
#define CHORUS_UNITTEST_NEMESIS_NET_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace nemesis {

// Runs `command` with /bin/sh; OK when it exits 0, else IOError naming the
// command, its exit status and its output (stdout and stderr together).
Status RunShell(const std::string& command, std::string* output = nullptr);

class Network {
 public:
  // Requires root, `ip` and `nft`: checks them first (a clear error when
  // one is missing). Creates the hub, `slots` replica namespaces and the
  // client veth; on failure removes what it made.
  static Status Create(int slots, std::unique_ptr<Network>* network);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Removes every namespace and link of this run (idempotent).
  void Destroy();
  // Removes the namespaces and links of earlier runs whose pid is dead.
  // Returns how many runs it cleaned.
  static int RemoveLeftovers();

  int slots() const { return slots_; }
  // The namespace name (under /run/netns) and address of replica `slot`.
  std::string Namespace(int slot) const;
  std::string NodeIp(int slot) const;
  std::string ClientIp() const;

  // Replaces every fault rule: replica i drops all traffic to and from the
  // replicas in blocked[i] (missing entries: none), and each replica drops
  // loss_percent of the packets other replicas send it.
  Status Apply(const std::vector<std::set<int>>& blocked, int loss_percent);
  // No fault rules.
  Status Heal() { return Apply({}, 0); }

 private:
  Network(int slots, int pid);
  Status Build();

  const int slots_;
  const std::string prefix_;  // "nm<pid>"
  std::string subnet_;        // "10.a.b."
  bool built_ = false;
};

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_NET_H_
