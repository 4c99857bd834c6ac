"""SQL over a scan's Delta tables: each table folder under DIR becomes a view of its name.

    logscan sql "SELECT * FROM hanging_candidates" --tables DIR      (one query)
    logscan sql --tables DIR                                         (a prompt)
    spark-sql ... (see README: the same tables by path: delta.`DIR/partition_state`)

Spark owns the session and Delta; the caller renders the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator


class TablesError(Exception):
    """The --tables folder holds no Delta table (one sentence, with the fix)."""


class QueryError(Exception):
    """Spark refused the statement; the message is Spark's own first line, no stack trace."""


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool


def delta_tables(tables_dir: Path) -> dict[str, Path]:
    """View name -> table folder, for every child folder with a `_delta_log`."""
    if not tables_dir.is_dir():
        raise TablesError(f"{tables_dir}: no such folder; give the --output folder of a scan "
                          f"(e.g. `logscan scan COPY --output {tables_dir}`)")
    found = {p.name: p for p in sorted(tables_dir.iterdir()) if (p / "_delta_log").is_dir()}
    if not found:
        raise TablesError(f"{tables_dir}: no Delta tables in it (no <table>/_delta_log); run a scan with "
                          f"--output {tables_dir} first")
    return found


def register_tables(spark, tables_dir: Path) -> list[str]:
    names = []
    for name, path in delta_tables(tables_dir).items():
        spark.read.format("delta").load(str(path.resolve())).createOrReplaceTempView(name)
        names.append(name)
    return names


def run_query(spark, statement: str, *, limit: int) -> Result:
    """Runs one statement; at most ``limit`` rows come back to the driver."""
    from pyspark.errors import PySparkException
    from pyspark.logger import PySparkLogger

    # pyspark logs every failed SQL statement with its Java stack trace; the error we raise
    # says it in one line.
    PySparkLogger.getLogger("SQLQueryContextLogger").disabled = True
    try:
        df = spark.sql(statement)
        rows = df.limit(limit + 1).collect()
    except PySparkException as e:
        raise QueryError(_first_line(e)) from None
    except Exception as e:  # py4j errors from the JVM that pyspark does not convert
        if type(e).__module__.startswith("py4j"):
            raise QueryError(_first_line(e)) from None
        raise
    return Result(list(df.columns), [tuple(r) for r in rows[:limit]], len(rows) > limit)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("JVM stacktrace", "at ", "Traceback")):
            return line
    return type(e).__name__


def statements(lines: Iterable[str]) -> Iterator[str]:
    """Statements ending in ';' from a prompt's lines (a ';' inside quotes does not end one);
    ``\\q`` on its own line ends the input."""
    buf: list[str] = []
    quote = None
    for line in lines:
        if not buf and line.strip() in ("\\q", "quit", "exit"):
            return
        start = 0
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in ("'", '"', "`"):
                quote = ch
            elif ch == ";":
                buf.append(line[start:i])
                text = " ".join(s.strip() for s in buf).strip()
                if text:
                    yield text
                buf, start = [], i + 1
        rest = line[start:]
        if rest.strip():
            buf.append(rest)
    text = " ".join(s.strip() for s in buf).strip()
    if text:
        yield text
