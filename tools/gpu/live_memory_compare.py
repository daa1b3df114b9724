#!/usr/bin/env python3
"""Real DeepSpeed's live gathered parameter bytes against zfetch's (docs/gpu.md "Real DeepSpeed").

    live_memory_compare.py extract TRACE.jsonl NOTES.jsonl
        what a recording measured (zfetch_record with ZFETCH_RECORD_LIVE=1): the peak of the
        ``live`` notes per optimizer step, and per step the parameters the root module releases
        after the backward's last module (what is still gathered when the backward ends: what
        recompute attached and nothing released before), as JSON for a runs file;
    live_memory_compare.py check RUNS.json --zfetch ZFETCH [--root DIR]
        simulates every run of RUNS.json (``zfetch run SCENARIO --json --trace``, with the run's
        discovery policy and accelerator) and prints, per run and step, the real peak, zfetch's
        ``peak_live_bytes`` and the error, and the end-of-backward releases of both. Exit 1 when a
        run's peak is off by more than its ``limit_pct``, or its releases differ; 0 otherwise.

A runs file: {"format": "zfetch-real-live-memory", "version": 1, "runs": [{"name", "scenario"
(relative to --root), "discovery", "accelerator", "limit_pct", "real": <extract's output>}, ...]}.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def is_root(event):
    return event.get("module_id") == 0 or event.get("module") in ("", "<root>")


def end_of_backward_releases(events):
    """Per step: the params released in a backward after its last module's backward_post (the
    root's aside: DeepSpeed fires none when the model's input needs no grad), i.e. what stayed
    gathered until the backward's end, and their elements. Release events name no module in
    zfetch's traces, so the position decides."""
    numel, last_post, released = {}, {}, []
    for i, e in enumerate(events):
        kind = e.get("kind")
        if kind in ("gather", "prefetch") and "numel" in e:
            numel[e["param"]] = e["numel"]
        key = (e.get("engine"), e.get("step"), e.get("micro_step"))
        if kind == "backward_post" and not is_root(e):
            last_post[key] = i
        elif kind == "release" and e.get("phase") == "bwd":
            released.append((key, i, e["param"]))
    out = {}
    for key, i, param in released:
        if i > last_post.get(key, len(events)):
            out.setdefault(str(key[1]), set()).add(param)
    return {step: {"params": len(ps), "elements": sum(numel.get(p, 0) for p in ps)}
            for step, ps in sorted(out.items(), key=lambda kv: int(kv[0]))}


def extract(trace, notes):
    peaks = {}
    for n in read_jsonl(notes):
        if n.get("note") == "live":
            step = str(n["step"])
            peaks[step] = max(peaks.get(step, 0), int(n["bytes"]))
    events = [e for e in read_jsonl(trace) if "kind" in e]
    return {"peak_live_bytes": peaks, "end_of_backward_releases": end_of_backward_releases(events)}


def simulate(zfetch, root, run):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "sim.jsonl")
        cmd = [zfetch, "run", os.path.join(root, run["scenario"]), "--json", "--trace", trace,
               "--discovery", run.get("discovery", "resident-skip"), "--accelerator", run.get("accelerator", "gpu")]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
        summary = json.loads(p.stdout)
        events = [e for e in read_jsonl(trace) if "kind" in e]
    peaks = {str(s["step"]): int(s["peak_live_bytes"]) for s in summary["timeline"]["steps"]}
    return {"peak_live_bytes": peaks, "end_of_backward_releases": end_of_backward_releases(events)}


def check(args):
    with open(args.runs) as f:
        runs = json.load(f)["runs"]
    failed = 0
    print(f"{'run':<58} {'step':>4} {'real (B)':>14} {'zfetch (B)':>14} {'error':>8}  end-of-backward releases")
    for run in runs:
        real, sim = run["real"], simulate(args.zfetch, args.root, run)
        worst = 0.0
        for step, r in sorted(real["peak_live_bytes"].items(), key=lambda kv: int(kv[0])):
            z = sim["peak_live_bytes"].get(step)
            err = None if z is None or r == 0 else (z - r) / r * 100
            worst = max(worst, abs(err) if err is not None else float("inf"))
            rel_r = real["end_of_backward_releases"].get(step, {"params": 0, "elements": 0})
            rel_z = sim["end_of_backward_releases"].get(step, {"params": 0, "elements": 0})
            rel = f"{rel_r['params']} params / {rel_r['elements']} elements"
            rel += " (same)" if rel_r == rel_z else f" (zfetch: {rel_z['params']} / {rel_z['elements']})"
            print(f"{run['name']:<58} {step:>4} {r:>14} {z if z is not None else '-':>14} "
                  f"{'-' if err is None else f'{err:+.1f}%':>8}  {rel}")
        same_releases = real["end_of_backward_releases"] == sim["end_of_backward_releases"]
        if worst > run["limit_pct"] or not same_releases:
            failed = 1
            print(f"{run['name']}: FAILED (worst peak error {worst:.1f}%, limit {run['limit_pct']}%; "
                  f"end-of-backward releases {'equal' if same_releases else 'differ'})")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    e = sub.add_parser("extract")
    e.add_argument("trace")
    e.add_argument("notes")
    c = sub.add_parser("check")
    c.add_argument("runs")
    c.add_argument("--zfetch", required=True)
    c.add_argument("--root", default=".", help="what the runs' scenario paths are relative to")
    args = ap.parse_args()
    if args.what == "extract":
        print(json.dumps(extract(args.trace, args.notes)))
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
