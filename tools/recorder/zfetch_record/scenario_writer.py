"""A zfetch scenario (docs/scenario-format.md) from what was observed of a model: the module tree in
registration order with each parameter's shape, dtype, requires_grad and ties; each module's forward
program (program.py); the ds_config; the schedule as run. Repeated layers become a template with a
count, and a loop over a ModuleList a ``call_each``."""

import copy
import json
import types

from . import variants as program_variants
from . import yaml_text

# By the dtype's name, so that writing a scenario again from observations needs no torch.
_DTYPES = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}
OBSERVATIONS_FORMAT = "zfetch-record-observations"

# zero_optimization fields zfetch reads, by DeepSpeed's pydantic field name.
_ZERO_FIELDS = ("stage", "prefetch_bucket_size", "param_persistence_threshold", "model_persistence_threshold",
                "max_live_parameters", "max_reuse_distance", "module_granularity_threshold",
                "use_all_reduce_for_fetch_params", "allgather_sequential", "overlap_comm",
                "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_nontrainable_weights",
                "log_trace_cache_warnings")


def object_names(root):
    """id(module) and id(param) -> qualified name relative to ``root`` (first name of a tied param)."""
    names = {}
    for name, module in root.named_modules():
        names.setdefault(id(module), name)
    for name, param in root.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), name)
    return names


def _param_spec(param, qualified, names, is_leaf_below):
    shape = list(getattr(param, "ds_shape", None) or param.shape)
    spec = {"shape": shape}
    first = names.get(id(param))
    if first is not None and first != qualified:
        return {"tied_to": first}
    dtype = _DTYPES.get(str(param.dtype), "fp32")
    if dtype != "fp32":
        spec["dtype"] = dtype
    if not param.requires_grad:
        spec["frozen"] = True
    return shape if len(spec) == 1 else spec


def _default_forward(children):
    return [{"call": name} for name in children]


def module_tree(root, root_name="model", is_leaf=lambda m: False):
    """The module tree as scenario mappings (children nested, in registration order), taken when the
    model is built; finish_tree adds the forward programs once they have run."""
    names = object_names(root)

    def build(module, name, qualified):
        node = {"name": name, "class": type(module).__name__, "_q": qualified}
        params = {}
        for pname, param in module._parameters.items():
            if param is not None:
                full = f"{qualified}.{pname}" if qualified else pname
                params[pname] = _param_spec(param, full, names, False)
        if params:
            node["params"] = params
        children = [build(child, cname, f"{qualified}.{cname}" if qualified else cname)
                    for cname, child in module._modules.items() if child is not None]
        if children:
            node["children"] = children
        if is_leaf(module):
            node["leaf"] = True
        return node

    return build(root, root_name, "")


def _clean(ops):
    """The ops without the observer's bookkeeping keys (those starting with '_')."""
    out = []
    for op in ops:
        op = {k: v for k, v in op.items() if not k.startswith("_")}
        if "body" in op:
            op["body"] = _clean(op["body"])
        out.append(op)
    return out


def finish_tree(tree, observer, unexpressed=None):
    """Adds each module's observed forward (when it is not the default one) and output count. A forward
    that changed between passes is written with ``when:`` conditions (variants.py); a module whose
    variants no condition tells apart is written with its first program and added to ``unexpressed``."""
    qualified = tree.pop("_q")
    children = tree.get("children", [])
    for child in children:
        finish_tree(child, observer, unexpressed)
    program = observer.programs.get(qualified)
    program = _clean(program) if program is not None else None
    if qualified in observer.changed:
        variants = observer.variants.get(qualified)
        merged = program_variants.merged_program(
            [dict(v, ops=_clean(v["ops"])) for v in variants]) if variants else None
        if merged is not None:
            program = merged
        elif unexpressed is not None:
            unexpressed.append(qualified)
    if program is not None and program != _default_forward([c["name"] for c in children]):
        tree["forward"] = program
    if observer.outputs.get(qualified, 1) > 1:
        tree["outputs"] = observer.outputs[qualified]
    return tree


def _compress_calls(ops, containers):
    """Consecutive calls of every child of a container, in order, become one ``call_each``."""
    out = []
    i = 0
    while i < len(ops):
        op = ops[i]
        if "body" in op:
            op = dict(op, body=_compress_calls(op["body"], containers))
        done = False
        if "call" in op and len(op) == 1:
            head, _, last = op["call"].rpartition(".")
            kids = containers.get(head)
            if kids and len(kids) >= 2 and last == kids[0] and len(ops) - i >= len(kids):
                run = [o.get("call") for o in ops[i:i + len(kids)]]
                if run == [f"{head}.{k}" for k in kids] and all(len(o) == 1 for o in ops[i:i + len(kids)]):
                    out.append({"call_each": head})
                    i += len(kids)
                    done = True
        if not done:
            out.append(op)
            i += 1
    return out


def compress(tree, observer):
    """Templates for identical ModuleList layers; call_each for loops over them."""
    containers = {}

    def mark(node, qualified):
        for child in node.get("children", []):
            q = f"{qualified}.{child['name']}" if qualified else child["name"]
            if child.get("children") and q not in observer.programs:
                containers[q] = [c["name"] for c in child["children"]]
            mark(child, q)

    mark(tree, "")

    def rewrite(node):
        if "forward" in node:
            node["forward"] = _compress_calls(node["forward"], containers_rel(node))
        for child in node.get("children", []):
            rewrite(child)

    paths = {}

    def index(node, qualified):
        paths[id(node)] = qualified
        for child in node.get("children", []):
            index(child, f"{qualified}.{child['name']}" if qualified else child["name"])

    index(tree, "")

    def containers_rel(node):
        base = paths[id(node)]
        rel = {}
        for q, kids in containers.items():
            if base == "":
                rel[q] = kids
            elif q.startswith(base + "."):
                rel[q[len(base) + 1:]] = kids
        return rel

    rewrite(tree)

    templates = {}

    def templatize(node):
        children = node.get("children", [])
        for child in children:
            templatize(child)
        names = [c["name"] for c in children]
        if len(children) >= 2 and names == [str(i) for i in range(len(children))]:
            bodies = [json.dumps({k: v for k, v in c.items() if k != "name"}, sort_keys=True) for c in children]
            if len(set(bodies)) == 1:
                body = {k: v for k, v in children[0].items() if k != "name"}
                base = body.get("class", node["name"]).lower() or "layer"
                key = base
                n = 2
                while key in templates and templates[key] != body:
                    key = f"{base}_{n}"
                    n += 1
                templates[key] = body
                node["children"] = [{"template": key, "count": len(children)}]

    templatize(tree)
    return templates


def deepspeed_config(engine):
    """The resolved ds_config keys zfetch reads, from a DeepSpeed engine."""
    config = {"train_micro_batch_size_per_gpu": int(engine.train_micro_batch_size_per_gpu()),
              "gradient_accumulation_steps": int(engine.gradient_accumulation_steps())}
    if engine.fp16_enabled():
        config["fp16"] = {"enabled": True}
    if engine.bfloat16_enabled():
        config["bf16"] = {"enabled": True}
    zero = engine._config.zero_config
    block = {}
    for field in _ZERO_FIELDS:
        if hasattr(zero, field):
            value = getattr(zero, field)
            block[field] = value if isinstance(value, bool) else int(value)
    offload = getattr(zero, "offload_param", None)
    if offload is not None:
        device = getattr(offload.device, "value", offload.device)
        block["offload_param"] = {"device": str(device)}
    leaf = getattr(zero, "leaf_module", None)
    if leaf is not None:
        lists = {k: list(getattr(leaf, k, []) or []) for k in ("classes", "names", "name_suffixes")}
        lists = {k: v for k, v in lists.items() if v}
        if lists:
            block["leaf_module"] = lists
    config["zero_optimization"] = block
    return config


class Schedule:
    """The schedule as run: consecutive optimizer steps and eval passes merge into one item."""

    def __init__(self):
        self.items = []

    def _add(self, kind, count=1):
        if self.items and isinstance(self.items[-1], dict) and kind in self.items[-1]:
            self.items[-1][kind] += count
        else:
            self.items.append({kind: count})

    def train_step(self):
        self._add("train")

    def eval_pass(self):
        self._add("eval")

    def save(self, tag):
        self.items.append({"save_checkpoint": str(tag)})

    def load(self, tag):
        self.items.append({"load_checkpoint": str(tag)})

    def empty_partition_cache(self):
        self.items.append("empty_partition_cache")

    def restart(self, reuse_model):
        self.items.append({"restart": {"reuse_model": True}} if reuse_model else "restart")

    def as_list(self):
        return self.items or [{"train": 1}]


def scenario_text(name, source, world_size, tree, templates, config, schedule, input_requires_grad,
                  notes=()):
    document = {"name": name, "source": source, "world_size": int(world_size)}
    if input_requires_grad:
        document["input_requires_grad"] = True
    document["deepspeed"] = config
    if templates:
        document["templates"] = templates
    document["model"] = tree
    document["schedule"] = schedule
    header = "Written by zfetch_record from an observed run; `zfetch run` it, `zfetch check` needs an expect block."
    if notes:
        header += "\n" + "\n".join(notes)
    return yaml_text.dump(document, header)


def leaf_notes(notes):
    """The header lines for leaves made to require grad that no ``output: leaf`` expresses."""
    if not notes:
        return []
    return ["Module inputs made to require grad that the scenario does not express (as written they "
            "follow the running value): " + "; ".join(sorted(notes))]


def scenario_from_observations(observed):
    """The scenario's YAML from a recording's observations (session.Recording.observations, or its
    scenario.rankR.observed.json)."""
    if observed.get("format") != OBSERVATIONS_FORMAT or observed.get("version") != 1:
        raise ValueError(f"not {OBSERVATIONS_FORMAT} version 1")
    observed = copy.deepcopy(observed)
    # Observations written before the recorder kept each pass's program have no "variants".
    observer = types.SimpleNamespace(programs=observed["programs"], outputs=observed["outputs"],
                                     changed=set(observed["changed"]), variants=observed.get("variants", {}))
    unexpressed = []
    tree = finish_tree(observed["tree"], observer, unexpressed)
    templates = compress(tree, observer)
    names = ", ".join(n or "the root" for n in sorted(unexpressed))
    notes = [f"Module forwards that differed between passes in a way no `when:` condition tells apart "
             f"(the first is written): {names}"] if unexpressed else []
    # Observations written before the recorder traced made leaves have no "leaf_notes".
    notes += leaf_notes(observed.get("leaf_notes", []))
    return scenario_text(observed["name"], observed["source"], observed["world_size"], tree, templates,
                         observed["config"], observed["schedule"], observed["input_requires_grad"], notes)
