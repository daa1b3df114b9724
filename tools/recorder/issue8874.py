"""Ground-truth runs of DeepSpeed issue #8874 (resident adapter weight + resume) on 2 ranks.

Launch (CPU ranks, gloo), from the repository root, with the DeepSpeed snapshot exported to .dsenv/.ds:

    PYTHONPATH=.dsenv/.ds:.dsenv:tools/recorder DS_ACCELERATOR=cpu CUDA_VISIBLE_DEVICES='' \
      python3 -m torch.distributed.run --standalone --nproc_per_node=2 tools/recorder/issue8874.py \
      seed --policy resident-skip --offload cpu --out OUTDIR

Modes:
  seed    the issue's schedule in a fresh process (exact ids): engine 1, 4 micro-steps, save_checkpoint,
          destroy, engine 2 on a fresh model, load_checkpoint, 4 micro-steps.  Writes
          seed.<policy>.rank<r>.{jsonl,notes.jsonl,exc.txt,result.json}.  Writes seed.<policy>.init-failed if
          engine 1 cannot be built (e.g. offload_param cpu impossible): the caller retries with --offload none.
  matrix  the PR's validation matrix (offload none/cpu x persistent/non-persistent x reentrant/non-reentrant x
          both policies) in ONE process pair: ids are not those of a fresh process.  Writes
          matrix.rank<r>.json and matrix/<config>.rank<r>.{jsonl,notes.jsonl}.
"""

import argparse
import json
import logging
import os
import sys
import time
import traceback
from datetime import timedelta

import torch
import torch.nn as nn
import torch.utils.checkpoint

import deepspeed
from deepspeed.accelerator import get_accelerator

deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False  # no C++ sources in the snapshot

import zfetch_record as zr  # noqa: E402

zr.install()


class Adapter(nn.Module):

    def __init__(self):
        super().__init__()
        self.base = nn.Linear(8, 8, bias=False)
        self.base.weight.requires_grad_(False)
        self.adapter_A = nn.Linear(8, 2, bias=False)
        self.adapter_B = nn.Linear(2, 8, bias=False)

    def forward(self, x):
        b = self.base(x)
        _ = self.adapter_A.weight.dtype
        return b + self.adapter_B(self.adapter_A(x))


class Model(nn.Module):

    def __init__(self, reentrant=True):
        super().__init__()
        self.adapter = Adapter()
        self.reentrant = reentrant

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.adapter, x, use_reentrant=self.reentrant)


def ds_config(offload, threshold):
    zero = {
        "stage": 3,
        "stage3_param_persistence_threshold": threshold,
        "stage3_prefetch_bucket_size": 0,
        "stage3_max_reuse_distance": 0,
        "log_trace_cache_warnings": True,
    }
    if offload != "none":
        zero["offload_param"] = {"device": offload}
    return {
        "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 4,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
        "zero_optimization": zero,
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def parse_tracing_error(msg):
    out = {}
    first = msg.split("\n", 1)[0]
    out["first_line"] = first
    if msg.startswith("tracing error at step "):
        try:
            out["trace_step"] = int(first[len("tracing error at step "):].split(":")[0])
        except ValueError:
            pass
        for line in msg.split("\n"):
            if line.startswith("module id: "):
                out["module_id"] = int(line[len("module id: "):].split(",")[0])
    return out


def run_schedule(reentrant, offload, threshold, ckpt_dir, rank, log):
    """The issue's schedule. Returns a result dict (never raises)."""
    res = {"outcome": "pass", "where": None}
    where = {"engine": 0, "micro_step": None, "call": "initialize"}
    engine = None
    cfg = ds_config(offload, threshold)
    t0 = time.time()
    try:
        for e in (0, 1):
            where.update(engine=e, micro_step=None, call="initialize")
            torch.manual_seed(1234)
            model = Model(reentrant)
            engine, _, _, _ = deepspeed.initialize(model=model,
                                                   model_parameters=[p for p in model.parameters() if p.requires_grad],
                                                   config=cfg)
            ids = {n: int(p.ds_id) for n, p in engine.module.named_parameters()}
            mids = {n: int(m.ds_id) for n, m in engine.module.named_modules()}
            res[f"engine{e}_param_ids"] = ids
            res[f"engine{e}_module_ids"] = mids
            zr.residency_snapshot(engine.module, f"engine {e} after initialize")
            if e == 1:
                where.update(call="load_checkpoint")
                engine.load_checkpoint(ckpt_dir, tag="seed")
                zr.residency_snapshot(engine.module, f"engine {e} after load_checkpoint")
            for mu in range(4):
                where.update(micro_step=mu, call="forward")
                torch.manual_seed(100 + 1000 * rank + 10 * e + mu)
                x = torch.randn(2, 8, requires_grad=True)
                out = engine(x)
                loss = out.pow(2).mean()
                where.update(call="backward")
                engine.backward(loss)
                where.update(call="step")
                engine.step()
                zr.residency_snapshot(engine.module, f"engine {e} after micro-step {mu}")
            if e == 0:
                where.update(micro_step=None, call="save_checkpoint")
                engine.save_checkpoint(ckpt_dir, tag="seed")
                zr.residency_snapshot(engine.module, f"engine {e} after save_checkpoint")
            where.update(micro_step=None, call="destroy")
            engine.destroy()
            engine = None
    except BaseException as exc:  # noqa: B902 - record everything
        msg = str(exc)
        res["outcome"] = "mismatch" if msg.startswith("tracing error") else "error"
        res["where"] = dict(where)
        res["exc_type"] = type(exc).__name__
        res["exc_repr"] = repr(exc)
        res["exc_str"] = msg
        res["traceback"] = traceback.format_exc()
        res.update(parse_tracing_error(msg))
        if res["outcome"] != "mismatch":
            zr.error_event(exc)
        log(f"[rank{rank}] EXCEPTION at {where}: {type(exc).__name__}: {msg.splitlines()[0] if msg else ''}")
        if engine is not None:
            try:
                engine.destroy()
            except BaseException as exc2:  # noqa: B902
                res["destroy_error"] = repr(exc2)
    res["seconds"] = round(time.time() - t0, 2)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["seed", "matrix"])
    ap.add_argument("--policy", default="resident-skip", choices=["resident-skip", "residency-independent"])
    ap.add_argument("--offload", default="cpu", choices=["cpu", "none"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    deepspeed.utils.logger.setLevel(logging.WARNING)
    deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=90))
    rank = torch.distributed.get_rank()
    world = torch.distributed.get_world_size()
    os.makedirs(args.out, exist_ok=True)

    def log(s):
        print(s, flush=True)

    info = {"torch": torch.__version__, "deepspeed": deepspeed.__version__,
            "deepspeed_git": getattr(deepspeed, "__git_hash__", None), "python": sys.version.split()[0],
            "accelerator": get_accelerator()._name, "backend": torch.distributed.get_backend(),
            "world_size": world}
    if rank == 0:
        log("INFO " + json.dumps(info))

    if args.mode == "seed":
        base = os.path.join(args.out, f"seed.{args.policy}.rank{rank}")
        zr.open_trace(base + ".jsonl", "resident-adapter-resume", world, args.policy, notes_path=base + ".notes.jsonl")
        res = run_schedule(True, args.offload, 16, f"/tmp/zfetch_ckpt/seed.{args.policy}.{args.offload}", rank, log)
        zr.close_trace()
        res.update(policy=args.policy, offload=args.offload, threshold=16, reentrant=True, info=info)
        with open(base + ".result.json", "w") as f:
            json.dump(res, f, indent=1)
        if "exc_str" in res:
            with open(base + ".exc.txt", "w", encoding="utf-8", newline="") as f:
                f.write("repr:\n" + res["exc_repr"] + "\n\nstr:\n" + res["exc_str"] + "\n\ntraceback:\n" +
                        res["traceback"])
        log(f"[rank{rank}] SEED policy={args.policy} offload={args.offload} outcome={res['outcome']} "
            f"where={res['where']} first_line={res.get('first_line')!r}")
        if rank == 0 and "exc_repr" in res:
            log(f"[rank{rank}] REPR {res['exc_repr']}")
        if res["outcome"] == "error" and res["where"] and res["where"]["engine"] == 0 and \
                res["where"]["call"] == "initialize":
            # the caller retries with --offload none when this marker exists
            open(os.path.join(args.out, f"seed.{args.policy}.init-failed"), "w").write(res["exc_repr"])
    else:
        mdir = os.path.join(args.out, "matrix")
        os.makedirs(mdir, exist_ok=True)
        results = []
        for policy in ("resident-skip", "residency-independent"):
            for offload in ("none", "cpu"):
                for threshold in (16, 0):
                    for reentrant in (True, False):
                        name = (f"{policy}.off-{offload}.{'persist' if threshold else 'nopersist'}."
                                f"{'reentrant' if reentrant else 'nonreentrant'}")
                        base = os.path.join(mdir, f"{name}.rank{rank}")
                        zr.open_trace(base + ".jsonl", name, world, policy, notes_path=base + ".notes.jsonl")
                        torch.distributed.barrier()
                        res = run_schedule(reentrant, offload, threshold, f"/tmp/zfetch_ckpt/{name}", rank, log)
                        zr.close_trace()
                        res.pop("traceback", None) if res["outcome"] == "pass" else None
                        res.update(config=name, policy=policy, offload=offload, threshold=threshold,
                                   reentrant=reentrant)
                        results.append(res)
                        log(f"[rank{rank}] MATRIX {name}: {res['outcome']} where={res['where']} "
                            f"step={res.get('trace_step')} module={res.get('module_id')} "
                            f"first={res.get('first_line')!r} ({res['seconds']} s)")
                        torch.distributed.barrier()
        with open(os.path.join(args.out, f"matrix.rank{rank}.json"), "w") as f:
            json.dump({"info": info, "results": results}, f, indent=1)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
