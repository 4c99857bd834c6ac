"""A store that fails: a read failing once is retried and the scan's rows are the local
scan's; a read failing for good is a located `io` finding (the file, the byte where reading
stopped, the store's error) and every other replica is read. And memory: a stored segment
is read a window at a time, so a walk holds one window, never the segment."""

from __future__ import annotations

import tracemalloc

import pytest

from logscan.logdir import store
from logscan.scan.local import scan
from logscan.scan.replica import ReplicaRead, iter_segment
from logscan.testing.encoder import Rec, encode_batch

from .conftest import FIXTURES, local_form
from .faulty import DROPPED

HANGING = (FIXTURES / "hanging" / "brokers").resolve()
SEGMENT = HANGING / "broker-1" / "hang-0" / "00000000000000000000.log"


def test_a_read_that_fails_once_is_retried(stored):
    root, uri = str(HANGING), f"file://{HANGING}"
    stored.fail = lambda path, offset, n, count: path == str(SEGMENT) and count == 1
    remote = scan([uri])
    assert stored.reads[str(SEGMENT)] == 2  # the failed read, then the one that worked
    local = scan([root])
    for name, rows in local.tables.items():
        assert [local_form(r, uri, root) for r in remote.tables[name]] == rows, name


def test_a_read_that_fails_for_good_is_a_located_finding_and_the_scan_goes_on(stored):
    root, uri = str(HANGING), f"file://{HANGING}"
    stored.fail = lambda path, offset, n, count: path == str(SEGMENT)
    remote = scan([uri])
    local = scan([root])
    # each read retried RETRIES times: the walk's first window, then the copy-gap check's
    # look at the last segment's tail (replica.tail_gap), which fails the same way
    assert stored.reads[str(SEGMENT)] == 2 * (store.RETRIES + 1)

    bad = f"file://{SEGMENT}"
    new = [f for f in remote.findings if local_form(f.path, uri, root) not in {g.path for g in local.findings}]
    # the segment's finding, and its replica's: short of what its broker's checkpoint names,
    # so no verdict rests on what could not be read
    assert [(f.path, f.position, f.reason) for f in new] == [(bad, 0, "io"),
                                                              (bad.rsplit("/", 1)[0], -1, "incomplete")]
    assert f"after {store.RETRIES + 1} attempts" in new[0].message and DROPPED in new[0].message
    # every other replica is read as the local scan reads it
    def others(rows):
        return [r for r in rows if (r["broker"], r["topic"], r["partition"]) != (1, "hang", 0)]

    for name in ("producer_state", "txn_spans", "producer_snapshots"):
        assert [local_form(r, uri, root) for r in others(remote.tables[name])] == others(local.tables[name])
    assert len(others(remote.tables["partition_state"])) == len(local.tables["partition_state"]) - 1


def _segment(path, size: int) -> int:
    """A segment of about ``size`` bytes of 60 KiB batches; returns its batch count."""
    value = bytes(range(256)) * 240
    batches = 0
    with open(path, "wb") as f:
        while f.tell() < size:
            f.write(encode_batch([Rec(value=value, timestamp=1_700_000_000_000)], base_offset=batches))
            batches += 1
    return batches


def _walk_peak(uri: str, window: int) -> tuple[int, int, ReplicaRead]:
    read = ReplicaRead()
    tracemalloc.start()
    try:
        n = sum(1 for _ in iter_segment(uri, 0, is_txn_log=False, out=read, window=window))
        return n, tracemalloc.get_traced_memory()[1], read
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def large_segment(tmp_path_factory):
    path = tmp_path_factory.mktemp("large") / "00000000000000000000.log"
    return path, _segment(path, 64 << 20)


def test_a_stored_segment_is_read_a_window_at_a_time(large_segment, stored):
    path, batches = large_segment
    window = 1 << 20
    n, peak, read = _walk_peak(f"file://{path}", window)
    assert n == batches and read.findings == []
    assert peak < 3 * window, f"{peak} bytes held reading a {path.stat().st_size}-byte segment"
    # one ranged read per window (each window starts at the first batch the last one cut)
    assert stored.reads[str(path)] <= path.stat().st_size // (window - 70_000) + 2
    # the measure sees the windows: a walk with 16 MiB windows holds one of them
    stored.reads.clear()
    assert _walk_peak(f"file://{path}", 16 << 20)[1] > 16 << 20


def test_a_window_that_fails_for_good_is_located_at_its_byte(large_segment, stored):
    path, batches = large_segment
    stop_at = 5 << 20
    stored.fail = lambda p, offset, n, count: p == str(path) and offset >= stop_at
    n, _, read = _walk_peak(f"file://{path}", 1 << 20)
    assert 0 < n < batches
    [finding] = read.findings
    assert finding.reason == "io" and finding.path == f"file://{path}"
    assert stop_at <= finding.position < stop_at + (1 << 20)
    assert f"bytes {finding.position}.." in finding.message and DROPPED in finding.message
    assert f"the {path.stat().st_size - finding.position} bytes from here are not read" in finding.message
