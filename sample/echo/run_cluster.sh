#!/usr/bin/env bash
# Runs a 3-node echo cluster on 127.0.0.1 and checks that every replica
# executes the same values in the same order (ctest label: sample).
#
#   ECHO_SERVER=build/sample/echo/echo_server sample/echo/run_cluster.sh
#
# Builds nothing: $ECHO_SERVER (default build/sample/echo/echo_server under
# the repository root) must exist. Starts the nodes in the background on free
# ports with fresh data dirs in a temp dir (--create_if_missing), feeds values through FIFOs into
# the stdin of node 1 and node 2 (concurrently), waits (with a deadline)
# until every replica executed all of them, prints each replica's executed
# sequence and checks the three sequences are identical. Then it kills node 3
# with SIGKILL, proposes more values without it, restarts it on its data dir
# and checks that it replays and catches up to the same sequence. Exits 0
# only if every check holds. The nodes are always killed on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
server=${ECHO_SERVER:-$root/build/sample/echo/echo_server}
deadline_s=${DEADLINE_S:-60}
values_per_node=${VALUES_PER_NODE:-5}
[ -x "$server" ] || { echo "run_cluster: no echo_server at '$server' (build it, or set ECHO_SERVER)" >&2; exit 2; }

. "$root/sample/cluster_lib.sh"
cluster_init echo
nodes="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
echo "run_cluster: nodes $nodes, data under $tmp"

for i in 1 2 3; do
  mkfifo "$tmp/in$i"
  # First start: the only time a node may create its log.
  "$server" --node="127.0.0.1:${ports[$((i - 1))]}" --nodes="$nodes" --data_dir="$tmp/data$i" \
    --create_if_missing <"$tmp/in$i" >"$tmp/out$i" 2>"$tmp/err$i" &
  pids+=($!)
  # Hold the write end open so the node's stdin stays open between values.
  exec {fd}>"$tmp/in$i"
  fds+=("$fd")
done

now() { date +%s; }
end=$(( $(now) + deadline_s ))
count() { grep -c -- "$1" "$2" 2>/dev/null || true; }

# wait_proposed NODE N: node NODE answered N of its proposals, none failed.
wait_proposed() {
  local i=$1 n=$2
  until [ "$(count '^proposed ' "$tmp/out$i")" -ge "$n" ]; do
    if grep -q '^error ' "$tmp/out$i"; then fail "node $i: $(grep -m1 '^error ' "$tmp/out$i")"; fi
    kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "node $i exited"
    [ "$(now)" -lt "$end" ] || fail "node $i: fewer than $n of its values chosen within ${deadline_s}s"
    sleep 0.1
  done
}

# wait_executed N: every replica executed N of the test's values; then
# $tmp/seq<i> holds each replica's executed sequence.
wait_executed() {
  local n=$1 i
  for i in 1 2 3; do
    until [ "$(grep '^executed ' "$tmp/out$i" | grep -c -E ' value=n[12]-[vw][0-9]+$' || true)" -ge "$n" ]; do
      kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "node $i exited"
      [ "$(now)" -lt "$end" ] || fail "node $i executed fewer than $n values within ${deadline_s}s"
      sleep 0.1
    done
    grep '^executed ' "$tmp/out$i" | sed 's/^executed //' >"$tmp/seq$i"
  done
}

# check_sequences: the three replicas executed the same sequence, holding
# every expected value exactly once, at strictly increasing instances.
check_sequences() {
  local v
  cmp -s "$tmp/seq1" "$tmp/seq2" || fail "replicas 1 and 2 executed different sequences"
  cmp -s "$tmp/seq1" "$tmp/seq3" || fail "replicas 1 and 3 executed different sequences"
  for v in "${expected[@]}"; do
    [ "$(grep -c -- " value=$v\$" "$tmp/seq1")" = 1 ] || fail "value $v was not executed exactly once"
  done
  sed 's/^instance=\([0-9]*\) .*/\1/' "$tmp/seq1" | sort -n -c -u 2>/dev/null ||
    fail "instances are not strictly increasing"
}

for i in 1 2 3; do
  until [ "$(count '^ready ' "$tmp/out$i")" -ge 1 ]; do
    kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "node $i exited before it was ready"
    [ "$(now)" -lt "$end" ] || fail "node $i not ready within ${deadline_s}s"
    sleep 0.1
  done
done

expected=()
for k in $(seq "$values_per_node"); do
  echo "n1-v$k" >&"${fds[0]}"
  echo "n2-v$k" >&"${fds[1]}"
  expected+=("n1-v$k" "n2-v$k")
done
total=${#expected[@]}

# Every proposer hears back for each of its values, and every replica
# executes all of them in one order.
wait_proposed 1 "$values_per_node"
wait_proposed 2 "$values_per_node"
wait_executed "$total"
for i in 1 2 3; do
  echo "replica $i executed:"
  sed 's/^/  /' "$tmp/seq$i"
done
check_sequences

# Crash node 3 (kill -9), go on without it, then restart it on its data dir:
# it must replay its own log and learn what it missed from the others, with
# no manual repair.
echo "run_cluster: kill -9 node 3, propose more through node 1, restart node 3"
kill -KILL "${pids[2]}"
wait "${pids[2]}" 2>/dev/null || true
fd=${fds[2]}
exec {fd}>&-
for k in $(seq "$values_per_node"); do
  echo "n1-w$k" >&"${fds[0]}"
  expected+=("n1-w$k")
done
total=${#expected[@]}
wait_proposed 1 $((2 * values_per_node))
# No --create_if_missing: the restart must reopen node 3's existing log (it
# would refuse to start if the data dir were missing or empty).
"$server" --node="127.0.0.1:${ports[2]}" --nodes="$nodes" --data_dir="$tmp/data3" \
  <"$tmp/in3" >"$tmp/out3" 2>"$tmp/err3" &
pids[2]=$!
exec {fd}>"$tmp/in3"
fds[2]=$fd
wait_executed "$total"
echo "replica 3 after its restart executed:"
sed 's/^/  /' "$tmp/seq3"
check_sequences
echo "run_cluster: PASS: 3 replicas executed the same $(wc -l <"$tmp/seq1") values in the same order, node 3 across a kill -9 and restart"
status=0
