"""What the checks of the recorder package share: the package importable from the repository root
(its writer's modules need no torch), and the failures they collect."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join("tools", "recorder"))

failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def finish(name):
    """Prints the failures and exits 1 if there were any, else 0."""
    for failure in failures:
        print(failure)
    print(f"{name}:", "FAILED" if failures else "ok")
    sys.exit(1 if failures else 0)
