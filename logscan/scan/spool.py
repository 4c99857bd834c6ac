"""Rows the single-process scan cannot hold, kept on disk until a later step reads them back.

The local executor makes some rows long before the step that takes them: a replica's closed
transaction spans (the partition step compares them with the other replicas' spans, which are
read much later), the `__transaction_state` records of every coordinator replica (one replica
per coordinator partition is loaded, once all are read), and, when it writes Delta tables,
every row of the scan (their Parquet files need the scan's ``as_of``, known only at the end).
A :class:`Spool` keeps them in a file of a temporary folder, a chunk of CHUNK_ROWS rows at a
time, so memory holds one chunk whatever the size of the copy.

Rows are added in runs, each run the rows of one key (a replica, a table): :meth:`Spool.rows`
gives back one key's rows in the order they were added, a chunk at a time, or in ``order``
when they did not arrive in it (a fallback that sorts that key's rows in memory; the local
executor adds every run in order: pipeline.CLOSED_SPAN_ORDER and pipeline.TXN_LOG_ORDER are
log order within a replica).

A chunk is the rows' values as tuples, in ``marshal``'s format: the rows are plain values
(None, bool, int, str, lists and dicts of them), written and read back by this process only,
in a folder only its user can open. No Arrow here: Arrow's IPC reader starts its thread pools,
whose stacks count against a process's data limit (tests/robust/test_memory).

The Spark job ships a replica's closed spans in such chunks too (:func:`pack`: the span runs of
spark_jobs.tasks, made and read by Python workers running the driver's Python) and merges a
partition's runs, which Spark sorts by their first rows, with :func:`merge_chunks`.
"""

from __future__ import annotations

import heapq
import marshal
from array import array
import os
import struct
import tempfile
from itertools import islice, repeat
from operator import itemgetter
from typing import BinaryIO, Callable, Hashable, Iterable, Iterator, Optional, Sequence

from . import rows as R

#: Rows per chunk: a few hundred KiB in memory at a time.
CHUNK_ROWS = 4096
#: SpoolFolder.sorted: the rows sorted in memory at a time (a run), the runs merged at a time,
#: and the rows per chunk of a run (what a merge holds of each run): at most SORT_RUN_ROWS rows
#: held (SORT_FAN_IN * MERGE_CHUNK_ROWS while merging) whatever the number of rows; a pass over
#: the rows on disk per SORT_FAN_IN-fold of runs.
SORT_RUN_ROWS = CHUNK_ROWS
SORT_FAN_IN = 16
MERGE_CHUNK_ROWS = 256
_LENGTH = struct.Struct("<Q")

Key = Hashable


def pack(values: list[tuple]) -> bytes:
    """A chunk: rows' values (tuples of plain values) as bytes, in marshal's format, read back
    by :func:`unpack` in a process of the same Python (the Spark job's Python workers run the
    driver's)."""
    return marshal.dumps(values)


def unpack(data: bytes) -> list[tuple]:
    """A :func:`pack`'d chunk's values."""
    return marshal.loads(data)


def merge_chunks(chunks: Iterable[list], key: Callable) -> Iterator:
    """The rows of ``chunks`` in ``key`` order, where each chunk is in that order and the chunks
    come in the order of their first rows' keys (as a sort of the chunks by that key gives them,
    e.g. the Spark job's closed-span runs, several replicas' interleaved). A row is handed on
    once a chunk starting after it has come, so what is held is the rows of the chunks that
    overlap: when a source's chunks follow one another in order (a replica's runs), at most a
    chunk per source. Raises ValueError when a chunk, or the chunks, are out of that order."""
    heap: list[tuple] = []
    n = 0
    first_before = None
    for chunk in chunks:
        if not chunk:
            continue
        first = key(chunk[0])
        if first_before is not None and first < first_before:
            raise ValueError(f"chunks out of order: one starting at {first!r} after one starting at {first_before!r}")
        first_before = first
        while heap and heap[0][0] < first:
            yield heapq.heappop(heap)[2]
        last = first
        for row in chunk:
            at = key(row)
            if at < last:
                raise ValueError(f"rows out of order in a chunk: {at!r} after {last!r}")
            last = at
            heapq.heappush(heap, (at, n, row))
            n += 1
    while heap:
        yield heapq.heappop(heap)[2]


class Spool:
    """Rows with the columns ``names`` kept in the file ``path``, in runs by key. Add, then
    :meth:`close`, then read back with :meth:`rows`. ``names`` None: the rows are tuples of
    plain values, kept and given back as they are (no dict made per row)."""

    def __init__(self, path: str, names: Optional[Sequence[str]], order: Optional[Callable[[R.Row], tuple]] = None,
                 chunk_rows: int = CHUNK_ROWS) -> None:
        self.path = path
        self._chunk_rows = chunk_rows
        self.names = tuple(names) if names is not None else None
        self._order = order
        self._file: BinaryIO = open(path, "xb")
        self._end = 0   # the file's length: where the next chunk goes (no tell() a chunk)
        # A row's values in one call (a KeyError: a row lacking a name, taken as row.get takes
        # it, None); with the run's check, Spool.add took ~7% of the bench copy's scan CPU
        # samples (31,308 rows, 2026-12-08).
        self._values = itemgetter(*self.names) if self.names is not None and len(self.names) > 1 else None
        self._writing = True
        # key -> its chunks, two numbers each: the position of its bytes (after its length) and
        # that length. Flat arrays, 16 bytes a chunk: a tuple a chunk made the scan's memory grow
        # with its chunks (tests/robust/test_output_memory_flat.py: +12 MiB from the 30 MB copy
        # to the 300 MB one, against +2.7 with a list of positions, 2026-12-08).
        self._runs: dict[Key, array] = {}
        self._unordered: set[Key] = set()          # keys whose rows did not arrive in ``order``
        self._last: dict[Key, tuple] = {}          # key -> ``order`` of its last row
        self._key: Key = None
        self._pending: list[tuple] = []
        self.rows_added = 0

    def add(self, key: Key, row: R.Row) -> None:
        if key != self._key:
            self._flush()
            self._key = key
        if self._order is not None and key not in self._unordered:
            at = self._order(row)
            last = self._last.get(key)
            if last is not None and at < last:
                self._unordered.add(key)
            self._last[key] = at
        self._pending.append(self._tuple(row) if self.names is not None else row)
        self.rows_added += 1
        if len(self._pending) >= self._chunk_rows:
            self._flush()

    def _tuple(self, row: R.Row) -> tuple:
        """``row``'s values of ``names``, in order (None for a name it lacks)."""
        if self._values is not None:
            try:
                return self._values(row)
            except KeyError:
                pass
        return tuple(map(row.get, self.names))

    def extend(self, key: Key, rows: Sequence[R.Row]) -> None:
        """:meth:`add` of each of ``rows``, in order; in bulk when no ``order`` is checked."""
        if self._order is not None:
            for row in rows:
                self.add(key, row)
            return
        if key != self._key:
            self._flush()
            self._key = key
        names = self.names
        self._pending.extend(rows if names is None else map(self._tuple, rows))
        self.rows_added += len(rows)
        while len(self._pending) >= self._chunk_rows:
            pending = self._pending
            self._pending = pending[:self._chunk_rows]
            self._flush()
            self._pending = pending[self._chunk_rows:]

    def _flush(self) -> None:
        if not self._pending:
            return
        data = pack(self._pending)
        run = self._runs.get(self._key)
        if run is None:
            run = self._runs[self._key] = array("q")
        run.append(self._end + _LENGTH.size)
        run.append(len(data))
        self._file.write(_LENGTH.pack(len(data)) + data)
        self._end += _LENGTH.size + len(data)
        self._pending = []

    def close(self) -> None:
        """Ends the adding: what follows reads."""
        if not self._writing:
            return
        self._flush()
        self._file.close()
        self._file = open(self.path, "rb")
        self._writing = False
        self._last.clear()

    def keys(self) -> list[Key]:
        """The keys that have rows, in the order their first rows came."""
        return list(self._runs)

    def _chunks(self, key: Key) -> Iterator[list[tuple]]:
        # One pread a chunk, its length known (a seek and two buffered reads were ~2% of the
        # bench copy's scan CPU samples: a chunk or so per replica and spool, 2026-12-08).
        fd = self._file.fileno()
        run = self._runs.get(key, ())
        for at, length in zip(run[::2], run[1::2]):
            data = os.pread(fd, length, at)
            if len(data) != length:
                raise OSError(f"spool {self.path}: {len(data)} of the {length} bytes of a chunk at byte {at} read: "
                              "the file was cut short")
            yield unpack(data)

    def chunks(self, key: Key) -> Iterator[list[R.Row]]:
        """``key``'s rows as they were added (never sorted), a chunk of at most CHUNK_ROWS rows
        at a time."""
        names = self.names
        for chunk in self._chunks(key):
            yield [dict(zip(names, t)) for t in chunk] if names is not None else chunk

    def rows(self, key: Key) -> Iterator[R.Row]:
        """``key``'s rows (dicts of ``names``), in ``order``: as added when they came in order,
        one chunk in memory at a time; else sorted in memory."""
        names = self.names
        if key in self._unordered:
            yield from sorted((dict(zip(names, t)) if names is not None else t
                               for chunk in self._chunks(key) for t in chunk), key=self._order)
            return
        for chunk in self._chunks(key):
            yield from chunk if names is None else map(dict, map(zip, repeat(names), chunk))

    def discard(self) -> None:
        self._file.close()
        self._pending = []
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class SpoolFolder:
    """A temporary folder of spools (only its user may open it), removed with them on exit.
    ``dir``: where to make it (default: the system's temporary folder)."""

    def __init__(self, dir: Optional[str] = None) -> None:
        self.path = tempfile.mkdtemp(prefix="logscan-spool-", dir=dir)
        self._spools: list[Spool] = []
        self._sorts = 0

    def spool(self, name: str, names: Optional[Sequence[str]], order: Optional[Callable[[R.Row], tuple]] = None,
              chunk_rows: int = CHUNK_ROWS) -> Spool:
        s = Spool(os.path.join(self.path, f"{name}.spool"), names, order, chunk_rows)
        self._spools.append(s)
        return s

    def sorted(self, rows: Iterable[R.Row], key: Optional[Callable[[R.Row], tuple]]) -> Iterator[R.Row]:
        """``rows`` (dicts with the same keys, or tuples: Spool's ``names`` None) in ``key`` order
        (None: the rows themselves compared, as sorted() does), stable, as sorted() gives them,
        holding SORT_RUN_ROWS rows at a time: runs of them sorted in memory and spooled, then
        merged SORT_FAN_IN runs at a time (heapq.merge: among equal keys, the earlier run's
        rows first), each run read MERGE_CHUNK_ROWS rows at a time."""
        self._sorts += 1
        name = f"sort-{self._sorts}"
        rows = iter(rows)
        run = list(islice(rows, SORT_RUN_ROWS))
        if len(run) < SORT_RUN_ROWS:   # one run: nothing to spool
            yield from sorted(run, key=key)
            return
        names = tuple(run[0]) if isinstance(run[0], dict) else None
        spool = self.spool(f"{name}-0", names, chunk_rows=MERGE_CHUNK_ROWS)
        count = 0
        while run:
            run.sort(key=key)
            spool.extend(count, run)
            count += 1
            run = list(islice(rows, SORT_RUN_ROWS))
        spool.close()
        runs = [(spool, i) for i in range(count)]
        level = 0
        while len(runs) > SORT_FAN_IN:   # a pass merging groups of runs into longer runs
            level += 1
            merged = self.spool(f"{name}-{level}", names, chunk_rows=MERGE_CHUNK_ROWS)
            for i in range(0, len(runs), SORT_FAN_IN):
                rows_in_order = heapq.merge(*(s.rows(k) for s, k in runs[i:i + SORT_FAN_IN]), key=key)
                while chunk := list(islice(rows_in_order, MERGE_CHUNK_ROWS)):
                    merged.extend(i, chunk)
            merged.close()
            spool.discard()
            spool, runs = merged, [(merged, i) for i in range(0, len(runs), SORT_FAN_IN)]
        yield from heapq.merge(*(s.rows(k) for s, k in runs), key=key)
        spool.discard()

    def __enter__(self) -> "SpoolFolder":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def remove(self) -> None:
        """Deletes the spools and the folder (file by file: nothing else is in it)."""
        for s in self._spools:
            s.discard()
        self._spools.clear()
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            pass
