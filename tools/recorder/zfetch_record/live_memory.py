"""Live gathered parameter bytes of a real run, for the comparison with zfetch's live-memory curve.

Opt-in (``ZFETCH_RECORD_LIVE=1``, or ``open_trace(..., live_memory=True)``): after every event that
changes them, a side note ``live`` (``trace.rankR.notes.jsonl``, ``after_seq`` = the event) holds the
full bytes of every parameter of the engine's model that is gathered (AVAILABLE or INFLIGHT: the
gathered buffer exists from the collective's launch), ``bytes``, and of those that are not
persistent, ``nonpersistent``. zfetch counts the same set (docs/timeline.md, "live parameter
memory"). The sum is taken from the parameters' own states, not from the events, so that it is a
measurement: a release the recorder did not see still shows."""

import os

NOT_AVAILABLE = 2  # ZeroParamStatus.NOT_AVAILABLE.value


def enabled_by_environment():
    return os.environ.get("ZFETCH_RECORD_LIVE") == "1"


def _element_bytes(param):
    # The partition keeps the param's dtype; the param's own data may be a placeholder of another
    # dtype once released (fast sharding frees into an fp32 torch.empty(1)).
    shard = getattr(param, "ds_tensor", None)
    return shard.element_size() if shard is not None else param.element_size()


class LiveMemory:
    """Sums the gathered bytes of the current engine's params; notes the sum when it changes."""

    def __init__(self):
        self.engine_id = None
        self.params = []
        self.last = None

    def _params_of(self, engine):
        if id(engine) != self.engine_id:
            self.engine_id = id(engine)
            seen = {}
            for p in engine.module.parameters():  # a tied param once
                if hasattr(p, "ds_status"):
                    seen[id(p)] = p
            self.params = list(seen.values())
        return self.params

    def measure(self, engine):
        total = nonpersistent = 0
        for p in self._params_of(engine):
            if p.ds_status.value != NOT_AVAILABLE:
                b = int(p.ds_numel) * _element_bytes(p)
                total += b
                if not getattr(p, "ds_persist", False):
                    nonpersistent += b
        return total, nonpersistent

    def after_event(self, engine, note):
        if engine is None:
            return
        now = self.measure(engine)
        if now != self.last:
            self.last = now
            note("live", bytes=now[0], nonpersistent=now[1])
