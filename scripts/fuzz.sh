#!/usr/bin/env bash
# Builds chorus's libFuzzer targets (unittest/fuzz; CMake option CHORUS_FUZZ=ON)
# with clang-14 in build-fuzz, then runs each for a bounded time on a copy of
# its seed corpus (unittest/fuzz/corpus/<target>/):
#   scripts/fuzz.sh [TARGET...]        (default: every target)
#   FUZZ_SECONDS=600 scripts/fuzz.sh paxos_message_fuzz
# FUZZ_SECONDS (default 20) is the run time of each target; FUZZ_RUNS, when
# set, also stops each after that many executions. Prints the
# executions of each (libFuzzer's stat::number_of_executed_units) and fails
# when any target crashes, leaks, times out or breaks one of its properties;
# the input that did it is kept in build-fuzz/crashes/<target>/ (replay it:
# build-fuzz/unittest/fuzz/<target> FILE). A target's own libFuzzer options
# are in <target>.options next to its source.
#   scripts/fuzz.sh --corpus           rewrites the seed corpus (make_fuzz_corpus)
# Installs clang-14 and libclang-rt-14-dev when missing (scripts/install_deps.sh --fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --fuzz

BUILD_DIR=build-fuzz
SECONDS_PER_TARGET=${FUZZ_SECONDS:-20}
ALL_TARGETS=(frame_fuzz paxos_message_fuzz paxos_recovery_fuzz value_codec_fuzz log_record_fuzz
             wal_tail_fuzz resp_fuzz)

echo "== fuzz: build (clang-14, -fsanitize=fuzzer,address,undefined) =="
CC=clang-14 CXX=clang++-14 TARGETS="fuzz_targets make_fuzz_corpus" UNITY_BUILD=${UNITY_BUILD:-ON} \
  scripts/build.sh "$BUILD_DIR" -DCHORUS_FUZZ=ON -DCHORUS_BUILD_TESTS=OFF \
  -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_SAMPLES=ON
BIN="$BUILD_DIR/unittest/fuzz"
# Where a target's binary and seed corpus live: unittest/fuzz, except the kv
# sample's RESP parser (sample/kv/fuzz). Only fuzz_targets is built, so the
# samples' other programs are not compiled here.
bin_of() { [ "$1" = resp_fuzz ] && echo "$BUILD_DIR/sample/kv/resp_fuzz" || echo "$BIN/$1"; }
corpus_of() { [ "$1" = resp_fuzz ] && echo sample/kv/fuzz/corpus || echo "unittest/fuzz/corpus/$1"; }
# A target's own libFuzzer options (say, -max_len), one per line, from the
# "name = value" lines of <target>.options next to its source (ClusterFuzz's
# format, [libfuzzer] section); the file says why each is there. Kept out of
# the corpus directory, which --corpus rewrites.
options_of() {
  local f
  f="$([ "$1" = resp_fuzz ] && echo sample/kv/fuzz || echo unittest/fuzz)/$1.options"
  [ -f "$f" ] || return 0
  sed -n 's/^[[:space:]]*\([a-z_]\+\)[[:space:]]*=[[:space:]]*\([^[:space:]]\+\)[[:space:]]*$/-\1=\2/p' "$f"
}

if [ "${1:-}" = "--corpus" ]; then
  rm -rf unittest/fuzz/corpus
  "$BIN/make_fuzz_corpus" unittest/fuzz/corpus
  echo "fuzz: wrote unittest/fuzz/corpus ($(du -sb unittest/fuzz/corpus | cut -f1) bytes)"
  exit 0
fi

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
failed=()
summary=()
for t in "${targets[@]}"; do
  work="$BUILD_DIR/fuzz-run/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$BUILD_DIR/crashes/$t"
  # A copy: what the run adds never lands in the repository.
  cp "$(corpus_of "$t")"/* "$work/corpus/"
  echo "== fuzz: $t for ${SECONDS_PER_TARGET}s =="
  extra=()
  [ -n "${FUZZ_RUNS:-}" ] && extra+=(-runs="$FUZZ_RUNS")
  while read -r opt; do extra+=("$opt"); done < <(options_of "$t")
  rc=0
  "$(bin_of "$t")" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$BUILD_DIR/crashes/$t/" "${extra[@]}" "$work/corpus" \
    >"$work/log" 2>&1 || rc=$?
  units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  per_sec=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$work/log"
    failed+=("$t")
    summary+=("$(printf '%-22s FAILED (exit %s; see %s/log, %s/crashes/%s/)' "$t" "$rc" "$work" "$BUILD_DIR" "$t")")
  else
    summary+=("$(printf '%-22s %12s executions  %8s exec/s  0 crashes' "$t" "${units:-?}" "${per_sec:-?}")")
  fi
done
echo "== fuzz: results =="
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
