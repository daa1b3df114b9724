#!/usr/bin/env python3
"""The PyTorch baselines of `zfetch-gpu bench`, on the same buckets (docs/gpu.md "Baselines").

1. Small parameters: DeepSpeed's coalesced gather done the way DeepSpeed does it in PyTorch
   (concatenate each rank's partitions, one all_gather_into_tensor, then one copy per parameter
   into its own tensor), on bench's bucket of 1,000 bf16 params of 1 to 64 KiB.
2. Large buckets: bench's transformer-like buckets of 64 MiB to 1 GiB copied from a gathered flat
   buffer into separately allocated parameter tensors with one Tensor.copy_ per parameter, beside
   one copy of the whole buffer.

CUDA events around each iteration, 3 warm-up iterations, the median of 20. One process, one GPU,
the NCCL backend over one rank (what bench's NCCL column measures on one GPU).

usage: torch_baselines.py [--out FILE.json]
"""
import argparse
import json
import os
import statistics
import tempfile

import torch
import torch.distributed as dist

MASK = (1 << 64) - 1


def mix64(x):
    """splitmix64's finaliser, as cuda_kernels/partition.h mix64."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def hash3(a, b, c):
    return mix64(mix64(mix64(a) ^ b) ^ c)


def small_params_numels(count=1000, seed=1):
    """bench's small-params bucket (cuda_kernels/bench.cu run_bench): bf16 elements."""
    return [(1024 + hash3(seed, 77, i) % (63 * 1024 + 1)) // 2 for i in range(count)]


def bench_bucket_sizes(min_bytes, max_bytes):
    """cuda_kernels/partition.cc bench_bucket_sizes."""
    sizes, b = [], max(min_bytes, 1)
    while b <= max_bytes:
        sizes.append(b)
        b *= 4 if b < (16 << 20) else 2
    return sizes


def bench_bucket_numels(nbytes, elem_bytes, unit):
    """cuda_kernels/partition.cc bench_bucket_numels."""
    total = nbytes // elem_bytes
    if total < 8 * unit:
        return [max(unit, total // unit * unit)]
    layers = min(max(nbytes >> 24, 1), 4)
    per_layer = total // layers
    vec = (max(per_layer // 2048, 1) + unit - 1) // unit * unit
    mat = (per_layer - vec) // 3 // unit * unit
    return [mat, mat, mat, vec] * layers


def time_us(fn, samples=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def deepspeed_style(numels, world, rank, dtype):
    """cat of this rank's partitions, all_gather_into_tensor, one copy_ per param (per rank)."""
    dev = torch.device("cuda")
    parts = []
    for n in numels:
        p = (n + world - 1) // world  # partition size with padding (docs/semantics.md 1.3)
        parts.append(torch.randn(p, device=dev).to(dtype))
    params = [torch.empty(n, device=dev, dtype=dtype) for n in numels]
    rank_numel = sum(t.numel() for t in parts)
    gathered = torch.empty(rank_numel * world, device=dev, dtype=dtype)
    offsets, at = [], 0
    for t in parts:
        offsets.append(at)
        at += t.numel()

    def reassemble():
        for i, n in enumerate(numels):
            p = parts[i].numel()
            for r in range(world):
                real = min(max(n - r * p, 0), p)
                if real == 0:
                    break
                src = gathered.narrow(0, r * rank_numel + offsets[i], real)
                params[i].narrow(0, r * p, real).copy_(src)

    def full():
        flat = torch.cat(parts)
        dist.all_gather_into_tensor(gathered, flat)
        reassemble()

    def gather_only():
        dist.all_gather_into_tensor(gathered, torch.cat(parts))

    def copies_only():
        reassemble()

    return {"cat_allgather_copies_us": time_us(full),
            "cat_allgather_us": time_us(gather_only),
            "copies_us": time_us(copies_only),
            "params": len(numels),
            "bytes": sum(numels) * torch.tensor([], dtype=dtype).element_size(),
            "copies_per_gather": sum(1 for n in numels for r in range(world)
                                     if min(max(n - r * ((n + world - 1) // world), 0),
                                            (n + world - 1) // world) > 0)}


def large_copies(sizes, dtype):
    """Per-param copy_ from a gathered flat buffer into separately allocated tensors."""
    dev = torch.device("cuda")
    rows = []
    for nbytes in sizes:
        numels = bench_bucket_numels(nbytes, 2, 64)
        flat = torch.randn(sum(numels), device=dev).to(dtype)
        params = [torch.empty(n, device=dev, dtype=dtype) for n in numels]
        whole = torch.empty_like(flat)

        def per_param():
            at = 0
            for p, n in zip(params, numels):
                p.copy_(flat.narrow(0, at, n))
                at += n

        rows.append({"bytes": sum(numels) * 2, "params": len(numels),
                     "per_param_copy_us": time_us(per_param),
                     "one_copy_us": time_us(lambda: whole.copy_(flat))})
        del flat, params, whole
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="results JSON")
    args = ap.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast
    init = tempfile.NamedTemporaryFile(delete=False).name
    dist.init_process_group("nccl", init_method=f"file://{init}", rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    torch.cuda.set_device(0)
    small = deepspeed_style(small_params_numels(), 1, 0, torch.bfloat16)
    large = large_copies(bench_bucket_sizes(64 << 20, 1 << 30), torch.bfloat16)
    dist.destroy_process_group()
    if os.path.exists(init):  # the file store may have removed it already
        os.unlink(init)
    print(f"# PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}; medians of 20 (us)")
    print(f"TORCH small path=cat+all_gather_into_tensor+copy_per_param "
          f"us={small['cat_allgather_copies_us']:.2f} params={small['params']} "
          f"bytes={small['bytes']} copies={small['copies_per_gather']}")
    print(f"TORCH small path=cat+all_gather_into_tensor us={small['cat_allgather_us']:.2f}")
    print(f"TORCH small path=copy_per_param us={small['copies_us']:.2f}")
    for r in large:
        print(f"TORCH large bytes={r['bytes']} params={r['params']} "
              f"per_param_copy_us={r['per_param_copy_us']:.2f} one_copy_us={r['one_copy_us']:.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
                       "small_params": small, "large": large}, f, indent=1)


if __name__ == "__main__":
    main()
