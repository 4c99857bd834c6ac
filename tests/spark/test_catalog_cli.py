"""Catalog tables' requests refused before Spark starts, and commit_scan's order through a
catalog's commit (spark_jobs.catalog; the runs themselves: tests/spark/test_catalog.py).

No test here starts a JVM: each refusal is one sentence and exit 2, and leaves no folder
(spark-warehouse, metastore_db, a --warehouse) where it was run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")

from logscan.cli import main  # noqa: E402
from logscan.scan import rows as R  # noqa: E402
from logscan.scan.tables import DEFAULT_TABLES, commit_order, commit_scan  # noqa: E402
from spark_jobs.catalog import table_prefix  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
COPY = REPO / "fixtures" / "hanging" / "brokers"


def _job(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "spark_jobs.scan", str(COPY), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, said", [
    (["--database", "bad name"], "--database 'bad name'"),
    (["--database", "1st"], "--database '1st'"),
    (["--database", "x`; DROP"], "--database"),
    (["--table-prefix", "a.b.c."], "--table-prefix 'a.b.c.'"),
    (["--table-prefix", "schema"], "--table-prefix 'schema'"),
    (["--database", "ls", "--output", "out"], "not allowed with"),
    (["--database", "ls", "--table-prefix", "c.s."], "not allowed with"),
    (["--output", "out", "--warehouse", "wh"], "--warehouse and --staging are for catalog tables"),
    (["--output", "out", "--staging", "st"], "--warehouse and --staging are for catalog tables"),
    (["--database", "ls", "--warehouse", "s3://bucket/wh"], "give a local folder"),
    (["--database", "ls", "--warehouse", "wh", "--staging", str(COPY / "staged")], "inside the input"),
])
def test_the_job_refuses_before_spark_starts(tmp_path, args, said):
    res = _job(tmp_path, *args)
    assert res.returncode == 2, res.stderr
    assert said in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == []   # no warehouse, metastore_db, spark-warehouse


def test_table_prefix_names():
    assert table_prefix("logscan") == "logscan."
    assert table_prefix(prefix="main.kafka.") == "main.kafka."
    assert table_prefix(prefix="kafka.") == "kafka."
    assert table_prefix() is None


@pytest.mark.parametrize("args, said", [
    (["--database", "ls"], "--engine spark"),
    (["--database", "ls", "--tables", "x", "--engine", "spark"], "not both"),
    (["--tables", "x", "--warehouse", "wh"], "--warehouse is for catalog tables"),
    (["--engine", "spark", "--database", "no good"], "--database 'no good'"),
    ([], "give --tables DIR"),
])
def test_logscan_sql_refuses_a_catalog_request_it_cannot_answer(tmp_path, monkeypatch, args, said):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["sql", *args, "SELECT 1"])
    assert res.exit_code == 2, res.output
    assert said in res.output, res.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["report"], ["diff", "a", "b"]])
@pytest.mark.parametrize("args, said", [
    (["--database", "ls"], "give --engine spark"),                      # where: only a catalog knows
    (["--table-prefix", "main.kafka.", "--warehouse", "wh"], "give --engine spark"),
    (["--database", "ls", "--warehouse", "wh"], "no catalog tables ls.<table> at wh/ls.db"),
    (["--database", "ls", "--tables", "x"], "not both"),
    (["--database", "no good", "--warehouse", "wh"], "--database 'no good'"),
])
def test_report_and_diff_refuse_catalog_tables_they_cannot_find_in_one_line(tmp_path, monkeypatch, command, args,
                                                                             said):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, [*command, *args])
    assert res.exit_code == 2, res.output
    assert said in res.output and "Traceback" not in res.output, res.output
    assert len([line for line in res.output.splitlines() if line.startswith("Error:")]) == 1
    assert list(tmp_path.iterdir()) == []


def test_commit_scan_commits_through_the_given_commit_in_its_order(tmp_path):
    made = []
    commit_scan(str(tmp_path), "s", 1_000, {}, DEFAULT_TABLES, ["copy"],
                commit=lambda table, scan_id, parts: made.append((table, scan_id, len(parts))))
    # the scans table first without the scan, every table in commit_order, the scans row last
    assert made == [(R.SCANS_TABLE, "s", 0), *((t, "s", 0) for t in commit_order(DEFAULT_TABLES)),
                    (R.SCANS_TABLE, "s", 1)]
    assert list((tmp_path / R.SCANS_TABLE / "scan_id=s").glob("*.parquet"))   # the scans row staged under out


@pytest.mark.parametrize("args, said", [
    (["--database", "ls", "--output", "out"], "not both"),
    (["--database", "ls", "--executor", "local"], "not --executor local"),
    (["--warehouse", "wh"], "--warehouse and --staging are for catalog tables"),
    (["--database", "no good"], "--database 'no good'"),
    (["--database", "ls", "--warehouse", "gs://b/wh"], "give a local folder"),
    (["--database", "ls", "--warehouse", "wh", "--staging", str(COPY / "staged")], "inside the input"),
])
def test_logscan_scan_refuses_a_catalog_request_before_spark_starts(tmp_path, monkeypatch, args, said):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["scan", str(COPY), *args])
    assert res.exit_code == 2, res.output
    assert said in res.output, res.output
    assert list(tmp_path.iterdir()) == []
