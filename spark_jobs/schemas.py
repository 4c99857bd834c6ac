"""Spark types and Delta writes for the tables declared in logscan.scan.rows.

Names, types and comments live in rows.py (Arrow schemas, shared with the local driver);
this module only translates them to Spark and tags every row with the scan.

Per-scan_id policy: every table is partitioned by ``scan_id`` and written with
``replaceWhere scan_id = '<id>'``: re-running a scan replaces exactly its own rows (a new
Delta version, the same rows), other scans' rows stay, and a run killed halfway never
committed, so readers keep seeing the previous version. The default scan id is derived from
the input roots, so re-running the same command is idempotent.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from logscan.scan import rows as R

TAGS = {
    "scan_id": "id of the scan that wrote the row (default: derived from the input roots)",
    "as_of": "the scan's 'now' (UTC): --as-of, else the newest timestamp in the copy",
}


def plain(schema: pa.Schema) -> pa.Schema:
    """An Arrow schema from rows.py without its comments (the fields' metadata)."""
    return pa.schema([f.remove_metadata() for f in schema])


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark type of an Arrow schema from rows.py (comments dropped: see with_comments)."""
    return from_arrow_schema(plain(schema))


def comment(field: pa.Field) -> str:
    return (field.metadata or {}).get(b"comment", b"").decode()


def with_comments(df: DataFrame, table: str) -> DataFrame:
    """The table's columns in declared order, each carrying its comment (Delta keeps it)."""
    cols: list[Column] = [F.col(f.name).alias(f.name, metadata={"comment": comment(f)})
                          for f in (R.SCANS if table == R.SCANS_TABLE else R.TABLES[table])]
    cols += [F.col(name).alias(name, metadata={"comment": text}) for name, text in TAGS.items()]
    return df.select(*cols)


def tag(df: DataFrame, scan_id: str, as_of_ms: int) -> DataFrame:
    return (df.withColumn("scan_id", F.lit(scan_id))
              .withColumn("as_of", F.timestamp_millis(F.lit(as_of_ms))))


def write_table(df: DataFrame, output: str, table: str, scan_id: str, as_of_ms: int,
                options: dict[str, str] | None = None) -> None:
    """Replace this scan's rows of DIR/<table> (creating the table on first use); ``options``
    are Delta write options on top of replaceWhere. A column a newer logscan adds is merged into
    a table an older one wrote (its earlier scans read null there)."""
    writer = (with_comments(tag(df, scan_id, as_of_ms), table)
              .write.format("delta").mode("overwrite")
              .option("replaceWhere", f"scan_id = '{scan_id}'").option("mergeSchema", "true"))
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    writer.partitionBy("scan_id").save(f"{output.rstrip('/')}/{table}")


def members(tagged: DataFrame, kind: str) -> DataFrame:
    """One table out of a tagged union (see rows.tagged_schema)."""
    return tagged.where(F.col("record_type") == kind).select(f"{kind}.*")
