"""The recorder's trace file: one JSON object a line, written to the file in whole 2 MiB chunks.

zfetch's own trace writer does the same (trace/writer.h): each write but the last is 2 MiB long and
starts at a multiple of 2 MiB, so the page cache can keep each chunk as one 2 MiB folio, which
zfetch's reader maps with one page-table entry instead of 512 (docs/diff.md "Speed"). Written line by
line through a buffered text file, a trace stays in 4 KiB pages and reads about 1.7 times slower.

Needs no torch: the recorder's checks and benchmarks use it on their own.
"""

import json
import os

CHUNK_BYTES = 2 << 20


class TraceFile:
    """Writes ``write(record)``'s lines to ``path`` (created or truncated, like ``open(path, "w")``).
    The bytes are those of ``json.dumps(record, separators=(",", ":")) + "\\n"`` a record; a line
    reaches the file once a whole chunk is buffered, the rest at ``close()``. A run killed before
    ``close()`` loses what is buffered (at most a chunk), as a buffered text file loses its buffer."""

    def __init__(self, path):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        self._buffer = bytearray()

    def write(self, record):
        self._buffer += json.dumps(record, separators=(",", ":")).encode("ascii")
        self._buffer += b"\n"
        if len(self._buffer) >= CHUNK_BYTES:
            self._write_chunks()

    def close(self):
        """Writes what is buffered and closes the file; closing again does nothing."""
        if self._fd is None:
            return
        try:
            self._write(len(self._buffer))
        finally:
            self._buffer = bytearray()
            fd, self._fd = self._fd, None
            os.close(fd)

    def _write_chunks(self):
        whole = len(self._buffer) - len(self._buffer) % CHUNK_BYTES
        self._write(whole)
        del self._buffer[:whole]

    def _write(self, end):
        """Writes the buffer's first ``end`` bytes; os.write may write less than asked (a signal),
        so it is called again for the rest, and raises on a failed write (a full disk)."""
        written = 0
        with memoryview(self._buffer) as view:
            while written < end:
                written += os.write(self._fd, view[written:end])
