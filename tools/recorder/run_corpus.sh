#!/usr/bin/env bash
# Every converted scenario (tools/recorder/corpus, made by scenario_to_json.py) on real
# DeepSpeed, under both discovery policies, on CPU ranks with gloo: one torchrun per world size, all in
# parallel, within BUDGET_S (default 450 s) of wall time.  Needs the DeepSpeed snapshot in .dsenv/.ds
# and the pydantic/hjson stand-ins in .dsenv (docs/deepspeed-validation.md); from anywhere:
#
#     RESULTS_DIR=DIR bash tools/recorder/run_corpus.sh
#
# Results: DIR/corpus.tgz (per scenario and policy: result JSON, rank-0 trace; logs; manifest) and
# DIR/notes.tgz (the recorder's side notes); DIR defaults to ./corpus-results.  Compare with
#     python3 tools/recorder/compare_real.py --corpus corpus.tgz
# Extra arguments go to corpus_driver.py (e.g. --only KEY ..., --worlds 2).
set -u
# RESULTS_DIR is taken relative to where the script is started.
OUTDIR=$(realpath -m "${RESULTS_DIR:-corpus-results}"); mkdir -p "$OUTDIR"
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/.dsenv/.ds:$PWD/.dsenv:$PWD/tools/recorder
export DS_ACCELERATOR=cpu CUDA_VISIBLE_DEVICES= PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
rm -rf /tmp/zcorpus /tmp/zfetch_corpus_ckpt
python3 -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
cat .dsenv/.ds/SNAPSHOT_COMMIT 2>/dev/null
python3 tools/recorder/corpus_driver.py --out "$OUTDIR" --budget "${BUDGET_S:-450}" "$@"
