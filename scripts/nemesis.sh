#!/usr/bin/env bash
# Runs one long nemesis run (unittest/nemesis: kv_server replicas in network
# namespaces under seeded faults, the history checked for linearizability,
# lost acknowledged writes and convergence). ctest label nemesis runs short
# ones; this is for minutes:
#
#   scripts/nemesis.sh                          5 replicas, 300 s, a fresh seed
#   scripts/nemesis.sh --nodes=3 --seconds=600 --seed=42
#
# Flags after the defaults win (any nemesis flag: --faults, --clients, --keys,
# --plant, --keep; `build/unittest/nemesis/nemesis --help`). Builds the
# nemesis and kv_server first (BUILD_DIR, default build). Needs root, ip and
# nft (scripts/install_deps.sh). Exits with the nemesis's status; a failing
# run prints its seed and the command that replays its schedule.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
[ "$(id -u)" = 0 ] || { echo "nemesis.sh: needs root (network namespaces, nftables)" >&2; exit 2; }
TARGETS="nemesis kv_server" JOBS=${JOBS:-2} scripts/build.sh "$build_dir" >/dev/null
exec "$build_dir/unittest/nemesis/nemesis" --kv_server="$build_dir/sample/kv/kv_server" \
  --nodes=5 --seconds=300 --check_seconds=600 "$@"
