"""What a scan writes, whichever executor runs it: the tables, the scan id, the order of the
commits, and what is read back for the person who asked.

Both writers of a scan's Delta tables use this module: the Spark job (spark_jobs.scan.run) and
the local executor's (logscan.scan.delta, `logscan scan --output DIR --executor local`). Each
writes every table's rows as Parquet parts (logscan.scan.output.Parts) its own way, then hands
them to :func:`commit_scan`: one Delta commit per table in :func:`commit_order`, then the
scan's row in the ``scans`` table, last, which says the scan is whole (readers warn of a scan
id without one: logscan.sql.delta.unfinished_scans); the Spark job's catalog tables
(spark_jobs.catalog) go through the same order with a commit of their own. The summary and the candidates are read
back from the committed tables (:func:`figures`, :func:`candidates`: DuckDB over delta-rs), so
what is printed is what the tables hold; where they are is logscan.scan.output.where_lines.
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from . import output
from . import rows as R

#: Every table, in rows.TABLES's order; the default of --tables leaves out batches (a row per
#: batch of the copy: most of a scan's output, and of its decode's work when written).
TABLES = tuple(R.TABLES)
DEFAULT_TABLES = tuple(t for t in TABLES if t != "batches")
#: What the summary (figures) reads: written whatever --tables says.
SUMMARY_TABLES = ("files", "corruptions", "partition_state", "hanging_candidates", "affected_groups",
                  "partition_impact")
_SCAN_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")


def check_scan_id(scan_id: str) -> None:
    """Raises ValueError (one sentence) for a scan id that cannot name a table partition: it is
    a folder name (scan_id=ID) and a value of the commits' partition filter."""
    if not _SCAN_ID.fullmatch(scan_id):
        raise ValueError(f"scan id {scan_id!r}: use 1 to 100 letters, digits, '.', '_' or '-'")


def parse_tables(text: str) -> tuple[str, ...]:
    """--tables: "all", or a comma list of table names (in TABLES's order, with the summary's
    tables). Raises ValueError (one sentence naming the tables) for an unknown name."""
    names = {n.strip() for n in text.split(",") if n.strip()}
    if names == {"all"}:
        return TABLES
    unknown = sorted(names - set(TABLES))
    if unknown or not names:
        raise ValueError(f"--tables {text!r}: {'unknown table ' + ', '.join(unknown) if unknown else 'no table'}; "
                         f"give 'all' or a comma list of {', '.join(TABLES)}")
    return tuple(t for t in TABLES if t in names or t in SUMMARY_TABLES)


def default_scan_id(roots: Iterable) -> str:
    """The scan id of a scan of ``roots`` when none is given: the same inputs, the same id, so
    re-running a scan replaces its own rows."""
    from logscan.logdir.store import is_uri

    # A URI names its place already (Path would make s3://b/c the local s3:/b/c under the cwd).
    places = (str(p) if is_uri(str(p)) else str(Path(p).resolve()) for p in roots)
    digest = hashlib.sha256("\n".join(sorted(places)).encode()).hexdigest()
    return f"scan-{digest[:16]}"


def commit_order(tables: Iterable[str]) -> list[str]:
    """The order the tables are committed in: rows.TABLES's, ``batches`` (by far the largest)
    last."""
    return sorted(tables, key=lambda t: (t == "batches", TABLES.index(t)))


#: A table's commit: (table, scan_id, WRITTEN parts) -> None, replacing the scan's rows of it in
#: one Delta version (output.commit over a folder's path-based tables; the Spark job's catalog
#: tables: spark_jobs.catalog.CatalogTables.commit).
Commit = Callable[[str, str, list], None]


def commit_scan(out: str, scan_id: str, as_of_ms: int, parts: dict[str, list[R.Row]], tables: Iterable[str],
                inputs: Iterable, *, before_commit: Optional[Callable[[str], None]] = None,
                commit: Optional[Commit] = None) -> None:
    """Commits a written scan: its ``scans`` row removed, each of ``tables`` (its WRITTEN
    ``parts``; a table without parts is created empty, or loses this scan's rows) in
    commit_order, then the scan's ``scans`` row.
    ``before_commit(table)`` is called before each table's commit (the Spark job's fault points:
    spark_jobs.faults). ``commit`` makes each table's commit (default: output.commit of the
    path-based tables under ``out``); the parts, the scans row's too, are written under ``out``
    either way (for catalog tables: their staging folder)."""
    tables = list(tables)
    if commit is None:
        def commit(table: str, scan_id: str, written: list) -> None:
            output.commit(out, table, scan_id, written)
    # First the scan is unfinished: the scans table exists (so readers of a first scan cut short
    # can tell its tables hold a part) and no longer names this scan id (a re-run replaces its
    # tables one by one).
    commit(R.SCANS_TABLE, scan_id, [])
    for table in commit_order(tables):
        if before_commit is not None:
            before_commit(table)
        commit(table, scan_id, parts.get(table, []))
    finished = R.scans_row(tables, [str(r) for r in inputs], int(time.time() * 1000))
    commit(R.SCANS_TABLE, scan_id, output.write_rows(out, scan_id, as_of_ms, R.SCANS_TABLE, [finished]))


def figures(out: str, scan_id: str, as_of_ms: int):
    """logscan.scan.summary's figures (the scan's last step) over this scan's committed tables,
    read in this process (logscan.report.data.scan_figures: DuckDB over delta-rs)."""
    from logscan.report.data import scan_figures
    from logscan.sql.embedded import EmbeddedEngine

    engine = EmbeddedEngine(out)
    try:
        return scan_figures(engine, scan_id, as_of_ms, tables=out)
    finally:
        engine.close()


def candidates(out: str, scan_id: str) -> list[dict]:
    """Every hanging candidate of the scan, without the scan tags, in summary.candidate_order:
    the objects `logscan scan --format json` prints (summary.json_candidate)."""
    from logscan.sql.embedded import EmbeddedEngine

    from .summary import candidate_order, json_candidate

    engine = EmbeddedEngine(out)
    try:
        rows = engine.stream("SELECT * EXCLUDE (scan_id, as_of) FROM hanging_candidates WHERE scan_id = ?",
                             [scan_id], tables=["hanging_candidates"])
        return sorted(map(json_candidate, rows), key=candidate_order)
    finally:
        engine.close()
