"""The scan, written once: the steps from a copied cluster to its tables, in the order they run.

    list    listing.list_copy: brokers, replicas, checkpoints; work_units: a unit per segment
            file, or per byte range of a large one
    decode  decode(unit): a segment's batches, `__transaction_state` records, findings and its
            `files` row; with a replica's Replay, its batches replayed as they are read
    replay  Replay (per replica, its checksum-valid batch facts in log order): Kafka's
            per-replica rules; producer state, spans, the replica's partition_state row
    coordinator
            coordinator_copy over the __transaction_state replicas' state rows picks the replica
            of each coordinator partition to load; coordinator(records) loads one partition
            (last record per transactional id wins); coordinator_view joins the partitions and
            indexes their records by producer id
    as_of   the scan's "now" when none is given
    metadata
            metadata(replica, as_of): leaders and partition counts from `__cluster_metadata`
    assess  per partition: its replicas' state and open-transaction rows, its closed spans by
            CLOSED_SPAN_ORDER, its leader: leader, agreement, find-hanging, abort plans
    after assess
            the blast radius of a hang, from small rows of the steps before (per replica, per
            partition, per group-partition, per transactional id):
            served(partition_state): the replica each partition is served from;
            offsets(commits, state, as_of): one __consumer_offsets partition's committed_offsets,
            from the commit rows decode read of its served replica, in OFFSETS_ORDER;
            groups(...): affected_groups; impact(...): partition_impact, from the replicas'
            partition_state and files rows, the cleaner's checkpoints and the topics' configs;
            history(records, spans): transactional_id_history, from the coordinator's records
            (coordinator's input) and the served replicas' spans
    summary logscan.scan.summary: the figures an operator reads, from the tables' rows

Each step is plain Python over rows (dicts named as the columns of logscan.scan.rows), and
says which rows it takes, grouped how and in what order. Two executors run the steps:
logscan.scan.local (one process: loops, sorts and groups in Python) and spark_jobs.scan
(tasks over work units, Spark's sorts and grouped Arrow maps, Delta). An executor only moves
rows between the steps; no rule of the scan lives in an executor.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from itertools import chain, takewhile
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple, Optional, Union

import pyarrow as pa

from logscan.defaults import DEFAULT_BOOTSTRAP, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from logscan.logdir.segment import Finding
from logscan.logdir.store import is_uri, location
from logscan.logdir.tree import ReplicaDir, file_size
from logscan.state import partition as P
from logscan.state.coordinator import (CoordinatorCopy, ProducerIdIndex, ReplicaEnd, TxnLogRecord, latest_states,
                                       merged_positions)
from logscan.state.facts import BatchFact
from logscan.state.history import SPAN_ORDER, history_rows, transactional_id_history
from logscan.state.offsets import served_state
from logscan.state.retention import remote_storage_in_copy, topic_configs
from logscan.state.spans import TxnSpan

from . import rows as R
from .listing import ListedReplica
from .summary import iso_ms
from .consumer_offsets import CONSUMER_OFFSETS_TOPIC
from .groups import groups as affected, partition_offsets
from .replica import (CLUSTER_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, TXN_STATE, ByteRange, ReplicaAnalyser,
                      ReplicaRead, iter_segment, range_count, read_metadata_events, segment_fact_columns)

__all__ = ["CLUSTER_METADATA_TOPIC", "TRANSACTION_STATE_TOPIC", "DEFAULT_MAX_TRANSACTION_TIMEOUT_MS",
           "DEFAULT_BOOTSTRAP", "Replay", "replica_info", "work_units", "decode", "replica_rows", "coordinator",
           "coordinator_view", "replica_end", "as_of", "parse_as_of", "metadata", "told_coordinator", "CLOSED_SPAN_ORDER", "assess"]


# --- list ------------------------------------------------------------------------------------

def replica_info(listed: ListedReplica) -> R.Row:
    """A replica's listing row (the per-replica step's input besides its batches): its files
    by base offset and its broker's checkpoints."""
    r = listed.replica
    segments, snapshots, txn_indexes, indexes = r.files()
    return {**listed.key, "path": r.folder, "segments": _file_rows(segments),
            "snapshots": _file_rows(snapshots), "indexes": _file_rows(indexes),
            "txn_indexes": _file_rows(txn_indexes),
            "hw_checkpoint": listed.hw_checkpoint, "log_start_checkpoint": listed.log_start_checkpoint,
            "recovery_point_checkpoint": listed.recovery_point_checkpoint, "dir_gap": listed.dir_gap,
            "cleaner_checkpoint": listed.cleaner_checkpoint}


def _file_rows(files: list[tuple[int, str]]) -> list[R.Row]:
    return [{"base_offset": base, "file": str(path)} for base, path in files]


def replica_dir(info: R.Row) -> ReplicaDir:
    """A listing row's replica back as the listing held it (a URI's files as StorePaths)."""
    def files(name: str) -> list[tuple[int, str]]:
        return [(s["base_offset"], s["file"] if not is_uri(s["file"]) else location(s["file"]))
                for s in info[name] or ()]

    return ReplicaDir(info["broker"], info["topic"], info["partition"], location(info["path"]),
                      segments=files("segments"), snapshots=files("snapshots"), txn_indexes=files("txn_indexes"),
                      indexes=files("indexes"))


def work_units(listed: ListedReplica, split_bytes: Optional[int] = None) -> list[R.Row]:
    """A replica's work units in log order: one per segment file, or one per byte range of a
    file larger than ``split_bytes`` (None: every file whole)."""
    key, units = listed.key, []
    for base, path in listed.replica.segments:
        size = file_size(path)
        n = range_count(size, split_bytes)
        if n == 1:  # the file whole, as most are: its one unit without the loop
            units.append({**key, "file": str(path), "segment_base_offset": base, "size": size,
                          "range_index": 0, "ranges": 1, "split_bytes": split_bytes, "bytes": size})
            continue
        for i in range(n):
            units.append({**key, "file": str(path), "segment_base_offset": base, "size": size,
                          "range_index": i, "ranges": n, "split_bytes": split_bytes,
                          "bytes": min(size - i * split_bytes, split_bytes) if n > 1 else size})
    return units


# --- decode and replay -----------------------------------------------------------------------

#: How far past the scan's own clock a timestamp may be and still count as one: a producer's
#: clock a little ahead, a copy scanned on a machine whose clock lags. A CreateTime written in
#: microseconds (or int64 max) is far past it: such a batch is a 'timestamp' finding, and its
#: time is left out of the replica's newest timestamp and so out of the scan's "now".
TIMESTAMP_SLACK_MS = 86_400_000
#: The latest "now" --as-of may name: the end of year 9999, the last time Delta, Spark and
#: Python's datetime all represent.
MAX_AS_OF_MS = 253_402_300_799_999


def timestamp_ceiling() -> int:
    """The latest timestamp a batch or coordinator record may carry and count (the scan's clock
    plus TIMESTAMP_SLACK_MS)."""
    return int(time.time() * 1000) + TIMESTAMP_SLACK_MS

class Replay:
    """Kafka's per-replica rules (logscan.scan.replica.ReplicaAnalyser) over one replica, its
    listing row given, its checksum-valid batch facts fed in log order: a span's row comes out
    of :meth:`feed` as its end marker closes it, so a replica's closed transactions are never
    held; the other rows (and the spans still open) from :meth:`finish`. A CRC-failed batch
    never reaches it: Kafka's recovery truncates the log there (decode feeds only valid ones)."""

    __slots__ = ("key", "ident", "_closed", "_analyser", "_listed", "_segments", "_ceiling", "_newest")

    def __init__(self, info: R.Row) -> None:
        replica = replica_dir(info)
        self.key = R.replica_key(replica.broker, replica.topic, replica.partition)
        self.ident = (replica.broker, replica.topic, replica.partition)
        self._closed: list[TxnSpan] = []
        self._analyser = ReplicaAnalyser(replica, on_close=self._closed.append, hw_checkpoint=info["hw_checkpoint"],
                                         log_start_checkpoint=info["log_start_checkpoint"],
                                         recovery_point_checkpoint=info["recovery_point_checkpoint"],
                                         dir_gap=info.get("dir_gap"))
        self._listed = [base for base, _ in replica.segments]
        self._segments: list[int] = []  # the base offsets of the segments read by decode
        self._ceiling = timestamp_ceiling()
        self._newest = -1  # the newest batch maxTimestamp not past the ceiling

    def feed(self, fact: BatchFact, segment: Optional[int] = None, position: int = -1) -> list[tuple[str, R.Row]]:
        """``segment``, ``position``: the base offset of the segment holding the batch and its
        byte there, which the offset-order rules (ReplicaAnalyser.check_order) need to check
        a batch against its segment and to locate their findings."""
        self._analyser.feed(fact, segment, position)
        if self._newest < fact.max_timestamp <= self._ceiling:
            self._newest = fact.max_timestamp
        return self._closed_rows()

    def feed_columns(self, c, segment: Optional[int] = None) -> list[tuple[str, R.Row]]:
        """:meth:`feed` of every row of ``c`` (FactColumns of the segment whose base offset is
        ``segment``: replica.segment_fact_columns'; each row's place is its ``position``), in
        bulk (ReplicaAnalyser.feed_columns); the spans its rows close, in the order they close."""
        self._analyser.feed_columns(c, segment)
        stamps = c.max_timestamp
        newest = int(stamps.max())
        if newest > self._ceiling:
            stamps = stamps[stamps <= self._ceiling]
            newest = int(stamps.max()) if stamps.size else -1
        if newest > self._newest:
            self._newest = newest
        return self._closed_rows()

    def _closed_rows(self) -> list[tuple[str, R.Row]]:
        """The rows of the spans closed since the last call."""
        if not self._closed:
            return []
        rows = [("span", R.span_row(span, self.key)) for span in self._closed]
        self._closed.clear()
        return rows

    def read(self, unit: R.Row) -> None:
        """Notes that decode has read the segment of ``unit`` whole."""
        self._segments.append(unit["segment_base_offset"])

    def coordinator_fault(self, finding: Finding) -> None:
        """A 'txn-state' finding of this (`__transaction_state`) replica's decode: the
        coordinator's load stops at that record (ReplicaAnalyser.coordinator_fault)."""
        self._analyser.coordinator_fault(finding)

    def finish(self) -> Iterator[tuple[str, R.Row]]:
        if self._segments and self._segments != self._listed:
            raise ValueError(f"replica {self.key}: decode read segments {self._segments}, not the listed "
                             f"{self._listed} in log order")
        a = self._analyser.finish()
        key = self.key
        view = a.view()
        yield "state", R.state_row(a.state, self._newest, a.leader_epoch)
        yield from (("producer", r) for r in R.producer_rows(a.replay.producers, key, a.snapshot_check))
        yield from (("span", r) for r in R.span_rows(a.replay.open_spans, key))
        yield from (("open_txn", r) for r in R.open_txn_rows(view, key))
        yield from (("snapshot", r) for r in R.snapshot_rows(a.snapshots, key, a.snapshot_check))
        yield from (("file", r) for r in R.snapshot_file_rows(a.snapshots, key))
        yield from (("finding", R.finding_row(f, key)) for f in a.findings)


#: The table each row decode and Replay make is a row of, by its kind. A replica's state row
#: goes on to assess, which gives its partition_state row; an open_txn row is assess's input
#: only; a "range" row (a split file's hand-offs) tells which byte ranges count
#: (replica.valid_ranges). The batches table's rows are the "batch" and DAMAGED items.
TABLE_OF = {"file": "files", "finding": "corruptions", "txn_log": "txn_log", "producer": "producer_state",
            "span": "txn_spans", "snapshot": "producer_snapshots",
            # a __consumer_offsets replica's commits and markers: the groups step's input, of no
            # table (rows.STEP_ROWS)
            "offset_commit": "offset_commits"}
#: The table each row assess gives is a row of, by its kind.
ASSESSED = {"state": "partition_state", "candidate": "hanging_candidates", "plan": "abort_plans"}

#: The kinds of decode()'s batch items: "batch" (replayed) and DAMAGED (a batch failing its CRC,
#: only a row of the batches table).
DAMAGED = "damaged"
BATCH_KINDS = ("batch", DAMAGED)


#: The smallest segment decode replays in bulk (_replay_tables): its facts through
#: replica.segment_fact_columns (a table of fewer than replica.BULK_ROWS rows is fed a row at a
#: time, ReplicaAnalyser._feed_rows, from the compiled step's fact objects), not the walk a batch
#: at a time. Below it the walk's smaller fixed cost a segment wins. The single-process scan of
#: copies of 100 partitions' small segments, this against the walk (BULK_MIN_BYTES past any),
#: CPU median of 7-11 scans in turns, machine loaded, 2026-12-07: 16 KB segments of 256 B
#: batches 0.34 against 0.45 s, of 1 KiB batches 0.30 against 0.35, of 4 KiB batches (4 a
#: segment) 0.18 against 0.17; 8 KB segments of 1 KiB batches 0.20 against 0.23; 2 KB
#: segments of 1 KiB batches 0.25 against 0.22. From 16 KiB the segments of batches up to
#: 1 KiB gain 15-25%, those of a few 4 KiB batches lose ~10%.
BULK_MIN_BYTES = 16 << 10


def decode(unit: R.Row, replay: Optional[Replay] = None, *, headers: bool = True
           ) -> Iterator[tuple[str, object]]:
    """One work unit (a segment file, or a byte range of one) into tagged items, streamed as the
    walk goes: its checksum-valid batches as ("batch", (BatchFact, header)) pairs (header None
    unless ``headers``), then `__transaction_state` records, findings, a split file's hand-offs
    and its `files` row, as rows (the files row last, once the counts are known; a split file's
    rows are summed over its kept ranges). With ``replay`` (the unit's replica, read whole in
    log order) each "batch" is replayed as it is read, and the spans it closes come out as they
    close. With ``headers``, the batches that fail their CRC come after them as ("damaged",
    pair): rows of the batches table, never replayed by either executor (Kafka's recovery
    truncates the log there), which only "batch" items are. With ``replay`` and without
    ``headers``, a segment of BULK_MIN_BYTES or more read whole whose records are not decoded
    (neither `__transaction_state` nor `__consumer_offsets`) is replayed in bulk, a fact table
    at a time (_replay_tables), and gives no "batch" item, which neither executor takes then;
    everything else comes as the walk a batch at a time gives it."""
    key = R.replica_key(unit["broker"], unit["topic"], unit["partition"])
    path = unit["file"]
    split = unit["ranges"] > 1
    rng = ByteRange(unit["range_index"], unit["ranges"], unit["split_bytes"]) if split else None
    read = ReplicaRead()
    ceiling = timestamp_ceiling()
    segment = unit["segment_base_offset"]
    offsets = unit["topic"] == CONSUMER_OFFSETS_TOPIC
    broker = {"broker": unit["broker"]}
    if (replay is not None and not headers and not split and unit["size"] >= BULK_MIN_BYTES
            and unit["topic"] not in (TRANSACTION_STATE_TOPIC, CONSUMER_OFFSETS_TOPIC)):
        # Its batches go to the replay only, and no record of theirs is decoded: in bulk.
        yield from _replay_tables(path, unit["partition"], segment, read, replay, ceiling)
        iterated = ()
    else:
        iterated = iter_segment(path, unit["partition"], is_txn_log=unit["topic"] == TRANSACTION_STATE_TOPIC,
                                out=read, headers=headers, byte_range=rng, offsets=offsets)
    for pair in iterated:
        yield "batch", pair
        if offsets and read.offset_commits:
            for row in read.offset_commits:
                yield "offset_commit", {**broker, **row}
            read.offset_commits.clear()
        if pair[0].max_timestamp > ceiling:
            read.findings.append(_future(path, pair[1].position, pair[0].max_timestamp))
        if replay is not None:
            closed = replay.feed(pair[0], segment, pair[1].position)
            if closed:
                yield from closed
    for row in read.offset_commits:   # the last batch's
        yield "offset_commit", {**broker, **row}
    if replay is not None:
        replay.read(unit)
        for finding in read.findings:
            if finding.reason == TXN_STATE:
                replay.coordinator_fault(finding)
    for pair in read.damaged:
        yield DAMAGED, pair
    for row in R.txn_log_rows(read, key, path):
        yield "txn_log", row
    for finding in read.findings:
        yield "finding", R.finding_row(finding, key)
    if split:
        yield "range", {"file": path, "range_index": unit["range_index"], "ranges": unit["ranges"],
                        "handoffs": [{"range_index": i, "clean": c} for i, c in read.handoffs]}
    # Kafka's largestTimestamp of the segment: -1 (NO_TIMESTAMP) when it holds no batch; null
    # when what it holds could not all be read
    newest = read.max_timestamp if read.batches or not read.findings else None
    yield "file", {**key, "file": path, "kind": "log_segment", "size": unit["size"],
                   "status": R.file_status(read.findings), "error_count": len(read.findings),
                   "batches": read.batches + read.damaged_count, "detail": None,
                   "max_timestamp": newest, "max_time": R.ms_time(newest)}


def merge_split_files(rows: Iterable[R.Row], kept: set[tuple[str, int]]) -> list[R.Row]:
    """The files rows of files decode read in byte ranges (a row per range, with its
    ``range_index``): one per file, summed over the ranges replica.valid_ranges keeps
    (``kept``: (file, range_index) pairs), with the worst status (rows.STATUS_ORDER)."""
    merged: dict[str, R.Row] = {}
    for r in rows:
        if (r["file"], r["range_index"]) not in kept:
            continue
        m = merged.get(r["file"])
        if m is None:
            merged[r["file"]] = {k: v for k, v in r.items() if k != "range_index"}
            continue
        m["error_count"] += r["error_count"]
        m["batches"] += r["batches"]
        m["status"] = max(m["status"], r["status"], key=R.STATUS_ORDER.index)
        if r["max_timestamp"] is not None and (m["max_timestamp"] is None or r["max_timestamp"] > m["max_timestamp"]):
            m["max_timestamp"], m["max_time"] = r["max_timestamp"], r["max_time"]
    return list(merged.values())


def _replay_tables(path: str, partition: int, segment: int, read: ReplicaRead, replay: Replay, ceiling: int
                   ) -> Iterator[tuple[str, R.Row]]:
    """decode's walk of a segment whose batches only its replica's replay takes (read whole, no
    batches table, no record decoded): replica.segment_fact_columns' columns fed to
    Replay.feed_columns, the spans they close as rows. Each batch past ``ceiling`` has its
    finding where the walk a batch at a time puts it: after the findings of the batches and
    bytes before the batch's end, before those after it."""
    future: list[tuple[int, Finding]] = []
    for c in segment_fact_columns(path, partition, out=read):
        past = c.max_timestamp > ceiling
        if past.any():
            future.extend((position + size, _future(path, position, stamp)) for position, size, stamp in
                          zip(c.position[past].tolist(), c.size_in_bytes[past].tolist(),
                              c.max_timestamp[past].tolist()))
        closed = replay.feed_columns(c, segment)
        if closed:
            yield from closed
    if future:
        walked, read.findings[:] = list(read.findings), []
        i = 0
        for end, finding in future:
            while i < len(walked) and walked[i].position < end:
                read.findings.append(walked[i])
                i += 1
            read.findings.append(finding)
        read.findings.extend(walked[i:])


def _future(path: str, position: int, timestamp_ms: int) -> Finding:
    return Finding(path, position, "timestamp",
                   f"maxTimestamp {timestamp_ms} is past the scan's clock by more than a day ({iso_ms(timestamp_ms)}; "
                   f"a CreateTime in microseconds?): the batch is read, its time is left out of the scan's as-of")


def replica_rows(info: R.Row, facts: Iterable, *, placed: bool = False) -> Iterator[tuple[str, R.Row]]:
    """The replay of one replica whose batches were decoded elsewhere (byte ranges of a split
    file, or another task): its listing row and its checksum-valid batch facts in log order;
    with ``placed``, (fact, segment base offset, byte position) triples, which the
    offset-order rules need (Replay.feed)."""
    replay = Replay(info)
    feed = replay.feed
    for item in facts:
        closed = feed(*item) if placed else feed(item)
        if closed:
            yield from closed
    yield from replay.finish()


# --- the coordinator, the scan's "now", the metadata -----------------------------------------

#: The order of one coordinator partition's txn_log rows: log order.
TXN_LOG_ORDER = ("file", "position", "offset")


def coordinator(records: Iterable[R.Row]) -> list[R.Row]:
    """One coordinator partition (the replica coordinator_copy chose), its txn_log rows in
    TXN_LOG_ORDER: the last record of each transactional id, as the coordinator loads it."""
    rows = iter(records)   # streamed: latest_states holds an id's last record, never the partition's
    first = next(rows, None)
    if first is None:
        return []
    key = R.replica_key(first["broker"], first["topic"], first["partition"])
    return [{**key, **R.txn_record_row(rec)}
            for rec in latest_states(R.txn_record_from_row(r) for r in chain([first], rows)).values()]


#: The partition_state columns an internal topic's replica is picked to be loaded by (ReplicaEnd).
REPLICA_END_COLUMNS = ("partition", "broker", "log_end_offset", "checkpointed_high_watermark", "copy_gap",
                       "leader_epoch")


def replica_end(state: R.Row) -> ReplicaEnd:
    """An internal topic's replica as coordinator.coordinator_copy and choose_replicas take it,
    from its partition_state row (REPLICA_END_COLUMNS)."""
    return ReplicaEnd(*(state[c] for c in REPLICA_END_COLUMNS))


class CoordinatorView(NamedTuple):
    """The coordinator_state table and what assess looks an open transaction's producer up in."""

    rows: pa.Table             # COORDINATOR_STATE, one row per transactional id, in id order
    kept: list[int]            # the position of each of ``rows`` in coordinator_view's input
    index: ProducerIdIndex     # producer id -> the records naming it (ProducerIdMatch)


#: The coordinator_state columns a TxnLogRecord is made of (rows.txn_record_from_row's): what
#: coordinator_view's index holds of its records.
TXN_RECORD_COLUMNS = ("partition", "offset", "transactional_id", "state", "producer_id", "previous_producer_id",
                      "next_producer_id", "producer_epoch", "transaction_timeout_ms", "partitions",
                      "last_update_timestamp_ms", "start_timestamp_ms", "coordinator_epoch")


def coordinator_view(per_partition: Union[pa.Table, Iterable[R.Row]]) -> CoordinatorView:
    """The coordinator_state table out of coordinator()'s rows of every partition (as an Arrow
    table of COORDINATOR_STATE's columns in any Arrow types of theirs, e.g. a Spark job's, or
    as rows), one row per transactional id (coordinator.merged_positions picks when an id is in
    two), and its records indexed by producer id (coordinator.ProducerIdIndex: the answers of
    coordinator.index_by_producer_id). Read as columns: no dict per row, no record but those
    a lookup asks for (made then from the index's own columns, which pickle as a few buffers)."""
    table = per_partition if isinstance(per_partition, pa.Table) else pa.Table.from_pylist(
        list(per_partition), schema=R.COORDINATOR_STATE)
    kept = merged_positions(*(table.column(c).to_pylist() for c in ("transactional_id", "last_update_timestamp_ms",
                                                                       "partition")))
    rows = table.select(R.COORDINATOR_STATE.names).cast(R.COORDINATOR_STATE).take(pa.array(kept, pa.int64()))
    records = rows.select(TXN_RECORD_COLUMNS).combine_chunks()
    index = ProducerIdIndex.of(_TxnRecords(records), *(records.column(c).to_pylist() for c in (
        "producer_id", "previous_producer_id", "next_producer_id")))
    return CoordinatorView(rows, kept, index)


class _TxnRecords:
    """coordinator_view's records by position (a Sequence for ProducerIdIndex): each made from
    the Arrow columns (TXN_RECORD_COLUMNS) when asked for."""

    __slots__ = ("_table",)

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __len__(self) -> int:
        return self._table.num_rows

    def __getitem__(self, i: int) -> TxnLogRecord:
        if not 0 <= i < self._table.num_rows:
            raise IndexError(i)
        return R.txn_record_from_row(self._table.slice(i, 1).to_pylist()[0])

    def __getstate__(self) -> bytes:
        # An Arrow IPC stream, compressed: 47,000 records pickle to ~1.5 MB, not ~6 (the
        # columns of ids, epochs and times are alike), in a few ms each way.
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self._table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_table(self._table)
        return sink.getvalue().to_pybytes()

    def __setstate__(self, data: bytes) -> None:
        self._table = pa.ipc.open_stream(data).read_all()


def as_of(newest_batch_ms: Optional[int], newest_record_ms: Optional[int]) -> int:
    """The scan's "now" when --as-of is not given: the later of the newest batch maxTimestamp
    of any replica (partition_state.max_timestamp) and the newest lastUpdateTimestamp of the
    records coordinator() loads (every txn_log row of the chosen replicas, tombstoned ids too);
    -1 when the copy has neither. Times past timestamp_ceiling() do not count: Replay leaves
    them out of max_timestamp, and the executors out of the records' newest (what is left here
    is a last guard)."""
    ceiling = timestamp_ceiling()
    return max(t for t in (newest_batch_ms, newest_record_ms, -1) if t is not None and t <= ceiling)


def parse_as_of(text: Optional[str]) -> Optional[int]:
    """--as-of as given: epoch milliseconds (a whole number, maybe negative) or ISO-8601 (a
    naive time is UTC). Raises ValueError with the accepted forms."""
    if text is None:
        return None
    text = text.strip()
    if re.fullmatch(r"-?[0-9]+", text):
        return _as_of_in_range(int(text))
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither epoch milliseconds nor an ISO-8601 time "
                         f"(e.g. 2026-11-22T21:00:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return _as_of_in_range(int(dt.timestamp() * 1000))


def _as_of_in_range(ms: int) -> int:
    if not 0 <= ms <= MAX_AS_OF_MS:
        raise ValueError(f"{ms} is out of range: give a time from 1970 to the end of year 9999")
    return ms


def metadata(info: R.Row, as_of_ms: int) -> list[tuple[str, R.Row]]:
    """The `__cluster_metadata` replica that reaches furthest (coordinator.choose_replicas),
    replayed: ("leader", row) per partition with its leader at ``as_of_ms`` and the last leader
    the log names (``last_leader``: whose replica holds every marker written, see
    hanging.without_leader; either may be None), ("topic", row) with each topic's partition
    count at ``as_of_ms``, ("config", row) with each topic config set at ``as_of_ms``
    (retention.topic_configs: topic, name, value), ("finding", row) for what could not be read."""
    replica = replica_dir(info)
    key = R.replica_key(replica.broker, replica.topic, replica.partition)
    findings: list[Finding] = []
    configs: list[tuple] = []
    events = read_metadata_events(replica, findings, configs)
    at, last = P.partition_leaders(events, as_of_ms), P.partition_leaders(events)
    out: list[tuple[str, R.Row]] = [("leader", {"topic": t, "partition": p, "leader": at.get((t, p)),
                                                "last_leader": last.get((t, p))})
                                    for t, p in sorted(at.keys() | last.keys())]
    out.extend(("topic", {"topic": t, "partitions": n}) for t, n in P.partition_counts(events, as_of_ms).items())
    set_then = topic_configs(c[1:] for c in takewhile(lambda c: c[0] <= as_of_ms, configs))  # as partition_counts
    out.extend(("config", {"topic": t, "name": k, "value": v}) for t in sorted(set_then)
               for k, v in sorted(set_then[t].items()))
    out.extend(("finding", R.finding_row(f, key)) for f in findings)
    return out


def told_coordinator(copy: CoordinatorCopy, told: Iterable[tuple[str, R.Row]]) -> CoordinatorCopy:
    """What the copy holds of `__transaction_state` (coordinator.coordinator_copy's) with what
    metadata()'s rows (``told``: its ("leader", row) and ("topic", row) items) say of the topic:
    its partition count and each partition's last leader (CoordinatorCopy.counted)."""
    count, last = None, {}
    for kind, row in told:
        if row["topic"] != TRANSACTION_STATE_TOPIC:
            continue
        if kind == "topic":
            count = row["partitions"]
        elif kind == "leader" and row["last_leader"] is not None:
            last[row["partition"]] = row["last_leader"]
    return copy.counted(count, last)


# --- per partition ---------------------------------------------------------------------------

#: The order the closed spans of one partition reach assess in: by end-marker offset (what
#: ClosedMarkers compares replicas by, holding one offset's markers at a time), then broker and
#: span index, so that both executors feed the same sequence.
CLOSED_SPAN_ORDER = ("end_marker_offset", "broker", "span_index")
#: What assess reads of a closed span: its order and rows.closed_from_row's columns (an
#: executor may move only these).
CLOSED_SPAN_COLUMNS = tuple(dict.fromkeys((*CLOSED_SPAN_ORDER, *R.CLOSED_COLUMNS)))


def closed_spans(spans: Iterable[R.Row]) -> Iterator[tuple[int, P.ClosedTxn]]:
    """A partition's txn_spans rows in CLOSED_SPAN_ORDER as assess takes them; open spans (no
    end marker: their open_txn rows count) are passed over."""
    for span in spans:
        if span["end_marker_offset"] is not None:
            yield R.closed_from_row(span)


def assess(states: list[R.Row], open_txns: list[R.Row], spans: Iterable[R.Row], leader: Optional[int], *,
           index: dict, as_of_ms: int, max_timeout_ms: int, coordinator: CoordinatorCopy,
           bootstrap: str, max_prepare_ms: Optional[int] = None,
           last_leader: Optional[int] = None) -> list[tuple[str, R.Row]]:
    """One partition: its replicas' partition_state rows (from Replay) and open_txn rows, its
    txn_spans rows in CLOSED_SPAN_ORDER (consumed once, never held), the leader
    `__cluster_metadata` names at as_of and the last one it names (metadata()'s leader row;
    None: none). Gives each replica's partition_state row with
    the cross-replica columns, the hanging candidates and the abort plans
    (logscan.state.partition.assess_partition against ``index``: producer id -> coordinator
    records, coordinator.index_by_producer_id of the coordinator_state rows)."""
    by_broker = {s["broker"]: s for s in states}
    txns: dict[int, list[R.Row]] = {}
    for t in open_txns:
        txns.setdefault(t["broker"], []).append(t)
    views = [R.view_from_rows(by_broker[b], txns.get(b, [])) for b in sorted(by_broker)]
    result = P.assess_partition(views, closed_spans(spans), metadata_leader=leader, index=index, as_of_ms=as_of_ms,
                                max_timeout_ms=max_timeout_ms, coordinator=coordinator, bootstrap=bootstrap,
                                max_prepare_ms=max_prepare_ms, last_leader=last_leader)
    out = [("state", R.assessed(by_broker[a.broker], a)) for a in result.replicas]
    out.extend(("candidate", R.candidate_row(R.replica_key(c.broker, c.topic, c.partition), c.txn, c.age_ms,
                                             c.verdict)) for c in result.candidates)
    out.extend(("plan", R.plan_row(broker, plan)) for broker, plan in result.plans)
    return out


# --- after assess: the blast radius of a hang ---------------------------------------------------

#: The order of one __consumer_offsets replica's commit rows (decode's "offset_commit"): log
#: order (a marker's offset is its batch's, after the records it ends).
OFFSETS_ORDER = ("offset",)
#: The order the history step takes the coordinator's records in: each coordinator partition's
#: log, partitions ascending.
HISTORY_RECORD_ORDER = ("partition", "offset")
#: What the history step reads of a txn_log row (_history_record's values): HISTORY_RECORD_ORDER
#: first; not the record's partitions nor its coordinator epoch.
HISTORY_RECORD_COLUMNS = ("partition", "offset", "transactional_id", "state", "producer_id", "previous_producer_id",
                          "next_producer_id", "producer_epoch", "transaction_timeout_ms",
                          "last_update_timestamp_ms", "start_timestamp_ms")
#: What the history step reads of a txn_spans row.
HISTORY_SPAN_COLUMNS = ("broker", "topic", "partition", "producer_id", "first_offset", "outcome", "duration_ms")
#: What history_in_order groups the spans by (a partition's transaction, in any replica).
HISTORY_SPAN_ORDER = SPAN_ORDER
#: What the groups step reads of an open span (txn_spans rows whose outcome is OPEN).
OPEN_SPAN_COLUMNS = ("broker", "topic", "partition", "producer_id", "producer_epoch", "first_offset", "outcome",
                     "start_timestamp")
#: What the steps after assess read of an assessed partition_state row.
SERVED_COLUMNS = ("broker", "topic", "partition", "log_start_offset", "log_end_offset", "high_watermark",
                  "last_stable_offset", "is_leader", "leader", "oldest_txn_last_timestamp")
#: What partition_impact reads of a files row.
SEGMENT_COLUMNS = ("broker", "topic", "partition", "file", "kind", "size", "max_timestamp")


def served(states: Iterable[R.Row]) -> dict[tuple[str, int], R.Row]:
    """(topic, partition) -> the assessed partition_state row (SERVED_COLUMNS) of the replica
    the partition is served from: its leader's, else the one furthest ahead (offsets.served_state)."""
    return served_state(states)


def served_keys(states: Iterable[R.Row]) -> set[tuple[int, str, int]]:
    """The (broker, topic, partition) of each served replica: whose commit rows the groups step
    loads and whose spans the history step counts."""
    return served_replicas(served(states))


def served_replicas(served_states: dict[tuple[str, int], R.Row]) -> set[tuple[int, str, int]]:
    """served_keys, of what served() gave: for an executor that has it already, which spares
    served() a second pass over the states (20 ms of 60,009 on make bench's cores copy,
    2026-12-08)."""
    return {(s["broker"], s["topic"], s["partition"]) for s in served_states.values()}


def offsets(commits: Iterable[R.Row], state: R.Row, as_of_ms: int) -> list[R.Row]:
    """The committed_offsets rows of one __consumer_offsets partition: the commit rows of its
    served replica (``state``: that replica's partition_state row) in OFFSETS_ORDER, loaded as
    the group coordinator loads them up to its high watermark and ``as_of_ms``."""
    return partition_offsets(commits, state, as_of_ms)


def groups(offsets: Iterable[R.Row], states: Iterable[R.Row], candidates: Iterable[R.Row],
           open_spans: Iterable[R.Row], as_of_ms: int) -> list[R.Row]:
    """The affected_groups rows: the committed_offsets rows against the assessed partition_state
    rows, the hanging_candidates rows and the open spans (OPEN_SPAN_COLUMNS) of the served
    replicas (served_keys), any order."""
    return affected(offsets, list(states), candidates, open_spans, as_of_ms)


def row_maker(columns: Iterable[str]) -> Callable[[tuple], R.Row]:
    """The function making a row (a dict, ``columns`` its keys in their order) of a tuple of
    their values: dict(zip(columns, values)) for a tuple of as many values. Its code is made
    for the columns, as collections.namedtuple makes a class's: a dict display of the tuple's
    items, half the CPU of dict(zip()) (0.048 against 0.106 s for 100,000 rows of 9 columns,
    2026-12-08), what the Spark driver pays for each span and segment row it streams."""
    columns = tuple(columns)
    if not all(isinstance(c, str) for c in columns):
        raise TypeError(f"row_maker takes column names, not {columns!r}")
    items = ", ".join(f"{c!r}: v[{i}]" for i, c in enumerate(columns))
    return eval(f"lambda v: {{{items}}}", {})   # the columns' reprs and indexes only


def by_replica(rows: Iterable[R.Row]) -> Callable[[tuple[int, str, int]], list[R.Row]]:
    """Rows held in memory, as impact's ``segments_of`` takes them: (broker, topic, partition)
    -> that replica's rows."""
    grouped: dict[tuple[int, str, int], list[R.Row]] = {}
    for r in rows:
        grouped.setdefault((r["broker"], r["topic"], r["partition"]), []).append(r)
    return lambda key: grouped.get(key, [])


def impact(states: Iterable[R.Row], segments_of: Callable[[tuple[int, str, int]], Iterable[R.Row]],
           cleaner_checkpoints: dict[tuple[int, str, int], int], configs: Iterable[R.Row], as_of_ms: int
           ) -> Iterator[R.Row]:
    """The partition_impact rows, a replica at a time, by (topic, partition, broker): each
    replica's partition_state row against its log segments' files rows (``segments_of((broker,
    topic, partition))``: SEGMENT_COLUMNS, any order, read once), its log dir's
    cleaner-offset-checkpoint entry (``cleaner_checkpoints``: by (broker, topic, partition),
    from the listing rows: replica_info's cleaner_checkpoint), the topics' configs (metadata's
    ("config", row) rows) and whether the copy shows remote storage in use."""
    from logscan.state.retention import replica_impact, replica_segments
    states = sorted(states, key=_IMPACT_ORDER)
    by_topic: dict[str, dict[str, str]] = {}
    for c in configs:
        by_topic.setdefault(c["topic"], {})[c["name"]] = c["value"]
    remote = remote_storage_in_copy(s["topic"] for s in states)
    for state in states:
        # impact_rows's row of the replica, its log_segment rows its segments and their batches
        yield replica_impact(state, replica_segments(segments_of((state["broker"], state["topic"], state["partition"]))),
                             cleaner_checkpoints, by_topic, remote, as_of_ms)


#: The order impact gives its rows in.
_IMPACT_ORDER = itemgetter("topic", "partition", "broker")


def history(records: Iterable[R.Row], spans: Iterable[R.Row], order=sorted) -> list[R.Row]:
    """The transactional_id_history rows: the txn_log rows of the replica of each coordinator
    partition that coordinator() loads (all of them, HISTORY_RECORD_COLUMNS, in any order: put
    in HISTORY_RECORD_ORDER here), and the spans (HISTORY_SPAN_COLUMNS) of each partition's served replica
    (served_keys): a partition's transactions as consumers read them, each once. ``order``: a
    stable sort with sorted()'s contract, of rows: sorted() holds them; the local executor's
    spills them to disk (spool.SpoolFolder.sorted)."""
    ordered = order(map(_HISTORY_RECORD_VALUES, records), key=itemgetter(*range(len(HISTORY_RECORD_ORDER))))
    return _history(ordered, spans, order, spans_in_order=False)


#: A txn_log row's values of HISTORY_RECORD_COLUMNS, as a tuple (an itemgetter of more than one
#: key gives one): the tuple() of a generator per record it replaced took 0.09 of the local
#: history's 1.26 s under cProfile (47,016 records, 2026-12-08).
_HISTORY_RECORD_VALUES = itemgetter(*HISTORY_RECORD_COLUMNS)


def history_in_order(records: Iterable[tuple], spans: Iterable[R.Row], order=sorted) -> list[R.Row]:
    """:func:`history`, for an executor that puts its input in order itself: ``records`` the
    values of HISTORY_RECORD_COLUMNS as tuples, each transactional id's in HISTORY_RECORD_ORDER
    (the ids' interleaved in any way); ``spans`` grouped by transaction: HISTORY_SPAN_ORDER's
    equal keys together, in the order a stable sort by it leaves them (the transactions in
    any order). ``order`` puts the durations in order."""
    return _history(records, spans, order, spans_in_order=True)


def _history(records: Iterable[tuple], spans: Iterable[R.Row], order, *, spans_in_order: bool) -> list[R.Row]:
    """The history of ``records`` (the values of HISTORY_RECORD_COLUMNS, in HISTORY_RECORD_ORDER)
    and ``spans``."""
    from logscan.state.history import transactional_id_history_rows
    if spans_in_order:
        # the history reads a span's HISTORY_SPAN_COLUMNS only, and holds none past its
        # transaction's: a row holding them all is taken as it is (a subset test, 0.18 us,
        # against 0.43 us for the dict, 2026-12-08); one missing some is given None for them
        spans = (s if s.keys() >= _HISTORY_SPAN_KEYS else {c: s.get(c) for c in HISTORY_SPAN_COLUMNS} for s in spans)
    else:
        # what ``order`` holds or spills of a span: its HISTORY_SPAN_COLUMNS only
        spans = ({c: s.get(c) for c in HISTORY_SPAN_COLUMNS} for s in spans)
    return transactional_id_history_rows(map(_history_record, records), spans, order=order,
                                         spans_in_order=spans_in_order)


_HISTORY_SPAN_KEYS = frozenset(HISTORY_SPAN_COLUMNS)
_new_tuple = tuple.__new__


def _history_record(values: tuple) -> TxnLogRecord:
    """A coordinator record as the history reads it, from the values of HISTORY_RECORD_COLUMNS
    (its partitions and coordinator epoch, which the history does not read, left out)."""
    partition, offset, tid, state, pid, previous, following, epoch, timeout, last_update, start = values
    # TxnLogRecord's fields in its order, its defaults for partitions and coordinator_epoch:
    # made by tuple.__new__, as TxnLogRecord._make does, without the keyword call (0.22 us a
    # record against 0.51, min of 5 x 200,000, 2026-12-08)
    return _new_tuple(TxnLogRecord, (partition, offset, tid, state, pid, previous, following, epoch, timeout,
                                     _NO_PARTITIONS, last_update, start, _NO_COORDINATOR_EPOCH))


_NO_PARTITIONS = TxnLogRecord._field_defaults["partitions"]
_NO_COORDINATOR_EPOCH = TxnLogRecord._field_defaults["coordinator_epoch"]
