"""Spark types for the tables declared in logscan.scan.rows, and the unions the steps emit.

Names, types and comments live in rows.py (Arrow schemas, shared with the local executor); this
module only translates them to Spark's types for the steps' DataFrames. The Delta tables are
written by logscan.scan.output (Parquet from the tasks, one commit per table from the driver),
which also holds their tags (scan_id, as_of) and per-scan_id policy.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType


def plain(schema: pa.Schema) -> pa.Schema:
    """An Arrow schema from rows.py without its comments (the fields' metadata)."""
    return pa.schema([f.remove_metadata() for f in schema])


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark type of an Arrow schema from rows.py (comments dropped: the Delta schema
    logscan.scan.output commits carries them)."""
    return from_arrow_schema(plain(schema))


def members(tagged: DataFrame, kind: str) -> DataFrame:
    """One table out of a tagged union (see rows.tagged_schema)."""
    return tagged.where(tagged["record_type"] == kind).select(f"{kind}.*")
