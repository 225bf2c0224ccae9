#!/usr/bin/env bash
# Runs a 3-node echo cluster on 127.0.0.1 (master election on) and checks
# that every replica executes the same values in the same order, across a
# kill -9 and restart, and across the replacement of a dead node by a new,
# empty one (ctest label: sample).
#
#   ECHO_SERVER=build/sample/echo/echo_server sample/echo/run_cluster.sh
#
# Builds nothing: $ECHO_SERVER (default build/sample/echo/echo_server under
# the repository root) must exist. Nodes are "<id>@127.0.0.1:<port>" with
# ids 1..4, on free ports, with fresh data dirs in a temp dir.
#  1. Starts nodes 1..3 (--create_if_missing), waits until they agree on a
#     master, feeds values through FIFOs into the stdin of node 1 and node 2
#     (concurrently), waits (with a deadline) until every replica executed
#     all of them and checks the three sequences are identical.
#  2. Kills node 3 with SIGKILL (it hands the mastership over first if it
#     has it, so that no value of this part waits for a dead master),
#     proposes more values without it, restarts it on its data dir and checks
#     that it replays and catches up to the same sequence.
#  3. The replacement, while values keep being proposed through nodes 1 and
#     2 (one every 0.1 s each): kill -9 node 3 for good (a follower; the
#     master with KILL_MASTER=1, ctest sample_echo_replace_master),
#     start node 4 with an empty data dir and --join (through nodes 1 and
#     2), "!add" it through node 1 (a follower, then a voter once caught up),
#     "!remove 3" through node 1. Checks: both calls returned OK; the
#     membership is then voters 1,2,4 on nodes 1 and 4 (node 4 a voter);
#     values are still chosen after the removal (so with node 4 in the
#     majority) and through node 4; no proposal failed definitely (a
#     Timeout, whose outcome is unknown, is counted and allowed); node 4
#     executed every value, in the same order as nodes 1 and 2, and node 3's
#     last sequence is a prefix of it; the nodes logged the membership
#     changes (one info line per change).
# Exits 0 only if every check holds. The nodes are always killed on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
server=${ECHO_SERVER:-$root/build/sample/echo/echo_server}
deadline_s=${DEADLINE_S:-120}
values_per_node=${VALUES_PER_NODE:-5}
# KILL_MASTER=1: part 3 makes node 3 the master before it kills it (the
# proposals in flight to it then time out: outcome unknown, counted).
kill_master=${KILL_MASTER:-0}
[ -x "$server" ] || { echo "run_cluster: no echo_server at '$server' (build it, or set ECHO_SERVER)" >&2; exit 2; }

. "$root/sample/cluster_lib.sh"
cluster_init echo 4
# Node I has id I: "I@127.0.0.1:port" (NodeInfo's explicit id).
addr() { echo "$1@127.0.0.1:${ports[$(($1 - 1))]}"; }
nodes="$(addr 1),$(addr 2),$(addr 3)"
echo "run_cluster: nodes $nodes, spare $(addr 4), data under $tmp"
now() { date +%s; }
end=$(( $(now) + deadline_s ))
count() { grep -c -- "$1" "$2" 2>/dev/null || true; }
alive() { [ -n "${pids[$(($1 - 1))]:-}" ] && kill -0 "${pids[$(($1 - 1))]}" 2>/dev/null; }
in_time() { [ "$(now)" -lt "$end" ]; }

# start I FLAGS...: starts node I with its stdin on the FIFO in<I> (the write
# end held open in fds[I-1]), a fresh stdout file out<I> (a restarted node
# replays its whole log, so it holds the full sequence again), stderr
# appended to err<I>; waits until it is ready.
start() {
  local i=$1 fd
  shift
  [ -p "$tmp/in$i" ] || mkfifo "$tmp/in$i"
  "$server" --node="$(addr "$i")" --data_dir="$tmp/data$i" --master_election --log_level=info \
    "$@" <"$tmp/in$i" >"$tmp/out$i" 2>>"$tmp/err$i" &
  pids[$((i - 1))]=$!
  exec {fd}>"$tmp/in$i"
  fds[$((i - 1))]=$fd
  until [ "$(count '^ready ' "$tmp/out$i")" -ge 1 ]; do
    alive "$i" || fail "node $i exited before it was ready"
    in_time || fail "node $i not ready within ${deadline_s}s"
    sleep 0.05
  done
}

# kill9 I: kill -9 node I and close its stdin.
kill9() {
  local fd=${fds[$(($1 - 1))]}
  { kill -KILL "${pids[$(($1 - 1))]}"; wait "${pids[$(($1 - 1))]}"; } 2>/dev/null || true
  pids[$(($1 - 1))]=""
  exec {fd}>&-
}

# ask I LINE PREFIX: writes LINE to node I's stdin and prints the first line
# beginning with PREFIX that node I printed after it.
ask() {
  local i=$1 prefix=$3 before
  before=$(count "^$prefix" "$tmp/out$i")
  echo "$2" >&"${fds[$((i - 1))]}"
  until [ "$(count "^$prefix" "$tmp/out$i")" -gt "$before" ]; do
    alive "$i" || fail "node $i exited"
    in_time || fail "node $i: no answer to '$2' within ${deadline_s}s"
    sleep 0.05
  done
  grep -- "^$prefix" "$tmp/out$i" | sed -n "$((before + 1))p"
}

# wait_master NOT NODES...: waits until NODES all name the same master,
# other than node NOT (0: any); prints its id.
wait_master() {
  local not=$1 i m first
  shift
  while true; do
    first=""
    for i in "$@"; do
      m=$(ask "$i" '!master' 'master ' | sed 's/^master node=\([0-9]*\) .*/\1/')
      [ "$m" != 0 ] && [ "$m" != "$not" ] || { first=""; break; }
      [ -z "$first" ] && first=$m
      [ "$m" = "$first" ] || { first=""; break; }
    done
    [ -n "$first" ] && { echo "$first"; return 0; }
    in_time || fail "nodes $* did not agree on a master (other than $not) within ${deadline_s}s"
    sleep 0.1
  done
}

# wait_proposed NODE N: node NODE answered N of its proposals, none failed.
wait_proposed() {
  local i=$1 n=$2
  until [ "$(count '^proposed ' "$tmp/out$i")" -ge "$n" ]; do
    if grep -q '^error ' "$tmp/out$i"; then fail "node $i: $(grep -m1 '^error ' "$tmp/out$i")"; fi
    alive "$i" || fail "node $i exited"
    in_time || fail "node $i: fewer than $n of its values chosen within ${deadline_s}s"
    sleep 0.1
  done
}

# seq_of I: node I's executed sequence ("instance=<i> value=<v>" lines) into seq<I>.
seq_of() { grep '^executed ' "$tmp/out$1" | sed 's/^executed //' >"$tmp/seq$1" || true; }

# wait_executed N NODES...: every node of NODES executed N of the values
# of parts 1 and 2; then $tmp/seq<i> holds each one's executed sequence.
wait_executed() {
  local n=$1 i
  shift
  for i in "$@"; do
    until [ "$(grep '^executed ' "$tmp/out$i" | grep -c -E ' value=n[12]-[vw][0-9]+$' || true)" -ge "$n" ]; do
      alive "$i" || fail "node $i exited"
      in_time || fail "node $i executed fewer than $n values within ${deadline_s}s"
      sleep 0.1
    done
    seq_of "$i"
  done
}

# check_sequences A B...: the nodes executed the same sequence, holding
# every value of ${expected[@]} exactly once, at strictly increasing instances.
check_sequences() {
  local a=$1 b v
  shift
  for b in "$@"; do
    cmp -s "$tmp/seq$a" "$tmp/seq$b" || fail "replicas $a and $b executed different sequences"
  done
  for v in "${expected[@]}"; do
    [ "$(grep -c -- " value=$v\$" "$tmp/seq$a")" = 1 ] || fail "value $v was not executed exactly once"
  done
  sed 's/^instance=\([0-9]*\) .*/\1/' "$tmp/seq$a" | sort -n -c -u 2>/dev/null ||
    fail "instances are not strictly increasing"
}

# 1. Three replicas, one master, the same sequence.
for i in 1 2 3; do start "$i" --nodes="$nodes" --create_if_missing; done
m=$(wait_master 0 1 2 3)
echo "run_cluster: nodes 1, 2, 3 agree on master node $m"
expected=()
for k in $(seq "$values_per_node"); do
  echo "n1-v$k" >&"${fds[0]}"
  echo "n2-v$k" >&"${fds[1]}"
  expected+=("n1-v$k" "n2-v$k")
done
wait_proposed 1 "$values_per_node"
wait_proposed 2 "$values_per_node"
wait_executed "${#expected[@]}" 1 2 3
for i in 1 2 3; do
  echo "replica $i executed:"
  sed 's/^/  /' "$tmp/seq$i"
done
check_sequences 1 2 3

# 2. Crash node 3 (kill -9), go on without it, then restart it on its data
# dir: it must replay its own log and learn what it missed from the others,
# with no manual repair. A master hands over first (part 3 kills a master).
m=$(wait_master 0 1 2 3)
if [ "$m" = 3 ]; then
  r=$(ask 3 '!stepdown' 'admin op=stepdown ')
  [[ "$r" == *" status=OK" ]] || fail "node 3: $r"
  m=$(wait_master 3 1 2)
  echo "run_cluster: node 3 was the master: it stepped down, node $m took over"
fi
echo "run_cluster: kill -9 node 3, propose more through node 1, restart node 3"
kill9 3
for k in $(seq "$values_per_node"); do
  echo "n1-w$k" >&"${fds[0]}"
  expected+=("n1-w$k")
done
wait_proposed 1 $((2 * values_per_node))
# No --create_if_missing: the restart must reopen node 3's existing log (it
# would refuse to start if the data dir were missing or empty).
start 3 --nodes="$nodes"
wait_executed "${#expected[@]}" 1 2 3
echo "replica 3 after its restart executed:"
sed 's/^/  /' "$tmp/seq3"
check_sequences 1 2 3
echo "run_cluster: 3 replicas executed the same $(wc -l <"$tmp/seq1") values in the same order," \
  "node 3 across a kill -9 and restart"

# 3. Replace node 3 by a new, empty node 4 while values keep coming: nodes 1
# and 2 each get a value every 0.1 s from a feeder in the background.
echo "run_cluster: replacement: kill -9 node 3 for good, start node 4 (empty, --join), !add 4," \
  "!remove 3, proposals through nodes 1 and 2 throughout"
feed() {
  local k=0
  while [ ! -e "$tmp/feed_stop" ]; do
    k=$((k + 1))
    echo "n1-x$k" >&"${fds[0]}"
    echo "n2-x$k" >&"${fds[1]}"
    echo "$k" >"$tmp/fed.new" && mv "$tmp/fed.new" "$tmp/fed"
    sleep 0.1
  done
}
feed &
pids[4]=$!
fed_now() { cat "$tmp/fed" 2>/dev/null || echo 0; }
# wait_fed N: the feeder wrote N more values than when called.
wait_fed() {
  local target=$(( $(fed_now) + $1 ))
  until [ "$(fed_now)" -ge "$target" ]; do
    in_time || fail "the feeder stalled"
    sleep 0.05
  done
}
wait_fed 5
if [ "$kill_master" = 1 ]; then
  # The masters step down in turn until node 3 has the mastership.
  until m=$(wait_master 0 1 2 3) && [ "$m" = 3 ]; do
    ask "$m" '!stepdown' 'admin op=stepdown ' >/dev/null
    sleep 0.3
  done
  echo "run_cluster: node 3 is the master (KILL_MASTER=1)"
fi
kill9 3
seq_of 3
echo "run_cluster: node 3 killed (kill -9) for good; its data dir is never used again"
start 4 --join="$(addr 1),$(addr 2)" --create_if_missing
r=$(ask 4 '!members' 'admin op=members ')
[[ "$r" == *" status=OK" ]] && r=$(grep '^members ' "$tmp/out4" | tail -n 1)
echo "run_cluster: node 4 started empty with --join: $r"
[[ "$r" == *" role=joining "* ]] || fail "node 4 is not joining before it is added: $r"

# admin I LINE OP: runs the admin LINE on node I until it is not refused
# with Busy (no master known right after node 3 died, or another change
# still in progress); prints its final "admin" line.
admin() {
  local r
  while true; do
    r=$(ask "$1" "$2" "admin op=$3 ")
    [[ "$r" == *" status=Busy: "* ]] || { echo "$r"; return 0; }
    in_time || { echo "$r"; return 0; }
    sleep 0.5
  done
}
# wait_members I PATTERN: until node I's "!members" answer matches PATTERN
# (a node learns a change once it caught up with it); prints it.
wait_members() {
  local r
  until r=$(ask "$1" '!members' 'members ') && [[ "$r" == $2 ]]; do
    in_time || fail "node $1: membership '$r' does not match '$2'"
    sleep 0.1
  done
  echo "run_cluster: node $1: $r"
}
r=$(admin 1 "!add $(addr 4)" add)
echo "run_cluster: node 1: !add $(addr 4) -> $r"
[[ "$r" == *" status=OK" ]] || fail "node 1: !add $(addr 4): $r"
wait_members 4 "* role=voter *"
r=$(admin 1 "!remove 3" remove)
echo "run_cluster: node 1: !remove 3 -> $r"
[[ "$r" == *" status=OK" ]] || fail "node 1: !remove 3: $r"
want="voters=$(addr 1),$(addr 2),$(addr 4) followers=-"
for i in 1 4; do wait_members "$i" "* $want"; done
# Values are chosen with node 3 gone from the membership, and through node 4.
wait_fed 10
r=$(ask 4 n4-after 'proposed \|error ')
[[ "$r" == "proposed "* ]] || fail "node 4: a value proposed through it: $r"
touch "$tmp/feed_stop"
wait "${pids[4]}" || true
pids[4]=""
fed=$(fed_now)
echo "run_cluster: the feeder proposed $fed values through node 1 and $fed through node 2"

# Every fed value answered; none failed definitely (never proposed: NotMaster,
# InvalidArgument, TooLarge, Busy, a Timeout "never proposed").
for i in 1 2; do
  until [ "$(grep -c -E "^(proposed|error) .*value=n$i-x[0-9]+( |\$)" "$tmp/out$i" || true)" -ge "$fed" ]; do
    alive "$i" || fail "node $i exited"
    in_time || fail "node $i did not answer all $fed of its values within ${deadline_s}s"
    sleep 0.1
  done
done
grep -h '^error value=n[12]-x' "$tmp/out1" "$tmp/out2" >"$tmp/errors" || true
definite=$(grep -c -E 'status=(NotMaster|InvalidArgument|TooLarge|Busy)|never proposed' "$tmp/errors" || true)
indeterminate=$(( $(wc -l <"$tmp/errors") - definite ))
ok_values=$(cat "$tmp/out1" "$tmp/out2" | grep -c -E '^proposed .*value=n[12]-x' || true)
echo "run_cluster: of $((2 * fed)) values: $ok_values chosen, $indeterminate of unknown outcome" \
  "(Timeout), $definite definite failures"
[ -s "$tmp/errors" ] && sed 's/^/  /' "$tmp/errors"
[ "$definite" = 0 ] || fail "$definite proposals failed definitely"

# Node 4 ends with every value, in the same order as nodes 1 and 2.
until seq_of 1 && seq_of 2 && seq_of 4 && cmp -s "$tmp/seq1" "$tmp/seq2" &&
  cmp -s "$tmp/seq1" "$tmp/seq4"; do
  for i in 1 2 4; do alive "$i" || fail "node $i exited"; done
  in_time || fail "nodes 1, 2 and 4 did not end with the same sequence within ${deadline_s}s" \
    "($(wc -l <"$tmp/seq1"), $(wc -l <"$tmp/seq2"), $(wc -l <"$tmp/seq4") values)"
  sleep 0.2
done
mapfile -t expected < <(grep -h '^proposed ' "$tmp/out1" "$tmp/out2" "$tmp/out4" | sed 's/.* value=//')
check_sequences 1 2 4
# Values of unknown outcome: chosen at most once.
for v in $(sed 's/^error value=\([^ ]*\) .*/\1/' "$tmp/errors"); do
  [ "$(grep -c -- " value=$v\$" "$tmp/seq1")" -le 1 ] || fail "value $v was executed twice"
done
head -n "$(wc -l <"$tmp/seq3")" "$tmp/seq1" | cmp -s - "$tmp/seq3" ||
  fail "node 3's last sequence is not a prefix of the others'"
echo "run_cluster: node 4 executed all $(wc -l <"$tmp/seq4") values (${#expected[@]} acknowledged)" \
  "in the same order as nodes 1 and 2; node 3 had executed the first $(wc -l <"$tmp/seq3")"

# One info line per membership change: v1 (node 4 a follower), v2 (a voter),
# v3 (node 3 removed), on every node that saw them.
for i in 1 2 4; do
  grep -E 'membership v[0-9]+' "$tmp/err$i" >"$tmp/mlog$i" || true
  echo "run_cluster: node $i logged:"
  sed 's/^/  /' "$tmp/mlog$i"
  grep -q -E "membership v[0-9]+: voters 1,2,4 followers -" "$tmp/mlog$i" ||
    fail "node $i logged no membership line with voters 1,2,4"
done
echo "run_cluster: PASS: 3 replicas executed the same values in the same order, node 3 across" \
  "a kill -9 and restart; node 3 replaced by node 4 (${fed} + ${fed} values proposed" \
  "throughout, $ok_values chosen, $indeterminate of unknown outcome, 0 definite failures)"
status=0
