#!/usr/bin/env bash
# Every GPU check, timing, baseline and replay of zfetch in one go, on any machine with an NVIDIA
# GPU, CUDA's compute-sanitizer and PyTorch (docs/gpu.md "Running everything"). Builds nothing:
# give it the folder of a `cmake --preset gpu && cmake --build --preset gpu` build.
#
# usage: tools/gpu/run_all.sh [BUILD_DIR [RESULTS_DIR [OTHER_CALIBRATIONS_DIR]]]
#   BUILD_DIR            holds tools/zfetch and tools/gpu/zfetch-gpu (default build/gpu)
#   RESULTS_DIR          logs, calibrations, schedules and results (default BUILD_DIR/results)
#   OTHER_CALIBRATIONS_DIR  replay calibrations (replay.wW.json) of another run or machine: the
#                        replay set is predicted with them too (a second column)
# Steps: verify (random buckets, bench's sizes, the NCCL path), compute-sanitizer memcheck in the
# per-allocation mode, the planted bugs (each must be reported), bench (calibration.json), the
# replay calibrations (bench --replay-world W), the replay set (schedules written by `zfetch run
# --calibration`, then replayed), the PyTorch baselines; the tables last. Exit 1 when a check
# that must pass failed (a planted bug not reported counts), else 0. REPLAY_ONLY=1: only the replay
# calibrations and the replay set.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/gpu}
results=${2:-$build/results}
other=${3:-}
zfetch=$build/tools/zfetch
gpu=$build/tools/gpu/zfetch-gpu
mkdir -p "$results/replay"
export NCCL_NVLS_ENABLE=0  # never NVLink multicast

failed=0
step() {  # step NAME LIMIT_S EXPECTED_RC CMD...: runs CMD with a time limit, log in NAME.log
  local name=$1 limit=$2 want=$3
  shift 3
  local t0=$SECONDS
  timeout "$limit" "$@" >"$results/$name.log" 2>&1
  local rc=$?
  local verdict=ok
  if [ "$rc" != "$want" ]; then
    verdict="FAILED (expected rc $want)"
    failed=1
  fi
  printf '%-24s rc=%-3s %4d s  %s\n' "$name" "$rc" $((SECONDS - t0)) "$verdict" | tee -a "$results/steps.txt"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu \
  --format=csv >"$results/gpu.txt" 2>&1
ngpu=$(nvidia-smi -L | wc -l)
: >"$results/steps.txt"

# Correctness: random buckets (W 1..64, fp32/bf16/fp16, odd sizes, misalignment) and the NCCL path;
# every bucket size bench times (4 KiB .. 1 GiB); one process per GPU; the per-allocation mode
# under memcheck; then each planted bug, which verify must report (exit 1), and the planted overrun
# under memcheck in the per-allocation mode, which memcheck must report (exit 9).
if [ "${REPLAY_ONLY:-0}" != 1 ]; then
step verify 300 0 "$gpu" verify --buckets 10000 --nccl-buckets 300
step verify_bench_sizes 300 0 "$gpu" verify --bench-sizes
step verify_multiprocess 120 0 "$gpu" launch -n "$ngpu" -- verify --nccl-buckets 200
step memcheck 300 0 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$gpu" verify --buckets 300 --threads 4 --no-nccl --per-allocation
for bug in overrun padding race; do
  step "planted_$bug" 120 1 "$gpu" verify --buckets 300 --plant "$bug"
done
step memcheck_planted_overrun 200 9 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$gpu" verify --buckets 20 --threads 1 --no-nccl --per-allocation --plant overrun
fi

# Timings: bench (kernel vs cudaMemcpyAsync, NCCL, the small-params baselines) and the PyTorch
# baselines on the same buckets.
if [ "${REPLAY_ONLY:-0}" != 1 ]; then
  step bench 400 0 "$gpu" bench --out "$results/calibration.json"
  step torch_baselines 300 0 python3 "$root/tools/gpu/torch_baselines.py" --out "$results/torch_baselines.json"
fi

# The replay set: name=scenario. Each is predicted by the simulator with a replay calibration
# measured here by a separate bench run (never on the schedule), then replayed.
replay_set="
transformer_l8_h2048=tests/cuda/replay_transformer_l8_h2048.yaml
transformer_l16_h1024_nopf=tests/cuda/replay_transformer_l16_h1024_noprefetch.yaml
transformer_l8_h2048_bf16_pf1e7=tests/cuda/replay_transformer_l8_h2048_bf16_pf1e7.yaml
transformer_l8_h2048_bf16_offload=tests/cuda/replay_transformer_l8_h2048_bf16_offload.yaml
transformer_l12_h3072_bf16_w4=tests/cuda/replay_transformer_l12_h3072_bf16_w4.yaml
transformer_l16_h2048_bf16_w2=tests/cuda/replay_transformer_l16_h2048_bf16_w2.yaml
lora_l8_h4096_offload=tests/cuda/replay_lora_l8_h4096_offload.yaml
many_params=scenarios/deepspeed_tests/many_params.yaml
prefetch=scenarios/deepspeed_tests/param_partitioning_base-prefetch.yaml
seed_resident_adapter_resume=scenarios/seed/resident_adapter_resume.yaml
offload_cpu_persistent=scenarios/pr8875/offload_cpu-persistent-nonreentrant.yaml
"
worlds=$(for e in $replay_set; do grep -m1 -E '^world_size:' "$root/${e#*=}" | awk '{print $2}'; done | sort -un)
# Each replay calibration is the median of three bench processes (a process's small fixed costs sit
# at a level of its own: docs/gpu.md "Why, measured"); the processes' own files stay beside it.
for w in $worlds; do
  step "replay_calibration_w$w" 200 0 "$gpu" bench --replay-world "$w" --processes 3 \
    --out "$results/replay.w$w.json"
done
for e in $replay_set; do
  name=${e%%=*}
  scen=$root/${e#*=}
  w=$(grep -m1 -E '^world_size:' "$scen" | awk '{print $2}')
  sched=$results/replay/$name.schedule.json
  # Exit code 1 (DeepSpeed would fail) still writes the schedule.
  "$zfetch" run "$scen" --calibration "$results/replay.w$w.json" --replay-schedule "$sched" \
    >"$results/replay/$name.run.log" 2>&1
  # Three replay processes: a tiny schedule's step times move between processes by a few percent
  # (docs/gpu.md "Results"), so the measurement is the median of the three.
  for k in 1 2 3; do
    step "replay_${name}_$k" 200 0 "$gpu" replay "$sched" --calibration "$results/replay.w$w.json" \
      --out "$results/replay/$name.result.$k.json"
  done
  if [ -n "$other" ] && [ -f "$other/replay.w$w.json" ]; then
    "$zfetch" run "$scen" --calibration "$other/replay.w$w.json" \
      --replay-schedule "$results/replay/$name.other.schedule.json" >/dev/null 2>&1
  fi
done

echo
echo "#################### GPU ($ngpu) ####################"
head -3 "$results/gpu.txt"
echo "== steps"
cat "$results/steps.txt"
echo "== verify"
grep -h -E "#wrong|# wrong|SUMMARY" "$results"/verify*.log "$results"/memcheck*.log "$results"/planted_*.log | cut -c1-220
echo "== bench"
sed -n '/^# device/,$p' "$results/bench.log"
grep -h TORCH "$results/torch_baselines.log"
echo "== replay calibrations"
grep -h "^# replay costs" "$results"/replay_calibration_w*.log
echo "== replay: predicted (simulator, calibration of this run) vs measured"
printf '%-34s %6s %14s %14s %8s %16s %8s\n' schedule W predicted_us measured_us err% other_pred_us err%
for e in $replay_set; do
  name=${e%%=*}
  r=$results/replay/$name.result.1.json
  [ -f "$r" ] || { echo "$name: no result"; continue; }
  python3 - "$results/replay/$name.other.schedule.json" "$name" "$results/replay/$name".result.*.json <<'EOF'
import json, os, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[3:]]
r = runs[0]
pred = r["predicted_median_ns"]
meas = statistics.median([x["measured_median_ns"] for x in runs])  # over the replay processes
other, oerr = "", ""
if os.path.exists(sys.argv[1]):
    s = json.load(open(sys.argv[1]))
    measured = {x["step"]: x["measured_median_ns"] for x in r["steps"]}
    p = statistics.median([x["step_ns"] for x in s["steps"] if x["step"] in measured])
    other, oerr = f"{p / 1e3:.1f}", f"{(p - meas) / meas * 100:+.1f}%"
print(f"{sys.argv[2]:<34} {r['world_size']:>6} {pred / 1e3:>14.1f} {meas / 1e3:>14.1f} "
      f"{(pred - meas) / meas * 100:>+7.1f}% {other:>16} {oerr:>8}")
EOF
done
exit $failed
