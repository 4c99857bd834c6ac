"""Segment indexes: ``.index`` (OffsetIndex), ``.timeindex`` (TimeIndex), ``.txnindex``.

None of them has a header or a checksum; each is a flat array of fixed-size entries and the
base offset comes from the file name. Kafka sizes the array as ``floor(length / entry
size)``, so a partial trailing entry is silently not an entry (the sanity check flags the
length instead).

Preallocated tail. The active segment's ``.index``/``.timeindex`` are preallocated to
``segment.index.bytes`` and zero filled; after an unclean shutdown the whole preallocated
file is on disk, and Kafka's loader takes every slot as an entry. kafka-dump-log (4.1.1,
``DumpLogSegments.scala``) stops at the first entry at slot > 0 whose offset equals the base
offset (relative offset 0) -- for both kinds, without looking at the position or timestamp.
``iter_*_index`` apply that rule unless ``stop_at_preallocated_tail=False``.

Sanity checks. ``OffsetIndex.sanityCheck`` / ``TimeIndex.sanityCheck`` /
``TransactionIndex.sanityCheck`` throw ``CorruptIndexException`` on the first failure; here
they return every failure as a finding, in Kafka's order, so the first finding is the one the
broker would throw. In 4.1.1 the broker's startup (``LogSegment.sanityCheck``) only runs the
txnindex check (and requires the ``.index`` file to exist); the offset and time index checks
run in kafka-dump-log ``--index-sanity-check`` and in the remote index cache.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

from .errors import UnknownVersion
from .primitives import need

# OffsetIndex entry:
#   relativeOffset  int32  offset - base offset
#   position        int32  physical byte position of the indexed batch in the .log
OFFSET_INDEX_ENTRY = struct.Struct(">ii")
# TimeIndex entry:
#   timestamp       int64  max timestamp so far (epoch ms)
#   relativeOffset  int32  offset - base offset
TIME_INDEX_ENTRY = struct.Struct(">qi")
# AbortedTxn (TransactionIndex entry):
#   version           int16  written as 0; Kafka reads only the FIRST byte (signed) back
#   producerId        int64
#   firstOffset       int64  first offset of the aborted transaction (may be in an older segment)
#   lastOffset        int64  offset of the ABORT marker
#   lastStableOffset  int64  LSO when the marker was appended
ABORTED_TXN = struct.Struct(">hqqqq")
VERSION_BYTE = struct.Struct(">b")
ABORTED_TXN_VERSION = 0

OFFSET_INDEX_ENTRY_SIZE = OFFSET_INDEX_ENTRY.size      # 8
TIME_INDEX_ENTRY_SIZE = TIME_INDEX_ENTRY.size          # 12
ABORTED_TXN_SIZE = ABORTED_TXN.size                    # 34
RELATIVE_OFFSET = struct.Struct(">i")
_RELATIVE_OFFSET_AT = {OFFSET_INDEX_ENTRY_SIZE: 0,
                       TIME_INDEX_ENTRY_SIZE: TIME_INDEX_ENTRY.size - RELATIVE_OFFSET.size}


@dataclass(frozen=True, slots=True)
class OffsetIndexEntry:
    """``position`` is where the entry sits in the index file; ``log_position`` is Kafka's
    OffsetPosition.position, the byte position of the batch in the ``.log``."""

    position: int
    offset: int
    relative_offset: int
    log_position: int


@dataclass(frozen=True, slots=True)
class TimeIndexEntry:
    position: int
    timestamp: int
    offset: int
    relative_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxnEntry:
    """``version`` is what Kafka sees (the first byte, signed); ``raw_version`` the int16."""

    position: int
    version: int
    raw_version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def decode_offset_index_entry(buf, pos: int, base_offset: int, end: int | None = None
                              ) -> tuple[OffsetIndexEntry, int]:
    need(len(buf) if end is None else end, pos, OFFSET_INDEX_ENTRY_SIZE, "offset index entry")
    relative, log_position = OFFSET_INDEX_ENTRY.unpack_from(buf, pos)
    return (OffsetIndexEntry(pos, base_offset + relative, relative, log_position),
            pos + OFFSET_INDEX_ENTRY_SIZE)


def decode_time_index_entry(buf, pos: int, base_offset: int, end: int | None = None
                            ) -> tuple[TimeIndexEntry, int]:
    need(len(buf) if end is None else end, pos, TIME_INDEX_ENTRY_SIZE, "time index entry")
    timestamp, relative = TIME_INDEX_ENTRY.unpack_from(buf, pos)
    return TimeIndexEntry(pos, timestamp, base_offset + relative, relative), pos + TIME_INDEX_ENTRY_SIZE


def decode_aborted_txn(buf, pos: int, end: int | None = None) -> tuple[AbortedTxnEntry, int]:
    """One txnindex entry; a first byte > 0 is an unknown version, as in TransactionIndex."""
    need(len(buf) if end is None else end, pos, ABORTED_TXN_SIZE, "aborted transaction entry")
    raw_version, producer_id, first_offset, last_offset, lso = ABORTED_TXN.unpack_from(buf, pos)
    version = VERSION_BYTE.unpack_from(buf, pos)[0]
    if version > ABORTED_TXN_VERSION:
        err = UnknownVersion(f"unknown aborted transaction version {version}", pos,
                             expected=ABORTED_TXN_VERSION, found=version)
        raise err
    return (AbortedTxnEntry(pos, version, raw_version, producer_id, first_offset, last_offset, lso),
            pos + ABORTED_TXN_SIZE)


def _slots(buf, pos: int, end: int | None, size: int) -> range:
    end = len(buf) if end is None else end
    return range(pos, pos + (max(end - pos, 0) // size) * size, size)


def iter_offset_index(buf, base_offset: int, pos: int = 0, end: int | None = None, *,
                      stop_at_preallocated_tail: bool = True) -> Iterator[OffsetIndexEntry]:
    for i, at in enumerate(_slots(buf, pos, end, OFFSET_INDEX_ENTRY_SIZE)):
        entry, _ = decode_offset_index_entry(buf, at, base_offset)
        if stop_at_preallocated_tail and i > 0 and entry.relative_offset == 0:
            return
        yield entry


def iter_time_index(buf, base_offset: int, pos: int = 0, end: int | None = None, *,
                    stop_at_preallocated_tail: bool = True) -> Iterator[TimeIndexEntry]:
    for i, at in enumerate(_slots(buf, pos, end, TIME_INDEX_ENTRY_SIZE)):
        entry, _ = decode_time_index_entry(buf, at, base_offset)
        if stop_at_preallocated_tail and i > 0 and entry.relative_offset == 0:
            return
        yield entry


def iter_aborted_txns(buf, pos: int = 0, end: int | None = None) -> Iterator[AbortedTxnEntry]:
    """Every whole entry; raises UnknownVersion at the first entry Kafka would refuse."""
    for at in _slots(buf, pos, end, ABORTED_TXN_SIZE):
        yield decode_aborted_txn(buf, at)[0]


def preallocated_tail_start(buf, entry_size: int, pos: int = 0, end: int | None = None) -> int | None:
    """Byte position of the first slot > 0 with relative offset 0 (dump's stop rule), or None.

    ``entry_size`` is OFFSET_INDEX_ENTRY_SIZE or TIME_INDEX_ENTRY_SIZE."""
    relative_at = _RELATIVE_OFFSET_AT[entry_size]
    for i, at in enumerate(_slots(buf, pos, end, entry_size)):
        if i > 0 and RELATIVE_OFFSET.unpack_from(buf, at + relative_at)[0] == 0:
            return at
    return None


# --- sanity checks --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class IndexFinding:
    """A sanity-check failure. ``kind`` is stable for machines; ``kafka_message(path)`` is
    the CorruptIndexException text Kafka 4.1.1 would throw for the file at ``path``."""

    kind: str
    position: int
    message: str
    expected: object
    found: object
    _kafka_template: str

    def kafka_message(self, absolute_path: str) -> str:
        return self._kafka_template.replace("{path}", absolute_path)


def _length_finding(length: int, size: int, noun: str, pos: int) -> IndexFinding:
    return IndexFinding(
        "length_not_multiple", pos + length - length % size,
        f"{length} bytes is not a multiple of the {size}-byte entry", f"multiple of {size}", length,
        f"{noun} {{path}} is corrupt, found {length} bytes which is neither positive nor a multiple of {size}")


def offset_index_sanity_findings(buf, base_offset: int, pos: int = 0, end: int | None = None
                                 ) -> list[IndexFinding]:
    """OffsetIndex.sanityCheck: last entry's offset >= base offset, length a multiple of 8."""
    end = len(buf) if end is None else end
    slots = _slots(buf, pos, end, OFFSET_INDEX_ENTRY_SIZE)
    last = decode_offset_index_entry(buf, slots[-1], base_offset)[0] if slots else None
    return offset_index_checks(end - pos, last, base_offset, pos)


def offset_index_checks(length: int, last: OffsetIndexEntry | None, base_offset: int, pos: int = 0
                        ) -> list[IndexFinding]:
    """OffsetIndex.sanityCheck from what it reads: the index's ``length`` in bytes (from
    ``pos``) and its ``last`` whole entry (None: none), so a reader can read just those."""
    findings = []
    if last is not None and last.offset < base_offset:
        findings.append(IndexFinding(
            "last_offset_below_base", last.position,
            f"last offset {last.offset} is below the base offset {base_offset}",
            f">= {base_offset}", last.offset,
            f"Corrupt index found, index file {{path}} has non-zero size but the last offset is "
            f"{last.offset} which is less than the base offset {base_offset}"))
    if length % OFFSET_INDEX_ENTRY_SIZE:
        findings.append(_length_finding(length, OFFSET_INDEX_ENTRY_SIZE, "Index file", pos))
    return findings


def time_index_sanity_findings(buf, base_offset: int, pos: int = 0, end: int | None = None
                               ) -> list[IndexFinding]:
    """TimeIndex.sanityCheck: last timestamp >= first, last offset >= base, length % 12 == 0.

    A zero-filled preallocated tail fails the timestamp rule (0 < first timestamp), which is
    why an unclean shutdown's time index is rebuilt.
    """
    end = len(buf) if end is None else end
    slots = _slots(buf, pos, end, TIME_INDEX_ENTRY_SIZE)
    first = decode_time_index_entry(buf, slots[0], base_offset)[0] if slots else None
    last = decode_time_index_entry(buf, slots[-1], base_offset)[0] if slots else None
    return time_index_checks(end - pos, first, last, base_offset, pos)


def time_index_checks(length: int, first: TimeIndexEntry | None, last: TimeIndexEntry | None,
                      base_offset: int, pos: int = 0) -> list[IndexFinding]:
    """TimeIndex.sanityCheck from what it reads: the ``length`` and the ``first`` and
    ``last`` whole entries (None: none)."""
    findings = []
    if first is not None and last is not None:
        if last.timestamp < first.timestamp:
            findings.append(IndexFinding(
                "last_timestamp_below_first", last.position,
                f"last timestamp {last.timestamp} is below the first timestamp {first.timestamp}",
                f">= {first.timestamp}", last.timestamp,
                f"Corrupt time index found, time index file ({{path}}) has non-zero size but the last "
                f"timestamp is {last.timestamp} which is less than the first timestamp {first.timestamp}"))
        if last.offset < base_offset:
            findings.append(IndexFinding(
                "last_offset_below_base", last.position,
                f"last offset {last.offset} is below the base offset {base_offset}",
                f">= {base_offset}", last.offset,
                f"Corrupt time index found, time index file ({{path}}) has non-zero size but the last "
                f"offset is {last.offset} which is less than the first offset {base_offset}"))
    if length % TIME_INDEX_ENTRY_SIZE:
        findings.append(_length_finding(length, TIME_INDEX_ENTRY_SIZE, "Time index file", pos))
    return findings


def txn_index_sanity_findings(buf, base_offset: int, pos: int = 0, end: int | None = None
                              ) -> list[IndexFinding]:
    """TransactionIndex.sanityCheck: every lastOffset >= the segment's base offset.

    Kafka stops at an unknown entry version (KafkaException, not CorruptIndexException); that
    is reported as an ``unknown_version`` finding and ends the check, as it ends Kafka's.
    A partial trailing entry is ignored by Kafka and is not a finding here.
    """
    findings = []
    for at in _slots(buf, pos, end, ABORTED_TXN_SIZE):
        try:
            txn, _ = decode_aborted_txn(buf, at)
        except UnknownVersion as err:
            findings.append(IndexFinding(
                "unknown_version", at, err.message, ABORTED_TXN_VERSION, err.found,
                f"Unexpected aborted transaction version {err.found} in transaction index {{path}}, "
                f"current version is {ABORTED_TXN_VERSION}"))
            break
        if txn.last_offset < base_offset:
            findings.append(IndexFinding(
                "last_offset_below_base", at,
                f"aborted transaction's last offset {txn.last_offset} is below the base offset {base_offset}",
                f">= {base_offset}", txn.last_offset,
                f"Last offset of aborted transaction {format_aborted_txn_repr(txn)} in index {{path}} "
                f"is less than start offset {base_offset}"))
    return findings


# --- kafka-dump-log text ---------------------------------------------------------------------

def format_offset_index_entry(entry: OffsetIndexEntry) -> str:
    return f"offset: {entry.offset} position: {entry.log_position}"


def format_time_index_entry(entry: TimeIndexEntry) -> str:
    return f"timestamp: {entry.timestamp} offset: {entry.offset}"


def format_aborted_txn(entry: AbortedTxnEntry) -> str:
    return (f"version: {entry.version} producerId: {entry.producer_id} firstOffset: {entry.first_offset} "
            f"lastOffset: {entry.last_offset} lastStableOffset: {entry.last_stable_offset}")


def format_aborted_txn_repr(entry: AbortedTxnEntry) -> str:
    """AbortedTxn.toString, which Kafka embeds in its txnindex sanity-check message."""
    return (f"AbortedTxn(version={entry.version}, producerId={entry.producer_id}, "
            f"firstOffset={entry.first_offset}, lastOffset={entry.last_offset}, "
            f"lastStableOffset={entry.last_stable_offset})")


# --- encoders (tests, fixtures) ---------------------------------------------------------------

def encode_offset_index(base_offset: int, entries) -> bytes:
    """``entries``: (offset, log_position) pairs."""
    return b"".join(OFFSET_INDEX_ENTRY.pack(o - base_offset, p) for o, p in entries)


def encode_time_index(base_offset: int, entries) -> bytes:
    """``entries``: (timestamp, offset) pairs."""
    return b"".join(TIME_INDEX_ENTRY.pack(t, o - base_offset) for t, o in entries)


def encode_aborted_txns(entries, version: int = ABORTED_TXN_VERSION) -> bytes:
    """``entries``: (producer_id, first_offset, last_offset, last_stable_offset) tuples."""
    return b"".join(ABORTED_TXN.pack(version, *e) for e in entries)

