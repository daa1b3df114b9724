"""What the recorder needs of DeepSpeed, checked before anything is patched: the version it was
written against and every private name it reaches. A DeepSpeed that lacks one is refused with the
full list, so a run is never recorded by half the patches."""

import types

from .state import CO

# Written against DeepSpeed 0.19.6 (commit edaa722); the 0.19 series keeps these names.
TESTED_VERSIONS = ("0.19.",)

# (module attribute path, names that must exist on it)
_REQUIRED = (
    ("deepspeed.runtime.zero.partitioned_param_coordinator.PartitionedParameterCoordinator",
     (CO + "all_gather_params", CO + "release_param", "fetch_sub_module", "release_sub_module",
      "record_module", "reset_step", "_invalidate_trace", "trace_prologue", "release_and_reset_all",
      "release_backward_leftovers", "is_invalid_trace")),
    ("deepspeed.runtime.zero.partitioned_param_coordinator",
     ("update_recompute_parameters", "iter_params", "InflightParamRegistry")),
    ("deepspeed.runtime.zero.parameter_offload",
     ("DeepSpeedZeRoOffload", "register_external_parameter", "ZeROOrderedDict", "FWD_MODULE_STACK")),
    ("deepspeed.runtime.zero.parameter_offload.DeepSpeedZeRoOffload",
     ("pre_sub_module_forward_function", "post_sub_module_forward_function",
      "pre_sub_module_backward_function", "post_sub_module_backward_function",
      "get_param_coordinator")),
    ("deepspeed.runtime.zero.stage3.DeepSpeedZeroOptimizer_Stage3",
     ("_post_step", "checkpoint_event_epilogue", "step")),
    ("deepspeed.runtime.engine.DeepSpeedEngine",
     ("forward", "backward", "step", "save_checkpoint", "load_checkpoint", "destroy",
      "is_gradient_accumulation_boundary", "empty_partition_cache")),
    ("deepspeed.runtime.zero.partition_parameters", ("ZeroParamStatus",)),
    ("deepspeed.utils", ("z3_leaf_module",)),
)


class IncompatibleDeepSpeed(RuntimeError):
    """DeepSpeed lacks what the recorder patches; the message lists every missing name."""


def _resolve(path):
    import importlib
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def missing_names():
    """Every required name DeepSpeed does not have, as dotted paths (empty: compatible)."""
    missing = []
    for path, names in _REQUIRED:
        owner = _resolve(path)
        if owner is None:
            missing.append(path)
            continue
        missing.extend(f"{path}.{name}" for name in names if not hasattr(owner, name))
    return missing


def check_deepspeed(allow_untested_version=False):
    """The DeepSpeed modules the patches use, after checking the version and every private name.
    Raises IncompatibleDeepSpeed, naming what is missing, before anything is patched."""
    import deepspeed
    version = getattr(deepspeed, "__version__", "unknown")
    if not allow_untested_version and not version.startswith(TESTED_VERSIONS):
        raise IncompatibleDeepSpeed(
            f"zfetch_record: DeepSpeed {version} is not a tested version (tested: "
            f"{', '.join(v + 'x' for v in TESTED_VERSIONS)}); pass allow_untested_version=True "
            f"(or set ZFETCH_RECORD_ANY_VERSION=1) to record anyway")
    missing = missing_names()
    if missing:
        raise IncompatibleDeepSpeed(
            f"zfetch_record: DeepSpeed {version} lacks what the recorder patches, nothing was "
            f"patched: " + ", ".join(missing))
    import deepspeed.runtime.engine as engine
    import deepspeed.runtime.zero.parameter_offload as parameter_offload
    import deepspeed.runtime.zero.partitioned_param_coordinator as coordinator
    import deepspeed.runtime.zero.stage3 as stage3
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus
    return types.SimpleNamespace(version=version, engine=engine, parameter_offload=parameter_offload,
                                 coordinator=coordinator, stage3=stage3,
                                 NOT_AVAILABLE=ZeroParamStatus.NOT_AVAILABLE,
                                 AVAILABLE=ZeroParamStatus.AVAILABLE)
