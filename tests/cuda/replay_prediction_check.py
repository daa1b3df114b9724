#!/usr/bin/env python3
"""Checks the simulator's prediction of a replay schedule against a recorded GPU measurement.

usage: replay_prediction_check.py SCHEDULE.json MEASURED_NS MAX_ABS_ERR_PCT [miss]

The schedule is written by `zfetch run SCENARIO --calibration FILE --replay-schedule S`; its
"steps" hold the simulator's step times. Their median over all steps (what the replay reports
as its predicted median) must be within MAX_ABS_ERR_PCT of MEASURED_NS: exit 0 within, 1 not.
With `miss` (a known miss, listed in tests/cuda/measured) the other way round, so that a fix
shows: exit 0 while it misses, 1 once it is within (then drop the mark).
"""
import json
import statistics
import sys

schedule, measured, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
known_miss = sys.argv[4:] == ["miss"]
steps = json.load(open(schedule))["steps"]
predicted = statistics.median([s["step_ns"] for s in steps])
err = (predicted - measured) / measured * 100
print(f"{schedule}: predicted {predicted / 1e3:.1f} us, measured {measured / 1e3:.1f} us, "
      f"error {err:+.2f}% (limit {limit}%{', a known miss' if known_miss else ''})")
within = abs(err) <= limit
sys.exit(0 if within != known_miss else 1)
