"""Bounded-memory lists of (int64, int64) pairs for kafka-dump-log's end-of-run stderr blocks.

kafka-dump-log collects every offset gap ("Non-consecutive offsets") and index mismatch in
memory and prints them after all files, newest first (Scala ``list ::= pair``). A compacted
topic has a gap per removed record, so the list grows with the file; we spool it to a
temporary file past a small in-memory size and read it back in either order.
"""

from __future__ import annotations

import struct
from typing import Iterator

from logscan.format.primitives import java_long

_PAIR = struct.Struct(">qq")
_MEMORY_LIMIT = 1 << 20  # bytes kept in memory before the spool moves to disk
_READ_PAIRS = 4096


class PairSpool:
    def __init__(self) -> None:
        import tempfile  # only a run that has something to report pays for it

        self._file = tempfile.SpooledTemporaryFile(max_size=_MEMORY_LIMIT)
        self.count = 0

    def append(self, a: int, b: int) -> None:
        # As Java's longs hold them: an offset past 2^63-1 (a damaged base offset, reported
        # as offset-overflow) wraps, as kafka-dump-log's sum does.
        if not -2**63 <= a < 2**63 or not -2**63 <= b < 2**63:
            a, b = java_long(a), java_long(b)
        self._file.write(_PAIR.pack(a, b))
        self.count += 1

    def __iter__(self) -> Iterator[tuple[int, int]]:
        """Pairs in insertion order."""
        self._file.seek(0)
        while True:
            chunk = self._file.read(_PAIR.size * _READ_PAIRS)
            if not chunk:
                break
            yield from _PAIR.iter_unpack(chunk)
        self._file.seek(0, 2)

    def newest_first(self) -> Iterator[tuple[int, int]]:
        """Pairs in reverse insertion order (a Scala List built with ``::=``)."""
        remaining = self.count
        while remaining > 0:
            n = min(remaining, _READ_PAIRS)
            remaining -= n
            self._file.seek(remaining * _PAIR.size)
            chunk = self._file.read(n * _PAIR.size)
            yield from reversed(list(_PAIR.iter_unpack(chunk)))
        self._file.seek(0, 2)

    def close(self) -> None:
        self._file.close()
