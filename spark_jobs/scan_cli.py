"""`logscan scan COPY --output DIR`: the Spark job (spark_jobs.scan) on a local Spark, for a person.

The same job and the same tables as ``python -m spark_jobs.scan``, and the same summary as the
single-process scan (logscan.scan.summary over the tables' figures); around it, this driver
refuses an output inside the copy before Spark starts, keeps Spark's log quiet
(spark_jobs.console), lets Spark draw its stage progress only on a terminal, says what to run
next, and exits like the single-process scan (summary.exit_status).
"""

from __future__ import annotations

import json as jsonlib
import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Optional, TextIO

from logscan.scan.summary import EXIT_FAILED
from logscan.text import printable

class BadRequest(ValueError):
    """What was asked cannot run (one sentence, with the fix)."""


def failure_cause(error: BaseException) -> str:
    """The cause of a failed Spark job in one line: the innermost Java exception behind a Py4J
    error (a full disk's IOException under the write's SparkException), else the error's first
    line. Read while the session is up (the Java objects die with it)."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            root = java
            while root.getCause() is not None:
                root = root.getCause()
            return printable(str(root.toString()))[:500]
        except Exception:   # the JVM already gone: the Python side's text below
            pass
    first = next((line for line in str(error).splitlines() if line.strip()), "")
    return printable(f"{type(error).__name__}: {first.strip()}")[:500]


def report_failure(error: BaseException, err: TextIO, program: str) -> int:
    """A Spark scan that could not finish: one line on ``err`` naming the cause and the log file
    that holds the whole trace (a JVM's runs to thousands of lines); returns EXIT_FAILED, which
    says no answer came (1 says damage found, 4 hanging)."""
    fd, path = tempfile.mkstemp(prefix="logscan-spark-failure-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        f.write("".join(traceback.format_exception(error)))
    err.write(f"{program}: the Spark job failed: {failure_cause(error)}; the whole trace is in "
              f"{shlex.quote(path)}\n")
    return EXIT_FAILED


def check_request(inputs: list[Path], output: Path, scan_id: Optional[str],
                  tables: Optional[str] = None) -> tuple[str, ...]:
    """Before Spark starts: the tables go outside the copy, the scan id can name a partition,
    and --tables names tables. Returns the tables to write (scan.parse_tables; None: the
    default)."""
    from .scan import DEFAULT_TABLES, check_output, check_scan_id, parse_tables

    try:
        check_output(inputs, str(output))
        names = DEFAULT_TABLES if tables is None else parse_tables(tables)
        if scan_id is not None:
            check_scan_id(scan_id)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    from logscan.logdir.tree import NoLogDirs, find_log_dirs

    try:
        find_log_dirs(inputs)   # an INPUT with no log dir: one sentence, before Spark starts
    except NoLogDirs as e:
        raise BadRequest(str(e)) from None
    return names


def scan_to_tables(inputs: list[str], output: str, *, as_of_ms: Optional[int], max_transaction_timeout_ms: int,
                   include_superseded: bool, scan_id: Optional[str], bootstrap: str, master: str, json: bool,
                   follow_links: bool = False,
                   no_progress: bool, tables: Optional[str] = None, out: Optional[TextIO] = None,
                   err: Optional[TextIO] = None) -> int:
    """Runs the job into ``output``, prints what it found; returns the exit status. ``tables``:
    --tables as given (None: every table but batches).

    Raises BadRequest (one sentence) for an output inside an input, a bad scan id or an
    unknown table, and
    console.SetupFailed when Spark with Delta cannot start (Delta's jars missing)."""
    from logscan import progress
    from logscan.scan import summary as summary_text

    from . import scan as job
    from .console import session

    out, err = out or sys.stdout, err or sys.stderr
    roots = [Path(p) for p in inputs]
    names = check_request(roots, Path(output), scan_id, tables)
    started = time.monotonic()
    spark = session("logscan-scan", master=master, progress=progress.wanted(no_progress))
    try:
        scan_id, as_of_ms = job.run(spark, roots, output, scan_id=scan_id, as_of_ms=as_of_ms,
                                    max_transaction_timeout_ms=max_transaction_timeout_ms,
                                    include_superseded=include_superseded, follow_links=follow_links,
                                    bootstrap=bootstrap, tables=names)
        figures = job.figures(spark, output, scan_id, as_of_ms)
        candidates = _candidates(spark, output, scan_id) if json else []
    except Exception as e:   # a full disk, a lost executor, an unwritable output: no answer
        return report_failure(e, err, "logscan scan")
    finally:
        spark.stop()

    text = out if not json else err
    text.write(f"scan {scan_id} into {output} in {time.monotonic() - started:.1f} s\n")
    summary_text.write_figures(figures, text, max_transaction_timeout_ms=max_transaction_timeout_ms, inputs=inputs)
    tables = sorted(p.name for p in Path(output).iterdir() if (p / "_delta_log").is_dir())
    where = shlex.quote(output)
    text.write(f"  {', '.join(tables)} (Delta tables, one folder each)\n"
               f"  logscan sql --tables {where} 'SELECT * FROM abort_plans'\n"
               f"  logscan report --tables {where} --out report.html\n")
    for c in candidates:
        out.write(jsonlib.dumps(c) + "\n")
    return summary_text.exit_status(figures)


def _candidates(spark, output: str, scan_id: str) -> list[dict]:
    """Every hanging candidate of the scan, without the scan tags, in summary.candidate_order:
    the objects `logscan scan --format json` prints."""
    from pyspark.sql import functions as F

    from logscan.scan.summary import candidate_order

    df = spark.read.format("delta").load(f"{output}/hanging_candidates").where(F.col("scan_id") == scan_id)
    return sorted((r.asDict(recursive=True) for r in df.drop("scan_id", "as_of").toLocalIterator()),
                  key=candidate_order)
