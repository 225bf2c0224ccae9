#!/usr/bin/env bash
# Configures and builds chorus.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# TARGETS="a b" in the environment builds only those targets.
# Defaults: BUILD_DIR=build, RelWithDebInfo (optimised, with -g), -Wall -Wextra.
# CHORUS_WERROR=1 in the environment turns warnings into errors (CI does).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
shift || true
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
  -DCHORUS_WERROR=${CHORUS_WERROR:-0} "$@" >/dev/null
if [ -n "${TARGETS:-}" ]; then
  # shellcheck disable=SC2086  # TARGETS is a list
  cmake --build "$BUILD_DIR" -j "$JOBS" --target $TARGETS
else
  cmake --build "$BUILD_DIR" -j "$JOBS"
fi
