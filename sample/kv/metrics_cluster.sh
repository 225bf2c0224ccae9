#!/usr/bin/env bash
# kv_server --metrics_port (ctest sample_kv_metrics, label sample):
# three replicas on 127.0.0.1, each also serving /metrics and /status
# (chorus_prometheus). With curl it
#  1. scrapes the master's /metrics, makes SETs through redis-cli, scrapes
#     again: the ok-proposal counter, the propose latency count and the
#     fsync count moved (a follower's fsync count too: its votes);
#  2. reads /status (initial members, master, role, membership v0) and,
#     when $CHORUS_ADMIN is set, runs `chorus_admin live` over the three
#     endpoints (a master row, the membership v0 with the three voters);
#  3. stops the master with SIGTERM (a normal stop): the others elect one,
#     whose master_gained counter is 1 and whose writes work;
#  4. stops everything with SIGTERM; every replica exited 0 and none wrote a
#     chorus warning or error line (normal start, master change and stop
#     are not worth one).
# Exits 0 only if every check held.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
server=${KV_SERVER:-$root/build/sample/kv/kv_server}
admin=${CHORUS_ADMIN:-}
deadline_s=${DEADLINE_S:-60}
. "$root/sample/kv/kv_lib.sh"
command -v curl >/dev/null || { echo "metrics_cluster: curl is not installed" >&2; exit 1; }

cluster_init kv-metrics 9
rports=("${ports[@]:3:3}")
mports=("${ports[@]:6:3}")
nodes="$(addr 1),$(addr 2),$(addr 3)"
end=$(( $(date +%s) + deadline_s ))

scrape() { curl -sf --max-time 10 "http://127.0.0.1:${mports[$(($1 - 1))]}$2"; }
# value NODE SERIES: the sample value of SERIES (name{labels}) on NODE's /metrics.
value() { scrape "$1" /metrics | awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print "missing" }'; }
# grew BEFORE AFTER N: AFTER >= BEFORE + N (numbers as Prometheus prints them).
grew() { awk -v b="$1" -v a="$2" -v n="$3" 'BEGIN { exit !(b != "missing" && a != "missing" && a + 0 >= b + n) }'; }

ok='chorus_proposals_total{group="0",outcome="ok"}'
latency='chorus_propose_latency_seconds_count{group="0"}'
syncs='chorus_log_syncs_total{group="0"}'
gained='chorus_master_gained_total{group="0"}'

for i in 1 2 3; do kv_start "$i" --create_if_missing --metrics_port="${mports[$((i - 1))]}"; done
m=$(wait_master 1 2 3)
f=$(( m % 3 + 1 ))
echo "metrics_cluster: master is node $m"

ok0=$(value "$m" "$ok"); lat0=$(value "$m" "$latency"); sync0=$(value "$m" "$syncs")
fsync0=$(value "$f" "$syncs")
for k in $(seq 10); do
  [ "$(cli "$m" SET "key$k" "value$k")" = OK ] || fail "SET key$k on node $m"
done
ok1=$(value "$m" "$ok"); lat1=$(value "$m" "$latency"); sync1=$(value "$m" "$syncs")
fsync1=$(value "$f" "$syncs")
echo "metrics_cluster: master $ok: $ok0 -> $ok1; $latency: $lat0 -> $lat1; $syncs: $sync0 -> $sync1;" \
     "follower $syncs: $fsync0 -> $fsync1"
grew "$ok0" "$ok1" 10 || fail "the ok-proposal counter did not move by 10 ($ok0 -> $ok1)"
grew "$lat0" "$lat1" 10 || fail "the propose latency count did not move by 10 ($lat0 -> $lat1)"
grew "$sync0" "$sync1" 1 || fail "the master's fsync count did not move ($sync0 -> $sync1)"
grew "$fsync0" "$fsync1" 1 || fail "the follower's fsync count did not move ($fsync0 -> $fsync1)"
[ "$(value "$m" 'chorus_is_master{group="0"}')" = 1 ] || fail "chorus_is_master is not 1 on the master"
# Not `scrape | grep -q`: grep -q exits at the first match, curl then dies of
# SIGPIPE writing the rest, and pipefail turns that into a failure.
metrics=$(scrape "$m" /metrics) || fail "GET /metrics on node $m"
grep -q '^# TYPE chorus_transport_bytes_sent_total counter' <<<"$metrics" ||
  fail "no transport counters"

st_json=$(scrape "$f" /status) || fail "GET /status on node $f"
grep -q "\"initial_members\":\[\"$(addr 1)\",\"$(addr 2)\",\"$(addr 3)\"\]" <<<"$st_json" ||
  fail "/status does not list the initial members: $st_json"
grep -q '"role":"voter","membership":{"version":0,"active_from":0,"pending":false,"members":\[' \
  <<<"$st_json" || fail "/status shows no membership v0 with this node a voter: $st_json"
grep -q "\"master\":\"$(addr "$m")\"" <<<"$st_json" || fail "/status does not name the master: $st_json"
if [ -n "$admin" ]; then
  live=$("$admin" live "127.0.0.1:${mports[0]},127.0.0.1:${mports[1]},127.0.0.1:${mports[2]}") ||
    fail "chorus_admin live failed: $live"
  echo "$live"
  grep -q "$(addr "$m").*master" <<<"$live" || fail "chorus_admin live shows no master row"
  grep -q "^group 0 membership v0 (active from 0): voters .*; followers -" <<<"$live" ||
    fail "chorus_admin live shows no membership v0"
fi

# A normal stop of the master: the two others elect one.
kill -TERM "${pids[$((m - 1))]}"
wait "${pids[$((m - 1))]}" || fail "node $m did not exit 0 on SIGTERM"
pids[$((m - 1))]=""
others=()
for i in 1 2 3; do [ "$i" != "$m" ] && others+=("$i"); done
n=$(wait_master "${others[@]}")
echo "metrics_cluster: new master is node $n"
[ "$(cli "$n" SET after stop)" = OK ] || fail "SET on the new master"
[ "$(value "$n" "$gained")" = 1 ] || fail "master_gained_total on node $n is not 1"

for i in "${others[@]}"; do
  kill -TERM "${pids[$((i - 1))]}"
  wait "${pids[$((i - 1))]}" || fail "node $i did not exit 0 on SIGTERM"
  pids[$((i - 1))]=""
done
for i in 1 2 3; do
  if grep -E '^chorus (WARN|ERROR) ' "$tmp/err$i"; then
    fail "node $i logged a warning or error over a normal start, master change and stop"
  fi
done
echo "metrics_cluster: PASS"
status=0
