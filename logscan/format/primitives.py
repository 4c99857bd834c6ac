"""Primitive encodings shared by every Kafka structure.

Kafka writes fixed-width integers big-endian. Inside v2 records, lengths and deltas are
zig-zag varints (protobuf style, 5 bytes max for int32, 10 for int64). Flexible versions of
generated messages (KIP-482) use *unsigned* varints, not zig-zag.
"""

from __future__ import annotations

import codecs
import struct

from .errors import CorruptRecordError, TruncatedInput

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


def _read_unsigned(buf, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise TruncatedInput("varint runs past the end of the data", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if pos - start >= max_bytes:
            raise CorruptRecordError(
                f"varint longer than {max_bytes} bytes", start,
                expected=f"<= {max_bytes} bytes", found=f"> {max_bytes} bytes")


def read_varint(buf, pos: int, end: int | None = None) -> tuple[int, int]:
    """Zig-zag int32 varint at ``pos``; returns (value, next_pos)."""
    raw, pos = _read_unsigned(buf, pos, len(buf) if end is None else end, MAX_VARINT_BYTES)
    if raw > 0xFFFFFFFF:
        raise CorruptRecordError("varint overflows int32", pos, expected="int32", found=raw)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int, end: int | None = None) -> tuple[int, int]:
    """Zig-zag int64 varlong at ``pos``; returns (value, next_pos)."""
    raw, pos = _read_unsigned(buf, pos, len(buf) if end is None else end, MAX_VARLONG_BYTES)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise CorruptRecordError("varlong overflows int64", pos, expected="int64", found=raw)
    return (raw >> 1) ^ -(raw & 1), pos


def read_unsigned_varint(buf, pos: int, end: int | None = None) -> tuple[int, int]:
    """Unsigned (not zig-zag) int32 varint of flexible message versions (KIP-482)."""
    raw, pos = _read_unsigned(buf, pos, len(buf) if end is None else end, MAX_VARINT_BYTES)
    if raw > 0xFFFFFFFF:
        raise CorruptRecordError("unsigned varint overflows int32", pos, expected="uint32", found=raw)
    return raw, pos


def encode_varint(value: int) -> bytes:
    """Zig-zag varint encoding of a signed int32/int64 (used by the test encoder)."""
    return encode_unsigned_varint((value << 1) ^ (value >> 63))


def encode_unsigned_varint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFFFFFFFFFF
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def java_long(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it: wrapped to signed 64 bits (Kafka sums a
    batch's base and a record's delta with no overflow check)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def need(buf_len: int, pos: int, size: int, what: str) -> None:
    """Raise TruncatedInput unless ``size`` bytes of ``what`` are available at ``pos``."""
    if pos + size > buf_len:
        raise TruncatedInput(f"{what} needs {size} bytes, {max(buf_len - pos, 0)} left", pos,
                             expected=size, found=max(buf_len - pos, 0))


def _java_replace(err: UnicodeDecodeError):
    """Java's UTF-8 decoder takes an encoded surrogate (ED A0..BF [80..BF], i.e. CESU-8) as
    one malformed sequence, one U+FFFD, where Python replaces each byte; otherwise the two
    agree (checked against Kafka's output)."""
    data, start = err.object, err.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        third = start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF
        return "\ufffd", start + (3 if third else 2)
    return "\ufffd", err.end


codecs.register_error("logscan-java-utf8", _java_replace)


def java_utf8(data: bytes) -> str:
    """``new String(bytes, UTF_8)`` of Java: malformed input becomes U+FFFD."""
    return data.decode("utf-8", "logscan-java-utf8")
