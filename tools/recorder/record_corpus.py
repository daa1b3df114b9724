"""Record the converted corpus as a user would: one process group per scenario and policy, started with
only ZFETCH_RECORD set (and ZFETCH_RECORD_RESIDENCY_INDEPENDENT=1 for the other policy), so that the
installed zfetch_record package writes each rank's trace and scenario.

    PYTHONPATH=DEEPSPEED_CHECKOUT VENV/bin/python tools/recorder/record_corpus.py --out DIR [--budget S]
        [--stop-after S] [--only KEY ...] [--in-order] [--slots N]

Run it with the python of an environment where `pip install tools/recorder` was done (check_package.sh
does both): tools/recorder itself must not be on PYTHONPATH, or the package under test would be the
source tree. Each run is run_scenario.py --recorder-from-environment over one scenario (the generic
runner builds the scenario's torch model), its ranks started like torchrun's (corpus_driver.py --spawn).
Runs go side by side while their ranks fit in --slots CPUs. Writes DIR/runs/KEY.POLICY/ (trace.rankR.jsonl,
scenario.rankR.yaml, scenario.rankR.observed.json, result.json, log.txt) and DIR/recorded.tgz (all of it
but the side notes); check_recorded.py compares each written scenario's simulation with its trace."""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
POLICIES = ("resident-skip", "residency-independent")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def planned_runs(manifest, only, in_order):
    runs = []
    entries = {entry["key"]: entry for entry in manifest["scenarios"] if "key" in entry}
    for key in (only if only and in_order else entries):
        entry = entries.get(key)
        if entry is None or (only and key not in only):
            continue
        for policy in POLICIES:
            if not (entry.get("skip") or {}).get(policy):
                runs.append((entry, policy))
    if not in_order:
        # the largest world sizes first: they are the hardest to fit later
        runs.sort(key=lambda r: -int(r[0]["world_size"]))
    return runs


class Run:

    def __init__(self, entry, policy, args):
        self.entry, self.policy = entry, policy
        self.world = int(entry["world_size"])
        self.name = f"{entry['key']}.{policy}"
        self.dir = os.path.join(args.out, "runs", self.name)
        self.limit = float(entry.get("time_limit_s") or 60) + 60  # the imports and rendezvous too
        self.proc = None
        self.started = 0.0

    def start(self, args):
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(os.path.join(self.dir, "result"))
        # PYTHONSAFEPATH: the runner's folder (tools/recorder) must not shadow the installed package
        env = dict(os.environ, ZFETCH_RECORD=self.dir, PYTHONSAFEPATH="1")
        env.pop("ZFETCH_RECORD_RESIDENCY_INDEPENDENT", None)
        if self.policy == "residency-independent":
            env["ZFETCH_RECORD_RESIDENCY_INDEPENDENT"] = "1"
        cmd = [sys.executable, os.path.join(HERE, "corpus_driver.py"), "--spawn", str(self.world), "--port",
               str(free_port()), "--", os.path.join(HERE, "run_scenario.py"), "--manifest", args.manifest,
               "--world", str(self.world), "--out", os.path.join(self.dir, "result"), "--only", self.entry["key"],
               "--policy", self.policy, "--recorder-from-environment",
               "--ckpt-root", os.path.join(args.work, "ckpt", self.name)]
        self.log = open(os.path.join(self.dir, "log.txt"), "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.started = time.time()

    def stop(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                pass

    def finish(self, timed_out):
        self.log.close()
        produced = os.path.join(self.dir, "result", f"{self.name}.result.json")
        result = {"key": self.entry["key"], "policy": self.policy, "world_size": self.world,
                  "yaml": self.entry.get("yaml"), "exit": self.proc.returncode,
                  "seconds": round(time.time() - self.started, 1)}
        if timed_out:
            result["outcome"] = "timeout"
        if os.path.exists(produced):
            with open(produced) as f:
                run = json.load(f)
            for k in ("outcome", "exc_type", "exc_str", "where", "warnings"):
                if k in run and k not in result:
                    result[k] = run[k]
        result.setdefault("outcome", "process-died")
        result["files"] = sorted(f for f in os.listdir(self.dir) if f.startswith(("trace.", "scenario.")))
        shutil.rmtree(os.path.join(self.dir, "result"), ignore_errors=True)
        with open(os.path.join(self.dir, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=os.path.join(HERE, "corpus", "manifest.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/zfetch_record_corpus")
    ap.add_argument("--budget", type=float, default=240.0, help="wall seconds: no run starts after it")
    ap.add_argument("--stop-after", type=float, help="wall seconds: runs still going then are stopped (timeout)")
    ap.add_argument("--in-order", action="store_true",
                    help="start the runs in the order of --only (default: the largest world sizes first)")
    ap.add_argument("--slots", type=int, default=max(1, (os.cpu_count() or 2) - 2), help="CPUs for ranks")
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    if "zfetch_record" in os.environ.get("PYTHONPATH", "") or os.path.join("tools", "recorder") in os.environ.get(
            "PYTHONPATH", ""):
        print("tools/recorder is on PYTHONPATH: the installed package would not be the one recorded with",
              file=sys.stderr)
        return 2
    args.manifest = os.path.abspath(args.manifest)
    with open(args.manifest) as f:
        manifest = json.load(f)
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    t0 = time.time()
    waiting = [Run(entry, policy, args) for entry, policy in planned_runs(manifest, args.only, args.in_order)]
    running, results = [], []
    print(f"record_corpus: {len(waiting)} runs, {args.slots} slots, budget {args.budget:.0f} s", flush=True)
    while waiting or running:
        used = sum(r.world for r in running)
        for run in list(waiting):
            if time.time() - t0 > args.budget:
                break
            if used + run.world <= args.slots or not running:
                waiting.remove(run)
                run.start(args)
                running.append(run)
                used += run.world
        if time.time() - t0 > args.budget and not running:
            break
        time.sleep(0.2)
        for run in list(running):
            now = time.time()
            timed_out = now - run.started > run.limit or (args.stop_after is not None
                                                          and now - t0 > args.stop_after)
            if run.proc.poll() is None and not timed_out:
                continue
            if timed_out:
                run.stop()
            running.remove(run)
            results.append(run.finish(timed_out))
            r = results[-1]
            print(f"{r['key']} {r['policy']}: {r['outcome']} exit {r['exit']} {r['seconds']} s, "
                  f"{len(r['files'])} files", flush=True)
    for run in waiting:
        results.append({"key": run.entry["key"], "policy": run.policy, "outcome": "not-run"})
    with open(os.path.join(args.out, "runs", "summary.json"), "w") as f:
        json.dump(sorted(results, key=lambda r: (r["key"], r["policy"])), f, indent=1)
        f.write("\n")
    archive = os.path.join(args.out, "recorded.tgz")
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(os.path.join(args.out, "runs"), arcname="recorded",
               filter=lambda info: None if info.name.endswith(".notes.jsonl") else info)
    counts = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    print(f"== {len(results)} runs in {time.time() - t0:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"; {archive} {os.path.getsize(archive)} bytes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
