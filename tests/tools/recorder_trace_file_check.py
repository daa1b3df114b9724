#!/usr/bin/env python3
"""The recorder's trace file (tools/recorder/zfetch_record/trace_file.py), without torch: it writes
the bytes the recorder wrote line by line before (one ``json.dumps`` a line), and zfetch's trace
writer's bytes for the same events, in writes of whole 2 MiB chunks but the last, so each starts at a
multiple of 2 MiB; a short write is completed.
Usage: recorder_trace_file_check.py ZFETCH (from the repository root)
"""
import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict

from recorder_checks import expect, failures, finish
from zfetch_record import trace_file
from zfetch_record.trace_file import CHUNK_BYTES, TraceFile

zfetch = sys.argv[1]


def line_by_line(records):
    """What the recorder wrote before: each record through a text file as it came."""
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode("ascii")


class RecordedWrites:
    """os.write as trace_file calls it, noting each write's size; the first `short` calls write only
    part of what they are given, as a write interrupted by a signal does."""

    def __init__(self, short=0):
        self.sizes, self.short, self.real = [], short, os.write

    def __call__(self, fd, data):
        if self.short > 0:
            self.short -= 1
            data = data[:max(1, len(data) // 3)]
        written = self.real(fd, data)
        self.sizes.append(written)
        return written


def written_through(records, writes):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.jsonl")
        with open(path, "w") as f:
            f.write("an older file that the trace replaces\n")
        trace_file.os.write = writes
        try:
            out = TraceFile(path)
            for r in records:
                out.write(r)
            out.close()
            out.close()  # closing twice does nothing
        finally:
            trace_file.os.write = writes.real
        with open(path, "rb") as f:
            return f.read()


# zfetch's own trace of the seed scenario (which fails, exit 1, as DeepSpeed does: the trace is
# written up to the failure): every event through the trace file gives its bytes.
with tempfile.TemporaryDirectory() as tmp:
    simulated = os.path.join(tmp, "sim.jsonl")
    run = subprocess.run([zfetch, "run", "scenarios/seed/resident_adapter_resume.yaml", "--trace", simulated],
                         stdout=subprocess.DEVNULL)
    expect("zfetch run's exit status", run.returncode, 1)
    with open(simulated, "rb") as f:
        zfetch_bytes = f.read()
records = [json.loads(line, object_pairs_hook=OrderedDict) for line in zfetch_bytes.decode().splitlines()]
expect("zfetch's trace has events", len(records) > 100, True)
writes = RecordedWrites()
expect("zfetch's trace, as zfetch wrote it", written_through(records, writes), zfetch_bytes)
expect("a trace under a chunk: one write", writes.sizes, [len(zfetch_bytes)])

# Its events repeated with seq counting up, to more than two chunks: the same bytes as line by line,
# in whole chunks, and the lines that span a chunk's end are whole in the file.
events = records[1:]
long_trace = [records[0]]
size = len(line_by_line(long_trace))
while size < 2 * CHUNK_BYTES + CHUNK_BYTES // 2:
    event = OrderedDict(events[len(long_trace) % len(events)])
    event["seq"] = len(long_trace) - 1
    long_trace.append(event)
    size += len(line_by_line([event]))
expected = line_by_line(long_trace)
writes = RecordedWrites()
expect("a long trace, as line by line", written_through(long_trace, writes) == expected, True)
expect("a long trace's writes", writes.sizes, [CHUNK_BYTES, CHUNK_BYTES, len(expected) - 2 * CHUNK_BYTES])

# Short writes are completed: the bytes are the same, only in more pieces.
writes = RecordedWrites(short=3)
expect("short writes, as line by line", written_through(long_trace, writes) == expected, True)
expect("short writes add up", sum(writes.sizes), len(expected))
expect("short writes: more pieces", len(writes.sizes) > 3, True)

# Names outside ASCII are escaped, as json.dumps writes them and zfetch reads them.
named = [OrderedDict([("seq", 0), ("module", "caf\u00e9.\u5c42"), ("param", 'a"b\\c')])]
expect("escaped names", written_through(named, RecordedWrites()), line_by_line(named))

finish("recorder_trace_file_check")
