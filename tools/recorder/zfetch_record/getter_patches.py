"""Patches of external-parameter registration and of the ZeROOrderedDict getter: access,
registration and getter-gather events, and the two discovery policies:

* ``resident-skip``          DeepSpeed as it is (only NOT_AVAILABLE params are discovered);
* ``residency-independent``  PR #8875 (docs/semantics.md 5.7): an eager-forward access to a ZeRO
  param whose owner is not the module on top of FWD_MODULE_STACK registers it as an external of that
  module whatever its status; the getter still gathers only when the param is NOT_AVAILABLE.
"""

from collections import OrderedDict

import torch

from .state import CO, R, _phase, emit, graph_task_active, guard, name_of, note, notify, status_of


def patch(ds):
    """Replaces the getter and wraps ``register_external_parameter``."""
    po, ppc, s3, eng = ds.parameter_offload, ds.coordinator, ds.stage3, ds.engine
    NA, AV = ds.NOT_AVAILABLE, ds.AVAILABLE

    def priv(coord, name):
        return getattr(coord, CO + name)

    orig_register = po.register_external_parameter

    def register_external_parameter(module, parameter):
        new = id(parameter) not in getattr(module, "_external_params", {})
        if new and not R.busy:
            emit("register_external", module=module, param=parameter, status=status_of(parameter))
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
        top, root_call_phase = guard(before_access, self, key, param) or (None, None)
        # A read in a call of the root outside engine.forward (generate): the registration and the
        # gather it causes belong to that forward as much as the access does, so they carry its
        # phase too (without this frame they were labelled `none`).
        before = param.ds_status
        R.ctx.append({"phase": root_call_phase})
        R.internal += 1
        try:
            result = impl(self, key)
            if before == NA and param.ds_status == AV:
                emit("getter_gather", module=top, param=param, numel=param.ds_numel,
                     nbytes=param.ds_numel * param.element_size())
        finally:
            R.internal -= 1
            R.ctx.pop()
        return result

    def before_access(self, key, param):
        """Records an external read; returns the module reading and, for a read in a call of the
        root outside engine.forward, that call's phase (else None)."""
        owner = self._parent_module
        stack = po.FWD_MODULE_STACK
        top = stack[-1] if stack else None
        in_fwd = bool(getattr(owner._parameters, "_in_forward", False))
        in_task = graph_task_active()
        external = top is not None and top is not owner
        root_call_phase = None
        if external and (in_fwd or in_task):
            if in_task and not in_fwd:
                phase = "recompute"
            elif _phase() == "none":
                # A call of the root outside engine.forward (generate): its hooks set
                # _in_forward all the same; the read belongs to that forward, labelled as its
                # hooks label it.
                phase = "fwd" if top.training else "eval"
                root_call_phase = phase
            else:
                phase = None
            R.ctx.append({"phase": phase})
            try:
                emit("access", module=top, param=param, status=status_of(param))
                notify("external_access", top, param)
                note("access", key=key, owner=name_of(owner), eager=in_fwd, graph_task=in_task,
                     fwd_module_stack=[int(getattr(m, "ds_id", -1)) for m in stack])
            finally:
                R.ctx.pop()
        return top, root_call_phase

    ZOD.__getitem__ = getitem
