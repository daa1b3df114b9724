#!/usr/bin/env python3
"""Class 5 (quadratic paths in the loader): scenarios with 10^5 top-level keys, 10^5 sibling
modules each called from the forward, 10^5 params in one module, a chain of 10^5 tied params and
10^4 misspelled calls, generated into WORK and validated. Each asserts the exit code and the
message; none asserts a time, but the sizes make a quadratic path hang the test (10^10 steps)
while the linear loader takes about a second each.

usage: loader_scale.py ZFETCH WORK
"""
import os
import subprocess
import sys

N = 100_000
MISSPELLED = 10_000

HEAD = ("name: scale\nworld_size: 1\n"
        "deepspeed: {train_micro_batch_size_per_gpu: 1, zero_optimization: {stage: 3}}\n")
SCHEDULE = "schedule:\n  - train: {steps: 1}\n"


def fail(message):
    sys.exit(f"loader_scale: {message}")


def scenarios():
    """(name, text, expected exit code, lines stderr must contain)"""
    keys = "".join(f"x{i}: 1\n" for i in range(N))
    yield ("top_keys",
           HEAD + "model: {name: m, params: {w: [2]}}\n" + SCHEDULE + keys + "x7: 2\n", 2,
           ["top_keys.yaml:7:1: error: unknown key 'x0' in the scenario",
            f"top_keys.yaml:{N + 6}:1: error: unknown key 'x{N - 1}' in the scenario",
            f"top_keys.yaml:{N + 7}:1: error: duplicate key 'x7' in the scenario"])
    children = "".join(f"    - {{name: c{i}}}\n" for i in range(N))
    calls = "".join(f"    - call: c{i}\n" for i in range(N))
    yield ("siblings", HEAD + "model:\n  name: m\n  children:\n" + children + "  forward:\n" +
           calls + SCHEDULE, 0, [f"siblings.yaml: ok ({N + 1} modules, 0 parameters)"])
    params = "".join(f"    p{i}: [2]\n" for i in range(N))
    yield ("params", HEAD + "model:\n  name: m\n  params:\n" + params + SCHEDULE, 0,
           [f"params.yaml: ok (1 modules, {N} parameters)"])
    chain = "".join(f"    p{i}: {{tied_to: p{i - 1}}}\n" for i in range(1, N))
    yield ("tied_chain", HEAD + "model:\n  name: m\n  params:\n    p0: [2]\n" + chain + SCHEDULE, 0,
           # one tensor under N names: counted once, as model.parameters() does
           [f"tied_chain.yaml: ok (1 modules, 1 parameters; {N - 1} tied names counted with the parameter they share)"])
    # The same chain ending in a loop of two: one error at the loop, none for the chain into it.
    looped = "".join(f"    p{i}: {{tied_to: p{i + 1}}}\n" for i in range(N - 1))
    yield ("tied_loop", HEAD + "model:\n  name: m\n  params:\n" + looped +
           f"    p{N - 1}: {{tied_to: p{N - 2}}}\n" + SCHEDULE, 2,
           [f"tied_loop.yaml:{N + 5}:5: error: tied parameters form a cycle: "
            f"p{N - 2} -> p{N - 1} -> p{N - 2}"])
    children = "".join(f"    - {{name: child_{i}}}\n" for i in range(MISSPELLED))
    calls = "".join(f"    - call: chlid_{i}\n" for i in range(MISSPELLED))
    first_call = MISSPELLED + 8
    yield ("misspelled", HEAD + "model:\n  name: m\n  children:\n" + children + "  forward:\n" +
           calls + SCHEDULE, 2,
           [f"misspelled.yaml:{first_call}:13: error: module 'chlid_0' is not a child of 'm'",
            f"misspelled.yaml:{first_call}:13: note: did you mean 'child_0'?",
            f"misspelled.yaml:{first_call + MISSPELLED - 1}:13: error: module "
            f"'chlid_{MISSPELLED - 1}' is not a child of 'm'"])


def main():
    zfetch, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    for name, text, code, expected in scenarios():
        path = os.path.join(work, f"{name}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        result = subprocess.run([zfetch, "validate", f"{name}.yaml"], cwd=work,
                                capture_output=True, text=True, timeout=120)
        output = result.stdout + result.stderr
        if result.returncode != code:
            fail(f"{name}: exit code {result.returncode}, expected {code}:\n{output[:2000]}")
        lines = output.splitlines()
        for line in expected:
            if line not in lines:
                fail(f"{name}: no line '{line}' in the output:\n{output[:2000]}")
        if name == "misspelled":
            errors = sum(1 for line in lines if ": error: module 'chlid_" in line)
            if errors != MISSPELLED:
                fail(f"misspelled: {errors} errors, expected one per misspelled call")
        os.remove(path)


if __name__ == "__main__":
    main()
