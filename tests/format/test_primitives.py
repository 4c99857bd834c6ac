import pytest

from logscan.format.errors import CorruptRecordError, DecodeError, TruncatedInput
from logscan.format.primitives import (
    encode_unsigned_varint, encode_varint, need, read_unsigned_varint, read_varint, read_varlong,
)

INT32_EDGES = [0, 1, -1, 63, -64, 64, -65, 2**31 - 1, -(2**31)]
INT64_EDGES = INT32_EDGES + [2**63 - 1, -(2**63)]


@pytest.mark.parametrize("value", INT32_EDGES)
def test_varint_round_trip_padded(value):
    body = encode_varint(value)
    buf = b"\xff\xff" + body + b"\x80junk"
    assert read_varint(buf, 2) == (value, 2 + len(body))


@pytest.mark.parametrize("value", INT64_EDGES)
def test_varlong_round_trip(value):
    body = encode_varint(value)
    assert read_varlong(body, 0) == (value, len(body))


def test_zigzag_known_bytes():
    # protobuf zig-zag: 0->00, -1->01, 1->02, -2->03, 300 -> d8 04
    assert encode_varint(0) == b"\x00"
    assert encode_varint(-1) == b"\x01"
    assert encode_varint(1) == b"\x02"
    assert encode_varint(150) == b"\xac\x02"
    assert read_varint(b"\xac\x02", 0) == (150, 2)


def test_unsigned_varint_is_not_zigzag():
    assert encode_unsigned_varint(1) == b"\x01"
    assert read_unsigned_varint(b"\x96\x01", 0) == (150, 2)


@pytest.mark.parametrize("value", INT64_EDGES)
def test_every_prefix_is_truncated(value):
    body = encode_varint(value)
    for cut in range(len(body)):
        with pytest.raises(TruncatedInput):
            read_varlong(body[:cut], 0)


def test_varint_too_long_is_corrupt_and_located():
    buf = b"\x00\x00" + b"\x80" * 6 + b"\x00"
    with pytest.raises(CorruptRecordError) as info:
        read_varint(buf, 2)
    assert info.value.position == 2
    assert "byte 2" in str(info.value)


def test_varint_end_bound_is_respected():
    buf = encode_varint(300) + b"\x00"
    with pytest.raises(TruncatedInput):
        read_varint(buf, 0, end=1)


def test_need_and_located_message():
    need(10, 2, 8, "header")
    with pytest.raises(TruncatedInput) as info:
        need(10, 4, 8, "header")
    err = info.value
    assert isinstance(err, DecodeError)
    assert err.located("a.log") == "a.log: byte 4: header needs 8 bytes, 6 left"
