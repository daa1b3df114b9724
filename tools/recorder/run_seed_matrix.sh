#!/usr/bin/env bash
# Both seed runs (fresh processes, exact ids) and the validation matrix, 2 CPU ranks
# with gloo.  Needs the DeepSpeed snapshot in .dsenv/.ds and the pydantic/hjson stand-ins in .dsenv
# (docs/deepspeed-validation.md).  Results in RESULTS_DIR (default ./seed-results): results.tar.gz
# (everything), log.txt, the seed exception files.
set -u
# RESULTS_DIR is taken relative to where the script is started.
OUTDIR=$(realpath -m "${RESULTS_DIR:-seed-results}"); mkdir -p "$OUTDIR"
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/.dsenv/.ds:$PWD/.dsenv:$PWD/tools/recorder
export DS_ACCELERATOR=cpu CUDA_VISIBLE_DEVICES= PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
R=/tmp/zres; rm -rf "$R" /tmp/zfetch_ckpt; mkdir -p "$R"; L=$R/log.txt
run() {
  local limit=$1; shift
  echo "=== $* (limit ${limit}s) $(date +%T)" >>"$L"
  timeout "$limit" python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
    tools/recorder/issue8874.py "$@" --out "$R" >>"$L" 2>&1
  echo "rc=$? for $* $(date +%T)" >>"$L"
}
python3 -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])' >>"$L" 2>&1
cat .dsenv/.ds/SNAPSHOT_COMMIT >>"$L"
for P in resident-skip residency-independent; do
  run "${SEED_LIMIT:-120}" seed --policy $P --offload cpu
  if [ -e "$R/seed.$P.init-failed" ]; then run "${SEED_LIMIT:-120}" seed --policy $P --offload none; fi
done
[ "${SKIP_MATRIX:-0}" = 1 ] || run "${MATRIX_LIMIT:-300}" matrix
(cd /tmp && tar czf "$OUTDIR/results.tar.gz" zres)
cp "$L" "$OUTDIR/"; cp "$R"/seed.*.exc.txt "$OUTDIR/" 2>/dev/null
grep -a -h "INFO\|SEED\|MATRIX\|EXCEPTION\|rc=\|===\|zfetch_record\|Error\|error" "$L" | cut -c1-400 | tail -n 80
