#!/usr/bin/env python3
"""Real DeepSpeed's step time under CPU parameter offload against zfetch's prediction, per
configuration, and their Spearman rank correlation (docs/gpu.md "Real DeepSpeed").

    offload_sweep_compare.py SWEEP.json --scenario S.yaml --calibration C.json --zfetch ZFETCH
                             [--expect TABLE | --write TABLE]

SWEEP.json is what ``tools/gpu/real_deepspeed.py sweep`` measured (median forward+backward time
per configuration); each configuration is predicted by ``zfetch run S.yaml --calibration C.json
--set KEY=VALUE ...`` (its last step: the steady state). Nothing is fitted on the measurements.
Prints the table; with --expect, exit 1 when it differs from the committed TABLE (a model change
that moves a prediction shows), with --write, writes it.
"""

import argparse
import json
import subprocess
import sys

KNOBS = ("stage3_prefetch_bucket_size", "stage3_max_live_parameters", "stage3_max_reuse_distance")


def ranks(values):
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs, ys):
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = (sum((a - mx)**2 for a in rx) * sum((b - my)**2 for b in ry))**0.5
    return cov / var


def predict(args, sweep, row):
    cmd = [args.zfetch, "run", args.scenario, "--calibration", args.calibration, "--json",
           "--set", f"timing.tokens_per_micro_batch={sweep['tokens']}", "--set", "stage3_param_persistence_threshold=0"]
    for knob in KNOBS:
        cmd += ["--set", f"{knob}={row[knob]}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)["timeline"]["steps"][-1]


def table(args):
    with open(args.sweep) as f:
        sweep = json.load(f)
    lines = [f"# {sweep['device']}, DeepSpeed {sweep['deepspeed']}: {sweep['layers']} layers, hidden {sweep['hidden']}, "
             f"{sweep['tokens']} tokens, offload_param cpu; measured: median forward+backward of "
             f"{sweep['timed_steps']} steps after {sweep['warmup_steps']}",
             f"{'prefetch':>10} {'max_live':>11} {'reuse':>11} {'measured_ms':>12} {'zfetch_ms':>10} {'error':>8} "
             f"{'zfetch_exposed_ms':>18} {'gathered_MB':>12}"]
    measured, predicted = [], []
    for row in sweep["rows"]:
        step = predict(args, sweep, row)
        m, p = row["forward_backward_median_ns"], step["step_ns"]
        measured.append(m)
        predicted.append(p)
        lines.append(f"{row[KNOBS[0]]:>10} {row[KNOBS[1]]:>11} {row[KNOBS[2]]:>11} {m / 1e6:>12.2f} {p / 1e6:>10.2f} "
                     f"{(p - m) / m * 100:>+7.1f}% {step['exposed_comm_ns'] / 1e6:>18.2f} "
                     f"{step['gathered_bytes'] / 1e6:>12.1f}")
    lines.append(f"spearman {spearman(predicted, measured):.3f} over {len(measured)} configurations")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--zfetch", required=True)
    ap.add_argument("--expect", metavar="TABLE")
    ap.add_argument("--write", metavar="TABLE")
    args = ap.parse_args()
    text = table(args)
    sys.stdout.write(text)
    if args.write:
        with open(args.write, "w") as f:
            f.write(text)
    if args.expect:
        with open(args.expect) as f:
            if f.read() != text:
                print(f"offload_sweep_compare: the table differs from {args.expect}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
