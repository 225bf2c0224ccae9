#!/usr/bin/env bash
# The installed-tree test (ctest label: install). Run by ctest with
#   CHORUS_BUILD_DIR  the build tree to install (already built)
#   CHORUS_SOURCE_DIR the source tree (to check no path of it leaks)
#   CHORUS_APP_DIR    unittest/install/app: a one-file application
#   CMAKE_COMMAND, CHORUS_CXX, CHORUS_CCACHE (may be empty), CHORUS_APP_FLAGS
#   (e.g. -fsanitize=address when the build tree is instrumented).
# 1. cmake --install into a temp prefix, then moves the prefix elsewhere (the
#    package must be relocatable); 2. checks the layout: public headers only,
#    no generated protobuf header, no build/source path in the CMake files;
# 3. compiles README.md's "Embed it" snippet against the installed headers;
# 4. configures + builds the app with find_package(chorus); 5. runs it.
set -euo pipefail
: "${CHORUS_BUILD_DIR:?}" "${CHORUS_SOURCE_DIR:?}" "${CHORUS_APP_DIR:?}"
CMAKE=${CMAKE_COMMAND:-cmake}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chorus-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

"$CMAKE" --install "$CHORUS_BUILD_DIR" --prefix "$tmp/staging" >"$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
mv "$tmp/staging" "$tmp/prefix"
prefix=$tmp/prefix

for h in node.h options.h state_machine.h status.h log_storage.h logging.h transport.h \
         leveldb_log_storage.h; do
  [ -f "$prefix/include/chorus/$h" ] || fail "missing include/chorus/$h"
done
for l in chorus chorus_paxos chorus_utils; do
  [ -f "$prefix/lib/lib$l.a" ] || fail "missing lib/lib$l.a"
done
cfg=$prefix/lib/cmake/chorus
for f in chorusConfig.cmake chorusConfigVersion.cmake chorusTargets.cmake; do
  [ -f "$cfg/$f" ] || fail "missing lib/cmake/chorus/$f"
done
if [ -n "$(find "$prefix/include" -name '*.pb.h')" ]; then fail "a generated .pb.h was installed"; fi
# Every quoted include of an installed header must itself be installed.
while read -r inc; do
  [ -f "$prefix/include/$inc" ] || fail "installed headers include \"$inc\", which is not installed"
done < <(grep -ho '#include "[^"]*"' "$prefix"/include/chorus/*.h | sed 's/#include "\(.*\)"/\1/' | sort -u)
if grep -l -e "$CHORUS_BUILD_DIR" -e "$CHORUS_SOURCE_DIR" "$cfg"/*.cmake; then
  fail "the installed CMake package names the build or source tree"
fi

# The README's "Embed it" snippet compiles against the installed headers.
awk '/^## Embed it/ { in_section = 1 } in_section && /^```cpp/ { in_code = 1; next }
     in_code && /^```/ { exit } in_code' "$CHORUS_SOURCE_DIR/README.md" >"$tmp/readme_snippet.cc"
[ -s "$tmp/readme_snippet.cc" ] || fail "README.md has no cpp snippet under '## Embed it'"
"${CHORUS_CXX:-c++}" -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" \
  "$tmp/readme_snippet.cc" || fail "README.md's 'Embed it' snippet does not compile"

args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
[ -n "${CHORUS_CXX:-}" ] && args+=(-DCMAKE_CXX_COMPILER="$CHORUS_CXX")
[ -n "${CHORUS_CCACHE:-}" ] && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$CHORUS_CCACHE")
if [ -n "${CHORUS_APP_FLAGS:-}" ]; then
  args+=(-DCMAKE_CXX_FLAGS="$CHORUS_APP_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$CHORUS_APP_FLAGS")
fi
"$CMAKE" -S "$CHORUS_APP_DIR" -B "$tmp/app-build" "${args[@]}" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configuring the app against the installed package"; }
found_dir=$(sed -n 's/^chorus_DIR:PATH=//p' "$tmp/app-build/CMakeCache.txt")
[ "$found_dir" = "$cfg" ] || fail "find_package(chorus) found '$found_dir', not '$cfg'"
"$CMAKE" --build "$tmp/app-build" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "building the app"; }

out=$("$tmp/app-build/chorus_install_app" "$tmp/data" 2>&1) || { echo "$out"; fail "the app failed"; }
echo "$out"
grep -q '^install_app: ok instance=' <<<"$out" || fail "the app did not report ok"
echo "install_test: PASS (prefix layout ok, app built with find_package(chorus) and ran)"
