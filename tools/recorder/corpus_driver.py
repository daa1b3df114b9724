"""Run the whole converted corpus on real DeepSpeed: one torchrun per world size, in parallel.

Called by run_corpus.sh (which sets PYTHONPATH, DS_ACCELERATOR=cpu, ...); see there.

    python3 tools/recorder/corpus_driver.py --out OUTDIR [--budget S] [--only KEY ...] [--worlds 1 2 8]

Each world size gets one process group running run_scenario.py over its scenarios and both policies.
A process that dies or aborts (ranks disagree, a run timed out) is started again for what is left, the
run it was in being recorded as process-died, until the budget's start deadline.  At the end the results
are packed: OUTDIR/corpus.tgz (results, rank-0 traces, logs, the manifest) and OUTDIR/notes.tgz (the
recorder's side notes, dropped if over 15 MiB), and a summary is printed last.
"""

import argparse
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
POLICIES = ("resident-skip", "residency-independent")
MAX_LAUNCHES = 6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(world, port, script):
    """A minimal torchrun (--launcher direct): W ranks with the env:// variables; when one rank fails,
    the others are stopped."""
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable] + script, env=env))
    rc = 0
    while procs:
        for p in list(procs):
            if p.poll() is None:
                continue
            procs.remove(p)
            if p.returncode != 0:
                rc = rc or p.returncode
                for q in procs:
                    q.kill()
        time.sleep(0.2)
    return rc


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--spawn":
        return spawn(int(sys.argv[2]), int(sys.argv[4]), sys.argv[6:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=os.path.join(HERE, "corpus", "manifest.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/zcorpus")
    ap.add_argument("--budget", type=float, default=450.0, help="wall seconds for everything")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--worlds", nargs="*", type=int)
    ap.add_argument("--record-sessions", metavar="DIR", help="run_scenario.py --record-sessions DIR")
    ap.add_argument("--launcher", choices=["torchrun", "direct"], default="torchrun",
                    help="direct: start the ranks without torchrun (env:// variables), e.g. where torchrun fails")
    args = ap.parse_args()
    if args.budget <= 60:
        # no run starts in the budget's last 60 s: a smaller budget would start nothing
        print(f"corpus_driver.py: error: --budget {args.budget:.0f} s leaves no time to start a run "
              "(runs start only until 60 s before its end; give at least 100 s)", file=sys.stderr)
        return 2
    t0 = time.time()
    start_deadline = t0 + args.budget - 60  # no run starts after this
    hard = t0 + args.budget - 15  # everything still running is stopped
    res_dir = os.path.join(args.work, "results")
    os.makedirs(res_dir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    with open(args.manifest) as f:
        manifest = json.load(f)
    entries = [e for e in manifest["scenarios"] if "key" in e and (not args.only or e["key"] in args.only)]
    worlds = sorted({int(e["world_size"]) for e in entries})
    if args.worlds:
        worlds = [w for w in worlds if w in args.worlds]
    # the biggest group first: it takes longest
    worlds.sort(key=lambda w: -sum(1 for e in entries if e["world_size"] == w and
                                   any(not (e.get("skip") or {}).get(p) for p in POLICIES)))
    print(f"corpus: {len(entries)} scenarios, world sizes {worlds}, budget {args.budget:.0f} s", flush=True)

    procs, launches, done = {}, collections.Counter(), set()

    def launch(w):
        port = free_port()
        script = [os.path.join(HERE, "run_scenario.py"), "--manifest", args.manifest, "--world", str(w), "--out",
                  res_dir, "--deadline", str(start_deadline)]
        if args.launcher == "torchrun":
            # a static rendezvous on a free port: --standalone may take a fixed port, and the world
            # sizes run side by side
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={w}",
                   "--master_addr=127.0.0.1", f"--master_port={port}"] + script
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--spawn", str(w), "--port", str(port), "--"] + script
        if args.record_sessions:
            cmd += ["--record-sessions", os.path.abspath(args.record_sessions)]
        if args.only:
            cmd += ["--only"] + args.only
        log = open(os.path.join(res_dir, f"log.w{w}.txt"), "a")
        log.write(f"=== launch {launches[w] + 1} at +{time.time() - t0:.0f} s: {' '.join(cmd)}\n")
        log.flush()
        procs[w] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True),
                    log)
        launches[w] += 1

    def stop(w):
        p, log = procs.pop(w)
        if p.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    pass
        log.write(f"=== exit {p.returncode} at +{time.time() - t0:.0f} s\n")
        log.close()

    for w in worlds:
        launch(w)
    while procs:
        time.sleep(1)
        for w in list(procs):
            p, _ = procs[w]
            if time.time() > hard:
                stop(w)
                print(f"world {w}: stopped at the budget's end", flush=True)
                continue
            if p.poll() is None:
                continue
            rc = p.returncode
            stop(w)
            if os.path.exists(os.path.join(res_dir, f"complete.w{w}")):
                done.add(w)
                print(f"world {w}: complete (+{time.time() - t0:.0f} s, {launches[w]} launch(es))", flush=True)
            elif launches[w] < MAX_LAUNCHES and time.time() < start_deadline - 30:
                print(f"world {w}: process group exited {rc}; starting it again for what is left", flush=True)
                launch(w)
            else:
                print(f"world {w}: process group exited {rc}; not started again", flush=True)

    # every run gets a result
    missing = 0
    for e in entries:
        if e["world_size"] not in worlds:
            continue
        for pol in POLICIES:
            rp = os.path.join(res_dir, f"{e['key']}.{pol}.result.json")
            if os.path.exists(rp):
                continue
            missing += 1
            started = os.path.exists(os.path.join(res_dir, "started", f"{e['key']}.{pol}"))
            with open(rp, "w") as f:
                json.dump({"key": e["key"], "policy": pol, "yaml": e.get("yaml"), "world_size": e["world_size"],
                           "outcome": "process-died" if started else "not-run",
                           "exc_str": "stopped or died (see log.wN.txt)" if started else
                           "not reached within the time budget"}, f, indent=1)

    # pack
    with open(os.path.join(res_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    corpus = os.path.join(args.out, "corpus.tgz")
    with tarfile.open(corpus, "w:gz") as tf:
        for fn in sorted(os.listdir(res_dir)):
            if fn.endswith(".notes.jsonl") or fn == "started":
                continue
            tf.add(os.path.join(res_dir, fn), arcname=f"corpus/{fn}")
    notes = os.path.join(args.out, "notes.tgz")
    with tarfile.open(notes, "w:gz") as tf:
        for fn in sorted(os.listdir(res_dir)):
            if fn.endswith(".notes.jsonl"):
                tf.add(os.path.join(res_dir, fn), arcname=f"notes/{fn}")
    if os.path.getsize(notes) > 15 * 2**20:
        os.unlink(notes)
        print("notes.tgz over 15 MiB: dropped", flush=True)

    # summary, last
    rows = []
    for fn in sorted(os.listdir(res_dir)):
        if fn.endswith(".result.json"):
            with open(os.path.join(res_dir, fn)) as f:
                rows.append(json.load(f))
    counts = collections.Counter(r["outcome"] for r in rows)
    print()
    for r in rows:  # every run that did not simply pass, one line each
        if r["outcome"] in ("skipped", "pass"):
            continue
        w = r.get("where") or {}
        msg = (r.get("exc_str") or "").splitlines()
        print(f"{r['key'][:56]:56s} {r['policy'][:9]:9s} {r['outcome']:12s} {r.get('exc_type', '')} "
              f"e{w.get('engine')} mu{w.get('micro_step')} {w.get('call')}/{w.get('phase')}: "
              f"{msg[0][:100] if msg else ''}")
    slow = sorted((r for r in rows if r.get("seconds")), key=lambda r: -r["seconds"])[:3]
    print("slowest: " + ", ".join(f"{r['key']} {r['policy']} {r['seconds']} s" for r in slow))
    print(f"== {len(rows)} runs in {time.time() - t0:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"; corpus.tgz {os.path.getsize(corpus)} bytes"
          + (f", notes.tgz {os.path.getsize(notes)} bytes" if os.path.exists(notes) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
