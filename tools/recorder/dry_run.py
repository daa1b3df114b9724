"""Dry run of run_scenario.py's model, without DeepSpeed: the hook order of one training micro-step.

    python3 tools/recorder/dry_run.py [CORPUS_JSON ...] [--zfetch BIN]

Needs torch (any 1.13+), not DeepSpeed.  Builds each converted scenario's model with run_scenario's
build_model, emulates DeepSpeed's four module hooks (pre-forward, post-forward, the pre-backward wrap of
the outputs with its reference count, the post-backward wrap of the inputs with ds_grads_remaining:
parameter_offload.py) on the modules DeepSpeed would hook, runs one training micro-step (forward,
loss, backward) and prints the sequence of module_pre / module_post / backward_pre / backward_post
events.  With the simulator (build/release/tools/zfetch) it compares that sequence with the simulated
first micro-step (engine 0, micro-step 0, rank 0): the check that the runner's model calls modules and
builds the autograd graph in the order the simulator assumes.  Torch before 2.1 has no non-reentrant
early stop: those scenarios are compared up to the first recompute event only.  No fetch, release or
getter is emulated.
"""

import argparse
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in tools/recorder (it would be copied with the tree to the machine that runs DeepSpeed)
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_scenario as rs  # noqa: E402

EMULATED = ("module_pre", "module_post", "backward_pre", "backward_post")


def emulate_hooks(model, scen, events):
    mods = scen["modules"]
    by_name = dict(model.named_modules())
    stack = []
    in_bwd = [0]

    for spec in mods:
        if not spec["hooked"]:
            continue
        m = by_name[spec["qualified"]]
        name = spec["qualified"]
        m.__dict__["_dry_ref"] = 0
        m.__dict__["_dry_grads"] = 0

        class Pre(torch.autograd.Function):
            """PreBackwardFunctionForModule: the reference count grows at every apply, even under
            no_grad; pre-backward runs while it is positive."""

            @staticmethod
            def forward(ctx, t, m=m, name=name):
                ctx.m, ctx.name = m, name
                m.__dict__["_dry_ref"] += 1
                return t.detach()

            @staticmethod
            def backward(ctx, g):
                if ctx.m.__dict__["_dry_ref"] > 0:
                    events.append(("backward_pre", ctx.name))
                    ctx.m.__dict__["_dry_ref"] -= 1
                return g

        class Post(torch.autograd.Function):
            """PostBackwardFunctionModule: counts inputs that require grad; post-backward at 0."""

            @staticmethod
            def forward(ctx, t, m=m, name=name):
                ctx.m, ctx.name = m, name
                if t.requires_grad:
                    m.__dict__["_dry_grads"] += 1
                return t.detach()

            @staticmethod
            def backward(ctx, g):
                ctx.m.__dict__["_dry_grads"] -= 1
                if ctx.m.__dict__["_dry_grads"] == 0:
                    events.append(("backward_post", ctx.name))
                return g

        def wrap(fn, value):
            if isinstance(value, (tuple, list)):
                return type(value)(wrap(fn, v) for v in value)
            if isinstance(value, torch.Tensor):
                return fn.apply(value)
            return value

        def pre_fwd(module, inputs, name=name, Post=Post):
            events.append(("module_pre", name))
            stack.append(module)
            module.__dict__["_dry_grads"] = 0
            return wrap(Post, inputs)

        def post_fwd(module, inputs, output, name=name, Pre=Pre):
            stack.pop()
            events.append(("module_post", name))
            return wrap(Pre, output)

        m.register_forward_pre_hook(pre_fwd)
        m.register_forward_hook(post_fwd)
    return in_bwd


def dry_micro_step(scen):
    torch.manual_seed(1234)
    model = rs.build_model(scen)
    events = []
    emulate_hooks(model, scen, events)
    rs.CTX.engine, rs.CTX.step, rs.CTX.micro, rs.CTX.eval, rs.CTX.rank = 0, 0, 0, False, 0
    first = next((i for i in scen["schedule"] if i["op"] in ("train", "eval")), None)
    if first is None:
        return events, "no train/eval"
    if first["op"] == "eval":
        rs.CTX.eval = True
        model.eval()
        with torch.no_grad():
            model(rs.make_input(scen, 0, 500, False))
        return events, "eval"
    x = rs.make_input(scen, 0, 0, bool(scen["input_requires_grad"]))
    out = model(x)
    loss = rs.loss_of(out)
    try:
        loss.backward()
    except RuntimeError as exc:
        return events, f"backward: {exc}"
    return events, "train"


def sim_events(zfetch, yaml_path, policy="resident-skip"):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.jsonl")
        subprocess.run([zfetch, "run", yaml_path, "--discovery", policy, "--trace", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        evs = []
        passes = 0
        with open(out) as f:
            next(f)
            for line in f:
                e = json.loads(line)
                if e["rank"] != 0 or e["engine"] != 0 or e["micro_step"] != 0 or e["step"] != 0:
                    continue
                passes += e["kind"] == "pass_start"
                if passes > 1 or e["kind"] in ("optimizer_step", "restart"):
                    break  # the first pass only
                if e["kind"] in EMULATED:
                    # the emulated hooks name the root as named_modules() does: ""
                    evs.append((e["kind"], "" if e["module"] == "<root>" else e["module"], e["phase"]))
        return evs


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--zfetch", default=os.path.join(root, "build/release/tools/zfetch"))
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    files = a.files or sorted(os.path.join(here, "corpus", f) for f in os.listdir(os.path.join(here, "corpus"))
                              if f.endswith(".json") and f != "manifest.json")
    early_stop = "early_stop" in open(torch.utils.checkpoint.__file__).read()
    bad = 0
    for path in files:
        with open(path) as f:
            scen = json.load(f)
        try:
            events, how = dry_micro_step(scen)
        except Exception as exc:  # noqa: BLE001
            print(f"FAIL  {scen['key']}: {type(exc).__name__}: {exc}")
            bad += 1
            continue
        verdict = ""
        if os.path.exists(a.zfetch):
            sim = sim_events(a.zfetch, os.path.join(root, scen["yaml"]))
            n = len(sim)
            if not early_stop and "checkpoint-nonreentrant" in scen["features"]:
                n = next((i for i, e in enumerate(sim) if e[2] == "recompute"), n)
            real = [tuple(e) for e in events][:n if n < len(sim) else None]
            simp = [(k, m) for k, m, _ in sim][:n]
            i = next((i for i, (x, y) in enumerate(zip(real, simp)) if x != y), min(len(real), len(simp)))
            if real == simp:
                verdict = f"agrees with the simulator ({len(simp)} hook events{'' if n == len(sim) else ', up to the replay'})"
            else:
                bad += 1
                verdict = (f"DIFFERS at #{i}: dry {real[i] if i < len(real) else 'end'} vs sim "
                           f"{simp[i] if i < len(simp) else 'end'}")
        print(f"{'ok   ' if 'DIFF' not in verdict else 'DIFF '} {scen['key']} [{how}] {verdict}")
        if a.verbose:
            for e in events:
                print("    ", *e)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
