"""A copied cluster's raw batches, or records, as a Spark DataFrame for one's own queries::

    spark.read.format("logscan").load("s3a://bucket/copy")                          # a row per batch
    spark.read.format("logscan").option("records", "true").load("s3a://bucket/copy")  # a row per record

``load`` takes what `logscan scan` takes: a copied log dir or a folder of them (one per broker),
a local path or a URI (s3://, s3a://, gs://, abfs://, hdfs://, file://), or several
(``load([a, b])``). A row per batch has the columns of the scan's ``batches`` table
(logscan.scan.rows.BATCHES: the replica, the file, every header field kafka-dump-log prints,
``crc_valid``; batches failing their CRC are rows too, after the file's others). With
``records`` a row per record of each checksum-valid batch (RECORDS: its batch's producer and
flags, the record's offset, timestamp, key, value and headers); a batch whose records cannot be
decoded is one row with ``error`` (file, byte, reason) and no record, never a failed task.

Planning: the driver's planner lists the copy once (logscan.scan.listing.list_copy: one
recursive listing of a URI) and makes a partition of segments of about PARTITION_BYTES (a
larger segment alone: it is read a window at a time, so memory stays bounded). Each task reads
its segments through logscan.logdir (ranged reads of a URI).

Options: ``records`` ("true"), ``includeSuperseded`` and ``followLinks`` (as the scan's flags),
``partitionBytes``, and the storage options of a URI's store as ``storage.KEY`` (e.g.
``storage.endpoint_override``); without them a task uses the session's
($LOGSCAN_STORAGE_OPTIONS, spark_jobs.session.store_conf) or finds credentials where the SDKs
look. spark_jobs.session.build_session registers the source (:func:`register`).
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from logscan.scan import rows as R

NAME = "logscan"
#: Bytes of segments a partition aims at (many small files share a task: a task costs ~25 ms).
PARTITION_BYTES = 128 << 20
#: Rows per Arrow batch a task yields.
ROWS_PER_BATCH = 8192
_STORAGE = "storage."

#: One row per record of a checksum-valid batch (``records``: "true").
RECORDS = pa.schema([
    *(R.BATCHES.field(n) for n in ("broker", "topic", "partition", "file", "segment_base_offset")),
    pa.field("position", pa.int64(), metadata={"comment": "byte position of the record's batch in the file"}),
    pa.field("base_offset", pa.int64(), metadata={"comment": "baseOffset of the record's batch"}),
    pa.field("producer_id", pa.int64(), metadata={"comment": "producerId of the batch (-1: none)"}),
    pa.field("producer_epoch", pa.int32(), metadata={"comment": "producerEpoch of the batch (-1: none)"}),
    pa.field("is_transactional", pa.bool_(), metadata={"comment": "transactional attribute bit of the batch"}),
    pa.field("is_control", pa.bool_(), metadata={"comment": "control batch: the record is a marker"}),
    pa.field("offset", pa.int64(), metadata={"comment": "the record's offset (null on an error row)"}),
    pa.field("timestamp", pa.int64(), metadata={"comment": "the record's timestamp, epoch ms"}),
    pa.field("timestamp_type", pa.string(), metadata={"comment": "CreateTime or LogAppendTime"}),
    pa.field("key", pa.binary(), metadata={"comment": "the record's key (null: none)"}),
    pa.field("value", pa.binary(), metadata={"comment": "the record's value (null: a tombstone)"}),
    pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])),
             metadata={"comment": "the record's headers in order"}),
    pa.field("error", pa.string(), metadata={"comment": "why the batch's records could not be read: "
                                                        "'file:byte: reason' (null on a record row)"}),
])


def _spark_schema(schema: pa.Schema) -> StructType:
    from spark_jobs import schemas as S

    return S.spark_schema(schema)


class LogscanSource(DataSource):
    """``spark.read.format("logscan")``: see the module's docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return _spark_schema(RECORDS if self._records() else R.BATCHES)

    def _records(self) -> bool:
        return self.options.get("records", "false").lower() == "true"

    def reader(self, schema: StructType) -> "LogscanReader":
        paths = self.options.get("paths")
        roots = json.loads(paths) if paths else [self.options["path"]] if "path" in self.options else []
        if not roots:
            raise ValueError("spark.read.format('logscan').load(PATH): give a copied cluster's folder or URI")
        storage = {k[len(_STORAGE):]: v for k, v in self.options.items() if k.startswith(_STORAGE)}
        return LogscanReader(roots, records=self._records(), storage=storage,
                             include_superseded=self.options.get("includeSuperseded", "false").lower() == "true",
                             follow_links=self.options.get("followLinks", "false").lower() == "true",
                             partition_bytes=int(self.options.get("partitionBytes", PARTITION_BYTES)))


class LogscanReader(DataSourceReader):
    def __init__(self, roots: list[str], *, records: bool, storage: dict[str, str], include_superseded: bool,
                 follow_links: bool, partition_bytes: int) -> None:
        self.roots, self.records, self.storage = roots, records, storage
        self.include_superseded, self.follow_links, self.partition_bytes = include_superseded, follow_links, partition_bytes

    def partitions(self) -> list[InputPartition]:
        from logscan.scan.listing import list_copy
        from logscan.scan.pipeline import work_units

        _use(self.storage)
        listing = list_copy(self.roots, include_superseded=self.include_superseded, follow_links=self.follow_links)
        groups: list[list[dict]] = [[]]
        load = 0
        for listed in listing.replicas:
            for unit in work_units(listed):
                if groups[-1] and load + unit["size"] > self.partition_bytes:
                    groups.append([])
                    load = 0
                groups[-1].append({k: unit[k] for k in ("broker", "topic", "partition", "file",
                                                        "segment_base_offset")})
                load += unit["size"]
        return [InputPartition(g) for g in groups if g] or [InputPartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        _use(self.storage)
        schema = RECORDS if self.records else R.BATCHES
        rows: list[dict] = []
        for unit in partition.value:
            for row in (record_rows(unit) if self.records else batch_rows(unit)):
                rows.append(row)
                if len(rows) >= ROWS_PER_BATCH:
                    yield R.to_batch(rows, schema)
                    rows = []
        if rows:
            yield R.to_batch(rows, schema)


def _use(storage: dict[str, str]) -> None:
    """The storage options given to the source, in this process (a task's worker: nothing
    else configured them; without any, the session's $LOGSCAN_STORAGE_OPTIONS stand)."""
    from logscan.logdir import store

    if storage and store.options() != storage:
        store.configure(storage)


def batch_rows(unit: dict) -> Iterator[dict]:
    """A segment's batches rows: its checksum-valid batches in log order, then those failing
    their CRC (the scan's batches table's rows, without scan_id and as_of)."""
    from logscan.scan.replica import ReplicaRead, iter_segment

    key = R.replica_key(unit["broker"], unit["topic"], unit["partition"])
    path, base = unit["file"], unit["segment_base_offset"]
    read = ReplicaRead()
    for fact, header in iter_segment(path, unit["partition"], is_txn_log=False, out=read, headers=True):
        yield R.batch_row(fact, header, key, path, base)
    for fact, header in read.damaged:
        yield R.batch_row(fact, header, key, path, base)


def record_rows(unit: dict) -> Iterator[dict]:
    """A segment's records: each checksum-valid batch's (v2 records, v0/v1 messages), in log
    order; a batch whose records do not decode, or damage the walk meets, is one row with
    ``error`` (file:byte: reason)."""
    from logscan.format.batch import RecordBatch
    from logscan.format.errors import DecodeError
    from logscan.format.legacy import LegacyBatch
    from logscan.format.logfile import walk_windows
    from logscan.logdir.segment import LogWindows
    from logscan.scan.replica import segment_budget

    head = {"broker": unit["broker"], "topic": unit["topic"], "partition": unit["partition"], "file": unit["file"],
            "segment_base_offset": unit["segment_base_offset"]}
    path = unit["file"]
    with ExitStack() as stack:
        try:
            log = stack.enter_context(LogWindows(path))
        except OSError as e:
            yield {**head, "position": -1, "error": f"{path}: cannot read file: {e}"}
            return
        budget = segment_budget(log.size)   # the scan's decompression budget (its flags' environment too)
        for entry, win in walk_windows(log):
            if isinstance(entry, DecodeError):
                yield {**head, "position": entry.position, "error": f"{path}:{entry.position}: {entry}"}
            elif isinstance(entry, LegacyBatch) and entry.crc_valid:
                yield {**head, "position": entry.position, "base_offset": entry.offset, "producer_id": -1,
                       "producer_epoch": -1, "is_transactional": False, "is_control": False,
                       "offset": entry.offset, "timestamp": entry.timestamp, "timestamp_type": entry.timestamp_type,
                       "key": entry.key, "value": entry.value, "headers": []}
            elif isinstance(entry, RecordBatch) and entry.crc_valid:
                yield from _batch_records(head, path, entry, win, budget)


def _batch_records(head: dict, path: str, entry, win, budget) -> Iterator[dict]:
    from logscan.format.batch import iter_records
    from logscan.format.errors import DecodeError

    batch = {**head, "position": entry.position, "base_offset": entry.base_offset,
             "producer_id": entry.producer_id, "producer_epoch": entry.producer_epoch,
             "is_transactional": entry.is_transactional, "is_control": entry.is_control,
             "timestamp_type": entry.timestamp_type}
    try:
        records = list(iter_records(win.buf, entry, base=win.base, budget=budget))
    except DecodeError as e:
        yield {**batch, "error": f"{path}:{e.position}: {e}"}
        return
    for r in records:
        yield {**batch, "offset": r.offset, "timestamp": r.timestamp, "key": r.key, "value": r.value,
               "headers": [{"key": k, "value": v} for k, v in r.headers]}


def register(spark) -> None:
    """Makes ``spark.read.format("logscan")`` work in ``spark``'s session."""
    spark.dataSource.register(LogscanSource)
