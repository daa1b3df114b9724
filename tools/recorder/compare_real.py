"""Compare traces recorded from real DeepSpeed with zfetch's simulation, event by event.

    python3 tools/recorder/compare_real.py --corpus DIR_OR_TGZ [--only KEY ...] [--zfetch BIN]
    python3 tools/recorder/compare_real.py --seed-real            # the traces in scenarios/real/
    python3 tools/recorder/compare_real.py --scenario S.yaml --policy P --real T.jsonl [--error E.txt]

--corpus takes what tools/recorder/run_corpus.sh produced (corpus.tgz, or the folder it unpacks to):
per scenario and policy a result file (outcome, where it failed, the process's id bases) and the
rank-0 trace.  For each, the simulator runs the same scenario and policy
(``zfetch run YAML --discovery P --accelerator cpu --trace F --json``) and ``zfetch diff`` compares the two traces
(docs/diff.md) on the event kinds the recorder covers (``--kinds recorded``: own-param reads left
out), rank 0, each event on the fields both sides write for its kind (engine, step, micro_step,
phase, kind, trace_step, module, param, status, numel, bytes), ids ignored (a corpus run's ids are
process-global); the params of one coalesced gather, wait or release compare as a set.  The
outcome is compared here (class, exact message with ids made relative to the run's id bases,
position).  A run that compared no event fails, and so does a --known-difference that no longer
differs.  Prints one row per run:

    scenario  policy  outcome(real)  outcome(sim)  events(real/sim)  first-divergence

and, for each divergence, the events around it on both sides.  Exit code 0 when every compared run
agrees (skipped runs do not count), 1 otherwise, 2 on bad input.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in tools/recorder (it would be copied with the tree to the machine that runs DeepSpeed)
import tarfile
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

BASE_FIELDS = ("engine", "step", "micro_step", "phase", "kind")
# kind -> fields compared besides BASE_FIELDS: those that both the recorder and the simulator write
KIND_FIELDS = {
    "pass_start": (),
    "trace_record": (),
    "trace_complete": ("numel", ),
    "trace_invalidate": ("trace_step", "module"),
    "module_pre": ("trace_step", "module"),
    "module_post": ("trace_step", "module"),
    "backward_pre": ("trace_step", "module"),
    "backward_post": ("trace_step", "module"),
    "fetch": ("trace_step", "module"),
    "mismatch": ("trace_step", "module"),
    "gather": ("param", "numel", "bytes", "group"),
    "prefetch": ("param", "numel", "bytes", "group"),
    "wait": ("param", ),
    "queue_pop": ("trace_step", "param"),
    "release": ("param", ),
    "partition_all": ("param", ),
    "recompute_attach": ("module", "param"),
    "access": ("module", "param", "status"),
    "register_external": ("module", "param", "status"),
    "getter_gather": ("param", "numel", "bytes"),
    "optimizer_step": (),
    "persistent_gather": ("param", "numel", "bytes"),
}
# not compared: engine_init, restart, checkpoint_save/load, empty_partition_cache (bookkeeping whose
# placement differs by design), compute and transpose (not recorded), error (the simulator writes it
# only for some failures; the outcome and its position are compared instead)

SEED_REAL = [
    # (scenario, policy, real trace, exact error text or None); ids: the seed runs were fresh processes
    ("scenarios/seed/resident_adapter_resume.yaml", "resident-skip",
     "scenarios/real/resident_adapter_resume.resident-skip.rank0.jsonl",
     "scenarios/real/resident_adapter_resume.resident-skip.error.txt"),
    ("scenarios/seed/resident_adapter_resume.yaml", "residency-independent",
     "scenarios/real/resident_adapter_resume.residency-independent.rank0.jsonl", None),
    # from the matrix process: ids not fresh, bases inferred
    ("tests/golden/nonreentrant_adapter_resume.yaml", "resident-skip",
     "scenarios/real/nonreentrant_adapter_resume.resident-skip.rank0.jsonl", None),
    ("tests/golden/nonreentrant_adapter_resume.yaml", "residency-independent",
     "scenarios/real/nonreentrant_adapter_resume.residency-independent.rank0.jsonl", None),
]


# ----------------------------------------------------------------------------------------------
# traces


ROOT_NAME = "<root>"  # how traces name the root module (older ones: "", named_modules()' name)


def root_named(module):
    return ROOT_NAME if module == "" else module


def load_trace(path):
    """Header and events, the root named ROOT_NAME whatever the trace's age; a last line cut short
    (a run that died) is dropped."""
    with open(path, encoding="utf-8") as f:
        header = json.loads(f.readline())
        events = []
        for line in f:
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                if line.endswith("\n"):
                    raise
                continue
            if "module" in e:
                e["module"] = root_named(e["module"])
            events.append(e)
    return header, events


def _own_read(e):
    p, m = e.get("param", ""), e.get("module")
    return m is not None and (p.rsplit(".", 1)[0] if "." in p else ROOT_NAME) == m


def compared_events(events):
    return [e for e in events
            if e.get("rank", 0) == 0 and e["kind"] in KIND_FIELDS and not (e["kind"] == "access" and _own_read(e))]


def infer_bases(real, sim):
    """Module base: the root's id at its first event; param base: real id - simulated id of the first
    param both traces name in engine 0."""
    bases = {"module": None, "param": None}
    for e in real:
        if e.get("module") == ROOT_NAME and "module_id" in e and e["engine"] == 0:
            bases["module"] = e["module_id"]
            break
    sim_ids = {}
    for e in sim:
        if "param_id" in e and e["engine"] == 0:
            sim_ids.setdefault(e["param"], e["param_id"])
    for e in real:
        if "param_id" in e and e["engine"] == 0 and e["param"] in sim_ids:
            bases["param"] = e["param_id"] - sim_ids[e["param"]]
            break
    return {k: (v or 0) for k, v in bases.items()}


def normalise_message(message, bases):
    """Process-global ids in a DeepSpeed message, made relative to the run's first ids."""
    if not message:
        return message
    m, p = bases.get("module", 0), bases.get("param", 0)
    message = re.sub(r"module id: (\d+)", lambda x: f"module id: {int(x.group(1)) - m}", message)
    message = re.sub(r" id=(\d+)'", lambda x: f" id={int(x.group(1)) - p}'", message)
    # a ds_summary() without the debug name, and GatheredParameters' list of ds_ids
    message = re.sub(r"\{'id': (\d+), ", lambda x: f"{{'id': {int(x.group(1)) - p}, ", message)
    message = re.sub(r"(already gathered by an outer context: )\[([\d, ]+)\]",
                     lambda x: x.group(1) + "[" + ", ".join(
                         str(int(v) - p) for v in x.group(2).split(", ")) + "]", message)
    return re.sub(r"'active_sub_modules': \{([\d, ]+)\}",
                  lambda x: "'active_sub_modules': {" + ", ".join(
                      str(int(v) - m) for v in x.group(1).split(", ")) + "}", message)


_SUMMARY = re.compile(r"\{'id': .*?'ds_tensor\.shape': torch\.Size\(\[[\d, ]*\]\)\}")


_PARAM_REPR = re.compile(r"^ Parameter containing:\n.*\)(?= Cannot partition a param in flight$)", re.DOTALL)


def canonical_message(message):
    """A tracing error lists Python sets of params (expected and got), whose order follows the
    params' addresses: compare each set's summaries sorted. The module ids of a param's
    `active_sub_modules` set iterate in the order of their hashes, which for process-global ids
    depends on what ran before in the process: sorted too. The in-flight partition assertion
    starts with the param's repr, its values included, which zfetch leaves out."""
    if message and message.startswith(" Parameter containing:"):
        return _PARAM_REPR.sub("", message)
    if not message or "but got" not in message:
        return message
    message = re.sub(r"'active_sub_modules': \{([\d, ]+)\}",
                     lambda x: "'active_sub_modules': {" + ", ".join(
                         sorted(x.group(1).split(", "), key=int)) + "}", message)
    head, tail = message.split("but got", 1)
    parts = []
    for text in (head, tail):
        items = _SUMMARY.findall(text)
        parts.append(_SUMMARY.sub("{}", text) + "|" + "|".join(sorted(items)))
    return "but got".join(parts)


# ----------------------------------------------------------------------------------------------
# outcomes


def real_outcome_class(res, real_events):
    o = res.get("outcome")
    msg = res.get("exc_str") or ""
    if o == "pass":
        inv = sum(1 for e in real_events if e["kind"] == "trace_invalidate")
        return "trace-invalidated" if inv else "pass"
    if o == "mismatch":
        return "fetch-queue-mismatch"
    if o == "error":
        if msg.startswith("Detected a disagreement"):
            return "rank-divergence"
        if "is invalid for input of size 0" in msg:
            return "not-available"
        if (msg.startswith("{'id':") or "already in registry" in msg or "to be inflight" in msg
                or "to be available" in msg or "expected to be released" in msg
                or "non-inflight parameter" in msg):
            return "inflight-params"
        return "error"
    return o or "?"


def real_position(res, real_events):
    for i in range(len(real_events) - 1, -1, -1):
        e = real_events[i]
        if e["kind"] in ("mismatch", "error"):
            pos = {"engine": e["engine"], "micro_step": e["micro_step"], "phase": e["phase"]}
            if "trace_step" in e:
                pos["trace_step"] = e["trace_step"]
            fetch = fetch_raising(res, real_events[:i])
            if "module" in e:
                pos["module"] = e["module"]
            elif fetch is not None:
                # raised in a module's pre-forward hook, before its forward runs: the runner's
                # `where` names the caller; zfetch names the module whose fetch raised
                pos["module"] = fetch["module"]
                pos["trace_step"] = fetch["trace_step"]
            elif (res.get("where") or {}).get("module") is not None:
                pos["module"] = root_named(res["where"]["module"])
            return pos
    w = res.get("where")
    if w:
        return {"engine": w.get("engine"), "micro_step": w.get("micro_step"), "phase": w.get("phase")}
    return None


def fetch_raising(res, events_before):
    """The last fetch event before an error whose traceback runs through the coordinator's
    fetch_sub_module (the error was raised in that fetch), or None."""
    frames = re.findall(r"partitioned_param_coordinator\.py\", line \d+, in (\w+)", res.get("traceback") or "")
    if "fetch_sub_module" not in frames:
        return None
    for e in reversed(events_before):
        if e["kind"] == "fetch":
            return e
    return None


def sim_position(sim_json):
    f = sim_json.get("failure")
    if not f:
        return None
    pos = {"engine": f.get("engine"), "micro_step": f.get("micro_step"), "phase": f.get("phase")}
    if f.get("trace_step", -1) is not None and f.get("trace_step", -1) >= 0:
        pos["trace_step"] = f["trace_step"]
    if f.get("module") is not None:
        pos["module"] = f["module"]
    return pos


def fmt_pos(pos):
    if not pos:
        return "-"
    s = f"e{pos.get('engine')} mu{pos.get('micro_step')} {pos.get('phase')}"
    if "trace_step" in pos:
        s += f" s{pos['trace_step']}"
    if "module" in pos:
        s += f" '{pos['module']}'"
    return s


# ----------------------------------------------------------------------------------------------
# the simulator


def find_zfetch(given):
    for cand in ([given] if given else []) + [os.path.join(ROOT, "build/release/tools/zfetch")]:
        if cand and os.path.exists(cand):
            return cand
    return None


def simulate(zfetch, yaml_path, policy, tmp):
    out = os.path.join(tmp, f"sim.{os.getpid()}.{threading.get_ident()}.{policy}.jsonl")
    # Every recording ran DeepSpeed's CPU accelerator (CPU ranks, gloo): simulate that one.
    proc = subprocess.run([zfetch, "run", yaml_path, "--discovery", policy, "--accelerator", "cpu", "--trace", out,
                           "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"zfetch run {yaml_path} exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    sim_json = json.loads(proc.stdout)
    _, events = load_trace(out)
    return sim_json, events, out


# What `zfetch diff` compares a recorded run on: the kinds a recorder writes (own-param reads left
# out), rank 0, the fields both sides write for each kind; ids are process-global in a corpus run.
DIFF_OPTIONS = ["--kinds", "recorded", "--rank", "0", "--ignore-ids", "--fields",
                "engine,step,micro_step,phase,kind,trace_step,module,param,status,numel,bytes"]


def zfetch_diff(zfetch, recorded, expected):
    """`zfetch diff --json` of a recorded trace against a simulated one; raises on bad input."""
    proc = subprocess.run([zfetch, "diff", recorded, expected, "--json"] + DIFF_OPTIONS,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"zfetch diff {recorded} exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    return json.loads(proc.stdout)


def yaml_sha256(yaml_rel):
    """The converter's hash of the scenario (YAML bytes, plus a deepspeed_config file)."""
    path = os.path.join(ROOT, yaml_rel)
    try:
        sys.path.insert(0, HERE)
        import scenario_to_json as s2j
        return s2j.convert(path, ROOT)["source_sha256"]
    except Exception:  # noqa: BLE001 - PyYAML missing or the scenario no longer converts
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()


# ----------------------------------------------------------------------------------------------


class Row:

    def __init__(self, scenario, policy):
        self.scenario = scenario
        self.policy = policy
        self.real = "-"
        self.sim = "-"
        self.events = "-"
        self.divergence = "-"
        self.details = []
        self.agree = None  # None: not compared
        self.outcome_agrees = None  # outcome class, position and message
        self.events_agree = None  # the event sequences (zfetch diff)


def compare_one(row, zfetch, yaml_rel, policy, real_trace, res, tmp, context, error_text=None):
    sim_json, sim_all, sim_path = simulate(zfetch, os.path.join(ROOT, yaml_rel), policy, tmp)
    sim_ev = compared_events(sim_all)
    row.sim = sim_json["outcome"]
    if real_trace is None or not os.path.exists(real_trace):
        row.real = res.get("outcome", "?")
        if res.get("skip_reason"):
            row.real = "skipped"
            row.details.append(f"skipped: {res['skip_reason']}")
        elif res.get("exc_str"):
            row.details.append(f"{row.real}: {res['exc_str']}")
        row.events = f"-/{len(sim_ev)}"
        return
    _, real_all = load_trace(real_trace)
    real_ev = compared_events(real_all)
    real_cls = real_outcome_class(res, real_all)
    row.real = real_cls
    bases = res.get("bases") or infer_bases(real_ev, sim_ev)
    problems = []
    # The events are compared by `zfetch diff` (docs/diff.md), on the fields both sides write.
    report = zfetch_diff(zfetch, real_trace, sim_path)
    row.events = f"{report['compared']['recorded']}/{report['compared']['expected']}"
    recorded_n, expected_n = report["compared"]["recorded"], report["compared"]["expected"]
    # A run that failed before its first event (DeepSpeed's initialize) has no trace on either
    # side; it is compared on its outcome and message alone (below). One empty side proves nothing.
    no_trace = recorded_n == 0 and expected_n == 0 and real_cls != "pass"
    if no_trace:
        row.details.append("no trace on either side (failed before the first event): outcome and "
                           "message compared")
    elif recorded_n == 0 or expected_n == 0:
        problems.append("nothing-compared")
        row.details.append("no event was compared: the recorded or the simulated trace is empty")
    if not report["equal"]:
        first = report["divergences"][0] if report["divergences"] else None
        row.divergence = f"line {first['line']}" if first else "trace"
        s = report["summary"]
        row.details.append(f"zfetch diff: {s['missing']} missing, {s['extra']} extra, {s['changed']} "
                           f"changed; first: {first['message'] if first else '-'}")
        if report.get("error"):
            row.details.append(report["error"].rstrip())
        problems.append("trace")
    else:
        row.divergence = "none"
    # outcome: class, message, position
    if real_cls != row.sim:
        problems.append("outcome")
        row.details.append(f"outcome: real {real_cls}, simulated {row.sim}")
    real_msg = res.get("exc_str")
    if error_text is not None:
        with open(error_text, encoding="utf-8", newline="") as f:
            real_msg = f.read()
    real_msg = normalise_message(real_msg, bases)
    sim_fail = sim_json.get("failure") or {}
    if real_cls != "pass" or sim_fail:
        rp, sp = real_position(res, real_all), sim_position(sim_json)
        keys = ("engine", "micro_step", "phase", "trace_step", "module")
        if (rp is None) != (sp is None) or (rp is not None and any(
                rp.get(k) != sp.get(k) for k in keys if k in rp and k in sp)):
            problems.append("position")
            row.details.append(f"failure position: real {fmt_pos(rp)}, simulated {fmt_pos(sp)}")
        if real_cls == "not-available":
            # PyTorch's error comes from whatever op of the model meets the empty partition (here
            # the runner's reshape); zfetch names the module and the param instead.
            row.details.append(f"message not compared (the model's op raises it): {real_msg!r}")
        elif real_msg is not None and sim_fail.get("message") is not None:
            if real_msg == sim_fail["message"]:
                row.details.append(f"message identical ({len(real_msg)} bytes)")
            elif canonical_message(real_msg) == canonical_message(sim_fail["message"]):
                row.details.append(f"message identical up to the order of its Python sets or a param's repr "
                                   f"({len(real_msg)} bytes)")
            else:
                problems.append("message")
                row.details.append(f"message differs:\n    real: {real_msg[:600]!r}\n    sim:  "
                                   f"{sim_fail['message'][:600]!r}")
        elif real_msg:
            row.details.append(f"real {res.get('exc_type', 'exception')}: {real_msg[:600]}")
    if problems and row.divergence in ("-", "none"):
        row.divergence = "+".join(problems)
    row.agree = not problems
    row.outcome_agrees = not any(p in problems for p in ("outcome", "position", "message"))
    row.events_agree = "trace" not in problems and "nothing-compared" not in problems


def load_corpus(path, tmp):
    if os.path.isfile(path):
        with tarfile.open(path) as tf:
            tf.extractall(tmp)
        path = tmp
    results = sorted(glob.glob(os.path.join(path, "**", "*.result.json"), recursive=True))
    return results


def print_table(rows):
    headers = ("scenario", "policy", "outcome(real)", "outcome(sim)", "events(real/sim)", "first-divergence")
    cells = [headers] + [(r.scenario, r.policy, r.real, r.sim, r.events, r.divergence) for r in rows]
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(headers))]
    for n, c in enumerate(cells):
        print("  ".join(str(x).ljust(w) for x, w in zip(c, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus")
    ap.add_argument("--seed-real", action="store_true")
    ap.add_argument("--scenario")
    ap.add_argument("--policy")
    ap.add_argument("--real")
    ap.add_argument("--error")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--zfetch")
    ap.add_argument("--context", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="comparisons run side by side (default: the number of CPUs)")
    ap.add_argument("-q", "--quiet", action="store_true", help="the table only")
    ap.add_argument("--known-difference", action="append", default=[], metavar="KEY",
                    help="a scenario key whose difference is known and explained (printed, but not "
                    "counted in the exit status); repeatable")
    args = ap.parse_args(argv)
    zfetch = find_zfetch(args.zfetch)
    if zfetch is None:
        print("no zfetch binary: build it (cmake --preset release && cmake --build --preset release "
              "--target zfetch) or pass --zfetch", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []  # (label, yaml_rel, policy, trace, res, error_text)
        if args.seed_real:
            for yaml_rel, policy, trace, err in SEED_REAL:
                _, ev = load_trace(os.path.join(ROOT, trace))
                res = {"outcome": "mismatch" if any(e["kind"] == "mismatch" for e in ev) else "pass"}
                if "resident_adapter" in trace:
                    res["bases"] = {"module": 0, "param": 0}
                label = os.path.splitext(os.path.basename(yaml_rel))[0]
                jobs.append((label, yaml_rel, policy, os.path.join(ROOT, trace), res,
                             os.path.join(ROOT, err) if err else None))
        if args.scenario:
            if not (args.policy and args.real):
                ap.error("--scenario needs --policy and --real")
            _, ev = load_trace(args.real)
            res = {"outcome": "mismatch" if any(e["kind"] == "mismatch" for e in ev) else
                   ("error" if any(e["kind"] == "error" for e in ev) else "pass")}
            jobs.append((os.path.basename(args.scenario), os.path.relpath(os.path.abspath(args.scenario), ROOT),
                         args.policy, args.real, res, args.error))
        if args.corpus:
            for rp in load_corpus(args.corpus, tmp):
                with open(rp) as f:
                    res = json.load(f)
                if args.only and res["key"] not in args.only:
                    continue
                trace = rp[:-len(".result.json")] + ".rank0.jsonl"
                jobs.append((res["key"], res["yaml"], res["policy"], trace, res, None))
                if res.get("source_sha256") and res.get("yaml") and os.path.exists(os.path.join(ROOT, res["yaml"])):
                    if yaml_sha256(res["yaml"]) != res["source_sha256"]:
                        res.setdefault("_notes", []).append(
                            f"{res['yaml']} changed since the run (the comparison uses the current file)")
        if not jobs:
            ap.error("nothing to compare: give --corpus, --seed-real or --scenario")
        def run_one(job):
            label, yaml_rel, policy, trace, res, err = job
            row = Row(label, policy)
            row.details.extend(res.get("_notes", []))
            try:
                compare_one(row, zfetch, yaml_rel, policy, trace, res, tmp, args.context, err)
            except Exception as exc:  # noqa: BLE001 - one bad run must not hide the others
                row.divergence = "compare-error"
                row.agree = False
                row.details.append(f"{type(exc).__name__}: {exc}")
            return row

        # Each comparison is two zfetch processes: threads keep them busy; rows stay in job order.
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(run_one, jobs))
    print_table(rows)
    if not args.quiet:
        for r in rows:
            if r.details and (r.agree is not True or any(d.startswith("message") for d in r.details)):
                print(f"\n== {r.scenario} {r.policy}")
                for d in r.details:
                    print("  " + d)
    compared = [r for r in rows if r.agree is not None]
    agree = sum(1 for r in compared if r.agree)
    skipped = len(rows) - len(compared)
    print(f"\n{agree} agree, {len(compared) - agree} differ, {skipped} not compared (skipped or not run)")
    print(f"outcomes agree on {sum(1 for r in compared if r.outcome_agrees)} of {len(compared)} runs, "
          f"events on {sum(1 for r in compared if r.events_agree)} of {len(compared)}")
    unexpected = [r for r in compared if not r.agree and r.scenario not in args.known_difference]
    # A known difference that no longer differs is stale (drop it), and a run that compared
    # nothing proves nothing.
    stale = [k for k in args.known_difference
             if not any(r.scenario == k and r.agree is False for r in compared)]
    for k in stale:
        print(f"error: --known-difference {k} no longer differs (or was not compared)")
    if not compared:
        print("error: no run was compared")
    return 0 if not unexpected and not stale and compared else 1


if __name__ == "__main__":
    sys.exit(main())
