"""The Spark scan: copied Kafka log dirs in, Delta tables of producer state, spans and LSO out.

Usage (after `make delta-jars`; from the repository root, with the project's venv)::

    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        --jars "$(.venv/bin/python -m spark_jobs.session --jars)" \\
        spark_jobs/scan.py INPUT... --output DIR \\
        [--as-of 2026-11-22T21:00:00Z | --as-of 1795381200000] \\
        [--max-transaction-timeout-ms 900000] [--scan-id ID] [--include-superseded] \\
        [--split-bytes 134217728] [--bootstrap-server HOST:PORT] [--follow-links] \\
        [--tables all | --tables NAME,...]

(PYSPARK_PYTHON: the venv's spark-submit script finds Spark through it, and the Python
workers need its pyarrow and logscan.) Or, on a local Spark the job starts itself, with the
jars passed for you::

    .venv/bin/python -m spark_jobs.scan INPUT... --output DIR [--master 'local[2]']

Or as a Spark Connect client (no SparkContext, RDD, broadcast or JVM handle on its path:
spark_jobs.session), of a running Connect server or of one it starts on a local Spark::

    .venv/bin/python -m spark_jobs.scan INPUT... --output DIR --remote sc://HOST:15002
    .venv/bin/python -m spark_jobs.scan INPUT... --output DIR --remote 'local[2]'
    .venv/bin/spark-submit --remote sc://HOST:15002 spark_jobs/scan.py INPUT... --output DIR

Or, instead of --output, catalog tables NAME.<table> written with saveAsTable into the session's
catalog (spark_jobs.catalog: the same commits in the same order, from Parquet the tasks stage
under --staging; --warehouse DIR: a local catalog for a local Spark)::

    .venv/bin/python -m spark_jobs.scan INPUT... --database NAME [--warehouse DIR] [--staging DIR]
    .venv/bin/python -m spark_jobs.scan INPUT... --table-prefix CATALOG.SCHEMA.

INPUT is a root of one copied cluster: a Kafka log dir or a folder of them, one per broker.
Each table is a path-based Delta table DIR/<table> (files, batches, corruptions, txn_log,
coordinator_state, producer_snapshots, producer_state, txn_spans, partition_state,
hanging_candidates, abort_plans, committed_offsets, affected_groups, partition_impact,
transactional_id_history, and scans), partitioned by scan_id. --tables names the
tables to write: by default every table but batches (a row per batch of the copy, by far the
largest: --tables all writes it too); the six the summary is computed from (files,
corruptions, partition_state, hanging_candidates, affected_groups, partition_impact) are always
written, and a table not written
is left as it was. The output is crash-safe (docs/spark.md, "The Delta output"): nothing is
committed while the copy is decoded and replayed; the tasks that hold a table's rows last
write them as Parquet in its folder (logscan.scan.output.Parts), then the driver gives each
table one Delta commit replacing this scan_id's rows and commits the scan's row in the scans
table last (logscan.scan.tables.commit_scan, the local executor's too). A killed job leaves
every table at its previous version or holding this scan whole, and re-running the same
command (same scan_id) gives the rows of one clean run, nothing twice; other scan ids' rows
stay. The job refuses an output inside an input and leaves nothing in its working folder
(spark_jobs/session.py); spark_jobs/faults.py names the points tests kill it at. A summary
(partitions scanned, open transactions, hanging candidates with their reasons, where the
tables are), read back from the committed tables, is printed at the end.

The driver lists files and plans; Spark runs these jobs, none with a Spark row per batch or
per table row of the copy:

1. the decode, a Python Data Source (spark_jobs.source) whose partitions are the tasks
   plan_tasks makes (a group of small files, a large file, or a byte range of a file larger
   than --split-bytes). A replica no larger than a task's share goes whole to one decode task,
   which runs Kafka's per-replica rules over it as it reads it. A task hands Spark
   (tasks.TaskOutput) each table's rows as a few Arrow IPC values (blobs), the partition
   step's narrow rows, the facts of the replicas it does not replay, and its tally (the byte
   ranges kept, the internal topics' replicas, the newest times), which the driver collects;
2. the per-replica step, only for the other replicas: their batch facts shuffled and sorted by
   (broker, topic, partition) and log order, streamed through one mapInArrow per partition,
   whose output is the decode's kind;
3. the coordinator's (the txn_log rows of the replica coordinator_copy picks per
   `__transaction_state` partition, out of the blobs, one group per partition) and the
   metadata's (the `__cluster_metadata` replica);
4. the last one: the writers of the blobs (Parquet, once as_of is known) and the partition
   step (leader, agreement, find-hanging, abort plans per (topic, partition), over the runs
   of states, open transactions and the runs of closed spans, merged per partition), which
   writes its own tables;
5. after it, the steps after assess (spark_jobs.blast: committed_offsets, affected_groups,
   partition_impact, transactional_id_history), a few small jobs over the cached decode output
   and the driver.

Every step is logscan.scan.pipeline's, as in the single-process executor (logscan.scan.local).
Grouping is Spark's sort, not a Python call per group: a Python worker holds one Arrow batch
and one replica's producer state, or one partition's states, at a time.
"""

from __future__ import annotations

import argparse
import heapq
import io
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import wait
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Callable, Optional

if __package__ in (None, ""):  # run as a file by spark-submit
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from logscan.scan import pipeline
from logscan.scan import rows as R
from logscan.scan import summary as summary_text
from logscan.scan.collector import young_collections_only
from logscan.scan.listing import list_copy
from logscan.logdir import store
from logscan.scan.output import WRITTEN, Output, inside, is_remote, write_rows
from logscan.scan.tables import (DEFAULT_TABLES, TABLES, check_scan_id, commit_scan, default_scan_id, figures,
                                 parse_tables)
from logscan.scan.replica import CLUSTER_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, valid_ranges
from logscan.state import hanging
from logscan.state.facts import BatchFact
from logscan.state.coordinator import choose_replicas, coordinator_copy
from spark_jobs import blast
from spark_jobs import faults
from spark_jobs import schemas as S
from spark_jobs import source
from spark_jobs import tasks
from spark_jobs.session import build_session, default_parallelism, in_background, is_connect
from spark_jobs.shared import Shared

cloudpickle.register_pickle_by_value(tasks)
cloudpickle.register_pickle_by_value(blast)
cloudpickle.register_pickle_by_value(faults)
cloudpickle.register_pickle_by_value(source)

KEYS = ["broker", "topic", "partition"]
PARTITION_KEYS = ["topic", "partition"]
#: Bytes a decode task aims at: a few seconds of header walking, far above the ~25 ms a
#: task costs, yet enough tasks to spread a cluster's copy over the executors.
TARGET_TASK_BYTES = 256 << 20
#: Segments larger than this are read by several tasks, one per byte range (--split-bytes).
SPLIT_BYTES = 128 << 20
#: Replicas per task of the per-replica step. Its tasks stream (memory does not grow with
#: them), so they can be large: each task costs ~20 ms, and every later write reads the step's
#: output once per task (64 a task made 97 tasks per write on a 3000-replica copy).
REPLICAS_PER_TASK = 1000
MAX_SHUFFLE_PARTITIONS = 2000
#: Bytes of blobs (the tables' rows as Arrow IPC, tasks.TaskOutput) a write task gets at most.
#: Each table is written with as many tasks as its blobs need, not one per decode task: every
#: write task is a Parquet file per table and ~45 ms, so on make bench's 10 GB copy (40 decode
#: tasks) the small tables (files, spans, producers: a few thousand rows) took 40 files each,
#: ~2 s of task time per table (2026-11-24). A copy of 1 TB in 16 KiB batches, its batches
#: table asked for, is ~10 GB of blobs: ~80 files per table.
WRITE_TASK_BYTES = 128 << 20
MIN_WRITE_TASK_BYTES = 16 << 20
@dataclass(slots=True)
class Listing:
    """What the driver learns from directory listings and checkpoint files alone."""

    units: list[R.Row] = field(default_factory=list)       # one per .log segment or byte range of one
    replicas: list[R.Row] = field(default_factory=list)    # tasks.REPLICA_INFO rows
    files: list[R.Row] = field(default_factory=list)       # files table rows not decoded
    findings: list[R.Row] = field(default_factory=list)    # corruptions found while listing


def list_inputs(roots: list[Path], *, include_superseded: bool = False, split_bytes: int = SPLIT_BYTES,
                follow_links: bool = False) -> Listing:
    listing = list_copy(roots, include_superseded=include_superseded, follow_links=follow_links)
    out = Listing(files=listing.files, findings=[R.finding_row(f, key) for key, f in listing.findings])
    for listed in listing.replicas:
        out.units.extend(pipeline.work_units(listed, split_bytes))
        out.replicas.append(pipeline.replica_info(listed))
    return out


def plan_tasks(units: list[R.Row], parallelism: int, target_bytes: int = TARGET_TASK_BYTES,
               replicas: Optional[list[R.Row]] = None) -> list[list[R.Row]]:
    """Groups of work units, largest first onto the lightest group: many small files share a
    task, a file (or byte range) of target_bytes or more ends up (nearly) alone.

    With the listing's ``replicas`` (tasks.REPLICA_INFO rows), a replica read whole in no more
    than a task's share of the bytes goes to one task as one piece, its units in log order,
    the first carrying its listing row (``replica``): that task replays it as it decodes it
    (pipeline.Replay), and its batches skip the shuffle of the per-replica step. Replicas
    larger than that, or with a segment split into byte ranges, go through that step."""
    if not units:
        return []
    weights = [u.get("bytes", u["size"]) for u in units]
    total = sum(weights)
    # A multiple of the cores, so the last wave of tasks does not leave cores idle.
    n = -(-max(parallelism, -(-total // target_bytes)) // parallelism) * parallelism
    pieces: list[tuple[int, list[R.Row]]] = [(w, [u]) for w, u in zip(weights, units)]   # (bytes, units)
    if replicas is not None:
        share = min(target_bytes, -(-total // n))
        by_replica: dict[tuple, list[tuple[int, R.Row]]] = defaultdict(list)
        for w, u in zip(weights, units):
            by_replica[(u["broker"], u["topic"], u["partition"])].append((w, u))
        pieces = []
        for info in replicas:
            own = by_replica.pop((info["broker"], info["topic"], info["partition"]), [])
            size = sum(w for w, _ in own)
            if own and size <= share and all(u["ranges"] == 1 for _, u in own):
                pieces.append((size, [{**own[0][1], "replica": info}, *(u for _, u in own[1:])]))
            else:
                pieces.extend((w, [u]) for w, u in own)
        pieces.extend((w, [u]) for own in by_replica.values() for w, u in own)
    n = min(len(pieces), n)
    groups: list[list[R.Row]] = [[] for _ in range(n)]
    lightest = [(0, i) for i in range(n)]  # (load, group): a heap
    for bytes_, piece in sorted(pieces, key=lambda p: -p[0]):
        load, i = heapq.heappop(lightest)
        groups[i].extend({**u, "task": i} for u in piece)
        heapq.heappush(lightest, (load + bytes_, i))
    return [g for g in groups if g]


def _frame(spark: SparkSession, rows: list[R.Row], schema: pa.Schema) -> DataFrame:
    """Rows made on the driver (dicts; a missing key is null) as a DataFrame of ``schema``,
    through Arrow. From Python tuples, createDataFrame checks and converts every value in
    Python and ships pickled rows: 0.43 to 1.07 s for the 30,000-replica copy's 23,501
    coordinator_state rows, and about as much again when the write read them, against 0.12 to
    0.38 s and 0.1 to 0.3 s through Arrow (2026-11-24). Same schema, same rows. No rows: the
    schema given as Spark's (Spark Connect infers none from an empty Arrow table:
    CANNOT_INFER_EMPTY_SCHEMA, e.g. the metadata replicas of a copy without __cluster_metadata)."""
    if not rows:
        return spark.createDataFrame([], S.spark_schema(schema))
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=S.plain(schema)))


@dataclass(slots=True)
class ScanFrames:
    """One scan, its tables not yet written but the blobs' (the decode's and per-replica step's
    tables, ``written``: WRITTEN rows, the Parquet files their writers wrote): ``writes``, the
    partition step's job, which writes its own tables' rows, and the rows the driver made
    itself (listing, coordinator, metadata findings, split files), by table."""

    writes: DataFrame
    written: list[R.Row]
    driver: dict[str, list[R.Row]]
    as_of_ms: int
    persisted: list[DataFrame]
    shared: list = field(default_factory=list)   # for_tasks's values: destroyed when the scan ends
    # The steps after assess (spark_jobs.blast.tables), once ``writes`` has run: every table's
    # WRITTEN rows so far in, the rows of blast.TABLES out.
    after: Optional[Callable[[dict[str, list[R.Row]]], dict[str, list[R.Row]]]] = None


@dataclass(slots=True)
class Tally:
    """What the driver learns from the tasks' tallies (tasks.TaskOutput) and blob rows: one
    pass over a step's cached output, the rows it reads only."""

    blob_bytes: dict[str, int] = field(default_factory=dict)
    ranges: list[R.Row] = field(default_factory=list)
    internal: dict[str, list[tuple]] = field(default_factory=lambda: {t: [] for t in tasks.INTERNAL_TOPICS})
    newest_batch: Optional[int] = None
    newest_record: list[R.Row] = field(default_factory=list)
    split_files: list[R.Row] = field(default_factory=list)

    def add(self, out: DataFrame) -> None:
        """Collects the tally rows of ``out`` (tasks.OUT rows) and each blob's table and size
        (one job over the cached rows, no Python worker)."""
        kinds = [*tasks.TALLY_MEMBERS, "blob"]
        blob = F.when(F.col("record_type") == "blob",
                      F.struct(F.col("blob.table").alias("table"), F.octet_length("blob.data").alias("bytes")))
        rows = (out.where(F.col("record_type").isin(*kinds))
                .select("record_type", "segment", "range_index", "ranges", *tasks.TALLY_MEMBERS, blob.alias("blob"))
                .collect())
        for r in rows:
            kind = r["record_type"]
            if kind == "blob":
                b = r["blob"]
                self.blob_bytes[b["table"]] = self.blob_bytes.get(b["table"], 0) + b["bytes"]
            elif kind == "range":
                self.ranges.append(r["range"].asDict(recursive=True))
            elif kind == "internal":
                i = r["internal"].asDict()
                self.internal[i["topic"]].append(pipeline.replica_end(i))
            elif kind == "newest_batch":
                t = r["newest_batch"]["max_timestamp"]
                self.newest_batch = t if self.newest_batch is None else max(self.newest_batch, t)
            elif kind == "newest_record":
                self.newest_record.append({**r["newest_record"].asDict(), "segment": r["segment"],
                                           "range_index": r["range_index"], "ranges": r["ranges"]})
            else:
                self.split_files.append(r["split_file"].asDict())

    def kept(self) -> frozenset[tuple[str, int]]:
        """The (segment, range_index) pairs of the byte ranges replica.valid_ranges keeps."""
        by_file: dict[str, dict[int, list[tuple[int, bool]]]] = {}
        file_ranges: dict[str, int] = {}
        for r in self.ranges:
            by_file.setdefault(r["file"], {})[r["range_index"]] = [(h["range_index"], h["clean"])
                                                                   for h in r["handoffs"]]
            file_ranges[r["file"]] = r["ranges"]
        return frozenset((f, i) for f, handoffs in by_file.items()
                         for i in valid_ranges(file_ranges[f], handoffs))

    def newest_record_of(self, chosen: dict[int, int], kept: frozenset) -> Optional[int]:
        """The newest record time of the coordinator replicas coordinator_copy chose
        (``chosen``: partition -> broker), of their files read whole and kept byte ranges."""
        return max((r["last_update_timestamp_ms"] for r in self.newest_record
                    if chosen.get(r["partition"]) == r["broker"]
                    and (r["ranges"] == 1 or (r["segment"], r["range_index"]) in kept)), default=None)


def kept_rows(spark: SparkSession, rows: DataFrame, kept: frozenset) -> DataFrame:
    """The rows of every file read whole and of the byte ranges of split files that
    replica.valid_ranges keeps (``kept``)."""
    whole = rows.where(F.col("ranges") == 1)
    if not kept:
        return whole
    keep_df = spark.createDataFrame(sorted(kept), "segment string, range_index int")
    split = rows.where(F.col("ranges") > 1).join(F.broadcast(keep_df), ["segment", "range_index"], "left_semi")
    return whole.unionByName(split)


def blob_rows(out: DataFrame) -> DataFrame:
    """The blob rows of a step's output (tasks.OUT) with their byte-range keys."""
    return out.where(F.col("record_type") == "blob").select("segment", "range_index", "ranges", "blob")


def write_tasks(blob_bytes: int, parallelism: int) -> int:
    """Tasks (and files per table) the blobs are written with: WRITE_TASK_BYTES of them each,
    or, when that leaves cores idle, as many as the cores with at least MIN_WRITE_TASK_BYTES
    each; at least one."""
    return max(1, -(-blob_bytes // WRITE_TASK_BYTES), min(parallelism, blob_bytes // MIN_WRITE_TASK_BYTES))


def replica_stream_input(replicas: DataFrame, facts: DataFrame) -> DataFrame:
    """The input of the per-replica step (tasks.replica_stream): each replica's listing row
    and its checksum-valid batches' facts (tasks.FACTS columns: the decode's fact rows),
    clustered by replica, the listing row first, then the batches in log order. Spark's
    shuffle and sort do the grouping (spilling to disk when they must), so a Python worker
    sees one Arrow batch at a time whatever the size of a replica. Batches of replicas not in
    ``replicas`` (replayed by their decode task) are left out. The listing row goes as JSON
    text (the comment before tasks.REPLICA_STREAM_IN says why), its null fields kept."""
    info = replicas.select(*KEYS, F.lit(tasks.STREAM_INFO).alias("kind"),
                           F.to_json(F.struct(*replicas.columns), {"ignoreNullFields": "false"}).alias("info"))
    facts = (facts.join(F.broadcast(replicas.select(*KEYS)), KEYS, "left_semi")
             .select(*KEYS, F.lit(tasks.STREAM_BATCH).alias("kind"), "segment_base_offset", "position",
                     *BatchFact._fields))
    return (info.unionByName(facts, allowMissingColumns=True)
            .repartition(*KEYS).sortWithinPartitions(*KEYS, "kind", "segment_base_offset", "position"))


@young_collections_only()
def build_tables(spark: SparkSession, roots: list[Path], output: str, scan_id: str, *,
                 as_of_ms: Optional[int] = None,
                 max_transaction_timeout_ms: int = hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                 include_superseded: bool = False, follow_links: bool = False, split_bytes: int = SPLIT_BYTES,
                 bootstrap: str = pipeline.DEFAULT_BOOTSTRAP, replay_in_decode: bool = True,
                 tables: tuple[str, ...] = DEFAULT_TABLES, max_prepare_ms: Optional[int] = None) -> ScanFrames:
    """The ``tables`` of a scan (parse_tables's names), to be written into ``output`` as scan
    ``scan_id`` by ScanFrames.writes. ``replay_in_decode=False`` sends every replica through
    the per-replica step's shuffle, as the replicas plan_tasks cannot give one task (the tests
    compare both ways).

    Jobs: the decode, and the collect of its tally (byte ranges, the internal topics' states,
    the newest times, the blobs' sizes); the per-replica step's (only for replicas no decode
    task read whole); the blobs' writers, the coordinator's and the metadata's, at once;
    ScanFrames.writes is the last (the partition step).

    Python's cyclic collector is paused while it runs, as in the local executor's scan
    (collector.young_collections_only): the listing and the plan of a copy of many partitions
    are millions of objects made at once and kept, which the collector traversed again and
    again, finding nothing (list_inputs and plan_tasks on make bench's 60,000 replicas: ~30%
    and ~70% of their time)."""
    listing = list_inputs(roots, include_superseded=include_superseded, split_bytes=split_bytes,
                          follow_links=follow_links)
    parallelism = default_parallelism(spark)
    groups = plan_tasks(listing.units, parallelism, replicas=listing.replicas if replay_in_decode else None)
    replayed = {(u["broker"], u["topic"], u["partition"]) for g in groups for u in g if u.get("replica")}
    shuffled = [r for r in listing.replicas if (r["broker"], r["topic"], r["partition"]) not in replayed]
    # The grouped steps' outputs have as many partitions as the shuffle has: Spark's default
    # 200 costs ~20 ms a task each on a small copy. A multiple of the cores, so the last wave of
    # tasks does not leave cores idle.
    waves = -(-len(listing.replicas) // (parallelism * REPLICAS_PER_TASK))
    spark.conf.set("spark.sql.shuffle.partitions", str(min(MAX_SHUFFLE_PARTITIONS, parallelism * max(1, waves))))
    decoded = source.read(spark, groups, batches="batches" in tables).persist()
    persisted = [decoded]
    tally = Tally()
    tally.add(decoded)
    kept = tally.kept()
    # The steps' outputs (tasks.OUT): of the decode and, for the replicas no decode task
    # replayed, of the per-replica step over their facts (kept byte ranges only). Once cached,
    # the later steps read each in one task per core (coalesced), not one per decode task:
    # every task is a Python worker's round and the JVM's scheduling, serialization and the
    # JIT's work on them, for a few MB of rows per GB of copy.
    outputs = [decoded.coalesce(parallelism)]
    if shuffled:
        facts = S.members(kept_rows(spark, outputs[0].where(F.col("record_type") == "fact"), kept), "fact")
        stepped = (replica_stream_input(_frame(spark, shuffled, tasks.REPLICA_INFO), facts)
                   .mapInArrow(tasks.replica_stream, S.spark_schema(tasks.OUT))).persist()
        persisted.append(stepped)
        tally.add(stepped)
        outputs.append(stepped.coalesce(parallelism))
    blobs = reduce(DataFrame.unionByName, map(blob_rows, outputs))

    # The coordinator's view: per coordinator partition, the replica coordinator.choose_replicas
    # picks (the same rule as the local driver), its txn_log rows out of the blobs, loaded per
    # partition, merged on the driver.
    chosen, coordinator = coordinator_copy(tally.internal[TRANSACTION_STATE_TOPIC])
    if as_of_ms is None:
        as_of_ms = pipeline.as_of(tally.newest_batch, tally.newest_record_of(chosen, kept))
    # The blobs' writers, the coordinator's step and the metadata's need only the tally: they
    # run as jobs at once (two on threads of the driver, Spark's FIFO scheduler sharing the
    # cores), where one after the other each left cores idle: the coordinator's is a task per
    # coordinator partition, the metadata's one task, and the driver's Python between them
    # (merging the coordinator's rows, its index) ran while no task did. On 60,000 replicas
    # (make bench's cores copy) they took ~4.4 s one after the other at local[2].
    n = write_tasks(sum(tally.blob_bytes.get(t, 0) for t in tables), parallelism)
    blob_writes = blobs.coalesce(n).mapInArrow(tasks.write_blobs(output, scan_id, as_of_ms, tables, kept),
                                               S.spark_schema(WRITTEN))
    written = in_background(spark, lambda: [r.asDict() for r in blob_writes.collect()], "blob writers")

    def coordinator_view() -> tuple[pa.Table, object]:
        """The coordinator_state rows, one per transactional id, and their index for the
        partition step's tasks (built once and loaded once per Python worker:
        tasks.partition_stream says why): pipeline.coordinator_view of the coordinator step's
        rows, collected as Arrow and kept so (a Row per record, its partitions a Row each, cost
        the driver ~1 s of Python on the bench copy's 2,400 records; a dict per row, ~0.65 s on
        its 47,000 transactional ids)."""
        # A task per core (the records of a coordinator partition stay in one): with the
        # shuffle's partitions, adaptive execution coalesced make bench's cores copy's 47,000
        # records into one task of ~1.5 s, on the path to the partition step (2026-12-07).
        per_partition = (blobs.where(F.col("blob.table") == "txn_log")
                         .mapInArrow(tasks.coordinator_records(chosen, kept), S.spark_schema(R.TXN_LOG))
                         .repartition(parallelism, "partition")
                         .sortWithinPartitions("partition", *pipeline.TXN_LOG_ORDER)
                         .mapInArrow(tasks.coordinator_stream, S.spark_schema(R.COORDINATOR_STATE))
                         .toArrow() if chosen else R.COORDINATOR_STATE.empty_table())
        view = pipeline.coordinator_view(per_partition)
        return view.rows, for_tasks(spark, view.index)

    coordinator_out = in_background(spark, coordinator_view, "coordinator step")

    def metadata_view() -> tuple[DataFrame, list]:
        """Leaders at as_of, replayed from the __cluster_metadata copy that reaches furthest
        (cached for the partition step), and what the driver reads of them: the findings, the
        topics' configs (for partition_impact) and what they say of `__transaction_state`
        (find-hanging can only prove a record absent when every coordinator partition is here,
        each from a replica of its last leader: pipeline.told_coordinator)."""
        broker = choose_replicas(tally.internal[CLUSTER_METADATA_TOPIC]).get(0)
        info = [r for r in listing.replicas
                if (r["broker"], r["topic"], r["partition"]) == (broker, CLUSTER_METADATA_TOPIC, 0)]
        out = (_frame(spark, info, tasks.REPLICA_INFO).repartition(1)
               .mapInArrow(tasks.metadata_step(as_of_ms), S.spark_schema(tasks.METADATA_OUT))).persist()
        persisted.append(out)
        return out, (out.where(F.col("record_type").isin("finding", "config")
                               | (F.coalesce("leader.topic", "topic.topic") == TRANSACTION_STATE_TOPIC))
                     .select("record_type", "leader", "topic", "finding", "config").collect())

    try:
        metadata_out, told = metadata_view()
        (coordinator_rows, index), blobs_written = coordinator_out.result(), written.result()
    except BaseException as e:
        if not isinstance(e, KeyboardInterrupt):   # their jobs read the cache the caller ends
            wait([written, coordinator_out])
        raise
    metadata_findings = [r["finding"].asDict() for r in told if r["record_type"] == "finding"]
    configs = [r["config"].asDict() for r in told if r["record_type"] == "config"]
    coordinator = pipeline.told_coordinator(coordinator, [(r["record_type"], r[r["record_type"]].asDict())
                                                          for r in told if r["record_type"] in ("leader", "topic")])

    leaders = S.members(metadata_out, "leader")
    # Per partition: the runs of its replicas' states and its open transactions first, then the
    # runs of closed spans by their first spans' end-marker offset (then broker and span index),
    # the order in which tasks.partition_stream merges them and compares the replicas' end
    # markers without holding them. The states go packed (tasks.STATE_RUN), without the columns
    # the step fills.
    row_order = F.lit(len(tasks.PARTITION_ROW_ORDER))
    for i, kind in reversed(list(enumerate(tasks.PARTITION_ROW_ORDER))):
        row_order = F.when(F.col("record_type") == kind, F.lit(i)).otherwise(row_order)
    partition_in = (reduce(DataFrame.unionByName,
                           (o.where(F.col("record_type").isin(*tasks.PARTITION_KINDS))
                            .select("record_type", *PARTITION_KEYS, "state_run", "open_txn", "span_run")
                            for o in outputs))
                    .join(F.broadcast(leaders), PARTITION_KEYS, "left")
                    .repartition(*PARTITION_KEYS)
                    .sortWithinPartitions(*PARTITION_KEYS, row_order,
                                          *(F.col(f"span_run.{c}") for c in pipeline.CLOSED_SPAN_ORDER)))
    assessed = partition_in.mapInArrow(
        tasks.partition_stream(index, as_of_ms=as_of_ms, max_timeout_ms=max_transaction_timeout_ms,
                               coordinator=coordinator, bootstrap=bootstrap, output=output,
                               scan_id=scan_id, tables=tables, max_prepare_ms=max_prepare_ms),
        S.spark_schema(WRITTEN))

    driver = {"files": [*listing.files, *pipeline.merge_split_files(tally.split_files, kept)],
              "corruptions": [*listing.findings, *metadata_findings], "coordinator_state": coordinator_rows}

    def after(parts: dict[str, list[R.Row]]) -> dict[str, list[R.Row]]:
        made = blast.tables(blobs, output=output, parts=parts, kept=kept, as_of_ms=as_of_ms, chosen=chosen,
                            listing_files=driver["files"], configs=configs, parallelism=parallelism,
                            cleaner_checkpoints={(r["broker"], r["topic"], r["partition"]): r["cleaner_checkpoint"]
                                                 for r in listing.replicas if r.get("cleaner_checkpoint") is not None})
        return {t: made[t] for t in tables if t in made}

    return ScanFrames(assessed, blobs_written, {t: driver[t] for t in tables if t in driver},
                      as_of_ms, persisted, [index], after)


def for_tasks(spark: SparkSession, value):
    """``value`` for the tasks of ``spark``'s jobs, loaded once per Python worker process and
    kept for its later tasks (read with ``.value``, ended with ``.destroy()``): a broadcast
    variable on classic Spark; under Spark Connect, which has none, a spark_jobs.shared.Shared
    pickled into the closure."""
    if is_connect(spark):
        return Shared(value)
    return spark.sparkContext.broadcast(value)


def run(spark: SparkSession, roots: list[Path], output: Optional[str], *, scan_id: Optional[str] = None,
        prefix: Optional[str] = None, staging: Optional[str] = None, **kw) -> tuple[str, int]:
    """Build and write the tables (``tables``: parse_tables's names; by default every table
    but batches); returns (scan_id, as_of_ms).

    Every table's rows are written as Parquet by the tasks that hold them last (one job: the
    writer tasks over the decode's and per-replica step's tables, and the partition step,
    which writes its own), and by the driver for its own rows; then each table gets one Delta
    commit replacing this scan's rows (logscan.scan.output: crash safety is its). A run killed
    before a table's commit leaves that table at its previous version; the files written for
    it belong to no version (Delta's VACUUM deletes them). The scan is complete when this
    returns: its row in the ``scans`` table is committed last.

    With ``prefix`` (catalog.table_prefix: --database NAME or --table-prefix) the tables are the
    catalog tables ``prefix + table`` (spark_jobs.catalog), ``output`` unused: the tasks write
    their Parquet into a fresh folder under ``staging`` (default: the session's warehouse),
    each commit is a saveAsTable of the staged files, in commit_scan's order all the same,
    and the folder is removed when the run ends."""
    scan_id = scan_id or default_scan_id(roots)
    check_scan_id(scan_id)
    if is_connect(spark):
        # A Connect server runs the tasks in a folder of its own (the session's artifacts): a
        # relative path would name another place there. (The scan id is the resolved paths' already.)
        roots = [r if store.is_uri(str(r)) else os.path.abspath(r) for r in roots]
        if prefix is None and not is_remote(output):
            output = os.path.abspath(output)   # (catalog tables' staging_root is absolute already)
    commit = staged = None
    if prefix is not None:
        from spark_jobs import catalog
        from spark_jobs.staging import StagingRun

        catalog.check_catalog(spark, prefix)
        output = catalog.staging_root(spark, staging)
        check_output(roots, output)
        in_catalog = catalog.CatalogTables(spark, prefix, output)
        in_catalog.create_namespace()
        commit = in_catalog.commit
        # its folder and marker before any task stages a file; the folders of runs gone removed
        staged = StagingRun(output, scan_id)
        staged.start()
    else:
        check_output(roots, output)
    if is_remote(output) and not isinstance(output, Output):   # the tasks' writers get the storage options
        output = Output(output, store.options())
    frames = None
    try:
        frames = build_tables(spark, roots, output, scan_id, **kw)
        parts: dict[str, list[R.Row]] = defaultdict(list)
        for row in frames.written:
            parts[row["table"]].append(row)
        for row in frames.writes.collect():
            parts[row["table"]].append(row.asDict())
        for table, rows in frames.driver.items():
            parts[table].extend(write_rows(output, scan_id, frames.as_of_ms, table, rows))
        for table, rows in (frames.after(parts) if frames.after is not None else {}).items():
            parts[table].extend(write_rows(output, scan_id, frames.as_of_ms, table, rows))
        commit_scan(output, scan_id, frames.as_of_ms, parts, kw.get("tables", DEFAULT_TABLES), roots,
                    before_commit=_fault_before_commit, commit=commit)
    finally:
        try:
            for df in frames.persisted if frames else ():
                df.unpersist()
            for b in frames.shared if frames else ():
                b.destroy()
        finally:
            if staged is not None:   # copied into the tables, or abandoned: either way no longer read
                staged.end()
    return scan_id, frames.as_of_ms


def _fault_before_commit(table: str) -> None:
    if faults.asked(f"write:{table}"):   # its files written, its commit not made
        faults.pause()


def check_output(roots: list[Path], output: str) -> None:
    """Raises ValueError (one sentence) for an output inside an input: the scan never writes
    into the copied log dirs."""
    for root in roots:
        if inside(output, root):
            raise ValueError(f"--output {output} is inside the input {root}: the scan never writes into "
                             "the copied log dirs; give a folder outside them")


def _as_of(text: str) -> int:
    try:
        return pipeline.parse_as_of(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _tables(text: str) -> tuple[str, ...]:
    try:
        return parse_tables(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spark_jobs/scan.py", description=__doc__.split("\n")[0])
    p.add_argument("inputs", nargs="+", help="roots of copied log dirs (one cluster): folders or URIs "
                   "(s3://, s3a://, gs://, abfs://, hdfs://, file://)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--output", help="folder of the Delta tables (DIR/<table>)")
    where.add_argument("--database", metavar="NAME",
                       help="write catalog tables NAME.<table> into the session's catalog (saveAsTable) instead")
    where.add_argument("--table-prefix", metavar="CATALOG.SCHEMA.",
                       help="write catalog tables CATALOG.SCHEMA.<table> (or SCHEMA.<table>) instead")
    p.add_argument("--warehouse", metavar="DIR",
                   help="with --database on a local Spark: a local folder holding the catalog (a Hive metastore "
                        "in DIR/metastore_db) and its tables; without it the session's configured catalog is used")
    p.add_argument("--staging", metavar="DIR",
                   help="with --database/--table-prefix: where the tasks stage their Parquet before the commits "
                        "(a run's own sub-folder, removed at its end, or by the next run when it was killed; "
                        "default: under the session's warehouse)")
    p.add_argument("--as-of", type=_as_of, help="the scan's 'now': ISO-8601 or epoch ms (default: newest timestamp)")
    p.add_argument("--max-transaction-timeout-ms", type=int, default=hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                   help="transaction.max.timeout.ms for find-hanging's rule (default %(default)s)")
    p.add_argument("--max-prepare-ms", type=int, default=None,
                   help="a PrepareCommit/PrepareAbort record older than this is coordinator_stuck_preparing, "
                        "not markers_pending (default: --max-transaction-timeout-ms)")
    p.add_argument("--scan-id", help="id tagging every row (default: derived from the inputs)")
    p.add_argument("--include-superseded", action="store_true",
                   help="also read -delete/-future folders and .deleted/.cleaned/.swap files")
    p.add_argument("--follow-links", action="store_true",
                   help="follow symbolic links that lead out of the inputs (by default a 'link' finding, not read)")
    p.add_argument("--split-bytes", type=int, default=SPLIT_BYTES,
                   help="segments larger than this are read by several tasks, one per byte range "
                        "(default %(default)s)")
    p.add_argument("--bootstrap-server", default=pipeline.DEFAULT_BOOTSTRAP,
                   help="bootstrap server written into the abort_plans commands (default %(default)s)")
    p.add_argument("--tables", type=_tables, default=DEFAULT_TABLES, metavar="all|NAME,...",
                   help="tables to write: 'all', or a comma list of " + ", ".join(TABLES) + " (default: every "
                        "table but batches, a row per batch of the copy; files, corruptions, partition_state, "
                        "hanging_candidates, affected_groups and partition_impact, which the summary reads, are "
                        "always written)")
    p.add_argument("--master", default="local[*]", help="Spark master when not under spark-submit")
    p.add_argument("--remote", default=None, metavar="sc://HOST:PORT|local[N]",
                   help="run as a Spark Connect client: of the Connect server at sc://HOST:PORT, or of one "
                        "started here on a local[N] Spark (default: spark-submit --remote's, or $SPARK_REMOTE; "
                        "else classic Spark, --master)")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="for an s3://, gs://, abfs://, hdfs:// --output: a keyword argument of pyarrow's "
                        "filesystem (repeatable; e.g. endpoint_override=host:9000, access_key=...), given to "
                        "the tasks' writers and, in delta-rs's spelling, to the commits")
    args = p.parse_args(argv)
    try:
        store.configure(store.parse_storage_options(args.storage_option))
    except ValueError as e:
        p.error(f"--storage-option: {e}")
    if args.split_bytes < 1:
        p.error("--split-bytes must be positive")
    from spark_jobs import catalog

    try:
        args.prefix = catalog.table_prefix(args.database, args.table_prefix)
        catalog.check_warehouse(args.warehouse)
    except ValueError as e:
        p.error(str(e))
    if args.prefix is None and (args.warehouse or args.staging):
        p.error("--warehouse and --staging are for catalog tables: give --database NAME or --table-prefix")
    if args.max_prepare_ms is not None and args.max_prepare_ms < 0:
        p.error("--max-prepare-ms must not be negative")
    from logscan.state.plans import check_bootstrap

    try:
        check_bootstrap(args.bootstrap_server)
    except ValueError as e:
        p.error(f"--bootstrap-server: {e}")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    from spark_jobs.scan_cli import BadRequest, OutputUnreachable, check_request

    try:
        check_request(args.inputs, args.output if args.prefix is None else args.staging, args.scan_id)
    except OutputUnreachable as e:   # the store refused before the scan: no answer, as `logscan scan`
        print(f"spark_jobs/scan.py: {e}", file=sys.stderr)
        return summary_text.EXIT_FAILED
    except BadRequest as e:   # before Spark starts, one sentence, as argparse's usage errors
        print(f"spark_jobs/scan.py: {e}", file=sys.stderr)
        return 2
    from spark_jobs.catalog import CatalogRefused, warehouse_conf
    from spark_jobs.scan_cli import report_failure

    try:
        # Ctrl-C here ends the JVM it was starting
        # (catalog tables: Spark itself reads the staged files, so a store's jars and settings)
        spark = build_session(master=args.master, remote=args.remote,
                              conf=warehouse_conf(args.warehouse) if args.prefix else None,
                              stores=[args.staging] if args.prefix and args.staging else ())
    except KeyboardInterrupt:
        return _interrupted()
    from spark_jobs.session import interrupts_end_the_job

    try:
        with interrupts_end_the_job(spark):
            scan_id, as_of_ms = run(spark, args.inputs, args.output, scan_id=args.scan_id,
                                    prefix=args.prefix, staging=args.staging, as_of_ms=args.as_of,
                                    max_transaction_timeout_ms=args.max_transaction_timeout_ms,
                                    max_prepare_ms=args.max_prepare_ms,
                                    include_superseded=args.include_superseded, follow_links=args.follow_links,
                                    split_bytes=args.split_bytes,
                                    bootstrap=args.bootstrap_server, tables=args.tables)
        print(summary(args.output, scan_id, as_of_ms, time.monotonic() - started,
                      max_transaction_timeout_ms=args.max_transaction_timeout_ms,
                      spark=spark if args.prefix else None, prefix=args.prefix))
    except KeyboardInterrupt:   # Ctrl-C: the jobs ended with the JVM; the scans table does not name the scan
        return _interrupted()
    except CatalogRefused as e:   # the session's catalog cannot keep the tables: before the scan
        print(f"spark_jobs/scan.py: {e}", file=sys.stderr)
        return 2
    except Exception as e:   # a full disk, a lost executor, an unwritable output: no answer
        return report_failure(e, sys.stderr, "spark_jobs/scan.py")
    return 0


#: Exit status after Ctrl-C, as `logscan` gives it (128 + SIGINT).
EXIT_INTERRUPTED = 130


def _interrupted() -> int:
    print("spark_jobs/scan.py: interrupted (Ctrl-C); unless the scans table names the scan, it is not whole "
          "(tables committed before hold it whole, the others not at all): run it again", file=sys.stderr)
    return EXIT_INTERRUPTED


def summary(output: Optional[str], scan_id: str, as_of_ms: int, seconds: float, *,
            max_transaction_timeout_ms: int = hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
            spark: Optional[SparkSession] = None, prefix: Optional[str] = None) -> str:
    """The text printed after the scan: logscan.scan.summary over :func:`figures` (with
    ``prefix``, over the catalog tables, read through ``spark``)."""
    out = io.StringIO()
    if prefix is not None:
        from logscan.report.data import scan_figures
        from spark_jobs.catalog import CatalogReader

        where = f"the catalog tables {prefix}<table>"
        figs = scan_figures(CatalogReader(spark, prefix), scan_id, as_of_ms, tables=where)
    else:
        where, figs = output, figures(output, scan_id, as_of_ms)
    out.write(f"scan {scan_id} into {where} in {seconds:.1f} s\n")
    summary_text.write_figures(figs, out, max_transaction_timeout_ms=max_transaction_timeout_ms)
    return out.getvalue().rstrip("\n")


if __name__ == "__main__":
    sys.exit(main())
