"""SQL over the Delta tables in this process: DuckDB over delta-rs' Arrow datasets.

Why DuckDB and not DataFusion (deltalake's own ``QueryBuilder``), both tried on the demo
tables: DataFusion opened all eleven demo tables in 0.03 s (DuckDB's Arrow datasets take
~0.04 s a table, 0.44 s for all), but its session cannot be locked from Python: a "query" there ran ``COPY (SELECT 1) TO
'/tmp/x.csv'`` and ``CREATE EXTERNAL TABLE ... LOCATION '/etc/passwd'``. DuckDB's
``enable_external_access=false`` with ``lock_configuration`` refuses any file the tables did
not name (``read_csv('/etc/passwd')``, ``COPY``, ``ATTACH``, ``INSTALL``) even if a statement
got past the read-only check, and no statement can turn that back on. DuckDB is also nearer
Spark SQL where the two differ most often: ``/`` of integers is a double in both (DataFusion
truncates), and nulls sort first ascending, last descending, as Spark's do (set below).

Each table is registered when a statement first names it (a table costs ~40 ms to open), so
a query over one table does not pay for eleven. DESCRIBE of a table and SHOW TABLES answer as
Spark's do (col_name, data_type with Spark's type names, comment from the Delta schema;
namespace, tableName, isTemporary), so the two engines print the same rows.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import sqlparse
from sqlparse import tokens as T

from . import QueryError, Result
from .delta import arrow_dataset, delta_tables, describe, open_table

#: Fixed for the life of the connection (lock_configuration): no file the tables did not
#: name, no extension downloaded or loaded, Spark's null ordering.
CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "default_null_order": "nulls_first_on_asc_last_on_desc",
    "lock_configuration": True,
}
SHOW_TABLES_COLUMNS = ["namespace", "tableName", "isTemporary"]
DESCRIBE_COLUMNS = ["col_name", "data_type", "comment"]


class EmbeddedEngine:
    """A DuckDB connection whose views are the Delta tables under ``tables_dir``."""

    def __init__(self, tables_dir):
        """``tables_dir``: a local folder or a URI (logscan.sql.delta.delta_tables), or the
        tables already found (name -> folder or URI: delta.warehouse_tables, a catalog's)."""
        import duckdb

        self.paths = dict(tables_dir) if isinstance(tables_dir, dict) else delta_tables(tables_dir)
        self._duckdb = duckdb
        self._con = duckdb.connect(":memory:", config=CONFIG)
        self._tables: dict[str, Any] = {}

    @property
    def names(self) -> list[str]:
        return list(self.paths)

    def table(self, name: str):
        """The named table (deltalake.DeltaTable) at its newest version, opened once."""
        if name not in self._tables:
            self._tables[name] = open_table(self.paths[name])
        return self._tables[name]

    def _register(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.paths and name not in self._tables:
                self._con.register(name, arrow_dataset(self.table(name)))

    def _named(self, statement: str) -> set[str]:
        words = {t.value.strip('`"').lower() for t in sqlparse.parse(statement)[0].flatten()
                 if t.ttype in T.Name or t.ttype in T.Keyword or t.ttype in T.Literal.String.Symbol}
        return words & set(self.paths)

    def run(self, statement: str, *, limit: int) -> Result:
        """One statement's columns and at most ``limit`` rows."""
        described = self._spark_describe(statement)
        if described is not None:
            return described
        self._register(self._named(statement))
        try:
            relation = self._con.sql(statement)
            if relation is None:
                return Result([], [], False)
            rows = relation.limit(limit + 1).fetchall()
            columns = list(relation.columns)
        except self._duckdb.Error as e:
            raise QueryError(_first_line(e)) from None
        return Result(columns, [tuple(_spark_value(v) for v in r) for r in rows[:limit]], len(rows) > limit)

    def query(self, sql: str, params: Optional[list] = None, *, tables: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Every row of a query of logscan's own (the report), as dicts; ``tables`` are the
        views it reads."""
        return list(self.stream(sql, params, tables=tables))

    def stream(self, sql: str, params: Optional[list] = None, *, tables: Iterable[str] = (),
               rows_per_fetch: int = 8192) -> Iterator[dict[str, Any]]:
        """query()'s rows, fetched ``rows_per_fetch`` at a time as they are consumed: memory does
        not grow with the table. The query runs when the first row is asked for; read one
        stream to its end before starting another (they share the connection)."""
        self._register(tables)
        relation = self._con.execute(sql, params or [])
        columns = [d[0] for d in relation.description]
        while chunk := relation.fetchmany(rows_per_fetch):
            for r in chunk:
                yield {c: _spark_value(v) for c, v in zip(columns, r)}

    def _spark_describe(self, statement: str) -> Optional[Result]:
        """SHOW TABLES and DESCRIBE [TABLE] <table> as Spark answers them, else None."""
        words = [t.value.strip('`"') for t in sqlparse.parse(statement)[0].flatten()
                 if not t.is_whitespace and t.ttype not in T.Comment]
        upper = [w.upper() for w in words]
        if upper == ["SHOW", "TABLES"]:
            return Result(SHOW_TABLES_COLUMNS, [("", name, True) for name in self.paths], False)
        if upper[:1] in (["DESCRIBE"], ["DESC"]):
            rest = words[2:] if upper[1:2] == ["TABLE"] else words[1:]
            if len(rest) == 1 and rest[0].lower() in self.paths:
                return Result(DESCRIBE_COLUMNS, describe(self.table(rest[0].lower())), False)
        return None

    def close(self) -> None:
        self._con.close()


def _spark_value(value: Any) -> Any:
    """A value as pyspark's collect() gives it: a timestamp as naive UTC (the session's time
    zone is UTC), nested lists and structs alike."""
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, list):
        return [_spark_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _spark_value(v) for k, v in value.items()}
    return value


def _first_line(e: Exception) -> str:
    return next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
