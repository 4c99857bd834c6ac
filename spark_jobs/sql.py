"""`logscan sql --engine spark`: Spark SQL over a scan's Delta tables, each table folder under
DIR a temporary view of its name.

    logscan sql --engine spark "SELECT * FROM hanging_candidates" --tables DIR
    logscan sql --engine spark --allow-writes --tables DIR      (a prompt; writes through Delta)
    logscan sql --engine spark --database NAME [--warehouse DIR] "SELECT ..."   (catalog tables)
    spark-sql ... (see README: the same tables by path: delta.`DIR/partition_state`)

The default engine (logscan.sql.embedded) answers without a JVM; this one is for Spark SQL's
own dialect and for writes, which belong to Delta's Spark writer. Read-only unless asked:
besides the CLI's refusal of anything but queries, `SELECT * FROM csv.`/path`` (SQL on
files) is turned off, so a query reads the views and nothing else.

Catalog tables (a scan run with --database NAME or --table-prefix: spark_jobs.catalog) are
read through the session's catalog, each a temporary view of its short name as for a folder's
tables; ``--warehouse DIR`` opens the local catalog a scan's --warehouse made.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

from logscan.sql import QueryError, Result
from logscan.sql.delta import TablesError, delta_tables


class SparkEngine:
    """A quiet Delta-enabled session with the tables as views (``run``/``close`` as the
    embedded engine's)."""

    def __init__(self, tables_dir=None, *, master: str, allow_writes: bool = False,
                 prefix: Optional[str] = None, warehouse: Optional[str] = None):
        """``tables_dir``: the folder of path-based tables; or ``prefix`` (catalog.table_prefix)
        for catalog tables, in the catalog of ``warehouse`` (catalog.warehouse_conf) or the
        configured one."""
        from pyspark.sql import SparkSession

        from . import catalog
        from .console import session

        paths = delta_tables(tables_dir) if prefix is None else None
        # A session already running (a Spark application calling this) is used, and left running.
        self._owned = SparkSession.getActiveSession() is None
        # SHOW TABLES makes the in-memory catalog create its default database's folder,
        # spark.sql.warehouse.dir (./spark-warehouse unless set; a static setting): a throwaway
        # folder instead, so nothing appears where logscan is run.
        self._warehouse = tempfile.TemporaryDirectory(prefix="logscan-sql-warehouse-")
        conf = ({"spark.sql.warehouse.dir": Path(self._warehouse.name).as_uri()} if prefix is None or warehouse is None
                else {})
        if prefix is not None:
            conf.update(catalog.warehouse_conf(warehouse))
        self.spark = session("logscan-sql", master=master, conf=conf,
                             stores=[str(tables_dir)] if prefix is None else [])
        if prefix is not None:
            try:
                catalog.check_catalog(self.spark, prefix)
                found = catalog.catalog_tables(self.spark, prefix)
                if not found:
                    raise TablesError(f"no logscan tables {prefix}<table> in the session's catalog; run a scan "
                                      "with --database (or --table-prefix) first")
                self.names = catalog.register_views(self.spark, found)
                self.unfinished = catalog.unfinished_scans(self.spark, found)
            except BaseException:
                self.close()
                raise
        else:
            self.names = register_tables(self.spark, paths)
        if not allow_writes:
            self.spark.conf.set("spark.sql.runSQLOnFiles", "false")

    def run(self, statement: str, *, limit: int) -> Result:
        return run_query(self.spark, statement, limit=limit)

    def close(self) -> None:
        if self._owned:
            self.spark.stop()
        self._warehouse.cleanup()


def register_tables(spark, paths: dict) -> list[str]:
    """Each table (a folder's Path, or a URI's str: Spark reads s3:// and s3a:// through S3A)
    as a temporary view of its name."""
    for name, path in paths.items():
        where = path if isinstance(path, str) else str(path.resolve())
        spark.read.format("delta").load(where).createOrReplaceTempView(name)
    return list(paths)


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
