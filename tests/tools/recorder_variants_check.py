#!/usr/bin/env python3
"""The recorder's writer on forwards that change between passes (tools/recorder/zfetch_record/
variants.py): the merged program's conditions, and, end to end, a scenario written from the
observations of validation probe 18 (a layer skipped in micro-step 2) simulates event for event
like the hand-written probe.
Usage: recorder_variants_check.py ZFETCH (from the repository root)
"""
import json
import os
import subprocess
import sys
import tempfile

from recorder_checks import expect, failures, finish
from zfetch_record import variants
from zfetch_record.scenario_writer import OBSERVATIONS_FORMAT, scenario_from_observations

zfetch = sys.argv[1]


def variant(ops, **values):
    context = {"step": [0], "micro_step": [0], "engine": [0], "phase": ["train"]}
    context.update(values)
    return {"ops": [{"call": name} for name in ops], "values": context}


# A layer skipped in one micro-step: the micro-step tells them apart.
expect("micro-step",
       variants.merged_program([variant("abcd", micro_step=[0, 1, 3]), variant("abd", micro_step=[2])]),
       [{"call": "a"}, {"call": "b"}, {"call": "c", "when": {"window_micro_step": [0, 1, 3]}}, {"call": "d"}])
# A branch only eval passes take: one phase, not a list.
expect("phase",
       variants.merged_program([variant("ab", phase=["train"], micro_step=[0, 1]),
                                variant("aeb", phase=["eval"], micro_step=[0, 1])]),
       [{"call": "a"}, {"call": "e", "when": {"phase": "eval"}}, {"call": "b"}])
# Three variants that only the optimizer step tells apart; every op keeps its place in each.
merged = variants.merged_program([variant("abc", step=[0]), variant("bc", step=[1, 3]), variant("acd", step=[2])])
expect("step", merged,
       [{"call": "a", "when": {"step": [0, 2]}}, {"call": "b", "when": {"step": [0, 1, 3]}}, {"call": "c"},
        {"call": "d", "when": {"step": [2]}}])
for step, ops in ((0, "abc"), (1, "bc"), (2, "acd"), (3, "bc")):
    ran = "".join(op["call"] for op in merged if step in op.get("when", {}).get("step", [step]))
    expect(f"step {step} runs", ran, ops)
# Two programs in the same context: nothing tells them apart.
expect("inseparable", variants.merged_program([variant("ab"), variant("ba")]), None)

# End to end: what the recorder observes of probe 18, written and simulated.
layer = {"class": "Linear", "params": {"weight": [16, 16], "bias": [16]}}
observed = {
    "format": OBSERVATIONS_FORMAT, "version": 1, "name": "v18-trace-change", "source": "recorder_variants_check",
    "world_size": 2, "input_requires_grad": False, "schedule": [{"train": 1}],
    "config": {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
               "zero_optimization": {"stage": 3, "param_persistence_threshold": 0, "log_trace_cache_warnings": True}},
    "tree": {"name": "model", "class": "Model", "_q": "",
             "children": [dict(layer, name=f"l{i}", _q=f"l{i}") for i in range(4)]},
    "programs": {"": [{"call": f"l{i}"} for i in range(4)], **{f"l{i}": [] for i in range(4)}},
    "outputs": {"": 1, **{f"l{i}": 1 for i in range(4)}},
    "changed": [""],
    "variants": {"": [variant(["l0", "l1", "l2", "l3"], micro_step=[0, 1, 3]),
                      variant(["l0", "l1", "l3"], micro_step=[2])]},
}
with tempfile.TemporaryDirectory() as tmp:
    written = os.path.join(tmp, "written.yaml")
    with open(written, "w", encoding="utf-8") as f:
        f.write(scenario_from_observations(json.loads(json.dumps(observed))))
    for policy in ("resident-skip", "residency-independent"):
        traces = []
        for name, scenario in (("probe", "scenarios/validation/v18_trace_change.yaml"), ("written", written)):
            trace = os.path.join(tmp, f"{name}.{policy}.jsonl")
            run = subprocess.run([zfetch, "run", scenario, "--discovery", policy, "--trace", trace],
                                 capture_output=True, text=True, check=False)
            # the probe's trace cache is invalidated: exit 0 or 1 are both a simulation
            if run.returncode not in (0, 1):
                failures.append(f"{name} {policy}: zfetch run exit {run.returncode}: {run.stderr[:300]}")
            traces.append(trace)
        if len(failures) == 0:
            diff = subprocess.run([zfetch, "diff", *traces, "--rank", "0", "--kinds", "recorded", "--ignore-ids"],
                                  capture_output=True, text=True, check=False)
            if diff.returncode != 0:
                failures.append(f"{policy}: written scenario differs from the probe: {diff.stdout[:600]}")

finish("recorder variants")
