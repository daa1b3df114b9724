"""zfetch_record: record real DeepSpeed ZeRO-3 runs as zfetch traces and scenarios.

Three ways in, one trace and one scenario per rank:

* ``with zfetch_record.record("DIR"):`` around the training code;
* ``ZFETCH_RECORD=DIR torchrun train.py``: no code change (the installed ``zfetch_record.pth`` and
  ``zfetch_record_autostart``);
* ``transformers.Trainer(..., callbacks=[zfetch_record.ZfetchRecordCallback("DIR")])``.

``residency_independent=True`` (``ZFETCH_RECORD_RESIDENCY_INDEPENDENT=1``) applies PR #8875 to the
running DeepSpeed. ``python3 -m zfetch_record.from_model MODULE:FACTORY`` writes a scenario from a
torch model without DeepSpeed. Lower-level pieces (``install``, ``open_trace``, ...) are what the
corpus runner (run_scenario.py) uses. The DeepSpeed version and every private name the patches reach
are checked before anything is patched (compat.py). Without torch only the writer's modules import
(``python3 -m zfetch_record.rewrite``: a scenario written again from a recording's observations)."""

try:
    import torch  # noqa: F401
except ImportError:
    pass
else:
    from .compat import IncompatibleDeepSpeed, check_deepspeed, missing_names
    from .install import install
    from .session import Recording, record, start_from_environment
    from .state import close_trace, emit, error_event, note, open_trace, residency_snapshot, set_policy


def __getattr__(name):
    if name == "ZfetchRecordCallback":  # imports transformers only when asked for
        from .hf_callback import ZfetchRecordCallback
        return ZfetchRecordCallback
    raise AttributeError(name)
