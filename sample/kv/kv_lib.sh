# What sample/kv/run_cluster.sh and bench/kv_bench.sh share (sourced, not
# run). The sourcing script sets root, server (the kv_server binary) and
# deadline_s, then calls kv_init NAME: sample/cluster_lib.sh's cluster_init
# with 6 free ports (3 for the chorus transports, $rports: 3 for RESP),
# $nodes (the --nodes list) and $end (now + deadline_s).
. "$root/sample/cluster_lib.sh"

kv_init() {
  cluster_init "$1" 6
  rports=("${ports[@]:3:3}")
  nodes="$(addr 1),$(addr 2),$(addr 3)"
  end=$(( $(date +%s) + deadline_s ))
}

addr() { echo "127.0.0.1:${ports[$(($1 - 1))]}"; }
alive() { [ -n "${pids[$(($1 - 1))]:-}" ] && kill -0 "${pids[$(($1 - 1))]}" 2>/dev/null; }
in_time() { [ "$(date +%s)" -lt "$end" ]; }

# kv_start NODE FLAGS...: starts kv_server NODE (1..3) on its ports and data
# dir $tmp/data<NODE>, stdout and stderr appended to $tmp/out<NODE>, err<NODE>.
kv_start() {
  local i=$1
  shift
  "$server" --node="$(addr "$i")" --nodes="$nodes" --data_dir="$tmp/data$i" \
    --port="${rports[$((i - 1))]}" "$@" >>"$tmp/out$i" 2>>"$tmp/err$i" &
  pids[$((i - 1))]=$!
}

# cli NODE ARGS...: redis-cli against node NODE (never hangs: 60 s at most).
cli() {
  local i=$1
  shift
  timeout 60 redis-cli -h 127.0.0.1 -p "${rports[$((i - 1))]}" "$@" 2>&1 | tr -d '\r'
}

# field NODE NAME: the INFO field NAME of node NODE ("" when unreachable).
field() { cli "$1" INFO | sed -n "s/^$2://p"; }

# wait_master NODES...: waits until every node of NODES names the same master
# and that node says it is it; prints the master's node number.
wait_master() {
  local i m first master
  while true; do
    first=""
    master=""
    for i in "$@"; do
      alive "$i" || fail "node $i exited"
      m=$(field "$i" master)
      [ -n "$m" ] && [ "$m" != none ] || { first=""; break; }
      [ -z "$first" ] && first=$m
      [ "$m" = "$first" ] || { first=""; break; }
      [ "$(addr "$i")" = "$m" ] && [ "$(field "$i" role)" = master ] && master=$i
    done
    if [ -n "$first" ] && [ -n "$master" ]; then
      echo "$master"
      return 0
    fi
    in_time || fail "nodes $* did not agree on a master within ${deadline_s}s"
    sleep 0.1
  done
}
