"""What `logscan report` draws, read from a scan's Delta tables with bounded queries, in this
process (logscan.sql.embedded: DuckDB over delta-rs, no JVM).

Only what the page shows is fetched: the worst partitions (by LSO lag, then open
transactions), the spans of those partitions only, and at most a few hundred rows of
candidates, plans and corruptions. ``logscan.report.html`` draws the plain dicts returned here.
"""

from __future__ import annotations

import shlex

from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from logscan.scan import summary
from logscan.sql.delta import TablesError, unfinished_scans
from logscan.sql.embedded import EmbeddedEngine

MAX_PARTITIONS = 40
MAX_SPANS = 6000
MAX_ROWS = 300

PARTITION_COLUMNS = ("topic", "partition", "broker", "log_start_offset", "log_end_offset", "high_watermark",
                     "last_stable_offset", "lso_lag", "open_transactions")
SPAN_COLUMNS = ("topic", "partition", "broker", "producer_id", "producer_epoch", "first_offset",
                "end_marker_offset", "outcome", "start_timestamp", "last_timestamp", "end_timestamp",
                "duration_ms", "batches", "records")


class NoScan(ValueError):
    """The tables hold no rows for the scan asked for (one sentence, with the fix)."""


def load(tables_dir, scan_id: Optional[str] = None, *, where: Optional[str] = None,
         sql_args: Optional[list[str]] = None) -> dict[str, Any]:
    """What the page shows of ``scan_id`` (None: the newest) in the tables at ``tables_dir``
    (a folder or URI, or the tables found: name -> folder, as a catalog's), named ``where`` in
    messages and on the page (default: the folder), its `logscan sql` commands reading them with
    ``sql_args`` (default: ``--tables DIR``)."""
    engine = EmbeddedEngine(tables_dir)
    try:
        return _load(engine, where or str(tables_dir), scan_id, sql_args)
    finally:
        engine.close()


def scan_figures(engine: EmbeddedEngine, scan_id: str, as_of_ms: int, tables: Optional[str] = None
                 ) -> summary.Figures:
    """The figures `logscan scan` prints (logscan.scan.summary's reduce) over one scan's rows of
    the tables ``engine`` reads, streamed (only the columns the reduce reads); ``tables``: where
    the summary says the tables are."""
    def streamed(table: str, columns: Iterable[str], order: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
        """The scan's rows of ``table``, ``columns`` only, streamed in ``order`` (none if there is
        no such table)."""
        if table in engine.paths:
            by = f" ORDER BY {', '.join(order)}" if order else ""
            yield from engine.stream(f"SELECT {', '.join(columns)} FROM {table} WHERE scan_id = ?{by}", [scan_id],
                                     tables=[table])

    return summary.figures(as_of_ms=as_of_ms,
                           states=streamed("partition_state", summary.STATE_COLUMNS, summary.STREAM_ORDER),
                           candidates=streamed("hanging_candidates", summary.CANDIDATE_COLUMNS, summary.STREAM_ORDER),
                           findings=streamed("corruptions", summary.FINDING_COLUMNS),
                           files=streamed("files", ("kind", "size")), tables=tables,
                           groups=streamed("affected_groups", summary.GROUP_COLUMNS),
                           impact=streamed("partition_impact", summary.IMPACT_COLUMNS))


def _load(engine: EmbeddedEngine, tables_dir, scan_id: Optional[str], sql_args: Optional[list[str]] = None
          ) -> dict[str, Any]:
    if "partition_state" not in engine.paths:
        raise TablesError(f"{tables_dir}: no partition_state table; give the --output folder of a scan")
    if scan_id is None:
        latest = engine.query("SELECT scan_id FROM partition_state ORDER BY as_of DESC, scan_id DESC LIMIT 1",
                              tables=["partition_state"])
        if not latest:
            raise NoScan(f"{tables_dir}: partition_state is empty; run a scan with --output {shlex.quote(str(tables_dir))}")
        scan_id = latest[0]["scan_id"]

    def rows(table: str, sql: str, *params: Any) -> Optional[list[dict[str, Any]]]:
        """``sql`` over the scan's rows of ``table`` (named ``t``); None if there is no such table."""
        if table not in engine.paths:
            return None
        return engine.query(f"WITH t AS (SELECT * FROM {table} WHERE scan_id = ?) {sql}", [scan_id, *params],
                            tables=[table])

    as_of = rows("partition_state", "SELECT epoch_ms(max(as_of)) AS as_of FROM t")[0]["as_of"]
    if as_of is None:
        raise NoScan(f"{tables_dir}: no rows for scan id {scan_id!r}; "
                     "`logscan sql --tables DIR \"SELECT DISTINCT scan_id FROM partition_state\"` lists them")
    holding = unfinished_scans(engine.paths).get(scan_id)
    if holding is not None:   # a page that looks whole would be a false all-clear
        raise NoScan(f"{tables_dir}: scan {scan_id!r} did not finish (killed or failed while its tables were "
                     f"written: {', '.join(holding)} hold it, the others may not); run the same scan again (it "
                     f"replaces its own rows), or give --scan-id of a finished one (the scans table lists them)")

    fig = scan_figures(engine, scan_id, as_of)
    head = {"as_of": as_of, "replicas": fig.replicas, "partitions": fig.partitions,
            "open_transactions": fig.open_transactions, "lagging_replicas": fig.lagging, "brokers": fig.brokers}
    # One row per partition: its leader's replica speaks for it, else the one furthest ahead
    # (ties: lowest broker), as in the summary (summary.speaker).
    speakers = f"""SELECT {', '.join(PARTITION_COLUMNS)} FROM t
        QUALIFY row_number() OVER (PARTITION BY topic, partition
                                   ORDER BY is_leader IS TRUE DESC, log_end_offset DESC, broker) = 1"""
    partitions = rows("partition_state", f"""
        {speakers} ORDER BY lso_lag DESC, open_transactions DESC, topic, partition LIMIT {MAX_PARTITIONS}""")
    with_lag = rows("partition_state", f"SELECT count(*) AS n FROM ({speakers}) WHERE lso_lag > 0")[0]["n"]
    keys = [(p["topic"], p["partition"], p["broker"]) for p in partitions]
    spans: list[dict[str, Any]] = []
    if keys:
        wanted = ", ".join("(?, ?, ?)" for _ in keys)
        spans = rows("txn_spans", f"""
            SELECT {', '.join(SPAN_COLUMNS)} FROM t
            SEMI JOIN (VALUES {wanted}) AS w(topic, partition, broker) USING (topic, partition, broker)
            ORDER BY outcome = 'OPEN' DESC, topic, partition, first_offset LIMIT {MAX_SPANS}""",
                     *[v for key in keys for v in key]) or []
    candidates = rows("hanging_candidates", "SELECT * FROM t "
                      f"ORDER BY hanging DESC NULLS LAST, topic, partition, broker LIMIT {MAX_ROWS}") or []
    plans = rows("abort_plans",   # None: tables written before the scan had an abort_plans table
                 f"SELECT * FROM t "
                 f"ORDER BY topic, partition, producer_id, start_offset LIMIT {MAX_ROWS}")
    corruptions = rows("corruptions", f"SELECT * FROM t "
                       f"ORDER BY broker, file, position LIMIT {MAX_ROWS}") or []
    counts = {"corruptions": fig.findings, "hanging_candidates": fig.candidates, "partitions_with_lag": with_lag,
              "followers": fig.followers, "groups": fig.groups, "held_partitions": fig.held_partitions,
              "held_bytes": fig.held_bytes}
    ends = rows("files", "SELECT min(file) AS first, max(file) AS last FROM t")
    return {"scan_id": scan_id, "tables": str(tables_dir), "input": _input_root(ends[0] if ends else None),
            "head": head, "counts": counts,
            "partitions": partitions, "spans": spans, "candidates": candidates, "plans": plans,
            "corruptions": corruptions, "followers": fig.follower_rows,
            "groups": fig.group_rows, "held": fig.held_rows,
            "limits": {"partitions": MAX_PARTITIONS, "spans": MAX_SPANS, "rows": MAX_ROWS},
            "queries": queries(str(tables_dir), scan_id, sql_args)}


def queries(tables_dir: str, scan_id: str, sql_args: Optional[list[str]] = None) -> dict[str, str]:
    """`logscan sql` commands that list everything the page shows only in part, shell-quoted
    (the folder and the scan id are anybody's bytes; the id is also quoted as SQL); they read
    ``--tables tables_dir``, or the tables ``sql_args`` name (``--database NAME ...``)."""
    where = "scan_id = '" + scan_id.replace("'", "''") + "'"
    sql = {
        "partitions": f"SELECT topic, partition, broker, is_leader, high_watermark, last_stable_offset, lso_lag, "
                      f"open_transactions FROM partition_state WHERE {where} AND lso_lag > 0 "
                      f"ORDER BY lso_lag DESC, topic, partition, broker",
        "spans": f"SELECT * FROM txn_spans WHERE {where} ORDER BY topic, partition, broker, first_offset",
        "candidates": f"SELECT * FROM hanging_candidates WHERE {where} ORDER BY hanging DESC NULLS LAST, topic, "
                      f"partition, broker",
        "plans": f"SELECT * FROM abort_plans WHERE {where} ORDER BY topic, partition, producer_id, start_offset",
        "groups": f"SELECT * FROM affected_groups WHERE {where} ORDER BY hanging DESC NULLS LAST, group_id, topic, "
                  f"partition, kind",
        "held": f"SELECT topic, partition, broker, cleaner_held_bytes, cleaner_held_segments, tiering_held_bytes, "
                f"tiering_held_segments FROM partition_impact WHERE {where} AND (cleaner_held_bytes > 0 OR "
                f"tiering_held_bytes > 0) ORDER BY topic, partition, broker",
        "followers": f"SELECT topic, partition, broker, leader, log_end_offset, last_stable_offset, "
                     f"open_transactions, array_to_string(list_transform(replica_differences, lambda d: 'vs broker ' "
                     f"|| d.other_broker || ': ' || d.text), '; ') AS replica_differences "
                     f"FROM partition_state WHERE {where} AND NOT is_leader "
                     f"AND NOT replicas_agree ORDER BY topic, partition, broker",
    }
    from logscan.logdir.store import option_flags

    if sql_args is None:
        sql_args = ["--tables", tables_dir]
    flags = option_flags([a for a in sql_args if not a.startswith("--")])   # a URI's --storage-option flags,
    return {k: f"{shlex.join(['logscan', 'sql', *sql_args])}{flags} {shlex.quote(q)}"   # never a secret's value
            for k, q in sql.items()}


def _input_root(ends: Optional[dict[str, Any]]) -> Optional[str]:
    """The folder the scan read: the common prefix of every path in `files`, cut at a '/'
    (the lexicographically first and last paths share exactly the prefix all paths share)."""
    if ends is None or ends["first"] is None:
        return None
    first, last = ends["first"], ends["last"]
    common = first[:next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), min(len(first), len(last)))]
    return common[:common.rfind("/") + 1] or common
