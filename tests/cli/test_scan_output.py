"""`logscan scan COPY --output DIR`: the Spark job from the CLI, on the real-broker fixture
cluster with three hanging transactions; what it prints is checked against the
single-process `logscan scan` of the same copy."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")
from logscan.cli import main  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402

from .conftest import HANGING, scan_args, truth  # noqa: E402

BROKERS = HANGING / "brokers"
TABLES = ("files", "batches", "corruptions", "txn_log", "coordinator_state", "producer_state", "txn_spans",
          "partition_state", "hanging_candidates", "abort_plans")
needs_delta = pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")


def _local_json() -> list[dict]:
    res = CliRunner().invoke(main, ["scan", str(BROKERS), "--format", "json", "--as-of",
                                    str(truth()["recorded_at_ms"])])
    assert res.exit_code == 4, res.output
    return [json.loads(line) for line in res.stdout.splitlines()]


def _key(c: dict) -> tuple:
    return (c["broker"], c["topic"], c["partition"], c["producer_id"], c["start_offset"])


@pytest.mark.spark
@needs_delta
def test_summary_says_what_hangs_and_where_the_tables_are(scan_run):
    out, res = scan_run
    assert res.exit_code == 4, res.output                  # as the single-process scan: hanging found
    text = res.stdout
    assert f"into {out} " in text and f"\nTables: {out}\n" in text
    listed = text.split(f"\nTables: {out}\n")[1].splitlines()[0].split(" (Delta tables")[0].strip().split(", ")
    assert set(TABLES) <= set(listed) and all((out / t / "_delta_log").is_dir() for t in listed)
    # the suggested commands are safe to paste: the folder (with a space) quoted
    where = shlex.quote(str(out))
    assert where != str(out)
    assert f"logscan sql --tables {where} " in text and f"logscan report --tables {where} " in text
    # The single-process scan's summary, word for word from "Scanned" to the tables.
    local = CliRunner().invoke(main, ["scan", str(BROKERS), "--as-of", str(truth()["recorded_at_ms"])])
    assert local.exit_code == 4, local.output
    assert text.split("\n", 1)[1].split("\nTables: ")[0].rstrip("\n") == local.stdout.rstrip("\n")
    assert res.stderr == ""                                 # Spark kept quiet


@pytest.mark.spark
@needs_delta
def test_json_rerun_prints_the_local_scans_objects_and_keeps_the_rows(scan_run, tmp_path):
    out, _ = scan_run
    from spark_jobs.console import session

    def rows(spark):
        return sorted(tuple(r) for r in spark.read.format("delta").load(str(out / "hanging_candidates"))
                      .drop("as_of").collect())

    # Re-running the same command (same default scan id) replaces that scan's rows with the same rows;
    # without --tables all, the batches table is not written again (one version: the first run's).
    res = CliRunner().invoke(main, scan_args(out, "--format", "json"))
    assert res.exit_code == 4, res.output
    printed = [json.loads(line) for line in res.stdout.splitlines()]
    local = _local_json()
    # The same objects (the table's columns include the local scan's keys; it may have more).
    assert sorted(({k: p[k] for k in local[0]} for p in printed), key=_key) == sorted(local, key=_key)
    transactions = len({(c["topic"], c["partition"], c["producer_id"], c["start_offset"]) for c in local})
    assert "scan scan-" in res.stderr and (f"judged against __transaction_state: {transactions} ({len(local)} "
                                           f"replica rows)") in " ".join(res.stderr.split())
    stray = Path.cwd() / "spark-warehouse"
    there = stray.exists()
    spark = session("logscan-test", master="local[1]")
    try:
        after = rows(spark)
        history = spark.sql(f"DESCRIBE HISTORY delta.`{out / 'hanging_candidates'}`").count()
        batches = spark.sql(f"DESCRIBE HISTORY delta.`{out / 'batches'}`").count()
    finally:
        spark.stop()
    assert len(after) == len(printed) and history >= 2 and batches == 1
    # A statement resolving a table made Spark's default warehouse folder in the working folder.
    assert there or not stray.exists()


def test_refusals_come_before_spark_starts(tmp_path):
    inside = CliRunner().invoke(main, ["scan", str(BROKERS), "--output", str(BROKERS / "broker-0" / "tables")])
    assert inside.exit_code == 2 and "never writes into the copied log dirs" in inside.output
    assert not (BROKERS / "broker-0" / "tables").exists()
    bad_id = CliRunner().invoke(main, ["scan", str(BROKERS), "--output", str(tmp_path / "t"), "--scan-id", "a b"])
    assert bad_id.exit_code == 2 and "scan id 'a b'" in bad_id.output
    no_output = CliRunner().invoke(main, ["scan", str(BROKERS), "--scan-id", "x"])
    assert no_output.exit_code == 2 and "--output DIR" in no_output.output
    tables_alone = CliRunner().invoke(main, ["scan", str(BROKERS), "--tables", "all"])
    assert tables_alone.exit_code == 2 and "--output DIR" in tables_alone.output
    remote_alone = CliRunner().invoke(main, ["scan", str(BROKERS), "--remote", "sc://127.0.0.1:1"])
    assert remote_alone.exit_code == 2 and "--output DIR" in remote_alone.output
    remote_local = CliRunner().invoke(main, ["scan", str(BROKERS), "--output", str(tmp_path / "t"), "--executor",
                                             "local", "--remote", "local[1]"])
    assert remote_local.exit_code == 2 and "--remote is for the Spark job" in remote_local.output
    unknown = CliRunner().invoke(main, ["scan", str(BROKERS), "--output", str(tmp_path / "t"), "--tables",
                                        "txn_spans,batch"])
    assert unknown.exit_code == 2
    assert unknown.stderr.strip().splitlines()[-1] == (
        "Error: --tables 'txn_spans,batch': unknown table batch; give 'all' or a comma list of files, batches, "
        "corruptions, txn_log, coordinator_state, producer_snapshots, producer_state, txn_spans, partition_state, "
        "hanging_candidates, abort_plans, committed_offsets, affected_groups, partition_impact, "
        "transactional_id_history")
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("command", ["scan", "sql"])
def test_missing_delta_jars_is_one_sentence_with_the_fix(tmp_path, command):
    (tmp_path / "tables" / "files" / "_delta_log").mkdir(parents=True)
    argv = {"scan": ["scan", str(BROKERS), "--output", str(tmp_path / "t")],
            "sql": ["sql", "--engine", "spark", "--tables", str(tmp_path / "tables"), "SELECT 1"]}[command]
    res = subprocess.run([sys.executable, "-m", "logscan.cli", *argv], capture_output=True, text=True,
                         env={**os.environ, "LOGSCAN_DELTA_LIBS": str(tmp_path / "no-jars")}, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [f"Error: no delta-spark jar in {tmp_path / 'no-jars'}: "
                                               "run `make delta-jars`"]
    assert not (tmp_path / "t").exists()
