"""Producer-state snapshot, ``<20-digit offset>.snapshot`` (ProducerStateManager.readSnapshot).

The broker writes one of these on segment roll and on clean shutdown; the file name's offset
is exclusive (the state after applying every offset below it). Version 1 is the only version
ever written (since 0.11, now generated from ``ProducerSnapshot.json``). The CRC-32C covers
everything from the entry count to the end of the file, so bytes after the last entry are
inside the CRC.

Error policy. Kafka refuses the whole file on any problem (``CorruptSnapshotException``) and
falls back to an older snapshot. A forensic reader wants more: when only the CRC is wrong the
entries are still structurally sound and are often the only record of a producer's state.
So ``decode_producer_snapshot`` raises ``SnapshotCrcMismatch`` by default, and that error
carries the decoded snapshot (``err.snapshot``); ``verify_crc=False`` returns the snapshot
with ``crc_valid=False`` instead. Every other problem (short file, unknown version, negative
count, bytes after the counted entries) is a located error with no partial result.

Every error raised here also carries ``kafka_message``: the exact text kafka-dump-log 4.1.1
prints to stderr for that file (the CorruptSnapshotException message), so a renderer never
re-derives Kafka's wording. Kafka reads a short or over-counted file with a generic buffer
underflow whose message is ``null``; that is reproduced verbatim.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterator

import crc32c

from .errors import CorruptRecordError, CrcMismatch, DecodeError, TruncatedInput, UnknownVersion
from .batch import decrement_sequence

# ProducerSnapshot (version 1):
#   Version          int16   the only known version is 1
#   Crc              uint32  CRC-32C of bytes [6, EOF)
#   ProducerEntries  int32 count, then count x ProducerEntry
HEADER = struct.Struct(">hIi")
VERSION_FIELD = struct.Struct(">h")
CRC_FIELD_OFFSET = VERSION_FIELD.size                  # 2
CRC_START_OFFSET = CRC_FIELD_OFFSET + 4                # 6 (Kafka: PRODUCER_ENTRIES_OFFSET)
COUNT_FIELD_OFFSET = CRC_START_OFFSET                  # 6
ENTRIES_OFFSET = HEADER.size                           # 10

# ProducerEntry:
#   ProducerId             int64
#   Epoch                  int16
#   LastSequence           int32  sequence of the last record of the newest retained batch
#   LastOffset             int64  -1 when no data batch is retained (e.g. only a marker)
#   OffsetDelta            int32  lastOffset - firstOffset of that batch
#   Timestamp              int64  producer's lastTimestamp (epoch ms)
#   CoordinatorEpoch       int32
#   CurrentTxnFirstOffset  int64  -1 when no transaction is open
ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = ENTRY.size                                # 46

SNAPSHOT_VERSION = 1
NO_SEQUENCE = -1
NO_OFFSET = -1


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer as stored in a snapshot; ``position`` is the entry's byte position."""

    position: int
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka keeps the batch (sequence/offset) part only when ``last_offset >= 0``."""
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        """ProducerStateEntry.firstSeq: NO_SEQUENCE without a batch, else wrapped lastSeq - delta."""
        if not self.has_batch_metadata:
            return NO_SEQUENCE
        return decrement_sequence(self.last_sequence, self.offset_delta)

    @property
    def first_offset(self) -> int:
        """First offset of the retained batch, or -1 (ProducerStateEntry.firstDataOffset)."""
        return self.last_offset - self.offset_delta if self.has_batch_metadata else NO_OFFSET

    @property
    def has_ongoing_transaction(self) -> bool:
        """Kafka maps any negative CurrentTxnFirstOffset to OptionalLong.empty()."""
        return self.current_txn_first_offset >= 0


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
    """A decoded snapshot; ``position``/``end`` delimit it in the buffer it came from.

    Its ``count`` entries are checked but decoded only when iterated (``iter_entries``): held,
    a snapshot costs its buffer (46 bytes a producer), where the decoded entries cost about
    270 each (issue 33: the scan holds each of a replica's snapshots while it reads the log).
    """

    position: int
    end: int
    version: int
    crc: int
    computed_crc: int
    count: int
    buf: object = field(repr=False, compare=False)  # what it was decoded from (bytes, memoryview, mmap)

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc

    def iter_entries(self) -> Iterator[ProducerSnapshotEntry]:
        """The entries in file order, decoded one at a time from ``buf``."""
        buf = self.buf
        start = self.position + ENTRIES_OFFSET
        for at in range(start, start + self.count * ENTRY_SIZE, ENTRY_SIZE):
            yield ProducerSnapshotEntry(at, *ENTRY.unpack_from(buf, at))

    @property
    def entries(self) -> tuple[ProducerSnapshotEntry, ...]:
        """Every entry decoded (iter_entries, for a snapshot to be read whole)."""
        return tuple(self.iter_entries())


class SnapshotCrcMismatch(CrcMismatch):
    """Stored and computed CRC differ; ``snapshot`` still holds the structurally valid entries."""

    def __init__(self, snapshot: ProducerSnapshot):
        super().__init__(
            f"producer snapshot CRC mismatch: stored {snapshot.crc}, computed {snapshot.computed_crc}",
            snapshot.position + CRC_FIELD_OFFSET, expected=snapshot.computed_crc, found=snapshot.crc)
        self.snapshot = snapshot
        self.kafka_message = (
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snapshot.crc}. "
            f"Computed crc: {snapshot.computed_crc}")


def _schema_error(error: DecodeError, detail: str) -> DecodeError:
    error.kafka_message = f"Snapshot failed schema validation: {detail}"
    return error


def decode_producer_snapshot(buf, pos: int = 0, end: int | None = None, *,
                             verify_crc: bool = True) -> ProducerSnapshot:
    """Decode the snapshot occupying ``buf[pos:end]`` (a whole file: the CRC runs to ``end``).

    Checks run in Kafka's order: header, version, count, entries, then the CRC.
    """
    end = len(buf) if end is None else end
    size = end - pos
    if size < HEADER.size:
        if size >= VERSION_FIELD.size:
            version = VERSION_FIELD.unpack_from(buf, pos)[0]
            if version != SNAPSHOT_VERSION:
                raise _unknown_version(version, pos)
        raise _schema_error(TruncatedInput(
            f"producer snapshot header needs {HEADER.size} bytes, {max(size, 0)} present", pos,
            expected=HEADER.size, found=max(size, 0)), "null")
    version, crc, count = HEADER.unpack_from(buf, pos)
    if version != SNAPSHOT_VERSION:
        raise _unknown_version(version, pos)
    remaining = size - ENTRIES_OFFSET
    if count < 0:
        raise _schema_error(CorruptRecordError(
            f"negative producer entry count {count}", pos + COUNT_FIELD_OFFSET,
            expected=">= 0", found=count), "non-nullable field producerEntries was serialized as null")
    if count * ENTRY_SIZE > remaining:
        # Kafka first compares the count with the bytes left (not bytes / 46), then underflows.
        detail = ("null" if count <= remaining else
                  f"Tried to allocate a collection of size {count}, but there are only "
                  f"{remaining} bytes remaining.")
        raise _schema_error(TruncatedInput(
            f"{count} producer entries need {count * ENTRY_SIZE} bytes, {remaining} present",
            pos + ENTRIES_OFFSET, expected=count * ENTRY_SIZE, found=remaining), detail)
    entries_end = pos + ENTRIES_OFFSET + count * ENTRY_SIZE
    if entries_end != end:
        # Kafka itself ignores these bytes (they are inside the CRC); never written by a broker.
        err = CorruptRecordError(
            f"{end - entries_end} bytes after the {count} counted producer entries", entries_end,
            expected=count * ENTRY_SIZE, found=remaining)
        err.kafka_message = None
        raise err
    with memoryview(buf) as view, view[pos + CRC_START_OFFSET:end] as covered:
        computed = crc32c.crc32c(covered)
    snapshot = ProducerSnapshot(pos, end, version, crc, computed, count, buf)
    if verify_crc and not snapshot.crc_valid:
        raise SnapshotCrcMismatch(snapshot)
    return snapshot


def _unknown_version(version: int, pos: int) -> DecodeError:
    # readSnapshot throws CorruptSnapshotException inside its own try block, which wraps it again.
    return _schema_error(UnknownVersion(
        f"unknown producer snapshot version {version}", pos,
        expected=SNAPSHOT_VERSION, found=version),
        f"Snapshot contained an unknown file version {version}")


def encode_producer_snapshot(entries, version: int = SNAPSHOT_VERSION, crc: int | None = None) -> bytes:
    """Bytes of a snapshot holding ``entries`` (tuples or entries; used by tests and fixtures)."""
    body = bytearray(struct.pack(">i", len(entries)))
    for e in entries:
        fields = e if isinstance(e, tuple) else (
            e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        body += ENTRY.pack(*fields)
    computed = crc32c.crc32c(bytes(body))
    return VERSION_FIELD.pack(version) + struct.pack(">I", computed if crc is None else crc) + bytes(body)


def format_snapshot_entry(entry: ProducerSnapshotEntry) -> str:
    """The line kafka-dump-log 4.1.1 prints for one snapshot entry (without the newline).

    Kafka prints ``lastTimestamp: T `` with a trailing space, then the batch part only when
    the entry has batch metadata, so entries without one end in a space.
    """
    txn = (f"OptionalLong[{entry.current_txn_first_offset}]" if entry.has_ongoing_transaction
           else "OptionalLong.empty")
    line = (f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: {txn} "
            f"lastTimestamp: {entry.timestamp} ")
    if entry.has_batch_metadata:
        line += (f"firstSequence: {entry.first_sequence} lastSequence: {entry.last_sequence} "
                 f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
                 f"timestamp: {entry.timestamp}")
    return line
