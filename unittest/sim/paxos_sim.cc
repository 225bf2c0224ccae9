// paxos_sim: runs the seeded cluster simulation over a range of seeds.
// Prints one line per failing seed with the command that replays it, and ends
// with counter lines (commit latency percentiles; with --master_election the
// election, read, forward and transfer counts; with --checkpoints the
// checkpoint, trim, use-a-checkpoint, transfer and install counts; with
// --membership the changes proposed, applied, conflicting, in force, refused,
// the scenarios, lost disks and verified quorums) and
// exactly one summary line:
//   seeds=S steps=T faults=F violations=V
// Exits non-zero when V > 0.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "tools/program_flags.h"
#include "unittest/sim/sim.h"

DEFINE_uint64(seeds, 100, "number of seeds to run");
DEFINE_uint64(first_seed, 1, "first seed");
DEFINE_uint64(steps, 2000, "events per seed in the fault phase");
DEFINE_int32(nodes, 3, "cluster size");
DEFINE_string(mutation, "none",
              "a protocol rule broken on purpose (paxos/options.h TestMutation): none, "
              "forget_promise, accept_lower_ballot, accept_not_persisted, "
              "accepted_not_recovered, promise_drops_far, promise_drops_last, "
              "promise_drops_chosen, unsynced_writes, ignore_reported_end, adopt_first_only, "
              "adopt_lowest_ballot, fast_path_while_preparing, accept_promise_not_persisted, "
              "far_chosen_unbounded, round_keeps_first; with --master_election: "
              "lease_ignores_drift, read_before_noop_commit, prepare_ignores_grant, "
              "no_startup_hold, transfer_keeps_lease; with --checkpoints: "
              "trim_ignores_checkpoint, trim_ignores_margin; with --membership: "
              "activate_at_once, follower_votes, quorum_of_current_only");
DEFINE_bool(verbose, false, "print every event");
DEFINE_uint64(max_inflight, 4, "instances each proposer keeps in phase 2 at once");
DEFINE_uint64(window, 0, "acceptance window (>= max_inflight); 0: drawn per seed");
DEFINE_uint64(promise_budget_bytes, 0, "PROMISE value-byte budget (>= 80); 0: drawn per seed");
DEFINE_bool(mixed_options, false,
            "each start of each node draws its own max_inflight, window and PROMISE budget");
DEFINE_uint64(max_round_steps, 4,
              "group commit: core steps a node merges into one round at most (drawn per round "
              "from 1..N); 1: every step executes on its own");
DEFINE_bool(master_election, false,
            "master election on every node (lease, heartbeats, forwarding), with reads "
            "(ReadBarrier), master transfers and step-downs in the workload; implies --clocks");
DEFINE_bool(clocks, false,
            "per-node clocks drifting within --drift_ppm, and node pauses (stopped processes)");
DEFINE_bool(checkpoints, false,
            "state machines that checkpoint, log trimming behind them, restarts from "
            "checkpoints, checkpoint transfers (lost, corrupt) and long-down nodes");
DEFINE_bool(membership, false,
            "membership changes: spare nodes join, a scheduler adds, removes and replaces "
            "members (followers first), removes the master, replaces nodes crashed for good "
            "or whose disk was lost, with racing changes, transfers and master crashes");
DEFINE_int32(spares, 2, "--membership: joiner nodes beyond --nodes");
DEFINE_uint64(activation_distance, 0,
              "--membership: alpha (>= the largest max_inflight); 0: drawn per seed in 8..32");
DEFINE_uint64(drift_ppm, 200000,
              "clock rate drift bound (ppm) of --clocks, also CoreOptions::max_clock_drift_ppm");

int main(int argc, char** argv) {
  chorus::ParseProgramFlags("paxos_sim [--nodes=N --seeds=S --steps=K --mutation=NAME ...]: runs "
                            "the cluster simulation; the last line counts violations",
                            &argc, &argv);
  chorus::sim::SimOptions o;
  if (!chorus::sim::ParseMutation(FLAGS_mutation, &o.mutation)) {
    std::fprintf(stderr, "unknown --mutation=%s\n", FLAGS_mutation.c_str());
    return 2;
  }
  if (FLAGS_nodes < 1 || FLAGS_nodes > 9) {
    std::fprintf(stderr, "--nodes must be in [1, 9]\n");
    return 2;
  }
  o.nodes = FLAGS_nodes;
  o.steps = FLAGS_steps;
  o.verbose = FLAGS_verbose;
  if (FLAGS_max_inflight < 1) {
    std::fprintf(stderr, "--max_inflight must be >= 1\n");
    return 2;
  }
  o.max_inflight = FLAGS_max_inflight;
  if (FLAGS_window != 0 && FLAGS_window < FLAGS_max_inflight) {
    std::fprintf(stderr, "--window must be 0 or >= --max_inflight\n");
    return 2;
  }
  o.window = FLAGS_window;
  o.promise_budget_bytes = FLAGS_promise_budget_bytes;
  o.mixed_options = FLAGS_mixed_options;
  if (FLAGS_max_round_steps < 1) {
    std::fprintf(stderr, "--max_round_steps must be >= 1\n");
    return 2;
  }
  o.max_round_steps = FLAGS_max_round_steps;
  if (FLAGS_drift_ppm >= 500000) {
    std::fprintf(stderr, "--drift_ppm must be < 500000\n");
    return 2;
  }
  o.master_election = FLAGS_master_election;
  o.clocks = FLAGS_clocks;
  o.drift_ppm = FLAGS_drift_ppm;
  o.checkpoints = FLAGS_checkpoints;
  if (FLAGS_spares < 0 || FLAGS_spares > 9) {
    std::fprintf(stderr, "--spares must be in [0, 9]\n");
    return 2;
  }
  const uint64_t largest_inflight =
      FLAGS_mixed_options ? 2 * FLAGS_max_inflight : FLAGS_max_inflight;
  if (FLAGS_activation_distance != 0 && FLAGS_activation_distance < largest_inflight) {
    std::fprintf(stderr, "--activation_distance must be 0 or >= the largest max_inflight\n");
    return 2;
  }
  if (FLAGS_membership && FLAGS_promise_budget_bytes != 0 && FLAGS_promise_budget_bytes < 272) {
    std::fprintf(stderr, "--membership needs --promise_budget_bytes 0 or >= 272\n");
    return 2;
  }
  o.membership = FLAGS_membership;
  o.spares = FLAGS_spares;
  o.activation_distance = FLAGS_activation_distance;
  unsigned long long steps = 0, faults = 0, violations = 0, chosen = 0, proposals = 0, ok = 0,
                     crashes = 0, behind = 0, truncated = 0, merged = 0, early_rounds = 0,
                     crashes_before_persist = 0, catchup_reads = 0, pauses = 0, elections = 0,
                     lease_reads = 0, read_index_reads = 0, reads_busy = 0, forwards = 0,
                     transfers = 0, timeouts = 0, checkpoints = 0, trims = 0,
                     checkpoint_replies = 0, checkpoint_transfers = 0, transfers_lost = 0,
                     transfers_corrupt = 0, installs = 0, long_downs = 0, outcome_unknown = 0,
                     raced_replies = 0,
                     changes_proposed = 0, changes_applied = 0, changes_conflict = 0,
                     changes_ok = 0, changes_refused = 0, proposals_refused = 0, scenarios = 0,
                     disks_lost = 0, not_member_sent = 0, votes_checked = 0, non_member_drops = 0;
  std::vector<uint64_t> latency;
  std::map<std::string, unsigned long long> scenario_kinds;
  for (uint64_t seed = FLAGS_first_seed; seed < FLAGS_first_seed + FLAGS_seeds; ++seed) {
    o.seed = seed;
    chorus::sim::SimResult r = chorus::sim::RunSim(o);
    steps += r.steps;
    faults += r.faults;
    chosen += r.chosen;
    proposals += r.proposals;
    ok += r.proposals_ok;
    crashes += r.crashes;
    behind += r.behind;
    truncated += r.truncated;
    merged += r.merged_rounds;
    early_rounds += r.early_rounds;
    crashes_before_persist += r.crashes_before_persist;
    catchup_reads += r.catchup_reads;
    pauses += r.pauses;
    elections += r.elections;
    lease_reads += r.lease_reads;
    read_index_reads += r.read_index_reads;
    reads_busy += r.reads_busy;
    forwards += r.forwards;
    transfers += r.transfers;
    timeouts += r.timeouts;
    checkpoints += r.checkpoints;
    trims += r.trims;
    checkpoint_replies += r.checkpoint_replies;
    checkpoint_transfers += r.checkpoint_transfers;
    transfers_lost += r.transfers_lost;
    transfers_corrupt += r.transfers_corrupt;
    installs += r.installs;
    long_downs += r.long_downs;
    outcome_unknown += r.outcome_unknown;
    raced_replies += r.raced_checkpoint_replies;
    changes_proposed += r.changes_proposed;
    changes_applied += r.changes_applied;
    changes_conflict += r.changes_conflict;
    changes_ok += r.changes_ok;
    changes_refused += r.changes_refused;
    proposals_refused += r.proposals_refused;
    scenarios += r.scenarios_done;
    disks_lost += r.disks_lost;
    not_member_sent += r.not_member_sent;
    votes_checked += r.votes_checked;
    for (const auto& k : r.scenarios) scenario_kinds[k.first] += k.second;
    non_member_drops += r.non_member_drops;
    latency.insert(latency.end(), r.commit_latency_ms.begin(), r.commit_latency_ms.end());
    if (r.violation) {
      violations++;
      std::printf("seed %llu FAILED: %s\n  replay: paxos_sim --first_seed=%llu --seeds=1 "
                  "--steps=%llu --nodes=%d --max_inflight=%llu --window=%llu "
                  "--promise_budget_bytes=%llu --max_round_steps=%llu --mutation=%s%s%s%s%s%s "
                  "--drift_ppm=%llu --verbose\n",
                  static_cast<unsigned long long>(seed), r.what.c_str(),
                  static_cast<unsigned long long>(seed),
                  static_cast<unsigned long long>(FLAGS_steps), FLAGS_nodes,
                  static_cast<unsigned long long>(FLAGS_max_inflight),
                  static_cast<unsigned long long>(FLAGS_window),
                  static_cast<unsigned long long>(FLAGS_promise_budget_bytes),
                  static_cast<unsigned long long>(FLAGS_max_round_steps), FLAGS_mutation.c_str(),
                  FLAGS_mixed_options ? " --mixed_options" : "",
                  FLAGS_master_election ? " --master_election" : "",
                  FLAGS_clocks ? " --clocks" : "",
                  FLAGS_checkpoints ? " --checkpoints" : "",
                  FLAGS_membership ? (" --membership --spares=" + std::to_string(FLAGS_spares) +
                                      " --activation_distance=" +
                                      std::to_string(FLAGS_activation_distance))
                                         .c_str()
                                   : "",
                  static_cast<unsigned long long>(FLAGS_drift_ppm));
    }
  }
  std::printf("chosen=%llu proposals=%llu proposals_ok=%llu crashes=%llu accepts_behind=%llu "
              "truncated_promises=%llu merged_rounds=%llu catchup_reads=%llu\n",
              chosen, proposals, ok, crashes, behind, truncated, merged, catchup_reads);
  std::printf("early_rounds=%llu crashes_before_persist=%llu\n", early_rounds,
              crashes_before_persist);
  // Commit latency: virtual ms from Propose to the client's result, over
  // every proposal reported chosen in every seed.
  std::sort(latency.begin(), latency.end());
  auto percentile = [&latency](size_t p) -> unsigned long long {
    return latency.empty() ? 0 : latency[std::min(latency.size() - 1, latency.size() * p / 100)];
  };
  std::printf("commit_latency_ms p50=%llu p99=%llu max=%llu\n", percentile(50), percentile(99),
              latency.empty() ? 0ULL : static_cast<unsigned long long>(latency.back()));
  if (o.clocks || o.master_election) std::printf("pauses=%llu\n", pauses);
  if (o.master_election) {
    std::printf("elections=%llu lease_reads=%llu read_index_reads=%llu reads_busy=%llu "
                "forwards=%llu transfers=%llu proposal_timeouts=%llu\n",
                elections, lease_reads, read_index_reads, reads_busy, forwards, transfers,
                timeouts);
  }
  if (o.checkpoints) {
    std::printf("checkpoints=%llu trims=%llu checkpoint_replies=%llu raced_replies=%llu "
                "transfers=%llu transfers_lost=%llu transfers_corrupt=%llu installs=%llu "
                "long_downs=%llu outcome_unknown=%llu\n",
                checkpoints, trims, checkpoint_replies, raced_replies, checkpoint_transfers,
                transfers_lost, transfers_corrupt, installs, long_downs, outcome_unknown);
  }
  if (o.membership) {
    std::printf("changes_proposed=%llu changes_applied=%llu changes_conflict=%llu "
                "changes_in_force=%llu changes_refused=%llu proposals_refused=%llu "
                "scenarios=%llu disks_lost=%llu not_member_sent=%llu non_member_drops=%llu "
                "quorums_verified=%llu\n",
                changes_proposed, changes_applied, changes_conflict, changes_ok,
                changes_refused, proposals_refused, scenarios, disks_lost, not_member_sent,
                non_member_drops, votes_checked);
    std::printf("scenarios_done:");
    for (const auto& k : scenario_kinds) std::printf(" %s=%llu", k.first.c_str(), k.second);
    std::printf("\n");
  }
  std::printf("seeds=%llu steps=%llu faults=%llu violations=%llu\n",
              static_cast<unsigned long long>(FLAGS_seeds), steps, faults, violations);
  return violations > 0 ? 1 : 0;
}
