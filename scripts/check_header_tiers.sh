#!/usr/bin/env bash
# Checks the two tiers of chorus's headers (DESIGN.md), with grep:
#  1. paxos/ and utils/ include nothing of the runtime: no node/ header and
#     none of the runtime API (chorus/node.h, options.h, state_machine.h,
#     transport.h, leveldb_log_storage.h);
#  2. the vocabulary headers (chorus/status.h, log_storage.h, logging.h)
#     include the standard library and each other only.
# Prints every offending line and exits 1, or exits 0 silently.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

runtime='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](node/|chorus/(node|options|state_machine|transport|leveldb_log_storage)\.h[>"])'
if grep -rnE "$runtime" paxos utils; then
  echo "check_header_tiers: paxos/ and utils/ must not include the runtime (lines above)" >&2
  status=1
fi

vocabulary=(status.h log_storage.h logging.h)
for h in "${vocabulary[@]}"; do
  f=node/include/chorus/$h
  [ -f "$f" ] || { echo "check_header_tiers: missing $f" >&2; status=1; continue; }
  # Quoted includes must name another vocabulary header; angle includes must
  # be standard headers (no '/' nor '.': <string>, <cstdint>...).
  while IFS= read -r line; do
    inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*//' <<<"$line")
    case "$inc" in
      \"chorus/status.h\"|\"chorus/log_storage.h\"|\"chorus/logging.h\") ;;
      \<*\>)
        name=${inc#<}; name=${name%>}
        if [[ "$name" == */* || "$name" == *.* ]]; then
          echo "$f: $line: a vocabulary header includes the standard library only" >&2
          status=1
        fi
        ;;
      *)
        echo "$f: $line: a vocabulary header includes the standard library only" >&2
        status=1
        ;;
    esac
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$f")
done
exit $status
