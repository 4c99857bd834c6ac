import struct

import pytest
from crc32c import crc32c

from logscan.format import batch as b
from logscan.format.batch import Record, decode_batch_header, iter_records
from logscan.format.errors import (
    CompressionError, CorruptRecordError, DecompressionLimitExceeded, TruncatedInput, UnknownMagic,
)
from logscan.format.primitives import encode_varint
from logscan.testing.encoder import Rec, encode_batch, encode_record, end_txn_marker_batch

# kafka-formats.md §2 worked example: COMMIT, coordinatorEpoch 5, baseOffset 42, PLE 7,
# producer 1000 epoch 3, timestamp 1700000000000.
MARKER_HEX = ("000000000000002a 00000042 00000007 02 8a773c25 0030 00000000 0000018bcfe56800 "
              "0000018bcfe56800 00000000000003e8 0003 ffffffff 00000001 "
              "20 00 00 00 08 00000001 0c 000000000005 00").replace(" ", "")

# Recorded from Kafka 4.1.1: MemoryRecords.withRecords(magic 2, offset 24, none, CreateTime,
# producerId 4242, epoch 1, baseSequence 24, leader epoch 9, transactional, 3 records).
KAFKA_V2_BATCH = bytes.fromhex(
    "000000000000001800000071000000090218c0f0de0010000000020000018bcfe568000000018bcfe56802"
    "000000000000109200010000001800000003200000000114762d322d6e6f6e652d30004a000202046b3128"
    "762d322d6e6f6e652d31762d322d6e6f6e652d310404683102780468320110000404046b320100")
# Recorded from Kafka 4.1.1: MemoryRecords.withEndTransactionMarker(39, 1700000001000, 9,
# 4242, 1, ABORT coordinatorEpoch 17).
KAFKA_ABORT_MARKER = bytes.fromhex(
    "0000000000000027000000420000000902d80caf9c0030000000000000018bcfe56be80000018bcfe56be8"
    "00000000000010920001ffffffff000000012000000008000000000c00000000001100")

T0 = 1700000000000
RECORDS = [
    Rec(b"v0", None, (), T0),
    Rec(b"v1" * 100, b"k1", (("h1", b"x"), ("h2", None), ("\u00e9t\u00e9", b"")), T0 + 5),
    Rec(None, b"k2", (), T0 - 3),
]


def test_encoder_reproduces_the_worked_marker_example():
    raw = end_txn_marker_batch(commit=True, coordinator_epoch=5, base_offset=42, partition_leader_epoch=7,
                               producer_id=1000, producer_epoch=3, timestamp=T0)
    assert raw.hex() == MARKER_HEX and len(raw) == 78


def test_encoder_reproduces_kafka_bytes():
    recs = [Rec(b"v-2-none-0", None, (), T0),
            Rec(b"v-2-none-1" * 2, b"k1", (("h1", b"x"), ("h2", None)), T0 + 1),
            Rec(None, b"k2", (), T0 + 2)]
    assert encode_batch(recs, base_offset=24, partition_leader_epoch=9, producer_id=4242, producer_epoch=1,
                        base_sequence=24, transactional=True) == KAFKA_V2_BATCH
    assert end_txn_marker_batch(commit=False, coordinator_epoch=17, base_offset=39, partition_leader_epoch=9,
                                producer_id=4242, producer_epoch=1, timestamp=T0 + 1000) == KAFKA_ABORT_MARKER


def test_decode_kafka_batch_padded_with_junk():
    buf = b"\xde\xad\xbe" + KAFKA_V2_BATCH + b"\xff" * 9
    batch, next_pos = decode_batch_header(buf, 3)
    assert next_pos == 3 + len(KAFKA_V2_BATCH)
    assert batch == b.RecordBatch(3, 24, 113, 9, 2, 0x18C0F0DE, 0x10, 2, T0, T0 + 2, 4242, 1, 24, 3, True)
    assert (batch.last_offset, batch.last_sequence, batch.size_in_bytes) == (26, 26, 125)
    assert batch.is_transactional and not batch.is_control and batch.codec == "none"
    assert batch.delete_horizon_ms is None and batch.timestamp_type == "CreateTime"
    records = list(iter_records(buf, batch))
    assert [r.offset for r in records] == [24, 25, 26]
    assert [r.sequence for r in records] == [24, 25, 26]
    assert records[1] == Record(25, 1, T0 + 1, 1, 0, 25, b"k1", b"v-2-none-1" * 2,
                                (("h1", b"x"), ("h2", None)), 38)
    assert records[2].value is None and records[0].key is None


def test_marker_batch_fields():
    batch, _ = decode_batch_header(KAFKA_ABORT_MARKER, 0)
    assert batch.is_control and batch.is_transactional and batch.records_count == 1
    assert batch.base_sequence == -1 and batch.last_sequence == -1
    (record,) = iter_records(KAFKA_ABORT_MARKER, batch)
    assert (record.key, record.value, record.size_in_bytes) == (b"\x00\x00\x00\x00", bytes.fromhex("000000000011"), 17)


def test_every_prefix_is_truncated_input():
    for cut in range(len(KAFKA_V2_BATCH)):
        with pytest.raises(TruncatedInput) as e:
            decode_batch_header(b"xx" + KAFKA_V2_BATCH[:cut], 2)
        assert e.value.position == 2


def test_end_bounds_the_batch():
    with pytest.raises(TruncatedInput):
        decode_batch_header(KAFKA_V2_BATCH + b"more", 0, end=len(KAFKA_V2_BATCH) - 1)


def test_bad_crc_is_flagged_not_raised():
    raw = bytearray(KAFKA_V2_BATCH)
    raw[-1] ^= 1
    batch, _ = decode_batch_header(raw, 0)
    assert not batch.crc_valid and not batch.is_valid
    assert decode_batch_header(raw, 0, verify_crc=False)[0].crc_valid


def test_partition_leader_epoch_is_outside_the_crc():
    raw = bytearray(KAFKA_V2_BATCH)
    struct.pack_into(">i", raw, 12, 12345)
    batch, _ = decode_batch_header(raw, 0)
    assert batch.crc_valid and batch.partition_leader_epoch == 12345


@pytest.mark.parametrize("length", [-1, 0, 48])
def test_length_below_overhead_is_corrupt(length):
    raw = bytearray(KAFKA_V2_BATCH)
    struct.pack_into(">i", raw, 8, length)
    with pytest.raises(CorruptRecordError) as e:
        decode_batch_header(b"j" + raw, 1)
    assert e.value.position == 9 and e.value.found == length


def test_other_magic_is_unknown_magic():
    raw = bytearray(KAFKA_V2_BATCH)
    raw[16] = 3
    with pytest.raises(UnknownMagic) as e:
        decode_batch_header(raw, 0)
    assert e.value.position == 16 and e.value.found == 3


@pytest.mark.parametrize("codec", range(5))
def test_round_trip_every_codec(codec):
    raw = encode_batch(RECORDS, base_offset=1000, codec=codec, producer_id=5, producer_epoch=2,
                       base_sequence=7, partition_leader_epoch=4)
    buf = b"\x00" * 5 + raw + b"\x01" * 5
    batch, next_pos = decode_batch_header(buf, 5)
    assert next_pos == 5 + len(raw) and batch.crc_valid and batch.compression == codec
    assert (batch.base_timestamp, batch.max_timestamp) == (T0, T0 + 5)
    records = list(iter_records(buf, batch))
    assert [(r.key, r.value, r.headers) for r in records] == [(r.key, r.value, tuple(r.headers)) for r in RECORDS]
    assert [r.timestamp for r in records] == [T0, T0 + 5, T0 - 3]
    assert [r.timestamp_delta for r in records] == [0, 5, -3]
    assert [r.sequence for r in records] == [7, 8, 9]
    assert [r.offset for r in records] == [1000, 1001, 1002]


def test_records_are_decoded_lazily():
    raw = bytearray(encode_batch(RECORDS, codec=1))
    raw[70:80] = b"\x00" * 10  # damage the gzip stream
    batch, _ = decode_batch_header(raw, 0, verify_crc=False)
    it = iter_records(raw, batch)  # nothing decompressed yet
    with pytest.raises(CompressionError) as e:
        next(it)
    assert e.value.position == 61


def test_log_append_time_replaces_record_timestamps():
    raw = encode_batch(RECORDS, log_append_time=T0 + 999)
    batch, _ = decode_batch_header(raw, 0)
    assert batch.timestamp_type == "LogAppendTime" and batch.max_timestamp == T0 + 999
    assert {r.timestamp for r in iter_records(raw, batch)} == {T0 + 999}


def test_delete_horizon_rebases_timestamps():
    raw = encode_batch(RECORDS, delete_horizon_ms=T0 + 86_400_000)
    batch, _ = decode_batch_header(raw, 0)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == T0 + 86_400_000
    assert [r.timestamp for r in iter_records(raw, batch)] == [T0, T0 + 5, T0 - 3]


def test_empty_batch_has_no_records_and_keeps_offsets():
    raw = encode_batch([], base_offset=10, last_offset_delta=4, producer_id=3, producer_epoch=0, base_sequence=2)
    batch, _ = decode_batch_header(raw, 0)
    assert (batch.records_count, batch.last_offset, batch.last_sequence) == (0, 14, 6)
    assert batch.base_timestamp == -1 and len(raw) == 61
    assert list(iter_records(raw, batch)) == []


def test_sequence_wraparound():
    assert b.increment_sequence(2**31 - 2, 3) == 1
    assert b.increment_sequence(5, 3) == 8
    assert b.decrement_sequence(1, 3) == 2**31 - 2
    raw = encode_batch(RECORDS, base_sequence=2**31 - 2, producer_id=1, producer_epoch=0)
    batch, _ = decode_batch_header(raw, 0)
    assert batch.last_sequence == 0
    assert [r.sequence for r in iter_records(raw, batch)] == [2**31 - 2, 2**31 - 1, 0]


def test_attribute_flags():
    raw = encode_batch(RECORDS, transactional=True, control=True, codec=3)
    batch, _ = decode_batch_header(raw, 0)
    assert batch.attributes == 0x33 and batch.codec == "lz4"
    assert batch.is_transactional and batch.is_control and not batch.has_delete_horizon


def _records_error(raw, pos=0, **kw):
    batch, _ = decode_batch_header(raw, pos, verify_crc=False)
    with pytest.raises(CorruptRecordError) as e:
        list(iter_records(raw, batch, **kw))
    return e.value


def test_count_larger_than_records_is_premature_eof():
    err = _records_error(b"junk" + encode_batch(RECORDS, records_count=4), 4)
    assert "premature EOF" in err.message and err.position == 4 + len(encode_batch(RECORDS))


def test_count_smaller_than_records_is_records_remaining():
    err = _records_error(encode_batch(RECORDS, records_count=2))
    assert "records still remaining" in err.message


@pytest.mark.parametrize("codec", [1, 4])
def test_compressed_count_mismatch(codec):
    err = _records_error(encode_batch(RECORDS, records_count=2, codec=codec))
    assert "records still remaining" in err.message and err.position == 61
    err = _records_error(encode_batch(RECORDS, records_count=5, codec=codec))
    assert "premature EOF" in err.message


def test_negative_count():
    err = _records_error(encode_batch(RECORDS, records_count=-1))
    assert "invalid record count -1" in err.message


def test_zero_count_ignores_bytes_like_kafka():
    raw = encode_batch(RECORDS, records_count=0)
    batch, _ = decode_batch_header(raw, 0)
    assert list(iter_records(raw, batch)) == []


def _batch_with_record_bytes(body: bytes, count=1) -> bytes:
    from logscan.testing.encoder import _seal_batch
    return _seal_batch(0, -1, 0, 0, T0, T0, -1, -1, -1, count, body, None)


def test_every_one_and_two_byte_varint_decodes_to_its_value():
    # Every value of a one- or two-byte varint (-8192..8191), as timestamp delta, offset delta
    # and key and value lengths.
    values = range(-8192, 8192)
    body = b"".join(encode_record(i, v, b"k" * (i % 200), None if v < 0 else b"v" * (v % 300))
                    for i, v in enumerate(values))
    raw = _batch_with_record_bytes(body, count=len(values))
    batch, _ = decode_batch_header(raw, 0)
    records = list(iter_records(raw, batch))
    assert [r.timestamp_delta for r in records] == list(values)
    assert [r.offset_delta for r in records] == list(range(len(values)))
    assert [len(r.key) for r in records] == [i % 200 for i in range(len(values))]
    assert [r.value for r in records] == [None if v < 0 else b"v" * (v % 300) for v in values]


def test_records_are_read_on_first_next():
    # iter_records is lazy: a batch whose records are damaged fails at next(), not at the call.
    raw = _batch_with_record_bytes(encode_varint(200) + b"\x00" * 10)
    batch, _ = decode_batch_header(raw, 0)
    records = iter_records(raw, batch)
    with pytest.raises(CorruptRecordError, match="Invalid record size"):
        next(records)


def test_body_length_must_match_consumed_bytes():
    good = encode_record(0, 0, b"k", b"v")
    longer = encode_varint(len(good) - 1 + 1) + good[1:] + b"\x00"  # claims one more byte than read
    err = _records_error(_batch_with_record_bytes(longer))
    assert "Invalid record size" in err.message and err.position == 61


def test_body_length_past_end():
    err = _records_error(_batch_with_record_bytes(encode_varint(200) + b"\x00" * 10))
    assert "Invalid record size" in err.message


def test_varint_longer_than_five_bytes_is_invalid_structure():
    body = b"\x00" + b"\x00" + b"\xff\xff\xff\xff\xff\x01" + b"\x01\x01\x00"  # offset delta 6 bytes
    err = _records_error(_batch_with_record_bytes(encode_varint(len(body)) + body))
    assert "invalid record structure" in err.message


def test_varlong_up_to_ten_bytes_is_fine():
    ts = encode_varint(-(2**62))
    assert len(ts) == 9
    body = b"\x00" + ts + b"\x00\x01\x01\x00"
    raw = _batch_with_record_bytes(encode_varint(len(body)) + body)
    batch, _ = decode_batch_header(raw, 0)
    (record,) = iter_records(raw, batch)
    assert record.timestamp_delta == -(2**62) and record.key is None and record.value is None


def test_negative_header_count_and_key_size():
    body = b"\x00\x00\x00\x01\x01" + encode_varint(-2)
    err = _records_error(_batch_with_record_bytes(encode_varint(len(body)) + body))
    assert "number of record headers -2" in err.message
    body = b"\x00\x00\x00\x01\x01" + encode_varint(1) + encode_varint(-1) + b"\x01"
    err = _records_error(_batch_with_record_bytes(encode_varint(len(body)) + body))
    assert "negative header key size" in err.message


def test_header_count_larger_than_body():
    body = b"\x00\x00\x00\x01\x01" + encode_varint(50)
    err = _records_error(_batch_with_record_bytes(encode_varint(len(body)) + body))
    assert "number of record headers 50" in err.message


def test_truncated_buffer_for_iteration():
    raw = encode_batch(RECORDS)
    batch, _ = decode_batch_header(raw, 0)
    with pytest.raises(TruncatedInput):
        list(iter_records(raw[:-1], batch))


def test_decompression_cap():
    raw = encode_batch([Rec(b"z" * 100_000)], codec=2)
    batch, _ = decode_batch_header(raw, 0)
    with pytest.raises(DecompressionLimitExceeded):
        list(iter_records(raw, batch, max_decompressed=50_000))


def test_every_corruption_of_a_record_region_is_a_decode_error():
    """No exception but DecodeError may escape record iteration, whatever byte is flipped."""
    from logscan.format.errors import DecodeError
    raw = encode_batch(RECORDS)
    for i in range(61, len(raw)):
        for flip in (0x01, 0x80, 0xFF):
            damaged = bytearray(raw)
            damaged[i] ^= flip
            batch, _ = decode_batch_header(damaged, 0, verify_crc=False)
            try:
                list(iter_records(damaged, batch))
            except DecodeError:
                pass


def test_crc_matches_independent_computation():
    raw = encode_batch(RECORDS, codec=4)
    assert struct.unpack_from(">I", raw, 17)[0] == crc32c(raw[21:])


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=400, deadline=None)
@given(payload=st.binary(max_size=300), count=st.integers(-3, 8), codec=st.integers(0, 7),
       compress_it=st.booleans())
def test_fuzz_records_region_only_decode_errors(payload, count, codec, compress_it):
    """Invariant: whatever the records region holds, iteration yields Records or raises a
    DecodeError (never another exception), and consumes exactly the batch."""
    from logscan.format import compression
    from logscan.format.errors import DecodeError
    from logscan.testing.encoder import _seal_batch
    if compress_it and codec in compression.CODECS:
        payload = compression.compress(codec, payload)
    raw = _seal_batch(0, -1, codec, 0, T0, T0, -1, -1, -1, count, payload, None)
    batch, next_pos = decode_batch_header(b"??" + raw, 2)
    assert next_pos == 2 + len(raw)
    try:
        for record in iter_records(b"??" + raw, batch):
            assert isinstance(record, Record)
    except DecodeError:
        pass
