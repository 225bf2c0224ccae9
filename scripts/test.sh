#!/usr/bin/env bash
# The one command that sets up, builds and runs every chorus test on a fresh
# Debian 12 machine (CI runs it: .ci/run):
#   scripts/test.sh
# Stages, in this order (each prints its wall time in the summary at the end):
#   tiers     scripts/check_header_tiers.sh: paxos/ and utils/ include nothing
#             of the runtime.
#   asan      builds everything (library, tests, samples, tools, benches) in
#             build-asan with GCC, -Werror, ASan+UBSan
#             (-DCHORUS_SANITIZE=address,undefined), and runs the whole ctest
#             suite under it except the nemesis: unit, paxos, simulation,
#             in-process cluster, install, samples' cluster scripts, benches'
#             smoke entries. This is also the -Werror build.
#   nemesis   ctest -L nemesis on build-asan: the seeded fault runs over real
#             kv_server processes (needs root, ip, nft).
#   tsan      builds the threaded tests in build-tsan with ThreadSanitizer and
#             runs them (labels utils, node: runtime, transport, log,
#             in-process cluster; kv: the kv sample's store, sessions and
#             server threads).
#   fuzz      clang-14 in build-fuzz: the libFuzzer targets, each run for
#             FUZZ_SECONDS (default 15) on its seed corpus (scripts/fuzz.sh);
#             the same build compiles the chorus library with
#             -Wthread-safety -Werror=thread-safety (CHORUS_THREAD_SAFETY=ON).
# CHORUS_STAGES="asan tsan" runs only those stages (default: all, in order).
# JOBS (default nproc) is the build and ctest parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh

JOBS=${JOBS:-$(nproc)}
export CHORUS_WERROR=${CHORUS_WERROR:-1}
STAGES=${CHORUS_STAGES:-tiers asan nemesis tsan fuzz}

stage_names=()
stage_seconds=()
current_stage=""
stage_start=0
print_times() {
  local rc=$?
  if [ -n "$current_stage" ]; then
    stage_names+=("$current_stage (FAILED)")
    stage_seconds+=($(($(date +%s) - stage_start)))
  fi
  echo "== stage wall times =="
  local total=0 i
  for i in "${!stage_names[@]}"; do
    printf '  %-22s %5d s\n' "${stage_names[$i]}" "${stage_seconds[$i]}"
    total=$((total + stage_seconds[i]))
  done
  printf '  %-22s %5d s\n' total "$total"
  return $rc
}
trap print_times EXIT
begin() {
  current_stage=$1
  stage_start=$(date +%s)
  echo "== $1: $2 =="
}
end() {
  stage_names+=("$current_stage")
  stage_seconds+=($(($(date +%s) - stage_start)))
  current_stage=""
}
wanted() { [[ " $STAGES " == *" $1 "* ]]; }

# Sanitizer reports are failures: a UBSan finding stops its test
# (-fno-sanitize-recover), an ASan one too; leaks are reported at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if wanted tiers; then
  begin tiers "paxos/ and utils/ include nothing of the runtime"
  scripts/check_header_tiers.sh
  end
fi

if wanted asan; then
  begin asan-build "everything with ASan+UBSan, -Werror (build-asan)"
  scripts/build.sh build-asan -DCHORUS_SANITIZE=address,undefined
  end
  begin asan-ctest "the whole suite but the nemesis under ASan+UBSan"
  ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 600 -LE '^nemesis$'
  end
fi

if wanted nemesis; then
  begin nemesis "ctest -L nemesis on build-asan (real processes, faults)"
  [ -d build-asan ] || scripts/build.sh build-asan -DCHORUS_SANITIZE=address,undefined
  ctest --test-dir build-asan --output-on-failure --no-tests=error --timeout 600 -L '^nemesis$'
  end
fi

if wanted tsan; then
  begin tsan-build "threaded tests with ThreadSanitizer (build-tsan)"
  TARGETS="utils_tests node_tests resp_test kv_store_test kv_session_test" scripts/build.sh build-tsan -DCHORUS_SANITIZE=thread \
    -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_SAMPLES=ON
  end
  begin tsan-ctest "labels utils, node, kv under TSan"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan --output-on-failure -j "$JOBS" -L '^(utils|node|kv)$' --timeout 600
  end
fi

if wanted fuzz; then
  begin fuzz "clang-14: thread-safety analysis + every fuzz target for ${FUZZ_SECONDS:-15}s"
  CHORUS_THREAD_SAFETY=1 FUZZ_SECONDS=${FUZZ_SECONDS:-15} scripts/fuzz.sh
  end
fi
echo "== all tests passed =="
