"""`logscan scan COPY --output DIR`: the Spark job (spark_jobs.scan) on a local Spark, for a person.

The same job and the same tables as ``python -m spark_jobs.scan``, and the same summary as the
single-process scan (logscan.scan.summary over the tables' figures); around it, this driver
refuses an output inside the copy before Spark starts, keeps Spark's log quiet
(spark_jobs.console), lets Spark draw its stage progress only on a terminal, says what to run
next, and exits like the single-process scan (summary.exit_status). With ``--database NAME``
(spark_jobs.catalog) the tables are catalog tables, and what is printed is read back from them
through Spark SQL before the session stops.
"""

from __future__ import annotations

import json as jsonlib
import os
import re
import shlex
import sys
import tempfile
import time
import traceback
from typing import Optional, TextIO

from logscan.scan.summary import EXIT_FAILED
from logscan.text import printable

class BadRequest(ValueError):
    """What was asked cannot run (one sentence, with the fix)."""


class OutputUnreachable(BadRequest):
    """The store of an --output URI refused or failed before the scan began (credentials,
    endpoint): one sentence naming the URI and the store's answer."""


def failure_cause(error: BaseException) -> str:
    """The cause of a failed Spark job in one line: the innermost Java exception behind a Py4J
    error (a full disk's IOException under a SparkException), or, when that is a Python
    worker's failure (a task writing its Parquet to a full disk), the Python exception its
    traceback ends with; else the error's first line. Read while the session is up (the Java
    objects die with it)."""
    # Py4JJavaError's Java exception, or the one pyspark's converted errors keep (PythonException)
    java = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    if java is not None:
        try:
            root = java
            while root.getCause() is not None:
                root = root.getCause()
            text = str(root.toString())
            if root.getClass().getName() == "org.apache.spark.api.python.PythonException":
                text = _python_error(text.splitlines()) or text
            return printable(text.strip())[:500]
        except Exception:   # the JVM already gone: the Python side's text below
            pass
    lines = str(error).splitlines()
    worker = _python_error(lines)
    if worker:
        return printable(worker)[:500]
    first = next((line for line in lines if line.strip()), "")
    return printable(f"{type(error).__name__}: {first.strip()}")[:500]


_PYTHON_ERROR = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: .*)?")


def _python_error(lines: list[str]) -> Optional[str]:
    """The exception a Python worker's traceback ends with ("OSError: [Errno 28] No space left
    on device"), when the text holds one: its last line of that form after the traceback."""
    start = next((i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line), None)
    if start is None:
        return None
    return next((line.strip() for line in reversed(lines[start:]) if _PYTHON_ERROR.fullmatch(line.strip())), None)


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


def check_request(inputs: list, output: Optional[str], scan_id: Optional[str],
                  tables: Optional[str] = None) -> tuple[str, ...]:
    """Before Spark starts: the tables go outside the copy, the scan id can name a partition,
    and --tables names tables. Returns the tables to write (scan.parse_tables; None: the
    default). ``output`` None: catalog tables with their staging folder still to be chosen
    (spark_jobs.catalog; checked by scan.run)."""
    from logscan.scan.tables import DEFAULT_TABLES, check_scan_id, parse_tables

    from .scan import check_output

    try:
        if output is not None:
            check_output(inputs, str(output))
        names = DEFAULT_TABLES if tables is None else parse_tables(tables)
        if scan_id is not None:
            check_scan_id(scan_id)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    from logscan.logdir.store import is_uri
    from logscan.logdir.tree import NoLogDirs, find_log_dirs

    refused = []
    try:
        find_log_dirs(inputs, refused)   # an INPUT with no log dir: one sentence, before Spark starts
    except NoLogDirs as e:
        raise BadRequest(str(e)) from None
    for finding in refused:   # a URI that names nothing (or a store that refuses): before any table is written
        if is_uri(str(finding.path)) and any(str(finding.path).rstrip("/") == str(p).rstrip("/") for p in inputs):
            raise BadRequest(printable(f"{finding.path}: {finding.message}")) from None
    from logscan.scan.output import failure, probe

    try:
        if output is not None:
            probe(output)   # an --output URI's store answers with these credentials, before the scan
    except OSError as e:
        raise OutputUnreachable(f"the --output store cannot be reached: {failure(e)}; check the --storage-option "
                                "values or the credentials in the environment") from None
    return names


def scan_to_tables(inputs: list[str], output: str, *, as_of_ms: Optional[int], max_transaction_timeout_ms: int,
                   include_superseded: bool, scan_id: Optional[str], bootstrap: str, master: str, json: bool,
                   follow_links: bool = False,
                   no_progress: bool, tables: Optional[str] = None, out: Optional[TextIO] = None,
                   err: Optional[TextIO] = None, per_replica: bool = False,
                   max_prepare_ms: Optional[int] = None, remote: Optional[str] = None,
                   prefix: Optional[str] = None, warehouse: Optional[str] = None,
                   staging: Optional[str] = None) -> int:
    """Runs the job into ``output``, prints what it found; returns the exit status. ``tables``:
    --tables as given (None: every table but batches); ``max_prepare_ms``: --max-prepare-ms
    (None: the max transaction timeout); ``remote``: --remote, the job as a Spark Connect
    client (``sc://HOST:PORT``, or ``local[N]``: a Connect server started here), ``master``
    then unused. ``prefix`` (spark_jobs.catalog.table_prefix), with ``warehouse`` and
    ``staging``: catalog tables instead of ``output`` (None then).

    Raises BadRequest (one sentence) for an output inside an input, a bad scan id or an
    unknown table, and
    console.SetupFailed when Spark with Delta cannot start (Delta's jars missing)."""
    from logscan import progress
    from logscan.scan import summary as summary_text
    from logscan.scan import tables as written
    from logscan.scan.output import where_lines

    from . import scan as job
    from .console import session
    from .session import interrupts_end_the_job

    out, err = out or sys.stdout, err or sys.stderr
    roots = list(inputs)   # str: local paths or URIs (logscan.logdir.store)
    names = check_request(roots, output if prefix is None else staging, scan_id, tables)
    started = time.monotonic()
    from .catalog import CatalogRefused, warehouse_conf

    spark = session("logscan-scan", master=master, progress=progress.wanted(no_progress), remote=remote,
                    conf=warehouse_conf(warehouse) if prefix is not None else None,
                    stores=[staging] if prefix is not None and staging else ())
    try:
        # Ctrl-C: the jobs end with the JVM at once; the tables committed so far hold this scan
        # whole, and the scans table, committed last, does not name it
        with interrupts_end_the_job(spark):
            scan_id, as_of_ms = job.run(spark, roots, output, scan_id=scan_id, as_of_ms=as_of_ms,
                                        max_transaction_timeout_ms=max_transaction_timeout_ms,
                                        max_prepare_ms=max_prepare_ms,
                                        include_superseded=include_superseded, follow_links=follow_links,
                                        bootstrap=bootstrap, tables=names, prefix=prefix, staging=staging)
            if prefix is not None:   # read back through the catalog, while the session is up
                figures, candidates, where = _catalog_results(spark, prefix, scan_id, as_of_ms, json, warehouse)
    except CatalogRefused as e:   # before the scan: the session's catalog cannot keep the tables
        spark.stop()
        raise BadRequest(str(e)) from None
    except Exception as e:   # a full disk, a lost executor, an unwritable output: no answer
        try:
            return report_failure(e, err, "logscan scan")   # reads the cause while the JVM is up
        finally:
            spark.stop()
    spark.stop()
    if prefix is None:
        figures = written.figures(output, scan_id, as_of_ms)
        candidates = written.candidates(output, scan_id) if json else []
        where = where_lines(output)

    text = out if not json else err
    text.write(f"scan {scan_id} into {output if prefix is None else f'the catalog tables {prefix}<table>'} in "
               f"{time.monotonic() - started:.1f} s\n")
    summary_text.write_figures(figures, text, max_transaction_timeout_ms=max_transaction_timeout_ms, inputs=inputs,
                               per_replica=per_replica)
    text.write(where)
    for c in candidates:
        out.write(jsonlib.dumps(c) + "\n")
    return summary_text.exit_status(figures)


def _catalog_results(spark, prefix: str, scan_id: str, as_of_ms: int, json: bool, warehouse: Optional[str]):
    """(figures, candidates, where-lines) of a scan into catalog tables, read through Spark SQL
    (spark_jobs.catalog.CatalogReader): what tables.figures, tables.candidates and
    output.where_lines give for a folder's tables."""
    from logscan.report.data import scan_figures
    from logscan.scan.summary import candidate_order, json_candidate

    from .catalog import CatalogReader

    reader = CatalogReader(spark, prefix)
    figures = scan_figures(reader, scan_id, as_of_ms)
    candidates = (sorted((json_candidate(r) for r in reader.stream(
        "SELECT * FROM hanging_candidates WHERE scan_id = ?", [scan_id])), key=candidate_order) if json else [])
    flag = f"--database {prefix[:-1]}" if prefix.count(".") == 1 else f"--table-prefix {prefix}"
    if warehouse is not None:
        flag += f" --warehouse {shlex.quote(warehouse)}"
    where = (f"  {', '.join(reader.names)} (catalog tables {prefix}<table>)\n"
             f"  logscan sql --engine spark {flag} 'SELECT * FROM abort_plans'\n")
    return figures, candidates, where
