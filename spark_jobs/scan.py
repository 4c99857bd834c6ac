"""The Spark scan: copied Kafka log dirs in, Delta tables of producer state, spans and LSO out.

Usage (after `make delta-jars`; from the repository root, with the project's venv)::

    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        --jars "$(.venv/bin/python -m spark_jobs.session --jars)" \\
        spark_jobs/scan.py INPUT... --output DIR \\
        [--as-of 2026-11-22T21:00:00Z | --as-of 1795381200000] \\
        [--max-transaction-timeout-ms 900000] [--scan-id ID] [--include-superseded]

(PYSPARK_PYTHON: the venv's spark-submit script finds Spark through it, and the Python
workers need its pyarrow and logscan.) Or, on a local Spark the job starts itself, with the
jars passed for you::

    .venv/bin/python -m spark_jobs.scan INPUT... --output DIR [--master 'local[2]']

INPUT is a root of one copied cluster: a Kafka log dir or a folder of them, one per broker.
Each table is a path-based Delta table DIR/<table> (files, batches, corruptions, txn_log,
coordinator_state, producer_state, txn_spans, partition_state, hanging_candidates),
partitioned by scan_id; see spark_jobs/schemas.py for the re-run policy.

The driver only lists files. Segment files are decoded on executors (mapInArrow over a
table of work units, a task per group of small files or per large file), and Kafka's
per-replica rules run per (broker, topic, partition) in a cogrouped applyInArrow; both call
the same logscan functions as the single-process driver, logscan.scan.local.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

if __package__ in (None, ""):  # run as a file by spark-submit
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from logscan.logdir.tree import file_size, iter_brokers, read_offset_checkpoint
from logscan.scan import rows as R
from logscan.scan.replica import TRANSACTION_STATE_TOPIC
from logscan.state import hanging
from spark_jobs import schemas as S
from spark_jobs import tasks
from spark_jobs.session import build_session

cloudpickle.register_pickle_by_value(tasks)

KEYS = ["broker", "topic", "partition"]
#: Bytes a decode task aims at: a few seconds of header walking, far above the ~25 ms a
#: task costs, yet enough tasks to spread a cluster's copy over the executors.
TARGET_TASK_BYTES = 256 << 20
WRITE_THREADS = 4
CHECKPOINTS = ("replication-offset-checkpoint", "log-start-offset-checkpoint")
#: Replicas per task of the grouped per-replica step (each one a replay over its batches).
REPLICAS_PER_TASK = 64
MAX_SHUFFLE_PARTITIONS = 2000
_SCAN_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


@dataclass(slots=True)
class Listing:
    """What the driver learns from directory listings and checkpoint files alone."""

    units: list[R.Row] = field(default_factory=list)       # one per .log segment
    replicas: list[R.Row] = field(default_factory=list)    # tasks.REPLICA_INFO rows
    files: list[R.Row] = field(default_factory=list)       # files table rows not decoded
    findings: list[R.Row] = field(default_factory=list)    # corruptions found while listing


def list_inputs(roots: list[Path], *, include_superseded: bool = False) -> Listing:
    out = Listing()
    for broker in iter_brokers(roots, include_superseded=include_superseded):
        bkey = R.replica_key(broker.broker, None, None)
        for s in broker.skipped:
            out.files.append({**bkey, "file": s.path, "kind": "skipped", "size": -1, "status": "skipped",
                              "error_count": 0, "batches": 0, "detail": s.reason})
        errors = list(broker.errors)
        checkpoints = {}
        for name in CHECKPOINTS:
            before = len(errors)
            checkpoints[name] = read_offset_checkpoint(broker.path / name, errors)
            if (broker.path / name).is_file():
                bad = len(errors) - before
                out.files.append({**bkey, "file": str(broker.path / name), "kind": "checkpoint",
                                  "size": file_size(broker.path / name), "status": "damaged" if bad else "ok",
                                  "error_count": bad, "batches": 0, "detail": None})
        hws, starts = checkpoints[CHECKPOINTS[0]], checkpoints[CHECKPOINTS[1]]
        out.findings.extend({**bkey, "file": str(broker.path), "position": -1, "length": None,
                             "reason": "corrupt", "message": e} for e in errors)
        for r in broker.replicas:
            key = R.replica_key(r.broker, r.topic, r.partition)
            for base, path in r.segments:
                out.units.append({**key, "file": str(path), "segment_base_offset": base,
                                  "size": file_size(path)})
            for kind, listed in (("producer_snapshot", r.snapshots), ("txn_index", r.txn_indexes)):
                out.files.extend({**key, "file": str(p), "kind": kind, "size": file_size(p),
                                  "status": "listed", "error_count": 0, "batches": 0, "detail": None}
                                 for _, p in listed)
            tp = (r.topic, r.partition)
            out.replicas.append({
                **key, "path": str(r.path),
                "first_segment_base": r.segments[0][0] if r.segments else None,
                "last_segment_base": r.segments[-1][0] if r.segments else None,
                "snapshots": [{"base_offset": b, "file": str(p)} for b, p in r.snapshots],
                "hw_checkpoint": hws.get(tp), "log_start_checkpoint": starts.get(tp)})
    return out


def plan_tasks(units: list[R.Row], parallelism: int, target_bytes: int = TARGET_TASK_BYTES) -> list[list[R.Row]]:
    """Groups of work units, largest file first onto the lightest group: many small files
    share a task, a file of target_bytes or more ends up (nearly) alone."""
    if not units:
        return []
    total = sum(u["size"] for u in units)
    n = min(len(units), max(parallelism, -(-total // target_bytes)))
    groups: list[list[R.Row]] = [[] for _ in range(n)]
    load = [0] * n
    for unit in sorted(units, key=lambda u: -u["size"]):
        i = min(range(n), key=load.__getitem__)
        groups[i].append({**unit, "task": i})
        load[i] += unit["size"]
    return [g for g in groups if g]


def _frame(spark: SparkSession, rows: list[R.Row], schema) -> DataFrame:
    names = schema.names
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], S.spark_schema(schema))


def work_units(spark: SparkSession, groups: list[list[R.Row]]) -> DataFrame:
    """One Spark partition per group: parallelize with as many slices as elements."""
    rdd = spark.sparkContext.parallelize(groups, max(len(groups), 1)).flatMap(tasks.unit_tuples)
    return spark.createDataFrame(rdd, S.spark_schema(tasks.WORK_UNIT))


def parse_as_of(text: Optional[str]) -> Optional[int]:
    """ISO-8601 (naive means UTC) or epoch milliseconds."""
    if text is None:
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def default_scan_id(roots: list[Path]) -> str:
    digest = hashlib.sha256("\n".join(sorted(str(p.resolve()) for p in roots)).encode()).hexdigest()
    return f"scan-{digest[:16]}"


@dataclass(slots=True)
class ScanFrames:
    """The tables of one scan as DataFrames (not yet tagged or written)."""

    tables: dict[str, DataFrame]
    as_of_ms: int
    persisted: list[DataFrame]


def build_tables(spark: SparkSession, roots: list[Path], *, as_of_ms: Optional[int] = None,
                 max_transaction_timeout_ms: int = hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                 include_superseded: bool = False) -> ScanFrames:
    listing = list_inputs(roots, include_superseded=include_superseded)
    parallelism = spark.sparkContext.defaultParallelism
    groups = plan_tasks(listing.units, parallelism)
    # The grouped step's output is cached with as many partitions as the shuffle has, and all
    # nine writes read it: Spark's default 200 costs ~20 ms a task each time on a small copy.
    spark.conf.set("spark.sql.shuffle.partitions",
                   str(max(parallelism, min(MAX_SHUFFLE_PARTITIONS, -(-len(listing.replicas) // REPLICAS_PER_TASK)))))
    decoded = work_units(spark, groups).mapInArrow(
        tasks.decode_files, S.spark_schema(tasks.DECODED)).persist()
    batches = S.members(decoded, "batch")
    txn_log = S.members(decoded, "txn_log")

    replicas = _frame(spark, listing.replicas, tasks.REPLICA_INFO)
    replica_out = (replicas.groupBy(*KEYS).cogroup(batches.groupBy(*KEYS))
                   .applyInArrow(tasks.replica_step, S.spark_schema(tasks.REPLICA_OUT))).persist()
    partition_state = S.members(replica_out, "state")

    # The coordinator loads each __transaction_state partition up to its log end: take, per
    # coordinator partition, the replica whose copy reaches furthest (ties: lowest broker).
    best = Window.partitionBy("partition").orderBy(F.desc("log_end_offset"), F.asc("broker"))
    chosen = (partition_state.where(F.col("topic") == TRANSACTION_STATE_TOPIC)
              .withColumn("_rank", F.row_number().over(best)).where("_rank = 1").select(*KEYS))
    coordinator_log = txn_log.join(chosen, KEYS, "left_semi")
    coordinator = coordinator_log.groupBy("partition").applyInArrow(
        tasks.coordinator_step, S.spark_schema(R.COORDINATOR_STATE))

    if as_of_ms is None:
        newest = (partition_state.select(F.max("max_timestamp").alias("t"))
                  .unionByName(coordinator_log.select(F.max("last_update_timestamp_ms").alias("t")))
                  .agg(F.max("t")).first()[0])
        as_of_ms = -1 if newest is None else int(newest)
    # find-hanging can only prove a record absent when every coordinator partition is here.
    coordinator_partitions = sorted(r[0] for r in chosen.select("partition").collect())
    complete = bool(coordinator_partitions) and coordinator_partitions == list(range(coordinator_partitions[-1] + 1))
    # One row per transactional id: small next to the data, shipped to the hanging step.
    coordinator_rows = [r.asDict(recursive=True) for r in coordinator.collect()]
    candidates = S.members(replica_out, "open_txn").mapInArrow(
        tasks.hanging_step(coordinator_rows, as_of_ms, max_transaction_timeout_ms, complete),
        S.spark_schema(R.HANGING_CANDIDATES))

    files = S.members(decoded, "file").unionByName(_frame(spark, listing.files, R.FILES))
    corruptions = (S.members(decoded, "finding")
                   .unionByName(S.members(replica_out, "finding"))
                   .unionByName(_frame(spark, listing.findings, R.CORRUPTIONS)))
    tables = {
        "files": files, "batches": batches, "corruptions": corruptions, "txn_log": txn_log,
        "coordinator_state": spark.createDataFrame(coordinator_rows, S.spark_schema(R.COORDINATOR_STATE))
        if coordinator_rows else _frame(spark, [], R.COORDINATOR_STATE),
        "producer_state": S.members(replica_out, "producer"), "txn_spans": S.members(replica_out, "span"),
        "partition_state": partition_state, "hanging_candidates": candidates,
    }
    return ScanFrames(tables, as_of_ms, [decoded, replica_out])


def run(spark: SparkSession, roots: list[Path], output: str, *, scan_id: Optional[str] = None,
        **kw) -> tuple[str, int]:
    """Build and write every table; returns (scan_id, as_of_ms)."""
    scan_id = scan_id or default_scan_id(roots)
    if not _SCAN_ID.match(scan_id):
        raise ValueError(f"scan id {scan_id!r}: use letters, digits, '.', '_' or '-'")
    frames = build_tables(spark, roots, **kw)
    try:
        # Each write is a Spark job plus a Delta commit, mostly driver-side latency: a few
        # at a time halve the wall time on two cores. Each table commits atomically on its own.
        with ThreadPoolExecutor(WRITE_THREADS) as pool:
            for _ in pool.map(lambda item: S.write_table(item[1], output, item[0], scan_id, frames.as_of_ms),
                              frames.tables.items()):
                pass
    finally:
        for df in frames.persisted:
            df.unpersist()
    return scan_id, frames.as_of_ms


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spark_jobs/scan.py", description=__doc__.split("\n")[0])
    p.add_argument("inputs", nargs="+", type=Path, help="roots of copied log dirs (one cluster)")
    p.add_argument("--output", required=True, help="folder of the Delta tables (DIR/<table>)")
    p.add_argument("--as-of", help="the scan's 'now': ISO-8601 or epoch ms (default: newest timestamp)")
    p.add_argument("--max-transaction-timeout-ms", type=int, default=hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                   help="transaction.max.timeout.ms for find-hanging's rule (default %(default)s)")
    p.add_argument("--scan-id", help="id tagging every row (default: derived from the inputs)")
    p.add_argument("--include-superseded", action="store_true",
                   help="also read -delete/-future folders and .deleted/.cleaned/.swap files")
    p.add_argument("--master", default="local[*]", help="Spark master when not under spark-submit")
    return p.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    spark = build_session(master=args.master)
    scan_id, as_of_ms = run(spark, args.inputs, args.output, scan_id=args.scan_id,
                            as_of_ms=parse_as_of(args.as_of),
                            max_transaction_timeout_ms=args.max_transaction_timeout_ms,
                            include_superseded=args.include_superseded)
    print(summary(spark, args.output, scan_id, as_of_ms, time.monotonic() - started))
    return 0


def summary(spark: SparkSession, output: str, scan_id: str, as_of_ms: int, seconds: float) -> str:
    def load(table: str) -> DataFrame:
        return spark.read.format("delta").load(f"{output}/{table}").where(F.col("scan_id") == scan_id)

    counts = {t: load(t).count() for t in ("files", "batches", "corruptions", "partition_state",
                                           "txn_spans", "hanging_candidates")}
    unstable = load("partition_state").where("lso_lag > 0").count()
    lines = [f"scan {scan_id} as of {datetime.fromtimestamp(as_of_ms / 1000, timezone.utc).isoformat()} "
             f"into {output} in {seconds:.1f} s",
             "  " + ", ".join(f"{t}: {n}" for t, n in counts.items()),
             f"  replicas with LSO below the high watermark: {unstable}"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
