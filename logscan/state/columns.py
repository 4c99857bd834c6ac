"""Arrow columns as numpy arrays and back, for the replay in bulk over fact tables.

pyarrow converts Python objects and numpy arrays (pa.array, pa.scalar, a Python value given to
a compute function, Array.to_numpy) through its pandas bridge, which imports pandas the first
time: ~27 MiB of anonymous memory that a scan without --output never needs. These go through
the arrays' buffers instead (Array.from_buffers, numpy.frombuffer): no copy of a fixed-width
column without nulls, no pandas.
"""

from __future__ import annotations

from typing import Optional, Sequence


def numpy_of(array, null=0):
    """``array`` (a fixed-width or boolean Arrow array, or a chunked one) as a numpy array: a
    view of its values where it can be (read-only), ``null`` where a value is null."""
    import numpy as np

    if hasattr(array, "combine_chunks"):
        array = array.combine_chunks()
    n, at = len(array), array.offset
    validity, data = array.buffers()[:2]
    if str(array.type) == "bool":
        values = _bits(data, at, n)
    else:
        values = np.frombuffer(data, np.dtype(str(array.type)), count=n, offset=at * array.type.byte_width)
    if validity is not None and array.null_count:
        values = np.where(_bits(validity, at, n), values, null)
    return values


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
