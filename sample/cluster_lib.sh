# What the samples' run_cluster.sh scripts share (sourced, not run):
#   . "$root/sample/cluster_lib.sh"; cluster_init NAME
# cluster_init makes the temp dir $tmp (chorus-NAME.XXXXXX), the arrays pids
# (node processes) and fds (the write ends of their stdin FIFOs), status=1,
# a cleanup on exit (stops every node, SIGTERM then SIGKILL; on failure
# prints each node's $tmp/out<i> and the tail of $tmp/err<i>; removes $tmp;
# exits with $status) and ports: 3 free TCP ports (cluster_init NAME N: N of
# them). A script sets status=0 once every check held.

# fail MESSAGE: exits the script with status 1.
fail() { echo "run_cluster: FAIL: $*" >&2; status=1; exit 1; }

cluster_cleanup() {
  trap - EXIT INT TERM
  local fd pid alive
  for fd in "${fds[@]:-}"; do [ -n "$fd" ] && exec {fd}>&- 2>/dev/null || true; done
  for pid in "${pids[@]:-}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]:-}"; do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$status" != 0 ]; then
    for i in 1 2 3 4 5 6; do
      [ -f "$tmp/out$i" ] && { echo "--- node $i stdout"; cat "$tmp/out$i"; }
      [ -f "$tmp/err$i" ] && { echo "--- node $i stderr"; tail -n 30 "$tmp/err$i"; }
    done
  fi
  rm -rf "$tmp"
  exit "$status"
}

# port_in_use PORT: whether a TCP socket on this machine uses PORT (per
# /proc/net/tcp{,6}).
port_in_use() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

cluster_init() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/chorus-$1.XXXXXX")
  pids=()
  fds=()
  status=1
  trap cluster_cleanup EXIT
  trap 'exit 1' INT TERM
  ports=()
  local p n=${2:-3} low
  # Below the kernel's ephemeral range: a port in it may be taken by any
  # concurrent test's outgoing connection before this cluster binds it.
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 12000 ] 2>/dev/null || low=32768
  while [ ${#ports[@]} -lt "$n" ]; do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % (low - 10000)))
    port_in_use "$p" && continue
    [[ " ${ports[*]} " == *" $p "* ]] && continue
    ports+=("$p")
  done
}
