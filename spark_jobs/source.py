"""The decode as a Python Data Source: the driver's planned tasks in, the decode's Arrow batches out.

    decoded = source.read(spark, scan.plan_tasks(...), batches=False)

Each group of work units scan.plan_tasks makes (small files together, a large file or a byte
range alone, a replica the task reads whole with its listing row on its first unit) is one
partition of the source, and its reader yields what tasks.decode_units makes of the group:
tasks.OUT batches (the tables' rows as blobs, the later steps' narrow rows, the task's
tally), handed to Spark as they are (no Python row, no pickled unit table).
The groups reach the planner as an option (each group pickled and compressed: encode_group):
a data source's options are strings, and its planner runs in a Python worker of the driver,
not in this process. The reader leaves them there: the function Spark ships to each task carries the
reader, and each task gets and decodes only its own group (its InputPartition).

Registered once per session (:func:`register`), under :data:`NAME`.
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from functools import partial
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from logscan.scan import rows as R
from spark_jobs import faults
from spark_jobs import schemas as S
from spark_jobs import tasks

NAME = "logscan_decode"
_PLAN, _BATCHES = "plan", "batches"
#: The storage options (logscan.logdir.store) the tasks read a copy in a store with: the
#: client's --storage-option values, which a Spark Connect server's workers have no other way
#: to get (its executors' environment is its own). Base64 of JSON, under a key Spark's
#: redaction pattern (spark.redaction.regex: "secret") hides wherever it shows options.
_STORAGE = "storage.secret"


def encode_plan(groups: list[list[R.Row]]) -> str:
    """The planned groups as an option value: a JSON list of each group's encode_group. The
    planner hands each on as it is, one partition each, and the task decodes its own (a plan
    of 60,000 replicas was ~40 MB of JSON, which the planner, a Python worker of the driver,
    took ~1 s to parse before any task started, and Spark as long again to pickle per
    partition)."""
    return json.dumps([encode_group(g) for g in groups])


def encode_group(group: list[R.Row]) -> str:
    """One group's units: pickled, deflated, base64. Pickled as Spark pickles the partition that
    carries them to its task (the same trust: this driver's plan for its own tasks). make bench's
    cores copy (60,009 replicas, 10 groups), medians of 5 in one process: the units' JSON was
    44 MB (every key of every row in full), encoded in ~0.6 CPU-s; pickled (a key once, then a
    reference to it; numbers in binary) 23 MB, 3.4 MB deflated, encoded in 0.40 and decoded in
    0.22 CPU-s (a columnar encoding of the rows, each folder once: 2.2 MB, 0.67 and 0.48;
    2026-12-07)."""
    return base64.b64encode(zlib.compress(pickle.dumps(group, protocol=5), 1)).decode("ascii")


def decode_group(value: str) -> list[R.Row]:
    """encode_group's units, as they were given."""
    return pickle.loads(zlib.decompress(base64.b64decode(value)))


class DecodeSource(DataSource):
    """Options: ``plan`` (encode_plan of the groups), ``batches`` ("true": the batches table's
    rows too; else none, see tasks.decode_units)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return S.spark_schema(tasks.OUT)

    def reader(self, schema: StructType) -> "DecodeReader":
        # Popped: Spark ships this source, as it is after reader(), to every task.
        storage = self.options.pop(_STORAGE, "")
        return DecodeReader(self.options.pop(_PLAN), batches=self.options.get(_BATCHES) == "true",
                            storage=json.loads(base64.b64decode(storage)) if storage else {})


class DecodeReader(DataSourceReader):
    """One partition per planned group; read(partition) decodes that group (reading a store
    with ``storage``, the client's storage options, when given)."""

    def __init__(self, plan: str, *, batches: bool, storage: dict[str, str] | None = None) -> None:
        self._plan = plan
        self.batches = batches
        self.storage = storage or {}

    def __getstate__(self) -> dict:
        # What a task gets: the plan stays with the planner (partitions), each task has its group.
        return {"_plan": None, "batches": self.batches, "storage": self.storage}

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(group) for group in json.loads(self._plan)]   # each encode_group's

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if self.storage:
            from logscan.logdir import store

            if store.options() != self.storage:   # this worker's stores, made with the client's options
                store.configure(self.storage)
        # No group: Spark plans one empty partition for a copy without segments.
        decode = faults.at_start("decode", partial(tasks.decode_units, batches=self.batches))
        return decode(decode_group(partition.value) if partition.value else ())


#: The Spark Connect sessions (their ids) :data:`NAME` is registered in by this process.
_registered: set[str] = set()


def register(spark: SparkSession) -> None:
    """Makes :data:`NAME` readable in ``spark``'s session (once: a registration ships the
    class to the JVM). A Spark Connect session has no JVM handle to ask: this process
    remembers the sessions it registered it in."""
    from spark_jobs.session import is_connect

    if is_connect(spark):
        if spark.session_id not in _registered:
            spark.dataSource.register(DecodeSource)
            _registered.add(spark.session_id)
    elif not spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists(NAME):
        spark.dataSource.register(DecodeSource)


def read(spark: SparkSession, groups: list[list[R.Row]], *, batches: bool) -> DataFrame:
    """The decode of the planned ``groups``: one Spark partition per group, tasks.OUT rows (with
    the batches table's rows when ``batches``), read with the storage options configured here."""
    from logscan.logdir import store

    register(spark)
    reading = (spark.read.format(NAME).option(_PLAN, encode_plan(groups))
               .option(_BATCHES, str(batches).lower()))
    if store.options():
        reading = reading.option(_STORAGE, encode_storage(store.options()))
    return reading.load()


def encode_storage(options: dict[str, str]) -> str:
    """Storage options as the source's option value (base64 of JSON)."""
    return base64.b64encode(json.dumps(options, sort_keys=True).encode()).decode("ascii")
