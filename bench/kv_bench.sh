#!/usr/bin/env bash
# Benchmarks chorus-kv with the stock redis-benchmark, then checks that every
# acknowledged write is present on every replica.
#
#   bench/kv_bench.sh                 # KV_SERVER=build/sample/kv/kv_server by default
#   N=200000 N_P1=50000 CLIENTS=50 KEYSPACE=100000 TARGET=master bench/kv_bench.sh
#   SERVER_FLAGS="--checkpoint_interval=1000 --log_keep=1000" bench/kv_bench.sh   # more kv_server flags
#
# It starts 3 kv_server replicas on 127.0.0.1 (fresh data dirs in a temp dir,
# fsync on), waits for a master, and runs against node TARGET (master or
# follower; a follower forwards writes to the master and serves reads by
# read index):
#   redis-benchmark -h 127.0.0.1 -p PORT -t set,get -n $N    -c $CLIENTS -P 16 -r $KEYSPACE -q
#   redis-benchmark -h 127.0.0.1 -p PORT -t set,get -n $N_P1 -c $CLIENTS -P 1  -r $KEYSPACE -q
# While the -P 16 run goes, `redis-cli --pipe` writes ACKS more keys ack:<i>
# (value <i>) to another node and must report errors: 0. Afterwards:
#  - every ack:<i> reads back as <i> on every replica (MGET, linearizable);
#  - every replica's applied write count (INFO kv_writes_applied) is the
#    same and covers every write any node acknowledged (kv_write_ops_acked),
#    and that covers every SET redis-benchmark sent;
#  - no server-side error reply (kv_failed_requests 0 everywhere);
#  - the three replicas hold the same data (DEBUG DIGEST).
# Then INCR under crashes: redis-benchmark -t incr -n $N_INCR -P 16 on one
# counter while a follower is killed -9 and restarted up to KILLS times;
# every replica must end with the counter at exactly N_INCR.
# Prints each run's figures and one summary line per run; exits 0 only if
# every check held. Load goes to loopback only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
server=${KV_SERVER:-$root/build/sample/kv/kv_server}
n=${N:-200000}
n_p1=${N_P1:-50000}
clients=${CLIENTS:-50}
keyspace=${KEYSPACE:-100000}
acks=${ACKS:-20000}
n_incr=${N_INCR:-100000}
kills=${KILLS:-3}
target=${TARGET:-master}
server_flags=${SERVER_FLAGS:-}
deadline_s=${DEADLINE_S:-60}
[ -x "$server" ] || { echo "kv_bench: no kv_server at '$server' (build it, or set KV_SERVER)" >&2; exit 2; }
for t in redis-cli redis-benchmark; do
  command -v "$t" >/dev/null ||
    { echo "kv_bench: no $t (scripts/install_deps.sh installs redis-tools)" >&2; exit 2; }
done

. "$root/sample/kv/kv_lib.sh"
kv_init kv-bench
for i in 1 2 3; do
  # shellcheck disable=SC2086  # SERVER_FLAGS is a list of flags
  kv_start "$i" --create_if_missing $server_flags
done
master=$(wait_master 1 2 3)
bench_node=$master
if [ "$target" = follower ]; then bench_node=$(( master % 3 + 1 )); fi
other=$(( bench_node % 3 + 1 ))
port=${rports[$((bench_node - 1))]}
echo "kv_bench: master node $master; redis-benchmark -> node $bench_node ($target, RESP port $port);" \
  "acked writer -> node $other; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# The acked writer's input: ACKS SETs ack:<i> <i> in RESP.
awk -v n="$acks" 'BEGIN { for (i = 0; i < n; i++) { k = "ack:" i; v = "" i;
  printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v } }' \
  >"$tmp/acks.resp"

summary=()
sets_sent=0
for pipeline in 16 1; do
  count=$n
  [ "$pipeline" = 1 ] && count=$n_p1
  cmd=(redis-benchmark -h 127.0.0.1 -p "$port" -t set,get -n "$count" -c "$clients" -P "$pipeline"
       -r "$keyspace" -q)
  echo "kv_bench: ${cmd[*]}"
  if [ "$pipeline" = 16 ]; then
    timeout 300 redis-cli -h 127.0.0.1 -p "${rports[$((other - 1))]}" --pipe <"$tmp/acks.resp" \
      >"$tmp/pipe.out" 2>&1 &
    pipe_pid=$!
  fi
  timeout 600 "${cmd[@]}" 2>&1 | tr '\r' '\n' | grep 'requests per second' | tee "$tmp/bench.out"
  [ "$pipeline" = 16 ] && { wait "$pipe_pid" || fail "redis-cli --pipe failed: $(cat "$tmp/pipe.out")"; }
  set_line=$(grep '^SET:' "$tmp/bench.out") || fail "redis-benchmark printed no SET figure"
  get_line=$(grep '^GET:' "$tmp/bench.out") || fail "redis-benchmark printed no GET figure"
  sets_sent=$((sets_sent + count))
  line="-P $pipeline -n $count -c $clients: SET $(awk '{print $2}' <<<"$set_line")/s"
  line+=" (p50 $(sed 's/.*p50=\([0-9.]*\).*/\1/' <<<"$set_line") ms),"
  line+=" GET $(awk '{print $2}' <<<"$get_line")/s"
  line+=" (p50 $(sed 's/.*p50=\([0-9.]*\).*/\1/' <<<"$get_line") ms)"
  summary+=("$line")
done

# The checks.
tr -d '\r' <"$tmp/pipe.out" | tail -n 2
grep -q "errors: 0, replies: $acks" "$tmp/pipe.out" || fail "redis-cli --pipe: $(tr -d '\r' <"$tmp/pipe.out")"
for i in 1 2 3; do
  missing=0
  for ((start = 0; start < acks; start += 1000)); do
    stop=$(( start + 1000 < acks ? start + 1000 : acks ))
    keys=()
    for ((k = start; k < stop; k++)); do keys+=("ack:$k"); done
    got=$(cli "$i" MGET "${keys[@]}")
    want=$(seq "$start" $((stop - 1)))
    [ "$got" = "$want" ] || missing=$((missing + $(diff <(echo "$got") <(echo "$want") | grep -c '^>' || true)))
  done
  [ "$missing" = 0 ] || fail "node $i lacks $missing of the $acks acknowledged ack:<i> writes"
done
echo "kv_bench: all $acks acknowledged ack:<i> writes read back on every replica"
acked=0
applied=""
for i in 1 2 3; do
  a=$(field "$i" kv_writes_applied)
  [ -z "$applied" ] && applied=$a
  [ "$a" = "$applied" ] || fail "node $i applied $a writes, node 1 $applied"
  acked=$((acked + $(field "$i" kv_write_ops_acked)))
  [ "$(field "$i" kv_failed_requests)" = 0 ] ||
    fail "node $i answered $(field "$i" kv_failed_requests) requests with an error"
done
[ "$acked" -le "$applied" ] || fail "$acked writes acknowledged, only $applied applied"
[ "$acked" -ge $((sets_sent + acks)) ] ||
  fail "only $acked writes acknowledged of the $((sets_sent + acks)) sent"
d1=$(cli 1 DEBUG DIGEST)
for i in 2 3; do
  [ "$(cli "$i" DEBUG DIGEST)" = "$d1" ] || fail "node $i holds other data than node 1"
done
echo "kv_bench: writes acknowledged $acked (redis-benchmark SETs $sets_sent + acked writer $acks)," \
  "applied on every replica $applied; DEBUG DIGEST equal on all three ($d1); no error replies"
for i in 1 2 3; do
  echo "kv_bench: node $i: executed_instance=$(field "$i" executed_instance)" \
    "checkpoints_made=$(field "$i" checkpoints_made) log_start=$(field "$i" log_start)"
done

# INCR under crashes: redis-benchmark INCRs one counter while a follower is
# killed with kill -9 and restarted KILLS times. Afterwards every replica must
# hold exactly N_INCR: an INCR applied twice (a replayed batch) or lost would
# show.
victim=""
for i in 1 2 3; do [ "$i" != "$master" ] && [ "$i" != "$bench_node" ] && [ -z "$victim" ] && victim=$i; done
incr_cmd=(redis-benchmark -h 127.0.0.1 -p "$port" -t incr -n "$n_incr" -c "$clients" -P 16 -q)
echo "kv_bench: ${incr_cmd[*]}   (node $victim killed -9 and restarted up to $kills times meanwhile)"
timeout 600 "${incr_cmd[@]}" 2>&1 | tr '\r' '\n' | grep 'requests per second' >"$tmp/incr.out" &
incr_pid=$!
killed=0
while [ "$killed" -lt "$kills" ] && kill -0 "$incr_pid" 2>/dev/null; do
  sleep 0.7
  { kill -KILL "${pids[$((victim - 1))]}"; wait "${pids[$((victim - 1))]}"; } 2>/dev/null || true
  kv_start "$victim" $server_flags
  killed=$((killed + 1))
done
wait "$incr_pid" || fail "redis-benchmark -t incr failed"
cat "$tmp/incr.out"
end=$(( $(date +%s) + deadline_s ))
until [ "$(field "$victim" caught_up)" = 1 ]; do
  alive "$victim" || fail "node $victim exited after its restart"
  in_time || fail "node $victim did not catch up within ${deadline_s}s of the INCR run"
  sleep 0.2
done
for i in 1 2 3; do
  got=$(cli "$i" GET counter:__rand_int__)
  [ "$got" = "$n_incr" ] || fail "node $i: the counter is '$got' after $n_incr acknowledged INCRs"
done
d1=$(cli 1 DEBUG DIGEST)
for i in 2 3; do
  [ "$(cli "$i" DEBUG DIGEST)" = "$d1" ] || fail "node $i holds other data than node 1 after the crashes"
done
echo "kv_bench: node $victim killed -9 and restarted $killed times under INCR load: the counter is" \
  "$n_incr on every replica, DEBUG DIGEST equal ($d1)"
summary+=("INCR -P 16 -n $n_incr -c $clients with $killed follower crashes: $(awk '{print $2}' "$tmp/incr.out")/s")
for line in "${summary[@]}"; do echo "kv_bench: $line"; done
status=0
