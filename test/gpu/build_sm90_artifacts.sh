#!/bin/sh
# Compiles the sm90 artifacts test_sm90_attention.py runs (here, where the
# compiler and ptxas are) into BUILD/gpu-carry/sm90/, named by their config:
#   d<head_dim>_<dtype>_<causal>_h<hq>x<hkv>[_w<left>_<right>][_c<softcap>][_r<regions>][_s<splits>][_p][_v][_u][_g<page>][_a].faa
# Usage: test/gpu/build_sm90_artifacts.sh [BUILD_DIR]
# For an A/B measurement (bench/sm90_bench.py --variant NAME=DIR), FA_OUT=DIR
# writes elsewhere (without the host twins), FA_COMPILE_FLAGS adds fa-compile
# flags to every sm90 artifact (e.g. "--l2-hint-kv normal") and FA_ONLY=REGEX
# keeps the names it matches.
set -euf
build=${1:-build}
out="${FA_OUT:-$build/gpu-carry/sm90}"
mkdir -p "$out"
compile() { # d dtype causal hq hkv [window_left window_right] [softcap]
  name="d$1_$2_$3_h$4x$5"
  extra=""
  if [ $# -ge 7 ] && { [ "$6" != -1 ] || [ "$7" != -1 ]; }; then
    name="${name}_w$6_$7"
    extra="--window-left $6 --window-right $7"
  fi
  if [ $# -ge 8 ]; then
    name="${name}_c$8"
    extra="$extra --softcap $8"
  fi
  if [ -n "${REGIONS:-}" ]; then
    name="${name}_r$REGIONS"
    extra="$extra --regions-file test/gpu/regions/$REGIONS.regions"
  fi
  if [ "${SPLITS:-1}" != 1 ]; then
    name="${name}_s$SPLITS"
    extra="$extra --num-splits $SPLITS"
  fi
  if [ -n "${PACK:-}" ]; then
    name="${name}_p"
    extra="$extra --pack-gqa 1"
  fi
  if [ -n "${VARLEN:-}" ]; then
    name="${name}_v"
    extra="$extra --varlen-q --varlen-k"
  fi
  if [ -n "${SEQUSED:-}" ]; then
    name="${name}_u"
    extra="$extra --seqused-k"
  fi
  if [ -n "${PAGE:-}" ]; then
    name="${name}_g$PAGE"
    extra="$extra --page-size $PAGE"
  fi
  if [ -n "${APPEND:-}" ]; then
    name="${name}_a"
    extra="$extra --append"
  fi
  if [ -n "${FA_ONLY:-}" ] && ! echo "$name" | grep -Eq "$FA_ONLY"; then
    return 0
  fi
  # shellcheck disable=SC2086 # word splitting of the flag lists is intended
  "$build/bin/fa-compile" --target sm90 --lse --d "$1" --dtype "$2" \
    --causal "$3" --hq "$4" --hkv "$5" $extra ${FA_COMPILE_FLAGS:-} -o "$out/$name.faa"
  # The serving forms also get a host twin (same config, target host), so
  # that the GPU machine runs the same cases on the host path too.
  if [ -z "${FA_OUT:-}" ] && [ -n "${VARLEN:-}${SEQUSED:-}${PAGE:-}${APPEND:-}" ]; then
    mkdir -p "$build/gpu-carry/host"
    "$build/bin/fa-compile" --target host --lse --d "$1" --dtype "$2" \
      --causal "$3" --hq "$4" --hkv "$5" $extra -o "$build/gpu-carry/host/$name.faa"
  fi
}
# Correctness cases (test_sm90_attention.py CASES).
compile 128 bf16 none 8 2
compile 128 bf16 bottom_right 8 2
compile 128 f16 top_left 4 4
compile 64 bf16 bottom_right 4 1
compile 256 bf16 none 4 2
compile 256 f16 bottom_right 4 1
compile 64 f16 none 8 8
compile 128 bf16 bottom_right 8 2 255 0
compile 64 f16 none 4 4 100 50
compile 128 bf16 none 4 2 64 -1
compile 64 f16 bottom_right 4 2 1073741824 2147483646
compile 256 bf16 none 4 2 -1 -1 30
compile 128 f16 bottom_right 4 1 64 0 50
# Split-KV (SPLITS=S: the partial kernel + the combine kernel in one cubin).
SPLITS=3 compile 128 bf16 bottom_right 8 2
SPLITS=4 compile 64 f16 none 4 4
SPLITS=5 compile 256 bf16 bottom_right 4 1 100 0
SPLITS=2 compile 128 bf16 bottom_right 4 2
# Score / mask regions (REGIONS=name: test/gpu/regions/<name>.regions).
REGIONS=bias compile 128 bf16 bottom_right 8 2
REGIONS=doc compile 64 f16 none 4 4
REGIONS=half SPLITS=3 compile 256 bf16 none 4 2 -1 -1 20
# pack_gqa (PACK=1: the query heads of a kv head share tiles).
PACK=1 compile 128 bf16 bottom_right 32 8
PACK=1 compile 64 f16 none 8 1
PACK=1 compile 256 f16 bottom_right 16 4
PACK=1 SPLITS=4 compile 128 bf16 bottom_right 32 8
# Automatic num_splits (SPLITS=0: the runtime picks the count per launch).
PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
SPLITS=0 compile 64 f16 none 4 4
# Automatic pack_gqa too (the config's default): packed entries picked per
# launch.
SPLITS=0 compile 128 bf16 bottom_right 32 8
# Varlen (VARLEN=1: packed q/k/v + cu_seqlens) and seqused_k (SEQUSED=1):
# the runtime's tile table.
VARLEN=1 compile 128 bf16 bottom_right 8 2
VARLEN=1 compile 64 f16 none 8 1
VARLEN=1 compile 256 f16 top_left 4 4
VARLEN=1 compile 128 bf16 bottom_right 4 2 100 0
VARLEN=1 PACK=1 compile 128 bf16 bottom_right 32 8
SEQUSED=1 PACK=1 compile 128 bf16 bottom_right 32 8
VARLEN=1 SEQUSED=1 compile 64 bf16 bottom_right 8 2
SEQUSED=1 PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
VARLEN=1 SPLITS=3 compile 128 bf16 bottom_right 8 2
VARLEN=1 SEQUSED=1 SPLITS=0 compile 64 f16 none 8 2
# Paged KV (PAGE=<page_size>, with SEQUSED=1).
SEQUSED=1 PAGE=16 PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
SEQUSED=1 PAGE=64 compile 128 bf16 bottom_right 8 2
SEQUSED=1 PAGE=256 compile 64 f16 bottom_right 8 2
SEQUSED=1 PAGE=16 SPLITS=3 compile 256 f16 none 4 1
SEQUSED=1 PAGE=64 PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
# Several kv heads per key block (pack_gqa over pages below 64 keys).
SEQUSED=1 PAGE=8 PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
SEQUSED=1 PAGE=16 PACK=1 SPLITS=3 compile 64 f16 none 8 2
# Pages of 1 and 3 keys (per-row copies).
SEQUSED=1 PAGE=1 PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
SEQUSED=1 PAGE=1 compile 64 f16 bottom_right 8 2
SEQUSED=1 PAGE=3 compile 128 bf16 none 8 2
SEQUSED=1 PAGE=3 compile 256 f16 bottom_right 4 1
# kv-cache append then attend (APPEND=1), dense and paged caches.
APPEND=1 compile 128 bf16 bottom_right 8 2
APPEND=1 SEQUSED=1 PAGE=64 PACK=1 SPLITS=0 compile 128 bf16 bottom_right 32 8
APPEND=1 SEQUSED=1 PAGE=16 compile 64 f16 bottom_right 8 2
APPEND=1 SEQUSED=1 PAGE=1 compile 128 bf16 bottom_right 8 2
VARLEN=1 compile 128 bf16 bottom_right 16 16
VARLEN=1 compile 128 bf16 none 16 16
# GQA prefill with and without pack_gqa (bench/sm90_bench.py --gqa).
for c in none bottom_right; do
  compile 128 bf16 $c 32 8
  PACK=1 compile 128 bf16 $c 32 8
done
# Benchmark shapes (16k tokens, 2048 / head_dim heads).
for c in none bottom_right; do
  compile 64 bf16 $c 32 32
  compile 128 bf16 $c 16 16
  compile 256 bf16 $c 8 8
done
ls "$out" | wc -l
