#!/usr/bin/env bash
# Installs chorus's build dependencies from Debian 12 packages (apt-get, as root).
# Idempotent and quiet: does nothing when everything is already installed.
#   scripts/install_deps.sh          the build and test dependencies
#   scripts/install_deps.sh --fuzz   also clang-14 and its libFuzzer runtime (scripts/fuzz.sh)
set -euo pipefail

# redis-tools (redis-cli, redis-benchmark) and curl drive the kv sample
# (sample/kv/run_cluster.sh, bench/kv_bench.sh).
PACKAGES=(build-essential cmake pkg-config ccache
          libleveldb-dev libsnappy-dev libprotobuf-dev protobuf-compiler
          libgtest-dev libgmock-dev libgflags-dev
          redis-tools curl
          iproute2 nftables  # the nemesis (unittest/nemesis): ip netns, nft
          libssl-dev  # libcrypto: HMAC-SHA256 of the authenticated transport
          prometheus-cpp-dev)  # chorus_prometheus (/metrics; optional for the library)
if [ "${1:-}" = "--fuzz" ]; then
  PACKAGES+=(clang-14 libclang-rt-14-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
