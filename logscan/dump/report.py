"""kafka-dump-log's stderr blocks printed after all files, in its order and wording.

1. ``Mismatches in :<index path>`` / ``  Index offset: X, log offset: Y`` (newest first);
2. time index: ``Found timestamp mismatch in :<path>``, ``Found out of order timestamp in
   :<path>``, ``The following indexed offsets are not found in the log.`` (oldest first);
3. ``Non-consecutive offsets in <log path>`` / ``  A is followed by B`` (newest first).

Each block iterates a Scala mutable.HashMap keyed by absolute path; see javaisms. kafka-dump-log
4.4.0 (``java_port``) differs in the orders and in one header.
"""

from __future__ import annotations

from typing import TextIO

from .javaisms import java_hashmap_order, scala_hashmap_order
from .spool import PairSpool


class EndOfRunReport:
    def __init__(self, err: TextIO, *, java_port: bool = False):
        """``java_port``: print as kafka-dump-log 4.4.0's Java DumpLogSegments does: its maps
        are java.util.HashMaps (javaisms.java_hashmap_order), a file's index mismatches a
        TreeMap by index offset, descending, and its offset gaps one by offset, ascending (a
        repeated offset keeps its last pair), and the time index block's header names its
        file ("... not found in :F", not "... not found in the log.")."""
        self.err = err
        self._java = java_port
        self._order = _java_order if java_port else _order
        self._index_mismatches: dict[str, PairSpool] = {}
        self._time_mismatch: dict[str, PairSpool] = {}
        self._time_out_of_order: dict[str, PairSpool] = {}
        self._time_not_found: dict[str, PairSpool] = {}
        self._gaps: dict[str, PairSpool] = {}

    @staticmethod
    def _spool(table: dict[str, PairSpool], key: str) -> PairSpool:
        spool = table.get(key)
        if spool is None:
            spool = table[key] = PairSpool()
        return spool

    def index_mismatch(self, abs_path: str) -> PairSpool:
        return self._spool(self._index_mismatches, abs_path)

    def time_mismatch(self, abs_path: str) -> PairSpool:
        return self._spool(self._time_mismatch, abs_path)

    def time_out_of_order(self, abs_path: str) -> PairSpool:
        return self._spool(self._time_out_of_order, abs_path)

    def time_not_found(self, abs_path: str) -> PairSpool:
        return self._spool(self._time_not_found, abs_path)

    def non_consecutive(self, abs_path: str) -> PairSpool:
        return self._LazyGaps(self, abs_path)

    class _LazyGaps:
        """Registers the file only at its first gap (Kafka's map has no empty entries)."""

        def __init__(self, report: "EndOfRunReport", abs_path: str):
            self.report, self.abs_path, self.spool = report, abs_path, None

        def append(self, a: int, b: int) -> None:
            if self.spool is None:
                self.spool = self.report._spool(self.report._gaps, self.abs_path)
            self.spool.append(a, b)

    @property
    def has_index_errors(self) -> bool:
        return any(s.count for t in (self._index_mismatches, self._time_mismatch,
                                     self._time_out_of_order, self._time_not_found)
                   for s in t.values())

    def print(self) -> None:
        w = self.err.write
        for name in self._order(self._index_mismatches):
            w(f"Mismatches in :{name}\n")
            for index_offset, log_offset in self._pairs(self._index_mismatches[name], descending=True):
                w(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
        for name in self._order(self._time_mismatch):
            w(f"Found timestamp mismatch in :{name}\n")
            for a, b in self._time_mismatch[name]:
                w(f"  Index timestamp: {a}, log timestamp: {b}\n")
        for name in self._order(self._time_out_of_order):
            w(f"Found out of order timestamp in :{name}\n")
            for a, b in self._time_out_of_order[name]:
                w(f"  Index timestamp: {a}, Previously indexed timestamp: {b}\n")
        for name in self._order(self._time_not_found):
            w(f"The following indexed offsets are not found in :{name}\n" if self._java
              else "The following indexed offsets are not found in the log.\n")
            for a, b in self._time_not_found[name]:
                w(f"Indexed offset: {a}, found log offset: {b}\n")
        for name in self._order(self._gaps):
            w(f"Non-consecutive offsets in {name}\n")
            for a, b in self._pairs(self._gaps[name], descending=False):
                w(f"  {a} is followed by {b}\n")
        self.err.flush()

    def _pairs(self, spool: PairSpool, *, descending: bool):
        """A file's pairs: newest first (the Scala tool prepends them to a List), or as the Java
        port's TreeMap of them holds them."""
        if not self._java:
            return spool.newest_first()
        return sorted(dict(spool).items(), reverse=descending)

    def close(self) -> None:
        for table in (self._index_mismatches, self._time_mismatch, self._time_out_of_order,
                      self._time_not_found, self._gaps):
            for spool in table.values():
                spool.close()


def _order(table: dict[str, PairSpool]) -> list[str]:
    return scala_hashmap_order([k for k, v in table.items() if v.count])


def _java_order(table: dict[str, PairSpool]) -> list[str]:
    return java_hashmap_order([k for k, v in table.items() if v.count])
