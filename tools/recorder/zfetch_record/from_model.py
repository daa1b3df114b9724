"""A zfetch scenario from a torch model, without DeepSpeed or a GPU:

    python3 -m zfetch_record.from_model MODULE:FACTORY [--out FILE] [--device cpu|meta]
        [--world-size N] [--deepspeed-config FILE.json] [--set KEY=VALUE ...] [--hidden-size N]
        [--schedule "train=1,save=ckpt,restart,load=ckpt,train=1"] [--name NAME]

FACTORY (a callable in module MODULE, imported from the current folder or sys.path) returns
``(model, inputs)``: the model and a tuple of forward arguments. One forward and backward run with
module hooks and a parameter getter like DeepSpeed's (a read of a parameter from outside its owner's
forward is an access; data when the parameter enters a torch op, else metadata); the scenario has the
module tree, each module's forward as it ran, the config and the schedule. ``--device meta`` runs
without memory for the weights (shapes only)."""

import argparse
import importlib
import json
import os
import sys
from collections import OrderedDict

import torch

from . import program, scenario_writer


class _ReadRecorder(OrderedDict):
    """A module's ``_parameters`` that reports reads from outside the module's own forward, as
    DeepSpeed's ZeROOrderedDict sees them."""

    def __init__(self, items, owner_name, observer):
        super().__init__(items)
        self.owner_name = owner_name
        self.observer = observer

    def __getitem__(self, key):
        param = OrderedDict.__getitem__(self, key)
        frames = self.observer.frames
        if param is not None and frames and frames[-1]["module"] != self.owner_name:
            self.observer.access(param)
        return param


def _parse_schedule(text):
    items = scenario_writer.Schedule()
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        kind, _, value = part.partition("=")
        if kind == "train":
            for _ in range(int(value or 1)):
                items.train_step()
        elif kind == "eval":
            for _ in range(int(value or 1)):
                items.eval_pass()
        elif kind == "save":
            items.save(value)
        elif kind == "load":
            items.load(value)
        elif kind == "restart":
            items.restart(reuse_model=value == "reuse")
        else:
            raise SystemExit(f"from_model: unknown schedule item '{part}' (train=N, eval=N, save=TAG, "
                             f"load=TAG, restart)")
    return items.as_list()


def _value(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _config(args):
    inline = {}
    for item in args.set:
        key, _, value = item.partition("=")
        block = inline
        parts = key.split(".")
        for part in parts[:-1]:
            block = block.setdefault(part, {})
        block[parts[-1]] = _value(value)
    if args.deepspeed_config is None:
        inline.setdefault("zero_optimization", {}).setdefault("stage", 3)
    return inline


def _loss(output):
    tensors = [t for t in program._tensors(output) if t.is_floating_point() and t.requires_grad]
    return sum(t.float().pow(2).mean() for t in tensors)


def observe(model, inputs):
    """Runs one training forward and backward of ``model`` on ``inputs``; returns the observer."""
    names = scenario_writer.object_names(model)
    observer = program.ProgramObserver(names)
    for name, module in model.named_modules():
        module._parameters = _ReadRecorder(module._parameters, name, observer)
    hooks = program.install_module_hooks(observer)
    program.observe_checkpoints(observer)
    try:
        model.train()
        output = model(*inputs)
        observer.recording = False
        loss = _loss(output)
        if isinstance(loss, torch.Tensor):
            loss.backward()
    finally:
        for handle in hooks:
            handle.remove()
    return observer


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m zfetch_record.from_model", description=__doc__.split("\n")[0])
    parser.add_argument("factory", help="MODULE:FACTORY returning (model, inputs)")
    parser.add_argument("--out", help="scenario file to write (default: stdout)")
    parser.add_argument("--name", help="scenario name (default: the factory's name)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "meta"))
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--deepspeed-config", help="a ds_config JSON file, referenced from the scenario")
    parser.add_argument("--set", action="append", default=[], help="an inline ds_config key, KEY=VALUE")
    parser.add_argument("--hidden-size", type=int, help="for HF 'auto' values (default: model.config.hidden_size)")
    parser.add_argument("--schedule", default="train=1")
    args = parser.parse_args(argv)

    module_name, _, factory_name = args.factory.partition(":")
    sys.path.insert(0, os.getcwd())
    factory = getattr(importlib.import_module(module_name), factory_name)
    torch.manual_seed(0)
    with torch.device(args.device):
        made = factory()
    model, inputs = made if isinstance(made, tuple) else (made, ())
    tree = scenario_writer.module_tree(model, is_leaf=lambda m: bool(getattr(m, "_z3_leaf", False)))
    observer = observe(model, tuple(inputs))
    unexpressed = []
    tree = scenario_writer.finish_tree(tree, observer, unexpressed)
    templates = scenario_writer.compress(tree, observer)

    document_config = _config(args)
    hidden = args.hidden_size or getattr(getattr(model, "config", None), "hidden_size", None)
    name = args.name or factory_name.replace("_", "-")
    text = scenario_writer.scenario_text(
        name, f"written by zfetch_record.from_model from {args.factory} (one forward and backward on {args.device})",
        args.world_size, tree, templates, document_config, _parse_schedule(args.schedule),
        observer.input_requires_grad,
        ([f"Module forwards that differed between calls: {', '.join(n or 'the root' for n in sorted(unexpressed))}"]
         if unexpressed else []) + scenario_writer.leaf_notes(observer.leaf_notes))
    if args.deepspeed_config:
        out_dir = os.path.dirname(os.path.abspath(args.out)) if args.out else os.getcwd()
        reference = os.path.relpath(os.path.abspath(args.deepspeed_config), out_dir)
        text = text.replace("\ndeepspeed:", f"\ndeepspeed_config: {reference}\ndeepspeed:", 1)
    if hidden:
        text = text.replace("\ndeepspeed", f"\nhf: {{hidden_size: {int(hidden)}}}\ndeepspeed", 1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
