"""replica._opened (a try and finally, not an ExitStack) closes the segment's descriptor however
its walk ends: read to its end, closed early by its reader, or with a read that fails (then a
located finding); a segment that cannot be opened is an io finding, nothing left open."""

from __future__ import annotations

import os
from pathlib import Path

from logscan.scan.replica import ReplicaRead, _opened, iter_segment

REPO = Path(__file__).resolve().parents[2]


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _segment() -> str:
    return str(next(p for p in sorted((REPO / "fixtures" / "hanging" / "brokers").rglob("*.log"))
                    if p.stat().st_size > 0))


def test_the_descriptor_is_closed_read_whole_or_closed_early():
    path = _segment()
    before = _fds()
    whole = list(iter_segment(path, 0, is_txn_log=False, out=ReplicaRead()))
    assert whole and _fds() == before
    walk = iter_segment(path, 0, is_txn_log=False, out=ReplicaRead())
    next(walk)
    assert len(_fds()) == len(before) + 1
    walk.close()
    assert _fds() == before


def test_a_failed_read_is_a_finding_and_the_descriptor_is_closed():
    path = _segment()
    out = ReplicaRead()
    before = _fds()

    def failing(log, budget):
        yield log.size
        raise OSError(5, "Input/output error")

    assert list(_opened(path, out, failing)) == [os.path.getsize(path)]
    assert _fds() == before
    assert [(f.path, f.reason) for f in out.findings] == [(path, "io")]
    assert out.bytes_read == os.path.getsize(path)


def test_a_segment_that_cannot_be_opened_is_an_io_finding(tmp_path):
    out = ReplicaRead()
    before = _fds()
    assert list(_opened(str(tmp_path / "absent.log"), out, lambda log, budget: iter([1]))) == []
    assert _fds() == before and [f.reason for f in out.findings] == ["io"] and out.bytes_read == 0
