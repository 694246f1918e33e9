#!/bin/sh
# The main job: fa-run compiles every examples/*.mlir (real model
# configurations) through the host pipeline into native code, runs it on
# seeded inputs and prints the verification table against the float64
# reference. Exits non-zero if any example is outside tolerance.
# Usage: scripts/run-examples.sh BUILD_DIR
set -u
build=${1:-build}
status=0
for f in examples/*.mlir; do
  echo "==> $f"
  "$build/bin/fa-run" "$f" || status=1
  echo
done
if [ $status -eq 0 ]; then
  echo "make run: every example is within tolerance"
else
  echo "make run: some example FAILED" >&2
fi
exit $status
