#!/usr/bin/env bash
# Runs a tiny failover_bench (one round: a 3-process cluster under load, its
# master killed with SIGKILL) and checks that its JSON object parses, names a
# failover_ms and a first_read_ms (non-negative numbers) and lost == 0
# (ctest failover_bench_json, label sample). It asserts no time.
#   scripts/check_failover_bench_json.sh FAILOVER_BENCH
set -uo pipefail
prog=${1:?usage: check_failover_bench_json.sh FAILOVER_BENCH}
out=$("$prog" --rounds=1 --clients=2 --load_ms=300 --after_ms=300 --json 2>/dev/null)
rc=$?
fail() { echo "check_failover_bench_json: $*" >&2; echo "$out" >&2; exit 1; }
[ "$rc" -eq 0 ] || fail "failover_bench exited with $rc"
python3 - "$out" <<'PY' || fail "bad JSON object"
import json, sys
o = json.loads(sys.argv[1].strip().splitlines()[-1])
assert o["bench"] == "failover", o
for k in ("failover_ms", "first_read_ms"):
    assert isinstance(o[k], (int, float)) and o[k] >= 0, (k, o[k])
assert o["lost"] == 0 and o["duplicates"] == 0, o
assert o["acked"] > 0 and o["failed_rounds"] == 0, o
PY
exit 0
