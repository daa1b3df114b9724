#!/usr/bin/env bash
# A generated campaign (zfetch fuzz --emit, converted by scenario_to_json.py) on real DeepSpeed, on
# CPU ranks with gloo, split into NGROUPS independent corpus drivers that run side by side (each runs
# one process group per world size over its share of the scenarios), within BUDGET_S seconds.
#
#     zfetch fuzz --emit 300 --seed S --out tests/differential/campaign-S
#     python3 tools/recorder/scenario_to_json.py tests/differential --out JSON_DIR
#     bash tools/recorder/campaign_run.sh JSON_DIR RESULTS_DIR [NGROUPS] [BUDGET_S]
#
# Run from the repository root on any machine with PyTorch and the DeepSpeed snapshot in .dsenv/.ds
# (with the pydantic/hjson stand-ins in .dsenv; docs/deepspeed-validation.md). RESULTS_DIR/campaign.tgz
# then holds, like corpus.tgz, per scenario and policy the result JSON and the rank-0 trace, and
# the manifest; compare it with
#     python3 tools/recorder/compare_real.py --corpus campaign.tgz
set -u
JSON_DIR=$1
OUTDIR=$2
NGROUPS=${3:-8}
BUDGET=${4:-300}
export PYTHONPATH=$PWD/.dsenv/.ds:$PWD/.dsenv:$PWD/tools/recorder
export DS_ACCELERATOR=cpu CUDA_VISIBLE_DEVICES= PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
WORK=/tmp/zfetch_campaign
rm -rf "$WORK" /tmp/zfetch_corpus_ckpt
mkdir -p "$OUTDIR" "$WORK"
python3 -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
cat .dsenv/.ds/SNAPSHOT_COMMIT 2>/dev/null
nproc; python3 -c "import os; print(\"cpus\", os.cpu_count(), len(os.sched_getaffinity(0)))"

# One manifest per group, round-robin over the scenarios (every group gets both world sizes).
python3 - "$JSON_DIR" "$NGROUPS" <<'EOF'
import json, sys
folder, groups = sys.argv[1], int(sys.argv[2])
m = json.load(open(f"{folder}/manifest.json"))
entries = [e for e in m["scenarios"] if "key" in e]
for g in range(groups):
    part = dict(m, scenarios=entries[g::groups])
    json.dump(part, open(f"{folder}/manifest.g{g}.json", "w"), indent=1)
print(f"{len(entries)} scenarios in {groups} groups")
EOF

for g in $(seq 0 $((NGROUPS - 1))); do
  python3 tools/recorder/corpus_driver.py --manifest "$JSON_DIR/manifest.g$g.json" --work "$WORK/g$g" \
    --out "$WORK/out$g" --budget "$BUDGET" > "$OUTDIR/driver.g$g.log" 2>&1 &
done
wait

# One archive for all groups: corpus/<result files>, the whole manifest.
python3 - "$WORK" "$NGROUPS" "$OUTDIR" "$JSON_DIR" <<'EOF'
import collections, glob, json, os, shutil, sys, tarfile
work, groups, out, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
merged = os.path.join(work, "merged")
os.makedirs(merged, exist_ok=True)
for g in range(groups):
    for fn in glob.glob(os.path.join(work, f"g{g}", "results", "*")):
        base = os.path.basename(fn)
        if base in ("started",) or base.endswith(".notes.jsonl") or base.startswith("manifest"):
            continue
        dst = os.path.join(merged, base if not base.startswith(("log.", "complete.")) else f"g{g}.{base}")
        shutil.copy(fn, dst)
shutil.copy(os.path.join(folder, "manifest.json"), os.path.join(merged, "manifest.json"))
with tarfile.open(os.path.join(out, "campaign.tgz"), "w:gz") as tf:
    for fn in sorted(os.listdir(merged)):
        tf.add(os.path.join(merged, fn), arcname=f"corpus/{fn}")
counts = collections.Counter()
for fn in glob.glob(os.path.join(merged, "*.result.json")):
    counts[json.load(open(fn))["outcome"]] += 1
print("== runs:", sum(counts.values()), dict(sorted(counts.items())),
      "campaign.tgz", os.path.getsize(os.path.join(out, "campaign.tgz")), "bytes")
EOF
tail -n 3 "$OUTDIR"/driver.g*.log
