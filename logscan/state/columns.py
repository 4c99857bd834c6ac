"""Arrow columns as numpy arrays and back, for the replay in bulk over fact tables, at no
memory cost beyond their arrays.

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
#: marker_types' value for a row with no control type (a data batch, an emptied control batch).
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


def valid_of(array):
    """Whether each value of ``array`` (an Arrow array) is not null, as a numpy bool array."""
    import numpy as np

    validity = array.buffers()[0]
    if validity is None or not array.null_count:
        return np.ones(len(array), bool)
    return _bits(validity, array.offset, len(array))


def marker_types(control_type):
    """A fact table's ``control_type`` column as numpy: the index of each row's name in
    MARKER_NAMES (0 ABORT, 1 COMMIT), -1 for another control type's name, NO_CONTROL_TYPE where
    it has none."""
    import numpy as np
    import pyarrow.compute as pc

    if hasattr(control_type, "combine_chunks"):
        control_type = control_type.combine_chunks(memory_pool=pool())
    types = numpy_of(pc.index_in(control_type, value_set=_marker_names(), memory_pool=pool()), null=-1)
    return np.where(valid_of(control_type), types, NO_CONTROL_TYPE)


@lru_cache(maxsize=None)
def _marker_names():
    """MARKER_NAMES as an Arrow array (made once: it is immutable)."""
    return strings(MARKER_NAMES)


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


#: FactColumns' numpy columns: the fact table's (logscan.scan.replica.FACT_TABLE_COLUMNS) the
#: replay in bulk reads, all but base_sequence and control_type (which ``types`` gives).
FACT_NUMPY_COLUMNS = ("position", "base_offset", "last_offset", "producer_id", "producer_epoch", "last_sequence",
                      "max_timestamp", "is_transactional", "is_control", "records_count", "size_in_bytes",
                      "coordinator_epoch", "marker_timestamp")


class FactColumns:
    """A fact table's rows as the replay in bulk reads them: each column a numpy array (read
    once a table, numpy_of), its control types as marker_types (``types``) and the flags
    append() asks of each row; some of its rows (``take``) without Arrow, each still made the
    BatchFact the reference takes (``fact``)."""

    def __init__(self, table, rows=None, columns: Optional[dict] = None) -> None:
        self._table = table
        self._rows = rows  # the table's row of each of these (None: all, in order)
        if columns is None:
            columns = {name: numpy_of(table.column(name)) for name in FACT_NUMPY_COLUMNS}
            columns["types"] = marker_types(table.column("control_type"))
        self._columns = columns
        self.__dict__.update(columns)
        #: A COMMIT or ABORT batch; an emptied control batch (no record: Kafka reads nothing of
        #: it); a control batch of another type; an ABORT marker.
        self.marker = self.is_control & (self.types >= 0)
        self.empty_control = self.is_control & (self.types == NO_CONTROL_TYPE)
        self.other_control = self.is_control & ~self.marker & ~self.empty_control
        self.aborted = self.types == 0

    def __len__(self) -> int:
        return len(self.base_offset)

    def take(self, rows) -> "FactColumns":
        """These rows (a numpy array of indices, or a slice), in that order."""
        import numpy as np

        at = np.arange(len(self))[rows] if self._rows is None else self._rows[rows]
        return FactColumns(self._table, at, {name: values[rows] for name, values in self._columns.items()})

    def fact(self, row: int) -> BatchFact:
        """Row ``row`` as the BatchFact append() and feed() take."""
        at = row if self._rows is None else int(self._rows[row])
        return BatchFact(*(self._table.column(name)[at].as_py() for name in BatchFact._fields))
