#!/usr/bin/env bash
# Catch-up by checkpoint across processes (issue 10; ctest label: sample).
#
#   ECHO_SERVER=build/sample/echo/echo_server sample/echo/checkpoint_cluster.sh
#
# Runs a 3-node echo cluster on 127.0.0.1 with checkpoints on
# (--checkpoint_interval=$INTERVAL, --log_keep=$KEEP). Proposes some values,
# kills node 3 with SIGKILL, proposes many more through nodes 1 and 2 until
# both have trimmed their logs past where node 3 stopped (their "!status"
# log_start), restarts nodes 1 and 2 (so that no frame queued for node 3
# survives in their transports: node 3 must ask for what it missed), then
# restarts node 3 on its data dir. Node 3 must catch up by loading a peer's
# checkpoint in its running process ("checkpoint loaded instance=I" with I
# beyond where it stopped, the process still alive) and end with the same
# state (executed instance, value count and chained hash) as the others; a
# value proposed through node 3 afterwards executes everywhere. Exits 0 only
# if every check holds. The nodes are always killed on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
server=${ECHO_SERVER:-$root/build/sample/echo/echo_server}
deadline_s=${DEADLINE_S:-120}
interval=${INTERVAL:-20}
keep=${KEEP:-10}
more=${MORE_VALUES:-150}
[ -x "$server" ] || { echo "checkpoint_cluster: no echo_server at '$server'" >&2; exit 2; }

. "$root/sample/cluster_lib.sh"
cluster_init ckpt
ready_seen=()
nodes="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
echo "checkpoint_cluster: nodes $nodes, data under $tmp"
now() { date +%s; }
end=$(( $(now) + deadline_s ))
count() { grep -c -- "$1" "$2" 2>/dev/null || true; }

# start I [extra flags]: starts node I (1-based), stdout appended to out<I>.
start() {
  local i=$1 fd
  shift
  [ -p "$tmp/in$i" ] || mkfifo "$tmp/in$i"
  "$server" --node="127.0.0.1:${ports[$((i - 1))]}" --nodes="$nodes" --data_dir="$tmp/data$i" \
    --checkpoint_interval="$interval" --log_keep="$keep" "$@" \
    <"$tmp/in$i" >>"$tmp/out$i" 2>>"$tmp/err$i" &
  pids[$((i - 1))]=$!
  exec {fd}>"$tmp/in$i"
  fds[$((i - 1))]=$fd
  until [ "$(count '^ready ' "$tmp/out$i")" -ge "${ready_seen[$i]:-1}" ]; do
    kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "node $i exited before it was ready"
    [ "$(now)" -lt "$end" ] || fail "node $i not ready within ${deadline_s}s"
    sleep 0.1
  done
  ready_seen[$i]=$(( ${ready_seen[$i]:-1} + 1 ))
}

# stop I SIGNAL: stops node I and closes its stdin.
stop() {
  local i=$1 sig=$2 fd=${fds[$(($1 - 1))]}
  kill "-$sig" "${pids[$((i - 1))]}"
  wait "${pids[$((i - 1))]}" 2>/dev/null || true
  exec {fd}>&-
  fds[$((i - 1))]=""
}

# status I: node I's answer to "!status" (a fresh one), as "k=v k=v ...".
status_of() {
  local i=$1 before
  before=$(count '^status ' "$tmp/out$i")
  echo '!status' >&"${fds[$((i - 1))]}"
  until [ "$(count '^status ' "$tmp/out$i")" -gt "$before" ]; do
    kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "node $i exited"
    [ "$(now)" -lt "$end" ] || fail "node $i did not answer !status"
    sleep 0.05
  done
  grep '^status ' "$tmp/out$i" | tail -n 1 | sed 's/^status //'
}
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# propose_through I N TAG: N values through node I, waiting for each answer.
propose_through() {
  local i=$1 n=$2 tag=$3 k before
  before=$(count '^proposed ' "$tmp/out$i")
  for k in $(seq "$n"); do echo "$tag-$k" >&"${fds[$((i - 1))]}"; done
  until [ "$(count '^proposed ' "$tmp/out$i")" -ge $((before + n)) ]; do
    if grep -q '^error ' "$tmp/out$i"; then fail "node $i: $(grep -m1 '^error ' "$tmp/out$i")"; fi
    kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "node $i exited"
    [ "$(now)" -lt "$end" ] || fail "node $i: its $tag values not chosen within ${deadline_s}s"
    sleep 0.1
  done
}

for i in 1 2 3; do start "$i" --create_if_missing; done
propose_through 1 5 a
until [ "$(field "$(status_of 3)" executed)" -ge 5 ]; do
  [ "$(now)" -lt "$end" ] || fail "node 3 did not execute the first values"
  sleep 0.1
done
stop 3 KILL
behind=$(field "$(status_of 1)" executed)  # node 3 had executed at most this much
echo "checkpoint_cluster: killed node 3 (-9) at or below instance $behind"

propose_through 1 "$more" b
propose_through 2 "$more" c
for i in 1 2; do
  until [ "$(field "$(status_of $i)" log_start)" -gt "$behind" ]; do
    [ "$(now)" -lt "$end" ] || fail "node $i never trimmed its log past $behind: $(status_of $i)"
    propose_through 1 "$interval" d
  done
  echo "checkpoint_cluster: node $i: $(status_of $i)"
done
# Restart nodes 1 and 2 one at a time (graceful), so that none still holds
# frames queued for node 3.
for i in 1 2; do
  stop "$i" TERM
  start "$i"
done

start 3
until [ "$(count '^checkpoint loaded ' "$tmp/out3")" -ge 1 ]; do
  kill -0 "${pids[2]}" 2>/dev/null || fail "node 3 exited instead of loading a checkpoint"
  [ "$(now)" -lt "$end" ] || fail "node 3 loaded no checkpoint within ${deadline_s}s"
  sleep 0.1
done
loaded=$(grep '^checkpoint loaded ' "$tmp/out3" | tail -n 1)
at=$(sed 's/.* instance=\([0-9]*\).*/\1/' <<<"$loaded")
[ "$at" -gt "$behind" ] || fail "node 3 loaded checkpoint $at, not one past $behind: $loaded"
echo "checkpoint_cluster: node 3 $loaded (process ${pids[2]} still running)"

# Same state everywhere: wait until node 3 reached node 1's executed point.
s1=$(status_of 1)
until [ "$(field "$(status_of 3)" executed)" -ge "$(field "$s1" executed)" ]; do
  kill -0 "${pids[2]}" 2>/dev/null || fail "node 3 exited"
  [ "$(now)" -lt "$end" ] || fail "node 3 did not catch up: $(status_of 3) vs $s1"
  sleep 0.1
done
propose_through 3 1 after
s1=$(status_of 1)
for i in 2 3; do
  until [ "$(field "$(status_of $i)" executed)" -ge "$(field "$s1" executed)" ]; do
    [ "$(now)" -lt "$end" ] || fail "node $i did not execute node 3's value"
    sleep 0.1
  done
done
s1=$(status_of 1); s2=$(status_of 2); s3=$(status_of 3)
echo "checkpoint_cluster: node 1: $s1"
echo "checkpoint_cluster: node 2: $s2"
echo "checkpoint_cluster: node 3: $s3"
for f in executed count hash; do
  [ "$(field "$s1" $f)" = "$(field "$s2" $f)" ] || fail "nodes 1 and 2 differ in $f"
  [ "$(field "$s1" $f)" = "$(field "$s3" $f)" ] || fail "nodes 1 and 3 differ in $f"
done
[ "$(field "$s3" loaded)" -ge 1 ] || fail "node 3 reports no checkpoint loaded: $s3"
kill -0 "${pids[2]}" 2>/dev/null || fail "node 3 exited"
echo "checkpoint_cluster: PASS: node 3 caught up by checkpoint $at in-process and has the same state"
status=0
