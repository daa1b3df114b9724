"""Print a zfetch trace (JSON Lines) as per-step tables in the style of docs/semantics.md 7.6.

    python3 tools/recorder/summarize.py TRACE.jsonl [--engine E] [--micro-step M] [--raw]

One row per hook (forward/recompute pre-hook, backward pre-hook) with the coordinator's trace step, the
params its fetch gathered (G), the queue entries its check popped (pop), and what the matching post hook
released (post); getter events get their own rows; schedule events (optimizer step, checkpoint,
restart) are listed between the passes.  --raw prints every event, one per line.
"""

import argparse
import json
import sys


def short(name):
    return name if name else "<root>"


def load(path):
    with open(path) as f:
        header = json.loads(f.readline())
        return header, [json.loads(line) for line in f if line.strip()]


def raw(events):
    for e in events:
        s = (f"{e['seq']:5d} e{e['engine']} st{e['step']} mu{e['micro_step']} {e['phase']:9s} "
             f"{e['kind']:17s}")
        if "trace_step" in e:
            s += f" s={e['trace_step']}"
        if "module_id" in e:
            s += f" M{e['module_id']}({short(e['module'])})"
        if "param_id" in e:
            s += f" P{e['param_id']}({e['param']})"
        for k in ("status", "numel", "group"):
            if k in e:
                s += f" {k}={e[k]}"
        print(s)


def tables(events, engine=None, micro_step=None):
    rows = []  # dicts
    open_rows = {}  # (module_id, kind) -> row awaiting its post hook
    current = None
    key = None

    def flush_key(k):
        print(f"\n== engine {k[0]}, micro-step {k[1]} (optimizer steps so far: {k[2]})")
        print(f"{'s':>3} | {'hook':<9} | {'module':<22} | {'G':<28} | {'pop':<40} | post")
        for r in rows:
            if r.get("plain"):
                print(f"{'':>3} | {r['plain']}")
                continue
            print(f"{r['s']:>3} | {r['hook']:<9} | {r['module']:<22} | {', '.join(r['G']) or '-':<28} | "
                  f"{', '.join(r['pop']) or '-':<40} | {', '.join(r['post']) if r['closed'] else '(no post hook)'}"
                  + (f" [{r['post_at']}]" if r.get("post_at") else ""))

    for e in events:
        k = (e["engine"], e["micro_step"], e["step"])
        if (engine is not None and e["engine"] != engine) or (micro_step is not None and e["micro_step"] != micro_step):
            continue
        if key is not None and k[:2] != key[:2]:
            flush_key(key)
            rows, open_rows, current = [], {}, None
        key = k
        kind = e["kind"]
        mname = f"{short(e.get('module', ''))}#{e.get('module_id', '')}"
        pname = e.get("param", "")
        if kind in ("module_pre", "backward_pre"):
            hook = {"module_pre": e["phase"], "backward_pre": "bwd"}[kind]
            current = {"s": e["trace_step"], "hook": hook, "module": mname, "G": [], "pop": [], "post": [],
                       "closed": False}
            rows.append(current)
            open_rows.setdefault((e["module_id"], "fwd" if kind == "module_pre" else "bwd"), []).append(current)
        elif kind == "gather" and current is not None:
            current["G"].append(pname)
        elif kind == "recompute_attach" and current is not None:
            current["G"].append(f"(attach {pname} -> {short(e['module'])}#{e['module_id']})")
        elif kind == "queue_pop" and current is not None:
            current["pop"].append(f"{pname}@{e['trace_step']}")
        elif kind in ("module_post", "backward_post"):
            lst = open_rows.get((e["module_id"], "fwd" if kind == "module_post" else "bwd"), [])
            current = None
            if lst:
                r = lst.pop()
                r["closed"] = True
                r["post_at"] = f"at s={e['trace_step']}"
                current = r
                current_post = r
            else:
                rows.append({"plain": f"{kind} {mname} without a matching pre hook"})
        elif kind == "release":
            target = None
            for r in reversed(rows):
                if not r.get("plain") and r["closed"] and r["module"] == mname:
                    target = r
                    break
            if target is not None:
                target["post"].append(pname)
            else:
                rows.append({"plain": f"release {pname} by {mname} (leftover drain / other)"})
        elif kind in ("access", "register_external", "getter_gather"):
            rows.append({"plain": f"{kind} {pname} in {mname}" + (f" status={e['status']}" if "status" in e else "")})
        elif kind == "mismatch":
            rows.append({"plain": f"MISMATCH at s={e['trace_step']} in {mname}"})
        elif kind in ("pass_start", "trace_record", "trace_complete", "trace_invalidate", "optimizer_step",
                      "partition_all", "persistent_gather", "checkpoint_save", "checkpoint_load", "restart",
                      "engine_init", "error"):
            extra = f" {pname}" if pname else ""
            extra += f" numel={e['numel']}" if "numel" in e and kind == "trace_complete" else ""
            rows.append({"plain": f"[{kind}{extra}]"})
    if key is not None:
        flush_key(key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--engine", type=int)
    ap.add_argument("--micro-step", type=int)
    ap.add_argument("--raw", action="store_true")
    a = ap.parse_args()
    header, events = load(a.trace)
    print(json.dumps(header))
    if a.raw:
        raw([e for e in events if (a.engine is None or e["engine"] == a.engine) and
             (a.micro_step is None or e["micro_step"] == a.micro_step)])
    else:
        tables(events, a.engine, a.micro_step)


if __name__ == "__main__":
    sys.exit(main())
