#!/usr/bin/env bash
# tools/lincheck on saved histories (ctest lincheck_violation): a violating
# file exits 1 and names the key and its minimal sub-history; a
# linearizable one exits 0; a malformed one exits 2 naming the line.
#   lincheck_test.sh LINCHECK TESTDATA_DIR
set -uo pipefail
lincheck=${1:?usage: lincheck_test.sh LINCHECK TESTDATA_DIR}
data=${2:?usage: lincheck_test.sh LINCHECK TESTDATA_DIR}
fail() { echo "lincheck_test: $*" >&2; exit 1; }

out=$("$lincheck" "$data/stale_read.history"); rc=$?
echo "$out"
[ "$rc" = 1 ] || fail "stale_read.history: exit $rc, want 1"
grep -q 'VIOLATION: key "x"' <<<"$out" || fail "stale_read.history: no violation on key x"
grep -q '3 operations (times' <<<"$out" || fail "stale_read.history: minimal sub-history is not the 3 operations on x"
grep -q 'id=5 .*read "x" -> "a"' <<<"$out" || fail "stale_read.history: the stale read is not shown"
if grep -q 'key=y\|"y"' <<<"$out"; then fail "stale_read.history: key y is in the report"; fi

out=$("$lincheck" "$data/linearizable.history"); rc=$?
echo "$out"
[ "$rc" = 0 ] || fail "linearizable.history: exit $rc, want 0"
grep -q '^linearizable: 7 operations on 1 keys' <<<"$out" || fail "linearizable.history: wrong report"

out=$("$lincheck" "$data/malformed.history" 2>&1); rc=$?
echo "$out"
[ "$rc" = 2 ] || fail "malformed.history: exit $rc, want 2"
grep -q "line 2: .*kind 'delete'" <<<"$out" || fail "malformed.history: the error does not name line 2 and the kind"

out=$("$lincheck" "$data/no_such.history" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "a missing file: exit $rc, want 2"
echo "lincheck_test: ok"
