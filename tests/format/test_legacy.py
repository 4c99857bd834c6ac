import struct

import pytest

from logscan.format.errors import CompressionError, CorruptRecordError, TruncatedInput, UnknownMagic
from logscan.format.legacy import LegacyBatch, decode_legacy_entry, iter_legacy_records
from logscan.testing.encoder import legacy_message, legacy_wrapper

T0 = 1700000000000

# Recorded from Kafka 4.1.1 (MemoryRecords.withRecords, CreateTime, three records
# (null, "v-M-lz4-0"), ("k1", "v-M-lz4-1" x2), ("k2", null) at offsets 9..11 / 21..23).
# The magic-0 wrapper carries the broken lz4 header checksum (0x1a instead of 0x82).
KAFKA_V0_LZ4_WRAPPER = bytes.fromhex(
    "000000000000000b0000007674c5d9be0003ffffffff0000006804224d1860401a5900000012000100f20d09"
    "000000179f476f3e0000ffffffff00000009762d302d6c7a342d302200a1000a00000022406bf55a100074026b"
    "3100000012250015310900011e00b000000b000000108b23e3da0d008000026b32ffffffff00000000")
KAFKA_V1_LZ4_WRAPPER = bytes.fromhex(
    "00000000000000170000008ad5f4980301030000018bcfe56802ffffffff0000007404224d186040826500000016"
    "000100f3111f447e7ca701000000018bcfe56800ffffffff00000009762d312d6c7a342d302a00002200502a73"
    "07e9430900012b0000090074026b31000000122d0015310900033600900200000018f58501222d00013600b002"
    "000000026b32ffffffff00000000")


@pytest.mark.parametrize("raw,offsets,timestamps,ttype", [
    (KAFKA_V0_LZ4_WRAPPER, [9, 10, 11], [-1, -1, -1], "NoTimestampType"),
    (KAFKA_V1_LZ4_WRAPPER, [21, 22, 23], [T0, T0 + 1, T0 + 2], "CreateTime"),
])
def test_kafka_lz4_wrappers(raw, offsets, timestamps, ttype):
    entry, next_pos = decode_legacy_entry(b"zz" + raw + b"zz", 2)
    assert next_pos == 2 + len(raw) and entry.crc_valid and entry.codec == "lz4"
    assert entry.last_offset == offsets[-1] and entry.timestamp_type == ttype
    inner = list(iter_legacy_records(entry))
    assert [m.offset for m in inner] == offsets
    assert [m.timestamp for m in inner] == timestamps
    assert [m.key for m in inner] == [None, b"k1", b"k2"]
    assert inner[2].value is None and inner[1].value.endswith(b"lz4-1") and all(m.crc_valid for m in inner)
    assert {m.position for m in inner} == {2}


@pytest.mark.parametrize("magic", [0, 1])
def test_plain_message_round_trip_padded(magic):
    raw = legacy_message(77, b"value", b"key", magic=magic, timestamp=T0)
    entry, next_pos = decode_legacy_entry(b"\x01\x02\x03" + raw + b"\xff" * 20, 3)
    assert next_pos == 3 + len(raw)
    assert entry == LegacyBatch(3, 77, len(raw) - 12, entry.crc, magic, 0, T0 if magic else -1,
                                "CreateTime" if magic else "NoTimestampType", b"key", b"value", True)
    assert list(iter_legacy_records(entry)) == [entry]
    assert entry.size_in_bytes == len(raw) and entry.codec == "none"


@pytest.mark.parametrize("magic", [0, 1])
def test_every_prefix_is_truncated(magic):
    raw = legacy_message(5, b"value", None, magic=magic, timestamp=T0)
    for cut in range(len(raw)):
        with pytest.raises(TruncatedInput):
            decode_legacy_entry(raw[:cut], 0)


def test_null_key_and_value():
    entry, _ = decode_legacy_entry(legacy_message(1, None, None, magic=1), 0)
    assert entry.key is None and entry.value is None and entry.message_size == 22


def test_bad_crc_is_flagged():
    raw = bytearray(legacy_message(1, b"v", magic=1))
    raw[-1] ^= 0xFF
    assert not decode_legacy_entry(raw, 0)[0].crc_valid
    assert decode_legacy_entry(raw, 0, verify_crc=False)[0].crc_valid


def test_size_below_overhead_is_corrupt():
    raw = bytearray(legacy_message(1, b"v", magic=0))
    struct.pack_into(">i", raw, 8, 13)
    with pytest.raises(CorruptRecordError) as e:
        decode_legacy_entry(raw, 0)
    assert e.value.position == 8 and e.value.found == 13


def test_v1_size_below_v1_overhead_is_corrupt():
    raw = bytearray(legacy_message(1, None, None, magic=0))  # 14-byte message
    raw[16] = 1
    with pytest.raises(CorruptRecordError):
        decode_legacy_entry(bytes(raw) + bytes(10), 0)


def test_key_length_past_message_is_corrupt():
    raw = bytearray(legacy_message(1, b"v", b"k", magic=1))
    struct.pack_into(">i", raw, 26, 1000)
    with pytest.raises(CorruptRecordError) as e:
        decode_legacy_entry(raw, 0)
    assert e.value.position == 26


def test_unknown_magic():
    raw = bytearray(legacy_message(1, b"v", magic=1))
    raw[16] = 7
    with pytest.raises(UnknownMagic) as e:
        decode_legacy_entry(raw, 0)
    assert e.value.position == 16


@pytest.mark.parametrize("codec", [1, 2, 3])
@pytest.mark.parametrize("magic", [0, 1])
def test_wrappers_every_codec(codec, magic):
    inner = [(b"a", b"1", T0), (None, b"2" * 500, T0 + 1), (b"c", None, T0 + 2)]
    raw = legacy_wrapper(inner, offset=102, magic=magic, codec=codec, timestamp=T0 + 2)
    entry, _ = decode_legacy_entry(raw, 0)
    assert entry.crc_valid and entry.compression == codec and entry.offset == 102
    messages = list(iter_legacy_records(entry))
    assert [m.offset for m in messages] == [100, 101, 102]
    assert [(m.key, m.value) for m in messages] == [(k, v) for k, v, _ in inner]
    assert [m.timestamp for m in messages] == ([T0, T0 + 1, T0 + 2] if magic else [-1, -1, -1])


def test_v1_log_append_time_is_inherited():
    inner = [(b"a", b"1", T0), (b"b", b"2", T0 + 1)]
    raw = legacy_wrapper(inner, offset=9, magic=1, codec=1, timestamp=T0 + 500, log_append_time=True)
    entry, _ = decode_legacy_entry(raw, 0)
    assert entry.timestamp_type == "LogAppendTime"
    messages = list(iter_legacy_records(entry))
    assert [(m.timestamp, m.timestamp_type) for m in messages] == [(T0 + 500, "LogAppendTime")] * 2


def test_v1_wrapper_offset_zero_uses_inner_offsets():
    raw = legacy_wrapper([(None, b"x", 1), (None, b"y", 2)], offset=0, magic=1, codec=1)
    assert [m.offset for m in iter_legacy_records(decode_legacy_entry(raw, 0)[0])] == [0, 1]


def test_v1_wrapper_offset_below_last_inner_is_invalid():
    raw = legacy_wrapper([(None, b"x", 1)] * 3, offset=1, magic=1, codec=1)
    with pytest.raises(CorruptRecordError, match="invalid wrapper offset"):
        list(iter_legacy_records(decode_legacy_entry(raw, 0)[0]))


def test_v0_inner_offsets_are_absolute():
    raw = legacy_wrapper([(None, b"x", -1)] * 3, offset=50, magic=0, codec=2, inner_offsets=[7, 8, 20])
    assert [m.offset for m in iter_legacy_records(decode_legacy_entry(raw, 0)[0])] == [7, 8, 20]


def test_nested_compression_is_invalid():
    from logscan.format import compression
    nested = legacy_wrapper([(None, b"x", 1)], offset=0, magic=1, codec=1)
    wrapper = legacy_message(5, compression.compress(1, nested, magic=1), magic=1, attributes=1)
    with pytest.raises(CorruptRecordError, match="must not be compressed"):
        list(iter_legacy_records(decode_legacy_entry(wrapper, 0)[0]))


def test_null_wrapper_value_and_empty_inner_set():
    from logscan.format import compression
    with pytest.raises(CorruptRecordError, match="null value"):
        list(iter_legacy_records(decode_legacy_entry(legacy_message(1, None, magic=1, attributes=1), 0)[0]))
    empty = legacy_message(1, compression.compress(1, b"", magic=1), magic=1, attributes=1)
    with pytest.raises(CorruptRecordError, match="no inner records"):
        list(iter_legacy_records(decode_legacy_entry(empty, 0)[0]))


def test_zstd_wrapper_is_invalid():
    from logscan.format import compression
    raw = legacy_message(1, compression.compress(4, b"x" * 30, magic=2), magic=1, attributes=4)
    with pytest.raises(CorruptRecordError, match="compressionType"):
        list(iter_legacy_records(decode_legacy_entry(raw, 0)[0]))


def test_partial_trailing_inner_message_ends_the_set():
    from logscan.format import compression
    nested = legacy_message(0, b"a", magic=1) + legacy_message(1, b"b", magic=1)[:-3]
    raw = legacy_message(0, compression.compress(1, nested, magic=1), magic=1, attributes=1)
    assert [m.value for m in iter_legacy_records(decode_legacy_entry(raw, 0)[0])] == [b"a"]


def test_inner_corruption_is_located_at_the_wrapper():
    from logscan.format import compression
    nested = bytearray(legacy_message(0, b"a", magic=1))
    struct.pack_into(">i", nested, 8, 3)
    raw = b"pad" + legacy_message(0, compression.compress(1, bytes(nested), magic=1), magic=1, attributes=1)
    with pytest.raises(CorruptRecordError) as e:
        list(iter_legacy_records(decode_legacy_entry(raw, 3)[0]))
    assert e.value.position == 3


def test_corrupt_compressed_value_is_compression_error():
    raw = bytearray(legacy_wrapper([(None, b"x" * 100, 1)], offset=0, magic=1, codec=3))
    raw[-8:] = b"\xff" * 8
    with pytest.raises(CompressionError):
        list(iter_legacy_records(decode_legacy_entry(raw, 0, verify_crc=False)[0]))


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(nested=st.binary(max_size=200), codec=st.integers(1, 4), magic=st.integers(0, 1), offset=st.integers(0, 5))
def test_fuzz_wrapper_contents_only_decode_errors(nested, codec, magic, offset):
    from logscan.format import compression
    from logscan.format.errors import DecodeError
    value = compression.compress(codec, nested, magic=2)
    raw = legacy_message(offset, value, magic=magic, attributes=codec)
    entry, _ = decode_legacy_entry(raw, 0)
    try:
        for message in iter_legacy_records(entry):
            assert isinstance(message, LegacyBatch) and not message.is_compressed
    except DecodeError:
        pass
