#!/usr/bin/env bash
# The one command that sets up, builds and runs every chorus test on a fresh
# Debian 12 machine (CI runs it: .ci/run):
#   scripts/test.sh
# Stages, in this order (each prints its wall and CPU time in the summary at
# the end); the default run is "tiers sim asan nemesis tsan fuzz", which runs
# every test once, each in the build that checks it most:
#   tiers     scripts/check_header_tiers.sh: paxos/ and utils/ include nothing
#             of the runtime.
#   sim       builds everything in build with GCC, -Werror, RelWithDebInfo
#             (GCC's warnings over the whole tree) and runs the simulation's
#             seed sweeps and mutations there (ctest -L sim), at full speed.
#   build     (not by default) everything in build with GCC, -Werror, and the
#             whole ctest suite but the nemesis on it.
#   asan      builds everything in build-asan with clang-14, -Werror,
#             ASan+UBSan (-DCHORUS_SANITIZE=address,undefined, -O0 -g1) and
#             the thread-safety analysis (-DCHORUS_THREAD_SAFETY=ON: a lock
#             annotation of utils/mutex.h the code breaks is an error), and
#             runs the whole suite under it but the nemesis and the seed
#             sweeps (12x slower there): unit, paxos, checker, in-process
#             clusters, crash tests, install, samples' cluster scripts,
#             benches' smoke entries; plus 20 seeds of each simulation mode.
#   nemesis   ctest -L nemesis: the seeded fault runs over real kv_server
#             processes (needs root, ip, nft), on build-asan after the asan
#             stage, else on build.
#   tsan      builds the threaded tests in build-tsan with GCC, -Werror and
#             ThreadSanitizer and runs them (labels utils, node: runtime,
#             transport, log, in-process cluster).
#   clang     (not by default; the asan stage does more) clang-14 in
#             build-clang compiles the library with -DCHORUS_THREAD_SAFETY=ON.
#   fuzz      clang-14 in build-fuzz: the libFuzzer targets, each run for
#             FUZZ_SECONDS (default 5) on its seed corpus (scripts/fuzz.sh).
# CHORUS_STAGES="build tsan" runs only the stages named.
# JOBS (default nproc) is the build and ctest parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh

JOBS=${JOBS:-$(nproc)}
export CHORUS_WERROR=${CHORUS_WERROR:-1}
# Unity batches (scripts/build.sh): each build here is a cold one-off, and
# batches halve its CPU.
export UNITY_BUILD=${UNITY_BUILD:-ON}
STAGES=${CHORUS_STAGES:-tiers sim asan nemesis tsan fuzz}

# Per stage: wall seconds, and the CPU seconds (user + sys) of everything it
# ran. On a shared or loaded machine the wall time says little; CPU / cores
# is what the stage needs of a machine of its own (builds use every core).
stage_names=()
stage_seconds=()
stage_cpu=()
current_stage=""
stage_start=0
cpu_start=0
TICKS=$(getconf CLK_TCK)
children_cpu() { awk -v t="$TICKS" '{ printf "%d", ($16 + $17) / t }' /proc/$$/stat; }
record() {
  stage_names+=("$1")
  stage_seconds+=($(($(date +%s) - stage_start)))
  stage_cpu+=($(($(children_cpu) - cpu_start)))
}
print_times() {
  local rc=$?
  [ -n "$current_stage" ] && record "$current_stage (FAILED)"
  echo "== stage times ($(nproc) cores) =="
  printf '  %-22s %7s %7s\n' stage "wall s" "cpu s"
  local total=0 cpu=0 i
  for i in "${!stage_names[@]}"; do
    printf '  %-22s %7d %7d\n' "${stage_names[$i]}" "${stage_seconds[$i]}" "${stage_cpu[$i]}"
    total=$((total + stage_seconds[i]))
    cpu=$((cpu + stage_cpu[i]))
  done
  printf '  %-22s %7d %7d\n' total "$total" "$cpu"
  return $rc
}
trap print_times EXIT
begin() {
  current_stage=$1
  stage_start=$(date +%s)
  cpu_start=$(children_cpu)
  echo "== $1: $2 =="
}
end() {
  record "$current_stage"
  current_stage=""
}
wanted() { [[ " $STAGES " == *" $1 "* ]]; }

# The TSan build uses -O1 -g1 (line tables: enough for the reports' stack
# traces) instead of RelWithDebInfo's -O2 -g, which halves a sanitizer
# build's compile time (node/group.cc with ASan+UBSan: 22.7 s of CPU instead
# of 44.4 s).
SANITIZER_FLAGS=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
# clang-14 builds the ASan+UBSan tree: 1.7x faster to compile than GCC's
# ASan+UBSan (node/group.cc 10.5 s instead of 18.7 s, a gtest file 8.9 s
# instead of 15.1 s, cold, one core each), and it is where the thread-safety
# analysis runs.
# And at -O0: clang's ASan+UBSan build of everything took 987 s of CPU at
# -O0 -g1 against 1,590 s at -O1 -g1 (the machine shared, both cold), and its
# tests 1.43x the time (241.5 s against 168.8 s summed over 402 tests; most of
# it one CPU-bound test, MasterTest.RandomSchedules..., 80 s against 17 s).
ASAN_BUILD=(-DCHORUS_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG"
            -DCHORUS_THREAD_SAFETY=ON)

# Sanitizer reports are failures: a UBSan finding stops its test
# (-fno-sanitize-recover), an ASan one too; leaks are reported at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if wanted tiers; then
  begin tiers "paxos/ and utils/ include nothing of the runtime"
  scripts/check_header_tiers.sh
  end
fi

if wanted sim; then
  # Everything, not only the simulation: the asan stage compiles with clang,
  # so this is where GCC's warnings (as errors) cover the whole tree.
  begin sim-build "everything, GCC -Werror (build)"
  scripts/build.sh build
  end
  begin sim-ctest "the simulation's seed sweeps and mutations (build)"
  ctest --test-dir build --output-on-failure --no-tests=error -j "$JOBS" --timeout 600 -L '^sim$'
  end
fi

if wanted build; then
  begin build "everything, GCC -Werror (build)"
  scripts/build.sh build
  end
  begin ctest "the whole suite but the nemesis (build)"
  ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 600 -LE '^nemesis$'
  end
fi

if wanted asan; then
  begin asan-build "everything, clang-14 -Werror, ASan+UBSan, thread-safety analysis (build-asan)"
  scripts/install_deps.sh --fuzz  # clang-14
  # A build-asan configured by another compiler (GCC, before) is started over.
  if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt; then
    rm -rf build-asan
  fi
  CC=clang-14 CXX=clang++-14 scripts/build.sh build-asan "${ASAN_BUILD[@]}"
  end
  begin asan-ctest "the whole suite but the nemesis and the seed sweeps under ASan+UBSan"
  # The simulation's seed sweeps are CPU-bound and run 12x slower under
  # ASan+UBSan: they run in full in the sim stage (or the build stage); here
  # 20 seeds of each mode take the simulated cluster through the sanitizers.
  # They run beside ctest, whose cluster tests mostly wait on timers (its
  # run kept 1.3 of the 2 cores busy).
  (
    for mode in "" --master_election --clocks --checkpoints --membership --mixed_options; do
      for nodes in 3 5; do
        build-asan/unittest/sim/paxos_sim --nodes=$nodes --seeds=20 --steps=2000 $mode > build-asan/sim.out 2>&1 ||
          { cat build-asan/sim.out; echo "paxos_sim --nodes=$nodes $mode FAILED under ASan+UBSan"; exit 1; }
        tail -n 1 build-asan/sim.out
      done
    done
  ) > build-asan/sim-runs.log 2>&1 &
  sim_runs=$!
  ctest_rc=0
  ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 600 -LE '^(nemesis|sim)$' || ctest_rc=$?
  sim_rc=0
  wait "$sim_runs" || sim_rc=$?
  cat build-asan/sim-runs.log
  if [ "$ctest_rc" != 0 ] || [ "$sim_rc" != 0 ]; then exit 1; fi
  end
fi

if wanted nemesis; then
  # On the ASan+UBSan build when this run made one (kv_server with every
  # check on; a fault run's length is fixed, so only its operation count
  # drops), else on the plain one.
  nemesis_build=build
  wanted asan && nemesis_build=build-asan
  begin nemesis "ctest -L nemesis on $nemesis_build (real processes, faults)"
  [ -f "$nemesis_build/unittest/nemesis/nemesis" ] || scripts/build.sh build
  ctest --test-dir "$nemesis_build" --output-on-failure --no-tests=error --timeout 600 -L '^nemesis$'
  end
fi

if wanted tsan; then
  begin tsan-build "threaded tests with ThreadSanitizer (build-tsan)"
  TARGETS="utils_tests node_tests" scripts/build.sh build-tsan -DCHORUS_SANITIZE=thread \
    "${SANITIZER_FLAGS[@]}" -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_SAMPLES=OFF
  end
  begin tsan-ctest "labels utils, node under TSan"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan --output-on-failure -j "$JOBS" -L '^(utils|node)$' --timeout 600
  end
fi

if wanted clang; then
  begin clang "clang-14 -Wthread-safety -Werror=thread-safety: the library (build-clang)"
  scripts/install_deps.sh --fuzz  # clang-14
  # -O0, no debug info, no tests: the analysis is a compile-time check.
  CC=clang-14 CXX=clang++-14 TARGETS="chorus" scripts/build.sh build-clang \
    -DCHORUS_THREAD_SAFETY=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -DNDEBUG" \
    -DCHORUS_BUILD_TESTS=OFF -DCHORUS_BUILD_BENCH=OFF -DCHORUS_BUILD_SAMPLES=OFF
  end
fi

if wanted fuzz; then
  begin fuzz "every fuzz target for ${FUZZ_SECONDS:-5}s (clang-14, build-fuzz)"
  FUZZ_SECONDS=${FUZZ_SECONDS:-5} scripts/fuzz.sh
  end
fi
echo "== all tests passed =="
