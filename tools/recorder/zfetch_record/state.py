"""Recorder state and event output: the current run's trace file (trace_file.py), counters and
context stack.

Events follow zfetch's trace format (docs/trace-format.md), in its key order:

    seq, t_ns (always 0), rank, engine, step, micro_step, phase, kind,
    [trace_step], [module_id, module], [param_id, param], [status], [numel], [bytes], [group]

A recorder failure is noted (``R.errors``), never raised into DeepSpeed.
"""

import json
import os
import weakref
from collections import OrderedDict

import torch

from .trace_file import TraceFile

# ----------------------------------------------------------------------------------------------
# state

CO = "_PartitionedParameterCoordinator__"  # name-mangling prefix of the coordinator's privates


class _Recorder:

    def __init__(self):
        self.out = None
        self.notes = None
        self.rank = 0
        self.seq = 0
        self.engine = -1
        self.step = 0
        self.engine_obj = None
        # several live engines in one process (DeepSpeed-Chat's actor and critic): each event is
        # stamped with the engine that owns its module or param, else with the one that ran last
        self.engines = []  # weak references, in build order (index = engine number)
        self.active = None
        self.policy = "resident-skip"
        self.errors = []  # recorder-side failures (never raised into DeepSpeed)
        self.busy = False  # re-entrancy guard: the recorder's own attribute reads are not events
        self.ctx = []  # stack of dicts: {"phase": ..., "module": ...}
        self.group = 0
        self.fetch_ctx = None  # per fetch_sub_module call: {"module", "gather_calls", "na_at_entry"}
        self.release_ctx = None  # "module" | "partition_all" | "leftover"
        self.leftover_module = None
        self.listeners = []  # objects told of engines, passes, steps, checkpoints (notify)
        self.internal = 0  # > 0 while DeepSpeed's hooks or getter run: their tensor ops are not the model's
        self.live = None  # a live_memory.LiveMemory while live gathered bytes are noted


R = _Recorder()


def graph_task_active():
    try:
        return torch._C._current_graph_task_id() != -1
    except Exception:  # pragma: no cover - very old torch
        return False


def name_of(obj):
    """Qualified name relative to the engine's root, stored on the object at engine construction."""
    return getattr(obj, "_zfetch_name", "?")


_STATUS = {1: "AV", 2: "NA", 3: "IF"}


def status_of(param):
    st = getattr(param, "ds_status", None)
    return None if st is None else _STATUS.get(st.value, str(st))


def _phase():
    for frame in reversed(R.ctx):
        if frame.get("phase"):
            return frame["phase"]
    return "none"


def _engine():
    return R.engine_obj() if R.engine_obj is not None else None


def _micro_step(index=None):
    eng = _engine()
    if index is not None and 0 <= index < len(R.engines) and R.engines[index]() is not None:
        eng = R.engines[index]()
    return int(getattr(eng, "micro_steps", 0)) if eng is not None else 0


def _event_engine(module, param):
    """The engine an event belongs to: its module's or param's owner (tagged at engine
    construction), else the engine whose coordinator or step ran last, else the latest built."""
    for obj in (module, param):
        owner = getattr(obj, "_zfetch_engine", None) if obj is not None else None
        if owner is not None:
            R.active = owner
            return owner
    return R.active if R.active is not None else R.engine


def pass_context(training):
    """What a scenario's ``when:`` can test of a forward starting now, as the simulator counts it:
    the optimizer step across the whole schedule, the micro-step within that step, the engine
    (restarts) and the phase (a module in eval mode is in an eval pass)."""
    eng = _engine()
    accumulation = int(eng.gradient_accumulation_steps()) if eng is not None else 1
    return {"step": R.step, "micro_step": _micro_step() % max(accumulation, 1), "engine": max(R.engine, 0),
            "phase": "train" if training else "eval"}


def emit(*a, **kw):
    """Write one event; a recorder failure is noted, never raised into DeepSpeed."""
    try:
        return _emit(*a, **kw)
    except Exception as exc:  # pragma: no cover - defensive
        R.errors.append(f"emit{a}: {exc!r}")
        return None


def _emit(kind, module=None, param=None, trace_step=None, status=None, numel=None, nbytes=None, group=None,
          phase=None):
    if R.out is None:
        return None
    ev = OrderedDict()
    ev["seq"] = R.seq
    ev["t_ns"] = 0
    ev["rank"] = R.rank
    engine = _event_engine(module, param)
    ev["engine"] = max(engine, 0)
    ev["step"] = R.step
    ev["micro_step"] = _micro_step(engine if len(R.engines) > 1 else None)
    ev["phase"] = phase or _phase()
    ev["kind"] = kind
    if trace_step is not None and trace_step >= 0:
        ev["trace_step"] = int(trace_step)
    if module is not None:
        ev["module_id"] = int(getattr(module, "ds_id", -1))
        ev["module"] = name_of(module) or "<root>"  # every zfetch output names the root so
    if param is not None:
        ev["param_id"] = int(getattr(param, "ds_id", -1))
        ev["param"] = name_of(param)
    if status is not None:
        ev["status"] = status
    if numel is not None:
        ev["numel"] = int(numel)
    if nbytes is not None:
        ev["bytes"] = int(nbytes)
    if group is not None:
        ev["group"] = int(group)
    R.out.write(ev)
    R.seq += 1
    if R.live is not None:
        _note_live()
    return ev["seq"]


def _note_live():
    busy, R.busy = R.busy, True  # the recorder's own reads of parameter state are not events
    try:
        R.live.after_event(R.engine_obj() if R.engine_obj is not None else None, note)
    finally:
        R.busy = busy


def note(what, **fields):
    """Free-form diagnostics (not part of the zfetch trace format) into the .notes.jsonl file."""
    try:
        _note(what, **fields)
    except Exception as exc:  # pragma: no cover - defensive
        R.errors.append(f"note {what}: {exc!r}")


def guard(fn, *a, **kw):
    """Run recorder-side logic; failures are noted, never raised into DeepSpeed."""
    try:
        return fn(*a, **kw)
    except Exception as exc:  # pragma: no cover - defensive
        R.errors.append(f"{getattr(fn, '__name__', fn)}: {exc!r}")
        return None


def _note(what, **fields):
    if R.notes is None:
        return
    rec = OrderedDict()
    rec["after_seq"] = R.seq - 1
    rec["engine"] = max(R.engine, 0)
    rec["step"] = R.step
    rec["micro_step"] = _micro_step()
    rec["phase"] = _phase()
    rec["note"] = what
    rec.update(fields)
    R.notes.write(json.dumps(rec, separators=(",", ":"), default=str) + "\n")


def open_trace(path, scenario, world_size, discovery, notes_path=None, live_memory=None):
    """Start a trace file (header line) and reset per-run counters; sets the getter policy.
    ``live_memory`` (default: ZFETCH_RECORD_LIVE=1) notes live gathered bytes (live_memory.py)."""
    close_trace()
    try:
        import torch.distributed as tdist
        R.rank = tdist.get_rank() if tdist.is_initialized() else 0
    except Exception:
        R.rank = 0
    set_policy(discovery)
    R.out = TraceFile(path)
    R.notes = open(notes_path, "w") if notes_path else None
    R.seq = 0
    R.engine = -1
    R.engines = []
    R.active = None
    R.step = 0
    R.ctx = []
    R.group = 0
    from . import live_memory as live
    if live_memory is None:
        live_memory = live.enabled_by_environment()
    R.live = live.LiveMemory() if live_memory and R.notes is not None else None
    header = OrderedDict([("format", "zfetch-trace"), ("version", 1), ("scenario", scenario),
                          ("world_size", int(world_size)), ("discovery", discovery)])
    R.out.write(header)


def close_trace():
    if R.errors:
        note("recorder_errors", errors=R.errors[:50], count=len(R.errors))
        print(f"zfetch_record: {len(R.errors)} recorder errors, first: {R.errors[0]}", flush=True)
        R.errors = []
    for f in (R.out, R.notes):
        if f is not None:
            f.close()
    R.out = None
    R.notes = None
    R.live = None


def set_policy(policy):
    assert policy in ("resident-skip", "residency-independent"), policy
    R.policy = policy


def error_event(exc, module=None):
    """Record a run-ending error that is not a fetch-queue mismatch (the script calls this)."""
    emit("error", module=module)
    note("error", repr=repr(exc))


def residency_snapshot(model, label):
    """Note every param's status, persistence and consumer set (model = the engine's module)."""
    rows = []
    for n, p in model.named_parameters():
        rows.append([int(p.ds_id), n, status_of(p), bool(getattr(p, "ds_persist", False)),
                     sorted(getattr(p, "ds_active_sub_modules", ()))])
    ext = {}
    for n, m in model.named_modules():
        e = getattr(m, "_external_params", None)
        if e:
            ext[n] = sorted(int(p.ds_id) for p in e.values())
    note("residency", label=label, params=rows, externals=ext)


def notify(event, *args):
    """Tell every listener with a method named ``event`` (a recording session, the scenario writer)."""
    for listener in list(R.listeners):
        method = getattr(listener, event, None)
        if method is not None:
            guard(method, *args)
