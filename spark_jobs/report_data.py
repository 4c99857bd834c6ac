"""What `logscan report` draws, read from a scan's Delta tables with bounded queries.

The driver never collects a whole table: the report shows the worst partitions (by LSO lag,
then open transactions), the spans of those partitions only, and at most a few hundred rows
of candidates and corruptions. The HTML itself is made by ``logscan.report`` from the plain
dicts returned here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .sql import delta_tables

MAX_PARTITIONS = 40
MAX_SPANS = 6000
MAX_ROWS = 300


class NoScan(ValueError):
    """The tables hold no rows for the scan asked for (one sentence, with the fix)."""


def _rows(df, limit: int) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.limit(limit).collect()]


def load(spark, tables_dir: Path, scan_id: Optional[str] = None) -> dict[str, Any]:
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    paths = delta_tables(tables_dir)

    def table(name: str):
        if name not in paths:
            return None
        df = spark.read.format("delta").load(str(paths[name].resolve()))
        return df.where(F.col("scan_id") == chosen) if chosen is not None else df

    chosen = None
    state_all = spark.read.format("delta").load(str(paths["partition_state"].resolve()))
    if scan_id is None:
        latest = state_all.orderBy(F.desc("as_of"), F.desc("scan_id")).select("scan_id", "as_of").limit(1).collect()
        if not latest:
            raise NoScan(f"{tables_dir}: partition_state is empty; run a scan with --output {tables_dir}")
        chosen = latest[0]["scan_id"]
    else:
        chosen = scan_id
    state = table("partition_state")
    head = state.agg(F.max("as_of").alias("as_of"), F.count("*").alias("replicas"),
                     F.countDistinct("topic", "partition").alias("partitions"),
                     F.sum("open_transactions").alias("open_transactions"),
                     F.sum(F.when(F.col("lso_lag") > 0, 1).otherwise(0)).alias("lagging_replicas"),
                     F.countDistinct("broker").alias("brokers")).first().asDict()
    if hasattr(head["as_of"], "timestamp"):   # the tables' as_of is a TIMESTAMP column
        head["as_of"] = int(head["as_of"].timestamp() * 1000)
    if head["replicas"] == 0:
        raise NoScan(f"{tables_dir}: no rows for scan id {chosen!r}; "
                     "`logscan sql --tables DIR \"SELECT DISTINCT scan_id FROM partition_state\"` lists them")

    # One row per partition: the replica furthest ahead speaks for it (ties: lowest broker).
    ahead = Window.partitionBy("topic", "partition").orderBy(F.desc("log_end_offset"), F.asc("broker"))
    worst = (state.withColumn("_r", F.row_number().over(ahead)).where("_r = 1").drop("_r")
             .orderBy(F.desc("lso_lag"), F.desc("open_transactions"), "topic", "partition"))
    partitions = _rows(worst.select("topic", "partition", "broker", "log_start_offset", "log_end_offset",
                                    "high_watermark", "last_stable_offset", "lso_lag", "open_transactions"),
                       MAX_PARTITIONS)
    keys = [(p["topic"], p["partition"], p["broker"]) for p in partitions]
    spans: list[dict[str, Any]] = []
    if keys and (s := table("txn_spans")) is not None:
        wanted = spark.createDataFrame(keys, "topic string, partition int, broker int")
        spans = _rows(s.join(F.broadcast(wanted), ["topic", "partition", "broker"], "left_semi")
                      .select("topic", "partition", "broker", "producer_id", "producer_epoch", "first_offset",
                              "end_marker_offset", "outcome", "start_timestamp", "last_timestamp",
                              "end_timestamp", "duration_ms", "batches", "records")
                      .orderBy(F.desc(F.col("outcome") == "OPEN"), "topic", "partition", "first_offset"),
                      MAX_SPANS)
    candidates = []
    if (c := table("hanging_candidates")) is not None:
        candidates = _rows(c.orderBy(F.desc_nulls_last("hanging"), "topic", "partition", "broker"), MAX_ROWS)
    plans = None   # None: tables written before the scan had an abort_plans table
    if (p := table("abort_plans")) is not None:
        plans = _rows(p.orderBy("topic", "partition", "producer_id", "start_offset"), MAX_ROWS)
    corruptions = []
    if (k := table("corruptions")) is not None:
        corruptions = _rows(k.orderBy("broker", "file", "position"), MAX_ROWS)
    counts = {name: table(name).count() for name in ("files", "corruptions", "hanging_candidates")
              if name in paths}
    return {"scan_id": chosen, "tables": str(tables_dir), "input": _input_root(table("files")),
            "head": head, "counts": counts,
            "partitions": partitions, "spans": spans, "candidates": candidates, "plans": plans,
            "corruptions": corruptions, "limits": {"partitions": MAX_PARTITIONS, "spans": MAX_SPANS,
                                                    "rows": MAX_ROWS}}


def _input_root(files) -> Optional[str]:
    """The folder the scan read: the common prefix of every path in `files`, cut at a '/'
    (the lexicographically first and last paths share exactly the prefix all paths share)."""
    from pyspark.sql import functions as F

    if files is None:
        return None
    first, last = files.agg(F.min("file"), F.max("file")).first()
    if first is None:
        return None
    common = first[:next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), min(len(first), len(last)))]
    return common[:common.rfind("/") + 1] or common

