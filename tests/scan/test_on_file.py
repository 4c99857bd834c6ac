"""scan(on_file=...): called once per segment file the scan reads, with the file's size."""

import os
from pathlib import Path

from logscan.logdir.tree import iter_brokers
from logscan.scan.local import scan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTER = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))[0]


def test_on_file_is_called_once_per_segment_with_its_size():
    roots = [CLUSTER / "brokers"]
    calls = []
    result = scan(roots, on_file=lambda path, size: calls.append((path, size)))
    segments = sorted(str(p) for b in iter_brokers(roots) for r in b.replicas for _, p in r.segments)
    assert sorted(path for path, _ in calls) == segments and len(segments) > 1
    assert all(size == os.path.getsize(path) for path, size in calls)
    assert sum(size for _, size in calls) == result.bytes_read
    # the log-order of each replica's segments is the order they are reported in
    files = [row["file"] for row in result.tables["files"] if row["kind"] == "log_segment"]
    assert [path for path, _ in calls] == files
