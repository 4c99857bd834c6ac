"""What runs inside Spark's Python workers: Arrow in, a step of the scan, Arrow out.

Nothing here knows Kafka's rules, nor the scan's: every step is logscan.scan.pipeline's
(decode, Replay, coordinator, metadata, assess), the same calls the single-process executor
(logscan.scan.local) makes. These functions only move rows between Arrow and those steps and
keep a Python worker's memory bounded (flushes, the collector). The module is shipped to
workers by value (``cloudpickle.register_pickle_by_value`` in scan.py), so workers need
logscan, not spark_jobs, on their path.

What the decode and the per-replica step hand Spark (OUT, built by :class:`TaskOutput`): each
table's rows of a task as a few large values, not a row each (``blob`` rows: the Arrow IPC
stream of the rows, written as Parquet only once the scan's as_of is known, by write_blobs); the
rows a later step reads, narrow (the replicas' states packed a partition's at a time,
``state_run``, ``open_txn`` rows and runs of closed spans, ``span_run``: a few spans of a
replica packed in a row, for the partition step, ``fact`` rows for the per-replica step); and
the task's tally (what the driver needs to plan the rest: byte ranges' hand-offs, the internal
topics' states, the newest times, split files' rows). A Spark row per batch of the copy, or per
span, in every member's columns, cost the JVM ~1.2 CPU-s per GB of the bench copy (make bench,
2026-11-27) moving them into Spark's rows and back.
"""

from __future__ import annotations

import gc
import json
from itertools import chain, groupby, repeat
from operator import itemgetter
from typing import Iterable, Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import Broadcast, TaskContext

from logscan.scan import pipeline
from logscan.scan import rows as R
from logscan.scan import spool
from logscan.scan.collector import young_collections_only
from logscan.scan.output import WRITTEN, Parts
from logscan.scan.pipeline import DAMAGED, TABLE_OF, Replay, decode, replica_rows
from logscan.scan.replica import CLUSTER_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from logscan.state.coordinator import CoordinatorCopy
from logscan.state.facts import BatchFact

_BASE_AND_FILE = pa.list_(pa.struct([pa.field("base_offset", pa.int64()), pa.field("file", pa.string())]))

#: Per replica, what the per-replica rules need besides its batches (listed on the driver).
REPLICA_INFO = pa.schema([
    pa.field("broker", pa.int32()), pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
    pa.field("path", pa.string()), pa.field("segments", _BASE_AND_FILE), pa.field("snapshots", _BASE_AND_FILE),
    pa.field("indexes", _BASE_AND_FILE), pa.field("txn_indexes", _BASE_AND_FILE),
    pa.field("hw_checkpoint", pa.int64()), pa.field("log_start_checkpoint", pa.int64()),
    pa.field("recovery_point_checkpoint", pa.int64()), pa.field("dir_gap", pa.string()),
])

#: A byte range's hand-offs (see logscan.scan.replica.valid_ranges); files read whole have none.
RANGES = pa.schema([
    pa.field("file", pa.string()), pa.field("range_index", pa.int32()), pa.field("ranges", pa.int32()),
    pa.field("handoffs", pa.list_(pa.struct([pa.field("range_index", pa.int32()), pa.field("clean", pa.bool_())]))),
])

#: The leader of each partition at as_of and the last one, from __cluster_metadata
#: (pipeline.metadata's leader rows).
LEADERS = pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                     pa.field("leader", pa.int32()), pa.field("last_leader", pa.int32())])

_RANGE_KEYS = [pa.field("segment", pa.string()), pa.field("range_index", pa.int32()), pa.field("ranges", pa.int32())]
_PARTITION_KEYS = [pa.field("topic", pa.string()), pa.field("partition", pa.int32())]

#: A checksum-valid batch's fact and place: what the per-replica step reads of a replica its
#: decode task did not replay.
FACTS = pa.schema([R.BATCHES.field(n) for n in ("broker", "topic", "partition", "segment_base_offset", "position",
                                                *BatchFact._fields)])
#: Some rows of one table (``table``: a name of rows.TABLES) as one value: ``data`` is the Arrow
#: IPC stream of ``rows`` rows of that table's columns (blob_batches reads it back).
BLOB = pa.schema([pa.field("table", pa.string()), pa.field("rows", pa.int64()), pa.field("data", pa.binary())])
#: A run of one replica's closed spans, what the partition step reads of them: ``data`` holds
#: the values of pipeline.CLOSED_SPAN_COLUMNS of ``spans`` spans in pipeline.CLOSED_SPAN_ORDER
#: (a chunk, spool.pack), the other columns its first span's order, by which Spark sorts the
#: runs (the partition step merges them: spool.merge_chunks); its topic and partition are OUT's
#: key columns. A replica's spans go in runs of up to _FLUSH_ROWS, a few Spark rows for the
#: spans of a replica, not a row each: on make bench's 1 GB copy, 3,000 rows for its 18,000
#: closed spans.
SPAN_RUN = pa.schema([*(R.TXN_SPANS.field(n) for n in pipeline.CLOSED_SPAN_ORDER),
                      pa.field("spans", pa.int32()), pa.field("data", pa.binary())])
_SPAN_ORDER = len(pipeline.CLOSED_SPAN_ORDER)
#: A closed span's SPAN_RUN values out of its txn_spans row.
_span_values = itemgetter(*pipeline.CLOSED_SPAN_COLUMNS)
_SPAN_TABLE = TABLE_OF["span"]
assert pipeline.CLOSED_SPAN_COLUMNS[:_SPAN_ORDER] == pipeline.CLOSED_SPAN_ORDER   # a run's values start with it
#: The partition_state columns the partition step itself fills (pipeline.assess): not in the
#: states it is handed (STATE_RUN).
ASSESSED_ONLY = R.ASSESSMENT_COLUMNS
#: What the partition step reads of a replica's partition_state row.
PARTITION_STATE_IN = pa.schema([f for f in R.PARTITION_STATE if f.name not in ASSESSED_ONLY])
_STATE_IN_NAMES = tuple(PARTITION_STATE_IN.names)
#: The states of one partition's replicas a task made, what the partition step reads of them:
#: ``data`` holds the values of PARTITION_STATE_IN's columns of ``states`` rows (a chunk,
#: spool.pack, as the local executor's rows hold them); its topic and partition are OUT's key
#: columns. A state as a struct of its 26 columns was a wide member of OUT, null in every other
#: row of it, through Spark's cache, shuffle and sort (make bench's 1 GB copy: 3,000 states).
STATE_RUN = pa.schema([pa.field("states", pa.int32()), pa.field("data", pa.binary())])
_INTERNAL_STATE = ("topic", *pipeline.REPLICA_END_COLUMNS)
#: The internal topics whose replicas' states the driver picks the replica to load by
#: (coordinator.coordinator_copy, choose_replicas).
INTERNAL_TOPICS = (TRANSACTION_STATE_TOPIC, CLUSTER_METADATA_TOPIC)
#: A task's tally: what the driver needs of its rows besides the tables, gathered as they are
#: made. The byte ranges' hand-offs; the partition_state columns of the internal topics'
#: replicas; the newest batch timestamp of any replica; per coordinator replica and byte range,
#: its newest record (the scan's as_of, pipeline.as_of); the files rows of split files
#: (pipeline.merge_split_files).
TALLY_MEMBERS = {
    "range": RANGES,
    "internal": pa.schema([R.PARTITION_STATE.field(n) for n in _INTERNAL_STATE]),
    "newest_batch": pa.schema([pa.field("max_timestamp", pa.int64())]),
    "newest_record": pa.schema([pa.field("broker", pa.int32()), pa.field("partition", pa.int32()),
                                pa.field("last_update_timestamp_ms", pa.int64())]),
    "split_file": pa.schema([*R.FILES, pa.field("range_index", pa.int32())]),
}
#: The rows of the decode and of the per-replica step (TaskOutput): blobs, the partition step's
#: rows (``state_run``: states, STATE_RUN; ``open_txn``; ``span_run``: runs of closed spans,
#: SPAN_RUN), the facts of the
#: replicas a decode task does not replay (``fact``), the tally. ``segment``, ``range_index``
#: and ``ranges`` name the byte range a row comes from when its file was split (a split
#: file's rows count only for the ranges replica.valid_ranges keeps); ``topic`` and
#: ``partition`` are the partition step's keys.
OUT = R.tagged_schema({"blob": BLOB, "state_run": STATE_RUN, "open_txn": R.OPEN_TXNS, "span_run": SPAN_RUN,
                       "fact": FACTS, **TALLY_MEMBERS}, _RANGE_KEYS + _PARTITION_KEYS)
#: The partition step's input rows, by kind.
PARTITION_KINDS = ("state_run", "open_txn", "span_run")

# What a Python step is handed holds no list column that is null in most rows. Spark's Arrow
# writer for a Python step's input (mapInArrow, applyInArrow) checks a batch's size after every
# row, and Arrow Java's ListVector.setValueCount fills the offsets of every row since the last
# non-null one each time: quadratic in a batch's rows where a list is mostly null, as in a
# tagged union's member struct holding a list (null in the other members' rows). Measured: a
# mapInArrow over 300,000 rows at local[1] took 12.1 s with a null struct holding
# REPLICA_INFO's lists in all but 3 rows, 0.7 s with the same struct as JSON text, 0.5 s bare
# (issue 30; a JFR profile of the 1 GB bench copy's warm scans gave ListVector.setValueCount
# 18% of the JVM task threads' samples). Hence the two inputs below; the other steps' inputs
# (blob rows, TXN_LOG rows, the metadata replica's one REPLICA_INFO row) have no list that is
# null in most rows. tests/spark/test_scan.py checks the frames build_tables makes.

#: The per-replica step's input (scan.replica_stream_input): per replica its listing row, then
#: its batches' facts. The listing row travels as JSON text (``info``: a REPLICA_INFO row,
#: :func:`replica_info_from_json`), null in the batch rows: as a struct its four list columns
#: would be null in every batch row.
REPLICA_STREAM_IN = pa.schema([*(FACTS.field(n) for n in ("broker", "topic", "partition")),
                               pa.field("kind", pa.int32()), pa.field("info", pa.string()),
                               *(FACTS.field(n) for n in ("segment_base_offset", "position", *BatchFact._fields))])
#: The partition step's input (scan.build_tables' partition_in): OUT's rows of PARTITION_KINDS,
#: with the partition's leaders (LEADERS).
PARTITION_IN = pa.schema([OUT.field("record_type"), *_PARTITION_KEYS, OUT.field("state_run"), OUT.field("open_txn"),
                          OUT.field("span_run"), LEADERS.field("leader"), LEADERS.field("last_leader")])
#: Partition count of each topic at as_of, from __cluster_metadata.
TOPICS = pa.schema([pa.field("topic", pa.string()), pa.field("partitions", pa.int32())])
#: A topic config set in __cluster_metadata at as_of (pipeline.metadata's "config" rows).
CONFIGS = pa.schema([pa.field("topic", pa.string()), pa.field("name", pa.string()), pa.field("value", pa.string())])
METADATA_OUT = R.tagged_schema({"leader": LEADERS, "topic": TOPICS, "finding": R.CORRUPTIONS, "config": CONFIGS})

#: Rows a Python worker holds before it hands them to Spark as one Arrow batch (OUT's narrow
#: rows), or before it makes them one Arrow batch of their table (a blob's rows). The pending
#: rows (and their objects: a batch fact and header each in the decode) are most of a task's
#: memory beyond the mapped window: at 20,000 the decode's RssAnon swung by ~50 MiB between
#: flushes, at 4096 by ~16 MiB, for the same CPU time (make bench, 2026-11-23).
_FLUSH_ROWS = 4096
#: Bytes of Arrow IPC a task holds in its tables' pending blobs before it hands them to Spark: a
#: blob is a value of a Spark row, held whole by the JVM and by the writer that reads it. A
#: constant of a worker's memory, reached early: the spans of a replica (~156 B a txn_spans row
#: in IPC) fill it at ~6,700 transactions. At 8 MiB a replica's per-replica step grew by up to
#: ~20 MiB between make bench's 1 GiB segment (13,600 transactions, 2.1 MiB of spans: never
#: filled) and its 3 GiB one (a 3x larger replica filled it, and the Arrow batches and their IPC
#: stream were both held at each flush), which read as memory growing with the segment.
BLOB_BYTES = 1 << 20


def freeze_worker_heap() -> None:
    """Called as each body here starts: in a Spark task, the objects alive then (the worker's
    modules: pyspark, pyarrow, logscan; what earlier tasks of the worker keep) move to the
    collector's permanent generation (gc.freeze). PySpark's daemon runs a full collection
    after every task of a reused worker (pyspark/daemon.py), which otherwise traverses them
    all: 40 to 100 ms a task for the ~88,000 objects of a decode worker, against ~110 ms of
    decoding in a task of 256 MiB of 48 KiB batches (make bench's 10 GB copy, 2026-11-24).
    Except in a worker's first task (which also freezes what its imports left), the daemon's
    collection has just run when a task starts, so what is frozen is in use; reference counting
    still frees it. Outside a Spark task (the tests, the local driver) nothing is frozen."""
    if TaskContext.get() is not None:
        gc.freeze()


#: Per work unit, the value of each column its batch rows share: BATCHES' key columns, then
#: OUT's (segment, range_index, ranges).
_UNIT_COLUMNS = (("broker", "broker"), ("topic", "topic"), ("partition", "partition"), ("file", "file"),
                 ("segment_base_offset", "segment_base_offset"), ("segment", "file"),
                 ("range_index", "range_index"), ("ranges", "ranges"))
#: OUT's byte-range keys of a row of no split file (every replica row: a replica is replayed
#: only when read whole).
_WHOLE = (None, 0, 1)


def _range_keys(unit: Optional[R.Row]) -> tuple:
    """OUT's (segment, range_index, ranges) of the rows of ``unit``: its own when its file is
    split, else _WHOLE."""
    if unit is None or unit["ranges"] == 1:
        return _WHOLE
    return unit["file"], unit["range_index"], unit["ranges"]


def _partition_keys(topics: tuple, partitions: tuple) -> dict[str, list]:
    """OUT's keys of rows that each carry a run of one partition (span_run, state_run): the
    partition's, with _WHOLE's byte-range keys."""
    n = len(topics)
    return {"segment": [None] * n, "range_index": [_WHOLE[1]] * n, "ranges": [_WHOLE[2]] * n,
            "topic": list(topics), "partition": list(partitions)}


def blob_batches(data: pa.Buffer | bytes) -> Iterator[pa.RecordBatch]:
    """A blob's rows back: the Arrow batches of its IPC stream (no copy of a buffer)."""
    yield from pa.ipc.open_stream(data)


class _BlobStream:
    """One blob being made: its table's rows written into an Arrow IPC stream as each batch of
    them is made, so a task holds a blob's bytes once (not its Arrow batches and then their
    stream beside them, as when a blob was written out whole at the flush)."""

    __slots__ = ("sink", "writer", "rows")

    def __init__(self, schema: pa.Schema) -> None:
        self.sink = pa.BufferOutputStream()
        self.writer = pa.ipc.new_stream(self.sink, schema)
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> int:
        """Writes ``batch``; the bytes the stream grew by."""
        before = self.sink.tell()
        self.writer.write_batch(batch)
        self.rows += batch.num_rows
        return self.sink.tell() - before

    def close(self) -> pa.Buffer:
        """The whole stream (ended)."""
        self.writer.close()
        return self.sink.getvalue()


class TaskOutput:
    """OUT batches of one task of the decode or of the per-replica step, made as its rows come.

    ``add(kind, row, unit)`` takes a row of pipeline.decode or Replay (``unit``: the work unit it
    comes from, None for a replica's own rows): a table's row (pipeline.TABLE_OF) joins its
    table's pending rows, a blob's to be; the partition step's (a state, an open_txn, a closed
    span) join the narrow rows (a state its partition's run, a closed span its replica's); the
    tally takes what it needs of ranges, files of split files, states and coordinator records.
    ``batches(struct, run_keys)`` takes rows of the batches table made column-wise
    (R.batch_struct), ``facts(struct, keys)`` the per-replica step's input rows. Made batches
    wait in :meth:`ready`; :meth:`finish` gives the rest and the tally.

    Memory: at most ``flush_rows`` narrow or pending rows of a table, and ``blob_bytes`` of
    Arrow IPC in the blobs not yet handed over (default _FLUSH_ROWS and BLOB_BYTES): a blob's
    rows are written into its stream as each batch of them is made (_BlobStream)."""

    def __init__(self, *, ceiling_ms: int, flush_rows: Optional[int] = None, blob_bytes: Optional[int] = None) -> None:
        self._ceiling = ceiling_ms
        self._flush_rows = flush_rows or _FLUSH_ROWS
        self._max_blob_bytes = blob_bytes or BLOB_BYTES
        self._ready: list[pa.RecordBatch] = []
        self._narrow: list[tuple[str, R.Row]] = []
        self._states: dict[tuple, list[tuple]] = {}   # (topic, partition) -> its states' STATE_RUN values
        self._narrow_states = 0
        self._run: list[tuple] = []           # the closed spans of the run being made (SPAN_RUN's values)
        self._run_of: Optional[tuple] = None  # its replica: (topic, partition, broker)
        self._runs: list[tuple] = []          # the runs made: (topic, partition, first span's order, count, data)
        self._runs_spans = 0                  # ... and their spans
        self._narrow_keys: list[tuple] = []
        self._pending: dict[tuple, list[R.Row]] = {}            # (table, range keys) -> rows
        self._blobs: dict[tuple, _BlobStream] = {}     # (table, range keys) -> its IPC stream so far
        self._blob_bytes = 0
        self._ranges: list[tuple] = []
        self._internal: list[R.Row] = []
        self._split_files: list[tuple[R.Row, tuple]] = []
        self._newest_batch: Optional[int] = None
        self._newest_record: dict[tuple, int] = {}

    @property
    def has_ready(self) -> bool:
        """Are OUT batches waiting (:meth:`ready`)? (Asked after every row: cheaper than
        handing over an empty list each time.)"""
        return bool(self._ready)

    def ready(self) -> list[pa.RecordBatch]:
        """The OUT batches made so far (handed over: the list is emptied)."""
        out, self._ready = self._ready, []
        return out

    def add(self, kind: str, row: R.Row, unit: Optional[R.Row] = None) -> None:
        keys = _range_keys(unit)
        if kind == "span":   # most rows: a replica's spans
            if row["end_marker_offset"] is not None:
                self._closed_span(row)
            self._pend(_SPAN_TABLE, keys, row)
            return
        if kind == "file" and keys is not _WHOLE:    # a split file's row per range: summed on the driver
            self._split_files.append(({**row, "range_index": unit["range_index"]}, keys))
            return
        if kind == "range":
            self._ranges.append((row, keys))
            return
        if kind == "state":   # a replica's own row: read whole (_WHOLE)
            self._states.setdefault((row["topic"], row["partition"]), []).append(tuple(map(row.get, _STATE_IN_NAMES)))
            self._narrow_states += 1
            if len(self._narrow) + self._narrow_states >= self._flush_rows:
                self._flush_narrow()
            if row["topic"] in INTERNAL_TOPICS:
                self._internal.append({c: row[c] for c in _INTERNAL_STATE})
            t = row["max_timestamp"]
            if t is not None and (self._newest_batch is None or t > self._newest_batch):
                self._newest_batch = t
            return
        if kind == "open_txn":
            self._narrow_row("open_txn", row, keys)
            return
        if kind == "txn_log":
            t = row["last_update_timestamp_ms"]
            at = (row["broker"], row["partition"], *keys)
            if t is not None and t <= self._ceiling and t > self._newest_record.get(at, t - 1):
                self._newest_record[at] = t
        self._pend(TABLE_OF[kind], keys, row)

    def _pend(self, table: str, keys: tuple, row: R.Row) -> None:
        """A row of ``table`` joins its pending rows, made an Arrow batch of a blob at ``flush_rows``."""
        pending = self._pending.get((table, keys))
        if pending is None:
            pending = self._pending[(table, keys)] = []
        pending.append(row)
        if len(pending) >= self._flush_rows:
            self._to_blob(table, keys, R.to_batch(pending, R.row_schema(table)))
            pending.clear()

    def batches(self, struct: pa.StructArray, keys: tuple) -> None:
        """Rows of the batches table (R.BATCHES' struct array), all of one byte range's
        ``keys`` (OUT's)."""
        self._to_blob("batches", keys, pa.RecordBatch.from_struct_array(struct))

    def facts(self, struct: pa.StructArray, keys: dict[str, list]) -> None:
        """FACTS rows (the per-replica step's input), with OUT's key columns per row."""
        self._ready.append(R.to_member_batch(struct, OUT, "fact", keys))

    def _narrow_row(self, kind: str, row: R.Row, keys: tuple) -> None:
        self._narrow.append((kind, row))
        self._narrow_keys.append(keys)
        if len(self._narrow) + self._narrow_states >= self._flush_rows:
            self._flush_narrow()

    def _closed_span(self, row: R.Row) -> None:
        """A closed span joins its replica's run, which ends (a SPAN_RUN row) at ``flush_rows``
        spans, at another replica's span, or at a span before it in pipeline.CLOSED_SPAN_ORDER
        (a replica's spans close in that order; a run is sorted whatever comes). The runs made
        leave as one OUT batch once they hold ``flush_rows`` spans."""
        values = _span_values(row)
        of = (row["topic"], row["partition"], row["broker"])
        if self._run and (of != self._run_of or values[:_SPAN_ORDER] < self._run[-1][:_SPAN_ORDER]):
            self._end_run()
        self._run_of = of
        self._run.append(values)
        if len(self._run) >= self._flush_rows:
            self._end_run()

    def _end_run(self) -> None:
        if self._run:
            topic, partition, _ = self._run_of
            self._runs.append((topic, partition, self._run[0][:_SPAN_ORDER], len(self._run), spool.pack(self._run)))
            self._runs_spans += len(self._run)
            self._run = []
            if self._runs_spans >= self._flush_rows:
                self._flush_runs()

    def _flush_runs(self) -> None:
        if self._runs:
            topics, partitions, firsts, counts, data = zip(*self._runs)
            columns = [*zip(*firsts), counts, data]
            struct = pa.StructArray.from_arrays([pa.array(c, f.type) for c, f in zip(columns, SPAN_RUN)],
                                                fields=list(SPAN_RUN))
            self._ready.append(R.to_member_batch(struct, OUT, "span_run", _partition_keys(topics, partitions)))
            self._runs.clear()
            self._runs_spans = 0
            gc.collect(1)

    def _flush_narrow(self) -> None:
        if not (self._states or self._narrow):
            return
        if self._states:
            (topics, partitions), runs = zip(*self._states), list(self._states.values())
            struct = pa.StructArray.from_arrays([pa.array(list(map(len, runs)), pa.int32()),
                                                 pa.array(list(map(spool.pack, runs)), pa.binary())],
                                                fields=list(STATE_RUN))
            self._ready.append(R.to_member_batch(struct, OUT, "state_run", _partition_keys(topics, partitions)))
            self._states.clear()
            self._narrow_states = 0
        if self._narrow:
            extras = [{"segment": k[0], "range_index": k[1], "ranges": k[2]} for k in self._narrow_keys]
            self._ready.append(R.to_tagged_batch(self._narrow, OUT, extras=extras))
            self._narrow.clear()
            self._narrow_keys.clear()
        gc.collect(1)

    def _to_blob(self, table: str, keys: tuple, batch: pa.RecordBatch) -> None:
        stream = self._blobs.get((table, keys))
        if stream is None:
            stream = self._blobs[(table, keys)] = _BlobStream(batch.schema)
        self._blob_bytes += stream.write(batch)
        if self._blob_bytes >= self._max_blob_bytes:
            self._flush_blobs()

    def _flush_blobs(self) -> None:
        """The pending blobs as OUT batches of one blob row each, its data the stream's own
        buffer (no copy)."""
        for (table, at), stream in self._blobs.items():
            data = stream.close()
            blob = pa.StructArray.from_arrays(
                [pa.array([table], pa.string()), pa.array([stream.rows], pa.int64()),
                 pa.Array.from_buffers(pa.binary(), 1, [None, pa.array([0, data.size], pa.int32()).buffers()[1], data])],
                fields=list(BLOB))
            self._ready.append(R.to_member_batch(blob, OUT, "blob", {
                "segment": [at[0]], "range_index": [at[1]], "ranges": [at[2]], "topic": [None], "partition": [None]}))
        if self._blobs:
            self._blobs.clear()
            self._blob_bytes = 0
            gc.collect(1)

    def finish(self) -> list[pa.RecordBatch]:
        """What is left, then the tally: the task's last OUT batches."""
        self._flush_narrow()
        self._end_run()
        self._flush_runs()
        for (table, keys), pending in self._pending.items():
            if pending:
                self._to_blob(table, keys, R.to_batch(pending, R.row_schema(table)))
        self._pending.clear()
        self._flush_blobs()
        tally: list[tuple[str, R.Row]] = []
        extras: list[R.Row] = []

        def put(kind: str, row: R.Row, keys: tuple = _WHOLE) -> None:
            tally.append((kind, row))
            extras.append({"segment": keys[0], "range_index": keys[1], "ranges": keys[2]})

        for row, keys in self._ranges:
            put("range", row, keys)
        for row in self._internal:
            put("internal", row)
        for row, keys in self._split_files:
            put("split_file", row, keys)
        if self._newest_batch is not None:
            put("newest_batch", {"max_timestamp": self._newest_batch})
        for (broker, partition, *keys), t in self._newest_record.items():
            put("newest_record", {"broker": broker, "partition": partition, "last_update_timestamp_ms": t},
                tuple(keys))
        if tally:
            self._ready.append(R.to_tagged_batch(tally, OUT, extras=extras))
        return self.ready()


def decode_units(units: Iterable[R.Row], *, batches: bool = True) -> Iterator[pa.RecordBatch]:
    """The decode of one task (a group of scan.plan_tasks: the reader of spark_jobs.source
    calls it per partition): its work units in, OUT batches out (TaskOutput). A replica whose
    first unit carries its listing row (scan.plan_tasks) is replayed as its units are read
    (pipeline.Replay), its rows made as they come. With ``batches`` (the batches table asked
    for) its rows are built column-wise (R.batch_struct: no dict per row) into blobs; the
    batches of a replica the task does not replay leave their facts (FACTS) for the
    per-replica step; a replayed replica's leave nothing else. The collector runs young
    collections only, at each flush (young_collections_only)."""
    freeze_worker_heap()
    with young_collections_only():
        yield from _decode_units(units, batches)


def _fact_struct(facts: list[BatchFact], headers: list, keys: dict[str, list]) -> pa.StructArray:
    """FACTS rows as one struct array, a column at a time (as R.batch_struct, no header columns
    but the position)."""
    columns: dict[str, object] = {**keys, "position": [h.position for h in headers]}
    columns.update(zip(BatchFact._fields, zip(*facts)) if facts else ((n, ()) for n in BatchFact._fields))
    return pa.StructArray.from_arrays([pa.array(columns[f.name], f.type) for f in FACTS], fields=list(FACTS))


def _decode_units(units: Iterable[R.Row], batches: bool) -> Iterator[pa.RecordBatch]:
    out = TaskOutput(ceiling_ms=pipeline.timestamp_ceiling(), flush_rows=_FLUSH_ROWS, blob_bytes=BLOB_BYTES)
    # The pending batches (a fact and a header each), of consecutive units of one kind: of
    # files read whole, or of one byte range; for the batches table, or the per-replica step
    # (``facts``: of a replica the task does not replay).
    facts: list[BatchFact] = []
    headers: list = []
    runs: list[tuple[tuple, int, bool]] = []  # per unit in the pending batches: its column values, count, replayed

    def flush_batches() -> None:
        if not facts:
            return
        columns = {name: list(chain.from_iterable(repeat(values[i], n) for values, n, _ in runs))
                   for i, (name, _) in enumerate(_UNIT_COLUMNS)}
        if batches:
            out.batches(R.batch_struct(facts, headers, columns), tuple(runs[0][0][-3:]) if runs[0][0][-1] > 1
                        else _WHOLE)
        stepped = [not replayed for _, n, replayed in runs for _ in range(n)]
        if any(stepped):
            struct = _fact_struct(facts, headers, columns)
            keys = {k: columns[k] for k in ("segment", "range_index", "ranges", "topic", "partition")}
            if not all(stepped):
                mask = pa.array(stepped)
                struct = struct.filter(mask)
                keys = {k: [v for v, s in zip(vs, stepped) if s] for k, vs in keys.items()}
            out.facts(struct, keys)
        facts.clear()
        headers.clear()
        runs.clear()
        gc.collect(1)

    replay: Optional[Replay] = None
    for unit in units:
        key = (unit["broker"], unit["topic"], unit["partition"])
        info = unit.get("replica")
        if replay is not None and (key != replay.ident or info is not None):
            for kind, item in replay.finish():
                out.add(kind, item)
            replay = None
        if info is not None:
            replay = Replay(info)
        split = unit["ranges"] > 1
        if split:   # a byte range's batches are a blob of their own (kept or not as a whole)
            flush_batches()
        values = tuple(unit[k] for _, k in _UNIT_COLUMNS)
        wanted = batches or replay is None  # does a batch of this unit leave the task?
        start = len(facts)
        damaged: list = []
        for kind, item in decode(unit, replay, headers=batches):
            if kind == DAMAGED:   # with batches only: a row of the batches table, rare
                damaged.append(item)
            elif kind == "batch":
                if not wanted:
                    continue
                facts.append(item[0])
                headers.append(item[1])
                if len(facts) >= _FLUSH_ROWS:
                    runs.append((values, len(facts) - start, replay is not None))
                    flush_batches()
                    start = 0
            else:
                out.add(kind, item, unit)
            if out.has_ready:
                yield from out.ready()
        if len(facts) > start:
            runs.append((values, len(facts) - start, replay is not None))
        if split:
            flush_batches()
        if damaged:
            keys = {name: [values[i]] * len(damaged) for i, (name, _) in enumerate(_UNIT_COLUMNS)}
            out.batches(R.batch_struct(*zip(*damaged), keys), _range_keys(unit))
        yield from out.ready()
    if replay is not None:
        for kind, item in replay.finish():
            out.add(kind, item)
    flush_batches()
    yield from out.finish()


#: ``kind`` of the rows of the per-replica stream (scan.replica_stream_input): a replica's
#: listing row sorts before its batch rows.
STREAM_INFO, STREAM_BATCH = 0, 1
_STREAM_KEYS = ("broker", "topic", "partition", "kind", "info", "segment_base_offset", "position")


def replica_info_from_json(text: str) -> R.Row:
    """A REPLICA_INFO row out of REPLICA_STREAM_IN's ``info`` (Spark's to_json of the row, its
    null fields kept): the dict its Arrow row gives (to_pylist)."""
    return json.loads(text)


def _stream_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[tuple, int, object]]:
    """(replica key, kind, the listing row or a BatchFact) per row of the sorted stream, one
    Arrow batch in memory at a time."""
    for batch in batches:
        keys = [batch.column(n).to_pylist() for n in _STREAM_KEYS]
        facts = [batch.column(n).to_pylist() for n in BatchFact._fields]
        for (broker, topic, partition, kind, info, segment, position), values in zip(zip(*keys), zip(*facts)):
            if kind == STREAM_INFO:
                yield (broker, topic, partition), kind, replica_info_from_json(info)
            else:  # a batch with its place (the offset-order rules check it against its segment)
                yield (broker, topic, partition), kind, (BatchFact(*values), segment, position)


def replica_stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over the per-replica stream (REPLICA_STREAM_IN rows): rows clustered by
    replica, each replica's listing row first, then its batch facts in log order
    (scan.replica_stream_input sorts them so). Each replica's batches are replayed as they
    arrive and its rows leave as OUT batches (TaskOutput) as they are made (a span's as it
    closes), so memory holds one Arrow batch in, what TaskOutput holds, and the replica's
    producer state and open spans: never the replica's batches nor its closed transactions.
    The collector runs young collections only, at each flush (young_collections_only)."""
    freeze_worker_heap()
    with young_collections_only():
        yield from _replica_stream(batches)


def _replica_stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    out = TaskOutput(ceiling_ms=pipeline.timestamp_ceiling(), flush_rows=_FLUSH_ROWS, blob_bytes=BLOB_BYTES)
    for _, rows in groupby(_stream_rows(batches), key=itemgetter(0)):
        _, kind, info = next(rows)
        if kind != STREAM_INFO:  # batches of a replica the driver did not list: cannot happen
            raise ValueError(f"batch rows of an unlisted replica {info!r}")
        for kind, row in replica_rows(info, (placed for _, _, placed in rows), placed=True):
            out.add(kind, row)
            if out.has_ready:
                yield from out.ready()
    yield from out.finish()


def coordinator_records(chosen: dict[int, int], kept: frozenset):
    """mapInArrow body over blob rows (OUT's ``blob`` and range keys): the txn_log rows of the
    replicas coordinator_copy chose (``chosen``: coordinator partition -> broker), of files read
    whole and kept byte ranges (``kept``), as TXN_LOG batches: the coordinator step's input."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        for batch in batches:
            for records in kept_blob_batches(batch, "txn_log", kept):
                mask = [chosen.get(p) == b for b, p in zip(records.column("broker").to_pylist(),
                                                            records.column("partition").to_pylist())]
                if any(mask):
                    yield records.filter(pa.array(mask))
    return run


def kept_blob_batches(batch: pa.RecordBatch, table: str, kept: frozenset) -> Iterator[pa.RecordBatch]:
    """The rows of ``table``'s blobs in an OUT batch (or in its blob and range-key columns), of
    files read whole and kept byte ranges (``kept``: (segment, range_index) pairs)."""
    for name, data, segment, i, n in _blobs_of(batch):
        if name == table and (n <= 1 or (segment, i) in kept):
            yield from blob_batches(data)


def _blobs_of(batch: pa.RecordBatch) -> Iterator[tuple]:
    """(table, data, segment, range_index, ranges) of each blob row of an OUT batch (or of its
    blob and range-key columns): its data as a buffer of the batch, not copied."""
    blob = batch.column("blob")
    tables = pc.struct_field(blob, "table").to_pylist()
    data = pc.struct_field(blob, "data")
    for i, (table, segment, index, ranges) in enumerate(zip(tables, batch.column("segment").to_pylist(),
                                                             batch.column("range_index").to_pylist(),
                                                             batch.column("ranges").to_pylist())):
        if table is not None:
            yield table, data[i].as_buffer(), segment, index, ranges


def write_blobs(output: str, scan_id: str, as_of_ms: int, tables: Iterable[str], kept: frozenset = frozenset()):
    """mapInArrow body over blob rows (OUT's ``blob`` and range keys, of the decode and of the
    per-replica step): the rows of each blob whose table is asked for (``tables``), of files
    read whole and of the byte ranges replica.valid_ranges keeps (``kept``: (segment,
    range_index) pairs), into one Parquet file per table of the task under ``output``
    (logscan.scan.output.Parts); then only what it wrote (WRITTEN rows) to Spark."""
    wanted = set(tables)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        parts = Parts(output, scan_id, as_of_ms)
        try:
            for batch in batches:
                for table, data, segment, i, n in _blobs_of(batch):
                    if table in wanted and (n == 1 or (segment, i) in kept):
                        for rows in blob_batches(data):
                            parts.add(table, rows)
        except BaseException:
            parts.abort()
            raise
        yield R.to_batch(parts.close(), WRITTEN)
    return run


#: What the coordinator step reads of a txn_log row: its columns but the timestamps beside
#: the epoch-ms ones, which rows.txn_record_row makes again for the records kept (made as a
#: datetime each by to_pylist, they were ~40% of the step's CPU: 47,000 records 0.72 -> 0.42
#: CPU-s, medians of 7 on a loaded machine, 2026-12-07).
_COORDINATOR_IN = [c for c in R.TXN_LOG.names if c not in R.time_columns(R.TXN_LOG)]


def coordinator_stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over the chosen replicas' txn_log rows, clustered by coordinator
    partition and each partition's in pipeline.TXN_LOG_ORDER (scan.py sorts them so):
    pipeline.coordinator of each partition, its rows streamed through it. A worker holds a
    partition's last record per transactional id (what the coordinator loads), not the
    partition's records: as an applyInArrow group (Arrow, then a dict per row, sorted) they
    were the peak of a Python worker after the decode once the blobs' writers got smaller
    batches (session.ARROW_BATCH_BYTES): 154-161 MiB RssAnon on make bench's cores copy, whose
    coordinator partitions hold ~1,000 records each (2026-12-07). Raises ValueError for rows
    out of that order."""
    freeze_worker_heap()
    order = itemgetter(*pipeline.TXN_LOG_ORDER)

    def in_order(rows: Iterator[R.Row]) -> Iterator[R.Row]:
        last = None
        for row in rows:
            at = order(row)
            if last is not None and at <= last:
                raise ValueError(f"coordinator records out of order: {at} after {last} "
                                 f"(partition {row['partition']})")
            last = at
            yield row

    rows = (row for batch in batches for row in batch.select(_COORDINATOR_IN).to_pylist())
    for _, records in groupby(rows, key=itemgetter("partition")):
        out = pipeline.coordinator(in_order(records))
        if out:
            yield R.to_batch(out, R.COORDINATOR_STATE)


def metadata_step(as_of_ms: int):
    """A mapInArrow body over the chosen `__cluster_metadata` replica (one REPLICA_INFO row):
    pipeline.metadata."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        for batch in batches:
            for info in batch.to_pylist():
                yield R.to_tagged_batch(pipeline.metadata(info, as_of_ms), METADATA_OUT)
    return run


#: Order of the partition step's rows within a partition (scan.py sorts them so): the states
#: and open transactions, few, before the runs of closed spans, which come in the
#: pipeline.CLOSED_SPAN_ORDER of their first spans.
PARTITION_ROW_ORDER = ("state_run", "open_txn", "span_run")
_span_order = itemgetter(*pipeline.CLOSED_SPAN_ORDER)


def partition_stream(index: Broadcast, *, as_of_ms: int, max_timeout_ms: int,
                     coordinator: CoordinatorCopy, bootstrap: str, output: str, scan_id: str,
                     tables: Iterable[str] = tuple(pipeline.ASSESSED.values()), max_prepare_ms: Optional[int] = None):
    """mapInArrow body over the replicas' state-run, open-transaction and closed-span-run rows
    (PARTITION_IN: states without the columns assess fills), clustered by (topic, partition),
    each carrying the partition's leader at as_of and its last leader from __cluster_metadata
    (null when it names none): per partition, logscan.state.partition.assess_partition
    against the coordinator state: ``index.value``,
    pipeline.coordinator_view's (scan.for_tasks: a Broadcast, or under Spark Connect a
    spark_jobs.shared.Shared; in-process, anything with that attribute).

    Either because a Python worker loads it once and keeps it for its later tasks, where
    a value in the closure is unpickled by every task, and the index was built by every task
    from the rows. On the 30,000-replica copy (23,501 transactional ids, 31 tasks) that was
    ~0.2 s a task: 6.7 s of the step's task time (2026-11-24).

    Within a partition the rows come in PARTITION_ROW_ORDER, the runs of closed spans (SPAN_RUN)
    by their first spans' pipeline.CLOSED_SPAN_ORDER: the views are built from the rows before
    the first run, and the runs are merged into that order (spool.merge_chunks) as they come,
    their spans streaming through assess_partition, so memory holds a partition's states and
    open transactions and a run per replica at most, never its closed transactions.

    The step's rows are the last of the scan: the task writes them into its own Parquet file
    of each of pipeline.ASSESSED's tables asked for (``tables``) under ``output``
    (logscan.scan.output.Parts) and hands Spark only what it wrote (WRITTEN rows), for the
    driver's commits."""
    kinds = {kind: table for kind, table in pipeline.ASSESSED.items() if table in set(tables)}
    order = {kind: i for i, kind in enumerate(PARTITION_ROW_ORDER)}

    def assess(rows: Iterator[tuple], index) -> list[tuple[str, R.Row]]:
        states: list[R.Row] = []
        open_txns: list[R.Row] = []
        leader, last_leader, first_run, last = None, None, None, -1
        for _, kind, state_run, txn, run, leader, last_leader in rows:
            if order[kind] < last:
                raise ValueError(f"partition rows out of order: a {kind} row after {PARTITION_ROW_ORDER[last]} rows")
            last = order[kind]
            if kind == "state_run":
                states.extend(states_of(state_run))
            elif kind == "open_txn":
                open_txns.append(txn)
            else:
                first_run = run
                break
        spans = () if first_run is None else spool.merge_chunks(runs_after(first_run, rows), _span_order)
        if not states:
            for _ in spans:  # spans of no listed replica: nothing to assess
                pass
            return []
        return pipeline.assess(states, open_txns, spans, leader, index=index, as_of_ms=as_of_ms,
                               max_timeout_ms=max_timeout_ms, coordinator=coordinator, bootstrap=bootstrap,
                               max_prepare_ms=max_prepare_ms, last_leader=last_leader)

    def runs_after(first: R.Row, rows: Iterator[tuple]) -> Iterator[list[R.Row]]:
        yield spans_of(first)
        for _, kind, _, _, run, _, _ in rows:
            if kind != "span_run":
                raise ValueError(f"partition rows out of order: a {kind} row after span_run rows")
            yield spans_of(run)

    def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple]:
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("topic", "partition", "record_type", "state_run",
                                                          "open_txn", "span_run", "leader", "last_leader")]
            for topic, partition, *rest in zip(*cols):
                yield ((topic, partition), *rest)

    def states_of(run: R.Row) -> list[R.Row]:
        states = [dict(zip(PARTITION_STATE_IN.names, values)) for values in spool.unpack(run["data"])]
        if len(states) != run["states"]:
            raise ValueError(f"a run of {run['states']} states holds {len(states)}")
        return states

    def spans_of(run: R.Row) -> list[R.Row]:
        spans = [dict(zip(pipeline.CLOSED_SPAN_COLUMNS, values)) for values in spool.unpack(run["data"])]
        if len(spans) != run["spans"]:
            raise ValueError(f"a run of {run['spans']} closed spans holds {len(spans)}")
        return spans

    def written(out: list[tuple[str, R.Row]], parts: Parts) -> None:
        for kind, table in kinds.items():
            rows = [row for k, row in out if k == kind]
            if rows:
                parts.add(table, R.to_batch(rows, R.TABLES[table]))
        out.clear()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        by_producer = index.value
        out: list[tuple[str, R.Row]] = []
        parts = Parts(output, scan_id, as_of_ms)
        try:
            for _, rows in groupby(rows_of(batches), key=itemgetter(0)):
                out.extend(assess(rows, by_producer))
                if len(out) >= _FLUSH_ROWS:
                    written(out, parts)
            written(out, parts)
        except BaseException:
            parts.abort()
            raise
        yield R.to_batch(parts.close(), WRITTEN)
    return run


