#!/usr/bin/env bash
# Replaces a dead chorus-kv replica by a new, empty one with redis-cli while
# writes go on (ctest sample_kv_replace_node, and sample_kv_change_member with
# REPLACE_WITH=change; label sample):
#
#   KV_SERVER=build/sample/kv/kv_server [CHORUS_ADMIN=build/tools/chorus_admin] \
#     sample/kv/replace_node.sh
#
# Builds nothing: $KV_SERVER and redis-cli must exist. Replicas are
# "<id>@127.0.0.1:<port>" with ids 1..4, on free ports, checkpoints on
# (every CKPT_INTERVAL instances, LOG_KEEP kept), info logging on. It
#  1. starts replicas 1..3 and waits for a master; a writer in the background
#     SETs key<k> = value<k> through nodes 1 and 2 in turn (one every 0.05 s)
#     and records each reply; 3 x CKPT_INTERVAL INCRs make the members
#     checkpoint and trim their logs;
#  2. kills node 3 with kill -9 for good, starts node 4 with an empty data dir
#     and --join (through nodes 1 and 2): CHORUS.MEMBERS on it says "joining";
#  3. CHORUS.ADDMEMBER 4@... through node 1 (a follower, a voter once it caught
#     up: by loading a checkpoint, which it must have done), then
#     CHORUS.REMOVEMEMBER 3 through node 1 (REPLACE_WITH=change: one
#     CHORUS.CHANGEMEMBER 3 4@... instead); +OK (TRYAGAIN, e.g. no master
#     right after node 3 died, is retried); CHORUS.MEMBERS on nodes 1 and 4
#     lists voters 1, 2, 4 and no follower; INFO of node 4: member_role:voter;
#  4. writes go on after the removal and through node 4; then the writer
#     stops. No write failed definitely (TRYAGAIN, or an error reply: the kv
#     server retries a refused proposal for --retry_ms first); a TIMEOUT
#     (outcome unknown) is counted and allowed;
#  5. every acknowledged key reads back its value on node 4 (a linearizable
#     GET: read index), and nodes 1, 2 and 4 hold the same data (DEBUG DIGEST);
#  6. each of nodes 1, 2, 4 logged the membership changes, one info line each;
#  7. with $CHORUS_ADMIN (and a kv_server built with prometheus-cpp: METRICS=1):
#     /status of node 4 and `chorus_admin live` show membership version 3 with
#     voters 1, 2, 4; after a SIGTERM of every replica (each exits 0),
#     `chorus_admin inspect` of node 4's data dir shows that membership from
#     its log, and of node 3's the membership it last knew (version 0).
# Exits 0 only if every check held; the replicas are always stopped on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
server=${KV_SERVER:-$root/build/sample/kv/kv_server}
admin_tool=${CHORUS_ADMIN:-}
metrics=${METRICS:-0}
deadline_s=${DEADLINE_S:-120}
ckpt_interval=${CKPT_INTERVAL:-50}
# addremove: CHORUS.ADDMEMBER 4, then CHORUS.REMOVEMEMBER 3 (versions 1..3);
# change: one CHORUS.CHANGEMEMBER 3 4 (node 4 a follower, then one change
# that makes it a voter and removes node 3: versions 1..2).
replace_with=${REPLACE_WITH:-addremove}
case "$replace_with" in addremove | change) ;; *) echo "replace_node: REPLACE_WITH=addremove|change" >&2; exit 2 ;; esac
log_keep=${LOG_KEEP:-10}
[ -x "$server" ] || { echo "replace_node: no kv_server at '$server' (build it, or set KV_SERVER)" >&2; exit 2; }
command -v redis-cli >/dev/null ||
  { echo "replace_node: no redis-cli (scripts/install_deps.sh installs redis-tools)" >&2; exit 2; }
[ "$metrics" = 0 ] || command -v curl >/dev/null || { echo "replace_node: METRICS=1 needs curl" >&2; exit 2; }

. "$root/sample/kv/kv_lib.sh"
cluster_init kv-replace 12
rports=("${ports[@]:4:4}")
mports=("${ports[@]:8:4}")
end=$(( $(date +%s) + deadline_s ))
addr() { echo "$1@127.0.0.1:${ports[$(($1 - 1))]}"; }
nodes="$(addr 1),$(addr 2),$(addr 3)"
echo "replace_node: replicas $nodes, spare $(addr 4), RESP ports ${rports[*]}, data under $tmp"
fail() { echo "replace_node: FAIL: $*" >&2; status=1; exit 1; }

# start I FLAGS...: starts replica I; waits until it serves RESP.
start() {
  local i=$1
  shift
  local extra=()
  [ "$metrics" = 1 ] && extra+=(--metrics_port="${mports[$((i - 1))]}")
  "$server" --node="$(addr "$i")" --data_dir="$tmp/data$i" --port="${rports[$((i - 1))]}" \
    --checkpoint_interval="$ckpt_interval" --log_keep="$log_keep" --log_level=info \
    --retry_ms=10000 "${extra[@]}" "$@" >>"$tmp/out$i" 2>>"$tmp/err$i" &
  pids[$((i - 1))]=$!
  until grep -qs '^ready ' "$tmp/out$i"; do
    alive "$i" || fail "node $i exited"
    in_time || fail "node $i is not ready within ${deadline_s}s"
    sleep 0.05
  done
}

# wait_master NODES...: until NODES name the same master (by id), one of them.
wait_master() {
  local i m first
  while true; do
    first=""
    for i in "$@"; do
      m=$(field "$i" master_id)
      [ -n "$m" ] && [ "$m" != 0 ] || { first=""; break; }
      [ -z "$first" ] && first=$m
      [ "$m" = "$first" ] || { first=""; break; }
    done
    if [ -n "$first" ] && [[ " $* " == *" $first "* ]]; then echo "$first"; return 0; fi
    in_time || fail "nodes $* did not agree on a master within ${deadline_s}s"
    sleep 0.1
  done
}

# change NODE COMMAND ARGS...: a membership command through NODE, retried
# while it answers TRYAGAIN; prints the final answer.
change() {
  local i=$1 got
  shift
  while true; do
    got=$(cli "$i" "$@")
    [[ "$got" == TRYAGAIN* ]] && in_time || { echo "$got"; return 0; }
    sleep 0.5
  done
}

# members NODE: CHORUS.MEMBERS of NODE on one line.
members() { cli "$1" CHORUS.MEMBERS | tr '\n' ' ' | sed 's/ $//'; }

writer() {
  local k=0 node
  while [ ! -e "$tmp/writer_stop" ]; do
    k=$((k + 1))
    node=$(( k % 2 + 1 ))
    echo "$k $node $(cli "$node" SET "key$k" "value$k" | tr '\n' ' ')" >>"$tmp/writes"
    sleep 0.05
  done
}
writes() { if [ -f "$tmp/writes" ]; then wc -l <"$tmp/writes"; else echo 0; fi; }
wait_writes() {
  local target=$(( $(writes) + $1 ))
  until [ "$(writes)" -ge "$target" ]; do
    in_time || fail "the writer stalled at $(writes) writes"
    sleep 0.05
  done
}

# 1. Three replicas and a writer.
for i in 1 2 3; do start "$i" --nodes="$nodes" --create_if_missing; done
m=$(wait_master 1 2 3)
echo "replace_node: replicas 1, 2, 3 agree on master node $m"
writer &
pids[4]=$!
wait_writes 20
# Enough instances for the members to checkpoint and trim their logs: the
# new node must then catch up by loading a checkpoint.
r=$(cli 1 -r "$((3 * ckpt_interval))" INCR filler | tail -n 1)
[ "$r" = "$((3 * ckpt_interval))" ] || fail "node 1: INCR filler: $r"
until [ "$(field 1 log_start)" -gt 0 ] && [ "$(field 2 log_start)" -gt 0 ]; do
  in_time || fail "nodes 1 and 2 did not trim their logs (log_start $(field 1 log_start), $(field 2 log_start))"
  sleep 0.1
done
echo "replace_node: nodes 1 and 2 trimmed their logs (log_start $(field 1 log_start), $(field 2 log_start))"

# 2. Node 3 dies for good; node 4 starts empty and joins.
{ kill -KILL "${pids[2]}"; wait "${pids[2]}"; } 2>/dev/null || true
pids[2]=""
echo "replace_node: node 3 killed (kill -9) for good after $(writes) writes"
start 4 --join="$(addr 1),$(addr 2)" --create_if_missing
r=$(members 4)
echo "replace_node: node 4 started empty with --join: CHORUS.MEMBERS -> $r"

# 3. Add node 4, remove node 3 (or both in one CHORUS.CHANGEMEMBER).
if [ "$replace_with" = change ]; then
  r=$(change 1 CHORUS.CHANGEMEMBER 3 "$(addr 4)")
  echo "replace_node: node 1: CHORUS.CHANGEMEMBER 3 $(addr 4) -> $r"
  [ "$r" = OK ] || fail "CHORUS.CHANGEMEMBER 3 $(addr 4): $r"
else
  r=$(change 1 CHORUS.ADDMEMBER "$(addr 4)")
  echo "replace_node: node 1: CHORUS.ADDMEMBER $(addr 4) -> $r"
  [ "$r" = OK ] || fail "CHORUS.ADDMEMBER $(addr 4): $r"
  r=$(change 1 CHORUS.REMOVEMEMBER 3)
  echo "replace_node: node 1: CHORUS.REMOVEMEMBER 3 -> $r"
  [ "$r" = OK ] || fail "CHORUS.REMOVEMEMBER 3: $r"
fi
# Node 1 knows the new membership at once; node 4 once it caught up with it.
for i in 1 4; do
  until r=$(members "$i") && [[ "$r" == *"role voter voter $(addr 1) voter $(addr 2) voter $(addr 4)" ]]; do
    in_time || fail "node $i: not voters 1, 2, 4 and no follower: $r"
    sleep 0.1
  done
  echo "replace_node: node $i: CHORUS.MEMBERS -> $r"
done
[ "$(field 4 member_role)" = voter ] || fail "node 4: INFO member_role is $(field 4 member_role)"
[ "$(field 4 kv_checkpoints_loaded)" -ge 1 ] ||
  fail "node 4 caught up past trimmed logs without loading a checkpoint"
echo "replace_node: node 4: member_role:voter membership_version:$(field 4 membership_version)" \
  "kv_checkpoints_loaded:$(field 4 kv_checkpoints_loaded) executed_instance:$(field 4 executed_instance)"

# 4. Writes go on without node 3, and through node 4.
wait_writes 20
r=$(cli 4 SET through-node-4 yes)
[ "$r" = OK ] || fail "node 4: SET through-node-4: $r"
touch "$tmp/writer_stop"
wait "${pids[4]}" || true
pids[4]=""
total=$(writes)
acked=$(grep -c ' OK $' "$tmp/writes" || true)
unknown=$(grep -c ' TIMEOUT' "$tmp/writes" || true)
definite=$(( total - acked - unknown ))
echo "replace_node: $total writes through nodes 1 and 2: $acked acknowledged, $unknown of unknown" \
  "outcome (TIMEOUT), $definite failed definitely"
grep -v -E ' (OK|TIMEOUT.*) $' "$tmp/writes" | head -n 5 | sed 's/^/  /' || true
[ "$definite" = 0 ] || fail "$definite writes failed definitely"

# 5. Every acknowledged key on node 4; the same data on 1, 2, 4.
missing=0
while read -r k _ reply; do
  [ "$reply" = OK ] || continue
  [ "$(cli 4 GET "key$k")" = "value$k" ] || { missing=$((missing + 1)); echo "  key$k: $(cli 4 GET "key$k")"; }
done <"$tmp/writes"
[ "$missing" = 0 ] || fail "$missing acknowledged keys do not read back on node 4"
[ "$(cli 4 GET through-node-4)" = yes ] || fail "node 4: GET through-node-4"
echo "replace_node: node 4 reads back all $acked acknowledged keys (linearizable GETs)"
until [ "$(cli 1 DEBUG DIGEST)" = "$(cli 4 DEBUG DIGEST)" ] && [ "$(cli 2 DEBUG DIGEST)" = "$(cli 4 DEBUG DIGEST)" ]; do
  in_time || fail "nodes 1, 2, 4 hold different data: $(cli 1 DEBUG DIGEST) $(cli 2 DEBUG DIGEST) $(cli 4 DEBUG DIGEST)"
  sleep 0.2
done
echo "replace_node: nodes 1, 2 and 4 hold the same data (DEBUG DIGEST $(cli 4 DEBUG DIGEST))"

# 6. The membership-change log lines.
for i in 1 2 4; do
  grep -E 'membership v[0-9]+' "$tmp/err$i" >"$tmp/mlog$i" || true
  echo "replace_node: node $i logged:"
  sed 's/^/  /' "$tmp/mlog$i"
  grep -q -E 'membership v[0-9]+: voters 1,2,4 followers -' "$tmp/mlog$i" ||
    fail "node $i logged no membership line with voters 1,2,4"
done

# 7. The membership in /status and chorus_admin.
version=$(field 4 membership_version)
want_version=3
[ "$replace_with" = change ] && want_version=2
[ "$version" = "$want_version" ] || fail "node 4: membership_version $version, expected $want_version"
if [ "$metrics" = 1 ]; then
  st=$(curl -sf --max-time 10 "http://127.0.0.1:${mports[3]}/status") || fail "GET /status on node 4"
  echo "replace_node: node 4 /status: $st"
  grep -q "\"membership\":{\"version\":$version," <<<"$st" || fail "/status shows no membership version $version"
  if [ -n "$admin_tool" ]; then
    live=$("$admin_tool" live "127.0.0.1:${mports[0]},127.0.0.1:${mports[1]},127.0.0.1:${mports[3]}") ||
      fail "chorus_admin live: $live"
    echo "$live"
    grep -q "membership v$version .*voters $(addr 1), $(addr 2), $(addr 4); followers -" <<<"$live" ||
      fail "chorus_admin live shows no membership v$version with voters 1, 2, 4"
  fi
fi
for i in 1 2 4; do
  kill -TERM "${pids[$((i - 1))]}"
  wait "${pids[$((i - 1))]}" || fail "node $i did not exit 0 on SIGTERM"
  pids[$((i - 1))]=""
done
if [ -n "$admin_tool" ]; then
  r=$("$admin_tool" inspect "$tmp/data4") || fail "chorus_admin inspect node 4: $r"
  echo "$r" | grep -E '^  (membership|identity)' | sed 's/^/replace_node: node 4 inspect: /'
  grep -q "membership  *v$version .*voters $(addr 1), $(addr 2), $(addr 4); followers -" <<<"$r" ||
    fail "chorus_admin inspect of node 4 does not show membership v$version with voters 1, 2, 4"
  r=$("$admin_tool" inspect "$tmp/data3") || fail "chorus_admin inspect node 3: $r"
  echo "$r" | grep -E '^  membership' | sed 's/^/replace_node: node 3 inspect: /'
  grep -q "membership  *v0 .*voters $(addr 1), $(addr 2), $(addr 3); followers -" <<<"$r" ||
    fail "chorus_admin inspect of node 3 does not show its membership v0 with voters 1, 2, 3"
fi
echo "replace_node: PASS: node 3 (killed) replaced by node 4 (empty, --join) while writes went on:" \
  "$acked acknowledged writes all on node 4, 0 definite failures"
status=0
