"""Convert zfetch scenario files (YAML) to the JSON files the generic DeepSpeed runner reads.

    python3 tools/recorder/scenario_to_json.py [PATH ...] [--out DIR]

PATH: scenario files or folders (default: scenarios/); .yaml, .yml and .json files are taken, except
calibration files and anything under scenarios/real/.  DIR (default tools/recorder/corpus) receives
one JSON file per scenario and manifest.json, which lists them.  Needs PyYAML; the machine that runs DeepSpeed needs no
YAML: run_scenario.py reads only the JSON.

Each JSON file keeps the scenario's structure and adds what the runner needs resolved:

* ``ds_config``: the inline ``deepspeed`` mapping or the ``deepspeed_config`` file, with ``stage: 3``
  when absent, ``train_micro_batch_size_per_gpu`` 1 and ``gradient_accumulation_steps`` 1 when absent
  (zfetch's defaults), an AdamW optimizer with ``torch_adam`` (FusedAdam needs a C++ build; the optimizer
  class does not touch the fetch schedule), ``zero_allow_untested_optimizer``, quiet logging, and
  integers written as ``5e8`` turned into integers;
* ``modules``: the module tree flattened in file order (depth-first pre-order, = ``named_modules()``),
  each with its qualified name, class, params (shape, numel, dtype, frozen, canonical name of a tied
  param), forward program (``null`` = the default forward), outputs, and whether DeepSpeed hooks it
  and treats it as a z3 leaf (the simulator's rules: ``leaf: true`` or a ``leaf_module`` match);
* ``schedule`` as a list of ``{"op": ...}`` items;
* ``skip``: per policy, the reason the runner cannot run it faithfully, or null.

The converter never fails on a scenario: one it cannot read gets an entry with ``error`` and is skipped.
"""

import argparse
import copy
import hashlib
import json
import os
import re
import sys

import yaml

POLICIES = ("resident-skip", "residency-independent")
DEFAULT_TIME_LIMIT_S = 60


# ----------------------------------------------------------------------------------------------
# YAML 1.2-like loading: only true/false are booleans (yes/no/on/off stay strings, as in yaml-cpp),
# and 5e8 is a number.

class _Loader(yaml.SafeLoader):
    pass


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:float")]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))


def _construct_float(loader, node):
    text = loader.construct_scalar(node)
    if re.fullmatch(r"[-+]?[0-9][0-9_]*", text):
        return int(text.replace("_", ""))
    return float(text.replace("_", "").replace("inf", "Infinity").replace("Inf", "Infinity")
                 .replace("INF", "Infinity"))


_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def load_yaml(text):
    return yaml.load(text, Loader=_Loader)


class ScenarioError(Exception):
    pass


# ----------------------------------------------------------------------------------------------
# ds_config


def _intlike(v):
    """5e8 (float or string) -> 500000000; leaves anything else alone."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+", v.strip()):
        f = float(v)
        return int(f) if f.is_integer() else f
    return v


def _ints_deep(v):
    if isinstance(v, dict):
        return {k: _ints_deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_ints_deep(x) for x in v]
    return _intlike(v)


def resolve_ds_config(raw, notes):
    cfg = _ints_deep(copy.deepcopy(raw)) if raw else {}
    if not isinstance(cfg, dict):
        raise ScenarioError("the ds_config is not a mapping")
    zero = cfg.get("zero_optimization")
    if zero is None:
        zero = cfg["zero_optimization"] = {}
    if not isinstance(zero, dict):
        raise ScenarioError("zero_optimization is not a mapping")
    zero.setdefault("stage", 3)
    if "train_micro_batch_size_per_gpu" not in cfg and "train_micro_batch_size" in cfg:
        cfg["train_micro_batch_size_per_gpu"] = cfg.pop("train_micro_batch_size")
    if "train_batch_size" not in cfg:
        cfg.setdefault("train_micro_batch_size_per_gpu", 1)
        cfg.setdefault("gradient_accumulation_steps", 1)
    else:
        notes.append("train_batch_size given: DeepSpeed derives what is missing from it")
    opt = cfg.get("optimizer")
    if not isinstance(opt, dict) or str(opt.get("type", "")).lower() not in ("adam", "adamw"):
        if opt is not None:
            notes.append(f"optimizer {opt.get('type') if isinstance(opt, dict) else opt!r} replaced by AdamW "
                         "(torch_adam): the optimizer class does not touch the fetch schedule")
        cfg["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}
    else:
        opt.setdefault("params", {})
        opt["params"]["torch_adam"] = True  # FusedAdam needs a C++ build
    cfg["zero_allow_untested_optimizer"] = True
    cfg.setdefault("zero_force_ds_cpu_optimizer", False)  # offload_optimizer with a torch optimizer
    cfg["steps_per_print"] = 10**9
    cfg["wall_clock_breakdown"] = False
    return cfg


def zero_value(zero, key, default=None):
    """A zero_optimization knob under its stage3_ name or the pydantic field name."""
    for k in (key, key[len("stage3_"):] if key.startswith("stage3_") else "stage3_" + key):
        if k in zero:
            return zero[k]
    return default


# ----------------------------------------------------------------------------------------------
# modules, params, programs


def _shape_of(spec, qname):
    if isinstance(spec, list):
        return [int(d) for d in spec], None
    if isinstance(spec, dict):
        if "shape" in spec:
            return [int(d) for d in spec["shape"]], spec
        if "numel" in spec:
            return [int(_intlike(spec["numel"]))], spec
        if "tied_to" in spec:
            return None, spec
    raise ScenarioError(f"parameter '{qname}' has no shape")


def expand_templates(node, templates, within=()):
    """The module tree with every `template:` entry instantiated (docs/scenario-format.md,
    "Templates, repetition, anchors and merge keys"): the template's body, the entry's own keys
    taking precedence key by key; `count: N` makes N siblings named 0 ... N-1, `overrides` maps an
    instance number to keys that replace the template's and the entry's for that instance."""
    if not isinstance(node, dict):
        raise ScenarioError("a module is not a mapping")
    instances = [node]
    if "template" in node:
        name = str(node["template"])
        if name not in templates:
            raise ScenarioError(f"unknown template '{name}'")
        if name in within:
            raise ScenarioError(f"template '{name}' contains itself")
        within = within + (name,)
        body = dict(templates[name] or {})
        own = {k: v for k, v in node.items() if k not in ("template", "count", "overrides")}
        base = {**body, **own}
        if "count" in node:
            overrides = node.get("overrides") or {}
            instances = []
            for i in range(int(node["count"])):
                instance = {**base, "name": str(i)}
                instance.update(overrides.get(i, overrides.get(str(i), {})) or {})
                instances.append(instance)
        else:
            instances = [base]
    out = []
    for instance in instances:
        instance = dict(instance)
        children = []
        for child in instance.get("children") or []:
            children.extend(expand_templates(child, templates, within))
        if "children" in instance:
            instance["children"] = children
        out.append(instance)
    return out


def flatten_modules(root):
    modules = []

    def visit(node, parent, prefix):
        if not isinstance(node, dict) or "name" not in node:
            raise ScenarioError("a module without a name")
        name = str(node["name"])
        index = len(modules)
        qname = "" if parent is None else (f"{prefix}.{name}" if prefix else name)
        rec = {
            "index": index,
            "name": name,
            "qualified": qname,
            "class": str(node["class"]) if node.get("class") is not None else "",
            "parent": parent,
            "children": [],
            "params": [],
            "forward_raw": node.get("forward"),
            "leaf_flag": bool(node.get("leaf", False)),
            "outputs": int(node.get("outputs", 1)),
        }
        modules.append(rec)
        for pname, pspec in (node.get("params") or {}).items():
            pname = str(pname)
            pq = f"{qname}.{pname}" if qname else pname
            shape, mapping = _shape_of(pspec, pq)
            mapping = mapping or {}
            rec["params"].append({
                "name": pname,
                "qualified": pq,
                "shape": shape,
                "dtype": str(mapping.get("dtype", "")) or None,
                "frozen": bool(mapping.get("frozen", False)),
                "tied_to": str(mapping["tied_to"]) if mapping.get("tied_to") is not None else None,
            })
        for child in node.get("children") or []:
            rec["children"].append(visit(child, index, qname))
        return index

    visit(root, None, "")
    return modules


def resolve_params(modules):
    """Canonical params (tied_to chains followed), shapes/dtypes inherited; numel; declaration order."""
    by_name = {}
    for m in modules:
        for p in m["params"]:
            p["owner"] = m["qualified"]
            by_name[p["qualified"]] = p

    def canonical(p, seen=()):
        if p["tied_to"] is None:
            return p
        if p["qualified"] in seen or p["tied_to"] not in by_name:
            raise ScenarioError(f"bad tied_to of '{p['qualified']}'")
        return canonical(by_name[p["tied_to"]], seen + (p["qualified"],))

    for m in modules:
        for p in m["params"]:
            c = canonical(p)
            p["canonical"] = c["qualified"]
            if p["shape"] is None:
                p["shape"] = list(c["shape"])
            p["dtype"] = p["dtype"] or c["dtype"] or "fp32"
            if p["tied_to"] is not None:
                p["frozen"] = c["frozen"]
            n = 1
            for d in p["shape"]:
                n *= d
            p["numel"] = n
            p["tied_to"] = None if p["tied_to"] is None else c["qualified"]
    return by_name


def resolve_leaves(modules, zero):
    leaf_cfg = zero.get("leaf_module") or {}
    classes = [str(c) for c in leaf_cfg.get("classes", []) or []]
    names = [str(c) for c in leaf_cfg.get("names", []) or []]
    suffixes = [str(c) for c in leaf_cfg.get("name_suffixes", []) or []]
    class_module = {}
    for c in classes:
        if "." in c:
            class_module[c.rsplit(".", 1)[1]] = c.rsplit(".", 1)[0]
    for m in modules:
        parent = m["parent"]
        parent_hooked = parent is None or (modules[parent]["hooked"] and not modules[parent]["leaf"])
        m["hooked"] = parent_hooked
        is_leaf = m["leaf_flag"]
        if m["class"]:
            is_leaf = is_leaf or any(c == m["class"] or c.rsplit(".", 1)[-1] == m["class"] for c in classes)
        is_leaf = is_leaf or m["qualified"] in names
        is_leaf = is_leaf or any(m["qualified"].endswith(s) for s in suffixes)
        m["leaf"] = bool(parent_hooked and is_leaf)
        if m["class"] in class_module:
            m["class_module"] = class_module[m["class"]]
    return classes, names, suffixes


def _when(raw):
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ScenarioError("'when' is not a mapping")
    out = {}
    # `window_micro_step` is the documented name of the index within the accumulation window,
    # `micro_step` its older one (docs/scenario-format.md); the runner calls it micro_step
    for key, name in (("step", "step"), ("window_micro_step", "micro_step"), ("micro_step", "micro_step"),
                      ("rank", "rank"), ("engine", "engine"), ("forward", "forward")):
        if key in raw:
            v = raw[key]
            out[name] = [int(x) for x in v] if isinstance(v, list) else [int(v)]
    if "phase" in raw:
        out["phase"] = str(raw["phase"])
    # a seeded draw (docs/scenario-format.md, "Seeded draws"), with its candidate number
    for key in ("route", "layerdrop"):
        if key in raw:
            d = raw[key]
            out[key] = {"seed": int(d["seed"]), "index": int(d.get("index", 0))}
            if key == "route":
                out[key].update(top_k=int(d["top_k"]), of=int(d["of"]))
            else:
                out[key]["p"] = float(d["p"])
    return out


def _descend(modules, at, path):
    for seg in path.split("."):
        nxt = [c for c in modules[at]["children"] if modules[c]["name"] == seg]
        if not nxt:
            raise ScenarioError(f"module '{path}' is not a child of '{modules[at]['qualified'] or '<root>'}'")
        at = nxt[0]
    return at


def convert_ops(raw_ops, modules, mi, params_by_name, features):
    if raw_ops is None:
        return None
    if not isinstance(raw_ops, list):
        raise ScenarioError("'forward' is not a list")
    out = []
    prefix = modules[mi]["qualified"]
    expanded = []
    for raw in raw_ops:
        # `call_each: PATH`: a call of each child of PATH in order, with the same `when`
        if isinstance(raw, dict) and "call_each" in raw:
            path = str(raw["call_each"])
            listed = _descend(modules, mi, path)
            children = modules[listed]["children"]
            for index, c in enumerate(children):
                call = {"call": f"{path}.{modules[c]['name']}"}
                if "when" in raw:
                    call["when"] = dict(raw["when"])
                for key in ("route", "layerdrop"):
                    if key in raw:
                        draw = dict(raw[key], index=index)
                        if key == "route":
                            draw["of"] = len(children)
                        call.setdefault("when", {})[key] = draw
                expanded.append(call)
            features.add("call-each")
        else:
            expanded.append(raw)
    for raw in expanded:
        if not isinstance(raw, dict):
            raise ScenarioError("an operation is not a mapping")
        op = {}
        if "call" in raw:
            path = str(raw["call"])
            target = _descend(modules, mi, path)
            op = {"op": "call", "path": path, "target": modules[target]["qualified"]}
            # what the call is fed (docs/scenario-format.md): the running value unless it says
            if "input" in raw:
                if raw["input"] not in ("no_grad", "forward_input"):
                    raise ScenarioError(f"unknown call input {raw['input']!r}")
                op["input"] = str(raw["input"])
                features.add("call-input")
            if "input_from" in raw:
                source = _descend(modules, mi, str(raw["input_from"]))
                op["input_from"] = modules[source]["qualified"]
                features.add("call-input")
            if "output" in raw:
                if raw["output"] != "leaf":
                    raise ScenarioError(f"unknown call output {raw['output']!r}")
                op["output"] = "leaf"
                features.add("call-output")
            if raw.get("hooks", "all") != "all":
                if raw["hooks"] not in ("none", "own"):
                    raise ScenarioError(f"unknown call hooks {raw['hooks']!r}")
                op["hooks"] = str(raw["hooks"])  # none: child.forward(x); own: no hook below
                features.add("call-hooks")
        elif "access" in raw or "returns" in raw:
            kind = "access" if "access" in raw else "returns"
            path = str(raw[kind])
            from_root = path.startswith("/")
            qname = path[1:] if from_root else (f"{prefix}.{path}" if prefix else path)
            if qname not in params_by_name:
                raise ScenarioError(f"unknown parameter '{path}' in module '{prefix or '<root>'}'")
            p = params_by_name[qname]
            op = {"op": kind, "path": path, "from_root": from_root, "param": qname, "canonical": p["canonical"],
                  "owner": p["owner"]}
            if kind == "access":
                op["kind"] = str(raw.get("kind", "data"))
            features.add(kind)
        elif "checkpoint" in raw:
            spec = raw["checkpoint"] or {}
            reentrant = bool(spec.get("reentrant", True)) if isinstance(spec, dict) else True
            op = {"op": "checkpoint", "reentrant": reentrant,
                  "body": convert_ops(raw.get("body"), modules, mi, params_by_name, features)}
            features.add("checkpoint-reentrant" if reentrant else "checkpoint-nonreentrant")
        elif "repeat" in raw:
            op = {"op": "repeat", "count": int(raw["repeat"]),
                  "body": convert_ops(raw.get("body"), modules, mi, params_by_name, features)}
            features.add("repeat")
        elif "gathered" in raw:
            op = {"op": "gathered", "params": gathered_params(raw["gathered"], modules, mi, params_by_name),
                  "modifier_rank": raw.get("modifier_rank"),
                  "body": convert_ops(raw.get("body"), modules, mi, params_by_name, features)}
            features.add("gathered")
        else:
            raise ScenarioError(f"unknown operation {sorted(raw)}")
        w = _when(raw.get("when"))
        if w:
            op["when"] = w
            features.update(f"when-{k}" for k in w)
        out.append(op)
    return out


def gathered_params(paths, modules, mi, params_by_name):
    """The canonical names of a `gathered` block's params: each path a param, or a module (its
    parameters(), "" the whole model), relative to module `mi` or from the root with a leading `/`."""
    prefix = modules[mi]["qualified"]
    out = []
    for path in paths:
        path = str(path)
        tail = path[1:] if path.startswith("/") else path
        name = tail if path.startswith("/") or not prefix else (f"{prefix}.{tail}" if tail else prefix)
        if name in params_by_name:
            out.append(params_by_name[name]["canonical"])
            continue
        found = [m for m in modules if m["qualified"] == name]
        if not found:
            raise ScenarioError(f"'{path}' names no parameter or module")
        below = name + "." if name else ""
        for m in modules:
            if m["qualified"] == name or m["qualified"].startswith(below):
                out.extend(p["canonical"] for p in m["params"])
    return out


def convert_schedule(raw, engines=None):
    """`engines`: per engine name, (index, modules, params_by_name); None with one engine."""
    if not isinstance(raw, list) or not raw:
        raise ScenarioError("the schedule is empty or not a list")
    out = []
    for item in raw:
        if isinstance(item, str):
            kind, value = item, None
        elif isinstance(item, dict) and len(item) == 1:
            kind, value = next(iter(item.items()))
        else:
            raise ScenarioError(f"bad schedule item {item!r}")
        if kind == "train":
            steps, overflow, forwards = 1, [], ["grad"]
            if isinstance(value, dict):
                steps = int(value.get("steps", 1))
                overflow = [int(x) for x in value.get("overflow", []) or []]
                forwards = [str(x) for x in value.get("forwards", ["grad"])]
            elif value is not None:
                steps = int(value)
            out.append({"op": "train", "steps": steps, "overflow": overflow, "forwards": forwards})
        elif kind == "generate":
            spec = value if isinstance(value, dict) else {"tokens": 1 if value is None else int(value)}
            out.append({"op": "generate", "tokens": int(spec.get("tokens", 1)), "encoder": spec.get("encoder"),
                        "training": bool(spec.get("training", False)), "model": spec.get("model"),
                        "unwrap": spec.get("unwrap")})
        elif kind == "gathered":
            out.append({"op": "gathered", "modifier_rank": value.get("modifier_rank"),
                        "params_raw": list(value["params"]), "body": convert_schedule(value["do"], engines)})
        elif kind == "eval":
            passes = 1
            if isinstance(value, dict):
                passes = int(value.get("passes", 1))
            elif value is not None:
                passes = int(value)
            out.append({"op": "eval", "passes": passes})
        elif kind in ("save_checkpoint", "load_checkpoint"):
            out.append({"op": kind, "tag": str(value)})
        elif kind == "restart":
            reuse = bool(value.get("reuse_model", False)) if isinstance(value, dict) else False
            out.append({"op": "restart", "reuse_model": reuse})
        elif kind == "empty_partition_cache":
            out.append({"op": "empty_partition_cache"})
        else:
            raise ScenarioError(f"unknown schedule action '{kind}'")
        name = value.get("engine") if isinstance(value, dict) else None
        out[-1]["engine"] = engines[str(name)][0] if engines and name is not None else 0
        if out[-1]["op"] == "gathered":
            _, modules, params_by_name = engines[str(name)] if engines else (0, None, None)
            out[-1]["params"] = gathered_params(out[-1].pop("params_raw"), modules or SINGLE[0], 0,
                                                params_by_name or SINGLE[1])
    return out


SINGLE = [None, None]  # the one model's modules and params, while a scenario of one engine converts


# ----------------------------------------------------------------------------------------------
# skips


def skip_reasons(doc, cfg, zenflow, schedule, modules):
    """Per policy: why the runner cannot run the scenario faithfully (None: it runs)."""
    common = []
    zero = cfg.get("zero_optimization", {})
    if zenflow:
        common.append("ZenFlow: the snapshot's ZenFlow optimizer needs CUDA and C++ ops, and the recorder "
                      "does not cover transposes")
    for key in ("offload_param", "offload_optimizer"):
        off = zero.get(key) or {}
        if isinstance(off, dict) and str(off.get("device", "none")).lower() == "nvme":
            common.append(f"{key} nvme: needs the C++ async-io op (no C++ in the snapshot)")
    if any(item["op"] == "train" and item["overflow"] for item in schedule):
        common.append("fp16 overflow steps: cannot be forced on a real run")
    if zero_value(zero, "zero_quantized_weights", False) or zero_value(zero, "zero_quantized_nontrainable_weights",
                                                                       False):
        common.append("quantized weights: need the C++/CUDA quantizer op")
    fp16 = cfg.get("fp16") or {}
    if isinstance(fp16, dict) and fp16.get("enabled"):
        common.append("fp16: the CPU accelerator's fp16 support depends on the host (mkldnn); loss scaling "
                      "may skip steps")
    if not any(not p["frozen"] for m in modules for p in m["params"]):
        common.append("no trainable parameter: DeepSpeed builds no ZeRO-3 optimizer")
    out = {}
    expect = doc.get("expect") or {}
    for pol in POLICIES:
        reasons = list(common)
        e = expect.get(pol) or {}
        if isinstance(e, dict) and e.get("outcome") in ("hang", "rank-divergence"):
            reasons.append(f"expected outcome {e['outcome']}: ranks would issue different collectives and "
                           "block the shared process group")
        out[pol] = "; ".join(reasons) if reasons else None
    return out


# ----------------------------------------------------------------------------------------------


def convert(path, repo_root):
    with open(path, "rb") as f:
        raw_bytes = f.read()
    h = hashlib.sha256(raw_bytes)
    doc = load_yaml(raw_bytes.decode("utf-8"))
    if not isinstance(doc, dict):
        raise ScenarioError("the scenario is not a mapping")
    notes = []
    if "deepspeed" in doc and "deepspeed_config" in doc:
        raise ScenarioError("both 'deepspeed' and 'deepspeed_config'")
    raw_cfg = doc.get("deepspeed")
    if "deepspeed_config" in doc:
        cfg_path = os.path.join(os.path.dirname(path), str(doc["deepspeed_config"]))
        with open(cfg_path, "rb") as f:
            cfg_bytes = f.read()
        h.update(cfg_bytes)
        raw_cfg = json.loads(cfg_bytes.decode("utf-8"))
    cfg = resolve_ds_config(raw_cfg, notes)
    zero = cfg["zero_optimization"]
    zenflow = bool(doc.get("zenflow", False)) or "zenflow" in zero
    features = set()

    def read_model(raw_model):
        roots = expand_templates(raw_model, doc.get("templates") or {})
        if len(roots) != 1:
            raise ScenarioError("the model is one module")
        modules = flatten_modules(roots[0])
        params_by_name = resolve_params(modules)
        resolve_leaves(modules, zero)
        for m in modules:
            m["forward"] = convert_ops(m.pop("forward_raw"), modules, m["index"], params_by_name, features)
            if m["leaf"]:
                features.add("leaf")
            if m["outputs"] != 1:
                features.add("outputs")
            if any(p["tied_to"] for p in m["params"]):
                features.add("tied")
        return modules, params_by_name

    engines, by_name = [], None
    if "engines" in doc:
        # several engines in one process: each its own model, built in this order
        by_name = {}
        for k, (name, spec) in enumerate(doc["engines"].items()):
            modules, params_by_name = read_model(spec["model"])
            engines.append({"name": str(name), "modules": modules})
            by_name[str(name)] = (k, modules, params_by_name)
        modules = engines[0]["modules"]
        features.add("engines")
    elif "model" not in doc:
        raise ScenarioError("no 'model'")
    else:
        modules, params_by_name = read_model(doc["model"])
        SINGLE[:] = [modules, params_by_name]
    if int(_intlike(zero_value(zero, "stage3_module_granularity_threshold", 0)) or 0) > 0:
        # DeepSpeed picks these leaves itself at run time; `hooked`/`leaf` here do not include them
        features.add("granularity-threshold")
        notes.append("stage3_module_granularity_threshold: the leaves it makes are not in `hooked`/`leaf`")
    schedule = convert_schedule(doc.get("schedule"), by_name)
    features.update(item["op"] for item in schedule)
    gas = int(cfg.get("gradient_accumulation_steps", 1))
    rel = os.path.relpath(os.path.abspath(path), repo_root)
    key = re.sub(r"\.(ya?ml|json)$", "", rel)
    key = re.sub(r"^scenarios/", "", key).replace("/", "__")
    skip = skip_reasons(doc, cfg, zenflow, schedule, modules)
    every_module = [m for e in engines for m in e["modules"]] if engines else modules
    total_numel = sum(p["numel"] for m in every_module for p in m["params"] if p["tied_to"] is None)
    limit = DEFAULT_TIME_LIMIT_S if total_numel < 10**7 else 4 * DEFAULT_TIME_LIMIT_S
    return {
        "format": "zfetch-runner-scenario",
        "version": 1,
        "key": key,
        "yaml": rel,
        "source_sha256": h.hexdigest(),
        "name": str(doc.get("name", "")),
        "source": str(doc.get("source", "")),
        "world_size": int(doc.get("world_size", 1)),
        "input_requires_grad": bool(doc.get("input_requires_grad", False)),
        "zenflow": zenflow,
        "gradient_accumulation_steps": gas,
        "micro_batch": int(cfg.get("train_micro_batch_size_per_gpu", 1)),
        "ds_config": cfg,
        "modules": modules,
        "engines": engines,
        "schedule": schedule,
        "expect": doc.get("expect") or {},
        "features": sorted(features),
        "notes": notes,
        "skip": skip,
        "time_limit_s": limit,
        "total_numel": total_numel,
    }


def find_scenarios(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames.sort()
                if os.path.basename(dirpath) in ("real", "calibration"):
                    dirnames[:] = []
                    continue
                for fn in sorted(filenames):
                    if fn.endswith((".yaml", ".yml", ".json")):
                        out.append(os.path.join(dirpath, fn))
        else:
            out.append(p)
    return out


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    repo_root = os.path.abspath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    args = ap.parse_args(argv)
    paths = args.paths or [os.path.join(repo_root, "scenarios")]
    os.makedirs(args.out, exist_ok=True)
    manifest = {"format": "zfetch-runner-manifest", "version": 1, "scenarios": []}
    failed = 0
    for path in find_scenarios(paths):
        rel = os.path.relpath(os.path.abspath(path), repo_root)
        try:
            doc = convert(path, repo_root)
        except Exception as exc:  # noqa: BLE001 - one bad scenario must not stop the rest
            failed += 1
            manifest["scenarios"].append({"yaml": rel, "error": f"{type(exc).__name__}: {exc}",
                                          "skip": {p: f"not converted: {exc}" for p in POLICIES}})
            print(f"{rel}: not converted: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        out_name = doc["key"] + ".json"
        with open(os.path.join(args.out, out_name), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
        manifest["scenarios"].append({
            "key": doc["key"], "yaml": rel, "json": out_name, "name": doc["name"],
            "world_size": doc["world_size"], "skip": doc["skip"], "time_limit_s": doc["time_limit_s"],
            "source_sha256": doc["source_sha256"], "features": doc["features"],
        })
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    n = len(manifest["scenarios"])
    runs = sum(1 for s in manifest["scenarios"] for p in POLICIES if not s["skip"][p])
    print(f"{n} scenarios ({failed} not converted), {runs} runs (scenario x policy) not skipped -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
