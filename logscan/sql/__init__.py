"""SQL over a scan's Delta tables, without a JVM.

``delta`` finds the tables and reads their schemas (column comments included) through
Delta's log; ``statements`` splits input into statements and tells queries from writes;
``embedded`` answers queries with DuckDB over delta-rs' Arrow datasets. The Spark engine
(``spark_jobs.sql``) shares the results and errors declared here, so the CLI renders both
alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class QueryError(Exception):
    """The engine refused the statement; the message is one line, no stack trace."""


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
