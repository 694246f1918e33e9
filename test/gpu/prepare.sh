#!/bin/sh
# Assembles build/gpu-carry: what the GPU machine needs from this build to run
# test/gpu/*.py (the runtime library and its two Debian dependencies, which
# the GPU machine's image lacks). Carry build/gpu-carry and run, there:
#   export LD_LIBRARY_PATH=$PWD/build/gpu-carry
#   timeout 300 python3 test/gpu/test_runtime_launch.py \
#       --lib build/gpu-carry/libflashattn_rt.so.1 --out $OUT
set -eu
build=${1:-build}
mkdir -p "$build/gpu-carry"
cp -L "$build/lib/libflashattn_rt.so.1" "$build/gpu-carry/"
for lib in libcjson.so.1 libxxhash.so.0; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" "$build/gpu-carry/"
done
ls -l "$build/gpu-carry"
