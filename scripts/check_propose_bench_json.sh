#!/usr/bin/env bash
# Runs a short propose_bench and checks that its JSON object holds the
# throughput, MB/s, CPU-per-value and values-per-instance fields as
# positive numbers (ctest propose_bench_json, label sample). It asserts no
# speed: any positive figure passes. Extra arguments go to propose_bench
# (e.g. --async); with --async the JSON must say so. With
# --clients_on=process it must say so too, and hold the client process's
# CPU per value and node 0's propose server thread ("bench-server").
#   scripts/check_propose_bench_json.sh PROPOSE_BENCH [propose_bench flags...]
set -uo pipefail
prog=${1:?usage: check_propose_bench_json.sh PROPOSE_BENCH [flags...]}
shift
out=$("$prog" --seconds=1 --clients=4 --json "$@" 2>&1)
rc=$?
fail() { echo "check_propose_bench_json: $*" >&2; echo "$out" >&2; exit 1; }
[ "$rc" -eq 0 ] || fail "propose_bench exited with $rc"
num='[0-9]*\.?[0-9]*'
pos="0*\.?0*[1-9]$num"  # a number with a non-zero digit, no sign
for field in ops_per_sec mb_per_sec cpu_us_per_value values_per_instance; do
  grep -qE "\"$field\":$pos[,}]" <<<"$out" || fail "no positive \"$field\""
done
grep -qE "\"cpu_us_per_value_by_node\":\[$pos,$pos,$pos\]" <<<"$out" ||
  fail "no \"cpu_us_per_value_by_node\" with 3 positive numbers"
# The per-thread split names node 0's group loop and transport threads.
for thread in chorus-loop-g0 chorus-tcp; do
  grep -qE "\"threads_cpu_us_per_value\":\{.*\"$thread\":\{\"user\":$num,\"sys\":$num\}" <<<"$out" ||
    fail "no \"$thread\" in \"threads_cpu_us_per_value\""
done
case " $* " in
  *" --async "*) grep -q '"async":true' <<<"$out" || fail "no \"async\":true" ;;
esac
case " $* " in
  *" --clients_on=process "*)
    grep -q '"clients_on":"process"' <<<"$out" || fail "no \"clients_on\":\"process\""
    grep -qE "\"cpu_us_per_value_client_process\":$pos[,}]" <<<"$out" ||
      fail "no positive \"cpu_us_per_value_client_process\""
    grep -qE "\"threads_cpu_us_per_value\":\{.*\"bench-server\":\{\"user\":$num,\"sys\":$num\}" <<<"$out" ||
      fail "no \"bench-server\" in \"threads_cpu_us_per_value\"" ;;
esac
exit 0
