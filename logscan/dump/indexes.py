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

Indexes and the log they point into are read, never mapped (logscan.logdir.segment.dump_windows):
an index a chunk of whole entries at a time, the sanity checks' first and last entries alone,
the offset index's binary search an entry at a time, the log a window from each position an
entry names. So a huge index holds a chunk of memory, and a file that shrinks under the dump is
a located ``shrank`` finding, never a SIGBUS.
"""

from __future__ import annotations

import dataclasses
import os
import struct

from logscan.format import index as idx
from logscan.format.batch import decode_batch_header
from logscan.format.errors import DecodeError
from logscan.format.logfile import MAGIC_OFFSET, kafka_entries
from logscan.format.snapshot import decode_producer_snapshot
from logscan.logdir.segment import Finding, dump_windows, open_segment
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
        return dump_windows(log_path)
    except OSError as e:
        d.finding(Finding(path, -1, "io", f"cannot read the segment's log {log_path}: "
                          f"{e.strerror or e}; entries are printed without verification"))
        return None


#: Index bytes read at a time: a whole number of entries of every index (8, 12 and 34 bytes).
INDEX_CHUNK_BYTES = 408 * 2570  # ~1 MiB


def _entries(index, decode, entry_size: int, base: int, *, preallocated_stop: bool = True):
    """The whole entries of an index file (``index``: a source of windows), read a chunk at a
    time, located in the file; with ``preallocated_stop``, Kafka's dump stops at the first
    entry after the first with relative offset 0 (a preallocated zero tail)."""
    size = index.size - index.size % entry_size
    for start in range(0, size, INDEX_CHUNK_BYTES):
        stop = min(size, start + INDEX_CHUNK_BYTES)
        win = index.map(start, stop)
        try:
            for at in range(start - win.base, stop - win.base, entry_size):
                entry = decode(win.buf, at, base)[0]
                if preallocated_stop and at + win.base > 0 and entry.relative_offset == 0:
                    return
                yield dataclasses.replace(entry, position=at + win.base)
        finally:
            win.close()


def _entry_at(index, decode, entry_size: int, position: int, base: int):
    win = index.map(position, position + entry_size)
    try:
        return dataclasses.replace(decode(win.buf, position - win.base, base)[0], position=position)
    finally:
        win.close()


def _ends(index, decode, entry_size: int, base: int):
    """The first and last whole entries of an index (None, None when it has none)."""
    count = index.size // entry_size
    if not count:
        return None, None
    return (_entry_at(index, decode, entry_size, 0, base),
            _entry_at(index, decode, entry_size, (count - 1) * entry_size, base))


def _log_window(log, pos: int, stop: int):
    """A window of the log and the window-relative bounds of bytes [pos, stop)."""
    win = log.map(pos, stop)
    return win, pos - win.base, stop - win.base


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
    with dump_windows(path) as index:
        if index.size // idx.OFFSET_INDEX_ENTRY_SIZE == 0:
            d.sink.index_empty(shown)
            _partial_entry(d, path, index.size, idx.OFFSET_INDEX_ENTRY_SIZE)
            return
        if d.opts.index_sanity_check:
            _, last = _ends(index, idx.decode_offset_index_entry, idx.OFFSET_INDEX_ENTRY_SIZE, base)
            _sanity(d, path, shown, idx.offset_index_checks(index.size, last, base))
            return
        log = _open_log(d, path, log_path)
        mismatches = d.report.index_mismatch(java_absolute_path(path))
        disagreeing = 0
        try:
            for entry in _entries(index, idx.decode_offset_index_entry, idx.OFFSET_INDEX_ENTRY_SIZE, base):
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
    win, at, end = _log_window(log, pos, min(log.size, pos + d.opts.max_message_size))
    try:
        for first, _size in kafka_entries(win.buf, at, end):
            return _batch_last_offset(win.buf, first, end)
    except DecodeError as e:
        d.finding(Finding(path, entry.position, e.reason,
                          f"entry for offset {entry.offset}: log byte {e.position + win.base}: {e.message}"))
        return None
    finally:
        win.close()
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


def _lookup(oindex, entries: int, base: int, target: int) -> int:
    """OffsetIndex.lookup(target).position: the broker's search, warm section first, over the
    offset index ``oindex`` (a source of windows) read an entry at a time."""
    if entries == 0:
        return 0

    def slot_at(slot: int) -> tuple[int, int]:
        at = slot * idx.OFFSET_INDEX_ENTRY_SIZE
        win = oindex.map(at, at + idx.OFFSET_INDEX_ENTRY_SIZE)
        try:
            return idx.OFFSET_INDEX_ENTRY.unpack_from(win.buf, at - win.base)
        finally:
            win.close()

    def offset_at(slot: int) -> int:
        return base + slot_at(slot)[0]

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
    return slot_at(slot)[1]


def dump_time_index(d, path: str, shown: str) -> None:
    base, log_path = _base_and_log(d, path)
    if base is None:
        return
    with dump_windows(path) as tindex:
        if d.opts.index_sanity_check:
            first, last = _ends(tindex, idx.decode_time_index_entry, idx.TIME_INDEX_ENTRY_SIZE, base)
            _sanity(d, path, shown, idx.time_index_checks(tindex.size, first, last, base))
            return
        log = _open_log(d, path, log_path)
        offset_index_path = log_path[: -len(".log")] + ".index"
        try:
            oindex = dump_windows(offset_index_path)
        except OSError:
            oindex = None  # Kafka would create it empty; lookups then start at position 0
        abs_path = java_absolute_path(path)
        prev_ts = -1
        disagreeing = 0
        try:
            for entry in _entries(tindex, idx.decode_time_index_entry, idx.TIME_INDEX_ENTRY_SIZE, base):
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


#: Log bytes read at a time while looking for a time index entry's batch.
_LOG_WINDOW_BYTES = 1 << 20


def _batch_at_or_after(log, pos: int, target: int):
    """The first entry from log position ``pos`` (Kafka's framing, kafka_entries) whose last
    offset is >= ``target``: (window holding it whole, its window-relative position, the
    window's end), or None; read a window at a time. A DecodeError is located in the log."""
    size = log.size
    needed = 0
    while 0 <= pos < size:
        stop = min(size, pos + max(_LOG_WINDOW_BYTES, needed))
        win, at, end = _log_window(log, pos, stop)
        keep = False
        try:
            went = at
            for first, length in kafka_entries(win.buf, at, end):
                if _batch_last_offset(win.buf, first, end) >= target:
                    keep = True
                    return win, first, end
                went = first + length
            if stop == size:
                return None
            if went == at:  # the next entry is larger than the window: one window as large as it
                if at + 12 > end:
                    needed = 12 + 17
                else:
                    needed = 12 + max(0, _INT32.unpack_from(win.buf, at + 8)[0])
                    if pos + needed > size:
                        return None  # it runs past the log's end: Kafka stops here
            else:
                needed = 0
            pos = went + win.base
        except DecodeError as e:
            e.position += win.base
            raise
        finally:
            if not keep:
                win.close()
    return None


def _verify_time_entry(d, path, abs_path, log, oindex, base, entry, prev_ts) -> int:
    """Check one time index entry against the log like kafka-dump-log; returns 1 when it was
    put in one of Kafka's end-of-run warning blocks, else 0."""
    from .dumper import decode_any_batch, iter_batch_records
    entries = 0 if oindex is None else oindex.size // idx.OFFSET_INDEX_ENTRY_SIZE
    pos = _lookup(oindex, entries, base, entry.offset) if entries else 0
    found = None
    try:
        if 0 <= pos <= log.size:
            found = _batch_at_or_after(log, pos, entry.offset)
        if found is None:
            d.report.time_not_found(abs_path).append(entry.offset, -1)
            return 1
        win, at, end = found
        try:
            last = _batch_last_offset(win.buf, at, end)
            if last != entry.offset:
                d.report.time_not_found(abs_path).append(entry.offset, last)
                return 1
            batch = decode_any_batch(win.buf, at, end)
            max_ts = -1
            for record in iter_batch_records(win.buf, batch, d.opts.max_decompressed):
                max_ts = max(max_ts, record.timestamp)
        except DecodeError as e:
            e.position += win.base
            raise
        finally:
            win.close()
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
    with dump_windows(path) as txn:
        size = txn.size - txn.size % idx.ABORTED_TXN_SIZE
        for start in range(0, size, INDEX_CHUNK_BYTES):
            win = txn.map(start, min(size, start + INDEX_CHUNK_BYTES))
            try:
                for entry in idx.iter_aborted_txns(win.buf, start - win.base, min(size, start + INDEX_CHUNK_BYTES)
                                                   - win.base):
                    d.sink.txn_entry(dataclasses.replace(entry, position=entry.position + win.base))
            except DecodeError as e:
                d.finding(Finding.from_error(path, e, win.base))
                break
            finally:
                win.close()
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
        for entry in snapshot.iter_entries():  # one at a time: a snapshot of any size
            d.sink.snapshot_entry(entry)
