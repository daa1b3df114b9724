#!/usr/bin/env python3
"""The recorder's derivation of which tensors require grad (tools/recorder/zfetch_record/grad_flow.py),
on stand-in tensors (no torch): the root's input is what it really is (token ids never require grad),
and a leaf the model made to require grad from a call's output (``.detach().requires_grad_()``, or the
output itself made to require grad) marks that call ``output: leaf``. End to end, a scenario written
from such observations simulates as DeepSpeed runs the model: the frozen embedding gets no backward
hook and the root no post-backward, the checkpointed layers after it both.
Usage: recorder_grad_flow_check.py ZFETCH (from the repository root)
"""
import json
import os
import subprocess
import sys
import tempfile

from recorder_checks import expect, failures, finish
from zfetch_record import grad_flow
from zfetch_record.scenario_writer import OBSERVATIONS_FORMAT, scenario_from_observations

zfetch = sys.argv[1]


class Storage:

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


class Tensor:
    """What grad_flow reads of a torch tensor; detach() shares the storage, as torch's does."""

    def __init__(self, address, floating=True, requires_grad=False, grad_fn=None):
        self.storage, self.floating, self.requires_grad, self.grad_fn = Storage(address), floating, requires_grad, grad_fn

    def is_floating_point(self):
        return self.floating

    def untyped_storage(self):
        return self.storage

    def detach(self):
        return Tensor(self.storage.address, self.floating)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self


def marked(inputs, outputs, known=()):
    notes = set()
    grad_flow.mark_made_leaves(inputs, outputs, set(id(t) for t in known), notes, "layers.0")
    return sorted(notes)


# The root's input: token ids never require grad, even where a stand-in claims to.
expect("token ids", grad_flow.requires_grad(Tensor(1, floating=False)), False)
expect("int that claims grad", grad_flow.requires_grad(Tensor(1, floating=False, requires_grad=True)), False)
expect("float input with grad", grad_flow.requires_grad(Tensor(2, requires_grad=True)), True)

# x = self.embed(ids).detach().requires_grad_(): DeepSpeed's hook already returned a detached copy of
# the embedding's output; the model detaches again. Both share the output's storage.
embed = {"call": "embed"}
outputs = grad_flow.CallOutputs()
raw = Tensor(100)
outputs.add(embed, [raw])
x = raw.detach().detach().requires_grad_()
expect("detached leaf notes", marked([x], outputs), [])
expect("detached leaf marks its producer", embed, {"call": "embed", "output": "leaf"})

# The output itself made to require grad (transformers' enable_input_require_grads' forward hook).
embed = {"call": "embed"}
outputs = grad_flow.CallOutputs()
raw = Tensor(200)
outputs.add(embed, [raw])
raw.requires_grad_()
expect("output made to require grad", (marked([raw], outputs), embed), ([], {"call": "embed", "output": "leaf"}))

# Not made leaves: a forward's own input passed on, a tensor with a grad_fn, one without grad.
layer = {"call": "l0"}
outputs = grad_flow.CallOutputs()
root_input = Tensor(300, requires_grad=True)
outputs.add(layer, [Tensor(301)])
expect("forward input passed on", marked([root_input], outputs, known=[root_input]), [])
expect("non-leaf", marked([Tensor(301, requires_grad=True, grad_fn=object())], outputs), [])
expect("no grad", marked([Tensor(301)], outputs), [])
expect("nothing marked", layer, {"call": "l0"})

# Not expressible, and said so: a leaf from no call's output; a detached copy of an output that
# required grad (zfetch would still run the producer's backward); the meta device (no storage).
outputs = grad_flow.CallOutputs()
trained = {"call": "proj"}
out = Tensor(400, requires_grad=True, grad_fn=object())
outputs.add(trained, [out])
expect("fresh leaf", marked([Tensor(401, requires_grad=True)], outputs),
       ["layers.0: fed a leaf that requires grad made from no call's output"])
expect("detached trained output", marked([out.detach().requires_grad_()], outputs),
       ["layers.0: fed a detached copy of an output that requires grad"])
expect("trained producer unmarked", trained, {"call": "proj"})
meta = {"call": "embed"}
outputs = grad_flow.CallOutputs()
meta_out = Tensor(0)
outputs.add(meta, [meta_out])
expect("meta device", (marked([meta_out.detach().requires_grad_()], outputs), meta),
       (["layers.0: fed a leaf that requires grad made from no call's output"], {"call": "embed"}))

# End to end: the observations of a model like tools/gpu/real_deepspeed.py's LoRA one (token ids,
# a frozen embedding detached and made a leaf, each layer in a reentrant checkpoint).
layer = {"class": "Layer", "children": [{"name": "base", "class": "Linear", "params": {"weight": {"shape": [8, 8], "frozen": True}}},
                                        {"name": "adapter", "class": "Linear", "params": {"weight": [8, 8]}}]}
observed = {
    "format": OBSERVATIONS_FORMAT, "version": 1, "name": "detached-embedding", "source": "recorder_grad_flow_check",
    "world_size": 2, "input_requires_grad": False, "schedule": [{"train": 2}], "leaf_notes": [],
    "config": {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
               "zero_optimization": {"stage": 3, "param_persistence_threshold": 0}},
    "tree": {"name": "model", "class": "Model", "_q": "",
             "children": [{"name": "embed", "class": "Embedding", "_q": "embed",
                           "params": {"weight": {"shape": [32, 8], "frozen": True}}},
                          {"name": "layers", "class": "ModuleList", "_q": "layers",
                           "children": [dict(layer, name=str(i), _q=f"layers.{i}",
                                             children=[dict(c, _q=f"layers.{i}.{c['name']}") for c in layer["children"]])
                                        for i in range(2)]}]},
    "programs": {"": [{"call": "embed", "output": "leaf"},
                      *({"checkpoint": {"reentrant": True}, "body": [{"call": f"layers.{i}"}]} for i in range(2))]},
    "outputs": {}, "changed": [], "variants": {},
}
text = scenario_from_observations(json.loads(json.dumps(observed)))
expect("written call", "{call: embed, output: leaf}" in text, True)
expect("no input_requires_grad", "input_requires_grad" in text, False)
observed_notes = dict(observed, leaf_notes=["layers.0: fed a leaf that requires grad made from no call's output"])
expect("note in the header", "# Module inputs made to require grad" in scenario_from_observations(observed_notes), True)

with tempfile.TemporaryDirectory() as tmp:
    written = os.path.join(tmp, "written.yaml")
    with open(written, "w", encoding="utf-8") as f:
        f.write(text)
    trace = os.path.join(tmp, "sim.jsonl")
    run = subprocess.run([zfetch, "run", written, "--trace", trace], capture_output=True, text=True, check=False)
    expect("zfetch run exit", (run.returncode, run.stderr[:300]), (0, ""))
    hooks = {}
    if run.returncode == 0:
        with open(trace, encoding="utf-8") as f:
            for line in f:
                event = json.loads(line)
                if event.get("kind") in ("backward_pre", "backward_post") and event.get("rank", 0) == 0:
                    key = (event["kind"], event.get("module", ""))
                    hooks[key] = hooks.get(key, 0) + 1
    # Two steps: per step the root's pre-backward (no post-backward: token ids need no grad), both
    # hooks of each layer and its children, none of the embedding's.
    want = {("backward_pre", "<root>"): 2}
    for module in ("layers.0", "layers.0.base", "layers.0.adapter", "layers.1", "layers.1.base", "layers.1.adapter"):
        want.update({("backward_pre", module): 2, ("backward_post", module): 2})
    expect("backward hooks", sorted(hooks.items()), sorted(want.items()))

finish("recorder grad flow")
