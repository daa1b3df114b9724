"""DeepSpeed issue #8874 as a plain training script (it knows nothing of zfetch): a LoRA-style adapter
whose parent reads ``adapter_A.weight.dtype``, a reentrant checkpoint, ZeRO-3 with a persistent
adapter weight, one optimizer step of 4 micro-steps, save, a new engine on a new model, load, one
more step. DeepSpeed up to 0.19.9 fails in the second engine with the tracing error.

    ZFETCH_RECORD=DIR torchrun --standalone --nproc_per_node=2 train_seed.py

records it (``pip install tools/recorder`` first). On CPU ranks: DS_ACCELERATOR=cpu
CUDA_VISIBLE_DEVICES=''. ``--bench N`` instead times N optimizer steps of one engine and prints the
seconds (for the recorder's overhead per fetch)."""

import argparse
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.utils.checkpoint

import deepspeed

# A DeepSpeed source checkout without its C++ sources cannot build the CPU shared-memory op; it only
# serves inference all-reduce, not training collectives.
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False


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

    def __init__(self):
        super().__init__()
        self.adapter = Adapter()

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.adapter, x, use_reentrant=True)


CONFIG = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 16,
                          "stage3_prefetch_bucket_size": 0, "stage3_max_reuse_distance": 0,
                          "offload_param": {"device": "cpu"}},
    "zero_allow_untested_optimizer": True,
    "steps_per_print": 10**9,
}


def new_engine():
    torch.manual_seed(1234)
    model = Model()
    engine, *_ = deepspeed.initialize(model=model, config=CONFIG,
                                      model_parameters=[p for p in model.parameters() if p.requires_grad])
    return engine


def train(engine, steps, rank, salt):
    for mu in range(steps * CONFIG["gradient_accumulation_steps"]):
        torch.manual_seed(100 + 1000 * rank + 10 * salt + mu)
        loss = engine(torch.randn(2, 8, requires_grad=True)).pow(2).mean()
        engine.backward(loss)
        engine.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", type=int, default=0)
    parser.add_argument("--checkpoint-dir", default=os.path.join(tempfile.gettempdir(), "zfetch_train_seed_ckpt"))
    args = parser.parse_args()
    deepspeed.init_distributed()
    rank = torch.distributed.get_rank()
    if args.bench:
        engine = new_engine()
        train(engine, 1, rank, 0)  # the trace is recorded in the first pass; time the later ones
        start = time.perf_counter()
        train(engine, args.bench, rank, 1)
        print(f"bench rank {rank}: {args.bench} steps in {time.perf_counter() - start:.6f} s", flush=True)
        return
    ckpt_dir = args.checkpoint_dir  # both ranks: each writes its own shards under the one tag
    try:
        engine = new_engine()
        train(engine, 1, rank, 0)
        engine.save_checkpoint(ckpt_dir, tag="seed")
        engine.destroy()
        engine = new_engine()
        engine.load_checkpoint(ckpt_dir, tag="seed")
        train(engine, 1, rank, 1)
        print(f"rank {rank}: pass", flush=True)
    except RuntimeError as exc:
        print(f"rank {rank}: DeepSpeed raised:\n{exc}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
