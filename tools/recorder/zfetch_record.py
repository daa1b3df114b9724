"""zfetch recorder: write a zfetch trace (JSON Lines) from a real DeepSpeed ZeRO-3 run.

Import this module before ``deepspeed.initialize`` and call :func:`install`; then, per run,
:func:`open_trace` and :func:`close_trace`.  It monkeypatches DeepSpeed classes (no DeepSpeed file is
edited) and emits one event per observed state change, in the key order of zfetch's trace format
(``trace/event.h``, ``docs/trace-format.md``):

    seq, t_ns (always 0), rank, engine, step, micro_step, phase, kind,
    [trace_step], [module_id, module], [param_id, param], [status], [numel], [bytes], [group]

It also implements the two discovery policies of the external-parameter getter:

* ``resident-skip``          DeepSpeed as it is (only NOT_AVAILABLE params are discovered);
* ``residency-independent``  fix #8875 as docs/semantics.md 5.7 states it: an eager-forward access to
  a ZeRO param whose owner is not the module on top of FWD_MODULE_STACK registers it as an external of
  that module whatever its status; the getter still gathers only when the param is NOT_AVAILABLE.

What is covered and what is not: see docs/deepspeed-validation.md ("Recorder").  Written against
DeepSpeed commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641 (0.19.6); the private names it reaches
(``_PartitionedParameterCoordinator__*``) are checked at install time.
"""

import collections
import json
import os
import weakref
from collections import OrderedDict

import torch

# ----------------------------------------------------------------------------------------------
# state

_CO = "_PartitionedParameterCoordinator__"  # name-mangling prefix of the coordinator's privates


class _Recorder:

    def __init__(self):
        self.out = None
        self.notes = None
        self.rank = 0
        self.seq = 0
        self.engine = -1
        self.step = 0
        self.engine_obj = None
        self.policy = "resident-skip"
        self.errors = []  # recorder-side failures (never raised into DeepSpeed)
        self.busy = False  # re-entrancy guard: the recorder's own attribute reads are not events
        self.ctx = []  # stack of dicts: {"phase": ..., "module": ...}
        self.group = 0
        self.fetch_ctx = None  # per fetch_sub_module call: {"module", "gather_calls", "na_at_entry"}
        self.release_ctx = None  # "module" | "partition_all" | "leftover"
        self.leftover_module = None


R = _Recorder()


def _graph_task_active():
    try:
        return torch._C._current_graph_task_id() != -1
    except Exception:  # pragma: no cover - very old torch
        return False


def _name(obj):
    """Qualified name relative to the engine's root, stored on the object at engine construction."""
    return getattr(obj, "_zfetch_name", "?")


_STATUS = {1: "AV", 2: "NA", 3: "IF"}


def _status(param):
    st = getattr(param, "ds_status", None)
    return None if st is None else _STATUS.get(st.value, str(st))


def _phase():
    for frame in reversed(R.ctx):
        if frame.get("phase"):
            return frame["phase"]
    return "none"


def _micro_step():
    eng = R.engine_obj() if R.engine_obj is not None else None
    return int(getattr(eng, "micro_steps", 0)) if eng is not None else 0


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
    ev["engine"] = max(R.engine, 0)
    ev["step"] = R.step
    ev["micro_step"] = _micro_step()
    ev["phase"] = phase or _phase()
    ev["kind"] = kind
    if trace_step is not None and trace_step >= 0:
        ev["trace_step"] = int(trace_step)
    if module is not None:
        ev["module_id"] = int(getattr(module, "ds_id", -1))
        ev["module"] = _name(module)
    if param is not None:
        ev["param_id"] = int(getattr(param, "ds_id", -1))
        ev["param"] = _name(param)
    if status is not None:
        ev["status"] = status
    if numel is not None:
        ev["numel"] = int(numel)
    if nbytes is not None:
        ev["bytes"] = int(nbytes)
    if group is not None:
        ev["group"] = int(group)
    R.out.write(json.dumps(ev, separators=(",", ":")) + "\n")
    R.seq += 1
    return ev["seq"]


def note(what, **fields):
    """Free-form diagnostics (not part of the zfetch trace format) into the .notes.jsonl file."""
    try:
        _note(what, **fields)
    except Exception as exc:  # pragma: no cover - defensive
        R.errors.append(f"note {what}: {exc!r}")


def _guard(fn, *a, **kw):
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


def open_trace(path, scenario, world_size, discovery, notes_path=None):
    """Start a trace file (header line) and reset per-run counters; sets the getter policy."""
    close_trace()
    try:
        import torch.distributed as tdist
        R.rank = tdist.get_rank() if tdist.is_initialized() else 0
    except Exception:
        R.rank = 0
    set_policy(discovery)
    R.out = open(path, "w")
    R.notes = open(notes_path, "w") if notes_path else None
    R.seq = 0
    R.engine = -1
    R.step = 0
    R.ctx = []
    R.group = 0
    header = OrderedDict([("format", "zfetch-trace"), ("version", 1), ("scenario", scenario),
                          ("world_size", int(world_size)), ("discovery", discovery)])
    R.out.write(json.dumps(header, separators=(",", ":")) + "\n")


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
        rows.append([int(p.ds_id), n, _status(p), bool(getattr(p, "ds_persist", False)),
                     sorted(getattr(p, "ds_active_sub_modules", ()))])
    ext = {}
    for n, m in model.named_modules():
        e = getattr(m, "_external_params", None)
        if e:
            ext[n] = sorted(int(p.ds_id) for p in e.values())
    note("residency", label=label, params=rows, externals=ext)


# ----------------------------------------------------------------------------------------------
# patches

_installed = False


def install():
    """Monkeypatch DeepSpeed.  Idempotent."""
    global _installed
    if _installed:
        return
    import deepspeed.runtime.zero.parameter_offload as po
    import deepspeed.runtime.zero.partitioned_param_coordinator as ppc
    import deepspeed.runtime.zero.stage3 as s3
    import deepspeed.runtime.engine as eng
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus

    PPC = ppc.PartitionedParameterCoordinator
    for attr in (_CO + "all_gather_params", _CO + "release_param", "fetch_sub_module", "release_sub_module",
                 "record_module", "reset_step", "_invalidate_trace", "trace_prologue", "release_and_reset_all",
                 "release_backward_leftovers"):
        assert hasattr(PPC, attr), f"zfetch_record: DeepSpeed has no PartitionedParameterCoordinator.{attr}"
    NA = ZeroParamStatus.NOT_AVAILABLE
    AV = ZeroParamStatus.AVAILABLE

    def priv(coord, name):
        return getattr(coord, _CO + name)

    # --- logging containers ---------------------------------------------------------------------

    class LoggingDeque(collections.deque):
        """The coordinator's param queue: every popleft is a queue_pop event."""

        def popleft(self):
            entry = super().popleft()
            if not R.busy:
                fc = R.fetch_ctx
                emit("queue_pop", module=fc["module"] if fc else None, param=entry.param,
                     trace_step=entry.step_id_last_used_at)
            return entry

    class LoggingDict(dict):
        """The coordinator's active-backward map: popitem (leftover drain) names the module."""

        def popitem(self):
            k, v = super().popitem()
            R.leftover_module = v
            return k, v

    # --- coordinator --------------------------------------------------------------------------

    orig_init = PPC.__init__

    def init(self, *a, **kw):
        orig_init(self, *a, **kw)
        setattr(self, _CO + "active_backward_submodules", LoggingDict())

    PPC.__init__ = init

    orig_reset = PPC.reset_step

    def reset_step(self):
        mode_before = priv(self, "trace_mode").name
        emit("pass_start")
        orig_reset(self)
        _guard(after_reset, self, mode_before)

    def after_reset(self, mode_before):
        mode_after = priv(self, "trace_mode").name
        q = priv(self, "param_queue")
        if q is not None and not isinstance(q, LoggingDeque):
            setattr(self, _CO + "param_queue", LoggingDeque(q))
        if mode_before != "RECORD" and mode_after == "RECORD":
            emit("trace_record")
        elif mode_before == "RECORD" and mode_after == "COMPLETE":
            order = priv(self, "param_order")
            emit("trace_complete", numel=len(order))
            note("trace_complete", modules=[int(m.ds_id) for m in priv(self, "submodule_order")],
                 queue=[[int(e.param.ds_id), int(e.step_id_last_used_at)] for e in order],
                 queue_names=[f"{_name(e.param)}@{e.step_id_last_used_at}" for e in order])

    PPC.reset_step = reset_step

    orig_prologue = PPC.trace_prologue

    def trace_prologue(self, sub_module):
        R.ctx.append({"module": sub_module})
        try:
            return orig_prologue(self, sub_module)
        finally:
            R.ctx.pop()

    PPC.trace_prologue = trace_prologue

    orig_invalidate = PPC._invalidate_trace

    def _invalidate_trace(self):
        if not self.is_invalid_trace():
            mod = None
            for frame in reversed(R.ctx):
                if frame.get("module") is not None:
                    mod = frame["module"]
                    break
            emit("trace_invalidate", module=mod, trace_step=priv(self, "step_id"))
        return orig_invalidate(self)

    PPC._invalidate_trace = _invalidate_trace

    orig_fetch = PPC.fetch_sub_module

    def fetch_sub_module(self, current_submodule, forward):
        step = priv(self, "step_id")
        emit("fetch", module=current_submodule, trace_step=step)
        from deepspeed.utils import z3_leaf_module
        params = _guard(lambda: list(ppc.iter_params(current_submodule, recurse=z3_leaf_module(current_submodule))))
        params = params or []
        na_at_entry = bool(_guard(lambda: sum(p.partition_numel() for p in params if p.ds_status == NA) > 0))
        saved = R.fetch_ctx
        R.fetch_ctx = {"module": current_submodule, "gather_calls": 0, "na_at_entry": na_at_entry}
        try:
            orig_fetch(self, current_submodule, forward)
        except RuntimeError as e:
            if str(e).startswith("tracing error"):
                emit("mismatch", module=current_submodule, trace_step=step)
                note("mismatch", message=str(e), repr=repr(e))
            raise
        finally:
            R.fetch_ctx = saved
        note("fetched", module=int(current_submodule.ds_id), trace_step=step,
             params=_guard(lambda: [[int(p.ds_id), _status(p), sorted(p.ds_active_sub_modules)] for p in params]))

    PPC.fetch_sub_module = fetch_sub_module

    orig_gather = getattr(PPC, _CO + "all_gather_params")

    def all_gather_params(self, params, forward):
        _guard(before_gather, params)
        return orig_gather(self, params, forward)

    def before_gather(params):
        to_gather = sorted((p for p in params if p.ds_status == NA), key=lambda p: p.ds_id)
        fc = R.fetch_ctx
        kind = "gather"
        if fc is not None:
            if fc["gather_calls"] > 0 or not fc["na_at_entry"]:
                kind = "prefetch"
            fc["gather_calls"] += 1
        group = R.group
        R.group += 1
        for p in to_gather:
            emit(kind, module=fc["module"] if fc else None, param=p, numel=p.ds_numel,
                 nbytes=p.ds_numel * p.element_size(), group=group)

    setattr(PPC, _CO + "all_gather_params", all_gather_params)

    orig_release_param = getattr(PPC, _CO + "release_param")

    def release_param(self, param, free_data=True):
        before = param.ds_status
        r = orig_release_param(self, param, free_data)
        if before == AV and param.ds_status == NA:
            how = R.release_ctx
            if how == "partition_all":
                emit("partition_all", param=param)
            elif how == "leftover":
                emit("release", module=R.leftover_module, param=param)
            else:
                emit("release", module=how if isinstance(how, torch.nn.Module) else None, param=param)
        return r

    setattr(PPC, _CO + "release_param", release_param)

    orig_release_sub = PPC.release_sub_module

    def release_sub_module(self, submodule, forward=False):
        saved = R.release_ctx
        R.release_ctx = submodule
        try:
            return orig_release_sub(self, submodule, forward)
        finally:
            R.release_ctx = saved

    PPC.release_sub_module = release_sub_module

    orig_rra = PPC.release_and_reset_all

    def release_and_reset_all(self, module):
        saved = R.release_ctx
        R.release_ctx = "partition_all"
        try:
            return orig_rra(self, module)
        finally:
            R.release_ctx = saved

    PPC.release_and_reset_all = release_and_reset_all

    orig_leftovers = PPC.release_backward_leftovers

    def release_backward_leftovers(self):
        saved = R.release_ctx
        R.release_ctx = "leftover"
        try:
            return orig_leftovers(self)
        finally:
            R.release_ctx = saved
            R.leftover_module = None

    PPC.release_backward_leftovers = release_backward_leftovers

    orig_urp = ppc.update_recompute_parameters

    def update_recompute_parameters(sub_module, param):
        emit("recompute_attach", module=sub_module, param=param)
        return orig_urp(sub_module, param)

    ppc.update_recompute_parameters = update_recompute_parameters

    # in-flight registry: a pop is the wait of the fetch loop or of partition-all
    orig_pop = ppc.InflightParamRegistry.pop

    def reg_pop(self, key, *default):
        if key in self.data:
            emit("wait", param=key, status=_status(key))
        return orig_pop(self, key, *default)

    ppc.InflightParamRegistry.pop = reg_pop

    # --- hook functions (the closures in _register_deepspeed_module call these methods) -----------

    DZO = po.DeepSpeedZeRoOffload

    def hook(orig, kind, backward):

        def wrapped(self, sub_module):
            if backward:
                phase = "bwd"
            elif _graph_task_active():
                phase = "recompute"
            else:
                phase = "fwd" if sub_module.training else "eval"
            R.ctx.append({"phase": phase, "module": sub_module})
            try:
                coord = self.get_param_coordinator()
                emit(kind, module=sub_module, trace_step=priv(coord, "step_id"))
                if kind in ("module_pre", "module_post"):
                    note(kind, module=_guard(lambda: int(sub_module.ds_id)),
                         fwd_module_stack=_guard(lambda: [int(getattr(m, "ds_id", -1)) for m in po.FWD_MODULE_STACK]))
                return orig(self, sub_module)
            finally:
                R.ctx.pop()

        return wrapped

    DZO.pre_sub_module_forward_function = hook(DZO.pre_sub_module_forward_function, "module_pre", False)
    DZO.post_sub_module_forward_function = hook(DZO.post_sub_module_forward_function, "module_post", False)
    DZO.pre_sub_module_backward_function = hook(DZO.pre_sub_module_backward_function, "backward_pre", True)
    DZO.post_sub_module_backward_function = hook(DZO.post_sub_module_backward_function, "backward_post", True)

    orig_dzo_init = DZO.__init__

    def name_objects(module):
        # names relative to the engine's root, taken before conversion (objects stay the same)
        for n, m in module.named_modules():
            m.__dict__["_zfetch_name"] = n
        for n, p in module.named_parameters():
            p._zfetch_name = n

    def dzo_init(self, module, *a, **kw):
        _guard(name_objects, module)
        return orig_dzo_init(self, module, *a, **kw)

    DZO.__init__ = dzo_init

    # --- external registration and the getter -----------------------------------------------------

    orig_register = po.register_external_parameter

    def register_external_parameter(module, parameter):
        new = id(parameter) not in getattr(module, "_external_params", {})
        if new and not R.busy:
            emit("register_external", module=module, param=parameter, status=_status(parameter))
        return orig_register(module, parameter)

    po.register_external_parameter = register_external_parameter

    ZOD = po.ZeROOrderedDict
    orig_getitem = ZOD.__getitem__

    def fixed_getitem(self, key):
        """ZeROOrderedDict.__getitem__ with residency-independent discovery (#8875, semantics 5.7)."""
        param = OrderedDict.__getitem__(self, key)
        if param is None:
            return param
        is_eager_forward = self._parent_module._parameters._in_forward and not torch.compiler.is_compiling()
        fallback = None
        if hasattr(param, "ds_status") and is_eager_forward:
            from deepspeed.compile.z3_eager_fallback import get_active_z3_eager_fallback, is_dynamo_guard_evaluation
            fallback = get_active_z3_eager_fallback()
            if (fallback is not None and param.ds_status == AV and not is_dynamo_guard_evaluation()):
                fallback.record_param_access(param)
        # the fix: discovery independent of residency, only for accesses from outside the owner
        if hasattr(param, "ds_status") and is_eager_forward and fallback is None:
            top = po.FWD_MODULE_STACK[-1]
            if top is not self._parent_module:
                po.register_external_parameter(top, param)
        if hasattr(param, "ds_status") and param.ds_status == NA:
            if is_eager_forward:
                if fallback is not None and is_dynamo_guard_evaluation():
                    fallback.record_guard_suppressed_param(param)
                    return param
                if fallback is None:
                    po.register_external_parameter(po.FWD_MODULE_STACK[-1], param)
                    param.all_gather()
                else:
                    param.all_gather()
                    fallback.record_gathered_param(param)
        return param

    def getitem(self, key):
        impl = fixed_getitem if R.policy == "residency-independent" else orig_getitem
        if R.busy or R.out is None:
            return impl(self, key)
        try:
            param = OrderedDict.__getitem__(self, key)
        except KeyError:
            return impl(self, key)
        if param is None or not hasattr(param, "ds_status"):
            return impl(self, key)
        top = _guard(before_access, self, key, param)
        before = param.ds_status
        result = impl(self, key)
        if before == NA and param.ds_status == AV:
            emit("getter_gather", module=top, param=param, numel=param.ds_numel,
                 nbytes=param.ds_numel * param.element_size())
        return result

    def before_access(self, key, param):
        owner = self._parent_module
        stack = po.FWD_MODULE_STACK
        top = stack[-1] if stack else None
        in_fwd = bool(getattr(owner._parameters, "_in_forward", False))
        in_task = _graph_task_active()
        external = top is not None and top is not owner
        if external and (in_fwd or in_task):
            R.ctx.append({"phase": "recompute" if (in_task and not in_fwd) else None})
            try:
                emit("access", module=top, param=param, status=_status(param))
                note("access", key=key, owner=_name(owner), eager=in_fwd, graph_task=in_task,
                     fwd_module_stack=[int(getattr(m, "ds_id", -1)) for m in stack])
            finally:
                R.ctx.pop()
        return top

    ZOD.__getitem__ = getitem

    # --- optimizer step, persistent regather, checkpoint events ---------------------------------

    S3 = s3.DeepSpeedZeroOptimizer_Stage3

    def persistent_wrap(orig):

        def wrapped(self, *a, **kw):
            pers = list(getattr(self, "persistent_parameters", []))
            before = {id(p): p.ds_status for p in pers}
            r = orig(self, *a, **kw)
            _guard(after, pers, before)
            return r

        def after(pers, before):
            for p in sorted(pers, key=lambda p: p.ds_id):
                if before[id(p)] == NA and p.ds_status == AV:
                    emit("persistent_gather", param=p, numel=p.ds_numel,
                         nbytes=p.ds_numel * p.element_size())

        return wrapped

    S3._post_step = persistent_wrap(S3._post_step)
    S3.checkpoint_event_epilogue = persistent_wrap(S3.checkpoint_event_epilogue)

    orig_s3_step = S3.step

    def s3_step(self, *a, **kw):
        emit("optimizer_step")
        return orig_s3_step(self, *a, **kw)

    S3.step = s3_step

    # --- engine -----------------------------------------------------------------------------------

    E = eng.DeepSpeedEngine
    orig_e_init = E.__init__

    def e_init(self, *a, **kw):
        R.engine += 1
        R.engine_obj = None
        orig_e_init(self, *a, **kw)
        R.engine_obj = weakref.ref(self)
        emit("engine_init", phase="none")
        _guard(init_note, self)

    def init_note(self):
        mods = [[int(getattr(m, "ds_id", -1)), n, type(m).__name__] for n, m in self.module.named_modules()]
        prms = [[int(p.ds_id), n, int(p.ds_numel), bool(getattr(p, "ds_persist", False)), bool(p.requires_grad),
                 _status(p)] for n, p in self.module.named_parameters()]
        note("engine_init", modules=mods, params=prms)

    E.__init__ = e_init

    def ctx_wrap(orig, phase_fn, before=None, after=None):

        def wrapped(self, *a, **kw):
            ph = phase_fn(self)
            if before:
                before(self)
            R.ctx.append({"phase": ph})
            try:
                r = orig(self, *a, **kw)
            finally:
                R.ctx.pop()
            if after:
                after(self)
            return r

        return wrapped

    E.forward = ctx_wrap(E.forward, lambda self: "fwd" if self.module.training else "eval")
    E.backward = ctx_wrap(E.backward, lambda self: "bwd")

    orig_e_step = E.step

    def e_step(self, *a, **kw):
        boundary = self.is_gradient_accumulation_boundary()
        R.ctx.append({"phase": "optimizer" if boundary else None})
        try:
            r = orig_e_step(self, *a, **kw)
        finally:
            R.ctx.pop()
        if boundary:
            R.step += 1
        return r

    E.step = e_step

    E.save_checkpoint = ctx_wrap(E.save_checkpoint, lambda self: "checkpoint",
                                 before=lambda self: emit("checkpoint_save", phase="checkpoint"))
    E.load_checkpoint = ctx_wrap(E.load_checkpoint, lambda self: "checkpoint",
                                 before=lambda self: emit("checkpoint_load", phase="checkpoint"))

    orig_destroy = E.destroy

    def destroy(self, *a, **kw):
        emit("restart", phase="none")
        return orig_destroy(self, *a, **kw)

    E.destroy = destroy

    _installed = True
