"""Which tensors require grad, as the scenario needs it: the root's input (``input_requires_grad``)
and a leaf the model made to require grad from a call's output (``output: leaf`` on that call:
``x = self.embed(ids).detach().requires_grad_()``).

Only tensor attributes are read (``requires_grad``, ``grad_fn``, ``is_floating_point()``,
``untyped_storage().data_ptr()``), so the derivation runs on stand-in tensors without torch."""

import weakref


def requires_grad(tensor):
    """What the tensor really is: a floating-point tensor that requires grad. Token ids (int64)
    never can, whatever the model does after them."""
    return bool(tensor.requires_grad) and tensor.is_floating_point()


def is_made_leaf(tensor):
    """A leaf that requires grad (no autograd path to what computed it). A Parameter is one too:
    the caller leaves parameters out."""
    return requires_grad(tensor) and tensor.grad_fn is None


def _storage(tensor):
    # 0 on the meta device: every meta tensor would share it.
    try:
        return tensor.untyped_storage().data_ptr() or None
    except (AttributeError, RuntimeError):
        return None


class CallOutputs:
    """The outputs of the calls one forward made so far (shared by its checkpoint regions), by the
    tensor object and by its storage: a detached copy (``.detach()``, and DeepSpeed's own wrap of a
    module's output) shares the storage of what it was detached from."""

    def __init__(self):
        self._by_id = {}
        self._by_storage = {}

    def add(self, op, tensors):
        """``op`` (the call's op, a dict) returned ``tensors``; a later one of the same tensor or
        storage replaces it. Kept: whether the output required grad when the call returned (the
        tensor itself only weakly: the recorder must not keep activations alive)."""
        for tensor in tensors:
            entry = (op, requires_grad(tensor), weakref.ref(tensor))
            self._by_id[id(tensor)] = entry
            storage = _storage(tensor)
            if storage is not None:
                self._by_storage[storage] = entry

    def producer(self, tensor):
        """(op, output required grad) of the call whose output ``tensor`` is or was detached from,
        or None."""
        entry = self._by_id.get(id(tensor))
        if entry is not None and entry[2]() is tensor:
            return entry[0], entry[1]
        entry = self._by_storage.get(_storage(tensor)) if _storage(tensor) is not None else None
        return (entry[0], entry[1]) if entry is not None else None


def mark_made_leaves(tensors, outputs, known_ids, notes, consumer):
    """The leaves among ``tensors`` (a call's inputs, parameters left out) that the running forward
    made to require grad: a forward's own input (``known_ids``) is not one. Each is traced to the
    call it came from, whose op gets ``output: leaf``; one from no call's output, or detached from
    an output that required grad (zfetch would still run that call's backward), is not expressible
    and goes to ``notes`` (with ``consumer``, the module fed it)."""
    for tensor in tensors:
        if id(tensor) in known_ids or not is_made_leaf(tensor):
            continue
        found = outputs.producer(tensor) if outputs is not None else None
        if found is None:
            notes.add(f"{consumer or 'the root'}: fed a leaf that requires grad made from no call's output")
        elif found[1]:
            notes.add(f"{consumer or 'the root'}: fed a detached copy of an output that requires grad")
        else:
            found[0]["output"] = "leaf"
