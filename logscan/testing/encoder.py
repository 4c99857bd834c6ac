"""A small encoder for what a Kafka broker writes, for tests and benchmark segments.

It writes the bytes Kafka's MemoryRecordsBuilder would (checked against kafka-dump-log in
tests/format/test_logfile.py), and can also write what Kafka would not (wrong CRCs, counts,
lengths) so the decoders' error paths can be exercised.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from crc32c import crc32c

from logscan.format import compression
from logscan.format.batch import (
    BATCH_HEADER, CONTROL_FLAG_MASK, DELETE_HORIZON_FLAG_MASK, LOG_OVERHEAD, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_FLAG_MASK,
)
from logscan.format.control import ABORT, COMMIT, encode_control_key, encode_end_txn_marker
from logscan.format.primitives import encode_varint

_OFFSET_LENGTH = struct.Struct(">qi")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True)
class Rec:
    """One record to encode: ``timestamp`` is absolute, ``offset_delta`` defaults to its index."""
    value: bytes | None = b""
    key: bytes | None = None
    headers: Sequence[tuple[str | bytes, bytes | None]] = field(default_factory=tuple)  # bytes: a key as is
    timestamp: int = 0
    offset_delta: int | None = None


def _bytes_field(data: bytes | None) -> bytes:
    if data is None:
        return b"\x01"  # zig-zag -1
    return encode_varint(len(data)) + data


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Sequence[tuple[str, bytes | None]] = (), attributes: int = 0) -> bytes:
    """One DefaultRecord: length varint, then the body."""
    parts = [bytes([attributes & 0xFF]), encode_varint(timestamp_delta), encode_varint(offset_delta),
             _bytes_field(key), _bytes_field(value), encode_varint(len(headers))]
    for hkey, hvalue in headers:
        parts.append(_bytes_field(hkey.encode() if isinstance(hkey, str) else hkey))
        parts.append(_bytes_field(hvalue))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def encode_batch(records: Sequence[Rec] = (), *, base_offset: int = 0, partition_leader_epoch: int = -1,
                 codec: int = compression.NONE, log_append_time: int | None = None,
                 transactional: bool = False, control: bool = False,
                 producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                 base_sequence: int = NO_SEQUENCE, delete_horizon_ms: int | None = None,
                 base_timestamp: int | None = None, max_timestamp: int | None = None,
                 last_offset_delta: int | None = None, records_count: int | None = None,
                 crc: int | None = None, extra_attributes: int = 0) -> bytes:
    """A magic v2 batch. Overrides (``records_count``, ``crc``, ...) allow corrupt batches.

    ``log_append_time`` sets the LogAppendTime bit and the max timestamp, as the broker does.
    An empty ``records`` gives a cleaner-style empty batch (base timestamp -1).
    """
    deltas = [r.offset_delta if r.offset_delta is not None else i for i, r in enumerate(records)]
    stamps = [r.timestamp for r in records]
    if base_timestamp is None:
        base_timestamp = delete_horizon_ms if delete_horizon_ms is not None else (stamps[0] if stamps else -1)
    if max_timestamp is None:
        max_timestamp = log_append_time if log_append_time is not None else max(stamps, default=-1)
    if last_offset_delta is None:
        last_offset_delta = max(deltas, default=0)
    payload = b"".join(encode_record(d, r.timestamp - base_timestamp, r.key, r.value, r.headers)
                       for d, r in zip(deltas, records))
    if codec != compression.NONE:
        payload = compression.compress(codec, payload, magic=2)
    attributes = codec | extra_attributes
    if log_append_time is not None:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return _seal_batch(base_offset, partition_leader_epoch, attributes, last_offset_delta,
                       base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                       len(records) if records_count is None else records_count, payload, crc)


def _seal_batch(base_offset, ple, attributes, last_offset_delta, base_ts, max_ts, pid, epoch, seq,
                count, payload: bytes, crc: int | None) -> bytes:
    length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload)
    head = bytearray(BATCH_HEADER.pack(base_offset, length, ple, 2, 0, attributes, last_offset_delta,
                                       base_ts, max_ts, pid, epoch, seq, count))
    if crc is None:
        crc = crc32c(payload, crc32c(memoryview(head)[21:]))
    struct.pack_into(">I", head, 17, crc)
    return bytes(head) + payload


def end_txn_marker_batch(*, commit: bool, coordinator_epoch: int, base_offset: int = 0,
                         partition_leader_epoch: int = -1, producer_id: int, producer_epoch: int,
                         timestamp: int, log_append_time: int | None = None) -> bytes:
    """MemoryRecords.withEndTransactionMarker: a 78-byte transactional control batch."""
    key = encode_control_key(COMMIT if commit else ABORT)
    return encode_batch([Rec(encode_end_txn_marker(coordinator_epoch), key, (), timestamp)],
                        base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                        transactional=True, control=True, producer_id=producer_id,
                        producer_epoch=producer_epoch, log_append_time=log_append_time)


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    """The same v2 batch at another offset: the offset is outside the CRC, so nothing else
    changes. This is the bulk path for benchmark segments."""
    return _OFFSET_LENGTH.pack(base_offset, _INT32.unpack_from(batch, 8)[0]) + batch[12:]


def bulk_segment(template: bytes, count: int, *, first_offset: int = 0) -> Iterator[bytes]:
    """``count`` copies of a v2 batch at consecutive offsets (for GiB-sized test segments)."""
    records = _INT32.unpack_from(template, 23)[0] + 1  # last offset delta + 1
    tail = template[8:]
    offset = first_offset
    for _ in range(count):
        yield struct.pack(">q", offset) + tail
        offset += records


# -- legacy message sets (magic 0 and 1) --------------------------------------------------------

def _legacy_bytes(data: bytes | None) -> bytes:
    return b"\xff\xff\xff\xff" if data is None else _INT32.pack(len(data)) + data


def legacy_message(offset: int, value: bytes | None, key: bytes | None = None, *, magic: int = 1,
                   timestamp: int = -1, attributes: int = 0, crc: int | None = None) -> bytes:
    """One log entry holding one LegacyRecord: offset, size, CRC-32 of the rest, magic,
    attributes, timestamp (v1 only), then key and value with int32 lengths (-1 = null)."""
    if magic == 0:
        fixed = bytes([0, attributes & 0xFF])
    else:
        fixed = struct.pack(">bbq", 1, attributes, timestamp)
    covered = fixed + _legacy_bytes(key) + _legacy_bytes(value)
    if crc is None:
        crc = zlib.crc32(covered)
    return _OFFSET_LENGTH.pack(offset, 4 + len(covered)) + struct.pack(">I", crc) + covered


def legacy_wrapper(inner: Sequence[tuple[bytes | None, bytes | None, int]], *, offset: int, magic: int,
                   codec: int, timestamp: int = -1, log_append_time: bool = False,
                   inner_offsets: Iterable[int] | None = None) -> bytes:
    """A compressed wrapper of ``inner`` (key, value, timestamp) messages.

    ``offset`` is the wrapper's (the last inner message's absolute) offset. Inner offsets are
    absolute for magic 0 and relative (0..n-1) for magic 1, as the old producers wrote them.
    """
    n = len(inner)
    if inner_offsets is None:
        inner_offsets = range(offset - n + 1, offset + 1) if magic == 0 else range(n)
    nested = b"".join(legacy_message(o, v, k, magic=magic, timestamp=ts)
                      for o, (k, v, ts) in zip(inner_offsets, inner))
    attributes = codec | (TIMESTAMP_TYPE_MASK if log_append_time and magic == 1 else 0)
    return legacy_message(offset, compression.compress(codec, nested, magic=magic), None, magic=magic,
                          timestamp=timestamp, attributes=attributes)
