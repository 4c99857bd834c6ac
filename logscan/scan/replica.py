"""Reading one replica's files into the plain rows Kafka's rules need.

Segments are walked in base-offset order, a window read at a time (LogWindows: never mapped,
so a segment that shrinks under the scan is a located ``shrank`` finding, not a SIGBUS); only
control batches (for the marker type and coordinator epoch), `__transaction_state` and
`__cluster_metadata` records are decoded past the header. Every decode problem becomes a
located Finding and the walk goes on.

A large segment can be read in byte ranges by several tasks (:class:`ByteRange`): each task
but the first resynchronises at the first checksum-valid entry at or after its range start,
walks on past its range end to finish the entry that straddles it, and records whether the
next task's resync point is exactly where its own walk arrived (a clean hand-off). Where a
hand-off is not clean (damage, or a batch stored inside another one's payload) the task
walks on to the next clean boundary and :func:`valid_ranges` drops the tasks it covered, so
the union of the kept tasks' rows is what one walk of the whole file yields.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import groupby
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from logscan.format import compiled
from logscan.format.batch import (CONTROL_FLAG_MASK, INT32_MAX, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD,
                                   TRANSACTIONAL_FLAG_MASK, RecordBatch, first_record, iter_records)
from logscan.format.checkpoint import LeaderEpochEntry, parse_leader_epoch_checkpoint
from logscan.format.control import decode_control_key, decode_end_txn_marker
from logscan.format.compression import DecompressionBudget
from logscan.format.errors import DecodeError, DecompressionBudgetSpent
from logscan.format.legacy import LegacyBatch, iter_legacy_records
from logscan.format.logfile import find_entry, walk_windows
from logscan.format.metadata import decode_metadata_record
from logscan.format.snapshot import ProducerSnapshot, SnapshotCrcMismatch, decode_producer_snapshot
from logscan.format.txnlog import TRANSACTION_STATES, decode_txnlog_entry
from logscan.state import partition as P
from logscan.state.coordinator import TxnLogRecord
from logscan.state.columns import (FACT_NUMPY_COLUMNS, MARKER_NAMES, NO_CONTROL_TYPE, FactColumns, FactRows, arrow_of,
                                   shifted, strings)
from logscan.state.columns import INT64_MIN  # noqa: F401 (a fact table's smallest last offset: tests read it here)
from logscan.state.facts import NO_TIMESTAMP, BatchFact
from logscan.state.partition import MetadataEvent, ReplicaState, replica_state
from logscan.state.producer_state import (BatchMetadata, BrokerLoad, ProducerStateEntry, ProducerStateManager,
                                          describe_producers, snapshots_kept_on_load)
from logscan.state.snapshots import compare_producers
from logscan.state.spans import OnClose, Replay, ReplicaReplay

from logscan.logdir.naming import Kind, classify
from logscan.logdir.segment import (INT64_MAX, SMALL_FILE_CAPS, TOO_LARGE, FileShrank, FileTooLarge, Finding, LogWindows,
                                    NotRegularFile, io_finding, offset_overflow_finding, read_small_file)
from logscan.logdir.store import is_uri
from logscan.logdir.tree import ReplicaDir, _child, file_size

TRANSACTION_STATE_TOPIC = "__transaction_state"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: A finding's reason when the broker's own files name data the copy does not hold.
INCOMPLETE = "incomplete"
#: The bounds of a batch's last offset where its segment is not known.
_NO_LOW, _NO_HIGH = -(1 << 63), (1 << 63) - 1
#: The control record types a producer-owned control batch may have (None: emptied by the cleaner).
_MARKER_TYPES = frozenset({"COMMIT", "ABORT", None})


@dataclass(frozen=True, slots=True)
class ByteRange:
    """Range ``index`` of ``count`` of a segment cut every ``split_bytes`` bytes."""

    index: int
    count: int
    split_bytes: int

    def boundary(self, i: int) -> int:
        return i * self.split_bytes


def range_count(size: int, split_bytes: Optional[int]) -> int:
    """How many byte ranges a file of ``size`` bytes is read in (1: not split)."""
    if not split_bytes or size <= split_bytes:
        return 1
    return -(-size // split_bytes)


@dataclass(slots=True)
class ReplicaRead:
    """What one pass over a replica's segments (or one byte range of one) produced."""

    # Without an ``on_fact`` callback (read_segment), the facts of the batches read.
    facts: list[BatchFact] = field(default_factory=list)
    batches: int = 0  # facts read (listed or passed to on_fact)
    # With headers=True, the header of each fact's batch (same order): the batches table.
    headers: list[RecordBatch] = field(default_factory=list)
    # v2 batches whose CRC fails: kept out of ``facts`` (no producer state comes from them);
    # with headers=True their (fact, header) pairs, for the batches table (crc_valid false).
    damaged: list[tuple[BatchFact, RecordBatch]] = field(default_factory=list)
    damaged_count: int = 0
    txn_log: list[TxnLogRecord] = field(default_factory=list)
    txn_log_positions: list[int] = field(default_factory=list)  # batch position of each record
    # With offsets=True (a `__consumer_offsets` segment): its commit and marker rows
    # (logscan.scan.consumer_offsets), in log order.
    offset_commits: list[dict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Byte ranges: (index of a later range, whether its resync point is where this walk arrived).
    handoffs: list[tuple[int, bool]] = field(default_factory=list)
    first_offset: Optional[int] = None
    max_timestamp: int = -1
    bytes_read: int = 0


def batch_fact(buf, batch: RecordBatch, path: str, findings: list[Finding], base: int = 0) -> BatchFact:
    """The fact of a v2 batch read from ``buf``, a window of the log starting at byte ``base``:
    its header's fields, and a control batch's record type, coordinator epoch and timestamp
    read through the record decoder (any finding about them goes to ``findings``). Where the
    module is built, compiled.fact_v2 makes the facts of data batches and of COMMIT or ABORT
    batches laid out as a broker writes them (nearly every batch) and this reads the rest."""
    native = compiled.fact_v2
    if native is not None:
        fact = native(buf, batch, base, BatchFact)
        if fact is not None:
            return fact
    control_type, coordinator_epoch, marker_ts = None, -1, NO_TIMESTAMP
    if batch.is_control and batch.records_count > 0:
        try:
            record = first_record(buf, batch, base=base)
            if record is not None:
                key = decode_control_key(record.key, batch.position)
                control_type, marker_ts = key.name, record.timestamp
                if key.is_transaction_marker:
                    coordinator_epoch = decode_end_txn_marker(key, record.value, batch.position).coordinator_epoch
                elif batch.producer_id >= 0 or control_type == "UNKNOWN":
                    findings.append(control_type_finding(path, batch, key.label, batch.producer_id))
        except DecodeError as e:
            findings.append(Finding.from_error(path, e))
            control_type = "UNREADABLE"
    return BatchFact(batch.base_offset, batch.last_offset, batch.producer_id, batch.producer_epoch,
                     batch.base_sequence, batch.last_sequence, batch.max_timestamp, batch.is_transactional,
                     batch.is_control, batch.records_count, batch.size_in_bytes, control_type, coordinator_epoch,
                     marker_ts)


_new_tuple = tuple.__new__  # skips a NamedTuple's Python-level __new__

#: Reasons of the findings for batches Kafka's log recovery refuses, or that break the offset
#: order Kafka writes a log in (ReplicaAnalyser stops its replay at the first one).
OFFSET_ORDER = "offset-order"
OVERLAP = "overlap"
SEGMENT_BASE = "segment-base"
CONTROL_TYPE = "control-type"
TXN_STATE = "txn-state"


def control_type_finding(path: str, batch: RecordBatch, label: str, producer_id: int) -> Finding:
    """A control batch whose record type is not a transaction marker (kafka-dump-log's label:
    ``UNKNOWN(id)`` for an id ControlRecordType does not define), where Kafka does not take it:
    in a batch with a producer id (ProducerAppendInfo.append reads every such control batch
    with EndTransactionMarker.deserialize, which throws IllegalArgumentException for a type
    other than ABORT/COMMIT; LogSegment.recover catches only CorruptRecordException and
    InvalidRecordException, so the log does not load), or of a type Kafka does not know."""
    if producer_id >= 0:
        what = (f"control batch of producer {producer_id} at offset {batch.base_offset} has record type {label}, not "
                f"ABORT(0) or COMMIT(1): Kafka's ProducerAppendInfo.append reads it as an end transaction marker "
                f"(EndTransactionMarker.deserialize throws IllegalArgumentException) and LogSegment.recover does not "
                f"catch that, so the broker cannot load this log; the scan's replay of the replica stops here")
    else:
        what = (f"control batch at offset {batch.base_offset} has record type {label}, which ControlRecordType of "
                f"Kafka 4.1.1 does not define (ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, "
                f"KRAFT_VERSION, KRAFT_VOTERS): consumers and producer state skip it (no producer id)")
    return Finding(path, batch.position, CONTROL_TYPE, what, batch.size_in_bytes)


def legacy_fact(entry: LegacyBatch, path: str, findings: list[Finding]) -> BatchFact:
    """A v0/v1 log entry as a batch fact: no producer (message formats before v2 have none),
    so it moves offsets and timestamps only. The entry's offset is its last; a compressed
    wrapper's first offset and count come from its inner messages, as Kafka's
    AbstractLegacyRecordBatch.baseOffset() reads them."""
    base, count = entry.offset, 1
    if entry.is_compressed:
        first, n = None, 0
        try:
            for message in iter_legacy_records(entry):
                if first is None:
                    first = message.offset
                n += 1
        except DecodeError as e:
            findings.append(Finding.from_error(path, e))
            first = None
        if first is not None:
            base, count = first, n
    return BatchFact(base, entry.offset, -1, -1, -1, -1, entry.timestamp, False, False, count,
                     entry.size_in_bytes)


def _txn_log_records(buf, batch: RecordBatch, partition: int, path: str,
                     findings: list[Finding], base: int = 0, budget: DecompressionBudget | None = None
                     ) -> Iterator[TxnLogRecord]:
    try:
        for rec in iter_records(buf, batch, base=base, budget=budget):
            try:
                e = decode_txnlog_entry(rec.key, rec.value)
            except DecodeError as err:
                findings.append(Finding(path, batch.position, err.reason,
                                        f"offset {rec.offset}: {err.message}"))
                continue
            if e.is_tombstone:
                yield TxnLogRecord(partition, rec.offset, e.transactional_id)
            else:
                if e.state_id not in TRANSACTION_STATES:
                    findings.append(Finding(
                        path, batch.position, TXN_STATE,
                        f"offset {rec.offset}: transactional id {e.transactional_id!r} has transactionStatus "
                        f"{e.state_id}, no TransactionState of Kafka 4.1.1 (TransactionState.fromId throws); "
                        f"TransactionStateManager.loadTransactionMetadata stops loading __transaction_state-{partition} "
                        f"at this record and keeps only the records before it, so no verdict rests on this partition"))
                yield _new_tuple(TxnLogRecord, (partition, rec.offset, e.transactional_id, e.state, e.producer_id,
                                                e.previous_producer_id, e.next_producer_id, e.producer_epoch,
                                                e.transaction_timeout_ms, e.partitions or (),
                                                e.last_update_timestamp_ms, e.start_timestamp_ms,
                                                batch.partition_leader_epoch))
    except DecompressionBudgetSpent as e:
        if e.position == budget.spent_at:  # said once per segment, where it was spent
            findings.append(Finding.from_error(path, e))
    except DecodeError as e:
        findings.append(Finding.from_error(path, e))


def _is_entry(item) -> bool:
    return isinstance(item, (RecordBatch, LegacyBatch))


def walk_range(log, rng: Optional[ByteRange], handoffs: list[tuple[int, bool]], *,
               window: Optional[int] = None) -> Iterator[tuple[object, object]]:
    """walk_windows over the part of ``log`` (a source of windows: LogWindows, BufferWindows)
    that byte range ``rng`` owns (all of it when ``rng`` is None or the file is not split),
    each item with its window; hand-offs are appended to ``handoffs``."""
    end = log.size
    if rng is None or rng.count == 1:
        yield from walk_windows(log, window=window)
        return

    def find(pos: int) -> Optional[int]:
        return find_entry(log, pos, window=window)

    if rng.index == 0:
        start = 0
    else:
        start = find(rng.boundary(rng.index))
        if start is None:
            return  # no entry starts in this range or after it
    nxt = rng.index + 1

    def limit() -> int:
        return rng.boundary(nxt) if nxt < rng.count else end + 1

    for item, win in walk_windows(log, start, window=window):
        if _is_entry(item):
            while item.position >= limit():
                clean = find(rng.boundary(nxt)) == item.position
                handoffs.append((nxt, clean))
                if clean:
                    return
                nxt += 1
        yield item, win
    while nxt < rng.count:  # the walk ended: a later range must find nothing to read either
        clean = find(rng.boundary(nxt)) is None
        handoffs.append((nxt, clean))
        if clean:
            return
        nxt += 1


def valid_ranges(count: int, handoffs: dict[int, list[tuple[int, bool]]]) -> set[int]:
    """The ranges of one file whose rows to keep: range 0, then each range a kept one handed
    off to cleanly (the ones in between were read by the kept range that walked past them)."""
    kept, i = set(), 0
    while i < count:
        kept.add(i)
        nxt = next((j for j, clean in handoffs.get(i, ()) if clean), None)
        if nxt is None:
            break
        i = nxt
    return kept


def crc_finding(path: str, entry) -> Finding:
    """A log entry whose checksum fails (CRC-32C for v2, CRC-32 for v0/v1), located.

    The scan keeps such an entry out of producer state, spans and the LSO: a broker never
    applies it, since log recovery (LogSegment.recover) truncates the log at the first invalid
    batch. The entries after it are still in this copy and are read; the finding says the log
    is damaged from this position on, as the broker would see it on recovery."""
    if isinstance(entry, RecordBatch):
        what = f"v2 batch at offset {entry.base_offset} (CRC-32C)"
    else:
        what = f"magic {entry.magic} message at offset {entry.offset} (CRC-32)"
    return Finding(path, entry.position, "crc",
                   f"CRC mismatch in {what}, {entry.size_in_bytes} bytes: left out of producer state; "
                   f"Kafka's log recovery would truncate the log here", entry.size_in_bytes)


#: The environment variable that carries `logscan scan`'s --max-decompressed-ratio,
#: --min-decompressed-budget and --max-decompress-seconds to whatever process reads segments
#: (this one, or a Spark worker, which inherits the driver's environment on a local master;
#: spark.executorEnv elsewhere): "RATIO:MIN_BYTES:SECONDS", e.g. "1000:1073741824:60".
BUDGET_ENV = "LOGSCAN_DECOMPRESSION_BUDGET"


def budget_limits() -> tuple[int, int, float]:
    """(output bytes per byte of a segment, the least output allowed, seconds) of each
    segment's decompression budget: BUDGET_ENV's, else DecompressionBudget's defaults (a value
    that does not parse is the default: the CLI checks what it sets)."""
    return _budget_limits(os.environ.get(BUDGET_ENV, ""))


@lru_cache(maxsize=16)
def _budget_limits(text: str) -> tuple[int, int, float]:
    """budget_limits of BUDGET_ENV's value ``text`` (read once per value: a scan asks for
    every segment, and a value that does not parse cost an exception each time)."""
    from logscan.format.compression import DEFAULT_BUDGET_MIN_BYTES, DEFAULT_BUDGET_RATIO, DEFAULT_BUDGET_SECONDS

    try:
        ratio, min_bytes, seconds = text.split(":")
        return max(1, int(ratio)), max(0, int(min_bytes)), max(0.001, float(seconds))
    except ValueError:
        return DEFAULT_BUDGET_RATIO, DEFAULT_BUDGET_MIN_BYTES, DEFAULT_BUDGET_SECONDS


def segment_budget(file_bytes: int) -> DecompressionBudget:
    """The decompression budget of one segment of ``file_bytes`` (budget_limits)."""
    ratio, min_bytes, seconds = budget_limits()
    return DecompressionBudget(file_bytes, ratio=ratio, min_bytes=min_bytes, seconds=seconds)


#: Receives each batch fact of a walk with its header, in log order.
OnFact = Callable[[BatchFact, RecordBatch], None]


def iter_segment(path: str, partition: int, *, is_txn_log: bool, out: ReplicaRead,
                 headers: bool = False, byte_range: Optional[ByteRange] = None,
                 window: Optional[int] = None, offsets: bool = False
                 ) -> Iterator[tuple[BatchFact, RecordBatch | LegacyBatch]]:
    """One `.log` segment (or one byte range of it), walked lazily: each checksum-valid
    entry's fact with its header, in log order. Everything else a walk finds goes to ``out``
    as it is met: findings, counts, `__transaction_state` records, hand-offs and (with
    ``headers``) the CRC-failed v2 batches. Memory does not grow with the segment: it is read
    a window at a time (LogWindows; ``window`` bytes, by default its own), damage and the
    resync after it too, so a segment larger than the address space a task may use is read
    all the same, and one that shrinks under the walk is a located ``shrank`` finding. With
    ``offsets`` (a `__consumer_offsets` segment) each entry's offset commits and markers go to
    ``out.offset_commits`` as it is walked (consumer_offsets.batch_rows): the one read of it."""
    records = None
    if offsets:
        from .consumer_offsets import batch_rows as records   # (it imports this module)
    return _opened(path, out, lambda log, budget: _walk_segment(log, path, partition, is_txn_log, out, headers,
                                                                byte_range, window, budget, records))


def _opened(path: str, out: ReplicaRead, walk: Callable) -> Iterator:
    """``walk(log, budget)`` over the segment at ``path`` opened (LogWindows) with its
    decompression budget; a failure to open it, or a failed read outside walk_windows, is a
    finding in ``out``. (A try and finally rather than an ExitStack, whose entering and exit
    were ~3% of the bench copy's scan CPU samples, one segment a replica, 2026-12-08: a
    LogWindows' exit only closes it.)"""
    try:
        log = LogWindows(path).__enter__()
    except OSError as e:
        out.findings.append(Finding(path, -1, "io", str(e)))
        return
    try:
        out.bytes_read += log.size
        budget = segment_budget(log.size)  # a segment of small decompression bombs stops here
        try:
            yield from walk(log, budget)
        except OSError as e:  # met by a byte range's own resync search (walk_windows' reads say theirs)
            out.findings.append(_read_failure(path, log, e))
    finally:
        log.__exit__(None, None, None)


def _read_failure(path: str, log, error: OSError) -> Finding:
    """A failed read of the segment outside walk_windows (a byte range's search for its start)."""
    if isinstance(error, FileShrank):
        return Finding(path, error.position, "shrank", f"the file shrank while it was read ({log.size} bytes "
                       f"when opened): the bytes from here on are not read", log.size - error.position)
    return Finding(path, -1, "io", f"cannot read file: {error.strerror or error}")


def _walk_segment(log, path: str, partition: int, is_txn_log: bool, out: ReplicaRead, headers: bool,
                  byte_range: Optional[ByteRange], window: Optional[int], budget: DecompressionBudget,
                  records: Optional[Callable] = None) -> Iterator[tuple[BatchFact, RecordBatch | LegacyBatch]]:
    """iter_segment's walk of an opened segment."""
    return _walk_entries(walk_range(log, byte_range, out.handoffs, window=window), path, partition, is_txn_log, out,
                         headers, budget, records)


def _walk_entries(items: Iterable[tuple[object, object]], path: str, partition: int, is_txn_log: bool,
                  out: ReplicaRead, headers: bool, budget: DecompressionBudget, records: Optional[Callable] = None
                  ) -> Iterator[tuple[BatchFact, RecordBatch | LegacyBatch]]:
    """The facts of a walk's items (walk_windows' (item, window) pairs): the reference of
    what the scan makes of each entry and finding of a segment."""
    findings = out.findings
    # The counts are kept in locals while the walk runs (this loop runs once per batch) and
    # stored in ``out`` before every yield, so a consumer sees them current.
    batches, max_timestamp = out.batches, out.max_timestamp
    for entry, win in items:
        kind = type(entry)
        if kind is not RecordBatch and kind is not LegacyBatch:
            findings.append(Finding.from_error(path, entry))
            continue
        if kind is RecordBatch and entry[1] > INT64_MAX - entry[7]:
            # Its last offset passes 2^63-1 (the base offset is outside the CRC): no row can
            # hold it (a Spark task died on it), and Kafka's sum wraps negative. Left out
            # of every table but corruptions, as a CRC-failed batch is left out of the replay.
            findings.append(offset_overflow_finding(path, entry))
            continue
        if not entry.crc_valid:
            findings.append(crc_finding(path, entry))
            if kind is RecordBatch:
                out.damaged_count += 1
                if headers:
                    out.damaged.append((batch_fact(win.buf, entry, path, [], win.base), entry))
            continue
        if kind is RecordBatch:
            fact = batch_fact(win.buf, entry, path, findings, win.base)
        else:
            fact = legacy_fact(entry, path, findings)
        if out.first_offset is None:
            out.first_offset = fact.base_offset
        if fact.max_timestamp > max_timestamp:
            max_timestamp = out.max_timestamp = fact.max_timestamp
        batches += 1
        out.batches = batches
        yield fact, entry
        if is_txn_log and kind is RecordBatch and not entry.attributes & CONTROL_FLAG_MASK:
            before = len(out.txn_log)
            out.txn_log.extend(_txn_log_records(win.buf, entry, partition, path, findings, win.base, budget))
            out.txn_log_positions.extend([entry.position] * (len(out.txn_log) - before))
        elif records is not None:
            out.offset_commits.extend(records(win.buf, entry, fact if kind is RecordBatch else None, partition, path,
                                              findings, win.base, budget))


#: The columns of a fact table (segment_fact_tables): the batch's byte position in its segment,
#: then BatchFact's fields, with their Arrow types.
FACT_TABLE_COLUMNS = (("position", "int64"), ("base_offset", "int64"), ("last_offset", "int64"),
                      ("producer_id", "int64"), ("producer_epoch", "int16"), ("base_sequence", "int32"),
                      ("last_sequence", "int32"), ("max_timestamp", "int64"), ("is_transactional", "bool_"),
                      ("is_control", "bool_"), ("records_count", "int32"), ("size_in_bytes", "int64"),
                      ("control_type", "string"), ("coordinator_epoch", "int32"), ("marker_timestamp", "int64"))
#: The rows of the columns segment_fact_columns hands on (its last may have fewer), whatever
#: its batches' size and its segment's: the reference's facts gathered, the compiled runs'
#: columns joined or cut to it. The consumer's memory (the bulk replay's arrays, some hundreds
#: of bytes a row while a table is replayed) is bounded by it, and its fixed cost a table (the
#: replay's array steps) is paid by enough rows. Joined to 16,384 rows or more (a whole 11 MB
#: segment of 1 KiB batches), the scan's peak was ~8 MiB above the walk a batch at a time
#: (tests/robust/test_scan_memory_flat.py); at 65,536, ~20 MiB more for a 64 MiB segment of
#: 130 B batches than for an 8 MiB one (tests/robust/test_memory.py).
FACT_TABLE_ROWS = 4096
#: The bytes segment_fact_columns reads at a time (a batch larger than that is read whole):
#: the walk a batch at a time holds a window of 4 MiB (LogWindows), the bulk path a window of
#: this and a table of FACT_TABLE_ROWS rows, and so no more than the walk (a 1 GB copy of 11
#: MB segments of 1 KiB batches: peak RssAnon 39.9 MiB, the walk's 40.6; with 4 MiB windows
#: 43.6).
FACT_WINDOW_BYTES = 1 << 20


@lru_cache(maxsize=None)
def fact_schema():
    """The Arrow schema of a fact table (FACT_TABLE_COLUMNS; made once: it is immutable)."""
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in FACT_TABLE_COLUMNS])


def facts_to_table(facts: list[BatchFact], positions: list[int]):
    """A fact table of the reference's facts (``positions``: each batch's byte position)."""
    return fact_table(FactColumns.of_facts(facts, positions))


def fact_table(c: FactColumns):
    """FactColumns as a fact table (an Arrow record batch of FACT_TABLE_COLUMNS)."""
    import numpy as np
    import pyarrow as pa

    names = np.array([None, None, *MARKER_NAMES], object)[c.types + 2]  # (-2: none; -1: c.names)
    if c.names is not None:
        names = np.where(c.types == -1, c.names, names)
    return pa.RecordBatch.from_arrays([strings(names.tolist()) if name == "control_type" else
                                       arrow_of(getattr(c, name)) for name, _ in FACT_TABLE_COLUMNS],
                                      schema=fact_schema())


def _compiled_columns(arrays: dict) -> FactColumns:
    """FactColumns of compiled.fact_arrays' columns: the flags from the attributes, the marker
    types from the type ids (a COMMIT or ABORT batch's; the compiled step makes no fact of a
    control batch of another type)."""
    import numpy as np

    columns = {name: arrays[name] for name in FACT_NUMPY_COLUMNS if name in arrays}
    attributes, type_id = arrays["attributes"], arrays["control_type_id"]
    columns["is_transactional"] = (attributes & TRANSACTIONAL_FLAG_MASK) != 0
    columns["is_control"] = (attributes & CONTROL_FLAG_MASK) != 0
    columns["types"] = np.where(type_id < 0, NO_CONTROL_TYPE, type_id)
    return FactColumns(columns)


def segment_fact_tables(path: str, partition: int, *, out: ReplicaRead, window: Optional[int] = None) -> Iterator:
    """segment_fact_columns' columns as fact tables (Arrow record batches of FACT_TABLE_COLUMNS)."""
    return (fact_table(c) for c in segment_fact_columns(path, partition, out=out, window=window))


def segment_fact_columns(path: str, partition: int, *, out: ReplicaRead,
                         window: Optional[int] = None) -> Iterator[FactColumns]:
    """The facts of a whole segment (not `__transaction_state`, not `__consumer_offsets`: their
    records are decoded per batch by iter_segment) as FactColumns, in log order, of
    FACT_TABLE_ROWS rows but the last: the rows are exactly iter_segment's facts, and ``out``
    gets what iter_segment gives it (findings, counts, the first offset, the largest timestamp;
    while the walk goes on, they may count rows it has not handed on yet). The runs of whole,
    valid v2 batches come from the compiled step (compiled.facts_v2), which decides once it has
    walked a window: a segment of few batches (fewer than BULK_ROWS, the rows its reader feeds
    a row at a time, when the window reaches the segment's end) as the BatchFact objects the
    walk a batch at a time makes (FactRows: no array until one is read), more in bulk (its
    columns' bytes, joined once a table: one numpy array a column, no Python object per batch);
    everything else, and everything in pure Python, through the reference (_walk_entries)."""
    run = _facts_run if compiled.facts_v2 is not None else None
    return _opened(path, out, lambda log, budget: _rebatched(_fact_runs(log, path, partition, out, window, budget,
                                                                        run, FactRows)))


class _Bulk:
    """A compiled run's facts in bulk: facts_v2's ``columns`` (FACT_COLUMNS' bytes) of ``count``
    rows; made FactColumns when a table is joined (_joined). A run never crosses a table's end
    (_fact_runs), so none is cut."""

    __slots__ = ("columns", "count")

    def __init__(self, columns: tuple, count: int) -> None:
        self.columns, self.count = columns, count

    def __len__(self) -> int:
        return self.count

    def first_offset(self) -> int:
        """The first row's base offset."""
        return int.from_bytes(self.columns[1][:8], sys.byteorder, signed=True)


def _joined(parts: list) -> FactColumns:
    """A table's parts (_Bulk, FactRows, FactColumns) as one FactColumns, in order: FactRows
    where all are, the bytes of each stretch of compiled runs joined into one array a column."""
    if all(type(p) is FactRows for p in parts):
        return FactRows.concat(parts)
    joined = []
    for bulk, group in groupby(parts, lambda p: type(p) is _Bulk):
        if bulk:
            joined.append(_compiled_columns(compiled.joined_arrays([b.columns for b in group])))
        else:
            joined.extend(group)
    return FactColumns.concat(joined)


def _rebatched(parts: Iterator) -> Iterator[FactColumns]:
    """``parts`` (_Bulk, FactRows) handed on as FactColumns of FACT_TABLE_ROWS rows (the last
    fewer): the small ones joined, the reference's large ones cut."""
    held, rows = [], 0
    for c in parts:
        at = 0
        while at < len(c):
            n = min(len(c) - at, FACT_TABLE_ROWS - rows)
            held.append(c if n == len(c) else c.take(slice(at, at + n)))
            at += n
            rows += n
            if rows == FACT_TABLE_ROWS:
                yield _joined(held)
                held, rows = [], 0
    if held:
        yield _joined(held)


#: A compiled run: (the buffer of a window, where in it the run starts, the window's base in
#: the log, the ReplicaRead to count in, the rows below which its facts are best handed on as
#: BatchFact objects, the most rows it may have) -> (the run's facts, a list or _Bulk, or None
#: where it has none; where in the buffer it stopped).
Run = Callable[[object, int, int, "ReplicaRead", int, int], tuple[object, int]]


def _fact_runs(log, path: str, partition: int, out: ReplicaRead, window: Optional[int],
               budget: DecompressionBudget, run: Optional[Run], gather: Callable) -> Iterator:
    """The facts of an opened segment in log order, in chunks: the compiled runs (``run``'s,
    counted in ``out`` by it; a list of facts as ``gather(facts, the first's position)``),
    and the reference's walk from where a run stops to the next valid v2 batch (where the
    next run starts), its facts handed on as ``gather(facts, positions)``, FACT_TABLE_ROWS at
    most at a time. A run ends where a table of FACT_TABLE_ROWS rows (counted from the
    segment's first) does, so no table cuts one, and is asked for BatchFact objects below
    BULK_ROWS rows in all when its window reaches the segment's end. With ``run`` None, the
    reference's walk."""
    size, window = log.size, window or FACT_WINDOW_BYTES
    pending: tuple[list[BatchFact], list[int]] = ([], [])
    pos, needed, handed = 0, 0, 0
    while pos < size:
        stop = min(size, pos + max(window, needed))
        try:
            win = log.map(pos, stop) if run is not None else None
        except OSError:
            win = None   # the reference walk from here says so, located
        if win is not None:
            try:
                at = pos - win.base
                while True:
                    rows = handed + len(pending[0])
                    few = max(0, BULK_ROWS - rows) if stop == size else 0
                    limit = FACT_TABLE_ROWS - rows % FACT_TABLE_ROWS
                    chunk, end = run(win.buf, at, win.base, out, few, limit)
                    if chunk is None:
                        break
                    if pending[0]:
                        handed += len(pending[0])
                        yield gather(*pending)
                        pending = ([], [])
                    handed += len(chunk)
                    yield gather(chunk, at + win.base) if type(chunk) is list else chunk
                    at = end
                    if len(chunk) < limit:
                        break
                needed = _crossing(win.buf, at, size - win.base)
                pos = at + win.base
            finally:
                win.close()
            if pos >= size:
                break
            if needed is not None:
                continue  # the next batch crosses the window's end: a window from it
        walk = _walk_entries(walk_windows(log, pos, window=window), path, partition, False, out, False, budget)
        pos = size
        try:
            for fact, entry in walk:
                pending[0].append(fact)
                pending[1].append(entry.position)
                if len(pending[0]) >= FACT_TABLE_ROWS:
                    handed += len(pending[0])
                    yield gather(*pending)
                    pending = ([], [])
                if run is not None and type(entry) is RecordBatch:
                    pos = entry.position + entry.size_in_bytes  # a valid v2 batch: a run may start after it
                    break
        finally:
            walk.close()
        needed = 0
    if pending[0]:
        yield gather(*pending)


def _facts_run(buf, pos: int, base: int, out: ReplicaRead, few: int, limit: int):
    """A compiled run of facts (compiled.facts_v2), counted in ``out`` as iter_segment's walk
    counts them: a list of BatchFact where it has fewer than ``few`` rows, else _Bulk."""
    facts, count, end, max_timestamp = compiled.facts_v2(buf, pos, len(buf), base, limit, few, BatchFact)
    if not count:
        return None, end
    if type(facts) is not list:
        facts = _Bulk(facts, count)
    _count(out, facts[0].base_offset if type(facts) is list else facts.first_offset(), max_timestamp, count)
    return facts, end


def _list_run(buf, pos: int, base: int, out: ReplicaRead, few: int, limit: int):
    """_facts_run's facts, every run's as a list of BatchFact (read_segment lists them)."""
    return _facts_run(buf, pos, base, out, 1 << 62, limit)


def _crossing(buf, stop: int, left: int) -> Optional[int]:
    """The bytes a window from ``stop`` needs when a compiled run stopped there because the
    v2 batch at ``stop`` (or its header) runs past the window ``buf`` and fits in the ``left``
    bytes of the log from the window's start; None when the run stopped for anything else."""
    if stop + RECORD_BATCH_OVERHEAD > len(buf):
        return RECORD_BATCH_OVERHEAD if stop + RECORD_BATCH_OVERHEAD <= left and len(buf) < left else None
    length = int.from_bytes(buf[stop + 8:stop + 12], "big", signed=True)
    total = LOG_OVERHEAD + length
    if buf[stop + 16] == 2 and length >= RECORD_BATCH_OVERHEAD - LOG_OVERHEAD and len(buf) < stop + total <= left:
        return total
    return None


def _count(out: ReplicaRead, first_offset: int, max_timestamp: int, batches: int) -> None:
    """What iter_segment's walk counts in ``out`` for each fact, for a compiled run of
    ``batches`` facts: the first's base offset, the largest max timestamp."""
    if out.first_offset is None:
        out.first_offset = first_offset
    out.max_timestamp = max(out.max_timestamp, max_timestamp)
    out.batches += batches


def read_segment(path: str, partition: int, *, is_txn_log: bool, out: ReplicaRead | None = None,
                 headers: bool = False, byte_range: Optional[ByteRange] = None,
                 on_fact: Optional[OnFact] = None) -> ReplicaRead:
    """One `.log` segment (or one byte range of it) into batch facts (and `__transaction_state`
    records), appended to ``out``; the unit of work of a Spark task as much as of the local
    loop. ``headers`` keeps each batch's header for the batches table. With ``on_fact`` the
    facts stream to it (with their headers) instead of being listed, so memory does not grow
    with the segment (:func:`iter_segment` is the same walk as a generator). Where only the
    facts are asked (no headers, no ``on_fact``, a whole segment of a topic other than
    `__transaction_state`), the runs of whole, valid v2 batches are read by the compiled step
    in bulk (compiled.facts_v2's BatchFact objects: no RecordBatch, no Python step per batch),
    the rest by the same walk."""
    out = ReplicaRead() if out is None else out
    if (compiled.facts_v2 is not None and on_fact is None and not headers and not is_txn_log
            and byte_range is None):
        # Through the reader's own windows, as the walk a batch at a time reads.
        def runs(log, budget):
            return _fact_runs(log, path, partition, out, getattr(log, "window_bytes", None), budget, _list_run,
                              _facts_of)

        for chunk in _opened(path, out, runs):
            out.facts.extend(chunk)
        return out
    for fact, entry in iter_segment(path, partition, is_txn_log=is_txn_log, out=out, headers=headers,
                                    byte_range=byte_range):
        if on_fact is not None:
            on_fact(fact, entry)
        else:
            out.facts.append(fact)
            if headers:
                out.headers.append(entry)
    return out


def _facts_of(facts: list[BatchFact], positions) -> list[BatchFact]:
    """The facts as read_segment lists them (without their positions)."""
    return facts


def read_replica(replica: ReplicaDir, *, headers: bool = False) -> ReplicaRead:
    """Every segment of a replica, in base-offset order."""
    out = ReplicaRead()
    for _, path in replica.segments:
        read_segment(str(path), replica.partition, is_txn_log=replica.topic == TRANSACTION_STATE_TOPIC,
                     out=out, headers=headers)
    return out


# --- producer snapshots ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One `.snapshot` file: decoded (CRC good or bad), or why it could not be."""

    offset: int  # from the name: the state after every offset below it
    path: str
    snapshot: Optional[ProducerSnapshot]
    finding: Optional[Finding] = None

    @property
    def loadable(self) -> bool:
        """What Kafka would load: decoded with a valid CRC."""
        return self.snapshot is not None and self.snapshot.crc_valid


def read_snapshots(replica: ReplicaDir) -> list[SnapshotFile]:
    out = []
    for base, path in replica.snapshots:
        try:
            # A regular file only, never waited on nor read through a link (logdir.segment).
            data = read_small_file(path, SMALL_FILE_CAPS["snapshot"])
            snap, finding = ((None, Finding(str(path), -1, "io", "no such file (gone since it was listed)"))
                             if data is None else (decode_producer_snapshot(data), None))
        except SnapshotCrcMismatch as e:
            snap, finding = e.snapshot, Finding.from_error(str(path), e)
        except DecodeError as e:
            snap, finding = None, Finding.from_error(str(path), e)
        except (NotRegularFile, FileTooLarge) as e:
            snap, finding = None, io_finding(str(path), e)
        except OSError as e:
            snap, finding = None, Finding(str(path), -1, "io", str(e))
        out.append(SnapshotFile(base, str(path), snap, finding))
    return out


def snapshot_entries(snap: ProducerSnapshot) -> list[ProducerStateEntry]:
    """A snapshot's entries as the producer state Kafka loads from them."""
    entries = []
    for s in snap.iter_entries():
        entry = ProducerStateEntry(s.producer_id, s.producer_epoch, s.coordinator_epoch, s.timestamp,
                                   None if s.current_txn_first_offset < 0 else s.current_txn_first_offset)
        if s.last_offset >= 0:
            entry.batches.append(BatchMetadata(s.last_sequence, s.last_offset, s.offset_delta, s.timestamp))
        entries.append(entry)
    return entries


def snapshot_seed(snapshots: list[SnapshotFile], first_offset: Optional[int]
                  ) -> Optional[tuple[list[ProducerStateEntry], int]]:
    """The newest loadable producer snapshot at or below the first offset we can replay.

    Only needed when the head of the log is gone (retention, DeleteRecords): replaying from
    the first segment otherwise rebuilds the same state the snapshot holds.
    """
    if first_offset is None or first_offset == 0:
        return None
    for s in reversed([s for s in snapshots if s.offset <= first_offset and s.loadable]):
        return snapshot_entries(s.snapshot), s.offset
    return None


@dataclass(slots=True)
class SnapshotCheck:
    """The newest loadable snapshot against the state rebuilt from the batches below its offset."""

    offset: int
    path: str
    # producer id -> (producer_epoch, coordinator_epoch, last_sequence, last_timestamp,
    # current_txn_start_offset) as the snapshot holds it
    entries: dict[int, tuple]
    # producer id -> None (agrees) or what differs; empty when the rebuild cannot be compared
    differences: dict[int, Optional[str]]
    comparable: bool


def _describe(psm: ProducerStateManager) -> dict[int, tuple]:
    return {row[0]: row[1:] for row in describe_producers(psm)}


def newest_loadable(snapshots: list[SnapshotFile]) -> Optional[SnapshotFile]:
    loadable = [s for s in snapshots if s.loadable]
    return loadable[-1] if loadable else None


def check_newest_snapshot(snapshots: list[SnapshotFile], rebuilt: Optional[dict[int, tuple]],
                          seed: Optional[tuple[list[ProducerStateEntry], int]]) -> Optional[SnapshotCheck]:
    """The newest loadable snapshot against ``rebuilt``: the producers (as _describe gives
    them) replayed from the batches below the snapshot's offset, taken as the replay passed
    that offset."""
    newest = newest_loadable(snapshots)
    if newest is None:
        return None
    psm = ProducerStateManager()
    psm.seed(snapshot_entries(newest.snapshot), newest.offset)
    held = _describe(psm)
    if rebuilt is None or (seed is not None and seed[1] == newest.offset):
        # The rebuild starts from this very snapshot: nothing independent to compare with.
        return SnapshotCheck(newest.offset, newest.path, held, {}, False)
    return SnapshotCheck(newest.offset, newest.path, held, compare_producers(held, rebuilt), True)


# --- leader epochs and __cluster_metadata ----------------------------------------------------

#: The leader-epoch-checkpoint file's name (logdir.naming).
_LEADER_EPOCH_CHECKPOINT = Kind.LEADER_EPOCH_CHECKPOINT.value


def leader_epochs(replica: ReplicaDir, findings: list[Finding]) -> list[LeaderEpochEntry]:
    """The entries of the replica's leader-epoch-checkpoint ([]: no file, or unreadable: its
    finding says why)."""
    # (its path as replica.path / name writes it, without making the Path: tree._child)
    folder = replica.folder
    path = _child(replica.path if is_uri(folder) else folder, _LEADER_EPOCH_CHECKPOINT)
    try:
        data = read_small_file(path, SMALL_FILE_CAPS["leader-epoch-checkpoint"])
        if data is None:
            return []
        return list(parse_leader_epoch_checkpoint(data).entries)
    except DecodeError as e:
        findings.append(Finding.from_error(str(path), e))
    except (NotRegularFile, FileTooLarge) as e:  # a link, FIFO or folder of that name, or too long: not read
        findings.append(io_finding(str(path), e))
    except OSError as e:
        findings.append(Finding(str(path), -1, "io", str(e)))
    return []


def latest_leader_epoch(replica: ReplicaDir, findings: list[Finding]) -> Optional[int]:
    """The highest epoch in the replica's leader-epoch-checkpoint (None: no file or no entry)."""
    return max((e.epoch for e in leader_epochs(replica, findings)), default=None)


#: FileLogInputStream.HEADER_SIZE_UP_TO_MAGIC: with fewer bytes left Kafka reads no entry.
_HEADER_UP_TO_MAGIC = 17
#: How many unreplayed whole entries (CRC-failed) tail_gap steps over before it stops looking.
_TAIL_ENTRIES = 64
_OFFSET_AND_SIZE = struct.Struct(">qi")


def tail_gap(path: str, start: int, base: int, next_offset: int) -> Optional[str]:
    """Whether the last segment's bytes from ``start`` (the end of its last replayed batch) end
    inside an entry Kafka wrote: a batch whose size runs past the end of the file, or a header
    cut short, either beginning as an entry of this segment would (plausible_entry). Kafka
    writes whole batches, so the log went on past the copy (a file copied while the broker wrote
    it, or an interrupted rsync or cp), or the broker died mid-write and its recovery
    (LogSegment.recover) truncates the part and fetches the rest from the leader: either way
    what closes a transaction may be in what the copy lacks. A zero-filled tail (log.preallocate)
    or bytes no broker wrote there (the read's findings say what they are) are none. Only
    headers are read (LogWindows: no file mapped whole)."""
    try:
        if file_size(path) <= start:
            return None   # (commonly the last batch ends the file: its size needs no open)
        with LogWindows(path) as log:
            size, pos = log.size, start
            for _ in range(_TAIL_ENTRIES):
                left = size - pos
                if left <= 0:
                    return None
                window = log.map(pos, pos + min(left, _HEADER_UP_TO_MAGIC))
                try:
                    head = bytes(window.buf)
                finally:
                    window.close()
                if not any(head) or not plausible_entry(head, base, next_offset):
                    return None
                if left < LOG_OVERHEAD:
                    return (f"{Path(path).name} ends {left} bytes into an entry's header at byte {pos}: the log went on "
                            f"past the copy")
                offset, length = _OFFSET_AND_SIZE.unpack_from(head)
                if LOG_OVERHEAD + length > left:
                    what = (f"{left} bytes of an entry's header" if left < _HEADER_UP_TO_MAGIC
                            else f"{left} of the {LOG_OVERHEAD + length} bytes of the batch")
                    return (f"{Path(path).name} ends inside an entry at byte {pos}, holding {what}: Kafka writes whole "
                            f"batches, so the log went on past the copy's end (a file copied while the broker wrote it, "
                            f"or a copy cut mid-file; after a crash Kafka's recovery truncates the part and fetches the "
                            f"rest from the leader)")
                pos += LOG_OVERHEAD + length
                next_offset = offset + 1
    except OSError:
        return None   # the read of the segment reports it
    return None


def plausible_entry(head: bytes, base: int, next_offset: int) -> bool:
    """Whether ``head`` (an entry's first bytes, up to its magic) begins as Kafka would write
    the next entry of a segment at ``base``: its offset at or past ``next_offset`` and at most
    Int.MAX past the base (OffsetIndex.canAppendOffset), where the offset field is cut short its
    leading bytes those of such an offset; a size of at least 14 (FileLogInputStream's
    minimum); magic 0, 1 or 2."""
    width = min(len(head), 8)
    low, high = next_offset.to_bytes(8, "big"), min(base + INT32_MAX, 2 ** 63 - 1).to_bytes(8, "big")
    if not low[:width] <= head[:width] <= high[:width]:
        return False
    if len(head) >= LOG_OVERHEAD and _OFFSET_AND_SIZE.unpack_from(head)[1] < 14:
        return False
    return len(head) < _HEADER_UP_TO_MAGIC or head[_HEADER_UP_TO_MAGIC - 1] in (0, 1, 2)


def epoch_gap(entries: list[LeaderEpochEntry], log_end: int) -> Optional[str]:
    """What the leader-epoch-checkpoint says the log held past the copy's end (None: nothing).

    Kafka adds an entry (epoch, start offset) at the log end offset when the replica becomes
    leader or appends the first batch of a new epoch (LeaderEpochFileCache.assign, from
    UnifiedLog.maybeAssignEpochStartOffset and appendAsLeader/appendAsFollower), and drops the
    entries at or past the log end whenever the log is truncated, and on load
    (truncateFromEndAsyncFlush): an entry starting past the copy's log end says the broker's
    log reached that offset. An entry at the log end itself is a leader elected with nothing
    appended since: no gap."""
    beyond = max((e for e in entries if e.start_offset > log_end), key=lambda e: e.start_offset, default=None)
    if beyond is None:
        return None
    missing = (f"offset {log_end} is" if beyond.start_offset == log_end + 1
               else f"offsets {log_end} to {beyond.start_offset - 1} are")
    return (f"leader-epoch-checkpoint has epoch {beyond.epoch} from offset {beyond.start_offset} (line "
            f"{beyond.line}) but the copy's log ends at {log_end}: the broker's log reached {beyond.start_offset} "
            f"(LeaderEpochFileCache adds an epoch at the log end and drops those past it when the log is truncated), "
            f"and {missing} not in the copy")


_METADATA_KINDS = {"TOPIC_RECORD": P.TOPIC, "PARTITION_RECORD": P.PARTITION,
                   "PARTITION_CHANGE_RECORD": P.PARTITION_CHANGE, "REMOVE_TOPIC_RECORD": P.REMOVE_TOPIC}


@dataclass(frozen=True, slots=True)
class MetadataRecordAt:
    """A decoded `__cluster_metadata` record and where it lies: its file, its batch's byte
    position there, its offset and time (-1: a snapshot's record, older than the log)."""

    path: str
    position: int
    offset: int
    timestamp: int
    type_name: str
    message: object


def _metadata_records(path: str, findings: list[Finding], *, from_snapshot: bool,
                      min_offset: int = 0) -> Iterator[MetadataRecordAt]:
    with ExitStack() as stack:
        try:
            log = stack.enter_context(LogWindows(path))  # read a window at a time, never mapped
        except NotRegularFile as e:
            findings.append(io_finding(path, e))
            return
        except OSError as e:
            findings.append(Finding(path, -1, "io", str(e)))
            return
        for batch, win in walk_windows(log):
            # Damage to the framing is reported once, by the segment read of the replica
            # (read_segment); here only what that read does not decode, the records, is.
            if (not isinstance(batch, RecordBatch) or not batch.crc_valid or batch.is_control
                    or batch.last_offset < min_offset):
                continue
            # Records of a metadata batch share its append time; a snapshot's records stand for
            # the log before its end offset, so they count as older than any log record.
            ts = -1 if from_snapshot else batch.max_timestamp
            try:
                for rec in iter_records(win.buf, batch, base=win.base):
                    if rec.offset < min_offset or rec.value is None:
                        continue
                    m, _ = decode_metadata_record(rec.value)
                    if m.message is not None:
                        yield MetadataRecordAt(path, batch.position, rec.offset, ts, m.type_name, m.message)
            except DecodeError as e:
                findings.append(Finding.from_error(path, e))


def read_metadata_records(replica: ReplicaDir, findings: list[Finding]) -> Iterator[MetadataRecordAt]:
    """The records of a `__cluster_metadata` replica, in log order: those of the newest KRaft
    snapshot (``<end offset>-<epoch>.checkpoint``) when the log does not start at 0, then the
    log's records from the snapshot's end offset on."""
    first_base = replica.segments[0][0] if replica.segments else 0
    start = 0
    if first_base > 0:
        snaps = sorted((k.end_offset, p) for p in replica.path.iterdir()
                       for k in [classify(p.name)] if k.kind is Kind.KRAFT_SNAPSHOT and k.is_live)
        usable = [s for s in snaps if s[0] >= first_base]
        if usable:
            start, path = max(usable)
            yield from _metadata_records(str(path), findings, from_snapshot=True)
    for _, path in replica.segments:
        yield from _metadata_records(str(path), findings, from_snapshot=False, min_offset=start)


def read_metadata_events(replica: ReplicaDir, findings: list[Finding],
                         configs: Optional[list[tuple]] = None) -> list[MetadataEvent]:
    """The leader-relevant records of a `__cluster_metadata` replica (read_metadata_records),
    in log order; with ``configs``, its ConfigRecords go there as (timestamp, resource type,
    resource name, config name, value), in log order (logscan.state.retention.topic_configs)."""
    events: list[MetadataEvent] = []
    for r in read_metadata_records(replica, findings):
        kind = _METADATA_KINDS.get(r.type_name)
        if kind is None:
            if configs is not None and r.type_name == "CONFIG_RECORD":
                m = r.message
                configs.append((r.timestamp, m.resource_type, m.resource_name, m.name, m.value))
            continue
        msg = r.message
        if kind == P.TOPIC:
            events.append(MetadataEvent(r.offset, r.timestamp, kind, str(msg.topic_id), name=msg.name))
        elif kind == P.REMOVE_TOPIC:
            events.append(MetadataEvent(r.offset, r.timestamp, kind, str(msg.topic_id)))
        else:
            events.append(MetadataEvent(r.offset, r.timestamp, kind, str(msg.topic_id),
                                        partition=msg.partition_id, leader=msg.leader))
    return events


# --- one replica, analysed -------------------------------------------------------------------

#: The fewest rows ReplicaAnalyser.feed_columns replays in bulk; fewer go through feed(), the
#: reference, a row at a time: the array steps of the bulk replay cost ~0.2 ms a table whatever
#: its rows, and save ~3 us a row (ProducerStateManager.append_columns and the spans).
BULK_ROWS = 96


@dataclass(slots=True)
class ReplicaAnalysis:
    """Kafka's per-replica rules applied to one replica's batches and small files."""

    state: ReplicaState
    replay: ReplicaReplay
    max_timestamp: int
    snapshots: list[SnapshotFile]
    snapshot_check: Optional[SnapshotCheck]
    leader_epoch: Optional[int]
    findings: list[Finding]

    def view(self) -> P.ReplicaView:
        return P.replica_view(self.state, self.replay, max_timestamp=self.max_timestamp,
                              leader_epoch=self.leader_epoch)


class ReplicaAnalyser:
    """Kafka's per-replica rules over one replica's batches fed in log order, one at a time:
    memory holds the producer state and open spans, never the batches; each span goes to
    ``on_close`` as its end marker closes it. Both drivers use it.

    The replica's checkpointed high watermark and log start offset are given up front: with
    them the replay keeps only the completed transactions that can still hold back the LSO.
    Those and its checkpointed recovery point say what the broker held that the copy may lack
    (logscan.state.partition.copy_gaps)."""

    def __init__(self, replica: ReplicaDir, on_close: Optional[OnClose] = None, *,
                 hw_checkpoint: Optional[int], log_start_checkpoint: Optional[int],
                 recovery_point_checkpoint: Optional[int] = None, dir_gap: Optional[str] = None) -> None:
        self.replica = replica
        self._dir_gap = dir_gap  # listing.ListedReplica.dir_gap: a replica of the partition on a dir not copied
        self._on_close = on_close
        self._hw_checkpoint, self._log_start_checkpoint = hw_checkpoint, log_start_checkpoint
        self._recovery_point_checkpoint = recovery_point_checkpoint
        # The listing's files, asked for once (ReplicaDir makes a list each time it is asked).
        self._segments = segments = replica.segments
        self._bases = bases = [base for base, _ in segments]
        first_base = bases[0] if bases else None
        self._hw_floor = max(P.log_start_offset(first_base, log_start_checkpoint), hw_checkpoint or 0)
        self.findings: list[Finding] = []
        self.snapshots = read_snapshots(replica)
        self.findings.extend(s.finding for s in self.snapshots if s.finding is not None)
        newest = newest_loadable(self.snapshots)
        self._newest_offset = newest.offset if newest is not None else None
        # The producers a broker loads for this log: its newest snapshot, then the batches after it.
        self._log_start = P.log_start_offset(first_base, log_start_checkpoint)
        kept = snapshots_kept_on_load([s.offset for s in self.snapshots], bases)
        # One the broker may load that the scan did not read for its size: the producers it
        # holds are not known, so neither are those the broker has (copy_gap withholds verdicts).
        self._unread_snapshots = [s for s in self.snapshots if s.offset in kept and s.finding is not None
                                  and s.finding.reason == TOO_LARGE]
        self._load = BrokerLoad([(s.offset, partial(snapshot_entries, s.snapshot) if s.loadable else None)
                                 for s in self.snapshots if s.offset in kept], self._log_start,
                                known_below_log_end=bases[-1] if bases else None)
        self._load_from = self._load.start_offset
        self._seed: Optional[tuple[list[ProducerStateEntry], int]] = None
        self._replay: Optional[Replay] = None
        self._at_newest: Optional[dict[int, tuple]] = None  # the rebuild at the newest snapshot
        self.max_timestamp = -1
        # The offset-order rules (check_order): the segments by base offset, the bounds a batch's
        # last offset must keep within its segment, the previous batch's last offset and place.
        self._files = {base: str(path) for base, path in segments}
        self._next_base = dict(zip(bases, bases[1:]))
        self._segment: Optional[int] = None
        self._low, self._high = _NO_LOW, _NO_HIGH
        self._prev_last, self._prev_segment, self._prev_position = -1, None, None
        self.fault: Optional[Finding] = None  # the first batch the replay refused: it stopped there
        self._copy_end = 0  # past the fault: where the copy's batches end
        self._coordinator_faults: list[str] = []
        self._batches_end: Optional[tuple[Optional[int], int]] = None  # (segment, byte) after the last batch fed

    def _capture_at_newest(self) -> None:
        self._at_newest = _describe(self._replay.producers)
        self._newest_offset = None

    def _enter_segment(self, base: Optional[int]) -> None:
        self._segment = base
        if base is None:
            self._low, self._high = _NO_LOW, _NO_HIGH
            return
        # OffsetIndex.canAppendOffset: a batch's last offset relative to its segment's base is in
        # [0, Int.MAX]; and no batch reaches the next segment's base offset (LocalLog.roll starts a
        # segment at the log end offset, so the batches of a segment end below the next one's base).
        nxt = self._next_base.get(base)
        self._low = base
        self._high = min(base + INT32_MAX, _NO_HIGH if nxt is None else nxt - 1)

    def check_order(self, fact: BatchFact, segment: Optional[int], position: int) -> Optional[Finding]:
        """The finding for a batch that breaks the offset order of a Kafka log (None: it keeps
        it), run only when the two chained comparisons of feed fail: what rule, and what Kafka
        does with such a batch."""
        base, last = fact.base_offset, fact.last_offset
        path = self._files.get(segment, str(self.replica.path))
        here = f"batch at offsets {base} to {last}"
        prev_path = self._files.get(self._prev_segment, str(self.replica.path))
        prev = (f"the previous batch, at byte {self._prev_position} of {Path(prev_path).name}, ends at offset "
                f"{self._prev_last}")
        truncate = ("Kafka's log recovery (LogLoader.recoverLog) truncates the log at the first batch it refuses "
                    "and deletes the segments after it; the scan's replay of the replica stops here, nothing from "
                    "this batch on counts, and no verdict nor abort plan rests on this replica")
        if base < 0 or last < base:
            what = (f"negative base offset {base}" if base < 0
                    else f"{here}: its lastOffsetDelta {last - base} is negative")
            return Finding(path, position, OFFSET_ORDER, f"{what}, which Kafka never writes; {truncate}")
        if segment is not None and last < self._low:
            return Finding(path, position, SEGMENT_BASE,
                           f"{here} lies below its segment's base offset {segment}: LogSegment.recover refuses it "
                           f"(ensureOffsetInRange: OffsetIndex.canAppendOffset needs the last offset minus the base "
                           f"offset in [0, Int.MAX]; the LogSegmentOffsetOverflowException leads to "
                           f"LocalLog.splitOverflowedSegment, which refuses a segment without an overflow past its "
                           f"base, so the broker cannot load the log), and a broker that loads it without recovery "
                           f"never reads it (LogSegment.read finds no batch at or past the base offset); the scan's "
                           f"replay of the replica stops here, nothing from this batch on counts, and no verdict nor "
                           f"abort plan rests on this replica")
        if base <= self._prev_last:
            if self._prev_segment != segment:
                return Finding(path, position, OVERLAP,
                               f"segment {Path(path).name}'s {here} starts at or below the last offset of the "
                               f"segment before it ({prev}): the segments overlap; {truncate}")
            return Finding(path, position, OFFSET_ORDER,
                           f"{here} starts at or below the last offset of the batch before it ({prev}): the offsets "
                           f"go backwards, or the previous batch's lastOffsetDelta runs past this base offset. "
                           f"OffsetIndex.append throws InvalidOffsetException on such a batch where recovery writes "
                           f"an index entry; {truncate}")
        if segment is not None and last > self._high:
            nxt = self._next_base.get(segment)
            if nxt is not None and last >= nxt:
                return Finding(path, position, OVERLAP,
                               f"{here} reaches the next segment's base offset {nxt}: the segments overlap "
                               f"(LocalLog.roll starts a segment at the log end offset, so Kafka never writes "
                               f"this); {truncate}")
            return Finding(path, position, SEGMENT_BASE,
                           f"{here} is more than Int.MAX past its segment's base offset {segment}: LogSegment.recover "
                           f"throws LogSegmentOffsetOverflowException (ensureOffsetInRange) and LogLoader splits the "
                           f"segment (LocalLog.splitOverflowedSegment); a broker since KAFKA-5413 never writes one; "
                           f"{truncate}")
        if fact.is_control and fact.producer_id >= 0 and fact.control_type not in _MARKER_TYPES:
            # The decode located it already (control_type_finding, or the record's decode error).
            return Finding(path, position, CONTROL_TYPE,
                           f"control batch of producer {fact.producer_id} at offset {base} has record type "
                           f"{fact.control_type}, not ABORT or COMMIT: ProducerAppendInfo.append throws "
                           f"(EndTransactionMarker.deserialize) and LogSegment.recover does not catch it, so the "
                           f"broker cannot load the log; the replay stopped here")
        return None

    def feed(self, fact: BatchFact, segment: Optional[int] = None, position: int = -1) -> None:
        """The next batch of the replica in log order; ``segment``: the base offset of the
        segment holding it and ``position`` its byte there (None, -1: not known; the rules
        that need the segment are then not checked)."""
        if self.fault is not None:
            if fact.last_offset >= self._copy_end:
                self._copy_end = fact.last_offset + 1
            return
        if segment != self._segment:
            self._enter_segment(segment)
        # Every rule of check_order in two chained comparisons of integers at hand (a producer-owned
        # control batch of another type than a marker is the only one they do not cover).
        if (not (self._prev_last < fact.base_offset <= fact.last_offset and self._low <= fact.last_offset <= self._high)
                or (fact.is_control and fact.producer_id >= 0 and fact.control_type not in _MARKER_TYPES)):
            fault = self.check_order(fact, segment, position)
            if fault is not None:
                self.fault = fault
                if fault.reason != CONTROL_TYPE:  # (the decode's finding locates that one)
                    self.findings.append(fault)
                self._copy_end = fact.last_offset + 1
                return
        self._prev_last = fact.last_offset
        self._prev_segment, self._prev_position = segment, position
        if position >= 0:
            self._batches_end = (segment, position + fact.size_in_bytes)
        if self._replay is None:
            # The snapshot to start from depends on the first offset the log still has.
            self._seed = snapshot_seed(self.snapshots, fact.base_offset)
            self._replay = Replay(self._seed, self._on_close, high_watermark_floor=self._hw_floor)
        if self._newest_offset is not None and fact.base_offset >= self._newest_offset:
            self._capture_at_newest()
        self.max_timestamp = max(self.max_timestamp, fact.max_timestamp)
        self._replay.feed(fact)
        if self._load_from is not None and fact.last_offset >= self._load_from:
            self._load.feed(fact)

    def _feed_rows(self, facts: list[BatchFact], positions: list[int], segment: Optional[int]) -> None:
        """feed() of each fact (``positions``: their bytes in the segment whose base offset is
        ``segment``), in order: while the replay runs (no fault), with no newest snapshot's
        rebuild to take, the facts that keep feed()'s two chained comparisons go through what
        feed() does with them in one loop (its checks and bookkeeping held in locals); from
        the first that does not, feed() itself takes each."""
        i = 0
        if self.fault is None and self._newest_offset is None:
            if segment != self._segment:
                self._enter_segment(segment)
            low, high, prev_last = self._low, self._high, self._prev_last
            max_timestamp = self.max_timestamp
            # The facts that keep the order, up to the first that does not; then what feed() does
            # with each, the replay's in one loop (Replay.feed_facts: the replay and the broker's
            # load share nothing, so each may take them all in turn).
            for fact in facts:
                base, last = fact.base_offset, fact.last_offset
                if (not (prev_last < base <= last and low <= last <= high)
                        or (fact.is_control and fact.producer_id >= 0 and fact.control_type not in _MARKER_TYPES)):
                    break
                prev_last = last
                if fact.max_timestamp > max_timestamp:
                    max_timestamp = fact.max_timestamp
                i += 1
            if i:
                if self._replay is None:
                    # The snapshot to start from depends on the first offset the log still has.
                    self._seed = snapshot_seed(self.snapshots, facts[0].base_offset)
                    self._replay = Replay(self._seed, self._on_close, high_watermark_floor=self._hw_floor)
                fed = facts if i == len(facts) else facts[:i]
                self._replay.feed_facts(fed)
                load_from = self._load_from
                if load_from is not None:
                    load = self._load
                    for fact in fed:
                        if fact.last_offset >= load_from:
                            load.feed(fact)
                self._prev_last, self.max_timestamp = prev_last, max_timestamp
                self._prev_segment, self._prev_position = segment, positions[i - 1]
                for k in range(i - 1, -1, -1):
                    if positions[k] >= 0:
                        self._batches_end = (segment, positions[k] + facts[k].size_in_bytes)
                        break
        for k in range(i, len(facts)):
            self.feed(facts[k], segment, positions[k])

    def feed_table(self, table, segment: Optional[int] = None) -> None:
        """feed() of every row of ``table`` (a fact table of the segment whose base offset is
        ``segment``: segment_fact_tables'), in order, in bulk: the rows that keep Kafka's offset
        order (feed()'s two chained comparisons, no producer-owned control batch of another
        type than a marker) go to the replay and the broker's load as tables (Replay.feed_table,
        BrokerLoad.feed_table); a row that does not, and the row where the newest snapshot's
        rebuild is taken, go through feed() itself."""
        self.feed_columns(FactColumns.of_table(table), segment)

    def feed_columns(self, c: FactColumns, segment: Optional[int] = None) -> None:
        """feed_table over a fact table's columns (fewer than BULK_ROWS: feed() of each)."""
        import numpy as np

        if len(c) < BULK_ROWS:
            self._feed_rows(c.facts(), c.positions(), segment)
            return
        while len(c):
            base, last = c.base_offset, c.last_offset
            if self.fault is not None:
                self._copy_end = max(self._copy_end, int(last.max()) + 1)
                return
            if segment != self._segment:
                self._enter_segment(segment)
            other = c.other_control & (c.producer_id >= 0)  # a type not in _MARKER_TYPES
            keeps = ((shifted(last, self._prev_last) < base) & (base <= last) & (self._low <= last)
                     & (last <= self._high) & ~other)
            k = int(np.argmin(keeps)) if not keeps.all() else len(keeps)
            if self._replay is None and k:
                self._seed = snapshot_seed(self.snapshots, int(base[0]))
                self._replay = Replay(self._seed, self._on_close, high_watermark_floor=self._hw_floor)
            if self._newest_offset is not None and k:
                k = min(k, int(np.argmax(base >= self._newest_offset)) if (base >= self._newest_offset).any() else k)
            if k:
                self._feed_in_order(c if k == len(c) else c.take(slice(0, k)), segment)
            if k == len(c):
                break
            self.feed(c.fact(k), segment, int(c.position[k]))  # (feed()'s own rules)
            c = c.take(slice(k + 1, None))

    def _feed_in_order(self, c: FactColumns, segment: Optional[int]) -> None:
        """feed_columns' rows that keep the offset order, all below the newest snapshot's offset
        (the rebuild is taken at the first row at or past it, by feed()): what feed() does with
        each, in bulk."""
        import numpy as np

        last = c.last_offset
        self._prev_last = int(last[-1])
        position = int(c.position[-1])
        self._prev_segment, self._prev_position = segment, position
        self._batches_end = (segment, position + int(c.size_in_bytes[-1]))
        self.max_timestamp = max(self.max_timestamp, int(c.max_timestamp.max()))
        self._replay.feed_columns(c)
        if self._load_from is not None:
            loaded = last >= self._load_from
            if loaded.any():
                self._load.feed_columns(c if loaded.all() else c.take(np.flatnonzero(loaded)))

    def coordinator_fault(self, finding: Finding) -> None:
        """A `__transaction_state` record of this replica the coordinator's load stops at (a
        'txn-state' finding, from the decode): it goes into the replica's copy_gap, which makes
        coordinator_copy withhold the verdicts resting on this partition."""
        self._coordinator_faults.append(f"{finding.message.split(':', 1)[0]} (byte {finding.position} of "
                                        f"{Path(finding.path).name}): an unknown transactionStatus ends the "
                                        f"coordinator's load of this partition")

    def _tail_gap(self) -> Optional[str]:
        """tail_gap of the last segment, from the end of its last batch fed (its start when none
        was, or when the batches came without their place)."""
        if not self._segments:
            return None
        base, path = self._segments[-1]
        end = self._batches_end
        if end is not None and end[0] not in (base, None):
            end = None   # the last batch fed is in an earlier segment
        return tail_gap(str(path), 0 if end is None else end[1], base,
                        max(base, self._prev_last + 1) if end is not None else base)

    def finish(self) -> ReplicaAnalysis:
        replica = self.replica
        fault = self.fault
        if self._replay is None:
            self._replay = Replay(None, self._on_close, high_watermark_floor=self._hw_floor)
        if self._newest_offset is not None:  # every batch is below the newest snapshot
            # (with a fault, only those before it were replayed: nothing to compare)
            self._at_newest = None if fault is not None else _describe(self._replay.producers)
        rep = self._replay.result()
        # With a fault the log ends where the replay stopped (LogLoader.recoverLog truncates there).
        bases = self._bases
        last_base = (bases[-1] if bases else None) if fault is None else None
        loaded = self._load.finish(max(rep.producers.map_end_offset, last_base or 0, self._log_start))
        if loaded is not None:
            rep.producers.take_producers(loaded)
        log_fault = None if fault is None else f"{fault.reason} at byte {fault.position} of {fault.path}: {fault.message}"
        state = replica_state(replica.broker, replica.topic, replica.partition, rep,
                              first_segment_base=bases[0] if bases else None,
                              last_segment_base=bases[-1] if bases else None,
                              hw_checkpoint=self._hw_checkpoint, log_start_checkpoint=self._log_start_checkpoint,
                              recovery_point_checkpoint=self._recovery_point_checkpoint,
                              snapshot_offsets=[s.offset for s in self.snapshots],
                              segment_bases=bases,
                              named_bases=[(b, os.path.basename(str(p))) for b, p in replica.indexes + replica.txn_indexes],
                              log_fault=log_fault, copy_end=None if fault is None else self._copy_end)
        epochs = leader_epochs(replica, self.findings)
        if fault is None:  # (past a fault the copy's batches go on: not a gap)
            cuts = (epoch_gap(epochs, state.log_end_offset), self._tail_gap(),
                    *(f"producer snapshot {Path(s.path).name} not read ({s.finding.message}): the producers a "
                      "broker loads from it are not known" for s in self._unread_snapshots))
            if any(cuts):
                state = dataclasses.replace(state, copy_gap="; ".join(filter(None, (state.copy_gap, *cuts))))
        if state.copy_gap is not None:
            # Kafka would load what is here; the copy is short of what the broker had.
            self.findings.append(Finding(str(replica.path), -1, INCOMPLETE, f"incomplete copy: {state.copy_gap}"))
        if self._dir_gap is not None:
            # The listing's 'incomplete' finding locates it (logscan.scan.log_dirs).
            state = dataclasses.replace(state, copy_gap="; ".join(filter(None, (state.copy_gap, self._dir_gap))))
        if replica.topic == TRANSACTION_STATE_TOPIC:
            # The coordinator loads what this replica holds: a fault in its log, or a record its
            # load stops at, leaves it short of what it says (coordinator_copy reads copy_gap).
            lacking = [g for g in (state.copy_gap, *self._coordinator_faults,
                                   None if fault is None else f"the log breaks Kafka's offset rules: {log_fault}")
                       if g is not None]
            if lacking:
                state = dataclasses.replace(state, copy_gap="; ".join(lacking))
        check = check_newest_snapshot(self.snapshots, self._at_newest, self._seed)
        return ReplicaAnalysis(state, rep, self.max_timestamp, self.snapshots, check,
                               max((e.epoch for e in epochs), default=None), self.findings)


def analyse_replica(replica: ReplicaDir, facts: Iterable[BatchFact], *, hw_checkpoint: Optional[int],
                    log_start_checkpoint: Optional[int], recovery_point_checkpoint: Optional[int] = None,
                    on_close: Optional[OnClose] = None, dir_gap: Optional[str] = None) -> ReplicaAnalysis:
    """One replica's batches (log order, streamed) and its snapshot and epoch files, through
    Kafka's per-replica rules; what both drivers compute for every replica. Closed spans go
    to ``on_close``; the analysis keeps the open ones."""
    analyser = ReplicaAnalyser(replica, on_close, hw_checkpoint=hw_checkpoint,
                               log_start_checkpoint=log_start_checkpoint,
                               recovery_point_checkpoint=recovery_point_checkpoint, dir_gap=dir_gap)
    for fact in facts:
        analyser.feed(fact)
    return analyser.finish()
