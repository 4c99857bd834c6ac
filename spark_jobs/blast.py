"""The steps after assess on Spark: committed_offsets, affected_groups, partition_impact and
transactional_id_history (logscan.scan.pipeline's "after assess" steps: the blast radius of a
hang), the Spark job's way.

These tables are small (a row per group-partition, per replica, per transactional id) and so
are most of what they are made from, so they are made on the driver, once the partition step
has written its tables (run: scan.run calls it before the commits), out of:

- the assessed partition_state and the hanging_candidates rows, read back from the Parquet the
  partition step wrote (a row per replica, per candidate);
- the topics' configs (the metadata step's "config" rows) and the cleaner's checkpoints (the
  listing's rows), on the driver already;
- out of the decode's blobs (no second read of the copy): the log segments' files rows
  (:func:`segment_rows`), the served replicas' spans (pipeline.HISTORY_SPAN_COLUMNS and
  OPEN_SPAN_COLUMNS, :func:`span_rows`) and the coordinator's records
  (tasks.coordinator_records, as the coordinator step takes them), each in a stream of its own.

What grows with the copy's traffic is never held whole on the driver: the segments, spans and
records are streamed to it a partition at a time (toLocalIterator), each stream read ahead by
a thread of its own so that their jobs run while the driver works (:class:`_ReadAhead`); Spark
groups the spans by transaction and the records by transactional id, in log order
(pipeline.history_in_order), and the driver folds them as they come, spilling only the
durations to its disk (SpoolFolder.sorted); the served `__consumer_offsets` replicas' commit
rows (decode's "offset_commit" rows, rows.OFFSET_COMMITS) are loaded in tasks, a partition's
rows sorted by Spark in pipeline.OFFSETS_ORDER (:func:`offsets_stream`); only the committed
offsets reach the driver. What the driver holds: a row per replica, per log segment, per open
span and candidate, per group-partition, per transactional id.

Nothing here knows a rule: which replica is served, how offsets load, what is held back, is
pipeline's.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from contextlib import ExitStack
from itertools import groupby
from operator import itemgetter
from typing import Iterable, Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from logscan.scan import pipeline
from logscan.scan.collector import young_collections_only
from logscan.scan import rows as R
from logscan.scan.output import is_remote, table_uri
from logscan.scan.pipeline import CONSUMER_OFFSETS_TOPIC
from logscan.scan import spool
from logscan.scan.spool import SpoolFolder
from spark_jobs.session import in_background
from spark_jobs.tasks import kept_blob_batches

#: What :func:`span_rows` gives of a served replica's txn_spans rows.
SPAN_COLUMNS = tuple(dict.fromkeys((*pipeline.OPEN_SPAN_COLUMNS, *pipeline.HISTORY_SPAN_COLUMNS)))
#: What the spans' sort (Spark's, :func:`tables`) moves of a served replica's txn_spans row:
#: SPAN_COLUMNS and what breaks its ties (:func:`span_order_ties`).
SPAN_SORTED = pa.schema([R.TXN_SPANS.field(c).remove_metadata()
                         for c in dict.fromkeys((*SPAN_COLUMNS, "end_marker_offset", "span_index"))])
#: What affected_groups reads of a hanging_candidates row.
CANDIDATE_COLUMNS = ("broker", "topic", "partition", "producer_id", "producer_epoch", "start_offset",
                     "last_timestamp", "hanging", "reason", "transactional_id")


def _of_replicas(rows: pa.RecordBatch, keys: set[tuple[int, str, int]], broker: str = "broker",
                 topic: Optional[str] = "topic", partition: str = "partition") -> pa.RecordBatch:
    """The rows of ``rows`` whose replica is one of ``keys`` (a column at a time)."""
    brokers = rows.column(broker).to_pylist()
    topics = rows.column(topic).to_pylist() if topic else [CONSUMER_OFFSETS_TOPIC] * rows.num_rows
    partitions = rows.column(partition).to_pylist()
    return rows.filter(pa.array([k in keys for k in zip(brokers, topics, partitions)], pa.bool_()))


#: What :func:`segment_rows` and :func:`packed` give: rows in chunks, a chunk per Arrow batch
#: of a task (``data``: the values of ``rows`` rows as tuples, spool.pack), ``record_type``
#: naming the columns they hold: "span", a served replica's spans (SPAN_COLUMNS); "segment", a
#: log segment's files row (SEGMENT_COLUMNS but ``kind``); "record", a coordinator record
#: (pipeline.HISTORY_RECORD_COLUMNS). The driver reads them a partition at a time
#: (:class:`_ReadAhead`). A Spark row per span, segment or record was pickled by the JVM and made
#: a Row by the driver's Python: with chunks, the driver's CPU per GB at the margin fell from
#: 0.66 to 0.53 and the JVM task threads' from 0.33 to 0.25 (issue 30, docs/spark.md: medians
#: of four paired local[1] sessions, the 1065 MiB bench copy against its tenth). A chunk's
#: values are unpacked by marshal.
CHUNKS = pa.schema([pa.field("record_type", pa.string()), pa.field("rows", pa.int32()), pa.field("data", pa.binary())])
#: The columns of each kind of CHUNKS row, in its values' order.
CHUNK_COLUMNS = {"span": SPAN_COLUMNS, "segment": tuple(c for c in pipeline.SEGMENT_COLUMNS if c != "kind"),
                 "record": pipeline.HISTORY_RECORD_COLUMNS}
#: The row of a CHUNKS kind's values (pipeline.row_maker: dict(zip()) at half its CPU).
_ROW_OF = {kind: pipeline.row_maker(names) for kind, names in CHUNK_COLUMNS.items()}


def _chunk(rows: pa.RecordBatch, kind: str) -> pa.RecordBatch:
    """``rows`` (CHUNK_COLUMNS[kind] at least) as one CHUNKS row of ``kind``."""
    columns = [rows.column(c).to_pylist() for c in CHUNK_COLUMNS[kind]]
    return pa.RecordBatch.from_arrays([pa.array([kind], pa.string()), pa.array([rows.num_rows], pa.int32()),
                                       pa.array([spool.pack(list(zip(*columns)))], pa.binary())], schema=CHUNKS)


def span_rows(served: set[tuple[int, str, int]], kept: frozenset):
    """mapInArrow body over blob rows: the txn_spans rows of the served replicas (``served``:
    pipeline.served_keys), SPAN_SORTED's columns."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for rows in kept_blob_batches(batch, "txn_spans", kept):
                rows = _of_replicas(rows, served)
                if rows.num_rows:
                    yield pa.RecordBatch.from_arrays([rows.column(c) for c in SPAN_SORTED.names], schema=SPAN_SORTED)
    return run


def segment_rows(kept: frozenset):
    """mapInArrow body over blob rows: the files rows of log segments, as CHUNKS rows."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for rows in kept_blob_batches(batch, "files", kept):
                rows = rows.filter(pc.equal(rows.column("kind"), "log_segment"))
                if rows.num_rows:
                    yield _chunk(rows, "segment")
    return run


def packed(kind: str):
    """mapInArrow body: each batch's rows (CHUNK_COLUMNS[kind] at least) as a CHUNKS row."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield _chunk(batch, kind)
    return run


def commit_rows(served: set[tuple[int, str, int]], kept: frozenset):
    """mapInArrow body over blob rows: the commit rows (rows.OFFSET_COMMITS) of the served
    `__consumer_offsets` replicas."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for rows in kept_blob_batches(batch, "offset_commits", kept):
                rows = _of_replicas(rows, served, topic=None, partition="offsets_partition")
                if rows.num_rows:
                    yield rows
    return run


def offsets_stream(states: dict[int, R.Row], as_of_ms: int):
    """mapInArrow body over the served replicas' commit rows, clustered by offsets partition and
    in pipeline.OFFSETS_ORDER within it: pipeline.offsets per partition (``states``: offsets
    partition -> its served replica's partition_state row)."""
    def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[R.Row]:
        for batch in batches:
            yield from batch.to_pylist()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for partition, rows in groupby(rows_of(batches), key=itemgetter("offsets_partition")):
            out = pipeline.offsets(rows, states[partition], as_of_ms)
            if out:
                yield R.to_batch(out, R.COMMITTED_OFFSETS)
    return run


def span_order_ties() -> list:
    """What breaks the ties of HISTORY_SPAN_ORDER in the spans' sort, as among the spans the
    local executor's stable sort takes: of one replica (a partition is served by one), its
    closed spans first, by end-marker offset (its CLOSED_SPAN_ORDER), then its open ones."""
    from pyspark.sql import functions as F

    return [F.col("end_marker_offset").isNull(), "end_marker_offset", "span_index"]


def read_written(output: str, table: str, written: Iterable[R.Row], columns: Iterable[str]) -> list[R.Row]:
    """The rows of ``table`` in the Parquet files a step wrote under ``output`` (its WRITTEN
    rows), ``columns`` only."""
    columns = list(columns)
    fs, prefix = None, None
    if is_remote(output):
        from logscan.logdir import store
        from logscan.scan.output import _given

        s = store.store_with(str(output), _given(output))
        fs, prefix = s.fs, s
    rows: list[R.Row] = []
    for w in written:
        path = f"{table_uri(output, table)}/{w['path']}"
        if fs is not None:
            with fs.open_input_file(prefix.path(path)) as f:
                rows.extend(pq.read_table(f, columns=columns).to_pylist())
        else:
            rows.extend(pq.read_table(path, columns=columns).to_pylist())
    return rows


@young_collections_only()
def tables(blobs, *, output: str, parts: dict[str, list[R.Row]], kept: frozenset, as_of_ms: int,
           chosen: dict[int, int], listing_files: list[R.Row], cleaner_checkpoints: dict, configs: list[R.Row],
           parallelism: int) -> dict[str, list[R.Row]]:
    """The four tables' rows (by name), made once the partition step's Parquet is written
    (``parts``: every table's WRITTEN rows so far). ``blobs``: the decode's (and per-replica
    step's) blob rows; ``chosen``: the coordinator replicas coordinator_copy picked;
    ``listing_files``: the files rows the driver made (a split file's merged row);
    ``parallelism``: the partitions of ``blobs``, of which the driver holds one at a time.

    Spark puts the history's input in its order (pipeline.history_in_order), a shuffle each
    (no sort's sampling pass): the coordinator's records by transactional id, each partition
    in HISTORY_RECORD_ORDER; the served spans by topic partition, each partition in
    HISTORY_SPAN_ORDER; streamed to the driver a partition at a time, folded as they come.
    The driver sorts only the durations (on its disk, SpoolFolder.sorted).

    Python's cyclic collector is paused (collector.young_collections_only): with it,
    collections over the driver's heap took ~0.6 of the ~2.6 CPU-s of the history of make
    bench's 2 GB copy, and collecting the young generations a chunk at a time ~0.3 s more, as
    what the step holds (states, segments, impact and history rows) stays young until it ends
    (2026-12-07). The step makes no reference cycles: what it drops, reference counting frees."""
    from pyspark.sql import functions as F

    from spark_jobs import schemas as S
    from spark_jobs import tasks

    states = read_written(output, "partition_state", parts.get("partition_state", ()), pipeline.SERVED_COLUMNS)
    candidates = read_written(output, "hanging_candidates", parts.get("hanging_candidates", ()), CANDIDATE_COLUMNS)
    served = pipeline.served(states)
    keys = pipeline.served_replicas(served)

    def of(table: str):
        return blobs.where(F.col("blob.table") == table)

    # the three streams' jobs started at once, each read ahead by a thread of its own
    # (_ReadAhead): the executors run them while the driver loads the committed offsets and
    # works on what came first
    with ExitStack() as streams:
        segment_chunks = streams.enter_context(_ReadAhead(
            of("files").mapInArrow(segment_rows(kept), S.spark_schema(CHUNKS))))
        record_chunks = streams.enter_context(_ReadAhead(
            of("txn_log").mapInArrow(tasks.coordinator_records(chosen, kept), S.spark_schema(R.TXN_LOG))
            .select(*pipeline.HISTORY_RECORD_COLUMNS)
            .repartition(parallelism, "transactional_id")
            .sortWithinPartitions(*pipeline.HISTORY_RECORD_ORDER)
            .mapInArrow(packed("record"), S.spark_schema(CHUNKS)))) if chosen else ()
        span_chunks = streams.enter_context(_ReadAhead(
            of("txn_spans").mapInArrow(span_rows(keys, kept), S.spark_schema(SPAN_SORTED))
            .repartition(parallelism, "topic", "partition")
            .sortWithinPartitions(*pipeline.HISTORY_SPAN_ORDER, *span_order_ties())
            .mapInArrow(packed("span"), S.spark_schema(CHUNKS))))
        offsets_served = {p: s for (t, p), s in served.items() if t == CONSUMER_OFFSETS_TOPIC}
        offsets: list[R.Row] = []
        if offsets_served:
            offsets = (of("offset_commits").mapInArrow(commit_rows({(s["broker"], CONSUMER_OFFSETS_TOPIC, p)
                                                                      for p, s in offsets_served.items()}, kept),
                                                       S.spark_schema(R.OFFSET_COMMITS))
                       .repartition("offsets_partition")
                       .sortWithinPartitions("offsets_partition", *pipeline.OFFSETS_ORDER)
                       .mapInArrow(offsets_stream(offsets_served, as_of_ms), S.spark_schema(R.COMMITTED_OFFSETS))
                       .toArrow().to_pylist())
            offsets.sort(key=itemgetter("offsets_partition"))   # as the local executor makes them
        segments = [{c: f.get(c) for c in pipeline.SEGMENT_COLUMNS}
                    for f in listing_files if f["kind"] == "log_segment"]
        for row in _streamed(segment_chunks):
            row["kind"] = "log_segment"
            segments.append(row)
        impact = list(pipeline.impact(states, pipeline.by_replica(segments), cleaner_checkpoints, configs, as_of_ms))
        del segments
        open_spans: list[R.Row] = []

        def spans() -> Iterator[R.Row]:   # the open ones kept for affected_groups as they pass
            for row in _streamed(span_chunks):
                if row["outcome"] == "OPEN":
                    open_spans.append(row)
                yield row

        with SpoolFolder() as folder:   # the durations, on the driver's disk while they are sorted
            served_spans = spans()
            history = pipeline.history_in_order(_values(record_chunks), served_spans, order=folder.sorted)
            deque(served_spans, maxlen=0)   # every open span read, whatever the history took
    return {"committed_offsets": offsets,
            "affected_groups": pipeline.groups(offsets, states, candidates, open_spans, as_of_ms),
            "partition_impact": impact,
            "transactional_id_history": history}


#: CHUNKS rows a stream's thread reads ahead of the driver (_ReadAhead): with toLocalIterator's
#: prefetch, at most this many and two partitions' rows are held per stream.
READ_AHEAD_CHUNKS = 4


class _ReadAhead:
    """The rows of a frame (of CHUNKS rows), streamed to the driver a partition at a time
    (toLocalIterator; the next partition's job runs while one is read) by a thread of its own,
    which starts the frame's jobs at once and stays at most ``depth`` rows ahead of the reader:
    what grows with the copy's traffic is never collected whole. Iterate it once; a failure of
    the jobs is raised to the reader. Closing it (as a ``with`` block ends) stops the thread
    once its partition in hand is read. A daemon thread: after Ctrl-C the session's jobs are
    cancelled (session.interrupts_end_the_job) and nothing waits for it."""

    def __init__(self, frame, depth: int = READ_AHEAD_CHUNKS) -> None:
        self._handed: queue.Queue = queue.Queue(depth)
        self._stop = threading.Event()
        self._frame = frame
        in_background(frame.sparkSession, self._read, "read-ahead")   # _read hands on its own failure

    def _hand(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._handed.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _read(self) -> None:
        try:
            for row in self._frame.toLocalIterator(prefetchPartitions=True):
                if not self._hand((None, row)):
                    return
        except BaseException as e:   # handed to the reader, which raises it
            self._hand((e, None))
            return
        self._hand((None, _END))

    def __iter__(self) -> Iterator:
        while True:
            error, row = self._handed.get()
            if error is not None:
                raise error
            if row is _END:
                return
            yield row

    def close(self) -> None:
        self._stop.set()

    def __enter__(self) -> "_ReadAhead":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_END = object()


def _chunks(rows: Iterable) -> Iterator[tuple[str, list[tuple]]]:
    """(kind, values) per CHUNKS row of ``rows`` (``values``: its rows' values as tuples, in
    CHUNK_COLUMNS[kind]'s order)."""
    for chunk in rows:
        values = spool.unpack(chunk["data"])
        if len(values) != chunk["rows"]:
            raise ValueError(f"a chunk of {chunk['rows']} {chunk['record_type']} rows holds {len(values)}")
        yield chunk["record_type"], values


def _values(rows: Iterable) -> Iterator[tuple]:
    """The rows of CHUNKS rows as :func:`_chunks` gives them, a tuple each."""
    for _, values in _chunks(rows):
        yield from values


def _streamed(rows: Iterable) -> Iterator[R.Row]:
    """The rows of CHUNKS rows as :func:`_chunks` gives them, a dict each."""
    for kind, values in _chunks(rows):
        yield from map(_ROW_OF[kind], values)
