"""A recording session: one trace and one scenario per rank, in a folder.

    with zfetch_record.record("DIR"):          # or ZFETCH_RECORD=DIR, or the HF Trainer callback
        engine, *_ = deepspeed.initialize(...)
        ...

writes ``DIR/trace.rankR.jsonl`` (zfetch's trace format), ``DIR/trace.rankR.notes.jsonl`` (the
recorder's side notes) and, when the session ends, ``DIR/scenario.rankR.yaml``: the model, its forward
programs, the resolved ds_config and the schedule as run, for ``zfetch run``. Beside it,
``DIR/scenario.rankR.observed.json`` holds what the scenario was written from, as plain data: a newer
writer writes the scenario again from it (``python3 -m zfetch_record.rewrite``) without rerunning the
model."""

import atexit
import json
import os
import re
import sys

from . import program, scenario_writer
from .install import install
from .state import R, close_trace, open_trace


def _rank_and_world():
    try:
        import torch.distributed as dist
        if dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _default_name():
    script = os.path.splitext(os.path.basename(sys.argv[0] or "run"))[0] or "run"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", script)


class Recording:
    """Records every DeepSpeed engine of this process into ``out_dir`` (see the module docstring).

    ``residency_independent=True`` applies DeepSpeed PR #8875's discovery to the running DeepSpeed
    (a read of a parameter from outside its owner registers it whatever its residency): run a model
    that fails with issue #8874's tracing error this way to check the fix before upgrading."""

    def __init__(self, out_dir, residency_independent=False, name=None, write_scenario=True,
                 allow_untested_version=False):
        self.out_dir = str(out_dir)
        self.policy = "residency-independent" if residency_independent else "resident-skip"
        self.name = name or _default_name()
        self.write_scenario = write_scenario
        self.allow_untested_version = allow_untested_version
        self.rank = None
        self.world_size = 1
        self.observer = None
        self.hooks = []
        self.tree = None
        self.config = None
        self.schedule = scenario_writer.Schedule()
        self.engines = 0
        self.last_module = None
        self.saved_tags = []
        self.version = ""
        self.started = False
        self.passes_since_step = 0  # training forwards since the last optimizer step

    # --- lifetime -------------------------------------------------------------------------------

    def start(self):
        if self.started:
            return self
        install(self.allow_untested_version)
        import deepspeed
        self.version = getattr(deepspeed, "__version__", "")
        os.makedirs(self.out_dir, exist_ok=True)
        R.listeners.append(self)
        self.started = True
        atexit.register(self.stop)
        return self

    def stop(self):
        if not self.started:
            return
        self.started = False
        for handle in self.hooks:
            handle.remove()
        if self.observer is not None:
            program.stop_observing_checkpoints(self.observer)
        if self in R.listeners:
            R.listeners.remove(self)
        close_trace()
        self._flush_partial_step()
        if self.write_scenario and self.tree is not None and self.rank is not None:
            # Written from the JSON as saved, so that a rewrite from the file writes the same scenario.
            observed = json.dumps(self.observations(), indent=1) + "\n"
            base = os.path.join(self.out_dir, f"scenario.rank{self.rank}")
            with open(base + ".observed.json", "w", encoding="utf-8") as f:
                f.write(observed)
            with open(base + ".yaml", "w", encoding="utf-8") as f:
                f.write(scenario_writer.scenario_from_observations(json.loads(observed)))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # --- what the patches report (state.notify) ---------------------------------------------------

    def engine_starting(self, engine):
        if R.out is None:
            self.rank, self.world_size = _rank_and_world()
            base = os.path.join(self.out_dir, f"trace.rank{self.rank}")
            open_trace(base + ".jsonl", self.name, self.world_size, self.policy, base + ".notes.jsonl")

    def engine_ready(self, engine):
        from deepspeed.utils import z3_leaf_module
        module = engine.module
        if self.engines > 0:
            self._flush_partial_step()
            self.schedule.restart(reuse_model=module is self.last_module)
        self.engines += 1
        self.last_module = module
        names = scenario_writer.object_names(module)
        if self.observer is None:
            self.observer = program.ProgramObserver(names)
            self.hooks = program.install_module_hooks(self.observer)
            program.observe_checkpoints(self.observer)
            self.tree = scenario_writer.module_tree(module, is_leaf=z3_leaf_module)
            self.config = scenario_writer.deepspeed_config(engine)
        else:
            self.observer.names = names

    def _flush_partial_step(self):
        # A step that did not reach the optimizer (the run failed or stopped in it) still ran.
        if self.passes_since_step > 0:
            self.schedule.train_step()
            self.passes_since_step = 0

    def forward_pass(self, engine):
        if engine.module.training:
            self.passes_since_step += 1
        else:
            self.schedule.eval_pass()

    def optimizer_step(self, engine):
        self.passes_since_step = 0
        self.schedule.train_step()

    def checkpoint_save(self, engine, tag):
        tag = tag if tag is not None else f"global_step{engine.global_steps}"
        self._flush_partial_step()
        self.saved_tags.append(str(tag))
        self.schedule.save(tag)

    def checkpoint_load(self, engine, tag):
        # Without a tag DeepSpeed reads the 'latest' file: the last tag saved.
        tag = tag if tag is not None else (self.saved_tags[-1] if self.saved_tags else "latest")
        self.schedule.load(tag)

    def partition_cache_emptied(self, engine):
        self._flush_partial_step()
        self.schedule.empty_partition_cache()

    def external_access(self, top, param):
        if self.observer is not None:
            self.observer.external_access(top, param)

    # --- the scenario ---------------------------------------------------------------------------

    def observations(self):
        """What the scenario is written from, as plain data (scenario_writer.scenario_from_observations)."""
        observer = self.observer
        return {
            "format": scenario_writer.OBSERVATIONS_FORMAT, "version": 1, "name": self.name,
            "source": f"recorded by zfetch_record from {self.name} (DeepSpeed {self.version}, rank {self.rank})",
            "world_size": self.world_size, "tree": self.tree, "programs": observer.programs,
            "outputs": observer.outputs, "changed": sorted(observer.changed),
            "variants": observer.changed_variants(),
            "input_requires_grad": observer.input_requires_grad, "leaf_notes": sorted(observer.leaf_notes),
            "config": self.config,
            "schedule": self.schedule.as_list()}


def record(out_dir, residency_independent=False, **options):
    """A context manager that records this process's DeepSpeed engines into ``out_dir``."""
    return Recording(out_dir, residency_independent=residency_independent, **options)


_from_environment = None


def start_from_environment():
    """Starts a recording into $ZFETCH_RECORD (ZFETCH_RECORD_RESIDENCY_INDEPENDENT=1 applies PR
    #8875, ZFETCH_RECORD_ANY_VERSION=1 skips the version check); a no-op when it is not set."""
    global _from_environment
    out_dir = os.environ.get("ZFETCH_RECORD")
    if not out_dir or _from_environment is not None:
        return _from_environment
    _from_environment = Recording(
        out_dir, residency_independent=os.environ.get("ZFETCH_RECORD_RESIDENCY_INDEPENDENT") == "1",
        allow_untested_version=os.environ.get("ZFETCH_RECORD_ANY_VERSION") == "1").start()
    return _from_environment
