"""`logscan dump --max-bytes` past 2 GiB (issue 33 item 2).

kafka-dump-log reads ``FileRecords.open(file).slice(0, maxBytes)`` of each .log, maxBytes an
Integer defaulting to Integer.MAX_VALUE (Kafka 4.1.1's DumpLogSegments), and refuses a file
larger than that ("larger than the maximum allowed segment size"): no segment Kafka writes
is. logscan reads such a file up to the limit too, but says that it stopped at the limit,
not that the file was cut, and how to read on: a --max-bytes as large as the file, which
logscan takes (kafka-dump-log's option cannot go past Integer.MAX_VALUE).

The file is sparse: a real segment (the `tv2` cluster's codecs-0, one batch per codec) at
its start, then a hole, then the same real batches at higher offsets around byte 2^31 - 1,
one of them crossing it. Nothing of the 2 GiB is written but those batches.
"""

from __future__ import annotations

import json

import pytest

from logscan.dump.options import INT_MAX
from logscan.testing.encoder import with_base_offset

from .harness import REAL_LOGS, batch_spans, run_cli

REAL = REAL_LOGS["codecs"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """(path, positions of the batches written near 2^31 - 1, the one crossing it)."""
    data = REAL.read_bytes()
    spans = batch_spans(data)
    batches = [data[p:p + s] for p, s in spans]
    far = []
    offset = 1000
    for batch in batches * 3:
        far.append(with_base_offset(batch, offset))
        offset += 10
    start = INT_MAX - sum(len(b) for b in far[:len(batches) * 2]) - 50  # 10 whole before, then one crossing
    path = tmp_path_factory.mktemp("big") / "codecs-0" / "00000000000000000000.log"
    path.parent.mkdir()
    positions, at = [], start
    with open(path, "wb") as f:
        f.write(data)
        f.seek(start)
        for b in far:
            f.write(b)
            positions.append(at)
            at += len(b)
    crossing = next(p for p, b in zip(positions, far) if p + len(b) > INT_MAX)
    assert path.stat().st_size > INT_MAX + 1000
    return path, positions, crossing


def _dump(*args):
    proc = run_cli("dump", "--format", "json", *args, timeout=600)
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    findings = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    return proc, [o["position"] for o in out if o["type"] == "batch"], findings


def test_the_default_limit_says_it_is_the_limit_and_how_to_raise_it(big):
    path, positions, crossing = big
    size = path.stat().st_size
    proc, printed, findings = _dump(str(path))
    assert "Traceback" not in proc.stderr
    assert printed == [p for p, _ in batch_spans(REAL.read_bytes())] + [p for p in positions if p < crossing]
    by_reason = {f["reason"]: f for f in findings}
    assert set(by_reason) == {"zero-fill", "max-bytes"}, findings  # the hole, and the limit
    limit = by_reason["max-bytes"]
    assert limit["position"] == crossing and limit["length"] == size - crossing
    assert "--max-bytes is 2147483647" in limit["message"] and f"--max-bytes {size}" in limit["message"]
    assert "truncated" not in limit["message"] and "cut" not in limit["message"]
    assert not any(f["reason"] in ("truncated", "short") for f in findings)
    assert proc.returncode == 1  # not everything was read


def test_raising_the_limit_reads_the_file_to_its_end(big):
    path, positions, _ = big
    size = path.stat().st_size
    proc, printed, findings = _dump("--max-bytes", str(size), str(path))
    assert printed == [p for p, _ in batch_spans(REAL.read_bytes())] + positions
    assert max(printed) > INT_MAX
    assert [f["reason"] for f in findings] == ["zero-fill"]  # the hole, nothing else
    assert proc.returncode == 1


def test_a_limit_below_the_default_is_a_silent_cut_as_in_kafka_dump_log():
    """Below Integer.MAX_VALUE the limit is kafka-dump-log's cut: no finding, no "Found N
    invalid bytes", status 0 (tests/dump compare its output with kafka-dump-log's)."""
    spans = batch_spans(REAL.read_bytes())
    cut = spans[2][0] + 10
    proc, printed, findings = _dump("--max-bytes", str(cut), str(REAL))
    assert printed == [p for p, _ in spans[:2]] and findings == [] and proc.returncode == 0


def test_the_option_takes_values_past_int_max():
    proc, printed, findings = _dump("--max-bytes", str(2**40), str(REAL))
    assert proc.returncode == 0 and printed == [p for p, _ in batch_spans(REAL.read_bytes())]
    assert run_cli("dump", "--max-bytes", str(2**63), str(REAL)).returncode == 2
