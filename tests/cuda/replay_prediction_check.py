#!/usr/bin/env python3
"""Checks the simulator's prediction of a replay schedule against a recorded GPU measurement.

usage: replay_prediction_check.py SCHEDULE.json MEASURED_NS MAX_ABS_ERR_PCT

The schedule is written by `zfetch run SCENARIO --calibration FILE --replay-schedule S`; its
"steps" hold the simulator's step times. Their median over all steps (what the replay reports
as its predicted median) must be within MAX_ABS_ERR_PCT of MEASURED_NS. Exit 0 within, 1 not.
"""
import json
import statistics
import sys

schedule, measured, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
steps = json.load(open(schedule))["steps"]
predicted = statistics.median([s["step_ns"] for s in steps])
err = (predicted - measured) / measured * 100
print(f"{schedule}: predicted {predicted / 1e3:.1f} us, measured {measured / 1e3:.1f} us, "
      f"error {err:+.2f}% (limit {limit}%)")
sys.exit(0 if abs(err) <= limit else 1)
