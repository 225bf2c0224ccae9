#!/usr/bin/env bash
# The one command that sets up, builds and runs every chorus test on a fresh
# Debian 12 machine:
#   scripts/test.sh
# 1. installs missing Debian packages, checks the header tiers
# (scripts/check_header_tiers.sh), 2. builds (warnings are errors) and runs
# the whole test suite with ctest, 3. builds with ThreadSanitizer and runs the
# utils and node (runtime, transport, log, in-process cluster) tests under it,
# 4. builds the libFuzzer targets with clang-14 (build-fuzz) and runs each for
# FUZZ_SECONDS (default 20) on its seed corpus (scripts/fuzz.sh).
# Set CHORUS_SKIP_TSAN=1 / CHORUS_SKIP_FUZZ=1 to skip step 3 / 4 locally.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh

JOBS=${JOBS:-$(nproc)}
export CHORUS_WERROR=${CHORUS_WERROR:-1}

echo "== header tiers: paxos/ and utils/ include nothing of the runtime =="
scripts/check_header_tiers.sh
echo "== build (RelWithDebInfo) =="
scripts/build.sh build
echo "== ctest =="
ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 600

if [ "${CHORUS_SKIP_TSAN:-0}" != "1" ]; then
  echo "== ThreadSanitizer: utils and node tests =="
  TARGETS="utils_tests node_tests" scripts/build.sh build-tsan -DCHORUS_SANITIZE=thread -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_SAMPLES=OFF
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan --output-on-failure -j "$JOBS" -L '^(utils|node)$' --timeout 600
fi

if [ "${CHORUS_SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz: every target for ${FUZZ_SECONDS:-20}s =="
  FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh
fi
echo "== all tests passed =="
