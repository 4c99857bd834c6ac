"""`logscan scan COPY --output DIR --executor local`: the scan's Delta tables written by the
local executor (logscan.scan.local), without Spark.

The tables, their rows and their schemas are the Spark job's (spark_jobs.scan.run; the tests
compare the two table by table), written the way it writes them (logscan.scan.output): the
rows as Parquet parts in each table's folder, then one Delta commit per table replacing this
scan's rows, in the job's order, then the scan's row in the ``scans`` table, last, which says
the scan is whole (logscan.scan.tables.commit_scan, which both use). So the same promises
hold (README, "The Delta output"): a table's commit names its files, a run killed before a
table's commit leaves that table at its previous version (the files written for it belong to
no version), re-running the same scan id replaces its rows, other scans' rows stay.

The rows stream: each row of a table to write goes to a spool (logscan.scan.spool) as the scan
makes it, since its Parquet file carries the scan's ``as_of``, known only once every replica is
read; the spools become the Parquet parts at the end, a chunk at a time. Memory stays what the
scan's own is, whatever the size of the tables.

The request (an output outside the copy, the scan id, --tables) is checked before, as for the
Spark job (spark_jobs.scan_cli.check_request, in logscan.cli).
"""

from __future__ import annotations

import json as jsonlib
import shlex
import sys
import time
from typing import Iterable, Optional, TextIO

from . import output as delta_output
from . import rows as R
from .spool import SpoolFolder
from .tables import candidates, commit_scan, figures

__all__ = ["TableParts", "write_tables", "scan_to_tables"]


class TableParts:
    """A local.TableSink: every row of ``tables``, spooled in ``folder`` as the scan makes it;
    :meth:`write` turns them into Parquet parts of the Delta tables under an output."""

    def __init__(self, folder: SpoolFolder, tables: Iterable[str]) -> None:
        self.tables = frozenset(tables)
        self._spools = {t: folder.spool(t, R.TABLES[t].names) for t in R.TABLES if t in self.tables}

    def add(self, table: str, row: R.Row) -> None:
        self._spools[table].add(table, row)

    def write(self, output: str, scan_id: str, as_of_ms: int) -> dict[str, list[R.Row]]:
        """Each table's rows as one Parquet file in its folder (output.Parts): its WRITTEN rows,
        by table (a table without rows has none). The files belong to no version until
        committed."""
        parts = delta_output.Parts(output, scan_id, as_of_ms)
        try:
            for table, spool in self._spools.items():
                spool.close()
                for chunk in spool.chunks(table):
                    parts.add(table, R.to_batch(chunk, R.TABLES[table]))
            written = parts.close()
        except BaseException:
            parts.abort()
            raise
        by_table: dict[str, list[R.Row]] = {}
        for w in written:
            by_table.setdefault(w["table"], []).append(w)
        return by_table


def write_tables(roots: list, output: str, *, scan_id: str, tables: tuple[str, ...],
                 progress: bool = False, **scan_options) -> int:
    """Scans ``roots`` (local.scan's ``scan_options``) and writes ``tables`` (spark_jobs.scan's
    parse_tables names, checked) into ``output`` as scan ``scan_id``; returns the scan's as_of.
    ``progress``: a bar over the segments on stderr (logscan.progress.scan)."""
    from logscan import progress as bar

    with SpoolFolder() as folder:
        sink = TableParts(folder, tables)
        result = bar.scan(roots, enabled=progress, keep=(), sink=sink, **scan_options)
        parts = sink.write(output, scan_id, result.as_of_ms)
    commit_scan(output, scan_id, result.as_of_ms, parts, tables, roots)
    return result.as_of_ms


def scan_to_tables(inputs: list[str], output: str, *, scan_id: str, tables: tuple[str, ...],
                   max_transaction_timeout_ms: int, json: bool = False, no_progress: bool = False,
                   per_replica: bool = False, out: Optional[TextIO] = None, err: Optional[TextIO] = None,
                   **scan_options) -> int:
    """`logscan scan --output DIR --executor local`: writes the tables, prints what the Spark
    job's command prints (spark_jobs.scan_cli.scan_to_tables: the summary read back from the
    tables, where they are, what to run next; with ``json`` the candidates on ``out`` and the
    rest on ``err``); returns the exit status (summary.exit_status). A write that fails (a full
    disk, an unwritable output, a table of another schema) is one line on ``err`` and
    EXIT_FAILED: no answer."""
    from deltalake.exceptions import DeltaError

    from logscan import progress

    from . import summary

    out, err = out or sys.stdout, err or sys.stderr
    roots = list(inputs)   # str: local paths or URIs (logscan.logdir.store)
    started = time.monotonic()
    try:
        as_of_ms = write_tables(roots, output, scan_id=scan_id, tables=tables, progress=progress.wanted(no_progress),
                                max_transaction_timeout_ms=max_transaction_timeout_ms, **scan_options)
    except (OSError, delta_output.TableError, DeltaError) as e:
        err.write(f"logscan scan: writing the tables into {shlex.quote(output)} failed: {delta_output.failure(e)}\n")
        return summary.EXIT_FAILED
    fig = figures(output, scan_id, as_of_ms)
    text = err if json else out
    text.write(f"scan {scan_id} into {output} in {time.monotonic() - started:.1f} s\n")
    summary.write_figures(fig, text, max_transaction_timeout_ms=max_transaction_timeout_ms, inputs=inputs,
                          per_replica=per_replica)
    text.write(delta_output.where_lines(output))
    if json:
        for c in candidates(output, scan_id):
            out.write(jsonlib.dumps(c) + "\n")
    return summary.exit_status(fig)
