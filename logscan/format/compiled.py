"""The compiled steps of logscan's decoders: the extension module ``logscan._native``, built
from native/ by cargo when logscan is installed.

Each step does the common case of one decoder's loop and stops where that loop would do anything
else, so every finding and error is still the Python code's: ``walk_v2`` for
``logfile.walk_batches`` (a run of whole, valid v2 batches), ``records_v2`` for
``batch.iter_records`` (a run of well-formed records; ``records_iter``, RecordsIter, the same
one record a ``next()``), ``facts_v2`` for the scan's per-batch facts
(logscan.scan.replica.batch_fact over a run of whole, valid v2 batches: the facts of a run of
few batches as BatchFact objects, of more in bulk, a column per field, :func:`fact_arrays`),
``fact_v2`` for batch_fact's common case one walked batch at a time, ``header_v2`` for a v2
batch's header columns of the batches table (logscan.scan.rows.header_values), ``txn_entry_v2``
for a ``__transaction_state`` record laid out as a coordinator writes it
(logscan.format.txnlog.decode_txnlog_entry). Each is None where the module was not built or
``LOGSCAN_PURE_PYTHON`` is set, and the decoders then run in pure Python, which the compiled
steps are held to (tests/format/test_native.py, tests/format/test_native_records.py,
tests/format/test_native_facts.py, tests/scan/test_batch_shortcuts.py,
tests/format/test_txnlog.py and the fuzz targets ``native`` and ``txnlog``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator


def _native():
    if os.environ.get("LOGSCAN_PURE_PYTHON"):
        return None
    try:
        from logscan import _native
    except ImportError:
        return None
    return _native


_MODULE = _native()
#: walk_batches' common step, or None.
walk_v2 = _MODULE.walk_v2 if _MODULE is not None else None
#: The record loop's common step, or None.
records_v2 = _MODULE.records_v2 if _MODULE is not None else None
#: iter_records' iterator (the record loop's stretches of well-formed records read a record a
#: ``next()``, without a Python frame), or None (also from a module built before it).
records_iter = getattr(_MODULE, "RecordsIter", None)
#: The scan's per-batch facts of a run of batches, decided once the run is walked: fewer than
#: ``few`` as a list of BatchFact objects, more in bulk as columns (FACT_COLUMNS' bytes), or None
#: (None too from a module built before it took ``few``, or before it existed, until it is
#: rebuilt: the facts are then read by the reference, and tests/format/test_native.py fails to
#: say so).
facts_v2 = getattr(_MODULE, "facts_v2", None)
if "few" not in (getattr(facts_v2, "__text_signature__", None) or ""):
    facts_v2 = None
#: batch_fact's common step (a data batch, or a COMMIT or ABORT batch laid out as a broker
#: writes it), or None (also from a module built before it: batch_fact is then the reference's).
fact_v2 = getattr(_MODULE, "fact_v2", None)
#: header_values' step for a v2 batch, or None (also from a module built before it).
header_v2 = getattr(_MODULE, "header_v2", None)
#: decode_txnlog_entry's step for the common layout, or None (also from a module built before it).
txn_entry_v2 = getattr(_MODULE, "txn_entry_v2", None)
#: Batches or records a call of a step takes at most: from 1, doubling, so a reader that stops
#: after a few has not paid for many more, and a long read pays a call per 1024.
MAX_CHUNK = 1024


#: The names of the compiled steps above.
STEPS = ("walk_v2", "records_v2", "records_iter", "facts_v2", "fact_v2", "header_v2", "txn_entry_v2")


@contextmanager
def pure_python(*steps: str) -> Iterator[None]:
    """Decodes that start inside run in pure Python (the bench's and the tests' comparison
    with the compiled steps): every compiled step off, or only the ``steps`` named (STEPS')."""
    names = steps or STEPS
    unknown = set(names) - set(STEPS)
    if unknown:
        raise ValueError(f"no compiled step {', '.join(sorted(unknown))}: the steps are {', '.join(STEPS)}")
    here = globals()
    saved = {name: here[name] for name in names}
    here.update(dict.fromkeys(names))
    try:
        yield
    finally:
        here.update(saved)


#: facts_v2's columns, in its order: a v2 batch's position in the log, its header's fields
#: (its last offset and last sequence computed as Kafka computes them, its size with the log
#: overhead), and for a COMMIT or ABORT batch its marker's type id (ControlRecordType: 0 ABORT,
#: 1 COMMIT; -1 where a batch has no control record), coordinator epoch and timestamp (-1 when
#: none). Arrow type names, of fixed width.
FACT_COLUMNS = (("position", "int64"), ("base_offset", "int64"), ("last_offset", "int64"),
                ("partition_leader_epoch", "int32"), ("attributes", "int16"), ("base_timestamp", "int64"),
                ("max_timestamp", "int64"), ("producer_id", "int64"), ("producer_epoch", "int16"),
                ("base_sequence", "int32"), ("last_sequence", "int32"), ("records_count", "int32"),
                ("size_in_bytes", "int64"), ("control_type_id", "int16"), ("coordinator_epoch", "int32"),
                ("marker_timestamp", "int64"))


def fact_arrays(buf, pos: int, end: int, base: int, limit: int):
    """facts_v2 (which must be built) over ``buf[pos:end]``, a window of the log starting at
    byte ``base``, in bulk: (the columns of FACT_COLUMNS as numpy arrays by name, how many
    batches, the position in ``buf`` it stopped at). Each column is numpy's read-only view of
    the bytes facts_v2 wrote: no copy, no Python object per batch."""
    columns, count, stop, _ = facts_v2(buf, pos, end, base, limit)
    return joined_arrays([columns]), count, stop


def joined_arrays(runs) -> dict:
    """The columns of facts_v2's runs in bulk (each its tuple of FACT_COLUMNS' bytes), joined in
    their order, as numpy arrays by name: a column's bytes copied once, one array a column
    whatever the runs (a view of the bytes of one run)."""
    import numpy as np

    if len(runs) == 1:
        return {name: np.frombuffer(data, kind) for (name, kind), data in zip(FACT_COLUMNS, runs[0])}
    return {name: np.frombuffer(b"".join(run[i] for run in runs), kind)
            for i, (name, kind) in enumerate(FACT_COLUMNS)}


def batch_facts(buf, pos: int, end: int, base: int, limit: int):
    """fact_arrays' columns as Arrow arrays by name (Arrow's view of the same bytes)."""
    import pyarrow as pa

    arrays, count, stop = fact_arrays(buf, pos, end, base, limit)
    return ({name: pa.Array.from_buffers(getattr(pa, kind)(), count, [None, pa.py_buffer(arrays[name])])
             for name, kind in FACT_COLUMNS}, count, stop)
