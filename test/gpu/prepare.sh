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
# The decode benchmark's streaming-read floor (bench/stream_read.cu, benchmark
# code), when the CUDA toolkit is here: nvcc from PATH or CUDA_HOME.
nvcc=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
if [ -x "$nvcc" ]; then
  cuda=$(dirname "$(dirname "$nvcc")")
  "$nvcc" -arch=sm_90a -O3 -shared -Xcompiler -fPIC -o "$build/gpu-carry/libfa_stream_read.so" \
    "$(dirname "$0")/../../bench/stream_read.cu" -L"$cuda/lib64/stubs" -lcuda ||
    echo "prepare.sh: bench/stream_read.cu did not build; the decode benchmark runs without its floor" >&2
else
  echo "prepare.sh: no nvcc; the decode benchmark runs without its streaming-read floor" >&2
fi
ls -l "$build/gpu-carry"
