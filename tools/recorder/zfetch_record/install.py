"""Installing the recorder into a running DeepSpeed: check, then patch, once per process."""

from . import compat, coordinator_patches, engine_patches, getter_patches, hook_patches

_installed = False


def install(allow_untested_version=False):
    """Check DeepSpeed (compat.py) and monkeypatch it; no DeepSpeed file is edited. Idempotent.
    Events are written only while a trace is open (state.open_trace, or a recording session)."""
    global _installed
    if _installed:
        return
    ds = compat.check_deepspeed(allow_untested_version)
    coordinator_patches.patch(ds)
    hook_patches.patch(ds)
    getter_patches.patch(ds)
    engine_patches.patch(ds)
    _installed = True
