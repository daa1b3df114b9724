#!/usr/bin/env bash
# Checks the zfetch_record package end to end on a machine with PyTorch and a DeepSpeed checkout
# (CPU ranks with gloo are enough), from the repository root:
#
#     DEEPSPEED_PATH=/path/to/deepspeed/checkout[:more] bash tools/recorder/check_package.sh RESULTS_DIR [ZFETCH]
#
# 1. a fresh virtual environment and `pip install --no-deps --no-build-isolation tools/recorder`;
# 2. `python3 -m zfetch_record.from_model` on the three example architectures
#    (tools/recorder/examples/architectures.py) into RESULTS_DIR/models/;
# 3. the seed as a plain training script (examples/train_seed.py) under torchrun, 2 ranks, with only
#    ZFETCH_RECORD set, once as DeepSpeed is and once with ZFETCH_RECORD_RESIDENCY_INDEPENDENT=1:
#    RESULTS_DIR/seed.POLICY/{trace,scenario}.rankR.*;
# 4. the recorder's overhead: --bench steps with and without ZFETCH_RECORD;
# 5. with a zfetch binary (ZFETCH), `zfetch run` of each written scenario and `zfetch diff` against
#    the recorded trace;
# 6. with CORPUS_BUDGET_S set, the converted corpus (tools/recorder/corpus) as user runs: one process
#    group per scenario and policy with only ZFETCH_RECORD set (record_corpus.py, at most that many
#    seconds of starts; CORPUS_KEYS="KEY ..." for some only; CORPUS_ARGS for more of its options), into
#    RESULTS_DIR/corpus/recorded.tgz;
#    compare it anywhere with
#    `python3 tools/recorder/check_recorded.py RESULTS_DIR/corpus/recorded.tgz --zfetch ZFETCH`.
# ONLY_CORPUS=1 skips steps 2-5.
set -u
RES=${1:?usage: check_package.sh RESULTS_DIR [ZFETCH]}
ZFETCH=${2:-}
cd "$(dirname "$0")/../.."
mkdir -p "$RES/models"
export DS_ACCELERATOR=cpu CUDA_VISIBLE_DEVICES= PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
export PYTHONPATH=${DEEPSPEED_PATH:-}
LOG=$RES/log.txt
VENV=$(mktemp -d)/venv
step() { echo "=== $* $(date +%T)" | tee -a "$LOG"; }

step venv
python3 -m venv --system-site-packages "$VENV" >>"$LOG" 2>&1
PY=$VENV/bin/python
SITE=$("$PY" -c 'import site; print(site.getsitepackages()[0])')
# When python3 is itself a virtual environment (torch installed there), the new one's "system" site
# is the base interpreter's: make the outer environment's packages visible too.
if ! "$PY" -c 'import torch' 2>/dev/null; then
  python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' >"$SITE/outer_environment.pth"
fi
if "$VENV/bin/pip" install --no-deps --no-build-isolation ./tools/recorder >>"$LOG" 2>&1; then
  echo "pip install: ok" | tee -a "$LOG"
else
  # Without setuptools and wheel the package cannot be built here: lay it out as pip would.
  echo "pip install: FAILED (see log); copying the package into $SITE instead" | tee -a "$LOG"
  cp -r tools/recorder/zfetch_record tools/recorder/zfetch_record_autostart.py tools/recorder/zfetch_record.pth "$SITE/"
fi
"$PY" -c 'import zfetch_record, zfetch_record_autostart, site, os, glob; print("installed:", zfetch_record.__file__, glob.glob(os.path.join(site.getsitepackages()[0], "zfetch_record.pth")))' 2>&1 | tee -a "$LOG"

if [ "${ONLY_CORPUS:-0}" != 1 ]; then
step from_model
(cd tools/recorder/examples &&
 "$PY" -m zfetch_record.from_model architectures:llama_lora --device meta --name llama-32l-lora \
   --deepspeed-config ../../../scenarios/models/hf_ds_config_zero3.json --set gradient_accumulation_steps=8 \
   --schedule "train=1,save=resume,restart,load=resume,train=1" --out "$RES/models/llama_32l_lora.yaml" &&
 "$PY" -m zfetch_record.from_model architectures:gpt2_tied --device meta --name gpt2-tied \
   --set zero_optimization.stage3_param_persistence_threshold=100000 --schedule "train=2" \
   --out "$RES/models/gpt2_tied.yaml" &&
 "$PY" -m zfetch_record.from_model architectures:mixtral_moe --device cpu --name mixtral-moe \
   --set zero_optimization.stage3_param_persistence_threshold=0 --schedule "train=2,eval=1" \
   --out "$RES/models/mixtral_moe.yaml") >>"$LOG" 2>&1; echo "from_model rc=$?" | tee -a "$LOG"
wc -l "$RES"/models/*.yaml | tee -a "$LOG"

step seed runs and bench
run_seed() {  # POLICY_DIR EXTRA_ENV...
  local dir=$1; shift
  env "$@" "$PY" -m torch.distributed.run --standalone --nproc_per_node=2 tools/recorder/examples/train_seed.py \
    --checkpoint-dir "$RES/$dir.ckpt" >"$RES/$dir.log" 2>&1
  echo "$dir rc=$?" >>"$LOG"
}
run_seed seed.resident-skip ZFETCH_RECORD="$RES/seed.resident-skip" &
run_seed seed.residency-independent ZFETCH_RECORD="$RES/seed.residency-independent" ZFETCH_RECORD_RESIDENCY_INDEPENDENT=1 &
bench() {  # NAME EXTRA_ENV...
  local name=$1; shift
  env "$@" "$PY" -m torch.distributed.run --standalone --nproc_per_node=2 tools/recorder/examples/train_seed.py \
    --bench "${BENCH_STEPS:-50}" >"$RES/bench.$name.log" 2>&1
  echo "bench $name rc=$?" >>"$LOG"
}
(bench plain; bench recorded ZFETCH_RECORD="$RES/bench.recorded") &
wait
rm -rf "$RES"/*.ckpt
grep -h "bench rank 0" "$RES"/bench.*.log | tee -a "$LOG"
echo "fetches in a bench step: $(grep -c '"kind":"fetch"' "$RES/bench.recorded/trace.rank0.jsonl" 2>/dev/null)" | tee -a "$LOG"
grep -h "DeepSpeed raised\|tracing error at\|pass\|Error\|error" "$RES"/seed.*.log | head -20 | tee -a "$LOG"
ls "$RES"/seed.* | tee -a "$LOG"

if [ -n "$ZFETCH" ]; then
  step zfetch run and diff
  for p in resident-skip residency-independent; do
    d=$RES/seed.$p
    "$ZFETCH" run "$d/scenario.rank0.yaml" --discovery "$p" --trace "$d/simulated.rank0.jsonl" >"$d/run.txt" 2>&1
    echo "run $p rc=$?" | tee -a "$LOG"
    "$ZFETCH" diff "$d/trace.rank0.jsonl" "$d/simulated.rank0.jsonl" --rank 0 --kinds recorded --ignore-ids >"$d/diff.txt" 2>&1
    echo "diff $p rc=$?" | tee -a "$LOG"; head -5 "$d/diff.txt" | tee -a "$LOG"
  done
fi
fi

if [ -n "${CORPUS_BUDGET_S:-}" ]; then
  step corpus
  "$PY" tools/recorder/record_corpus.py --out "$RES/corpus" --budget "$CORPUS_BUDGET_S" ${CORPUS_KEYS:+--only $CORPUS_KEYS} ${CORPUS_ARGS:-} 2>&1 | tee "$RES/corpus.log" | tail -n 25 | tee -a "$LOG"
fi
