"""Batch facts as numpy columns (FactColumns), for the replay in bulk: what the compiled step
writes, read without a copy and without Arrow; and Arrow columns as numpy arrays and back, for
fact tables, at no memory cost beyond their arrays.

pyarrow converts Python objects and numpy arrays (pa.array, pa.scalar, a Python value given to
a compute function, Array.to_numpy) through its pandas bridge, which imports pandas the first
time: ~27 MiB of anonymous memory that a scan without --output never needs. These go through
the arrays' buffers instead (Array.from_buffers, numpy.frombuffer): no copy of a fixed-width
column without nulls, no pandas. And the Arrow steps of the bulk decode allocate from
``pool()``, not Arrow's default pool (mimalloc), whose first allocation makes ~4 MiB of the
process resident (measured: RssAnon +4.0 MiB on a first pc.take of 4,000 rows, +0 with the
system pool), paid for a few short-lived tables.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional, Sequence

from .facts import BatchFact


#: The names of a marker's control types, by ControlRecordType id (0 ABORT, 1 COMMIT).
MARKER_NAMES = ("ABORT", "COMMIT")
#: FactColumns.types' value for a row with no control type (a data batch, an emptied control
#: batch); -1 is a control type of another name, 0 and 1 the index of its name in MARKER_NAMES.
NO_CONTROL_TYPE = -2


def pool():
    """The memory pool the bulk decode's Arrow steps allocate from: the system allocator's,
    the one numpy's arrays come from (see the module's docstring)."""
    import pyarrow as pa

    return pa.system_memory_pool()


def numpy_of(array, null=0):
    """``array`` (an integer or boolean Arrow array, or a chunked one) as a numpy array: a view
    of its values where it can be (read-only), ``null`` where a value is null."""
    import numpy as np

    if hasattr(array, "combine_chunks"):
        array = array.combine_chunks(memory_pool=pool())
    n, at = len(array), array.offset
    validity, data = array.buffers()[:2]
    width = array.type.bit_width
    if width == 1:
        values = _bits(data, at, n)
    else:
        values = np.frombuffer(data, _dtype(str(array.type)), count=n, offset=at * (width // 8))
    if validity is not None and array.null_count:
        values = np.where(_bits(validity, at, n), values, null)
    return values


@lru_cache(maxsize=None)
def _dtype(name: str):
    """numpy's type of an Arrow integer type, by name (int8 .. uint64: the same names)."""
    import numpy as np

    return np.dtype(name)


def _bits(buffer, at: int, n: int):
    """The ``n`` bits of an Arrow bitmap from bit ``at``, as a numpy bool array."""
    import numpy as np

    first = at // 8
    packed = np.frombuffer(buffer, np.uint8, count=(at + n + 7) // 8 - first, offset=first)
    return np.unpackbits(packed, count=at - first * 8 + n, bitorder="little")[at - first * 8:].view(bool)


def arrow_of(values, valid=None):
    """A numpy array of integers or booleans as an Arrow array (integers: a view of them), null
    where ``valid`` (a numpy bool array, when given) is False."""
    import numpy as np
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if values.dtype == bool:
        return pa.Array.from_buffers(pa.bool_(), len(values), [bitmap, pa.py_buffer(np.packbits(values,
                                                                                               bitorder="little"))])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [bitmap, pa.py_buffer(values)])


def strings(values: Sequence[Optional[str]]):
    """An Arrow string array of ``values`` (None: null)."""
    import numpy as np
    import pyarrow as pa

    data = [b"" if v is None else v.encode() for v in values]
    offsets = np.r_[0, np.cumsum([len(d) for d in data])].astype(np.int32)
    valid = np.array([v is not None for v in values], bool)
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)),
                                       None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little")))


def starts(values):
    """Where each run of equal values starts in ``values`` (a numpy array): True at its first
    element and where an element differs from the one before it."""
    import numpy as np

    out = np.ones(len(values), bool)
    np.not_equal(values[1:], values[:-1], out=out[1:])
    return out


def shifted(values, first):
    """``values`` moved one place on (a numpy array of the same type): ``first``, then each
    element but the last."""
    import numpy as np

    out = np.empty(len(values), values.dtype)
    if len(out):
        out[0] = first
        out[1:] = values[:-1]
    return out


#: FactColumns' numpy columns: a fact table's (logscan.scan.replica.FACT_TABLE_COLUMNS) but
#: control_type, which ``types`` (and ``names``) give.
FACT_NUMPY_COLUMNS = ("position", "base_offset", "last_offset", "producer_id", "producer_epoch", "base_sequence",
                      "last_sequence", "max_timestamp", "is_transactional", "is_control", "records_count",
                      "size_in_bytes", "coordinator_epoch", "marker_timestamp")
#: Their numpy types (a fact table's Arrow types).
FACT_NUMPY_TYPES = ("int64", "int64", "int64", "int64", "int16", "int32", "int32", "int64", "bool", "bool", "int32",
                    "int64", "int32", "int64")
#: The smallest offset FactColumns holds (Long.MIN_VALUE): a batch's last offset below it (a
#: negative base offset and a negative lastOffsetDelta, which Kafka's sum wraps) is held as
#: this; the replay refuses the batch for its negative base offset all the same (check_order).
INT64_MIN = -(1 << 63)


#: Each of FACT_NUMPY_COLUMNS' numpy type, by name.
_FACT_NUMPY_TYPE = dict(zip(FACT_NUMPY_COLUMNS, FACT_NUMPY_TYPES))
#: The place in a BatchFact of each of its fields, by name.
_FACT_FIELD = {name: i for i, name in enumerate(BatchFact._fields)}


def _fact_column(name: str, values: Sequence):
    """Column ``name`` of FACT_NUMPY_COLUMNS from a field's values in the reference's facts (a
    last offset below INT64_MIN held as it)."""
    if name == "last_offset":
        values = [max(last, INT64_MIN) for last in values]
    return _array(values, _FACT_NUMPY_TYPE[name])


def _array(values: Sequence, kind: str):
    """``values`` as a numpy array of ``kind``; of Python ints (an object array) where one does
    not fit it (a batch's last offset, its base offset plus lastOffsetDelta, past 2^63 - 1,
    which the reference holds as a Python int): the bulk replay holds what the reference
    holds."""
    import numpy as np

    try:
        return np.array(values, np.dtype(kind))
    except OverflowError:
        return np.array(values, object)


class FactColumns:
    """A run of batch facts in log order as the replay in bulk reads them: each column a numpy
    array (FACT_NUMPY_COLUMNS), the control types (``types``: the index of a row's name in
    MARKER_NAMES, -1 another name, NO_CONTROL_TYPE none; ``names``: the name of each row of
    another control type, an object array, or None where no row has one)
    and the flags append() asks of each row; some of its rows (``take``), or runs joined
    (``concat``), without a copy of what is not taken; any row made the BatchFact the
    reference takes (``fact``). Made from the compiled step's columns
    (logscan.scan.replica's), from the reference's facts (``of_facts``) or from a fact table
    (``of_table``).

    ``columns``: FACT_NUMPY_COLUMNS and ``types`` by name (and the flags, when taken from
    other FactColumns)."""

    def __init__(self, columns: dict, names=None) -> None:
        self._columns = columns
        self.names = names
        if "marker" not in columns:
            is_control, types = columns["is_control"], columns["types"]
            #: A COMMIT or ABORT batch; an emptied control batch (no record: Kafka reads nothing of
            #: it); a control batch of another type; an ABORT marker.
            columns["marker"] = is_control & (types >= 0)
            columns["empty_control"] = is_control & (types == NO_CONTROL_TYPE)
            columns["other_control"] = is_control & (types == -1)
            columns["aborted"] = types == 0
        self.__dict__.update(columns)
        self._by_producer = None

    @classmethod
    def of_facts(cls, facts: Sequence[BatchFact], positions: Sequence[int]) -> "FactColumns":
        """The reference's facts (``positions``: each batch's byte position)."""
        rows = list(zip(*facts)) if facts else [()] * len(BatchFact._fields)
        by_name = dict(zip(BatchFact._fields, rows))
        by_name["position"] = positions
        return cls._named({name: _fact_column(name, by_name[name]) for name in FACT_NUMPY_COLUMNS},
                          by_name["control_type"])

    @classmethod
    def of_table(cls, table) -> "FactColumns":
        """A fact table's rows (an Arrow record batch or table of FACT_TABLE_COLUMNS)."""
        columns = {name: numpy_of(table.column(name)) for name in FACT_NUMPY_COLUMNS}
        return cls._named(columns, table.column("control_type").to_pylist())

    @classmethod
    def _named(cls, columns: dict, control_types: Sequence[Optional[str]]) -> "FactColumns":
        """``columns`` with the rows' control type names (None: none)."""
        import numpy as np

        ids = {name: i for i, name in enumerate(MARKER_NAMES)}
        ids[None] = NO_CONTROL_TYPE
        columns["types"] = np.array([ids.get(name, -1) for name in control_types], np.int8)
        other = columns["types"] == -1
        return cls(columns, np.array(control_types, object) if other.any() else None)

    @classmethod
    def concat(cls, parts: Sequence["FactColumns"]) -> "FactColumns":
        """``parts`` joined, in order."""
        import numpy as np

        if len(parts) == 1:
            return parts[0]
        names = None
        if any(p.names is not None for p in parts):
            names = np.concatenate([np.full(len(p), None, object) if p.names is None else p.names for p in parts])
        return cls({name: np.concatenate([p._columns[name] for p in parts]) for name in parts[0]._columns}, names)

    def __len__(self) -> int:
        return len(self.base_offset)

    @property
    def by_producer(self):
        """Every row, by producer id, in log order within a producer (a stable sort, made once:
        the producers' replay and the spans group by it)."""
        import numpy as np

        if self._by_producer is None:
            self._by_producer = np.argsort(self.producer_id, kind="stable")
        return self._by_producer

    def take(self, rows) -> "FactColumns":
        """These rows (a numpy array of indices, or a slice), in that order."""
        return FactColumns({name: values[rows] for name, values in self._columns.items()},
                           None if self.names is None else self.names[rows])

    def control_type(self, row: int) -> Optional[str]:
        """Row ``row``'s control type name (None: none)."""
        t = int(self.types[row])
        return MARKER_NAMES[t] if t >= 0 else None if t == NO_CONTROL_TYPE else self.names[row]

    def positions(self) -> list[int]:
        """Every row's byte position, in order."""
        return self.position.tolist()

    def facts(self) -> list[BatchFact]:
        """Every row as the BatchFact append() and feed() take, in order."""
        types = self.types.tolist()
        names = [MARKER_NAMES[t] if t >= 0 else None if t == NO_CONTROL_TYPE else self.names[i]
                 for i, t in enumerate(types)]
        c = self._columns
        return list(map(BatchFact._make, zip(*(names if name == "control_type" else c[name].tolist()
                                                for name in BatchFact._fields))))

    def fact(self, row: int) -> BatchFact:
        """Row ``row`` as the BatchFact append() and feed() take."""
        c = self._columns  # (a slice's tolist: a Python value from an object column too)
        return BatchFact(*(c[name][row:row + 1].tolist()[0] if name != "control_type" else self.control_type(row)
                           for name in BatchFact._fields))


class FactRows(FactColumns):
    """FactColumns of BatchFacts in hand (the compiled step's facts of a run of few batches, the
    reference's facts): facts(), positions() and fact() give them as they are, and a column is
    made when it is first read (one numpy array of that field), every column when anything
    else is asked. A reader that feeds a few rows one at a time (ReplicaAnalyser.feed_columns)
    so makes no array, or only those it reads (the largest max timestamp), where FactColumns
    would make them all. ``positions``: each batch's byte position, or the first's where each
    batch follows the one before it (a compiled run)."""

    def __init__(self, facts: list[BatchFact], positions) -> None:
        self._facts, self._positions = facts, positions

    def __getattr__(self, name: str):
        # (only for what is not made yet: a column is kept as an attribute once made)
        if "_facts" not in self.__dict__ or name.startswith("__"):
            raise AttributeError(name)
        if name in _FACT_NUMPY_TYPE:
            column = _fact_column(name, self.positions() if name == "position" else
                                  [fact[_FACT_FIELD[name]] for fact in self._facts])
        else:
            self.__dict__.update(FactColumns.of_facts(self._facts, self.positions()).__dict__)
            column = object.__getattribute__(self, name)
        self.__dict__[name] = column
        return column

    @classmethod
    def concat(cls, parts: Sequence["FactRows"]) -> "FactRows":
        """``parts`` (FactRows) joined, in order."""
        if len(parts) == 1:
            return parts[0]
        return cls([f for p in parts for f in p._facts], [at for p in parts for at in p.positions()])

    def __len__(self) -> int:
        return len(self._facts)

    def take(self, rows) -> FactColumns:
        if isinstance(rows, slice):
            return FactRows(self._facts[rows], self.positions()[rows])
        return super().take(rows)

    def positions(self) -> list[int]:
        at = self._positions
        if type(at) is int:
            self._positions = positions = []
            for fact in self._facts:
                positions.append(at)
                at += fact.size_in_bytes
        return self._positions

    def facts(self) -> list[BatchFact]:
        return self._facts

    def fact(self, row: int) -> BatchFact:
        return self._facts[row]
