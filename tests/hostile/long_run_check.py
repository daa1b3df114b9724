#!/usr/bin/env python3
"""Class 4 (work bounds), a long but legitimate run: N optimizer steps of a small model with
--trace and --timeline, to files in WORK. Checks that every output is complete: the Chrome trace
is one JSON document (one event per line, each parsed) with a `step K` landmark for every step,
the flows paired, the in-flight and utilisation counters present; the event trace has every
event up to the last step's, numbered without gaps; the step table has a row per step. Memory is
not asserted here (tools/bench flat_memory measures it); the files are removed when they pass.

usage: long_run_check.py ZFETCH WORK [STEPS]
"""
import json
import os
import subprocess
import sys


def fail(message):
    sys.exit(f"long_run_check: {message}")


def check_timeline(path, steps):
    step_landmarks = set()
    flows = {"s": 0, "f": 0}
    counters = {}
    with open(path, encoding="utf-8") as f:
        if f.readline() != '{"displayTimeUnit":"ns","traceEvents":[\n':
            fail(f"{path}: does not start a trace document")
        last = None
        for number, line in enumerate(f, start=2):
            if line == "]}\n":
                last = number
                continue
            if last is not None:
                fail(f"{path}:{number}: text after the end of the document")
            event = json.loads(line.rstrip(",\n"))
            ph = event["ph"]
            if ph == "X" and event.get("cat") == "landmark" and event["name"].startswith("step "):
                step_landmarks.add(int(event["name"][5:]))
            elif ph in flows:
                flows[ph] += 1
            elif ph == "C":
                counters[event["name"]] = counters.get(event["name"], 0) + 1
        if last is None:
            fail(f"{path}: the document is not closed")
    if step_landmarks != set(range(steps)):
        fail(f"{path}: {len(step_landmarks)} step landmarks, expected 0..{steps - 1}")
    if flows["s"] == 0 or flows["s"] != flows["f"]:
        fail(f"{path}: flows not paired: {flows}")
    for name in ("live gathered bytes", "in-flight bytes", "stream utilisation %"):
        if counters.get(name, 0) == 0:
            fail(f"{path}: no '{name}' counter")


def check_trace(path, steps):
    lines = 0
    last = b""
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        if header.get("format") != "zfetch-trace":
            fail(f"{path}: no trace header")
        for line in f:
            lines += 1
            last = line
    event = json.loads(last)
    if event["seq"] != lines - 1:
        fail(f"{path}: {lines} events, but the last is numbered {event['seq']}")
    if event["step"] != steps - 1:
        fail(f"{path}: the last event is at step {event['step']}, expected {steps - 1}")


def main():
    zfetch, work = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    os.makedirs(work, exist_ok=True)
    scenario = os.path.join(work, "long_run.yaml")
    trace = os.path.join(work, "long_run.jsonl")
    timeline = os.path.join(work, "long_run.json")
    with open(scenario, "w", encoding="utf-8") as f:
        f.write("name: long-run\nworld_size: 2\nmodel:\n  name: m\n  children:\n"
                "    - {name: a, params: {w: [256, 256]}}\n"
                "    - {name: b, params: {w: [256, 256]}}\n"
                f"schedule:\n  - train: {{steps: {steps}}}\n")
    run = subprocess.run([zfetch, "run", scenario, "--trace", trace, "--timeline", timeline],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        fail(f"zfetch run exited {run.returncode}: {run.stderr}")
    rows = [line.split() for line in run.stdout.splitlines() if line.startswith("  ")]
    step_rows = [r for r in rows if len(r) > 2 and r[0].isdigit()]
    if len(step_rows) != steps or step_rows[-1][0] != str(steps - 1):
        fail(f"the step table has {len(step_rows)} rows, expected {steps}")
    check_timeline(timeline, steps)
    check_trace(trace, steps)
    for path in (trace, timeline):
        os.remove(path)
    print(f"long_run_check: {steps} steps, every output complete")


if __name__ == "__main__":
    main()
