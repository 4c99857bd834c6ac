"""`logscan dump` of a batch whose last offset passes 2^63-1 (issue 33 item 2).

The base offset is outside a v2 batch's CRC, so a real batch (the `tv2` cluster's txn-a-0,
transactional batches with COMMIT/ABORT markers) moved to base offset 2^63-2 with a
lastOffsetDelta of 2 still checks. Kafka's offsets are signed 64-bit and its sum wraps; the
dump says so at the batch, prints every batch, and never dies (the deep dump's
non-consecutive-offsets block once did: struct.error on the offset).
"""

from __future__ import annotations

import struct

from logscan.dump import EXIT_DATA

from .harness import BROKER, batch_spans, dump_json, place, run_cli

REAL = BROKER / "txn-a-0" / "00000000000000000000.log"
LAST_DELTA_AT = 23


def _overflowing(tmp_path):
    data = bytearray(REAL.read_bytes())
    spans = batch_spans(bytes(data))
    p = next(q for q, _ in spans if struct.unpack_from(">i", data, q + LAST_DELTA_AT)[0] == 2)
    struct.pack_into(">q", data, p, 2**63 - 2)
    return place(tmp_path, REAL, bytes(data)), p, spans


def test_the_batch_is_a_located_finding_and_the_dump_goes_on(tmp_path):
    path, p, spans = _overflowing(tmp_path)
    reference = dump_json(REAL)
    run = dump_json(path)
    assert run.status == EXIT_DATA
    assert [(f["position"], f["reason"]) for f in run.findings] == [(p, "offset-overflow")]
    assert "passes 2^63-1" in run.findings[0]["message"] and "-9223372036854775808" in run.findings[0]["message"]
    assert [b["position"] for b in run.batches] == [q for q, _ in spans]
    assert [b for b in run.batches if b["position"] != p] == [b for b in reference.batches if b["position"] != p]
    assert run.batch_at(p)["last_offset"] == 2**63


def test_the_deep_text_dump_never_crashes(tmp_path):
    path, p, _ = _overflowing(tmp_path)
    proc = run_cli("dump", "--deep-iteration", str(path))
    assert proc.returncode == EXIT_DATA and "Traceback" not in proc.stderr, proc.stderr
    assert "Non-consecutive offsets in" in proc.stderr and "-9223372036854775808 is followed by" in proc.stderr
