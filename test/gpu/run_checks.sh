#!/bin/sh
# One GPU-machine call over a directory of sm90 artifacts: four test/gpu
# scripts (test_sm90_attention.py with the host twins,
# test_fused_combine, test_graph_capture, test_block_table_mirror), then,
# while time is left, FA_RUNS (default 3) runs of the decode and prefill
# benchmarks against the variants given, each as bench/sm90_bench.py's
# --variant NAME=DIR[@LIB], interleaved, and for each variant the tables of
# bench/compare_runs.py over those runs (ARTIFACTS / NAME speed:
# OUT/logs/compare_NAME.md).
# Each step runs under a watchdog (timeout) cut to the time left of
# FA_BUDGET seconds (default 570: the device tool's 10-minute call); a step
# that no longer fits is skipped and said so. Writes OUT/logs/<step>.log,
# OUT/logs/gpu.txt, OUT/logs/summary.txt (one line a step: exit status,
# seconds since the start; copied to OUT/summary.txt) and, after every
# step, OUT/checks.tar.gz with all of them (one file to bring back).
# Exits 1 when a test step fails or hangs.
# Usage, after test/gpu/prepare.sh and build_sm90_artifacts.sh here:
#   OUT=DIR sh test/gpu/run_checks.sh ARTIFACTS [NAME=DIR ...]
# e.g. OUT=$OUT sh test/gpu/run_checks.sh build/gpu-carry/new main=build/gpu-carry/sm90
set -u
[ $# -ge 1 ] || { echo "usage: OUT=DIR sh test/gpu/run_checks.sh ARTIFACTS [NAME=DIR ...]" >&2; exit 2; }
: "${OUT:?OUT: the directory to write the logs into}"
G=${FA_CARRY:-build/gpu-carry}
L=$G/libflashattn_rt.so.1
A=$1
shift
variants=""
for v in "$@"; do variants="$variants --variant $v"; done
export LD_LIBRARY_PATH="$PWD/$G"
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/logs/gpu.txt" 2>&1
t0=$(date +%s)
status=0
elapsed() { echo $(($(date +%s) - t0)); }
collect() { (cd "$OUT" && tar czf checks.tar.gz logs && cp logs/summary.txt .); }
# step NAME LIMIT KIND CMD...: KIND test (a failure fails the call) or bench.
step() {
  name=$1 limit=$2 kind=$3
  shift 3
  left=$((${FA_BUDGET:-570} - $(elapsed)))
  if [ "$left" -lt 30 ]; then
    echo "$name skipped (at $(elapsed) s)" >> "$OUT/logs/summary.txt"
    collect
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  timeout "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
  rc=$?
  [ "$kind" = test ] && [ $rc != 0 ] && status=1
  echo "$name rc=$rc (at $(elapsed) s)" >> "$OUT/logs/summary.txt"
  collect
}
host=""
[ -d "$G/host" ] && host="--host $G/host"
# shellcheck disable=SC2086 # $host and $variants are lists of words
step attention 240 test python3 test/gpu/test_sm90_attention.py --lib "$L" --artifacts "$A" \
  --out "$OUT/logs" --no-bench $host
for s in test_fused_combine test_graph_capture test_block_table_mirror; do
  step "$s" 90 test python3 "test/gpu/$s.py" --lib "$L" --artifacts "$A" --out "$OUT/logs"
done
rm -rf "$OUT"/logs/decode[0-9]* "$OUT"/logs/prefill[0-9]*  # no run of an earlier call
i=1
while [ "$i" -le "${FA_RUNS:-3}" ]; do
  # shellcheck disable=SC2086
  step decode$i 150 bench python3 bench/sm90_bench.py --lib "$L" --artifacts "$A" $variants \
    --decode --pages 8,16,64 --repeats 3 --out "$OUT/logs/decode$i"
  # shellcheck disable=SC2086
  step prefill$i 240 bench python3 bench/sm90_bench.py --lib "$L" --artifacts "$A" $variants \
    --repeats 3 --out "$OUT/logs/prefill$i"
  i=$((i + 1))
done
# compare NAME: bench/compare_runs.py over the runs that wrote their JSON.
compare() (
  name=$1
  set --
  for f in "$OUT"/logs/decode[0-9]*/decode.json "$OUT"/logs/prefill[0-9]*/bench.json; do
    [ -f "$f" ] && set -- "$@" "$f"
  done
  [ $# -gt 0 ] || { echo "no run wrote its JSON"; return 2; }
  python3 bench/compare_runs.py --new ours --old "$name" "$@"
)
for v in "$@"; do
  name=${v%%=*}
  compare "$name" > "$OUT/logs/compare_$name.md" 2>&1
  echo "compare_$name rc=$? (at $(elapsed) s)" >> "$OUT/logs/summary.txt"
done
collect
exit $status
