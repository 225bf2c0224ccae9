#!/usr/bin/env bash
# Checks that `PROGRAM --help` lists the program's own flags and none of
# gflags' internals (ctest help_<program>, label sample).
#   scripts/check_program_help.sh PROGRAM
set -uo pipefail
prog=${1:?usage: check_program_help.sh PROGRAM}
name=$(basename "$prog")
out=$("$prog" --help 2>&1)
fail() { echo "check_program_help: $name --help: $*" >&2; echo "$out" >&2; exit 1; }
grep -q "Flags from .*/$name\.cc:" <<<"$out" || fail "does not list the flags of $name.cc"
if grep -q "Flags from .*gflags" <<<"$out"; then fail "lists gflags' own flags"; fi
if grep -qE -- "-(flagfile|tab_completion_word|helpxml) " <<<"$out"; then fail "lists gflags' own flags"; fi
exit 0
