// Copyright (c) chorus authors.
//
// The kv_server processes of a nemesis run: replica slot i runs node id i+1
// in network namespace Network::Namespace(i), its data in <run_dir>/data<i>,
// its stdout/stderr appended to <run_dir>/out<i> and err<i> (they survive
// restarts: the logs of every life of the node). A process is started
// directly inside its namespace (setns before exec), so its pid is the
// kv_server's own: kill -9, SIGSTOP and SIGCONT reach it, and it dies with
// the harness (PR_SET_PDEATHSIG: which fires when the forking *thread*
// ends, so every fork happens on one thread that lives as long as the
// Cluster).
//
// The members: the slots that are replicas of the group now. A membership
// change replaces one member slot by a spare one (ReplaceMember).

#ifndef CHORUS_UNITTEST_NEMESIS_CLUSTER_H_
#define CHORUS_UNITTEST_NEMESIS_CLUSTER_H_

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "net.h"
#include "resp_client.h"

namespace chorus {
namespace nemesis {

struct ClusterOptions {
  std::string kv_server;  // the binary (REQUIRED)
  std::string run_dir;    // data dirs and logs (REQUIRED, exists)
  int voters = 3;         // the first `voters` slots are the initial members
  bool stale_reads = false;
  // Short chorus timeouts, so that faults end in failovers within a run
  // of seconds (kv_server flags).
  int propose_timeout_ms = 2000;
  int retry_ms = 1000;
  // Checkpoints often, so that restarted and new nodes catch up by one.
  int checkpoint_interval = 300;
  int log_keep = 100;
  int membership_timeout_ms = 20000;
  int command_timeout_ms = 5000;  // the harness's own RESP commands
};

class Cluster {
 public:
  static const int kChorusPort = 7000;
  static const int kRespPort = 6379;

  Cluster(Network* network, const ClusterOptions& options);
  ~Cluster();  // kills every process
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts the initial members (fresh data dirs) and waits until each
  // serves RESP and they name one master, within timeout_ms.
  Status StartInitial(int timeout_ms);

  // "<id>@<ip>:7000" of slot `slot`.
  std::string Address(int slot) const;
  std::string Ip(int slot) const { return network_->NodeIp(slot); }
  static int IdOf(int slot) { return slot + 1; }

  // Restarts a killed slot on its data dir; waits until it serves RESP.
  Status Restart(int slot, int timeout_ms);
  // kill -9 and reap. No-op when not running.
  void Kill(int slot);
  // SIGSTOP / SIGCONT.
  void Pause(int slot);
  void Resume(int slot);
  bool Running(int slot) const;
  bool Paused(int slot) const;

  // Starts `spare` empty with --join through the other members, then asks a
  // member to CHORUS.CHANGEMEMBER old_slot's id for it, retrying a TRYAGAIN
  // until timeout_ms. On OK (or another answer after which CHORUS.MEMBERS
  // lists the spare as a voter) the spare replaces old_slot in members()
  // and old_slot is killed. Otherwise the spare is killed and members()
  // unchanged (*answer: the last reply).
  Status ReplaceMember(int old_slot, int spare, int timeout_ms, std::string* answer);

  std::vector<int> members() const;
  // The slot every reachable member names master (by INFO master_id), -1
  // when unknown or they disagree.
  int Master();
  // One harness command to slot `slot` on a fresh connection.
  Status Command(int slot, const std::vector<std::string>& args, RespReply* reply,
                 int timeout_ms = 0);
  // INFO of `slot` as field -> value.
  Status Info(int slot, std::map<std::string, std::string>* fields);

  // Heals the processes: SIGCONT to every paused member, restarts every
  // member that is not running.
  Status ResumeAll(int timeout_ms);

 private:
  struct Proc {
    pid_t pid = -1;
    bool paused = false;
    bool started_once = false;
  };
  Status Spawn(int slot, const std::vector<std::string>& extra);
  // Runs `fork_and_exec` on the forking thread and waits for it.
  pid_t OnForkThread(const std::function<pid_t()>& fork_and_exec);
  void ForkLoop();
  Status WaitServing(int slot, int timeout_ms);
  std::string NodesList(const std::vector<int>& slots) const;
  // Asks the members `via` (the first that answers with no change pending)
  // whether `slot` is a voter.
  Status MembershipHas(const std::vector<int>& via, int slot, bool* voter);

  Network* const network_;
  const ClusterOptions options_;
  mutable std::mutex mu_;
  std::vector<Proc> procs_;   // GUARDED_BY(mu_)
  std::vector<int> members_;  // GUARDED_BY(mu_)

  std::mutex fork_mu_;
  std::condition_variable fork_cv_;
  std::function<pid_t()> fork_task_;  // GUARDED_BY(fork_mu_): to run
  pid_t fork_result_ = 0;             // GUARDED_BY(fork_mu_)
  bool fork_done_ = false;            // GUARDED_BY(fork_mu_)
  bool fork_stop_ = false;            // GUARDED_BY(fork_mu_)
  std::mutex fork_caller_mu_;         // one Spawn at a time
  std::thread fork_thread_;
};

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_CLUSTER_H_
