#!/usr/bin/env bash
# One device call for `zfetch-gpu replay`: every *.schedule.json under DIR, each with the
# calibration measured in its own run, first with the default graph (implied dependencies left
# out), then again with --all-edges (every stream-order and wait dependency, as a capture with one
# event per wait records them; for comparison); logs and results packed into $OUT/replay.tgz (the
# device tool returns at most 8 files), the RESULT tables printed last.
# usage: replay_device.sh ZFETCH_GPU DIR [REPEATS [VARIANTS]]   (VARIANTS: "default all-edges")
set -u
bin=$1
dir=$2
repeats=${3:-15}
variants=${4:-"default all-edges"}
out=${OUT:-/tmp/zfetch-replay-out}
work=/tmp/zfetch-replay
rm -rf "$work"
mkdir -p "$out" "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$work/gpu.txt" 2>&1
# SM clock and power every 50 ms while the replays run (the card's state as found; never set).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 50 \
  >"$work/clocks.csv" 2>&1 &
smi=$!
start=$(date +%s)
for v in $variants; do
  flag=""
  [ "$v" = all-edges ] && flag="--all-edges"
  for f in "$dir"/*.schedule.json; do
    n=$(basename "$f" .schedule.json).$v
    echo "== $n" >&2
    timeout 150 "$bin" replay "$f" --repeats "$repeats" $flag \
      --calibration-out "$work/$n.calibration.json" --out "$work/$n.result.json" >"$work/$n.log" 2>&1
    echo "rc=$?" >>"$work/$n.log"
    tail -n 2 "$work/$n.log" >&2
  done
done
echo "replays: $(($(date +%s) - start)) s" >"$work/time.txt"
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
tar czf "$out/replay.tgz" -C "$work" .
cat "$work/gpu.txt" "$work/time.txt"
awk -F', ' '{c[NR]=$2+0} END {n=asort(c); if (n) printf "SM clock over the run (MHz): min %d median %d max %d (%d samples)\n", c[1], c[int((n+1)/2)], c[n], n}' "$work/clocks.csv"
for v in $variants; do
  echo "== $v"
  cat "$work"/*."$v".log | grep -E '^(# device|# graph|# replica|rc=[1-9])'
  cat "$work"/*."$v".log | grep '^RESULT' | awk '{print $2, $3, $5, $6, $7}' | { if command -v column >/dev/null; then column -t; else cat; fi; }
done
