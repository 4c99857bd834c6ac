"""Shared by the Spark tests: one way to start a quiet local session for a test module."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

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
