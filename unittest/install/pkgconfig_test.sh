#!/usr/bin/env bash
# The pkg-config test (ctest label: install). Installs the build tree into a
# temp prefix, moves the prefix (chorus.pc must be relocatable), then builds
# the one-file application unittest/install/app/main.cc with nothing but
#   c++ main.cc $(pkg-config --cflags --libs chorus)
# and runs it. Environment as install_test.sh (CHORUS_BUILD_DIR, CHORUS_APP_DIR,
# CMAKE_COMMAND, CHORUS_CXX, CHORUS_APP_FLAGS).
set -euo pipefail
: "${CHORUS_BUILD_DIR:?}" "${CHORUS_APP_DIR:?}"
CMAKE=${CMAKE_COMMAND:-cmake}
command -v pkg-config >/dev/null || { echo "pkgconfig_test: FAIL: pkg-config is not installed"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chorus-pkgconfig-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "pkgconfig_test: FAIL: $*" >&2; exit 1; }

"$CMAKE" --install "$CHORUS_BUILD_DIR" --prefix "$tmp/staging" >"$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
mv "$tmp/staging" "$tmp/prefix"
pc_dir=$(dirname "$(find "$tmp/prefix" -name chorus.pc | head -1)")
[ -f "$pc_dir/chorus.pc" ] || fail "no chorus.pc installed"

export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists chorus || fail "pkg-config does not find chorus"
cflags=$(pkg-config --cflags chorus)
libs=$(pkg-config --libs chorus)
echo "pkg-config --cflags chorus: $cflags"
echo "pkg-config --libs chorus:   $libs"
# shellcheck disable=SC2086  # word splitting of the flags is the point
"${CHORUS_CXX:-c++}" ${CHORUS_APP_FLAGS:-} -Wall -Wextra -Werror "$CHORUS_APP_DIR/main.cc" \
  -o "$tmp/app" $cflags $libs || fail "building main.cc with pkg-config --cflags --libs chorus"

out=$("$tmp/app" "$tmp/data" 2>&1) || { echo "$out"; fail "the app failed"; }
echo "$out"
grep -q '^install_app: ok instance=' <<<"$out" || fail "the app did not report ok"
echo "pkgconfig_test: PASS (built with pkg-config --cflags --libs chorus and ran)"
