"""Python's cyclic garbage collector, paused for the scan's loops over a copy.

The scan makes a few tracked objects per batch (facts and headers are NamedTuples, which
CPython's collector tracks and, unlike plain tuples, never untracks) and, in the single
process, keeps a replica's state and spans for the whole scan. With the collector running,
their churn made it scan the whole heap again and again, finding nothing: in a Spark task
(~90,000 objects of pyspark, pyarrow and logscan) ~0.4 s of the ~2.4 s the decode of make
bench's copy took, ~0.01 s with this; in the single-process scan of the 30,000-replica copy,
whose heap grows to millions of objects, 13 full collections took 4.2 of its 23.4 s of CPU
(2026-11-23). The loops collect the young generations themselves instead, which still frees
what they leave in cycles (they make none per batch or replica: a full collection after the
replica step over make bench's copy found nothing), so memory stays bounded.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

#: Tracked objects allocated (net) since the last collection before :func:`collect_young`
#: collects the young generations: each collection then looks at about this many objects,
#: a few milliseconds, so a loop's collections stay linear in what it allocates.
YOUNG_OBJECTS = 100_000


@contextmanager
def young_collections_only() -> Iterator[None]:
    """The cyclic collector paused for a loop that collects the young generations itself
    (``gc.collect(1)``: at each flush of a Spark task once the flushed rows are dropped, or
    :func:`collect_young`); restored as it was at the end. A ``with`` block, or a decorator
    (``@young_collections_only()``) of a function that returns its result whole."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def collect_young() -> None:
    """Collect the young generations once YOUNG_OBJECTS tracked objects were allocated
    since the last collection (see young_collections_only)."""
    if gc.get_count()[0] >= YOUNG_OBJECTS:
        gc.collect(1)
