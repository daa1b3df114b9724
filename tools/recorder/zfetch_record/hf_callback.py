"""A Hugging Face Trainer callback that records the run:

    trainer = Trainer(..., callbacks=[ZfetchRecordCallback("DIR")])

The recorder is installed when the callback is made, before the Trainer builds its DeepSpeed engine;
the session ends (and the scenarios are written) when training ends."""

from .session import Recording

try:
    from transformers import TrainerCallback
except ImportError:  # transformers is optional: the class still exists, for a clear error on use
    TrainerCallback = object


class ZfetchRecordCallback(TrainerCallback):

    def __init__(self, out_dir, residency_independent=False, **options):
        if TrainerCallback is object:
            raise ImportError("ZfetchRecordCallback needs transformers")
        self.recording = Recording(out_dir, residency_independent=residency_independent, **options).start()

    def on_train_end(self, args, state, control, **kwargs):
        self.recording.stop()
