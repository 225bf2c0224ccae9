// Copyright (c) chorus authors.
//
// Runs a fault schedule (schedule.h) against a cluster on a thread of its
// own, at the steps' times, and heals each fault after its hold. Counts
// what it injected, by kind, and keeps a line per step for the report.

#ifndef CHORUS_UNITTEST_NEMESIS_FAULTS_H_
#define CHORUS_UNITTEST_NEMESIS_FAULTS_H_

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster.h"
#include "net.h"
#include "schedule.h"

namespace chorus {
namespace nemesis {

class FaultRunner {
 public:
  FaultRunner(Network* network, Cluster* cluster, const std::vector<FaultStep>& steps);
  ~FaultRunner();  // stops

  void Start();
  // Ends the current step early, heals (network rules off, paused members
  // continued, killed members restarted) and joins the thread. The first
  // healing failure, if any, is returned (and kept in error()).
  Status Stop();

  // After Stop.
  std::map<std::string, int> injected() const;
  // Steps that injected nothing, by kind: a transfer with no master known
  // or refused by the node, a membership change the group did not make.
  std::map<std::string, int> declined() const;
  std::vector<std::string> log() const;
  // A fault that could not be injected or healed (a harness or cluster
  // failure, not a checked property): the run fails with it.
  Status error() const;

 private:
  void Run();
  void Step(const FaultStep& step);
  // Sleeps until `until_ns` or Stop. false: stopped.
  bool SleepUntil(int64_t until_ns);
  // A line of the log; a non-empty `kind` counts one injected (or, with
  // `declined`, one declined) fault of that kind.
  void Note(const std::string& kind, const std::string& line, bool declined = false);
  void Fail(const Status& s);
  Status Block(const std::vector<std::vector<int>>& sides);

  Network* const network_;
  Cluster* const cluster_;
  const std::vector<FaultStep> steps_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  int64_t start_ns_ = 0;
  int next_spare_;
  mutable std::mutex mu_;
  std::map<std::string, int> injected_;  // GUARDED_BY(mu_)
  std::map<std::string, int> declined_;  // GUARDED_BY(mu_)
  std::vector<std::string> log_;         // GUARDED_BY(mu_)
  Status error_;                         // GUARDED_BY(mu_)
};

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_FAULTS_H_
