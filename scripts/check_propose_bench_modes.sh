#!/usr/bin/env bash
# Runs short propose_bench runs of the master-election modes and checks that
# each prints one JSON object that parses, with ops > 0 (failures are
# printed, not asserted: a forwarded proposal may time out at a master change)
# (ctest propose_bench_modes, label sample). It asserts no speed.
#   --election --clients_on=all         clients on all 3 nodes (forwarding)
#   --election --node0_role=master      clients on the master
#   --election --reads --node0_role=master     lease reads
#   --election --reads --node0_role=follower   read-index reads
#   --election --secret --node0_role=master    over the authenticated transport
#   --election --clients_on=process --node0_role=follower
#                                       a client process over TCP to node 0,
#                                       which forwards to the master
#   scripts/check_propose_bench_modes.sh PROPOSE_BENCH
set -uo pipefail
prog=${1:?usage: check_propose_bench_modes.sh PROPOSE_BENCH}
check() {
  local out rc
  out=$("$prog" --seconds=1 --json "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "check_propose_bench_modes: $* exited with $rc" >&2; echo "$out" >&2; exit 1
  fi
  python3 - "$out" "$@" <<'PY' || { echo "check_propose_bench_modes: $*: bad JSON" >&2; echo "$out" >&2; exit 1; }
import json, sys
o = json.loads(sys.argv[1].strip().splitlines()[-1])
args = sys.argv[2:]
assert o["ops"] > 0 and o["ops_per_sec"] > 0, o
assert o["election"] is True, o
if "--clients_on=all" in args:
    assert o["clients_on"] == "all" and all(n > 0 for n in o["clients_by_node"]), o
if "--clients_on=process" in args:
    assert o["clients_on"] == "process" and o["cpu_us_per_value_client_process"] > 0, o
if "--node0_role=master" in args:
    assert o["node0_is_master"] == 1, o
if "--node0_role=follower" in args:
    assert o["node0_is_master"] == 0, o
assert o["op"] == ("read" if "--reads" in args else "propose"), o
assert o["secret"] is ("--secret" in args), o
PY
}
check --election --clients_on=all --clients=6
check --election --node0_role=master --clients=4
check --election --reads --node0_role=master --clients=2
check --election --reads --node0_role=follower --clients=2
check --election --secret --node0_role=master --clients=4
check --election --clients_on=process --node0_role=follower --clients=4
exit 0
