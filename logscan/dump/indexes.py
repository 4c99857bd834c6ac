"""kafka-dump-log's modes for .index, .timeindex, .txnindex and producer .snapshot files.

Kafka 4.1.1 facts kept here:

* An index's entry count is ``file length // entry size`` (a read-only AbstractIndex trusts
  the length), and dumping stops at the first entry after the first whose offset equals the
  base offset (the zero-filled preallocated tail of an active segment).
* ``.index`` verification reads the first batch at each entry's position within a slice of
  ``--max-message-size`` bytes and compares its last offset with the entry's offset.
* ``.timeindex`` verification looks the entry's offset up in the sibling ``.index`` (the
  broker's binary search, warm section included), walks batches from there to the first whose
  last offset is >= the entry's offset, and compares its largest record timestamp.
* A ``.txnindex`` entry with a version byte > 0 makes Kafka throw; a corrupt producer snapshot
  prints its CorruptSnapshotException message on stderr and nothing on stdout.
"""

from __future__ import annotations

import os
import struct

from logscan.format import index as idx
from logscan.format.batch import decode_batch_header
from logscan.format.errors import DecodeError
from logscan.format.logfile import MAGIC_OFFSET, kafka_entries
from logscan.format.snapshot import decode_producer_snapshot
from logscan.logdir.segment import Finding, open_segment
from logscan.logdir.store import is_uri

from .javaisms import java_absolute_path, java_file_name

_INT64 = struct.Struct(">q")  # a legacy entry's offset (its last offset) at byte 0
_INT32 = struct.Struct(">i")


def _base_and_log(d, path: str) -> tuple[int | None, str]:
    from .dumper import _leading_number
    name = java_file_name(path)
    stem = name.split(".")[0]
    folder = path.rsplit("/", 1)[0] if is_uri(path) else os.path.dirname(os.path.abspath(path))
    log_path = f"{folder}/{stem}.log" if is_uri(path) else os.path.join(folder, stem + ".log")
    base = _leading_number(name)
    if base is None:
        d.finding(Finding(path, -1, "name", f"file name {name!r} does not start with a base "
                          "offset (kafka-dump-log fails on it)"))
    return base, log_path


def _open_log(d, path: str, log_path: str):
    try:
        return open_segment(log_path).__enter__()
    except OSError as e:
        d.finding(Finding(path, -1, "io", f"cannot read the segment's log {log_path}: "
                          f"{e.strerror or e}; entries are printed without verification"))
        return None


def _batch_last_offset(buf, pos: int, end: int) -> int:
    """lastOffset of the batch at ``pos`` (header only, no CRC check, as Kafka's file batch)."""
    magic = buf[pos + MAGIC_OFFSET]
    if magic == 2:
        return decode_batch_header(buf, pos, end, verify_crc=False)[0].last_offset
    return _INT64.unpack_from(buf, pos)[0]  # legacy: the log header's offset is the last


def dump_index(d, path: str, shown: str) -> None:
    base, log_path = _base_and_log(d, path)
    if base is None:
        return
    with open_segment(path) as index:
        if index.size // idx.OFFSET_INDEX_ENTRY_SIZE == 0:
            d.sink.index_empty(shown)
            _partial_entry(d, path, index.size, idx.OFFSET_INDEX_ENTRY_SIZE)
            return
        if d.opts.index_sanity_check:
            _sanity(d, path, shown, idx.offset_index_sanity_findings(index.buf, base))
            return
        log = _open_log(d, path, log_path)
        mismatches = d.report.index_mismatch(java_absolute_path(path))
        disagreeing = 0
        try:
            for entry in idx.iter_offset_index(index.buf, base):
                if log is not None:
                    found = _first_batch_last_offset(d, path, log, entry)
                    if found is not None and found != entry.offset:
                        mismatches.append(entry.offset, found)
                        disagreeing += 1
                if not d.opts.verify_index_only:
                    d.sink.index_entry(entry.offset, entry.log_position)
        finally:
            if log is not None:
                log.__exit__(None, None, None)
        _index_warning(d, path, disagreeing, "Mismatches in")
        _partial_entry(d, path, index.size, idx.OFFSET_INDEX_ENTRY_SIZE)


def _index_warning(d, path: str, entries: int, block: str) -> None:
    """A note (exit status unchanged) for index entries that disagree with the log.
    kafka-dump-log (4.1.1 and 4.4.0) only warns about them, in its end-of-run blocks, and
    exits 0: so does logscan, which names the file here too."""
    if entries:
        d.note(Finding(path, -1, "index-mismatch",
                       f"{entries} index entries disagree with the log (kafka-dump-log's "
                       f"'{block}' warning on stderr; not an error, as for kafka-dump-log)"))


def _partial_entry(d, path: str, size: int, entry_size: int) -> None:
    """A finding for bytes after the last whole entry. kafka-dump-log prints nothing about
    them (AbstractIndex counts ``length / entrySize`` entries), but the broker's sanityCheck
    throws CorruptIndexException at load and rebuilds the index: a cut or torn write."""
    rest = size % entry_size
    if rest:
        d.finding(Finding(path, size - rest, "truncated",
                          f"{rest} trailing bytes, a partial {entry_size}-byte entry (ignored by "
                          f"kafka-dump-log; the broker's sanity check finds the index corrupt)", rest))


def _first_batch_last_offset(d, path: str, log, entry) -> int | None:
    pos = entry.log_position
    if pos < 0 or pos > log.size:
        d.finding(Finding(path, entry.position, "index-position",
                          f"entry for offset {entry.offset} points at log position {pos}, "
                          f"outside the {log.size}-byte log"))
        return None
    end = min(log.size, pos + d.opts.max_message_size)
    try:
        for at, _size in kafka_entries(log.buf, pos, end):
            return _batch_last_offset(log.buf, at, end)
    except DecodeError as e:
        d.finding(Finding(path, entry.position, e.reason,
                          f"entry for offset {entry.offset}: log byte {e.position}: {e.message}"))
        return None
    d.finding(Finding(path, entry.position, "index-position",
                      f"entry for offset {entry.offset}: no complete batch within "
                      f"--max-message-size {d.opts.max_message_size} bytes at log position {pos}"))
    return None


def _sanity(d, path: str, shown: str, findings) -> None:
    if not findings:
        d.sink.sanity_passed(shown)
        return
    for f in findings:
        d.err.write(f.kafka_message(java_absolute_path(path)) + "\n")
        d.finding(Finding(path, f.position, f.kind, f.message))


def _lookup(buf, entries: int, base: int, target: int) -> int:
    """OffsetIndex.lookup(target).position: the broker's search, warm section first."""
    if entries == 0:
        return 0

    def offset_at(slot: int) -> int:
        return base + _INT32.unpack_from(buf, slot * idx.OFFSET_INDEX_ENTRY_SIZE)[0]

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = offset_at(mid)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    warm = 8192 // idx.OFFSET_INDEX_ENTRY_SIZE
    first_hot = max(0, entries - 1 - warm)
    if offset_at(first_hot) < target:
        slot = search(first_hot, entries - 1)
    elif offset_at(0) > target:
        return 0
    else:
        slot = search(0, first_hot)
    return _INT32.unpack_from(buf, slot * idx.OFFSET_INDEX_ENTRY_SIZE + 4)[0]


def dump_time_index(d, path: str, shown: str) -> None:
    base, log_path = _base_and_log(d, path)
    if base is None:
        return
    with open_segment(path) as tindex:
        if d.opts.index_sanity_check:
            _sanity(d, path, shown, idx.time_index_sanity_findings(tindex.buf, base))
            return
        log = _open_log(d, path, log_path)
        offset_index_path = log_path[: -len(".log")] + ".index"
        try:
            oindex = open_segment(offset_index_path).__enter__()
        except OSError:
            oindex = None  # Kafka would create it empty; lookups then start at position 0
        abs_path = java_absolute_path(path)
        prev_ts = -1
        disagreeing = 0
        try:
            for entry in idx.iter_time_index(tindex.buf, base):
                if log is not None:
                    disagreeing += _verify_time_entry(d, path, abs_path, log, oindex, base,
                                                      entry, prev_ts)
                if not d.opts.verify_index_only:
                    d.sink.time_index_entry(entry.timestamp, entry.offset)
                prev_ts = entry.timestamp
        finally:
            for f in (log, oindex):
                if f is not None:
                    f.__exit__(None, None, None)
        _index_warning(d, path, disagreeing, "time index")
        _partial_entry(d, path, tindex.size, idx.TIME_INDEX_ENTRY_SIZE)


def _verify_time_entry(d, path, abs_path, log, oindex, base, entry, prev_ts) -> int:
    """Check one time index entry against the log like kafka-dump-log; returns 1 when it was
    put in one of Kafka's end-of-run warning blocks, else 0."""
    from .dumper import decode_any_batch, iter_batch_records
    entries = 0 if oindex is None else oindex.size // idx.OFFSET_INDEX_ENTRY_SIZE
    pos = _lookup(oindex.buf, entries, base, entry.offset) if entries else 0
    found = None
    try:
        if 0 <= pos <= log.size:
            for at, _size in kafka_entries(log.buf, pos, log.size):
                if _batch_last_offset(log.buf, at, log.size) >= entry.offset:
                    found = at
                    break
        if found is None:
            d.report.time_not_found(abs_path).append(entry.offset, -1)
            return 1
        last = _batch_last_offset(log.buf, found, log.size)
        if last != entry.offset:
            d.report.time_not_found(abs_path).append(entry.offset, last)
            return 1
        batch = decode_any_batch(log.buf, found, log.size)
        max_ts = -1
        for record in iter_batch_records(log.buf, batch, d.opts.max_decompressed):
            max_ts = max(max_ts, record.timestamp)
    except DecodeError as e:
        d.finding(Finding(path, entry.position, e.reason,
                          f"entry for offset {entry.offset}: log byte {e.position}: {e.message}"))
        return 0
    warned = 0
    if max_ts != entry.timestamp:
        d.report.time_mismatch(abs_path).append(entry.timestamp, max_ts)
        warned = 1
    if prev_ts >= entry.timestamp:
        d.report.time_out_of_order(abs_path).append(entry.timestamp, prev_ts)
        warned = 1
    return warned


def dump_txn_index(d, path: str, shown: str) -> None:
    with open_segment(path) as txn:
        try:
            for entry in idx.iter_aborted_txns(txn.buf):
                d.sink.txn_entry(entry)
        except DecodeError as e:
            d.finding(Finding.from_error(path, e))
        rest = txn.size % idx.ABORTED_TXN_SIZE
        if rest:
            d.finding(Finding(path, txn.size - rest, "truncated",
                              f"{rest} trailing bytes, too few for an aborted transaction entry "
                              "(ignored by Kafka)", rest))


def dump_producer_snapshot(d, path: str, shown: str) -> None:
    with open_segment(path) as snap:
        try:
            snapshot = decode_producer_snapshot(snap.buf)
        except DecodeError as e:
            kafka = getattr(e, "kafka_message", None)
            if kafka:
                d.err.write(kafka + "\n")
            d.finding(Finding.from_error(path, e))
            return
        for entry in snapshot.entries:
            d.sink.snapshot_entry(entry)
