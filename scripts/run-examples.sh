#!/bin/sh
# The main job: fa-run compiles every examples/*.mlir (real model
# configurations) through the host pipeline into native code, runs it on
# seeded inputs and prints the verification table against the float64
# reference; then the C runtime example runs one attention through the public
# API. Exits non-zero if any example is outside tolerance.
# Usage: scripts/run-examples.sh BUILD_DIR
set -u
build=${1:-build}
status=0
for f in examples/*.mlir; do
  echo "==> $f"
  "$build/bin/fa-run" "$f" || status=1
  echo
done
# The C runtime: one attention through the public API, in two processes. The
# first compiles the kernel on a cache miss (libflashattn_compiler.so); the
# second is served from the disk cache.
cache="$build/example-cache"
rm -rf "$cache"
for run in first second; do
  echo "==> examples/runtime/attention.c ($run process)"
  FLASHATTN_CACHE_DIR="$cache" FLASHATTN_COMPILER_LIB="$build/lib/libflashattn_compiler.so" \
    "$build/bin/runtime-example" || status=1
done
echo

if [ $status -eq 0 ]; then
  echo "make run: every example is within tolerance"
else
  echo "make run: some example FAILED" >&2
fi
exit $status
