"""The text sink's batch line, written from cached %-templates, against the line spelled out
field by field from RecordBatch's properties (which the differential tests hold to Kafka)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from logscan.dump import sinks
from logscan.format.batch import RecordBatch

INT32 = st.integers(-2**31, 2**31 - 1)
INT64 = st.integers(-2**63, 2**63 - 1)
INT16 = st.integers(-2**15, 2**15 - 1)


def spelled_out(b: RecordBatch) -> str:
    horizon = "OptionalLong.empty" if b.delete_horizon_ms is None else f"OptionalLong[{b.delete_horizon_ms}]"
    return (f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.records_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} "
            f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
            f"partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {str(b.is_transactional).lower()} isControl: {str(b.is_control).lower()} "
            f"deleteHorizonMs: {horizon} position: {b.position} {b.timestamp_type}: {b.max_timestamp} "
            f"size: {b.size_in_bytes} magic: 2 compresscodec: {b.codec} crc: {b.crc} "
            f"isvalid: {str(b.crc_valid).lower()}\n")


batches = st.builds(
    RecordBatch,
    position=st.integers(0, 2**31), base_offset=INT64, batch_length=st.integers(49, 2**31 - 1),
    partition_leader_epoch=st.sampled_from([-1, 0, 5]) | INT32, magic=st.just(2),
    crc=st.integers(0, 2**32 - 1), attributes=st.integers(0, 0x7F) | INT16,
    last_offset_delta=st.sampled_from([0, 1, 163]) | INT32, base_timestamp=INT64, max_timestamp=INT64,
    producer_id=st.sampled_from([-1, 4242]) | INT64, producer_epoch=st.sampled_from([-1, 0, 3]) | INT16,
    base_sequence=st.sampled_from([-1, 0, 2**31 - 1, 2**31 - 5]) | INT32,
    records_count=INT32, crc_valid=st.booleans())


@settings(max_examples=400, deadline=None)
@given(st.lists(batches, min_size=1, max_size=30), st.randoms(use_true_random=False))
def test_batch_lines_equal_the_spelled_out_line(distinct, rnd):
    # repeats, in runs and scattered, exercise both the last-producer shortcut and the cache
    sequence = [rnd.choice(distinct) for _ in range(3 * len(distinct))]
    out = io.StringIO()
    sink = sinks.TextSink(out)
    for b in sequence:
        sink.batch(b)
    assert out.getvalue() == "".join(spelled_out(b) for b in sequence)


def test_template_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(sinks, "_TEMPLATES_LIMIT", 8)
    out = io.StringIO()
    sink = sinks.TextSink(out)
    lines = []
    for pid in range(40):
        b = RecordBatch(pid * 100, pid, 61, 0, 2, 7, 0x10, 0, 5, 6, pid, 0, 0, 1, True)
        sink.batch(b)
        lines.append(spelled_out(b))
    assert len(sink._templates) <= 8 and out.getvalue() == "".join(lines)
