#!/usr/bin/env bash
# One device call for `zfetch-gpu replay`: every *.schedule.json under DIR, each with the
# calibration measured in its own run; logs and results packed into $OUT/replay.tgz (the device
# tool returns at most 8 files), the RESULT table printed last.
# usage: replay_device.sh ZFETCH_GPU DIR [REPEATS]
set -u
bin=$1
dir=$2
repeats=${3:-15}
out=${OUT:-/tmp/zfetch-replay-out}
work=/tmp/zfetch-replay
mkdir -p "$out" "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$work/gpu.txt" 2>&1
# SM clock and power every 50 ms while the replays run (the card's state as found; never set).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 50 \
  >"$work/clocks.csv" 2>&1 &
smi=$!
for f in "$dir"/*.schedule.json; do
  n=$(basename "$f" .schedule.json)
  echo "== $n" >&2
  timeout 150 "$bin" replay "$f" --repeats "$repeats" --calibration-out "$work/$n.calibration.json" \
    --out "$work/$n.result.json" >"$work/$n.log" 2>&1
  echo "rc=$?" >>"$work/$n.log"
  tail -n 3 "$work/$n.log" >&2
done
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
tar czf "$out/replay.tgz" -C "$work" .
cat "$work/gpu.txt"
awk -F', ' '{c[NR]=$2+0} END {n=asort(c); if (n) printf "SM clock over the run (MHz): min %d median %d max %d (%d samples)\n", c[1], c[int((n+1)/2)], c[n], n}' "$work/clocks.csv"
cat "$work"/*.log | grep -E '^(# device|# graph|# replica|RESULT|rc=)'
