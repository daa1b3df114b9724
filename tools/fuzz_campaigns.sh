#!/usr/bin/env bash
# Long libFuzzer campaigns: every target of the `fuzz` preset until it has run EXECS inputs (or for
# at most SECONDS), side by side, each in libFuzzer's fork mode over its share of the cores, seeded
# with the same files and dictionaries as tools/check's short campaigns. Run from the source root:
#
#     bash tools/fuzz_campaigns.sh BIN_DIR OUT_DIR [EXECS] [SECONDS] [target=workers ...]
#
# BIN_DIR holds the zfetch_*_fuzzer binaries (build/fuzz/tests/fuzz). OUT_DIR receives per target
# its log, its corpus and any crash, timeout or leak input (crash-*, timeout-*, leak-*), and
# summary.txt: per target the executions, the seconds, the rate and the crashes. A crash does not
# end a campaign (-ignore_crashes=1): each is kept and counted. Default split of 16 cores below.
set -u
BIN=$(cd "$1" && pwd)
mkdir -p "$2"
RESULTS=$(cd "$2" && pwd)
EXECS=${3:-10000000}
SECONDS_MAX=${4:-420}
shift $(($# < 4 ? $# : 4))
declare -A workers=([scenario]=4 [trace_reader]=2 [ds_config]=3 [timeline]=5 [sweep_set]=2)
for kv in "$@"; do workers[${kv%%=*}]=${kv#*=}; done
declare -A seeds=([scenario]="scenarios tests/cli/scenarios"
                  [trace_reader]="scenarios/real scenarios/seed tests/cli/traces"
                  [ds_config]="tests/fuzz/corpus/ds_config" [timeline]="scenarios/calibration"
                  [sweep_set]="tests/fuzz/corpus/sweep_set")
declare -A dicts=([scenario]=scenario [trace_reader]=trace [ds_config]=ds_config
                  [timeline]=timeline [sweep_set]=sweep_set)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
declare -A pids
for t in "${!workers[@]}"; do
  mkdir -p "$RESULTS/$t/corpus"
  # shellcheck disable=SC2046,SC2086
  (cd "$RESULTS/$t" && exec "$BIN/zfetch_${t}_fuzzer" -fork="${workers[$t]}" -ignore_crashes=1 \
     -dict="$OLDPWD/tests/fuzz/${dicts[$t]}.dict" -max_total_time="$SECONDS_MAX" -timeout=10 \
     -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$PWD/" corpus \
     $(for s in ${seeds[$t]}; do echo "$OLDPWD/$s"; done) > log.txt 2>&1) &
  pids[$t]=$!
done
# Fork mode reports the executions of all its jobs as "#N" at the start of its status lines: stop
# a target once it reached EXECS.
executed() { grep -ao '^#[0-9]*' "$RESULTS/$1/log.txt" 2>/dev/null | tail -n 1 | tr -d '#'; }
start=$(date +%s)
declare -A took
while :; do
  running=0
  for t in "${!pids[@]}"; do
    [ -n "${took[$t]:-}" ] && continue
    if ! kill -0 "${pids[$t]}" 2>/dev/null; then
      took[$t]=$(($(date +%s) - start))
    elif [ "$(executed "$t")" -ge "$EXECS" ] 2>/dev/null; then
      took[$t]=$(($(date +%s) - start))
      kill -INT "${pids[$t]}"
    else
      running=1
    fi
  done
  [ $running = 0 ] && break
  sleep 2
done
wait
{
  printf '%-13s %12s %8s %10s %8s\n' target executions seconds exec/s crashes
  for t in scenario trace_reader ds_config timeline sweep_set; do
    n=$(executed "$t")
    crashes=$(find "$RESULTS/$t" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' | wc -l)
    timeouts=$(find "$RESULTS/$t" -maxdepth 1 -name 'timeout-*' | wc -l)
    printf '%-13s %12s %8s %10s %8s (timeouts %s, workers %s)\n' "$t" "${n:-0}" "${took[$t]}" \
      $(( ${n:-0} / (${took[$t]} > 0 ? ${took[$t]} : 1) )) "$crashes" "$timeouts" "${workers[$t]}"
  done
} | tee "$RESULTS/summary.txt"
