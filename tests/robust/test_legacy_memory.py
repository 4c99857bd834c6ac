"""A legacy compressed wrapper of very many empty inner messages (issue 33): ~100 KB on disk,
tens of MiB inflated, every inner message a Python object if they were all listed first. The
messages are made one at a time: memory holds the decompressed bytes and one message."""

import tracemalloc

import pytest

from logscan.format import compression
from logscan.format.legacy import decode_legacy_entry, iter_legacy_records
from logscan.scan.replica import legacy_fact
from logscan.testing.encoder import legacy_wrapper

COUNT = 30_000
#: A v1 message with null key and value: 12 + 22 bytes.
NESTED = COUNT * 34
#: What a scan may hold besides: the decompressed bytes twice (the codec's buffer and its copy)
#: and a little; a list of the messages would add ~200 bytes each (6 MB here).
BOUND = 2 * NESTED + (2 << 20)


@pytest.fixture(scope="module")
def wrapper():
    raw = legacy_wrapper([(None, None, 1_000)] * COUNT, offset=5_000_000, magic=1, codec=compression.GZIP,
                         timestamp=1_000)
    entry, _ = decode_legacy_entry(raw, 0)
    assert len(raw) * 10 < NESTED  # a small file that inflates tenfold and more
    return entry


def _peak(fn) -> tuple[int, object]:
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_the_inner_messages_are_made_one_at_a_time(wrapper):
    peak, (count, first, last) = _peak(lambda: _walk(iter_legacy_records(wrapper)))
    assert (count, first, last) == (COUNT, 5_000_000 - COUNT + 1, 5_000_000)
    assert peak < BOUND, peak


def test_the_scans_fact_of_the_wrapper_counts_without_listing(wrapper):
    peak, fact = _peak(lambda: legacy_fact(wrapper, "f", []))
    assert (fact.base_offset, fact.last_offset, fact.records_count) == (5_000_000 - COUNT + 1, 5_000_000, COUNT)
    assert peak < BOUND, peak


def _walk(messages):
    count, first, last = 0, None, None
    for m in messages:
        count += 1
        first = m.offset if first is None else first
        last = m.offset
    return count, first, last
