"""`logscan scan --output` (the Spark job from the CLI) and `logscan sql` over its tables.

The README's example queries are run exactly as written, on the real-broker fixture cluster
with three hanging transactions, and their answers checked against truth.json."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")
from logscan.cli import main  # noqa: E402
from spark_jobs import sql as S  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402

from .conftest import REPO, plans, truth as _truth  # noqa: E402

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]


def _readme_queries() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- logscan-sql-examples.*?-->\s*```sql\n(.*?)```", text, re.S)
    assert block, "README lost its logscan sql examples"
    lines = [ln for ln in block.group(1).splitlines() if not ln.lstrip().startswith("--")]
    return list(S.statements(lines))


def _sql(tables: Path, *args: str):
    return CliRunner().invoke(main, ["sql", "--tables", str(tables), "--master", "local[2]", *args])


def test_readme_queries_answer_from_the_fixture_tables(tables):
    queries = _readme_queries()
    assert len(queries) == 3
    truth = _truth()
    hanging = {(h["topic"], h["partition"], h["producer_id"], h["start_offset"])
               for h in truth["scenario_notes"]["hanging_txns"]["hanging"]} \
        if isinstance(truth["scenario_notes"]["hanging_txns"].get("hanging"), list) else None
    answers = []
    for q in queries:
        res = _sql(tables, q, "--format", "json")
        assert res.exit_code == 0, (q, res.output)
        answers.append([json.loads(line) for line in res.stdout.splitlines()])
    lag, candidates, history = answers
    # Every partition the leader reports with an LSO below its HW shows up with that lag.
    for part in truth["partitions"]:
        lag_leader = part["high_watermark"] - part["last_stable_offset"]
        if lag_leader > 0:
            assert {"topic": part["topic"], "partition": part["partition"], "broker": part["leader"],
                    "lso_lag": lag_leader} .items() <= next(
                r for r in lag if (r["topic"], r["partition"], r["broker"]) ==
                (part["topic"], part["partition"], part["leader"])).items()
    # The hanging transactions find-hanging listed live, once each, with `logscan plan`'s command.
    live = {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["StartOffset"]))
            for name, rec in truth["find_hanging"].items() for r in rec["rows"]}
    txns = [(r["topic"], r["partition"], r["producer_id"], r["start_offset"]) for r in candidates]
    assert len(txns) == len(set(txns)) and set(txns) >= live
    assert all(r["reason"] for r in candidates)
    if hanging is not None:
        assert hanging <= set(txns)
    assert sorted(r["command"] for r in candidates) == sorted(p["command"] for p in plans())
    assert all(r["replicas"] == [0, 1, 2] and r["idle_min"] >= 15 for r in candidates)
    # The oldest hanging producer's spans: all OPEN, on the partition it hangs on.
    pid = min(r["producer_id"] for r in candidates)
    hung = {(r["topic"], r["partition"]) for r in candidates if r["producer_id"] == pid}
    assert history and {(r["topic"], r["partition"]) for r in history if r["outcome"] == "OPEN"} == hung


def test_text_and_csv_output(tables):
    q = "SELECT topic, partition, broker, lso_lag FROM partition_state WHERE topic = 'hang' ORDER BY partition, broker"
    text = _sql(tables, q)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["topic", "partition", "broker", "lso_lag"]
    assert lines[-1] == "(9 rows)"
    rows = list(csv.reader(io.StringIO(_sql(tables, q, "--format", "csv").stdout)))
    assert rows[0] == ["topic", "partition", "broker", "lso_lag"] and len(rows) == 10


def test_prompt_reads_statements_until_quit(tables):
    script = "SELECT count(*) AS n\n FROM files;\nSELECT 'a;b' AS s;\n\\q\nSELECT 1;\n"
    res = CliRunner().invoke(main, ["sql", "--tables", str(tables), "--format", "json"], input=script)
    assert res.exit_code == 0, res.output
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == 2 and out[0]["n"] > 0 and out[1] == {"s": "a;b"}


def test_errors_are_one_sentence(tables, tmp_path):
    bad = _sql(tables, "SELECT no_such_column FROM partition_state")
    assert bad.exit_code == 1
    assert "no_such_column" in bad.stderr and "at org.apache" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    empty = CliRunner().invoke(main, ["sql", "--tables", str(tmp_path), "SELECT 1"])
    assert empty.exit_code == 2 and "no Delta tables" in empty.output and "--output" in empty.output
    missing = CliRunner().invoke(main, ["sql", "--tables", str(tmp_path / "nope"), "SELECT 1"])
    assert missing.exit_code == 2 and "no such folder" in missing.output


def test_statement_splitting():
    assert list(S.statements(["select 1; select ';'", "as x;", "select", "2"])) == [
        "select 1", "select ';' as x", "select 2"]
    assert list(S.statements(["\\q", "select 1;"])) == []
