"""Shared by the Spark tests: one way to start a quiet local session for a test module."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable, Iterator, Optional

from spark_jobs.session import build_session


@contextmanager
def local_session(app_name: str, cores: int) -> Iterator:
    """A local[cores] session with Delta (spark_jobs.session), no UI or progress bars, one
    shuffle partition per core, stopped on exit."""
    session = build_session(app_name, master=f"local[{cores}]", conf={
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores), "spark.default.parallelism": str(cores)})
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def table(spark, output: str, name: str, scan_id: str):
    """One scan's rows of the Delta table ``name`` under ``output``."""
    from pyspark.sql import functions as F

    return spark.read.format("delta").load(f"{output}/{name}").where(F.col("scan_id") == scan_id)


def expected(spark, rows, schema):
    """The local executor's rows of a table as a frame of its schema."""
    import pyarrow as pa

    from spark_jobs.schemas import plain

    # through Arrow, as the job makes its driver's frames: a time column's value in a row is
    # microseconds (rows.ms_time), which Spark's Python-side check refuses for a timestamp
    return spark.createDataFrame(pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in rows],
                                                      schema=plain(schema)))


def assert_tables_equal(spark, output: str, scan_id: str, want: dict, names: Optional[Iterable[str]] = None) -> None:
    """Each table of ``names`` (default: every table) the Spark job wrote for ``scan_id`` holds exactly the rows of
    ``want`` (the local executor's tables: logscan.scan.local.scan(...).tables)."""
    from pyspark.testing import assertDataFrameEqual

    from logscan.scan import rows as R

    for name in R.TABLES if names is None else names:
        schema = R.TABLES[name]
        assertDataFrameEqual(table(spark, output, name, scan_id).select(*schema.names),
                             expected(spark, want[name], schema))
