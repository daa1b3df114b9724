#!/usr/bin/env python3
"""Real DeepSpeed ZeRO-3 on one GPU, for the comparisons of docs/gpu.md "Real DeepSpeed":

* ``record``: a model recorded by zfetch_record with live gathered parameter bytes
  (ZFETCH_RECORD_LIVE=1): trace, side notes and the scenario the recorder writes, in OUT/NAME/;
* ``sweep``: one model with CPU parameter offload (offload_param: cpu, pinned) under several
  configurations of stage3_prefetch_bucket_size, stage3_max_live_parameters and
  stage3_max_reuse_distance, each a fresh engine: median forward+backward time and optimizer step
  time of the timed steps (CUDA-synchronised wall clock), and the model's matmul rate measured
  alone (the calibration's compute.flops_per_s). Results in OUT/sweep.json.

The models mirror tests/cuda/replay_make_transformer.py's layout (embed, layers.N.{ln1, attn.qkv,
attn.o, ln2, mlp.up, mlp.down}, norm, lm_head; each layer in a reentrant checkpoint), so that the
scenario that script writes is zfetch's model of the same run. ``--lora R`` freezes every weight
and adds PEFT-style adapters (lora_A, lora_B of rank R) beside attn.qkv and attn.o.

Run with DeepSpeed importable (a checkout's package on PYTHONPATH) under torchrun with one process:
    torchrun --standalone --nproc_per_node=1 tools/gpu/real_deepspeed.py sweep --out DIR
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.utils.checkpoint

VOCAB = 32000


class Adapter(nn.Module):
    """A PEFT-style low-rank adapter: B(A(x)), A and B trainable, B zero at the start."""

    def __init__(self, d_in, d_out, rank):
        super().__init__()
        self.lora_A = nn.Linear(d_in, rank, bias=False)
        self.lora_B = nn.Linear(rank, d_out, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.lora_B(self.lora_A(x))


class Attn(nn.Module):

    def __init__(self, h, lora):
        super().__init__()
        self.qkv = nn.Linear(h, 3 * h, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.qkv_adapter = Adapter(h, 3 * h, lora) if lora else None
        self.o_adapter = Adapter(h, h, lora) if lora else None

    def forward(self, x):
        qkv = self.qkv(x)
        if self.qkv_adapter is not None:
            qkv = qkv + self.qkv_adapter(x)
        q, k, v = qkv.chunk(3, dim=-1)
        a = q * torch.sigmoid(k) + v  # elementwise: what a matmul-free attention stand-in costs
        out = self.o(a)
        if self.o_adapter is not None:
            out = out + self.o_adapter(a)
        return out


class Mlp(nn.Module):

    def __init__(self, h):
        super().__init__()
        self.up = nn.Linear(h, 4 * h, bias=False)
        self.down = nn.Linear(4 * h, h, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class Layer(nn.Module):

    def __init__(self, h, lora):
        super().__init__()
        self.ln1 = nn.LayerNorm(h)
        self.attn = Attn(h, lora)
        self.ln2 = nn.LayerNorm(h)
        self.mlp = Mlp(h)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):

    def __init__(self, layers, h, lora):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, h)
        self.layers = nn.ModuleList(Layer(h, lora) for _ in range(layers))
        self.norm = nn.LayerNorm(h, bias=False)
        self.lm_head = nn.Linear(h, VOCAB, bias=False)
        if lora:
            for name, p in self.named_parameters():
                p.requires_grad_("_adapter." in name)

    def forward(self, ids):
        x = self.embed(ids)
        if not x.requires_grad:
            x = x.detach().requires_grad_(True)  # a reentrant checkpoint needs an input with grad
        for layer in self.layers:
            x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=True)
        return self.lm_head(self.norm(x))


def ds_config(prefetch, max_live, reuse, offload):
    zero = {"stage": 3, "stage3_prefetch_bucket_size": prefetch, "stage3_max_live_parameters": max_live,
            "stage3_max_reuse_distance": reuse, "stage3_param_persistence_threshold": 0}
    if offload:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
            "zero_optimization": zero, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
            "zero_allow_untested_optimizer": True, "zero_force_ds_cpu_optimizer": False,
            "steps_per_print": 1000000000, "wall_clock_breakdown": False}


def build_engine(deepspeed, args, config):
    torch.manual_seed(1234)
    with torch.device("cuda"):  # initialised on the GPU: seconds less per engine than on the CPU
        model = Model(args.layers, args.hidden, args.lora).to(torch.bfloat16)
    params = [p for p in model.parameters() if p.requires_grad]
    engine, *_ = deepspeed.initialize(model=model, model_parameters=params, config=config)
    return engine


def ids_for(args, step):
    g = torch.Generator().manual_seed(7 + step)
    return torch.randint(0, VOCAB, (args.tokens, ), generator=g).cuda()


def one_step(engine, ids):
    """Forward+backward and optimizer step, each timed with the GPU drained before and after."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = engine(ids)
    loss = out.float().pow(2).mean()
    engine.backward(loss)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    engine.step()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e9, (t2 - t1) * 1e9


def release(engine):
    engine.destroy()
    del engine
    gc.collect()
    torch.cuda.empty_cache()


def matmul_flops_per_s(h, tokens):
    """The rate of the model's own matmul shapes (bf16, forward and the two backward products)."""
    inputs = {d: torch.randn(tokens, d, dtype=torch.bfloat16, device="cuda") for d in (h, 4 * h)}
    ws = [torch.randn(o, i, dtype=torch.bfloat16, device="cuda") for o, i in ((3 * h, h), (h, h), (4 * h, h),
                                                                               (h, 4 * h))]
    flops = sum(2 * w.numel() * tokens * 3 for w in ws)

    def body():
        for w in ws:
            xi = inputs[w.shape[1]]
            y = xi @ w.t()
            _ = y @ w  # grad of the input
            _ = y.t() @ xi  # grad of the weight

    for _ in range(3):
        body()
    times = []
    for _ in range(10):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        body()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return flops / statistics.median(times)


def sweep_configs():
    # (prefetch bucket, max live, reuse distance): DeepSpeed's defaults are 5e7, 1e9, 1e9.
    return [(0, 1_000_000_000, 1_000_000_000), (10_000_000, 1_000_000_000, 1_000_000_000),
            (50_000_000, 1_000_000_000, 1_000_000_000), (200_000_000, 1_000_000_000, 1_000_000_000),
            (50_000_000, 1_000_000_000, 0), (0, 1_000_000_000, 0), (200_000_000, 300_000_000, 1_000_000_000),
            (10_000_000, 100_000_000, 0), (50_000_000, 100_000_000, 1_000_000_000)]


def cmd_sweep(deepspeed, args):
    rows = []
    flops = matmul_flops_per_s(args.hidden, args.tokens)
    print(f"SWEEP matmul rate {flops / 1e12:.1f} TFLOP/s", flush=True)
    for prefetch, max_live, reuse in sweep_configs():
        t0 = time.time()
        engine = build_engine(deepspeed, args, ds_config(prefetch, max_live, reuse, True))
        fb, st = [], []
        for step in range(args.warmup + args.steps):
            f, s = one_step(engine, ids_for(args, step))
            if step >= args.warmup:
                fb.append(f)
                st.append(s)
        release(engine)
        row = {"stage3_prefetch_bucket_size": prefetch, "stage3_max_live_parameters": max_live,
               "stage3_max_reuse_distance": reuse, "forward_backward_ns": fb, "optimizer_step_ns": st,
               "forward_backward_median_ns": int(statistics.median(fb)),
               "optimizer_step_median_ns": int(statistics.median(st)), "seconds": round(time.time() - t0, 1)}
        rows.append(row)
        print(f"SWEEP pf={prefetch} live={max_live} reuse={reuse}: fwd+bwd "
              f"{row['forward_backward_median_ns'] / 1e6:.2f} ms, step {row['optimizer_step_median_ns'] / 1e6:.2f} ms"
              f" ({row['seconds']} s)", flush=True)
        # Written after every configuration: a run cut short keeps what it measured.
        out = {"format": "zfetch-real-offload-sweep", "version": 1, "device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "deepspeed": deepspeed.__version__, "layers": args.layers,
               "hidden": args.hidden, "tokens": args.tokens, "warmup_steps": args.warmup,
               "timed_steps": args.steps, "matmul_flops_per_s": flops, "rows": rows}
        with open(os.path.join(args.out, "sweep.json"), "w") as f:
            json.dump(out, f, indent=1)


def cmd_record(deepspeed, args):
    import zfetch_record
    os.environ["ZFETCH_RECORD_LIVE"] = "1"
    folder = os.path.join(args.out, args.name)
    config = ds_config(args.prefetch, 1_000_000_000, 1_000_000_000, args.offload)
    with zfetch_record.record(folder, name=args.name):
        engine = build_engine(deepspeed, args, config)
        for step in range(args.steps):
            one_step(engine, ids_for(args, step))
        release(engine)
    print(f"RECORD {args.name}: done", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["sweep", "record"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="model", help="record: the folder under OUT")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--lora", type=int, default=0, help="adapter rank; 0: no adapters, every weight trained")
    ap.add_argument("--offload", action="store_true", help="record: offload_param cpu")
    ap.add_argument("--prefetch", type=int, default=50_000_000, help="record: stage3_prefetch_bucket_size")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--wait-for", metavar="FILE", help="import first, then start once FILE exists (so that "
                    "the imports overlap other work on the GPU)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import logging

    import deepspeed
    deepspeed.utils.logger.setLevel(logging.WARNING)
    if args.what == "record":
        import zfetch_record  # noqa: F401  (imported before the wait, too)
    while args.wait_for and not os.path.exists(args.wait_for):
        time.sleep(0.2)
    deepspeed.init_distributed(dist_backend="nccl")
    torch.cuda.set_device(0)
    (cmd_sweep if args.what == "sweep" else cmd_record)(deepspeed, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
