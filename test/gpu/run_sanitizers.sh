#!/bin/sh
# compute-sanitizer's memcheck, synccheck and racecheck over a subset of
# test_sm90_attention.py that covers dense, causal, split-KV, varlen, paged
# (16-key pages and per-row copies of 1-key pages) and kv-cache append, on
# the GPU machine after test/gpu/prepare.sh and build_sm90_artifacts.sh
# here. Every kernel of the process is checked (ours and PyTorch's
# reference ones). Writes OUT/<tool>.log and one line per tool to
# OUT/summary.txt; exits 1 when a tool reports an error or a case fails.
# Usage: OUT=DIR sh test/gpu/run_sanitizers.sh [BUILD_DIR]
set -u
build=${1:-build}
G=$build/gpu-carry
export LD_LIBRARY_PATH=$PWD/$G
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$cs" --version | tail -1 > "$OUT/summary.txt"
only=dense_gqa_1023,causal_br_sq113_sk1025,split3_gqa_br,varlen_br_gqa_uneven
only=$only,paged16_decode_pack_auto_split,paged1_prefill_hd64,append_dense_spec4,append_paged16_hd64
status=0
for tool in memcheck synccheck racecheck; do
  timeout "${FA_SANITIZER_TIMEOUT:-250}" "$cs" --tool "$tool" --error-exitcode 9 --print-limit 20 \
    python3 test/gpu/test_sm90_attention.py --lib "$G/libflashattn_rt.so.1" --artifacts "$G/sm90" \
    --no-bench --only "$only" --out "/tmp/fa_sanitize_$tool" > "$OUT/$tool.log" 2>&1
  rc=$?
  [ $rc = 0 ] || status=1
  echo "$tool rc=$rc PASS=$(grep -c ' PASS ' "$OUT/$tool.log") FAIL=$(grep -c FAIL "$OUT/$tool.log")" \
    "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$OUT/summary.txt"
done
exit $status
