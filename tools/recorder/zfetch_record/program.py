"""The forward program each module runs, observed: calls of submodules in order, reads of
parameters from outside their owner (data or metadata), checkpoint regions (reentrant or not),
parameters returned from a forward, how many differentiable tensors a module returns, and calls
whose output the model detached and made a leaf that requires grad (grad_flow.py).

Recorded in eager forwards only (a recompute replays the same program). A module whose program
differs between passes keeps each distinct program with the values of what ``when:`` can test of
the passes that ran it (``variants``; state.pass_context): the writer turns them into one program
with conditions (variants.py)."""

import torch
import torch.utils.checkpoint
from torch.overrides import TorchFunctionMode

from . import grad_flow
from .state import R, graph_task_active, guard, pass_context

# Distinct programs kept per module; a module that runs more is written with its first program.
MAX_VARIANTS = 16


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _returned_param(tensor):
    """The parameter a forward's output is: the Parameter itself, or the alias DeepSpeed's hooks put
    in its place when a child returned it (``ds_param_alias``), else None."""
    param = getattr(tensor, "ds_param_alias", tensor)
    return param if isinstance(param, torch.nn.Parameter) else None


def _counts_as_output(tensor, grad_enabled):
    # Without grad (the first forward of a reentrant checkpoint region) no output requires grad:
    # every floating-point one is an activation the backward will reach.
    if _returned_param(tensor) is not None:
        return False
    return tensor.requires_grad if grad_enabled else tensor.is_floating_point()


class _DataUse(TorchFunctionMode):
    """Marks a pending external read as a data read when the parameter is an input of a torch op in
    the reading forward itself (attribute reads such as ``.dtype`` or ``.shape`` are metadata)."""

    def __init__(self, observer):
        super().__init__()
        self.observer = observer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        frames = self.observer.frames
        if getattr(func, "__name__", "") != "__get__" and frames and R.internal == 0:
            pending = self.observer.pending
            for tensor in _tensors((args, kwargs)):
                entry = pending.get(id(tensor))
                # Only the accessing forward's own ops: inside a child the child uses its own.
                if entry is not None and entry[1] is frames[-1]:
                    entry[0]["kind"] = "data"
        return func(*args, **kwargs)


class ProgramObserver:
    """Frames of the running forwards; ``programs[name]`` is the first op list of module ``name``,
    ``variants[name]`` every distinct one with the context values of the passes that ran it."""

    def __init__(self, names):
        self.names = names  # id(module) -> qualified name, id(param) -> qualified name
        self.frames = []
        self.programs = {}
        self.outputs = {}
        self.variants = {}  # name -> [{"ops": [...], "values": {field: set of values}}]
        self.changed = set()
        self.too_many = set()  # modules that ran more than MAX_VARIANTS distinct programs
        self.context = None  # the running pass's state.pass_context
        self.pending = {}  # id(param) -> the access op waiting to learn data or metadata
        self.data_use = _DataUse(self)
        self.data_use_depth = 0
        self.input_requires_grad = False
        self.leaf_notes = set()  # leaves made to require grad that no `output: leaf` expresses
        self.recording = True

    def _active(self):
        return self.recording and not graph_task_active()

    def _relative(self, frame_name, target):
        if frame_name == "":
            return target
        prefix = frame_name + "."
        return target[len(prefix):] if target.startswith(prefix) else None

    def module_enter(self, module, args):
        if not self._active():
            return
        name = self.names.get(id(module))
        if name is None:
            return
        inputs = [t for t in _tensors(args) if _returned_param(t) is None]
        call = None
        if self.frames:
            parent = self.frames[-1]
            relative = self._relative(parent["module"], name)
            if relative is not None:
                call = {"call": relative}
                parent["ops"].append(call)
            # A leaf made to require grad from an earlier call's output (the model's
            # `.detach().requires_grad_()`): that call's output is written `output: leaf`.
            made = [t for t in inputs if grad_flow.is_made_leaf(t)]
            if made:
                known = set().union(*(frame["inputs"] for frame in self.frames))
                grad_flow.mark_made_leaves(made, parent["outputs"], known, self.leaf_notes, name)
        else:  # a pass begins
            self.context = guard(pass_context, module.training)
            # The scenario's input_requires_grad: what the root's input really is.
            self.input_requires_grad = self.input_requires_grad or any(grad_flow.requires_grad(t) for t in inputs)
        self.frames.append({"module": name, "ops": [], "stack": [], "call": call, "inputs": {id(t) for t in inputs},
                            "outputs": grad_flow.CallOutputs()})

    def module_exit(self, module, output):
        if not self._active() or not self.frames:
            return
        name = self.names.get(id(module))
        if name is None or self.frames[-1]["module"] != name:
            return
        frame = self.frames.pop()
        for tensor in _tensors(output):
            param = _returned_param(tensor)
            if param is not None and id(param) in self.names:
                relative = self._relative(name, self.names[id(param)])
                frame["ops"].append({"returns": relative if relative is not None else "/" + self.names[id(param)]})
        for op in frame["ops"]:
            if "access" in op:
                self.pending.pop(op.pop("_param"), None)
        self._leave_data_use(frame)
        if self.frames and frame["call"] is not None:
            self.frames[-1]["outputs"].add(frame["call"], [t for t in _tensors(output) if _returned_param(t) is None])
        grad_enabled = torch.is_grad_enabled()
        differentiable = sum(1 for t in _tensors(output) if _counts_as_output(t, grad_enabled))
        if name not in self.programs:
            self.programs[name] = frame["ops"]
            self.outputs[name] = max(differentiable, 1)
        self._count_variant(name, frame["ops"])

    def _count_variant(self, name, ops):
        if name in self.too_many:
            return
        variants = self.variants.setdefault(name, [])
        variant = next((v for v in variants if v["ops"] == ops), None)
        if variant is None:
            if len(variants) == MAX_VARIANTS:
                self.too_many.add(name)
                del self.variants[name]
                return
            variant = {"ops": ops, "values": {}}
            variants.append(variant)
            if len(variants) > 1:
                self.changed.add(name)
        for field, value in (self.context or {}).items():
            variant["values"].setdefault(field, set()).add(value)

    def changed_variants(self):
        """The variants of the modules whose program changed, as plain data (values sorted); a
        module that ran more than MAX_VARIANTS programs is left out."""
        out = {}
        for name in sorted(self.changed):
            variants = self.variants.get(name, [])
            if name not in self.too_many:
                out[name] = [{"ops": v["ops"], "values": {f: sorted(vals) for f, vals in v["values"].items()}}
                             for v in variants]
        return out

    def external_access(self, top, param):
        """A read of ``param`` from outside its owner as DeepSpeed sees it: ``top`` is the innermost
        module with DeepSpeed's hooks. A module below it has none (inside a z3 leaf): the read is
        in that module's own forward, unless the param is its own (the simulator reads a hookless
        module's own params at its call)."""
        if not self.frames:
            return
        running, top_name = self.frames[-1]["module"], self.names.get(id(top))
        if top_name is None:
            return
        if running == top_name:
            self.access(param)
        elif top_name == "" or running.startswith(top_name + "."):
            owner = self.names.get(id(param), "").rpartition(".")[0]
            if owner != running:
                self.access(param)

    def access(self, param):
        """A read of ``param`` from outside its owner, by the module running now."""
        if not self._active() or not self.frames:
            return
        frame = self.frames[-1]
        top_name = frame["module"]
        param_name = self.names.get(id(param))
        if param_name is None:
            return
        relative = self._relative(top_name, param_name)
        op = {"access": relative if relative is not None else "/" + param_name, "kind": "metadata",
              "_param": id(param)}
        self._target(frame).append(op)
        self.pending[id(param)] = (op, frame)
        if not frame.get("data_use"):
            frame["data_use"] = True
            self.data_use_depth += 1
            if self.data_use_depth == 1:
                self.data_use.__enter__()

    def _leave_data_use(self, frame):
        if frame.get("data_use"):
            self.data_use_depth -= 1
            if self.data_use_depth == 0:
                self.data_use.__exit__(None, None, None)

    def _target(self, frame):
        return frame["stack"][-1] if frame["stack"] else frame["ops"]

    def checkpoint_enter(self, reentrant):
        if not self._active() or not self.frames:
            return None
        frame = self.frames[-1]
        region = {"checkpoint": {"reentrant": bool(reentrant)}, "body": []}
        self._target(frame).append(region)
        # Calls inside the region land in its body: the region is a frame of the same module.
        self.frames.append({"module": frame["module"], "ops": region["body"], "stack": [], "region": True,
                            "inputs": set(), "outputs": frame["outputs"]})
        return region

    def checkpoint_exit(self, region):
        if region is None or not self.frames or not self.frames[-1].get("region"):
            return
        frame = self.frames.pop()
        self._leave_data_use(frame)
        for op in frame["ops"]:
            if "access" in op and "_param" in op:
                self.pending.pop(op.pop("_param"), None)


def install_module_hooks(observer):
    """Global forward hooks on every nn.Module; returns the handles (remove them to stop)."""
    from torch.nn.modules import module as module_mod
    pre = module_mod.register_module_forward_pre_hook(lambda m, args: observer.module_enter(m, args))
    post = module_mod.register_module_forward_hook(lambda m, args, out: observer.module_exit(m, out))
    return [pre, post]


_checkpoint_observers = []
_original_checkpoint = None


def observe_checkpoints(observer):
    """Wrap torch.utils.checkpoint.checkpoint so regions and their reentrancy are observed."""
    global _original_checkpoint
    _checkpoint_observers.append(observer)
    if _original_checkpoint is not None:
        return
    _original_checkpoint = torch.utils.checkpoint.checkpoint

    def checkpoint(function, *args, use_reentrant=None, **kwargs):
        reentrant = True if use_reentrant is None else use_reentrant
        regions = [(o, o.checkpoint_enter(reentrant)) for o in _checkpoint_observers]
        try:
            return _original_checkpoint(function, *args, use_reentrant=use_reentrant, **kwargs)
        finally:
            for o, region in reversed(regions):
                o.checkpoint_exit(region)

    torch.utils.checkpoint.checkpoint = checkpoint


def stop_observing_checkpoints(observer):
    """The recording of ``observer`` ended: its regions are no longer observed."""
    if observer in _checkpoint_observers:
        _checkpoint_observers.remove(observer)
