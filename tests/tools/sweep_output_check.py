#!/usr/bin/env python3
"""zfetch sweep --json / --csv and its exit code on the seed scenario.

The JSON of a grid and of a bisection must validate against docs/sweep.schema.json; failed
cells carry no step time and sort after the passing ones; a sweep exits 1 when a cell
fails (with or without --require-pass), 0 when none does or with --allow-fail; the CSV has the same cells. Exits 77 (skip) without jsonschema.
Usage: sweep_output_check.py ZFETCH SCHEMA SCENARIO
"""
import csv
import io
import json
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed; skipping")
    sys.exit(77)

zfetch, schema_path, scenario = sys.argv[1:4]
with open(schema_path, encoding="utf-8") as f:
    schema = json.load(f)
validator = jsonschema.Draft202012Validator(schema)
failures = []


def sweep(*args):
    run = subprocess.run([zfetch, "sweep", scenario, *args], capture_output=True, text=True,
                         check=False)
    return run.returncode, run.stdout, run.stderr


def expect(condition, message):
    if not condition:
        failures.append(message)


def validate(text, what):
    doc = json.loads(text)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    for error in errors:
        failures.append(f"{what}: {list(error.path)}: {error.message}")
    return doc


# A grid where 16 and 100 fail (the seed's adapter weights become persistent at 16).
grid = ["--set", "stage3_param_persistence_threshold=100,16,0",
        "--set", "offload_param.device=none,cpu", "--sort", "step_time"]
code, out, err = sweep(*grid, "--json", "--allow-fail")
expect(code == 0, f"--json --allow-fail exited {code}: {err}")
doc = validate(out, "grid")
cells = doc["cells"]
expect(len(cells) == 6, f"expected 6 cells, got {len(cells)}")
statuses = [c["status"] for c in cells]
expect(statuses == ["pass", "pass", "failed", "failed", "failed", "failed"],
       f"failed cells are not sorted last: {statuses}")
passing = [c["step_ns"] for c in cells if c["status"] == "pass"]
expect(passing == sorted(passing), f"passing cells not sorted by step time: {passing}")
expect(all(c["step_ns"] is None for c in cells if c["status"] == "failed"),
       "a failed cell has a step time")
# With the sort, the failed cells keep the combination order (100 before 16).
expect([c["values"]["stage3_param_persistence_threshold"] for c in cells[2:]] ==
       ["100", "100", "16", "16"], "failed cells are not in combination order")

code, _, _ = sweep(*grid, "--json")
expect(code == 1, f"a sweep with failing cells exited {code}, expected 1")
code, _, _ = sweep(*grid, "--json", "--require-pass")
expect(code == 1, f"--require-pass with failing cells exited {code}, expected 1")
code, out, _ = sweep("--set", "stage3_param_persistence_threshold=0,8", "--require-pass")
expect(code == 0, f"--require-pass with only passing cells exited {code}, expected 0")

code, out, err = sweep(*grid, "--csv", "--allow-fail")
expect(code == 0, f"--csv exited {code}: {err}")
rows = list(csv.DictReader(io.StringIO(out, newline="")))
expect([r["status"] for r in rows] == statuses, "CSV cells differ from the JSON cells")
expect([r["step_ns"] for r in rows] == [str(c["step_ns"]) if c["step_ns"] is not None else ""
                                        for c in cells], "CSV step_ns differ from the JSON")

# --bisect with --set: one search per --set value, each validated.
code, out, err = sweep("--set", "offload_param.device=none,cpu",
                       "--bisect", "stage3_param_persistence_threshold=0..100", "--json",
                       "--allow-fail")
expect(code == 0, f"--bisect --json --allow-fail exited {code}: {err}")
doc = validate(out, "bisect")
searches = doc.get("bisections", [])
expect(len(searches) == 2, f"expected 2 bisections, got {len(searches)}")
for s in searches:
    expect(s["changed"] and s["below"] == 15 and s["above"] == 16,
           f"bisection {s['fixed']} found {s['below']}..{s['above']}, expected 15..16")
code, _, _ = sweep("--set", "offload_param.device=none",
                   "--bisect", "stage3_param_persistence_threshold=0..100")
expect(code == 1, f"--bisect with a failing side exited {code}, expected 1")

# A document that breaks the schema must not validate (the check can fail).
broken = json.loads(json.dumps(cells[2]))
broken["step_ns"] = 1
grid_doc = {k: v for k, v in doc.items() if k != "bisections"}
expect(not any(True for _ in validator.iter_errors({**grid_doc, "mode": "grid", "cells": cells})),
       "the schema rejects the grid's own cells")
expect(any(True for _ in validator.iter_errors({**grid_doc, "mode": "grid", "cells": [broken]})),
       "the schema accepts a failed cell with a step time")

for message in failures:
    print("error:", message)
sys.exit(1 if failures else 0)
