"""Patches of the engine and the stage-3 optimizer: engine construction and destruction, forward,
backward and step phases, optimizer steps, persistent-parameter regathers, checkpoint save/load."""

import weakref

import torch

from .state import CO, R, emit, guard, notify, note, status_of


def patch(ds):
    """Wraps the engine's and the optimizer's methods; listeners (state.notify) hear of engines,
    forward passes, optimizer steps, checkpoints and restarts."""
    po, ppc, s3, eng = ds.parameter_offload, ds.coordinator, ds.stage3, ds.engine
    NA, AV = ds.NOT_AVAILABLE, ds.AVAILABLE

    def priv(coord, name):
        return getattr(coord, CO + name)

    S3 = s3.DeepSpeedZeroOptimizer_Stage3

    def persistent_wrap(orig):

        def wrapped(self, *a, **kw):
            pers = list(getattr(self, "persistent_parameters", []))
            before = {id(p): p.ds_status for p in pers}
            r = orig(self, *a, **kw)
            guard(after, pers, before)
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
        notify("engine_starting", self)
        R.engine += 1
        R.engine_obj = None
        orig_e_init(self, *a, **kw)
        R.engine_obj = weakref.ref(self)
        R.engines.append(R.engine_obj)
        R.active = R.engine
        emit("engine_init", phase="none")
        guard(init_note, self)
        notify("engine_ready", self)

    def init_note(self):
        mods = [[int(getattr(m, "ds_id", -1)), n, type(m).__name__] for n, m in self.module.named_modules()]
        prms = [[int(p.ds_id), n, int(p.ds_numel), bool(getattr(p, "ds_persist", False)), bool(p.requires_grad),
                 status_of(p)] for n, p in self.module.named_parameters()]
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

    E.forward = ctx_wrap(E.forward, lambda self: "fwd" if self.module.training else "eval",
                         before=lambda self: notify("forward_pass", self))
    E.backward = ctx_wrap(E.backward, lambda self: "bwd")

    orig_e_step = E.step

    def e_step(self, *a, **kw):
        owner = getattr(self.module, "_zfetch_engine", None)
        if owner is not None:
            R.active = owner
        boundary = self.is_gradient_accumulation_boundary()
        R.ctx.append({"phase": "optimizer" if boundary else None})
        try:
            r = orig_e_step(self, *a, **kw)
        finally:
            R.ctx.pop()
        if boundary:
            R.step += 1
            notify("optimizer_step", self)
        return r

    E.step = e_step

    def checkpoint_wrap(orig, kind):
        # save_checkpoint(save_dir, tag=None, ...) and load_checkpoint(load_dir, tag=None, ...)
        def wrapped(self, *a, **kw):
            tag = kw.get("tag", a[1] if len(a) > 1 else None)
            emit(kind, phase="checkpoint")
            # before the call: a load that raises (a state_dict that does not fit) is in the schedule
            notify(kind, self, tag)
            R.ctx.append({"phase": "checkpoint"})
            try:
                return orig(self, *a, **kw)
            finally:
                R.ctx.pop()

        return wrapped

    E.save_checkpoint = checkpoint_wrap(E.save_checkpoint, "checkpoint_save")
    E.load_checkpoint = checkpoint_wrap(E.load_checkpoint, "checkpoint_load")

    orig_empty_partition_cache = E.empty_partition_cache

    def empty_partition_cache(self, *a, **kw):
        r = orig_empty_partition_cache(self, *a, **kw)
        notify("partition_cache_emptied", self)
        return r

    E.empty_partition_cache = empty_partition_cache

    orig_destroy = E.destroy

    def destroy(self, *a, **kw):
        emit("restart", phase="none")
        notify("engine_destroyed", self)
        return orig_destroy(self, *a, **kw)

    E.destroy = destroy
