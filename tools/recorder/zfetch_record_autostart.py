"""Activation by environment: ``ZFETCH_RECORD=DIR torchrun train.py`` records without a code change.

The package's ``zfetch_record.pth`` imports this module at interpreter start when ZFETCH_RECORD is
set. Neither torch nor DeepSpeed is imported here (a launcher process never needs them): the
recording starts right after the program itself imports ``deepspeed``, before it can build an engine."""

import importlib.abc
import importlib.util
import sys


def start_from_environment():
    from zfetch_record.session import start_from_environment as start
    return start()


class _AfterDeepSpeedImport(importlib.abc.MetaPathFinder):

    def find_spec(self, name, path, target=None):
        if name != "deepspeed":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_record(module):
            exec_module(module)
            start_from_environment()

        spec.loader.exec_module = exec_then_record
        return spec


if "deepspeed" in sys.modules:
    start_from_environment()
else:
    sys.meta_path.insert(0, _AfterDeepSpeedImport())
