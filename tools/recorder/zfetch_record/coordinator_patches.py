"""Patches of DeepSpeed's PartitionedParameterCoordinator: trace recording and completion, fetches,
gathers and prefetches, releases, recompute attachments and in-flight waits become events."""

import collections

import torch

from .state import CO, R, emit, graph_task_active, guard, name_of, note, status_of


def patch(ds):
    """Wraps the coordinator's methods (``ds``: the DeepSpeed modules, see compat.py)."""
    po, ppc, s3, eng = ds.parameter_offload, ds.coordinator, ds.stage3, ds.engine
    NA, AV = ds.NOT_AVAILABLE, ds.AVAILABLE

    def priv(coord, name):
        return getattr(coord, CO + name)

    PPC = ppc.PartitionedParameterCoordinator

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
        setattr(self, CO + "active_backward_submodules", LoggingDict())

    PPC.__init__ = init

    orig_reset = PPC.reset_step

    def reset_step(self):
        mode_before = priv(self, "trace_mode").name
        emit("pass_start")
        orig_reset(self)
        guard(after_reset, self, mode_before)

    def after_reset(self, mode_before):
        mode_after = priv(self, "trace_mode").name
        q = priv(self, "param_queue")
        if q is not None and not isinstance(q, LoggingDeque):
            setattr(self, CO + "param_queue", LoggingDeque(q))
        if mode_before != "RECORD" and mode_after == "RECORD":
            emit("trace_record")
        elif mode_before == "RECORD" and mode_after == "COMPLETE":
            order = priv(self, "param_order")
            emit("trace_complete", numel=len(order))
            note("trace_complete", modules=[int(m.ds_id) for m in priv(self, "submodule_order")],
                 queue=[[int(e.param.ds_id), int(e.step_id_last_used_at)] for e in order],
                 queue_names=[f"{name_of(e.param)}@{e.step_id_last_used_at}" for e in order])

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
        params = guard(lambda: list(ppc.iter_params(current_submodule, recurse=z3_leaf_module(current_submodule))))
        params = params or []
        na_at_entry = bool(guard(lambda: sum(p.partition_numel() for p in params if p.ds_status == NA) > 0))
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
             params=guard(lambda: [[int(p.ds_id), status_of(p), sorted(p.ds_active_sub_modules)] for p in params]))

    PPC.fetch_sub_module = fetch_sub_module

    orig_gather = getattr(PPC, CO + "all_gather_params")

    def all_gather_params(self, params, forward):
        guard(before_gather, params)
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

    setattr(PPC, CO + "all_gather_params", all_gather_params)

    orig_release_param = getattr(PPC, CO + "release_param")

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

    setattr(PPC, CO + "release_param", release_param)

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
            emit("wait", param=key, status=status_of(key))
        return orig_pop(self, key, *default)

    ppc.InflightParamRegistry.pop = reg_pop
