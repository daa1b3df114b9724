"""Checks the scenarios a recording wrote against the traces it recorded: for every run and rank of an
archive made by record_corpus.py, `zfetch run` of scenario.rankR.yaml under the run's policy, then
`zfetch diff` of the recorded trace.rankR.jsonl against the simulated one (recorded kinds, ids ignored:
DeepSpeed numbers modules and params per process). A written scenario has no rank conditions (it is
what rank R ran), so the simulator runs it as rank 0, and rank R's trace is compared as rank 0's.

    python3 tools/recorder/check_recorded.py ARCHIVE.tgz --zfetch BIN [--rewrite] [--known-difference RUN ...]
        [--show N]

RUN is KEY.POLICY. --rewrite writes every scenario again from its scenario.rankR.observed.json with this
tree's writer (python3 -m zfetch_record.rewrite) before running it. Exit 0 when every written scenario
diffs equal except the known differences (each of which must still differ), 1 otherwise, 2 when the
archive cannot be read or holds no scenario."""

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in tools/recorder

from zfetch_record.scenario_writer import scenario_from_observations  # noqa: E402

RANK_FILE = re.compile(r"scenario\.rank(\d+)\.yaml$")


def check_rank(zfetch, run_dir, rank, policy, work):
    """(verdict, first lines of the diff): verdict equal, differ or error."""
    scenario = os.path.join(run_dir, f"scenario.rank{rank}.yaml")
    recorded = os.path.join(run_dir, f"trace.rank{rank}.jsonl")
    simulated = os.path.join(work, f"simulated.rank{rank}.jsonl")
    if not os.path.exists(recorded):
        return "error", [f"{recorded}: missing"]
    if rank != 0:
        # A written scenario has no rank conditions, so the simulator runs every rank as rank 0: the
        # rank's own trace is compared as rank 0's.
        as_rank0 = os.path.join(work, f"recorded.rank{rank}.as_rank0.jsonl")
        with open(recorded) as src, open(as_rank0, "w") as dst:
            for line in src:
                dst.write(line.replace(f'"rank":{rank},', '"rank":0,', 1))
        recorded = as_rank0
    run = subprocess.run([zfetch, "run", scenario, "--discovery", policy, "--trace", simulated],
                         capture_output=True, text=True)
    if run.returncode not in (0, 1) or not os.path.exists(simulated):
        return "error", [f"zfetch run exit {run.returncode}"] + (run.stderr or run.stdout).splitlines()[:6]
    diff = subprocess.run([zfetch, "diff", recorded, simulated, "--rank", "0", "--kinds", "recorded",
                           "--ignore-ids"], capture_output=True, text=True)
    lines = diff.stdout.splitlines()
    if diff.returncode == 0:
        return "equal", lines[-1:]
    if diff.returncode == 1:
        return "differ", lines
    return "error", [f"zfetch diff exit {diff.returncode}"] + diff.stderr.splitlines()[:6]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("archive")
    ap.add_argument("--zfetch", required=True)
    ap.add_argument("--rewrite", action="store_true")
    ap.add_argument("--known-difference", nargs="*", default=[])
    ap.add_argument("--show", type=int, default=8, help="diff lines shown per differing rank")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with tarfile.open(args.archive) as tf:
                tf.extractall(tmp, filter="data")
        except (OSError, tarfile.TarError) as exc:
            print(f"{args.archive}: error: {exc}", file=sys.stderr)
            return 2
        root = os.path.join(tmp, "recorded")
        runs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) if os.path.isdir(
            root) else []
        counts = {"equal": 0, "differ": 0, "error": 0}
        failed, known_seen, checked_runs = [], set(), 0
        for name in runs:
            run_dir = os.path.join(root, name)
            with open(os.path.join(run_dir, "result.json")) as f:
                result = json.load(f)
            ranks = sorted(int(m.group(1)) for m in map(RANK_FILE.search, os.listdir(run_dir)) if m)
            if not ranks:
                print(f"{name}: no scenario written ({result.get('outcome')}: "
                      f"{(result.get('exc_str') or '').splitlines()[:1]})")
                continue
            checked_runs += 1
            verdicts = []
            for rank in ranks:
                if args.rewrite:
                    with open(os.path.join(run_dir, f"scenario.rank{rank}.observed.json")) as f:
                        text = scenario_from_observations(json.load(f))
                    with open(os.path.join(run_dir, f"scenario.rank{rank}.yaml"), "w") as f:
                        f.write(text)
                verdict, lines = check_rank(args.zfetch, run_dir, rank, result["policy"], tmp)
                counts[verdict] += 1
                verdicts.append(verdict)
                if verdict != "equal":
                    print(f"{name} rank {rank}: {verdict} ({result.get('outcome')})")
                    for line in lines[:args.show]:
                        print(f"    {line[:300]}")
            differs = any(v != "equal" for v in verdicts)
            if name in args.known_difference:
                known_seen.add(name)
                if not differs:
                    print(f"{name}: listed as a known difference but every rank is equal now")
                    failed.append(name)
            elif differs:
                failed.append(name)
        for name in sorted(set(args.known_difference) - known_seen):
            print(f"{name}: listed as a known difference but not in the archive")
            failed.append(name)
        total = sum(counts.values())
        print(f"== {checked_runs} runs with scenarios of {len(runs)} recorded; {total} ranks: "
              f"{counts['equal']} equal, {counts['differ']} differ, {counts['error']} errors"
              + (f"; {len(args.known_difference)} known differences" if args.known_difference else ""))
        if total == 0:
            return 2
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
