"""Catalog tables: a scan's tables by name in the session's catalog, not by path (issue 31 item 4).

    python -m spark_jobs.scan COPY --database logscan --warehouse /data/lakehouse   # a local Spark
    spark-submit ... spark_jobs/scan.py s3a://b/copy --table-prefix main.kafka_forensics.   # a cluster's catalog

``--database NAME`` names each table ``NAME.<table>`` (``--table-prefix cat.schema.``:
``cat.schema.<table>``, for a catalog other than the session's default one, e.g. Unity's) and
writes it with saveAsTable into the session's catalog as a managed Delta table: the catalog
decides where its files live, so a lakehouse that forbids path access to its tables can hold
them. Path-based tables (``--output DIR``) stay the default.

The tasks still write each table's rows as Parquet where they are made (logscan.scan.output.Parts),
into a staging folder (``--staging DIR``, default: a folder under the session's warehouse),
one fresh sub-folder per run, removed when the run ends, and by a later run when it could not
(killed: spark_jobs.staging tells a run that is gone from one that lives). The driver then
makes each table's commit in the catalog: Spark reads the files the tasks reported (never a
listing of the folder) and writes them with ``mode("overwrite")``, ``replaceWhere scan_id = 'ID'`` and
``saveAsTable``: one Delta commit per table replacing this scan's rows, as the path-based
commit (output.commit) does, each column with its comment of logscan.scan.rows. The order and
the promises are logscan.scan.tables.commit_scan's, which calls :meth:`CatalogTables.commit`:
the ``scans`` row without this scan first, each table, the ``scans`` row last. So a killed job
leaves each table at its previous version or holding the scan whole, and the scans table does
not name a scan some table lacks; a re-run replaces the scan's rows.

A local Spark keeps its catalog in memory (session.BASE_CONF: no metastore in the working
folder), which ends with the job: ``--warehouse DIR`` gives it a persistent one instead, a Hive
metastore (Derby, pyspark's own jars) in ``DIR/metastore_db`` and the tables under ``DIR``
(:func:`warehouse_conf`). Under spark-submit without ``--warehouse`` the cluster's catalog is
used as its configuration says; a session whose catalog is in memory is refused (the tables
would be gone when the job ends).

Readers: :class:`CatalogReader` reads the tables back through Spark SQL (the job's summary;
``logscan sql --engine spark --database NAME`` registers them as views of their short names).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from logscan.logdir.store import local_folder
from logscan.scan import output
from logscan.scan import rows as R

#: An identifier Spark takes unquoted: a name part of --database and --table-prefix.
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
#: The tables a scan writes (rows.TABLES and scans): the names looked for in a namespace.
SCAN_TABLES = (*R.TABLES, R.SCANS_TABLE)
STAGING_FOLDER = "_logscan_staging"


class CatalogRefused(ValueError):
    """The catalog cannot hold the tables as asked (one sentence, with the fix)."""


def table_prefix(database: Optional[str] = None, prefix: Optional[str] = None) -> Optional[str]:
    """``NAME.`` for --database NAME, the --table-prefix as given (``cat.schema.``); None for
    neither. ValueError (one sentence) for a name Spark would not take unquoted, or both."""
    if database is not None and prefix is not None:
        raise ValueError("give --database or --table-prefix, not both")
    if database is not None:
        if not _PART.fullmatch(database):
            raise ValueError(f"--database {database!r}: a database name is letters, digits and '_' "
                             "(not starting with a digit)")
        return f"{database}."
    if prefix is not None:
        parts = prefix.split(".")
        if len(parts) not in (2, 3) or parts[-1] != "" or not all(_PART.fullmatch(p) for p in parts[:-1]):
            raise ValueError(f"--table-prefix {prefix!r}: give 'schema.' or 'catalog.schema.' (letters, digits "
                             "and '_', ending with '.')")
        return prefix
    return None


def namespace(prefix: str) -> str:
    return prefix.rstrip(".")


def warehouse_conf(warehouse: Optional[str]) -> dict[str, Optional[str]]:
    """Session settings for catalog tables: with ``warehouse`` (a local folder) a Hive metastore
    in WAREHOUSE/metastore_db (Derby's log beside it) and the tables under WAREHOUSE; without,
    the catalog the session's configuration gives (session.BASE_CONF's in-memory one unset).
    Makes the folder."""
    from .session import BASE_CONF

    if warehouse is None:
        return {"spark.sql.catalogImplementation": None}
    where = Path(warehouse).resolve()
    where.mkdir(parents=True, exist_ok=True)   # Derby's log goes there as it boots
    java = f"{BASE_CONF['spark.driver.extraJavaOptions']} -Dderby.stream.error.file={where / 'derby.log'}"
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": where.as_uri(),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={where / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": java,
    }


def check_warehouse(warehouse: Optional[str]) -> None:
    """ValueError (one sentence) for a --warehouse that is a URI: the metastore is a local file."""
    from logscan.logdir.store import is_uri

    if warehouse is not None and is_uri(warehouse):
        raise ValueError(f"--warehouse {warehouse}: give a local folder (it holds the metastore); a cluster's "
                         "catalog and warehouse come from its Spark configuration")


def check_catalog(spark, prefix: str) -> None:
    """CatalogRefused when the tables would go into a catalog kept in memory (gone with the job)."""
    parts = namespace(prefix).split(".")
    in_session_catalog = len(parts) == 1 or parts[0] == "spark_catalog"
    if in_session_catalog and spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "in-memory":
        raise CatalogRefused("the session's catalog is kept in memory (spark.sql.catalogImplementation=in-memory): "
                             "the tables would be gone when the job ends; give --warehouse DIR, or configure a "
                             "metastore (spark.sql.catalogImplementation=hive) or another catalog (--table-prefix)")


class CatalogTables:
    """Commits a scan's tables into the catalog, named ``prefix + table``, from Parquet files
    staged under ``staging`` (logscan.scan.output's layout: STAGING/<table>/scan_id=ID/...)."""

    def __init__(self, spark, prefix: str, staging: str):
        self.spark = spark
        self.prefix = prefix
        self.staging = staging

    def name(self, table: str) -> str:
        return f"{self.prefix}{table}"

    def create_namespace(self) -> None:
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace(self.prefix)}")

    def exists(self, table: str) -> bool:
        return self.spark.catalog.tableExists(self.name(table))

    def commit(self, table: str, scan_id: str, parts: list[R.Row]) -> None:
        """One Delta commit of ``table`` replacing ``scan_id``'s rows with the staged ``parts``
        (WRITTEN rows), creating the table on first use; none when nothing is added and the
        table holds nothing of the scan (as output.commit)."""
        from pyspark.sql import functions as F

        from .schemas import spark_schema

        name = self.name(table)
        if not parts and self.exists(table) and not self.spark.table(name).where(
                F.col(output.PARTITION_COLUMN) == scan_id).limit(1).count():
            return
        files = output.file_schema(table)
        paths = [f"{output.table_uri(self.staging, table)}/{p['path']}" for p in parts]
        if paths:
            df = self.spark.read.schema(spark_schema(files)).parquet(*paths)
        else:
            df = self.spark.createDataFrame([], spark_schema(files))
        df = df.withColumn(output.PARTITION_COLUMN, F.lit(scan_id))
        columns = [F.col(f.name).alias(f.name, metadata={"comment": (f.metadata or {}).get(b"comment", b"").decode()})
                   for f in output.table_schema(table)]
        (df.select(*columns).write.format("delta").mode("overwrite")
         .option("replaceWhere", f"{output.PARTITION_COLUMN} = '{scan_id}'")   # check_scan_id: no quote in it
         .option("mergeSchema", "true")
         .partitionBy(output.PARTITION_COLUMN).saveAsTable(name))


def staging_root(spark, staging: Optional[str]) -> str:
    """This run's staging folder (not made yet): a fresh sub-folder of --staging, or of the
    session's warehouse (STAGING_FOLDER) when none is given."""
    base = staging if staging is not None else \
        f"{spark.conf.get('spark.sql.warehouse.dir').rstrip('/')}/{STAGING_FOLDER}"
    local = local_folder(base)
    base = str(Path(local).resolve()) if local is not None else base
    from .staging import new_root

    return new_root(base)


def catalog_tables(spark, prefix: str) -> dict[str, str]:
    """Short name -> qualified name of the scan's tables in the namespace (none: {})."""
    from pyspark.errors import AnalysisException

    try:
        found = {t.name for t in spark.catalog.listTables(namespace(prefix))}
    except AnalysisException:
        return {}
    return {t: f"{prefix}{t}" for t in SCAN_TABLES if t in found}


def table_locations(spark, names: dict[str, str]) -> dict[str, str]:
    """Short name -> where the catalog keeps each table's files (Delta's ``DESCRIBE DETAIL``
    location; a local folder as a path): what delta-rs reads them at without Spark."""
    out = {}
    for short, qualified in names.items():
        location = spark.sql(f"DESCRIBE DETAIL {qualified}").select("location").first()[0]
        local = local_folder(location)
        out[short] = local if local is not None else location
    return out


def register_views(spark, names: dict[str, str]) -> list[str]:
    """Each catalog table as a temporary view of its short name (queries need no prefix)."""
    for short, qualified in names.items():
        spark.table(qualified).createOrReplaceTempView(short)
    return list(names)


def unfinished_scans(spark, names: dict[str, str]) -> dict[str, list[str]]:
    """logscan.sql.delta.unfinished_scans of catalog tables: scan ids some table holds that the
    ``scans`` table does not name, each with the tables holding it (read through Spark)."""
    if R.SCANS_TABLE not in names:
        return {}

    def ids(qualified: str) -> set:
        return {r[0] for r in spark.table(qualified).select(output.PARTITION_COLUMN).distinct().collect()}

    done = ids(names[R.SCANS_TABLE])
    out: dict[str, list[str]] = {}
    for short, qualified in names.items():
        if short != R.SCANS_TABLE:
            for scan_id in sorted(ids(qualified) - done):
                out.setdefault(scan_id, []).append(short)
    return out


class CatalogReader:
    """What logscan.report.data.scan_figures reads tables with (``paths``, ``stream``), over
    catalog tables through Spark SQL: ``?`` parameters are Spark's positional ones."""

    def __init__(self, spark, prefix: str):
        self.spark = spark
        self.paths = catalog_tables(spark, prefix)
        register_views(spark, self.paths)

    @property
    def names(self) -> list[str]:
        return list(self.paths)

    def stream(self, sql: str, params: Optional[list] = None, *, tables: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
        for value in params or []:   # as literals: Spark 4.2 left a positional one unbound here (UNBOUND_SQL_PARAMETER)
            sql = sql.replace("?", _literal(value), 1)
        for row in self.spark.sql(sql).toLocalIterator():
            yield row.asDict(recursive=True)

    def query(self, sql: str, params: Optional[list] = None, *, tables: Iterable[str] = ()) -> list[dict[str, Any]]:
        return list(self.stream(sql, params, tables=tables))

    def close(self) -> None:
        pass


def _literal(value) -> str:
    """A query parameter as a Spark SQL literal (a string quoted, its quotes and backslashes escaped)."""
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "NULL"}[value]
    if isinstance(value, (int, float)):
        return repr(value)
    raise TypeError(f"no SQL literal for {type(value).__name__}")
