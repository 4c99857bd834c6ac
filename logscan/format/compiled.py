"""The compiled steps of logscan's decoders: the extension module ``logscan._native``, built
from native/ by cargo when logscan is installed.

Each step does the common case of one decoder's loop and stops where that loop would do
anything else, so every finding and error is still the Python code's: ``walk_v2`` for
``logfile.walk_batches`` (a run of whole, valid v2 batches), ``records_v2`` for
``batch.iter_records`` (a run of well-formed records). Each is None where the module was not
built or ``LOGSCAN_PURE_PYTHON`` is set, and the decoders then run in pure Python, which the
compiled steps are held to (tests/format/test_native.py, tests/format/test_native_records.py
and the fuzz target ``native``).
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
#: Batches or records a call of a step takes at most: from 1, doubling, so a reader that stops
#: after a few has not paid for many more, and a long read pays a call per 1024.
MAX_CHUNK = 1024


@contextmanager
def pure_python() -> Iterator[None]:
    """Decodes that start inside run in pure Python (the bench's and the tests' comparison
    with the compiled steps)."""
    global walk_v2, records_v2
    saved = walk_v2, records_v2
    walk_v2 = records_v2 = None
    try:
        yield
    finally:
        walk_v2, records_v2 = saved
