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
- out of the decode's blobs (no second read of the copy): the log segments' files rows and the
  served replicas' spans (pipeline.HISTORY_SPAN_COLUMNS and OPEN_SPAN_COLUMNS) in one job
  (:func:`small_rows`), the coordinator's records in another (tasks.coordinator_records, as the
  coordinator step takes them).

What grows with the copy's traffic is never held whole on the driver: the spans and the
coordinator's records are streamed to it a partition at a time (toLocalIterator), the spans
spooled to its disk (logscan.scan.spool), and the history step sorts both there (SpoolFolder.sorted)
as the local executor does; the served `__consumer_offsets` replicas' commit rows (decode's
"offset_commit" rows, rows.OFFSET_COMMITS) are loaded in tasks, a partition's rows sorted by
Spark in pipeline.OFFSETS_ORDER (:func:`offsets_stream`); only the committed offsets reach the
driver. What the driver holds: a row per replica, per log segment, per open span and candidate,
per group-partition.

Nothing here knows a rule: which replica is served, how offsets load, what is held back, is
pipeline's.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Iterable, Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from logscan.scan import pipeline
from logscan.scan import rows as R
from logscan.scan.output import is_remote, table_uri
from logscan.scan.pipeline import CONSUMER_OFFSETS_TOPIC
from logscan.scan import spool
from logscan.scan.spool import SpoolFolder
from spark_jobs.tasks import kept_blob_batches

#: What :func:`span_rows` gives of a served replica's txn_spans rows.
SPAN_COLUMNS = tuple(dict.fromkeys((*pipeline.OPEN_SPAN_COLUMNS, *pipeline.HISTORY_SPAN_COLUMNS)))
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


#: What :func:`small_rows` and :func:`packed` give: rows in chunks, a chunk per Arrow batch
#: of a task (``data``: the values of ``rows`` rows as tuples, spool.pack), ``record_type``
#: naming the columns they hold: "span", a served replica's spans (SPAN_COLUMNS); "segment", a
#: log segment's files row (SEGMENT_COLUMNS but ``kind``); "record", a coordinator record
#: (pipeline.HISTORY_RECORD_COLUMNS). The driver reads them a partition at a time
#: (:func:`_streamed`). A Spark row per span, segment or record was pickled by the JVM and made
#: a Row by the driver's Python: with chunks, the driver's CPU per GB at the margin fell from
#: 0.66 to 0.53 and the JVM task threads' from 0.33 to 0.25 (issue 30, docs/spark.md: medians
#: of four paired local[1] sessions, the 1065 MiB bench copy against its tenth). A chunk's
#: values are unpacked by marshal.
CHUNKS = pa.schema([pa.field("record_type", pa.string()), pa.field("rows", pa.int32()), pa.field("data", pa.binary())])
#: The columns of each kind of CHUNKS row, in its values' order.
CHUNK_COLUMNS = {"span": SPAN_COLUMNS, "segment": tuple(c for c in pipeline.SEGMENT_COLUMNS if c != "kind"),
                 "record": pipeline.HISTORY_RECORD_COLUMNS}


def _chunk(rows: pa.RecordBatch, kind: str) -> pa.RecordBatch:
    """``rows`` (CHUNK_COLUMNS[kind] at least) as one CHUNKS row of ``kind``."""
    columns = [rows.column(c).to_pylist() for c in CHUNK_COLUMNS[kind]]
    return pa.RecordBatch.from_arrays([pa.array([kind], pa.string()), pa.array([rows.num_rows], pa.int32()),
                                       pa.array([spool.pack(list(zip(*columns)))], pa.binary())], schema=CHUNKS)


def small_rows(served: set[tuple[int, str, int]], kept: frozenset):
    """mapInArrow body over blob rows: the txn_spans rows of the served replicas (``served``:
    pipeline.served_keys) and the files rows of log segments, as CHUNKS rows."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for rows in kept_blob_batches(batch, "txn_spans", kept):
                rows = _of_replicas(rows, served)
                if rows.num_rows:
                    yield _chunk(rows, "span")
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


def tables(blobs, *, output: str, parts: dict[str, list[R.Row]], kept: frozenset, as_of_ms: int,
           chosen: dict[int, int], listing_files: list[R.Row], cleaner_checkpoints: dict, configs: list[R.Row]
           ) -> dict[str, list[R.Row]]:
    """The four tables' rows (by name), made once the partition step's Parquet is written
    (``parts``: every table's WRITTEN rows so far). ``blobs``: the decode's (and per-replica
    step's) blob rows; ``chosen``: the coordinator replicas coordinator_copy picked;
    ``listing_files``: the files rows the driver made (a split file's merged row)."""
    from pyspark.sql import functions as F

    from spark_jobs import schemas as S
    from spark_jobs import tasks

    states = read_written(output, "partition_state", parts.get("partition_state", ()), pipeline.SERVED_COLUMNS)
    candidates = read_written(output, "hanging_candidates", parts.get("hanging_candidates", ()), CANDIDATE_COLUMNS)
    served = pipeline.served(states)
    keys = pipeline.served_keys(states)

    def of(table: str):
        return blobs.where(F.col("blob.table") == table)

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
    small = (blobs.where(F.col("blob.table").isin("txn_spans", "files"))
             .mapInArrow(small_rows(keys, kept), S.spark_schema(CHUNKS)))
    records = (of("txn_log").mapInArrow(tasks.coordinator_records(chosen, kept), S.spark_schema(R.TXN_LOG))
               .mapInArrow(packed("record"), S.spark_schema(CHUNKS)) if chosen else None)
    segments = [{c: f.get(c) for c in pipeline.SEGMENT_COLUMNS} for f in listing_files if f["kind"] == "log_segment"]
    open_spans: list[R.Row] = []
    with SpoolFolder() as folder:   # the served spans, on the driver's disk until the history step
        spans = folder.spool("served_spans", SPAN_COLUMNS)
        for kind, row in _streamed(small):
            if kind == "segment":
                row["kind"] = "log_segment"
                segments.append(row)
                continue
            spans.add(0, row)
            if row["outcome"] == "OPEN":
                open_spans.append(row)
        spans.close()
        history = pipeline.history((row for _, row in _streamed(records)) if records is not None else (),
                                   spans.rows(0), order=folder.sorted)
    return {"committed_offsets": offsets,
            "affected_groups": pipeline.groups(offsets, states, candidates, open_spans, as_of_ms),
            "partition_impact": list(pipeline.impact(states, pipeline.by_replica(segments), cleaner_checkpoints,
                                                     configs, as_of_ms)),
            "transactional_id_history": history}


def _streamed(frame) -> Iterator[tuple[str, R.Row]]:
    """(kind, row) per row of a frame of CHUNKS rows, each row a dict of CHUNK_COLUMNS[kind],
    streamed to the driver a partition at a time (toLocalIterator; the next partition's job
    runs while one is read): what grows with the copy's traffic is never collected whole."""
    for chunk in frame.toLocalIterator(prefetchPartitions=True):
        kind, names = chunk["record_type"], CHUNK_COLUMNS[chunk["record_type"]]
        values = spool.unpack(chunk["data"])
        if len(values) != chunk["rows"]:
            raise ValueError(f"a chunk of {chunk['rows']} {kind} rows holds {len(values)}")
        for v in values:
            yield kind, dict(zip(names, v))
