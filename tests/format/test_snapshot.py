"""Producer-state snapshots: byte literals, round trips, damaged files, and Kafka 4.1.1 itself."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from logscan.format.errors import CorruptRecordError, DecodeError, TruncatedInput, UnknownVersion
from logscan.format.snapshot import (
    ENTRY_SIZE, SnapshotCrcMismatch, decode_producer_snapshot, decrement_sequence,
    encode_producer_snapshot, format_snapshot_entry)

from tests.kafkajava import dump_log, requires_kafka

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

# One entry as Kafka 4.1.1 wrote it back to us: kafka-dump-log computed CRC 2143538278 for
# exactly these 56 bytes (stored crc replaced), so this literal does not trust our encoder.
KAFKA_ENTRY = (1000, 3, 9, 57, 4, 1700000000000, 2, 50)
LITERAL = bytes.fromhex(
    "0001" "7fc3cc66" "00000001"
    "00000000000003e8" "0003" "00000009" "0000000000000039" "00000004"
    "0000018bcfe56800" "00000002" "0000000000000032")


def test_byte_literal_decodes_with_kafkas_crc():
    snap = decode_producer_snapshot(LITERAL)
    assert (snap.version, snap.crc, snap.crc_valid) == (1, 2143538278, True)
    (e,) = snap.entries
    assert e.position == 10
    assert (e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset) == KAFKA_ENTRY
    assert (e.first_sequence, e.first_offset, e.has_ongoing_transaction) == (5, 53, True)
    assert encode_producer_snapshot([KAFKA_ENTRY]) == LITERAL


def test_empty_snapshot():
    snap = decode_producer_snapshot(encode_producer_snapshot([]))
    assert snap.entries == () and snap.crc_valid and snap.end == 10


entry_st = st.tuples(
    st.integers(-2**63, 2**63 - 1), st.integers(-2**15, 2**15 - 1), st.integers(-2**31, 2**31 - 1),
    st.integers(-2**63, 2**63 - 1), st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1),
    st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1))


@given(st.lists(entry_st, max_size=5), st.binary(max_size=7), st.binary(max_size=7))
def test_round_trip_with_junk_on_both_sides(entries, left, right):
    body = encode_producer_snapshot(entries)
    buf = left + body + right
    snap = decode_producer_snapshot(buf, len(left), len(left) + len(body))
    assert snap.position == len(left) and snap.end == len(left) + len(body)
    assert [e.position for e in snap.entries] == [len(left) + 10 + i * ENTRY_SIZE for i in range(len(entries))]
    assert [(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
             e.coordinator_epoch, e.current_txn_first_offset) for e in snap.entries] == entries
    assert encode_producer_snapshot(snap.entries) == body


def test_every_prefix_is_truncated():
    full = encode_producer_snapshot([KAFKA_ENTRY, (1, 0, -1, -1, 0, 5, 0, -1)])
    for cut in range(len(full)):
        with pytest.raises(TruncatedInput) as info:
            decode_producer_snapshot(full[:cut])
        assert info.value.kafka_message.startswith("Snapshot failed schema validation: ")


def test_bad_crc_keeps_entries_for_forensics():
    body = bytearray(encode_producer_snapshot([KAFKA_ENTRY]))
    body[20] ^= 0x01
    with pytest.raises(SnapshotCrcMismatch) as info:
        decode_producer_snapshot(bytes(body))
    err = info.value
    assert err.position == 2 and err.found == 2143538278 and err.expected != err.found
    assert err.snapshot.entries[0].last_sequence == 9 ^ 0x01000000 and not err.snapshot.crc_valid
    assert err.kafka_message == (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: 2143538278. "
                                 f"Computed crc: {err.expected}")
    relaxed = decode_producer_snapshot(bytes(body), verify_crc=False)
    assert relaxed == err.snapshot


def test_unknown_version():
    with pytest.raises(UnknownVersion) as info:
        decode_producer_snapshot(encode_producer_snapshot([], version=2))
    assert info.value.position == 0 and info.value.found == 2
    assert info.value.kafka_message == "Snapshot failed schema validation: Snapshot contained an unknown file version 2"
    with pytest.raises(UnknownVersion):    # version is checked before the header length
        decode_producer_snapshot(b"\x00\x00\x00")


def test_count_errors():
    head = encode_producer_snapshot([])[:6]
    with pytest.raises(CorruptRecordError) as info:
        decode_producer_snapshot(head + struct.pack(">i", -1))
    assert info.value.position == 6
    assert info.value.kafka_message.endswith("non-nullable field producerEntries was serialized as null")
    with pytest.raises(TruncatedInput) as info:
        decode_producer_snapshot(head + struct.pack(">i", 1000) + bytes(46))
    assert info.value.position == 10 and info.value.kafka_message.endswith(
        "Tried to allocate a collection of size 1000, but there are only 46 bytes remaining.")
    # Bytes after the counted entries: Kafka would accept them (inside the CRC); we locate them.
    with pytest.raises(CorruptRecordError) as info:
        decode_producer_snapshot(encode_producer_snapshot([KAFKA_ENTRY]) + b"xx")
    assert info.value.position == 56 and info.value.kafka_message is None


def test_first_sequence_wraps_like_kafka():
    assert decrement_sequence(2, 5) == 2**31 - 3    # kafka-dump-log printed 2147483645
    assert decrement_sequence(10, 3) == 7
    assert decrement_sequence(-5, 2**31 - 1) == -4            # Java int overflow, twice
    assert decrement_sequence(2**31 - 1, -3) == -(2**31) + 2
    snap = decode_producer_snapshot(encode_producer_snapshot([(1, 0, -1, -1, 0, 5, 0, -1)]))
    assert snap.entries[0].first_sequence == -1 and snap.entries[0].first_offset == -1


def test_format_lines():
    snap = decode_producer_snapshot(encode_producer_snapshot([KAFKA_ENTRY, (1001, 0, -1, -1, 0, 7, 5, -1)]))
    assert format_snapshot_entry(snap.entries[0]) == (
        "producerId: 1000 producerEpoch: 3 coordinatorEpoch: 2 currentTxnFirstOffset: OptionalLong[50] "
        "lastTimestamp: 1700000000000 firstSequence: 5 lastSequence: 9 lastOffset: 57 offsetDelta: 4 "
        "timestamp: 1700000000000")
    assert format_snapshot_entry(snap.entries[1]) == (
        "producerId: 1001 producerEpoch: 0 coordinatorEpoch: 5 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 7 ")


CASES = {
    "00000000000000000010.snapshot": encode_producer_snapshot(
        [KAFKA_ENTRY, (1001, 0, -1, -1, 0, 1700000000001, 5, -1), (1002, 1, 2, 7, 5, 17, 0, -2),
         (-1, -1, 2**31 - 1, 2**63 - 1, -3, -1, -1, 0)]),
    "00000000000000000011.snapshot": encode_producer_snapshot([KAFKA_ENTRY], crc=5),
    "00000000000000000012.snapshot": encode_producer_snapshot([], version=-3),
    "00000000000000000013.snapshot": b"\x00\x01\x00",
    "00000000000000000014.snapshot": encode_producer_snapshot([KAFKA_ENTRY])[:30],
    "00000000000000000015.snapshot": encode_producer_snapshot([])[:6] + struct.pack(">i", 7) + bytes(12),
    "00000000000000000016.snapshot": encode_producer_snapshot([])[:6] + struct.pack(">i", -9),
    "00000000000000000017.snapshot": b"",
}


def expected_dump(buf: bytes) -> tuple[list[str], str]:
    try:
        snap = decode_producer_snapshot(buf)
    except DecodeError as err:
        return [], err.kafka_message + "\n"
    return [format_snapshot_entry(e) for e in snap.entries], ""


@pytest.mark.kafka
@requires_kafka
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_kafka_dump_log(tmp_path, name):
    (tmp_path / name).write_bytes(CASES[name])
    out, err, rc = dump_log("--files", str(tmp_path / name))
    lines, message = expected_dump(CASES[name])
    assert rc == 0
    assert out.splitlines() == [f"Dumping {tmp_path / name}", *lines]
    assert err == message


@pytest.mark.kafka
@requires_kafka
def test_real_fixture_snapshots_match_kafka():
    files = sorted(FIXTURES.rglob("*.snapshot"))
    if not files:
        pytest.skip("no real .snapshot files under fixtures/ yet")
    files = files[:40]
    out, err, rc = dump_log("--files", ",".join(map(str, files)))
    assert rc == 0 and err == ""
    expected = []
    for f in files:
        expected.append(f"Dumping {f}")
        expected += expected_dump(f.read_bytes())[0]
    assert out.splitlines() == expected


def test_golden_snapshot_dumps_recorded_from_kafka():
    # kafka-dump-log 4.1.1's text; the kafka-4.4 cluster's (no trailing space on entry lines)
    # is compared in tests/dump/test_fixtures.py with `logscan dump --kafka-version 4.4`
    goldens = sorted(g for g in FIXTURES.glob("*/truth/dump/*/*/*.snapshot.txt")
                     if '"kafka_version": "4.1.1"' in (g.parents[3] / "truth.json").read_text())
    if not goldens:
        pytest.skip("no recorded kafka-dump-log output under fixtures/*/truth/dump yet")
    for golden in goldens:
        name = golden.name[:-len(".txt")]
        source = golden.parents[4] / "brokers" / golden.parent.parent.name / golden.parent.name / name
        lines, message = expected_dump(source.read_bytes())
        shown = f"{golden.parent.parent.name}/{golden.parent.name}/{name}"
        assert golden.read_text().splitlines() == [f"Dumping {shown}", *lines], golden
        stderr = golden.with_name(name + ".stderr.txt")
        if stderr.exists():
            text = "".join(l for l in stderr.read_text().splitlines(True) if not l.startswith("SLF4J:"))
            assert text == message, stderr


@given(st.binary(max_size=200))
def test_fuzz_only_values_or_decode_errors(data):
    """Invariant: any bytes give a snapshot or a DecodeError carrying Kafka's wording."""
    try:
        snap = decode_producer_snapshot(data, verify_crc=False)
    except DecodeError as err:
        assert 0 <= err.position <= len(data) and hasattr(err, "kafka_message")
    else:
        assert snap.end == len(data) == 10 + ENTRY_SIZE * len(snap.entries)
