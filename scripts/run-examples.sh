#!/bin/sh
# The main job until the host path lands: fa-opt parses, verifies and prints
# every examples/*.mlir (real model configurations). Exits non-zero on the
# first file that does not verify.
# Usage: scripts/run-examples.sh BUILD_DIR
set -eu
build=${1:-build}
fa_opt="$build/bin/fa-opt"
status=0
for f in examples/*.mlir; do
  echo "==> $f"
  if ! "$fa_opt" "$f"; then
    echo "error: $f failed to verify" >&2
    status=1
  fi
done
exit $status
