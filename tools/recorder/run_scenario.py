"""Run zfetch scenarios on real DeepSpeed ZeRO-3 and record zfetch traces (the generic runner).

Launch (CPU ranks, gloo), from the repository root, with the DeepSpeed snapshot exported to .dsenv/.ds:

    PYTHONPATH=.dsenv/.ds:.dsenv:tools/recorder DS_ACCELERATOR=cpu CUDA_VISIBLE_DEVICES='' \\
      python3 -m torch.distributed.run --standalone --nproc_per_node=W tools/recorder/run_scenario.py \\
      --manifest tools/recorder/corpus/manifest.json --world W --out DIR [--only KEY ...] [--deadline EPOCH]

It runs, in ONE process group, every scenario of the manifest whose world_size is W (converted by
scenario_to_json.py: the machine that runs DeepSpeed needs no YAML library), under both discovery policies, one after the other, and
writes into DIR, per scenario KEY and policy P:

    KEY.P.rank0.jsonl        the rank-0 zfetch trace (tools/recorder/zfetch_record/)
    KEY.P.rank0.notes.jsonl  the recorder's side notes (module/param tables, queues, residency, ...)
    KEY.P.result.json        outcome (pass, or the exception class and exact str(e)), where it failed
                             (engine, micro-step, call, phase), the id bases of this process for the
                             comparison (module counter and Init.param_id before the scenario), the ids
                             per engine, every rank's outcome, seconds, skip reason

Ids are process-global (docs/semantics.md 1.7, 2.2): a scenario that is not the first of the process gets
ids offset by what ran before; compare_real.py subtracts the recorded bases.

The model is built from the scenario's module tree with one generic nn.Module class (a subclass per
`class:` name, so leaf_module classes match): params registered with their shapes, dtypes and
requires_grad = not frozen, tied params as one Parameter object, children in file order.  Its forward
runs the scenario's `forward` program; the tensor computation keeps every trainable param in the
autograd graph in the order the simulator assumes (docs/backward-order.md, sim/autograd_graph.h):

* a hooked module first does its "own compute" with its own params (recursive for a z3 leaf):
  ``h = h * (1 + sum_p mean(p))`` -- one op that saves tensors (the simulator's Compute node);
* a module below a z3 leaf (no hooks) instead reads each own param through the getter (data access);
* ``call`` runs the child on the current activation (``h = child(h)``), adding up a child's
  ``outputs`` tensors; params a child returns are kept and added to ``h`` at the end of the caller's
  forward unless the caller returns them in turn; a call that says what it is fed (``input:
  no_grad``: ``h.detach()``; ``input: forward_input``: the forward's or checkpoint region's input;
  ``input_from: PATH``: the latest output of PATH's call in the same forward, else the input) runs the child on that
  and adds its output: ``h = h + child(x)``; ``output: leaf`` detaches the output and makes it a leaf that
  requires grad (``h = child(h).detach().requires_grad_()``);
* ``access`` reads the param through the attribute chain (``self.adapter_A.weight``), so DeepSpeed's
  ZeROOrderedDict getter sees it; ``metadata`` takes ``.dtype``, ``data`` adds ``sum(p)`` (no saved
  tensor; a partitioned param fails to reshape to its shape, as a real use would);
* ``checkpoint`` is torch.utils.checkpoint.checkpoint(region, h, use_reentrant=R); ``repeat`` loops;
  ``returns`` appends the param to the module's outputs (DeepSpeed's dangling-param path);
* the output is ``outputs`` copies of h plus the returned params; the loss is sum(mean(t^2)).
"""

import argparse
import contextlib
import copy
import gc
import json
import os
import signal
import sys
import time
import traceback
from datetime import timedelta

import torch
import torch.nn as nn
import torch.utils.checkpoint

POLICIES = ("resident-skip", "residency-independent")
WIDTH = 4  # activation width
DATA_SCALE = 1e-3

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


# ----------------------------------------------------------------------------------------------
# run state that `when` conditions read (the simulator's: sim/process_forward.cc condition_holds)


class Ctx:

    def __init__(self):
        self.engine = 0  # engine generation within the scenario: 0, +1 per restart
        self.step = 0  # optimizer steps so far in the scenario
        self.micro = 0  # engine micro-steps % gradient_accumulation_steps at the root's forward
        self.rank = 0
        self.eval = False
        self.generating = False  # inside a `generate` item: `when: {phase: generate}`
        self.forward = 0  # the root forward's number in its micro-step or generate loop (`when: {forward}`)


CTX = Ctx()

_MASK64 = 2**64 - 1


def _mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _draw_values(seed, n):
    """The seeded draw's stream at the current root forward (docs/scenario-format.md)."""
    counter = (CTX.step << 32) | ((CTX.micro & 0xFFFF) << 16) | (CTX.forward & 0xFFFF)
    state = _mix64(seed) ^ _mix64(~counter & _MASK64)
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        out.append(_mix64(state))
    return out


def draw_picks(w):
    route, drop = w.get("route"), w.get("layerdrop")
    if route:
        v = _draw_values(route["seed"], route["of"])
        ranked = sorted(range(route["of"]), key=lambda i: (v[i], i))
        return route["index"] in ranked[:route["top_k"]]
    if drop and not CTX.eval:
        value = _draw_values(drop["seed"], drop["index"] + 1)[drop["index"]]
        return not ((value >> 11) / 2**53 < drop["p"])
    return True


def when_holds(w):
    if not w:
        return True
    ph = w.get("phase")
    if ph == "train" and (CTX.eval or CTX.generating):
        return False
    if ph == "eval" and (not CTX.eval or CTX.generating):
        return False
    if ph == "generate" and not CTX.generating:
        return False
    for key, val in (("step", CTX.step), ("micro_step", CTX.micro), ("rank", CTX.rank), ("engine", CTX.engine),
                     ("forward", CTX.forward)):
        vals = w.get(key)
        if vals and val not in vals:
            return False
    return draw_picks(w)


def _graph_task_active():
    try:
        return torch._C._current_graph_task_id() != -1
    except Exception:  # pragma: no cover - old torch
        return False


def current_phase():
    if _graph_task_active():
        return "recompute"
    return "eval" if CTX.eval else "fwd"


# ----------------------------------------------------------------------------------------------
# the model


def _made_leaf(y, op):
    """``output: leaf``: the call's output detached and made a leaf that requires grad."""
    return y.detach().requires_grad_() if op.get("output") == "leaf" else y


class ZModule(nn.Module):
    """One module of a scenario.  Plain data lives in __dict__ (never registered as modules/params)."""

    def __init__(self, spec, model_rt):
        super().__init__()
        self.__dict__["_zf"] = spec
        self.__dict__["_zf_rt"] = model_rt  # shared per model: root object, params, module specs

    # -- params -------------------------------------------------------------------------------

    def _zf_param_obj(self, canonical):
        return self._zf_rt["params"][canonical]

    def _zf_read(self, path, from_root):
        """The param at PATH through the attribute chain (the getter sees it)."""
        obj = self._zf_rt["root"] if from_root else self
        parts = path.lstrip("/").split(".")
        for seg in parts[:-1]:
            obj = getattr(obj, seg)
        return getattr(obj, parts[-1])

    def _zf_hooks(self):
        """(hooked, leaf): what DeepSpeed did to this module when it runs under an engine (a module
        below a z3 leaf gets no ds_id), else the simulator's rules from the converter."""
        if self._zf_rt.get("under_ds"):
            hooked = "ds_id" in self.__dict__
            return hooked, hooked and bool(getattr(self, "_z3_leaf", False))
        return bool(self._zf["hooked"]), bool(self._zf["leaf"])

    def _zf_own_compute(self, h, leaf):
        spec = self._zf
        terms = None
        for name, canonical in spec["_own_recursive" if leaf else "_own_direct"]:
            p = getattr(self, name) if name is not None else self._zf_param_obj(canonical)
            t = _mean_term(p, self._zf_rt["pspec"][canonical])
            terms = t if terms is None else terms + t
        if terms is None:
            return h
        return h * (1 + terms)

    # -- forward ------------------------------------------------------------------------------

    def forward(self, *inputs):
        try:
            return self._zf_forward(inputs[0])
        except BaseException as exc:
            self._zf_tag_failure(exc)
            raise

    def _zf_tag_failure(self, exc):
        """Label a failure with the phase and module where it is raised (the innermost wins): a
        module's forward, or a checkpoint region of this module's program, whose recompute runs in
        the backward outside every module's forward (zfetch says recompute there too)."""
        if not hasattr(exc, "_zf_phase"):
            try:
                exc._zf_phase = current_phase()
                exc._zf_module = self._zf["qualified"]
            except Exception:
                pass

    def _zf_forward(self, h):
        spec = self._zf
        pool = []  # params returned by children (aliases after DeepSpeed's pre-backward wrap)
        rets = []  # params this forward returns
        hooked, leaf = self._zf_hooks()
        scope = _Scope(h)
        rt = self._zf_rt
        own_only = rt.get("bypass", 0) == -1
        if own_only:
            rt["bypass"] = 1
        try:
            return self._zf_forward_body(h, spec, pool, rets, hooked, leaf, scope)
        finally:
            if own_only:
                rt["bypass"] = 0

    def _zf_forward_body(self, h, spec, pool, rets, hooked, leaf, scope):
        if hooked:
            h = self._zf_own_compute(h, leaf)
        else:
            # below a z3 leaf: no hooks; the module reads its params through its own dict (sim
            # call_hookless)
            for p in spec["params"]:
                h = _data_term(getattr(self, p["name"]), self._zf_rt["pspec"][p["canonical"]], h)
        if spec["forward"] is None:
            for child_index in spec["children"]:
                h = self._zf_call(self._zf_rt["objs"][child_index], h, pool)
        else:
            h = self._zf_run(spec["forward"], h, pool, rets, scope)
        for r in pool:
            h = h + r.float().sum() * DATA_SCALE
        outs = (h, ) * int(spec["outputs"]) + tuple(rets)
        return outs[0] if len(outs) == 1 else outs

    def _zf_call(self, child, h, pool, hooks="all"):
        rt = self._zf_rt
        if hooks == "none" or rt.get("bypass", 0) > 0:
            out = child.forward(h)  # `module.forward(x)`: none of the module's hooks
        elif hooks == "own":
            rt["bypass"] = -1  # the child's forward, once its hooks ran, calls nothing through hooks
            out = child(h)
        else:
            out = child(h)
        k = int(child._zf["outputs"])
        if isinstance(out, (tuple, list)):
            acts, extra = list(out[:k]), list(out[k:])
        else:
            acts, extra = [out], []
        y = acts[0]
        for a in acts[1:]:
            y = y + a
        pool.extend(extra)
        return y

    def _zf_run(self, ops, h, pool, rets, scope):
        for op in ops:
            if not when_holds(op.get("when")):
                continue
            kind = op["op"]
            if kind == "call":
                child = self
                for seg in op["path"].split("."):
                    child = getattr(child, seg)
                if "input" in op or "input_from" in op:
                    if op.get("input") == "no_grad":
                        x = h.detach()
                    elif op.get("input") == "forward_input":
                        x = scope.input
                    else:  # the call's latest output in this scope, else the scope's input
                        x = scope.outputs.get(op["input_from"], scope.input)
                    y = _made_leaf(self._zf_call(child, x, pool, op.get("hooks", "all")), op)
                    h = h + y
                else:
                    y = h = _made_leaf(self._zf_call(child, h, pool, op.get("hooks", "all")), op)
                scope.outputs[op["target"]] = y
            elif kind == "access":
                p = self._zf_read(op["path"], op["from_root"])
                if op["kind"] == "metadata":
                    _ = p.dtype
                else:
                    h = _data_term(p, self._zf_rt["pspec"][op["canonical"]], h)
            elif kind == "returns":
                target = self._zf_param_obj(op["canonical"])
                found = None
                for t in pool:
                    if getattr(t, "ds_param_alias", t) is target:
                        found = t
                        break
                if found is not None:
                    pool.remove(found)
                    rets.append(found)
                else:
                    rets.append(target)
            elif kind == "repeat":
                for _ in range(int(op["count"])):
                    h = self._zf_run(op["body"], h, pool, rets, scope)
            elif kind == "gathered":
                import deepspeed
                params = [self._zf_param_obj(c) for c in op["params"]]
                with deepspeed.zero.GatheredParameters(params, modifier_rank=op.get("modifier_rank")):
                    h = self._zf_run(op["body"], h, pool, rets, scope)
            elif kind == "checkpoint":
                body = op["body"]

                def region(hin, body=body):
                    try:
                        return self._zf_run(body, hin, pool, rets, _Scope(hin))
                    except BaseException as exc:
                        self._zf_tag_failure(exc)
                        raise

                h = torch.utils.checkpoint.checkpoint(region, h, use_reentrant=bool(op["reentrant"]))
            else:
                raise ValueError(f"unknown operation {kind!r}")
        return h


class _Scope:
    """One forward program or checkpoint body being run: its input, and its calls' latest outputs
    by call path (what ``input_from`` reads)."""

    def __init__(self, input_tensor):
        self.input = input_tensor
        self.outputs = {}


def _mean_term(p, ps):
    # reshape: a partitioned param (shape (0,)) fails like a real use would
    return p.float().reshape(ps["shape"]).sum() * (1.0 / max(1, ps["numel"]))


def _data_term(p, ps, h):
    return h + p.float().reshape(ps["shape"]).sum() * (DATA_SCALE / max(1, ps["numel"]))


_CLASSES = {}


def _class_for(spec):
    # A module without `class:` is a "Module", the name zfetch gives it in DeepSpeed's messages
    # (load_state_dict's "Error(s) in loading state_dict for Module").
    name = spec.get("class") or "Module"
    mod = spec.get("class_module") or __name__
    key = (name, mod)
    if key not in _CLASSES:
        cls = type(name, (ZModule, ), {})
        cls.__module__ = mod
        cls.__qualname__ = name
        _CLASSES[key] = cls
    return _CLASSES[key]


def own_param_list(scen, m, leaf):
    """(getter name or None, canonical) of the params a hooked module's own compute uses: its direct
    params (deduplicated canonical objects, read through its getter), plus, for a z3 leaf, its
    descendants' (read directly, as DeepSpeed's leaf fetch has them all)."""
    mods = scen["modules"]
    out, seen = [], set()
    for p in m["params"]:
        if p["canonical"] not in seen:
            seen.add(p["canonical"])
            out.append((p["name"], p["canonical"]))
    if leaf:
        stack = list(reversed(m["children"]))
        while stack:
            c = mods[stack.pop()]
            for p in c["params"]:
                if p["canonical"] not in seen:
                    seen.add(p["canonical"])
                    out.append((None, p["canonical"]))
            stack.extend(reversed(c["children"]))
    return out


def build_model(scen, seed=1234):
    """The torch model of a scenario (no DeepSpeed needed).  Returns the root module."""
    mods = scen["modules"]
    gen = torch.Generator().manual_seed(seed)
    params, pspec = {}, {}
    for m in mods:
        for p in m["params"]:
            pspec[p["qualified"]] = p
            if p["canonical"] == p["qualified"]:
                t = torch.empty(p["shape"], dtype=torch.float32)
                if t.numel():
                    t.uniform_(-0.5, 0.5, generator=gen)
                params[p["qualified"]] = nn.Parameter(t.to(_DTYPES[p["dtype"]]), requires_grad=not p["frozen"])
    rt = {"params": params, "pspec": pspec, "objs": [], "root": None}
    for m in mods:
        spec = dict(m)
        spec["_own_direct"] = own_param_list(scen, m, False)
        spec["_own_recursive"] = own_param_list(scen, m, True)
        obj = _class_for(m)(spec, rt)
        rt["objs"].append(obj)
        for p in m["params"]:
            obj.register_parameter(p["name"], params[p["canonical"]])
        if m["parent"] is not None:
            rt["objs"][m["parent"]].add_module(m["name"], obj)
    rt["root"] = rt["objs"][0]
    return rt["root"]


def mark_under_deepspeed(model):
    """From now on the model's forward asks DeepSpeed which modules it hooked (see ZModule._zf_hooks)."""
    model._zf_rt["under_ds"] = True


def make_input(scen, rank, salt, requires_grad):
    g = torch.Generator().manual_seed(100 + 1000 * rank + salt)
    return torch.randn(int(scen["micro_batch"]), WIDTH, generator=g).requires_grad_(requires_grad)


def loss_of(out):
    tensors = out if isinstance(out, (tuple, list)) else (out, )
    loss = None
    for t in tensors:
        v = t.float().pow(2).mean()
        loss = v if loss is None else loss + v
    return loss


# ----------------------------------------------------------------------------------------------
# one scenario under one policy


class ScenarioTimeout(BaseException):
    """The scenario's in-process time limit ran out (a BaseException: DeepSpeed's `except Exception`
    must not swallow it)."""


def _on_alarm(signum, frame):
    raise ScenarioTimeout("scenario time limit reached")


class Runner:

    def __init__(self, args, deepspeed, zr, ctl):
        self.args = args
        self.ds = deepspeed
        self.zr = zr
        self.ctl = ctl
        import torch.distributed as dist
        self.dist = dist
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        CTX.rank = self.rank
        import deepspeed.runtime.zero.parameter_offload as po
        from deepspeed.runtime.zero.partition_parameters import Init
        self.po = po
        self.Init = Init

    def bases(self):
        count = self.po.DeepSpeedZeRoOffload._register_deepspeed_module.__defaults__[0]
        return {"module": int(count[0]), "param": int(self.Init.param_id)}

    def run(self, entry, scen, policy):
        args, zr = self.args, self.zr
        key = entry["key"]
        base = os.path.join(args.out, f"{key}.{policy}")
        trace = base + ".rank0.jsonl" if self.rank == 0 else os.devnull
        notes = base + ".rank0.notes.jsonl" if self.rank == 0 else None
        ckpt = os.path.join(args.ckpt_root, f"{key}.{policy}")  # one folder per run, never reused
        res = {
            "key": key, "name": scen["name"], "policy": policy, "world_size": self.world, "yaml": scen["yaml"],
            "source_sha256": scen["source_sha256"], "outcome": "pass", "where": None, "engines": [],
            "warnings": [],
        }
        st = {"engine": None, "model": None, "engine_micro": 0,
              "where": {"engine": 0, "micro_step": None, "call": "initialize"}}
        CTX.engine, CTX.step, CTX.micro, CTX.eval = -1, 0, 0, False
        # A run that failed inside a generate item leaves these set: reset them for the next run.
        CTX.generating, CTX.forward = False, 0
        session = zr.start_from_environment() if args.recorder_from_environment else None
        if session is not None and session.policy != policy:
            raise ValueError(f"ZFETCH_RECORD records under {session.policy}, this run is {policy}")
        if session is None and args.record_sessions:
            # a recording of this run alone (what ZFETCH_RECORD starts for a whole process)
            session = zr.record(os.path.join(args.record_sessions, f"{key}.{policy}"),
                                residency_independent=policy == "residency-independent", name=scen["name"]).start()
            own_session = session
        else:
            own_session = None
        if session is None:
            zr.open_trace(trace, scen["name"], self.world, policy, notes_path=notes)
        res["bases"] = self.bases()
        res["fwd_module_stack_at_start"] = len(self.po.FWD_MODULE_STACK)
        t0 = time.time()
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(entry.get("time_limit_s") or args.time_limit))
        try:
            self.schedule(scen, st, res, ckpt)
        except BaseException as exc:  # noqa: B902 - everything is recorded
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.record_failure(exc, st, res)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        res["seconds"] = round(time.time() - t0, 2)
        if own_session is not None:
            own_session.stop()  # closes the trace, writes the scenario
        elif session is None:  # ZFETCH_RECORD's session closes its trace at the process's end
            zr.close_trace()
            if self.rank == 0:
                res["events"], res["invalidations"] = _count_events(trace)
        for e in [st["engine"]] if not st.get("all") else [x["engine"] for x in st["all"]]:
            if e is not None:
                try:
                    e.destroy()
                except BaseException as exc:  # noqa: B902
                    res["warnings"].append(f"destroy after the run: {exc!r}")
        st.clear()
        gc.collect()
        return res

    def record_failure(self, exc, st, res):
        msg = str(exc)
        where = dict(st["where"])
        call = where.get("call")
        phase = getattr(exc, "_zf_phase", None)
        if phase is None:
            phase = {"forward": "eval" if CTX.eval else "fwd", "backward": "bwd", "step": "optimizer",
                     "save_checkpoint": "checkpoint", "load_checkpoint": "checkpoint"}.get(call, "none")
        where["phase"] = phase
        where["module"] = getattr(exc, "_zf_module", None)
        if isinstance(exc, ScenarioTimeout):
            res["outcome"] = "timeout"
        elif msg.startswith("tracing error"):
            res["outcome"] = "mismatch"
        else:
            res["outcome"] = "error"
        res["where"] = where
        res["exc_type"] = type(exc).__name__
        res["exc_str"] = msg
        res["exc_repr"] = repr(exc)
        res["traceback"] = traceback.format_exc()
        if res["outcome"] != "mismatch":
            self.zr.emit("error", phase=phase)
            self.zr.note("error", repr=repr(exc), phase=phase)
        print(f"[rank{self.rank}] {res['key']} {res['policy']}: {type(exc).__name__} at {where}: "
              f"{msg.splitlines()[0] if msg else ''}", flush=True)

    # -- the schedule (sim/process.cc run_schedule) --------------------------------------------

    def build_engine(self, scen, st, res, fresh):
        ds = self.ds
        st["where"].update(engine=CTX.engine + 1, micro_step=None, call="initialize")
        if fresh or st["model"] is None:
            torch.manual_seed(1234)
            model = build_model(scen)
            names = [m["qualified"] for m in scen["modules"] if m.get("leaf_flag")]
            if names:
                ds.utils.set_z3_leaf_modules_by_name(model, names)
            st["model"] = model
        model = st["model"]
        CTX.engine += 1
        engine, _, _, _ = ds.initialize(model=model,
                                        model_parameters=[p for p in model.parameters() if p.requires_grad],
                                        config=copy.deepcopy(scen["ds_config"]))
        mark_under_deepspeed(model)
        st["engine"] = engine
        st["engine_micro"] = 0
        objs = dict(model.named_modules())
        info = {"modules": {n: (int(m.ds_id) if hasattr(m, "ds_id") else None) for n, m in objs.items()},
                "params": {n: int(p.ds_id) for n, p in model.named_parameters()}}
        bad = [m["qualified"] for m in scen["modules"]
               if hasattr(objs.get(m["qualified"]), "ds_id") != bool(m["hooked"])]
        if bad:
            info["hooked_mismatch"] = bad
        res["engines"].append(info)
        self.zr.residency_snapshot(engine.module, f"engine {CTX.engine} after initialize")

    def schedule(self, scen, st, res, ckpt):
        if scen.get("engines"):
            # several engines in one process (DeepSpeed-Chat's actor and critic), built in order;
            # each item runs on the engine it names
            st["all"] = []
            for e, spec in enumerate(scen["engines"]):
                one = dict(scen, modules=spec["modules"])
                CTX.engine = e - 1
                self.build_engine(one, st, res, fresh=True)
                st["all"].append({"scen": one, "engine": st["engine"], "model": st["model"], "micro": 0})
                st["model"] = None
        self.run_items(scen, st, res, ckpt, scen["schedule"])
        st["where"].update(call="done")

    def select_engine(self, st, e):
        if not st.get("all"):
            return
        if st.get("current") is not None:
            cur = st["all"][st["current"]]
            cur["micro"] = st["engine_micro"]
        st["current"] = e
        sel = st["all"][e]
        st["engine"], st["model"], st["engine_micro"] = sel["engine"], sel["model"], sel["micro"]
        CTX.engine = e  # CTX.step counts every engine's optimizer steps, as zfetch does

    def run_items(self, scen, st, res, ckpt, items):
        if st.get("engine") is None and not st.get("all"):
            self.build_engine(scen, st, res, fresh=True)
        for item in items:
            self.select_engine(st, int(item.get("engine", 0)))
            one = st["all"][int(item.get("engine", 0))]["scen"] if st.get("all") else scen
            if item["op"] == "gathered":
                params = dict(st["model"].named_parameters(remove_duplicate=False))
                chosen = [params[c] for c in item["params"]]
                st["where"].update(call="gathered")
                with self.ds.zero.GatheredParameters(chosen, modifier_rank=item.get("modifier_rank")):
                    self.run_items(scen, st, res, ckpt, item["body"])
                    self.select_engine(st, int(item.get("engine", 0)))
                    st["where"].update(call="gathered")
                continue
            self.run_item(one, st, res, ckpt, item)

    def run_item(self, scen, st, res, ckpt, item):
        gas = int(scen["gradient_accumulation_steps"])
        irg = bool(scen["input_requires_grad"])
        where = st["where"]
        op = item["op"]
        engine = st["engine"]
        if op == "generate":
            self.generate(scen, st, item)
        elif op == "train":
            for _ in range(int(item["steps"])):
                for _ in range(gas):
                    where.update(engine=CTX.engine, micro_step=int(engine.micro_steps), call="forward")
                    CTX.eval = False
                    CTX.micro = st["engine_micro"] % gas
                    if not engine.module.training:
                        engine.train()
                    loss = None
                    # several root forwards before the one backward (`forwards`): the loss
                    # differentiates what the grad ones computed
                    for k, mode in enumerate(item.get("forwards", ["grad"])):
                        CTX.forward = k
                        CTX.eval = mode == "eval"
                        x = make_input(scen, self.rank, 10 * CTX.engine + st["engine_micro"],
                                       irg and mode == "grad")
                        if mode == "grad":
                            out = engine(x)
                            term = loss_of(out)
                            loss = term if loss is None else loss + term
                        else:
                            if mode == "eval":
                                engine.eval()
                            with torch.no_grad():
                                engine(x)
                            if mode == "eval":
                                engine.train()
                    CTX.forward = 0
                    CTX.eval = False
                    where.update(call="backward")
                    engine.backward(loss)
                    where.update(call="step")
                    boundary = (st["engine_micro"] + 1) % gas == 0
                    engine.step()
                    st["engine_micro"] += 1
                    if boundary:
                        CTX.step += 1
                    self.zr.residency_snapshot(engine.module, f"after micro-step {st['engine_micro']}")
        elif op == "eval":
            engine.eval()
            CTX.eval = True
            for k in range(int(item["passes"])):
                where.update(engine=CTX.engine, micro_step=int(engine.micro_steps), call="forward")
                CTX.micro = st["engine_micro"] % gas
                x = make_input(scen, self.rank, 500 + k, False)
                with torch.no_grad():
                    engine(x)
            CTX.eval = False
            engine.train()
        elif op == "save_checkpoint":
            where.update(micro_step=int(engine.micro_steps), call="save_checkpoint")
            engine.save_checkpoint(ckpt, tag=item["tag"])
            self.zr.residency_snapshot(engine.module, "after save_checkpoint")
        elif op == "load_checkpoint":
            where.update(micro_step=int(engine.micro_steps), call="load_checkpoint")
            path, _ = engine.load_checkpoint(ckpt, tag=item["tag"])
            if path is None:
                res["warnings"].append(f"load_checkpoint({item['tag']!r}) found nothing")
            self.zr.residency_snapshot(engine.module, "after load_checkpoint")
        elif op == "restart":
            where.update(micro_step=None, call="restart")
            st["engine"] = None
            engine.destroy()
            del engine
            gc.collect()
            self.build_engine(scen, st, res, fresh=not item["reuse_model"])
        elif op == "empty_partition_cache":
            where.update(micro_step=int(engine.micro_steps), call="empty_partition_cache")
            engine.empty_partition_cache()
        else:
            raise ValueError(f"unknown schedule item {op!r}")


    def generate(self, scen, st, item):
        """transformers' generate(): under no_grad, the encoder called directly, then the model (the
        root, or the module `model` names: a PEFT model's base model) once per token, all outside
        the engine; inside unwrap_model_for_generation when `unwrap` says which DeepSpeed."""
        engine = st["engine"]
        model = engine.module
        objs = dict(model.named_modules())
        st["where"].update(engine=CTX.engine, micro_step=int(engine.micro_steps), call="generate")
        training = bool(item["training"])
        CTX.eval, CTX.generating = not training, True
        if not training:
            model.eval()
        target = objs[item["model"]] if item.get("model") else model
        with contextlib.ExitStack() as stack:
            if item.get("unwrap"):
                stack.enter_context(self.unwrapped(engine, item["unwrap"]))
            stack.enter_context(torch.no_grad())
            if item.get("encoder"):
                CTX.forward = 0
                objs[item["encoder"]](make_input(scen, self.rank, 700, False))
            for k in range(int(item["tokens"])):
                CTX.forward = k
                CTX.micro = st["engine_micro"] % int(scen["gradient_accumulation_steps"])
                target(make_input(scen, self.rank, 700 + k, False))
        CTX.forward, CTX.eval, CTX.generating = 0, False, False
        model.train()

    @contextlib.contextmanager
    def unwrapped(self, engine, behaviour):
        """deepspeed.runtime.zero.unwrap_model_for_generation as the snapshot has it (after-8043),
        or with PR #8043's invalidation on re-registration patched out (before-8043)."""
        zero = self.ds.runtime.zero
        if behaviour == "after-8043":
            with zero.unwrap_model_for_generation(engine) as m:
                yield m
            return
        offload = engine.optimizer.parameter_offload
        coordinator = offload.get_param_coordinator()
        original = coordinator._invalidate_trace
        with zero.GatheredParameters(list(engine.module.parameters())):
            for hook in offload.forward_hooks + offload.backward_hooks:
                hook.remove()
            offload.forward_hooks, offload.backward_hooks = [], []
            yield engine.module
            coordinator._invalidate_trace = lambda: None  # the code before PR #8043
            try:
                offload._register_deepspeed_module(offload.module)
            finally:
                coordinator._invalidate_trace = original


def _count_events(path):
    n = inv = 0
    try:
        with open(path) as f:
            next(f, None)
            for line in f:
                n += 1
                if '"kind":"trace_invalidate"' in line:
                    inv += 1
    except OSError:
        pass
    return n, inv


# ----------------------------------------------------------------------------------------------
# the process: work list, agreement between ranks, results


def load_work(args):
    with open(args.manifest) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(args.manifest))
    work = []
    for entry in manifest["scenarios"]:
        if "key" not in entry or int(entry["world_size"]) != args.world:
            continue
        if args.only and entry["key"] not in args.only:
            continue
        for policy in POLICIES if args.policy is None else (args.policy, ):
            work.append((entry, policy, os.path.join(folder, entry["json"])))
    return work


def result_path(args, key, policy):
    return os.path.join(args.out, f"{key}.{policy}.result.json")


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=str)
        f.write("\n")
    os.replace(tmp, path)


def plan(args):
    """Rank 0: what is left to do; a run started by a process that died gets its result here."""
    todo = []
    for entry, policy, jpath in load_work(args):
        key = entry["key"]
        rp = result_path(args, key, policy)
        if os.path.exists(rp):
            continue
        started = os.path.join(args.out, "started", f"{key}.{policy}")
        base = {"key": key, "policy": policy, "yaml": entry.get("yaml"), "world_size": args.world}
        if os.path.exists(started):
            base.update(outcome="process-died",
                        exc_str="the process running this scenario died or was aborted (see the log)")
            write_json(rp, base)
            continue
        reason = (entry.get("skip") or {}).get(policy)
        if reason:
            base.update(outcome="skipped", skip_reason=reason)
            write_json(rp, base)
            continue
        todo.append((entry, policy, jpath))
    return todo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", default=None, help="scenario keys to run (default: all)")
    ap.add_argument("--deadline", type=float, default=0.0, help="epoch seconds: start no run after it")
    ap.add_argument("--time-limit", type=float, default=60.0, help="per run, when the manifest gives none")
    ap.add_argument("--comm-timeout", type=float, default=60.0)
    ap.add_argument("--ckpt-root", default="/tmp/zfetch_corpus_ckpt")
    ap.add_argument("--policy", choices=POLICIES, help="only this discovery policy (default: both)")
    ap.add_argument("--recorder-from-environment", action="store_true",
                    help="record as a user would: the recording ZFETCH_RECORD started (one process per "
                    "scenario and policy) writes the traces and scenarios, the runner opens none")
    ap.add_argument("--record-sessions", metavar="DIR",
                    help="record each run with its own zfetch_record session (the package's context "
                    "manager) into DIR/KEY.POLICY/: trace and scenario per rank")
    args = ap.parse_args()

    import logging
    import deepspeed
    deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False  # no C++ sources in the snapshot
    import importlib
    zr = importlib.import_module(os.environ.get("ZFETCH_RECORDER", "zfetch_record"))  # a stand-in for tests
    zr.install()
    import torch.distributed as dist

    deepspeed.utils.logger.setLevel(logging.WARNING)
    deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=args.comm_timeout))
    ctl = dist.new_group(backend="gloo", timeout=timedelta(seconds=args.comm_timeout + 60))
    rank, world = dist.get_rank(), dist.get_world_size()
    if world != args.world:
        print(f"--world {args.world} but the process group has {world} ranks", flush=True)
        return 2
    os.makedirs(os.path.join(args.out, "started"), exist_ok=True)
    info = {"torch": torch.__version__, "deepspeed": deepspeed.__version__, "python": sys.version.split()[0],
            "world_size": world, "pid": os.getpid(), "recorder": zr.__file__}
    box = [plan(args) if rank == 0 else None]
    dist.broadcast_object_list(box, src=0, group=ctl)
    todo = box[0]
    if rank == 0:
        print(f"INFO {json.dumps(info)} runs to do: {len(todo)}", flush=True)
    runner = Runner(args, deepspeed, zr, ctl)
    abort = False
    for entry, policy, jpath in todo:
        go = [args.deadline <= 0 or time.time() < args.deadline] if rank == 0 else [None]
        dist.broadcast_object_list(go, src=0, group=ctl)
        key = entry["key"]
        if not go[0]:
            if rank == 0:
                write_json(result_path(args, key, policy),
                           {"key": key, "policy": policy, "yaml": entry.get("yaml"), "world_size": world,
                            "outcome": "not-run", "exc_str": "the time budget ran out"})
            continue
        if rank == 0:
            open(os.path.join(args.out, "started", f"{key}.{policy}"), "w").close()
        with open(jpath) as f:
            scen = json.load(f)
        res = runner.run(entry, scen, policy)
        mine = [res["outcome"], res.get("exc_type"), (res.get("exc_str") or "")[:400]]
        everyone = [None] * world
        try:
            dist.all_gather_object(everyone, mine, group=ctl)
        except BaseException as exc:  # noqa: B902
            everyone = [mine] + [["unknown", type(exc).__name__, str(exc)[:400]]] * (world - 1)
            abort = True
        res["rank_outcomes"] = everyone
        if any(o != everyone[0] for o in everyone) or res["outcome"] == "timeout":
            abort = True
            res["aborted_process"] = True
        if rank == 0:
            res["info"] = info
            write_json(result_path(args, key, policy), res)
            print(f"RUN {key} {policy}: {res['outcome']} {res.get('exc_type') or ''} where={res.get('where')} "
                  f"events={res.get('events')} ({res['seconds']} s)", flush=True)
        if abort:
            # the process group may be out of step (a rank timed out or raised alone): let the driver
            # start a fresh process pair for what is left
            print(f"[rank{rank}] ABORT after {key} {policy}: ranks disagree or a run timed out: {everyone}",
                  flush=True)
            sys.stdout.flush()
            session = zr.start_from_environment() if args.recorder_from_environment else None
            if session is not None:
                session.stop()  # os._exit skips the exit handler that writes the scenario
            os._exit(3)
    if rank == 0:
        open(os.path.join(args.out, f"complete.w{world}"), "w").close()
    dist.barrier(group=ctl)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
