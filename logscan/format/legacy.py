"""Legacy message sets, magic v0 and v1 (``LegacyRecord``, ``AbstractLegacyRecordBatch``).

A log entry holds one message. A compressed "wrapper" message carries, as its value, a whole
nested message set of uncompressed inner messages. Offsets of inner messages are absolute
for magic 0 and relative (0..n-1) for magic 1, where the wrapper offset is that of the last
inner message (KIP-31); inner v1 messages take the wrapper's timestamp type, and its
timestamp when that is LogAppendTime (KIP-32).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, replace
from typing import Iterator

from . import compression
from .errors import CorruptRecordError, DecodeError, TruncatedInput, UnknownMagic

# Log overhead (Offset int64, MessageSize int32), then LegacyRecord:
#   CRC uint32 (CRC-32 of Magic..end), Magic int8, Attributes int8 (bits 0-2 codec,
#   bit 3 timestamp type, v1 only), Timestamp int64 (v1 only),
#   KeyLength int32 (-1 = null) + Key, ValueLength int32 (-1 = null) + Value.
LEGACY_V0_HEADER = struct.Struct(">qiIbb")
LEGACY_V1_HEADER = struct.Struct(">qiIbbq")
_INT32 = struct.Struct(">i")
LOG_OVERHEAD = 12
CRC_COVERAGE_START = 16  # from the magic byte
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # + timestamp
TIMESTAMP_TYPE_MASK = 0x08
NO_TIMESTAMP = -1
MAX_MESSAGE_SIZE = 2**31 - 1


@dataclass(frozen=True, slots=True)
class LegacyBatch:
    """One legacy log entry (or an inner message of a compressed wrapper).

    ``position`` is the entry's file position; for inner messages it is the wrapper's.
    ``timestamp``/``timestamp_type`` are what Kafka reports (inherited from a wrapper).
    """
    position: int
    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    timestamp_type: str  # NoTimestampType (v0), CreateTime or LogAppendTime
    key: bytes | None
    value: bytes | None
    crc_valid: bool

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.message_size

    @property
    def next_position(self) -> int:
        return self.position + LOG_OVERHEAD + self.message_size

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def codec(self) -> str:
        return compression.codec_name(self.compression)

    @property
    def is_compressed(self) -> bool:
        return self.compression != compression.NONE

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def is_valid(self) -> bool:
        return self.crc_valid


def _timestamp_type(magic: int, attributes: int) -> str:
    if magic == 0:
        return "NoTimestampType"
    return "LogAppendTime" if attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


def decode_legacy_entry(buf, pos: int, end: int | None = None, *,
                        verify_crc: bool = True) -> tuple[LegacyBatch, int]:
    """Decode the v0/v1 log entry at ``pos``; returns (entry, next_pos).

    A CRC mismatch gives ``crc_valid=False``, not an error (kafka-dump-log: isvalid: false).
    """
    if end is None:
        end = len(buf)
    if pos + LOG_OVERHEAD > end:
        raise TruncatedInput("message log overhead needs 12 bytes", pos,
                             expected=LOG_OVERHEAD, found=max(end - pos, 0))
    size = _INT32.unpack_from(buf, pos + 8)[0]
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
            pos + 8, expected=f">= {RECORD_OVERHEAD_V0}", found=size)
    next_pos = pos + LOG_OVERHEAD + size
    if next_pos > end:
        raise TruncatedInput(f"message of {size + LOG_OVERHEAD} bytes has only {end - pos} left", pos,
                             expected=size + LOG_OVERHEAD, found=end - pos)
    magic = buf[pos + 16]
    if magic == 0:
        offset, _, crc, _, attributes = LEGACY_V0_HEADER.unpack_from(buf, pos)
        timestamp, p = NO_TIMESTAMP, pos + LEGACY_V0_HEADER.size
    elif magic == 1:
        if size < RECORD_OVERHEAD_V1:
            raise CorruptRecordError(
                f"Found record size {size} smaller than the v1 record overhead ({RECORD_OVERHEAD_V1})",
                pos + 8, expected=f">= {RECORD_OVERHEAD_V1}", found=size)
        offset, _, crc, _, attributes, timestamp = LEGACY_V1_HEADER.unpack_from(buf, pos)
        p = pos + LEGACY_V1_HEADER.size
    else:
        raise UnknownMagic(f"expected a magic 0 or 1 message, found magic {magic}", pos + 16,
                           expected="0 or 1", found=magic)
    key, p = _sized_bytes(buf, p, next_pos, "key")
    value, p = _sized_bytes(buf, p, next_pos, "value")
    crc_valid = True
    if verify_crc:
        crc_valid = zlib.crc32(memoryview(buf)[pos + CRC_COVERAGE_START:next_pos]) == crc
    entry = LegacyBatch(pos, offset, size, crc, magic, attributes & 0xFF, timestamp,
                        _timestamp_type(magic, attributes), key, value, crc_valid)
    return entry, next_pos


def _sized_bytes(buf, p: int, end: int, what: str) -> tuple[bytes | None, int]:
    if p + 4 > end:
        raise CorruptRecordError(f"message {what} length runs past the message", p,
                                 expected=4, found=end - p)
    n = _INT32.unpack_from(buf, p)[0]
    p += 4
    if n < 0:
        return None, p
    if p + n > end:
        raise CorruptRecordError(f"message {what} of {n} bytes runs past the message", p - 4,
                                 expected=f"<= {end - p}", found=n)
    return bytes(memoryview(buf)[p:p + n]), p + n


def iter_legacy_records(entry: LegacyBatch, *, max_decompressed: int = compression.DEFAULT_MAX_OUTPUT,
                        max_message_size: int = MAX_MESSAGE_SIZE,
                        budget: compression.DecompressionBudget | None = None) -> Iterator[LegacyBatch]:
    """The messages of an entry: itself if uncompressed, else the inner messages with Kafka's
    absolute offsets and inherited timestamps (AbstractLegacyRecordBatch.DeepRecordsIterator).

    The nested set is decompressed and walked whole before the first message comes out, as
    Kafka does (a v1 wrapper's relative offsets are only resolved by its last inner message,
    and a bad inner message fails the entry before any is shown); the messages are then made
    one at a time as they are asked for, so memory holds the decompressed bytes (capped at
    ``max_decompressed``) and one message, never a list of them: a wrapper of a million empty
    inner messages costs its decompressed size. ``budget``: the file's (compression.decompress).
    """
    if not entry.is_compressed:
        yield entry
        return
    nested = _nested(entry, max_decompressed, budget)
    last = None
    for message in _inner_messages(entry, nested, max_message_size):
        last = message
    if last is None:
        raise CorruptRecordError("Found invalid compressed record set with no inner records",
                                 entry.position, expected=">= 1 inner message", found=0)
    base = 0
    if entry.magic == 1:
        if entry.offset == 0:
            base = 0  # some librdkafka versions wrote wrapper offset 0: treat inner as absolute
        elif entry.offset < last.offset:
            raise CorruptRecordError(
                "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                f"'{entry.offset}' is less than the last inner message offset '{last.offset}' and it is not zero.",
                entry.position, expected=f">= {last.offset}", found=entry.offset)
        else:
            base = entry.offset - last.offset
    for message in _inner_messages(entry, nested, max_message_size):
        yield replace(message, offset=base + message.offset) if base else message


def _nested(entry: LegacyBatch, max_decompressed: int, budget=None) -> bytes:
    """A compressed wrapper's value, decompressed (at most ``max_decompressed`` bytes)."""
    if entry.compression == compression.ZSTD:
        raise CorruptRecordError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {entry.magic}",
            entry.position + 17, expected="gzip, snappy or lz4", found="zstd")
    if entry.value is None:
        raise CorruptRecordError(
            f"Found invalid compressed record set with null value (magic = {entry.magic})",
            entry.position, expected="compressed value", found=None)
    # The value is the entry's last field; an empty one is located at its length field, so
    # that the error names a byte of this entry rather than the first byte of the next.
    value_at = entry.next_position - len(entry.value) - (0 if entry.value else 4)
    return compression.decompress(entry.compression, entry.value, magic=entry.magic,
                                  max_output=max_decompressed, position=value_at, budget=budget)


def _inner_messages(entry: LegacyBatch, nested: bytes, max_message_size: int) -> Iterator[LegacyBatch]:
    """The inner messages of a decompressed wrapper, in order, made one at a time (offsets as
    written: relative in a v1 wrapper)."""
    wrapper_lat = entry.magic == 1 and entry.timestamp_type == "LogAppendTime"
    p = 0
    while p + LOG_OVERHEAD <= len(nested):
        size = _INT32.unpack_from(nested, p + 8)[0]
        if size < RECORD_OVERHEAD_V0 or size > max_message_size:
            raise CorruptRecordError(
                f"Inner record size {size} is outside [{RECORD_OVERHEAD_V0}, {max_message_size}] "
                f"(at byte {p} of the decompressed wrapper)", entry.position, found=size)
        if p + LOG_OVERHEAD + size > len(nested):
            return  # DataLogInputStream: a partial trailing inner message ends the set
        try:
            message, p = decode_legacy_entry(nested, p)
        except DecodeError as e:
            raise type(e)(f"{e.message} (at byte {e.position} of the decompressed wrapper)",
                          entry.position, e.expected, e.found) from None
        if message.is_compressed:
            raise CorruptRecordError("Inner messages must not be compressed", entry.position,
                                     expected="codec none", found=message.codec)
        if message.magic == 1:
            message = replace(message, timestamp_type=entry.timestamp_type,
                              timestamp=entry.timestamp if wrapper_lat else message.timestamp)
        yield replace(message, position=entry.position)
