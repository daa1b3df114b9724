#!/usr/bin/env bash
# Every GPU check and timing of cuda_kernels/ in one call on the device machine (docs/gpu.md):
# verify (10,000 buckets + NCCL on all GPUs; 2,000 more with the persistent variant),
# compute-sanitizer memcheck and racecheck, a multi-process NCCL check, then bench; full logs
# under $OUT, a short table last.
# Usage: cuda_kernels/run_device.sh [path/to/zfetch-gpu] [machine-name]
set -u
BIN=${1:-build/gpu-carry/zfetch-gpu}
MACHINE=${2:-}
OUT=${OUT:-/tmp/zfetch-gpu-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0  # never NVLink multicast (device KINDS.md)
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv \
  >"$OUT/gpu.txt" 2>&1
nvidia-smi topo -m >>"$OUT/gpu.txt" 2>&1
declare -A rc
step() {  # step NAME LIMIT_S CMD...: runs CMD with a time limit, log in $OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc[$name]=$?
  tail -n 12 "$OUT/$name.log"
  echo "=== $name: rc=${rc[$name]} in $((SECONDS - t0)) s"
}
step verify 240 "$BIN" verify --buckets 10000 --nccl-buckets 300
step persistent 60 "$BIN" verify --buckets 2000 --no-nccl --variant 1
step memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$BIN" verify --buckets 300 --threads 4 --no-nccl
step racecheck 100 compute-sanitizer --tool racecheck --error-exitcode 9 \
  "$BIN" verify --buckets 100 --threads 2 --no-nccl
step launch 120 "$BIN" launch -n "$ngpu" -- verify --nccl-buckets 200
step bench 300 "$BIN" bench --out "$OUT/calibration.json" ${MACHINE:+--machine "$MACHINE"}
echo
echo "#################### summary ($ngpu GPU(s)) ####################"
cat "$OUT/gpu.txt" | head -3
for s in verify persistent memcheck racecheck launch bench; do printf '%-10s rc=%s\n' "$s" "${rc[$s]}"; done
grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log"
grep -h -E "#wrong|# wrong" "$OUT/verify.log" "$OUT/persistent.log" "$OUT/launch.log" | cut -c1-200
sed -n '/^# device/,$p' "$OUT/bench.log"
