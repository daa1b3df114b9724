#!/usr/bin/env python3
"""Writes a trace of EVENTS events through the recorder's trace file (zfetch_record/trace_file.py),
for tools/bench to read it back: the header and the first WINDOW events of SOURCE, a trace zfetch
wrote, repeated with `seq` counting from 0. SOURCE written by tests/perf/trace_reader_perftest
repeats a window of 6 * 48 * 16 events, so the two files are then byte for byte the same.
Needs no torch.

Usage: write_trace_file.py SOURCE OUT EVENTS [WINDOW]
"""
import json
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zfetch_record.trace_file import TraceFile  # noqa: E402


def main():
    source, out, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
    window_size = int(sys.argv[4]) if len(sys.argv) > 4 else 6 * 48 * 16
    with open(source, encoding="ascii") as f:
        header = json.loads(f.readline(), object_pairs_hook=OrderedDict)
        window = []
        for line in f:
            window.append(json.loads(line, object_pairs_hook=OrderedDict))
            if len(window) == window_size:
                break
    trace = TraceFile(out)
    trace.write(header)
    for seq in range(events):
        event = window[seq % len(window)]
        event["seq"] = seq
        trace.write(event)
    trace.close()


if __name__ == "__main__":
    main()
