#!/usr/bin/env bash
# libFuzzer campaigns: every target of the `fuzz` preset until it has run EXECS inputs (or for at
# most SECONDS), all five side by side, each in libFuzzer's in-process parallel mode (-jobs=W
# -workers=W, every job -runs=EXECS/W). Run from the source root:
#
#     bash tools/fuzz_campaigns.sh BIN_DIR OUT_DIR [EXECS] [SECONDS] [cores=N] [workers=W] \
#         [target=W ...]
#
# BIN_DIR holds the zfetch_*_fuzzer binaries (build/fuzz/tests/fuzz). By default the N cores
# (the machine's) are shared out in proportion to each target's cost per execution (cost_us
# below, measured on one core), rounded up, so that every target reaches EXECS in about
# the same time; `workers=W` gives every target W jobs instead, `target=W` one target (`target=0`
# leaves it out, so that a campaign can run a subset of the targets on all the cores). OUT_DIR
# receives per target its seeds, its corpus, each job's log (fuzz-J.log), any crash, timeout or
# leak input (crash-*, timeout-*, leak-*, oom-*), and summary.txt: per target the executions
# (the sum of every job's stat::number_of_executed_units), the seconds, the rate, the inputs
# saved as crashes (crash-*, leak-*, oom-*), and by class what was found: failed checks (a
# FUZZ_CHECK of the harness, an expectation of zfetch's own), sanitizer reports (ASan, UBSan,
# LSan) and timeouts; then the jobs and the command. Exit 1 when a target found anything.
#
# Why in-process jobs and not -fork: fork mode restarts a process and reloads the corpus for
# every few hundred inputs, which cost more than the inputs themselves. Why -entropic=0: with the
# tens of thousands of coverage features these targets have, entropic scheduling's bookkeeping
# took half of every execution. Seeds are only the files of at most the target's -max_len bytes
# (libFuzzer would otherwise cut the big traces and archives of scenarios/ down to noise).
set -u
BIN=$(cd "$1" && pwd)
mkdir -p "$2"
RESULTS=$(cd "$2" && pwd)
EXECS=${3:-10000000}
SECONDS_MAX=${4:-420}
shift $(($# < 4 ? $# : 4))
targets=(scenario trace_reader ds_config timeline sweep_set)
# CPU microseconds per execution and core under ASan + UBSan, sustained over a 555 s campaign on
# 16 cores from grown corpora (docs/fuzz.md, "10^7 campaign"); only their ratios matter.
declare -A cost_us=([scenario]=930 [trace_reader]=30 [ds_config]=265
                    [timeline]=307 [sweep_set]=217)
cores=$(nproc)
every=
declare -A workers
for kv in "$@"; do
  case $kv in
    cores=*) cores=${kv#*=} ;;
    workers=*) every=${kv#*=} ;;
    *) workers[${kv%%=*}]=${kv#*=} ;;
  esac
done
total_cost=0
for t in "${targets[@]}"; do total_cost=$((total_cost + cost_us[$t])); done
for t in "${targets[@]}"; do
  # Rounded up: a target short of a job would finish last.
  : "${workers[$t]:=${every:-$(((cores * cost_us[$t] + total_cost - 1) / total_cost))}}"
done
active=()
for t in "${targets[@]}"; do [ "${workers[$t]}" = 0 ] || active+=("$t"); done
if [ ${#active[@]} = 0 ]; then
  echo "every target has 0 jobs: nothing to run" >&2
  exit 2
fi
# Seed folders (files matching the pattern, at most max_len bytes), dictionary and -max_len.
declare -A seeds=([scenario]="scenarios tests/cli/scenarios tests/fuzz/regressions/scenario"
                  [trace_reader]="scenarios/real scenarios/seed tests/cli/traces tests/fuzz/regressions/trace"
                  [ds_config]="tests/fuzz/corpus/ds_config tests/fuzz/regressions/ds_config"
                  [timeline]="tests/fuzz/corpus/timeline tests/fuzz/regressions/timeline"
                  [sweep_set]="tests/fuzz/corpus/sweep_set tests/fuzz/regressions/sweep_set")
declare -A patterns=([scenario]='*.yaml' [trace_reader]='*.jsonl' [ds_config]='*'
                     [timeline]='*.json' [sweep_set]='*')
declare -A dicts=([scenario]=scenario [trace_reader]=trace [ds_config]=ds_config
                  [timeline]=timeline [sweep_set]=sweep_set)
# About the largest seed, so that a long campaign's corpus cannot drift to inputs that cost
# many times what the seeds do (a valid calibration of 9 KiB took 4.5 ms): the timeline's seeds
# are the calibrations of scenarios/ cut to three points per curve (tests/fuzz/corpus/timeline),
# the scenario's the files of scenarios/ up to 1 KiB (101 of them; at 4 KiB an execution
# averaged 740 us); a --set line is short, and a longer one only makes the key's did-you-mean
# search slower.
declare -A max_len=([scenario]=1024 [trace_reader]=4096 [ds_config]=1024 [timeline]=2400
                    [sweep_set]=128)
# Allocation stacks of 2 frames, not 30, and a 32 MiB quarantine, not 256: recording every
# allocation's stack and cycling freed memory through a large quarantine took a sixth of
# ds_config's time (and 8 frames against 2 another eighth of the scenario target's). Leaks stay
# findings. A crash input run again alone (`fuzzer FILE`, as ctest does) gets ASan's full
# reports.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2:quarantine_size_mb=32
declare -A commands
rm -f "$RESULTS/failed"
# A folder's corpus carries over from an earlier campaign; its logs and findings do not.
for t in "${active[@]}"; do
  dir=$RESULTS/$t
  rm -rf "$dir/seeds" "$dir"/fuzz-*.log "$dir"/crash-* "$dir"/leak-* "$dir"/oom-* "$dir"/timeout-*
  mkdir -p "$dir/corpus" "$dir/seeds"
  for s in ${seeds[$t]}; do
    [ -d "$s" ] || continue
    find "$s" -type f -name "${patterns[$t]}" -size -$((max_len[$t] + 1))c -print0 |
      while IFS= read -r -d '' f; do cp "$f" "$dir/seeds/${f//\//_}"; done
  done
done
start=$(date +%s)
for t in "${active[@]}"; do
  w=${workers[$t]}
  dir=$RESULTS/$t
  commands[$t]="zfetch_${t}_fuzzer -jobs=$w -workers=$w -runs=$(((EXECS + w - 1) / w)) \
-max_total_time=$SECONDS_MAX -entropic=0 -max_len=${max_len[$t]} \
-dict=tests/fuzz/${dicts[$t]}.dict -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus seeds"
  (
    cd "$dir" || exit 2
    # shellcheck disable=SC2086
    "$BIN/zfetch_${t}_fuzzer" -jobs="$w" -workers="$w" -runs=$(((EXECS + w - 1) / w)) \
      -max_total_time="$SECONDS_MAX" -entropic=0 -max_len="${max_len[$t]}" \
      -dict="$OLDPWD/tests/fuzz/${dicts[$t]}.dict" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/" corpus seeds > log.txt 2>&1
    date +%s > end
  ) &
done
wait
{
  printf '%-13s %12s %8s %10s %8s\n' target executions seconds exec/s crashes
  for t in "${active[@]}"; do
    dir=$RESULTS/$t
    n=$(cat "$dir"/fuzz-*.log 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' |
        awk '{s += $1} END {print s + 0}')
    took=$(($(cat "$dir/end") - start))
    crashes=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \) | wc -l)
    timeouts=$(find "$dir" -maxdepth 1 -name 'timeout-*' | wc -l)
    # A failed check aborts, which libFuzzer reports as a deadly signal: it is counted once, as
    # a failed check, and a sanitizer report is one of the sanitizers' own summaries.
    checks=$(cat "$dir"/fuzz-*.log 2>/dev/null | grep -c ': fuzz check failed: ')
    reports=$(cat "$dir"/fuzz-*.log 2>/dev/null | grep -cE '^SUMMARY: [A-Za-z]+Sanitizer')
    printf '%-13s %12s %8s %10s %8s (failed checks %s, sanitizer reports %s, timeouts %s, jobs %s)\n' \
      "$t" "$n" "$took" $((n / (took > 0 ? took : 1))) "$crashes" "$checks" "$reports" \
      "$timeouts" "${workers[$t]}"
    [ $((crashes + checks + reports + timeouts)) = 0 ] || touch "$RESULTS/failed"
  done
  echo
  echo "UBSAN_OPTIONS=$UBSAN_OPTIONS ASAN_OPTIONS=$ASAN_OPTIONS"
  for t in "${active[@]}"; do echo "$t: ${commands[$t]}"; done
} | tee "$RESULTS/summary.txt"
if [ -e "$RESULTS/failed" ]; then
  rm -f "$RESULTS/failed"
  echo "a target crashed, failed a check, hung or had a sanitizer report: see $RESULTS/*/fuzz-*.log" >&2
  exit 1
fi
