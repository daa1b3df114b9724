"""Patches of DeepSpeed's module hooks (DeepSpeedZeRoOffload): module pre/post forward and backward
events with their phase, and the names of modules and params relative to the engine's root."""

import torch

from .state import CO, R, emit, graph_task_active, guard, name_of, note, status_of


def patch(ds):
    """Wraps the hook functions the closures of ``_register_deepspeed_module`` call."""
    po, ppc, s3, eng = ds.parameter_offload, ds.coordinator, ds.stage3, ds.engine
    NA, AV = ds.NOT_AVAILABLE, ds.AVAILABLE

    def priv(coord, name):
        return getattr(coord, CO + name)

    DZO = po.DeepSpeedZeRoOffload

    def hook(orig, kind, backward):

        def wrapped(self, sub_module):
            if backward:
                phase = "bwd"
            elif graph_task_active():
                phase = "recompute"
            else:
                phase = "fwd" if sub_module.training else "eval"
            R.ctx.append({"phase": phase, "module": sub_module})
            try:
                coord = self.get_param_coordinator()
                emit(kind, module=sub_module, trace_step=priv(coord, "step_id"))
                if kind in ("module_pre", "module_post"):
                    note(kind, module=guard(lambda: int(sub_module.ds_id)),
                         fwd_module_stack=guard(lambda: [int(getattr(m, "ds_id", -1)) for m in po.FWD_MODULE_STACK]))
                R.internal += 1
                try:
                    return orig(self, sub_module)
                finally:
                    R.internal -= 1
            finally:
                R.ctx.pop()

        return wrapped

    DZO.pre_sub_module_forward_function = hook(DZO.pre_sub_module_forward_function, "module_pre", False)
    DZO.post_sub_module_forward_function = hook(DZO.post_sub_module_forward_function, "module_post", False)
    DZO.pre_sub_module_backward_function = hook(DZO.pre_sub_module_backward_function, "backward_pre", True)
    DZO.post_sub_module_backward_function = hook(DZO.post_sub_module_backward_function, "backward_post", True)

    orig_dzo_init = DZO.__init__

    def name_objects(module):
        # names relative to the engine's root, taken before conversion (objects stay the same),
        # and the engine that owns them (several engines may live in one process)
        for n, m in module.named_modules():
            m.__dict__["_zfetch_name"] = n
            m.__dict__["_zfetch_engine"] = R.engine
        for n, p in module.named_parameters():
            p._zfetch_name = n
            p._zfetch_engine = R.engine

    def dzo_init(self, module, *a, **kw):
        guard(name_objects, module)
        self.__dict__["_zfetch_engine"] = R.engine
        return orig_dzo_init(self, module, *a, **kw)

    DZO.__init__ = dzo_init

    orig_get_coordinator = DZO.get_param_coordinator

    def get_param_coordinator(self, *a, **kw):
        # every use of an engine's coordinator goes through here: events without a module or param
        # (pass_start, trace_complete, ...) belong to this engine
        owner = self.__dict__.get("_zfetch_engine")
        if owner is not None:
            R.active = owner
        return orig_get_coordinator(self, *a, **kw)

    DZO.get_param_coordinator = get_param_coordinator
